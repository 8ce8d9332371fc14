//! A channel added from outside the bridge, as issue 49's (Discord, email, WhatsApp)
//! will be: one `Channel` implementation and one `opts.notify.add(…)`. It hears of a set,
//! takes a typed answer arriving on its own connection (as a gateway's or a webhook's
//! would), and changes its message once the set closed; a late answer is told.

use crate::support::bridge_configured;
use askuser_bridge::notify::channel::{self, Channel, Notice, Route, Sent};
use askuser_bridge::notify::{Notifier, Outcome};
use askuser_core::protocol::QuestionRecord;
use askuser_core::{Selection, Status};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Replies typed in the room: (the message replied to, the text).
type Replies = mpsc::UnboundedReceiver<(String, String)>;

/// A chat room in memory: what it showed, and typed replies to its messages.
#[derive(Clone)]
struct Room {
    shown: Arc<Mutex<Vec<String>>>,
    replies: Arc<Mutex<Option<Replies>>>,
    told: Arc<Mutex<Vec<String>>>,
}

#[channel::async_trait]
impl Channel for Room {
    fn name(&self) -> &'static str {
        "room"
    }

    async fn routes(&self, _: &Notifier, _: &QuestionRecord) -> Vec<Route> {
        vec![Route::to("lobby", false, &Default::default())]
    }

    async fn post(&self, _: &Notifier, route: &Route, notice: &Notice) -> Sent {
        let mut shown = self.shown.lock().unwrap();
        let line = notice.headline().line(100, 60, |s, _| s.to_owned());
        shown.push(format!("{}: {line}: {} (links: {})", route.to, notice.message.question, notice.message.options.len()));
        Sent::Posted(format!("m{}", shown.len()))
    }

    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, _: &Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        self.shown.lock().unwrap().push(format!("{to}: {} is {:?}", message.unwrap_or("?"), record.status));
        Sent::Delivered
    }

    /// Its connection: each reply answers the set of the message it replies to.
    fn start(self: Arc<Self>, notifier: Arc<Notifier>) {
        let mut replies = self.replies.lock().unwrap().take().expect("started once");
        tokio::spawn(async move {
            while let Some((message, text)) = replies.recv().await {
                let read =
                    |record: &QuestionRecord| Ok(Some(Outcome::Answer(vec![Selection::from_text(&record.request.questions[0], &text)])));
                if let Err(not) = notifier.answer_from_chat("room:lobby", &message, "room:alice", read).await {
                    self.told.lock().unwrap().push(not.told(str::to_owned));
                }
            }
        });
    }
}

async fn until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    for _ in 0..200 {
        if let Some(found) = check() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never came");
}

#[tokio::test]
async fn a_channel_added_outside_hears_of_a_set_answers_it_from_its_chat_and_closes_it() {
    let (reply, replies) = mpsc::unbounded_channel();
    let room = Room { shown: Arc::default(), replies: Arc::new(Mutex::new(Some(replies))), told: Arc::default() };
    let b = bridge_configured(tempfile::tempdir().unwrap(), {
        let room = room.clone();
        move |opts| {
            opts.notify.add(room);
        }
    })
    .await;
    let ask = json!({"id": "c-1", "agent": {"name": "ci"}, "questions": [{"question": "Which database?", "header": "Database",
                     "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]});
    b.post("/v1/ask?wait=false").json(&ask).send().await.unwrap();
    let posted = until("the notice", || room.shown.lock().unwrap().first().cloned()).await;
    let id = askuser_bridge::notify::short_id("c-1");
    assert_eq!(posted, format!("lobby: ci asks · Database · id {id}: Which database? (links: 0)"), "no answer links: it answers itself");

    reply.send(("m1".into(), "sqlite".into())).unwrap();
    let record = b.until_status("c-1", "answered").await;
    assert_eq!((record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()), (Some("SQLite"), Some("room:alice")));
    let closed = until("the close", || room.shown.lock().unwrap().get(1).cloned()).await;
    assert_eq!(closed, format!("lobby: m1 is {:?}", Status::Answered));

    reply.send(("m1".into(), "postgres".into())).unwrap();
    let told = until("the late answer's reply", || room.told.lock().unwrap().first().cloned()).await;
    assert_eq!(told, "This question set is not waiting any more.");
    assert_eq!(b.record("c-1").await["result"]["answers"][0]["answer"], "SQLite", "the first answer stands");
}
