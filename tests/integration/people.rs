//! People and routing: a question for a person or team (`agent.assignee`) reaches their
//! devices first and everyone else's when it escalates (or never); a device cannot see
//! or answer a question that is not yet for it; the admin token sees everything.

use crate::support::*;
use askuser_bridge::Settings;
use askuser_core::protocol::{BrowserEvent, ErrorCode, Refused};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A device token of `person`.
async fn device(b: &TestBridge, person: &str) -> String {
    let r =
        b.post("/v1/tokens").json(&json!({"scope": "device", "name": format!("{person}'s phone"), "person": person})).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let made: Value = r.json().await.unwrap();
    assert_eq!(made["credential"]["person"], person);
    made["token"].as_str().unwrap().to_owned()
}

/// The browser socket of `token`, past its snapshot: the snapshot's question ids and viewer.
async fn tab(b: &TestBridge, token: &str) -> (Socket, Vec<String>, Option<askuser_core::protocol::Viewer>) {
    let url = format!("{}/v1/ui?token={token}", b.url.replacen("http", "ws", 1));
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("origin", b.url.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let BrowserEvent::Snapshot { questions, viewer, .. } = next_event(&mut ws).await else { panic!("a snapshot first") };
    let mut ids: Vec<String> = questions.into_iter().map(|q| q.id).collect();
    ids.sort();
    (ws, ids, viewer)
}

fn for_someone(id: &str, to: Option<&str>) -> Value {
    let mut agent = json!({"name": "ci", "sessionId": format!("s-{id}")});
    if let Some(to) = to {
        agent["assignee"] = to.into();
    }
    json!({"id": id, "question": "Migrate now?", "choices": ["Yes", "No"], "agent": agent})
}

/// The ids of `asked` events on `ws` within `within`.
async fn asked_within(ws: &mut Socket, within: Duration) -> Vec<String> {
    let mut ids = vec![];
    let _ = tokio::time::timeout(within, async {
        loop {
            if let BrowserEvent::Asked { question } = next_event(ws).await {
                ids.push(question.id);
            }
        }
    })
    .await;
    ids.sort();
    ids
}

async fn ask_no_wait(b: &TestBridge, body: Value) {
    let r = b.post("/v1/ask?wait=false").json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn a_question_for_a_person_or_team_reaches_them_first_then_everyone() {
    let b = bridge_with(Settings { escalate_after: Some(Duration::from_secs(2)), ..Settings::default() }).await;
    let (alice, bob) = (device(&b, "alice").await, device(&b, "bob").await);
    let r = b.http.put(format!("{}/v1/people/bob", b.url)).bearer_auth(TOKEN).json(&json!({"teams": ["db"]})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let people: Value = b.get("/v1/people").send().await.unwrap().json().await.unwrap();
    assert_eq!(people[1]["person"], "bob");
    assert_eq!(people[1]["teams"], json!(["db"]));

    let (mut a, _, viewer) = tab(&b, &alice).await;
    assert_eq!(viewer.map(|v| v.person), Some("alice".to_owned()), "the page learns who it is");
    let (mut o, _, _) = tab(&b, &bob).await;
    let mut admin = b.browser().await;
    next_event(&mut admin).await;
    ask_no_wait(&b, for_someone("for-alice", Some("alice"))).await;
    ask_no_wait(&b, for_someone("for-db", Some("db"))).await;
    ask_no_wait(&b, for_someone("for-all", None)).await;

    assert_eq!(asked_within(&mut a, Duration::from_millis(800)).await, ["for-alice", "for-all"]);
    assert_eq!(asked_within(&mut o, Duration::from_millis(300)).await, ["for-all", "for-db"], "bob's team");
    assert_eq!(asked_within(&mut admin, Duration::from_millis(300)).await, ["for-alice", "for-all", "for-db"], "the admin token sees all");
    // Not yet bob's: not listed, not readable, not answerable (as if it did not exist).
    let listed: Value = b.http.get(format!("{}/v1/questions", b.url)).bearer_auth(&bob).send().await.unwrap().json().await.unwrap();
    let listed: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(!listed.contains(&"for-alice"), "{listed:?}");
    let read = b.http.get(format!("{}/v1/questions/for-alice", b.url)).bearer_auth(&bob).send().await.unwrap();
    assert_eq!(read.status(), 404);
    send(&mut o, json!({"type": "answer", "ref": "early", "id": "for-alice", "answers": [{"selected": ["Yes"]}]})).await;
    loop {
        match next_event(&mut o).await {
            BrowserEvent::Error(Refused { error, .. }) => {
                assert_eq!(error.code, ErrorCode::NotFound);
                break;
            }
            BrowserEvent::Ack { .. } => panic!("bob answered a question not yet his"),
            _ => {}
        }
    }
    let (_, snapshot, _) = tab(&b, &bob).await;
    assert_eq!(snapshot, ["for-all", "for-db"], "a new tab of bob's lists the same");

    // Two seconds on, nobody took them: they reach everyone.
    assert_eq!(asked_within(&mut o, Duration::from_millis(3000)).await, ["for-alice"]);
    assert_eq!(asked_within(&mut a, Duration::from_millis(500)).await, ["for-db"]);
    assert!(asked_within(&mut admin, Duration::from_millis(300)).await.is_empty(), "a tab that saw them is not told again");
    send(&mut o, json!({"type": "answer", "ref": "now", "id": "for-alice", "answers": [{"selected": ["Yes"]}]})).await;
    loop {
        match next_event(&mut a).await {
            BrowserEvent::Answered { id, .. } if id == "for-alice" => break,
            _ => {}
        }
    }
}

/// The next snapshot on `ws` (within 5 s): its question ids and viewer.
async fn next_snapshot(ws: &mut Socket) -> (Vec<String>, Option<askuser_core::protocol::Viewer>) {
    let within = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let BrowserEvent::Snapshot { questions, viewer, .. } = next_event(ws).await {
                let mut ids: Vec<String> = questions.into_iter().map(|q| q.id).collect();
                ids.sort();
                return (ids, viewer);
            }
        }
    });
    within.await.expect("a fresh snapshot within 5 s")
}

/// An open page follows its person's teams: put in a team, the page is sent what it sees
/// now (the team's questions, and its teams) and the team's new questions after it;
/// taken out, a snapshot without them. No reload.
#[tokio::test]
async fn an_open_page_follows_its_persons_teams() {
    let b = bridge_with(Settings { escalate_after: None, ..Settings::default() }).await;
    let alice = device(&b, "alice").await;
    ask_no_wait(&b, for_someone("for-db", Some("db"))).await;
    let (mut a, ids, viewer) = tab(&b, &alice).await;
    assert!(ids.is_empty(), "not hers yet: {ids:?}");
    assert_eq!(viewer.unwrap().teams, Vec::<String>::new());
    let teams = |t: Value| b.http.put(format!("{}/v1/people/alice", b.url)).bearer_auth(TOKEN).json(&json!({ "teams": t })).send();

    assert_eq!(teams(json!(["db"])).await.unwrap().status(), 200);
    let (ids, viewer) = next_snapshot(&mut a).await;
    assert_eq!(ids, ["for-db"], "the team's question, without a reload");
    assert_eq!(viewer.unwrap().teams, ["db"]);
    ask_no_wait(&b, for_someone("for-db-2", Some("db"))).await;
    assert_eq!(asked_within(&mut a, Duration::from_millis(800)).await, ["for-db-2"], "and the team's new ones");

    assert_eq!(teams(json!([])).await.unwrap().status(), 200);
    let (ids, viewer) = next_snapshot(&mut a).await;
    assert!(ids.is_empty(), "out of the team, its questions go: {ids:?}");
    assert_eq!(viewer.unwrap().teams, Vec::<String>::new());
    ask_no_wait(&b, for_someone("for-db-3", Some("db"))).await;
    assert!(asked_within(&mut a, Duration::from_millis(500)).await.is_empty(), "nor its new ones");
}

#[tokio::test]
async fn never_escalating_keeps_a_question_theirs() {
    let b = bridge_with(Settings { escalate_after: None, ..Settings::default() }).await;
    let bob = device(&b, "bob").await;
    let (mut o, _, _) = tab(&b, &bob).await;
    ask_no_wait(&b, for_someone("only-alice", Some("alice"))).await;
    assert!(asked_within(&mut o, Duration::from_millis(1500)).await.is_empty());
    let (_, snapshot, _) = tab(&b, &bob).await;
    assert!(snapshot.is_empty(), "{snapshot:?}");
    // Answered elsewhere: bob's tab is not told of a question it never saw.
    let r = b.post("/v1/questions/only-alice/answer").json(&json!({"answers": [{"selected": ["No"]}]})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let heard = tokio::time::timeout(Duration::from_millis(500), async {
        loop {
            if let BrowserEvent::Answered { .. } = next_event(&mut o).await {
                return;
            }
        }
    })
    .await;
    assert!(heard.is_err(), "nothing about it reaches bob");
}

#[tokio::test]
async fn bad_names_are_refused_with_the_field() {
    let b = bridge().await;
    let r = b.post("/v1/tokens").json(&json!({"scope": "device", "name": "x", "person": "a b"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("person: expected 1 to 64 characters"));
    let r = b.post("/v1/tokens").json(&json!({"scope": "agent", "name": "x", "person": "alice"})).send().await.unwrap();
    assert_eq!(r.status(), 400, "only a device belongs to a person");
    let r =
        b.http.put(format!("{}/v1/people/alice", b.url)).bearer_auth(TOKEN).json(&json!({"teams": ["ok", "<b>"]})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("teams[1]"));
    let r = b.post("/v1/ask?wait=false").json(&for_someone("bad-to", Some("not a name"))).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("agent.assignee"));
}

/// The inbox rows' texts once there are `n` of them (within 5 s).
async fn rows(browser: &crate::support::Browser, n: usize) -> Vec<String> {
    let mut texts = vec![];
    for _ in 0..100 {
        texts.clear();
        for e in browser.find_all(fantoccini::Locator::Css(".askuser-inbox .askuser-item")).await.unwrap() {
            texts.push(e.text().await.unwrap());
        }
        if texts.len() == n {
            return texts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("expected {n} rows, got {texts:?}");
}

/// In Chromium: a person's page offers Mine / Team / All with counts, lists what each
/// says and marks whom each question is for; the admin's page has no such filter.
#[tokio::test]
async fn a_persons_page_filters_mine_team_and_all() {
    needs!(Chromium);
    use fantoccini::Locator;
    let b = bridge().await;
    let alice = device(&b, "alice").await;
    let r = b.http.put(format!("{}/v1/people/alice", b.url)).bearer_auth(TOKEN).json(&json!({"teams": ["db"]})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    ask_no_wait(&b, for_someone("for-alice", Some("alice"))).await;
    ask_no_wait(&b, for_someone("for-db", Some("db"))).await;
    ask_no_wait(&b, for_someone("for-all", None)).await;
    let browser = crate::support::browser(1200, 800).await;
    browser.goto(&format!("{}/#token={alice}", b.url)).await.unwrap();
    browser.wait_css(".askuser-show").await;
    let all = rows(&browser, 3).await;
    let buttons = browser.find_all(Locator::Css(".askuser-show button")).await.unwrap();
    let mut labels = vec![];
    for button in &buttons {
        labels.push(button.text().await.unwrap());
    }
    assert_eq!(labels, ["Mine (1)", "Team (2)", "All (3)"]);
    assert_eq!(buttons[2].attr("aria-pressed").await.unwrap().as_deref(), Some("true"), "all by default");
    assert!(all.iter().any(|t| t.contains("for alice")) && all.iter().any(|t| t.contains("for db")), "whom each is for: {all:?}");
    // Team: hers and her team's. (The question open in the dialog, hers, stays listed.)
    buttons[1].click().await.unwrap();
    let team = rows(&browser, 2).await;
    assert!(team.iter().all(|t| t.contains("for alice") || t.contains("for db")), "{team:?}");
    buttons[0].click().await.unwrap();
    assert_eq!(buttons[0].attr("aria-pressed").await.unwrap().as_deref(), Some("true"));
    let mine = rows(&browser, 1).await;
    assert!(mine[0].contains("for alice"), "{mine:?}");
    // The admin's page is no one in particular: no filter.
    browser.goto("about:blank").await.unwrap();
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
    rows(&browser, 3).await;
    assert!(browser.find(Locator::Css(".askuser-show")).await.is_err());
    browser.close().await;
}
