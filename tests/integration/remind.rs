//! A wait that never goes silent (issue 49, item 6): a set that asked for reminders is
//! sent again to the places it reached, then escalates to everyone's; a set that asked
//! for a default ends without an answer, saying why (an approval denied, and logged).
//! Durations are whole seconds, so the tests wait one or two of them.

use crate::support::*;
use askuser_bridge::notify::channel::{self, Channel, Notice, Route, Sent};
use askuser_bridge::notify::{Notifier, Outcome};
use askuser_core::protocol::QuestionRecord;
use askuser_core::Selection;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

type Replies = mpsc::UnboundedReceiver<(String, String, String)>;

/// Chat rooms in memory: alice's own, and the shared lobby (reached once a set for
/// someone escalates). What each showed, and replies typed to its messages.
#[derive(Clone, Default)]
struct Rooms {
    shown: Arc<Mutex<Vec<String>>>,
    replies: Arc<Mutex<Option<Replies>>>,
}

impl Rooms {
    fn shown(&self) -> Vec<String> {
        self.shown.lock().unwrap().clone()
    }
}

#[channel::async_trait]
impl Channel for Rooms {
    fn name(&self) -> &'static str {
        "rooms"
    }

    async fn routes(&self, _: &Notifier, record: &QuestionRecord) -> Vec<Route> {
        let alices = record.request.agent.as_ref().and_then(|a| a.assignee.as_deref()) == Some("alice");
        match alices {
            true => vec![Route::to("alice", true, &Default::default()), Route::to("lobby", false, &Default::default())],
            false => vec![Route::to("lobby", false, &Default::default())],
        }
    }

    async fn post(&self, _: &Notifier, route: &Route, notice: &Notice) -> Sent {
        let mut shown = self.shown.lock().unwrap();
        // A reminder's mark, where the notice says it three ways alike: its own, the
        // message's, and the first line of the message's text (what push, the webhook
        // and ntfy show).
        let said = notice
            .reminder
            .as_ref()
            .filter(|r| notice.message.reminder.as_ref() == Some(*r) && notice.message.question.lines().next() == Some(r.as_str()));
        let mark = said.map(|r| format!("{r} | ")).unwrap_or_default();
        shown.push(format!("{}: {mark}{}", route.to, notice.message.question.lines().last().unwrap_or_default()));
        Sent::Posted(format!("m{}", shown.len()))
    }

    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, _: &Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        self.shown.lock().unwrap().push(format!("{to}: {} closed {}", message.unwrap_or("?"), record.status.as_str()));
        Sent::Delivered
    }

    fn start(self: Arc<Self>, notifier: Arc<Notifier>) {
        let Some(mut replies) = self.replies.lock().unwrap().take() else { return };
        tokio::spawn(async move {
            while let Some((room, message, text)) = replies.recv().await {
                let read =
                    |record: &QuestionRecord| Ok(Some(Outcome::Answer(vec![Selection::from_text(&record.request.questions[0], &text)])));
                let _ = notifier.answer_from_chat(&format!("rooms:{room}"), &message, "rooms:alice", read).await;
            }
        });
    }
}

async fn rooms_bridge(dir: tempfile::TempDir, rooms: &Rooms) -> TestBridge {
    let rooms = rooms.clone();
    bridge_configured(dir, move |opts| {
        opts.notify.add(rooms);
    })
    .await
}

fn ask(id: &str, to: Option<&str>, extra: Value) -> Value {
    let mut agent = json!({"name": "ci"});
    if let Some(to) = to {
        agent["assignee"] = to.into();
    }
    let mut body = json!({"id": id, "agent": agent, "question": "Which database?", "choices": ["Postgres", "SQLite"]});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    body
}

/// Waits up to 10 s for `rooms` to have shown `n` things.
async fn shown(rooms: &Rooms, n: usize) -> Vec<String> {
    for _ in 0..200 {
        if rooms.shown().len() >= n {
            return rooms.shown();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{n} never shown: {:#?}", rooms.shown());
}

#[tokio::test]
async fn a_reminder_goes_to_the_same_room_then_the_set_escalates_and_closes_everywhere() {
    let (reply, replies) = mpsc::unbounded_channel();
    let rooms = Rooms { replies: Arc::new(Mutex::new(Some(replies))), ..Rooms::default() };
    let b = rooms_bridge(tempfile::tempdir().unwrap(), &rooms).await;
    let started = std::time::Instant::now();
    let r = b.post("/v1/ask?wait=false").json(&ask("r-1", Some("alice"), json!({"remindAfterSeconds": 1}))).send().await.unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(shown(&rooms, 1).await, ["alice: Which database?"], "hers at once; the lobby's when it escalates");
    let seen = shown(&rooms, 2).await;
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    let reminder = |line: &str, waited: &str| {
        line.starts_with("alice: Reminder: still waiting since ") && line.ends_with(&format!(" ({waited}) | Which database?"))
    };
    assert!(reminder(&seen[1], "1 s"), "{seen:#?}");
    // At twice the delay it escalates (the bridge's own escalation is 5 min away): the
    // lobby gets its first notice, not a reminder, and alice's room a last reminder.
    let seen = shown(&rooms, 4).await;
    assert!(started.elapsed() >= Duration::from_millis(1950), "{:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(60), "long before --escalate-after");
    let (lobby, last) = match seen[2].starts_with("lobby") {
        true => (&seen[2], &seen[3]),
        false => (&seen[3], &seen[2]),
    };
    assert_eq!(lobby, "lobby: Which database?");
    assert!(reminder(last, "2 s"), "{seen:#?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rooms.shown().len(), 4, "then no more: {:#?}", rooms.shown());

    // A reply to the reminder answers (its message is the set's too), and every message
    // the set was shown as closes.
    reply.send(("alice".into(), "m2".into(), "sqlite".into())).unwrap();
    let record = b.until_status("r-1", "answered").await;
    assert_eq!((record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()), (Some("SQLite"), Some("rooms:alice")));
    let mut closed = shown(&rooms, 8).await[4..].to_vec();
    closed.sort();
    let mut expected: Vec<String> =
        seen.iter().enumerate().map(|(i, line)| format!("{}: m{} closed answered", line.split_once(':').unwrap().0, i + 1)).collect();
    expected.sort();
    assert_eq!(closed, expected);
}

/// Only when asked: a question ends `timed_out` with the reason, never an answer; an
/// approval is denied, and the audit log says the default decided.
#[tokio::test]
async fn a_default_after_ends_a_question_with_no_answer_and_denies_an_approval() {
    let b = bridge().await;
    let started = std::time::Instant::now();
    let r = b.post("/v1/ask").json(&ask("d-1", None, json!({"defaultAfterSeconds": 1}))).send().await.unwrap();
    let result: Value = r.json().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    assert_eq!(
        (result["status"].as_str(), result["answered"].as_bool(), result["reason"].as_str()),
        (Some("timed_out"), Some(false), Some("no answer after 1 s; default applied")),
        "{result:#}"
    );
    assert_eq!(result["answers"], json!([]), "no invented answer");
    let text = b.post("/v1/ask?format=text").json(&ask("d-1", None, json!({}))).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("no answer after 1 s; default applied") && text.contains("Do not assume an answer"), "{text}");

    let body = json!({"tool_name": "Bash", "input": {"command": "rm -rf build"}, "tool_use_id": "toolu_d",
                      "cwd": "/work/app", "agent": {"name": "Claude Code", "sessionId": "s-1"}, "defaultAfterSeconds": 1});
    let decision: Value = b.post("/v1/approve").json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(decision["behavior"], "deny", "{decision:#}");
    assert_eq!(decision["message"], "The user did not allow Bash (no answer after 1 s; default applied: denied). Do not run it.");
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (log[0]["decision"].as_str(), log[0]["by"].as_str(), log[0]["question"].as_str()),
        (Some("deny"), Some("no answer after 1 s; default applied"), Some("approve-toolu_d")),
        "{log:#?}"
    );
    // Without one, nothing ends it.
    b.post("/v1/ask?wait=false").json(&ask("d-2", None, json!({"remindAfterSeconds": 1}))).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(b.record("d-2").await["status"], "pending");
}

#[tokio::test]
async fn bad_durations_are_refused_naming_the_field() {
    let b = bridge().await;
    let refused = |body: Value, path: &'static str| {
        let req = b.post(path).json(&body);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 400);
            r.text().await.unwrap()
        }
    };
    let said = refused(ask("b-1", None, json!({"remindAfterSeconds": "10m"})), "/v1/ask").await;
    assert!(said.contains("remindAfterSeconds: expected a whole number of seconds, got the string \\\"10m\\\""), "{said}");
    let said = refused(ask("b-1", None, json!({"defaultAfterSeconds": 0})), "/v1/ask").await;
    assert!(said.contains("defaultAfterSeconds: expected at least 1 second, got 0"), "{said}");
    let approval = json!({"tool_name": "Bash", "input": {"command": "ls"}, "remindAfterSeconds": -1});
    let said = refused(approval, "/v1/approve").await;
    assert!(said.contains("remindAfterSeconds: expected a whole number of seconds, got the number -1"), "{said}");
}

/// A reminder due while the bridge was down goes out when it starts again, once; one
/// sent before a stop is not sent again.
#[tokio::test]
async fn a_restart_sends_a_reminder_that_fell_due_once_and_not_one_sent_before() {
    let rooms = Rooms::default();
    let b = rooms_bridge(tempfile::tempdir().unwrap(), &rooms).await;
    b.post("/v1/ask?wait=false").json(&ask("s-1", None, json!({"remindAfterSeconds": 2}))).send().await.unwrap();
    assert_eq!(shown(&rooms, 1).await, ["lobby: Which database?"]);
    let dir = b.stop().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(rooms.shown().len(), 1, "down: nothing sent");
    let b = rooms_bridge(dir, &rooms).await;
    let seen = shown(&rooms, 2).await;
    assert!(seen[1].starts_with("lobby: Reminder: still waiting since ") && seen[1].ends_with("| Which database?"), "{seen:#?}");
    // Stopped again after the first reminder, started before the second: the first is
    // not sent again, the second comes at its time.
    let dir = b.stop().await;
    let b = rooms_bridge(dir, &rooms).await;
    let seen = shown(&rooms, 3).await;
    assert!(seen[2].contains("Reminder") && seen[2].contains("(4 s)"), "the second, at twice the delay: {seen:#?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rooms.shown().len(), 3, "each once: {:#?}", rooms.shown());
    drop(b);
}

/// A default that fell due while the bridge was down applies when it starts again.
#[tokio::test]
async fn a_default_due_while_the_bridge_was_down_applies_at_its_start() {
    let b = bridge().await;
    b.post("/v1/ask?wait=false").json(&ask("e-1", None, json!({"defaultAfterSeconds": 1}))).send().await.unwrap();
    let dir = b.stop().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let b = bridge_in(dir).await;
    let record = b.until_status("e-1", "timed_out").await;
    assert_eq!(record["result"]["reason"], "no answer after 1 s; default applied");
    assert_eq!(record["answeredBy"], "no answer after 1 s; default applied");
}

/// Bridges sharing PostgreSQL send each reminder once between them.
#[tokio::test]
async fn bridges_sharing_a_store_send_each_reminder_once() {
    needs!(Postgres);
    let db = crate::pg::Cluster::start();
    let url = db.database("team");
    let rooms = Rooms::default();
    let mut bridges = vec![];
    for _ in 0..2 {
        let (rooms, url) = (rooms.clone(), url.clone());
        bridges.push(
            bridge_configured(tempfile::tempdir().unwrap(), move |o| {
                o.store = Some(url);
                o.notify.add(rooms);
            })
            .await,
        );
    }
    bridges[0].post("/v1/ask?wait=false").json(&ask("p-1", None, json!({"remindAfterSeconds": 1}))).send().await.unwrap();
    let seen = shown(&rooms, 3).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let seen_after = rooms.shown();
    assert_eq!(seen_after.len(), 3, "one notice and two reminders, each once: {seen_after:#?}");
    assert_eq!(seen[0], "lobby: Which database?");
    assert!(seen[1..].iter().all(|s| s.starts_with("lobby: Reminder: still waiting since ")), "{seen:#?}");

    // A default applies once: one denial in the audit log, whichever bridge applied it.
    let body = json!({"tool_name": "Bash", "input": {"command": "make deploy"}, "tool_use_id": "toolu_p", "defaultAfterSeconds": 1});
    let decision: Value = bridges[1].post("/v1/approve").json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(decision["behavior"], "deny", "{decision:#}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log: Vec<Value> = bridges[0].get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!((log[0]["decision"].as_str(), log[0]["by"].as_str()), (Some("deny"), Some("no answer after 1 s; default applied")));
}

/// The inbox shows when a waiting set's next reminder goes out and when its default
/// applies.
#[tokio::test]
async fn the_inbox_shows_when_the_next_reminder_goes_out_and_the_default_applies() {
    needs!(Chromium);
    let b = bridge().await;
    let body = ask("u-1", None, json!({"remindAfterSeconds": 600, "defaultAfterSeconds": 1800}));
    assert_eq!(b.post("/v1/ask?wait=false").json(&body).send().await.unwrap().status(), 202);
    let browser = browser(1000, 700).await;
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
    let mut said = String::new();
    for _ in 0..200 {
        if let Ok(line) = browser.find(fantoccini::Locator::Css(".askuser-current .askuser-from")).await {
            said = line.text().await.unwrap_or_default();
            if said.contains(" · next") {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (asks, schedule) = said.split_once(" s · ").unwrap_or_default();
    assert!(asks.starts_with("ci asks · waiting "), "{said}");
    assert_eq!(schedule, "next reminder in 10 min · no answer (default) in 30 min", "{said}");
    browser.shot("reminder-schedule").await;
    browser.close().await;
}
