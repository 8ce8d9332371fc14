//! The bridge client as a pure state machine, the same for every front end (the page,
//! the embed package, the terminal dialog): socket changes, frames and timer ticks go
//! in ([`Input`]); what to do comes out ([`Effect`]). The front end owns only the IO:
//! the socket, the timer, storage and drawing.
//!
//! What it keeps:
//! - **The outbox.** Every answer and decline carries a `ref` and stays queued until
//!   the bridge acknowledges that ref, refuses it, or announces its question final. All
//!   of it is sent again on each (re)connect; the bridge acknowledges an identical
//!   resend, so an answer given offline lands exactly once. [`Effect::SaveOutbox`] asks
//!   the front end to keep it across a reload (or a closed tab). An answer the bridge
//!   could not store now (`unavailable`: its database did not answer in time) is kept
//!   too, and the outbox is sent again after a backoff: the person need not answer twice.
//!   So is the outbox after a message dropped unread over the socket's rate (`too_many`,
//!   which names no ref: any queued answer may have been the one).
//! - **Snapshots.** A snapshot comes in parts (`more: true` on all but the last); the
//!   client hands the front end one [`BrowserEvent::Snapshot`] with everything.
//! - **Reconnecting.** After a drop it waits 0.5 s, doubling to 10 s ([`backoff`]). A
//!   socket that never opened says nothing about why, so the client has the front end
//!   ask the bridge's health with the same token ([`Effect::CheckToken`]): a refusal
//!   means the token is wrong and retrying cannot help.
//!
//! `ref`s must be unique across reloads and tabs: they are `{seed}-{n}`, with a seed
//! the front end makes (a time and a random number; the core has neither).

use crate::answer::Selection;
use crate::protocol::{AgentPresence, BrowserEvent, BrowserMessage, ErrorCode, QuestionRecord, Refused};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, ... 10 s.
pub fn backoff(attempt: u32) -> Duration {
    let ms = 500u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(10));
    Duration::from_millis(ms.min(10_000))
}

/// Where the connection stands, as a front end shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    /// The first attempt.
    Connecting,
    Open,
    /// Waiting to try again, or trying again (`attempt` says which).
    Reconnecting,
    /// The bridge refused the token: retrying cannot help.
    Unauthorized,
    /// Stopped by the front end.
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Open => "open",
            State::Reconnecting => "reconnecting",
            State::Unauthorized => "unauthorized",
            State::Closed => "closed",
        }
    }
}

/// A message waiting for the bridge's word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outgoing {
    pub reference: String,
    /// The question it is about.
    pub id: String,
    /// The frame as sent.
    pub text: String,
}

/// What happened, as the front end tells the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Input<'a> {
    /// The socket asked for with [`Effect::Connect`] is open.
    Opened,
    /// A text frame arrived.
    Frame(&'a str),
    /// The socket closed, or could not open.
    Closed,
    /// The answer to [`Effect::CheckToken`]: whether the bridge refused the token (401).
    TokenChecked { refused: bool },
    /// The timer asked for with [`Effect::After`] is due.
    Tick,
    /// The person answered question `id`.
    Answer { id: &'a str, answers: Vec<Selection> },
    /// The person declined question `id` (with `chat`: to talk it over instead).
    Decline { id: &'a str, chat: bool },
    /// A page of the bridge's history is wanted (sent only while open; not queued).
    History { search: Option<String>, offset: usize, limit: usize },
    /// The front end is done with the bridge.
    Stop,
}

/// What the front end must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Open a socket to the bridge (closing any earlier one).
    Connect,
    /// Send this text frame on the open socket.
    Send(String),
    /// Close the socket; nothing more will be asked of it.
    Close,
    /// Send [`Input::Tick`] after this long.
    After(Duration),
    /// Ask the bridge's `GET /v1/health` with the same token and report
    /// [`Input::TokenChecked`] (a refusal is a 401; no answer is not a refusal).
    CheckToken,
    /// The token was refused: forget it.
    ForgetToken,
    /// Keep the outbox (JSON, see [`Client::new`]) across a reload; `None` when empty.
    SaveOutbox(Option<String>),
    /// The connection's state changed.
    Connection { state: State, attempt: u32 },
    /// An event from the bridge, for the page (a snapshot whole).
    Event(BrowserEvent),
}

/// A snapshot coming in parts, so far: the client id, the questions and agents, the viewer.
type Partial = (String, Vec<QuestionRecord>, Vec<AgentPresence>, Option<crate::protocol::Viewer>);

/// The client. See the module documentation.
#[derive(Debug)]
pub struct Client {
    state: State,
    attempt: u32,
    /// Whether the current socket ever opened.
    opened: bool,
    outbox: Vec<Outgoing>,
    seed: String,
    counter: u64,
    /// The parts of a snapshot received so far.
    partial: Option<Partial>,
    /// Refusals as `unavailable` in a row: the outbox goes out again at the next tick,
    /// after [`backoff`] of this many (0: nothing held).
    held: u32,
}

impl Client {
    /// A client that starts connecting at once, with the outbox a front end kept (the
    /// JSON of an earlier [`Effect::SaveOutbox`]; anything unreadable is dropped).
    pub fn new(seed: impl Into<String>, saved_outbox: Option<&str>) -> (Client, Vec<Effect>) {
        let outbox = saved_outbox.and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
        let mut client =
            Client { state: State::Connecting, attempt: 0, opened: false, outbox, seed: seed.into(), counter: 0, partial: None, held: 0 };
        let effects = client.connect();
        (client, effects)
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// How many answers and declines wait for the bridge.
    pub fn queued(&self) -> usize {
        self.outbox.len()
    }

    /// The question ids the waiting answers and declines are about.
    pub fn queued_ids(&self) -> impl Iterator<Item = &str> {
        self.outbox.iter().map(|o| o.id.as_str())
    }

    /// Handles one input; returns what to do.
    pub fn handle(&mut self, input: Input<'_>) -> Vec<Effect> {
        if self.state == State::Closed {
            return Vec::new();
        }
        match input {
            Input::Opened => self.on_open(),
            Input::Frame(text) => self.on_frame(text),
            Input::Closed => self.on_close(),
            Input::TokenChecked { refused: true } => {
                self.state = State::Unauthorized;
                vec![Effect::ForgetToken, Effect::Connection { state: State::Unauthorized, attempt: 0 }]
            }
            Input::TokenChecked { refused: false } => self.retry_later(),
            Input::Tick if self.state == State::Reconnecting => self.connect(),
            Input::Tick if self.state == State::Open && self.held > 0 => self.outbox.iter().map(|o| Effect::Send(o.text.clone())).collect(),
            Input::Tick => Vec::new(),
            Input::Answer { id, answers } => {
                let reference = self.next_ref();
                let message = BrowserMessage::Answer { reference: Some(reference.clone()), id: id.to_owned(), answers };
                self.enqueue(reference, id, &message)
            }
            Input::Decline { id, chat } => {
                let reference = self.next_ref();
                let message = BrowserMessage::Cancel { reference: Some(reference.clone()), id: id.to_owned(), chat };
                self.enqueue(reference, id, &message)
            }
            Input::History { search, offset, limit } => {
                let message = BrowserMessage::History { reference: None, search, offset, limit };
                match self.state {
                    State::Open => vec![Effect::Send(to_text(&message))],
                    _ => Vec::new(),
                }
            }
            Input::Stop => {
                self.state = State::Closed;
                self.partial = None;
                vec![Effect::Close, Effect::Connection { state: State::Closed, attempt: 0 }]
            }
        }
    }

    fn connect(&mut self) -> Vec<Effect> {
        self.opened = false;
        self.partial = None;
        let state = if self.attempt == 0 { State::Connecting } else { State::Reconnecting };
        self.state = state;
        vec![Effect::Connection { state, attempt: self.attempt }, Effect::Connect]
    }

    fn on_open(&mut self) -> Vec<Effect> {
        self.held = 0;
        self.state = State::Open;
        self.opened = true;
        self.attempt = 0;
        let mut effects = vec![Effect::Connection { state: State::Open, attempt: 0 }];
        effects.extend(self.outbox.iter().map(|o| Effect::Send(o.text.clone())));
        effects
    }

    fn on_close(&mut self) -> Vec<Effect> {
        self.partial = None;
        if self.state == State::Unauthorized {
            return Vec::new();
        }
        let never_opened = !self.opened;
        self.opened = false;
        if never_opened {
            self.state = State::Reconnecting;
            return vec![Effect::CheckToken];
        }
        self.retry_later()
    }

    fn retry_later(&mut self) -> Vec<Effect> {
        self.state = State::Reconnecting;
        self.attempt = self.attempt.saturating_add(1);
        vec![Effect::Connection { state: State::Reconnecting, attempt: self.attempt }, Effect::After(backoff(self.attempt))]
    }

    fn on_frame(&mut self, text: &str) -> Vec<Effect> {
        // A frame this client cannot read (a newer bridge's event) changes nothing.
        let Ok(event) = serde_json::from_str::<BrowserEvent>(text) else { return Vec::new() };
        if let BrowserEvent::Error(Refused { error, .. }) = &event {
            // Not refused, only not stored yet, or not read: kept, and sent again (not an
            // error to show).
            let held = match error.code {
                ErrorCode::Unavailable => self.outbox.iter().any(|o| settles(&event, o)),
                ErrorCode::TooMany => !self.outbox.is_empty(),
                _ => false,
            };
            if held {
                self.held = self.held.saturating_add(1);
                return vec![Effect::After(backoff(self.held))];
            }
        }
        if matches!(event, BrowserEvent::Ack { .. }) {
            self.held = 0;
        }
        let mut effects = Vec::new();
        let before = self.outbox.len();
        self.outbox.retain(|o| !settles(&event, o));
        if self.outbox.len() != before {
            effects.push(self.save());
        }
        let event = match event {
            BrowserEvent::Snapshot { client, questions, agents, more, viewer } => {
                let (client, mut all, mut all_agents, first_viewer) =
                    self.partial.take().unwrap_or((client, Vec::new(), Vec::new(), viewer.clone()));
                all.extend(questions);
                all_agents.extend(agents);
                let viewer = first_viewer.or(viewer);
                if more {
                    self.partial = Some((client, all, all_agents, viewer));
                    return effects;
                }
                BrowserEvent::Snapshot { client, questions: all, agents: all_agents, more: false, viewer }
            }
            other => other,
        };
        effects.push(Effect::Event(event));
        effects
    }

    fn next_ref(&mut self) -> String {
        self.counter += 1;
        format!("{}-{}", self.seed, self.counter)
    }

    fn enqueue(&mut self, reference: String, id: &str, message: &BrowserMessage) -> Vec<Effect> {
        let text = to_text(message);
        self.outbox.push(Outgoing { reference, id: id.to_owned(), text: text.clone() });
        let mut effects = vec![self.save()];
        if self.state == State::Open {
            effects.push(Effect::Send(text));
        }
        effects
    }

    fn save(&self) -> Effect {
        Effect::SaveOutbox((!self.outbox.is_empty()).then(|| serde_json::to_string(&self.outbox).unwrap_or_default()))
    }
}

/// A message as a frame. These types always serialize (string keys only), so there is
/// no error to handle (and no error formatting to ship in the page).
fn to_text(message: &BrowserMessage) -> String {
    serde_json::to_string(message).unwrap_or_default()
}

/// Whether `event` ends the wait for `out`: its ack, its refusal, or its question
/// becoming final.
fn settles(event: &BrowserEvent, out: &Outgoing) -> bool {
    match event {
        BrowserEvent::Ack { reference, .. } => *reference == out.reference,
        BrowserEvent::Error(Refused { reference, id, .. }) => {
            reference.as_deref() == Some(&out.reference) || id.as_deref() == Some(&out.id)
        }
        BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => *id == out.id,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sends(effects: &[Effect]) -> Vec<serde_json::Value> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send(t) => Some(serde_json::from_str(t).unwrap()),
                _ => None,
            })
            .collect()
    }

    fn events(effects: &[Effect]) -> Vec<&BrowserEvent> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Event(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn saved(effects: &[Effect]) -> Option<Option<String>> {
        effects.iter().rev().find_map(|e| match e {
            Effect::SaveOutbox(s) => Some(s.clone()),
            _ => None,
        })
    }

    fn open() -> Client {
        let (mut c, effects) = Client::new("s", None);
        assert_eq!(effects, [Effect::Connection { state: State::Connecting, attempt: 0 }, Effect::Connect]);
        c.handle(Input::Opened);
        c
    }

    fn frame(c: &mut Client, v: serde_json::Value) -> Vec<Effect> {
        c.handle(Input::Frame(&v.to_string()))
    }

    fn record(id: &str) -> serde_json::Value {
        json!({"id": id, "request": {"questions": [{"question": "Q?", "options": [], "multiSelect": false}]}, "status": "pending", "createdAt": 1})
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_ten() {
        let ms: Vec<u128> = (1..=8).map(|a| backoff(a).as_millis()).collect();
        assert_eq!(ms, [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
        assert_eq!(backoff(u32::MAX).as_millis(), 10_000);
    }

    #[test]
    fn an_answer_goes_out_at_once_and_stays_queued_until_acknowledged() {
        let mut c = open();
        let effects = c.handle(Input::Answer { id: "q1", answers: vec![Selection::option("Yes")] });
        let sent = sends(&effects);
        assert_eq!(sent, [json!({"type": "answer", "ref": "s-1", "id": "q1", "answers": [{"selected": ["Yes"]}]})]);
        assert_eq!(c.queued(), 1);
        assert!(saved(&effects).unwrap().unwrap().contains("s-1"), "kept across a reload");
        // Another ref's ack changes nothing; its own ack lets go.
        assert!(frame(&mut c, json!({"type": "ack", "ref": "s-9", "id": "q1"})).iter().all(|e| matches!(e, Effect::Event(_))));
        assert_eq!(c.queued(), 1);
        let effects = frame(&mut c, json!({"type": "ack", "ref": "s-1", "id": "q1"}));
        assert_eq!(c.queued(), 0);
        assert_eq!(saved(&effects), Some(None), "an empty outbox is removed");
    }

    #[test]
    fn a_refusal_or_the_question_ending_lets_go_too() {
        let mut c = open();
        c.handle(Input::Answer { id: "q1", answers: vec![] });
        c.handle(Input::Decline { id: "q2", chat: true });
        c.handle(Input::Answer { id: "q3", answers: vec![] });
        frame(&mut c, json!({"type": "error", "ref": "s-1", "error": {"code": "conflict", "message": "x"}}));
        frame(&mut c, json!({"type": "withdrawn", "id": "q2", "status": "withdrawn"}));
        assert_eq!(c.queued(), 1);
        let result = json!({"id": "q3", "status": "answered", "answered": true, "answers": [], "answeredAt": 5});
        frame(&mut c, json!({"type": "answered", "id": "q3", "result": result}));
        assert_eq!(c.queued(), 0);
    }

    #[test]
    fn an_answer_the_bridge_could_not_store_yet_is_kept_and_sent_again_after_a_backoff() {
        let mut c = open();
        c.handle(Input::Answer { id: "q1", answers: vec![Selection::option("Yes")] });
        let busy = json!({"type": "error", "ref": "s-1", "id": "q1", "error": {"code": "unavailable", "message": "busy"}});
        // Held, not shown as a refusal, and the timer asked for.
        assert_eq!(frame(&mut c, busy.clone()), [Effect::After(backoff(1))]);
        assert_eq!(c.queued(), 1);
        let again = sends(&c.handle(Input::Tick));
        assert_eq!(again, [json!({"type": "answer", "ref": "s-1", "id": "q1", "answers": [{"selected": ["Yes"]}]})]);
        // Busy again: a longer wait; then stored.
        assert_eq!(frame(&mut c, busy), [Effect::After(backoff(2))]);
        assert_eq!(sends(&c.handle(Input::Tick)).len(), 1);
        frame(&mut c, json!({"type": "ack", "ref": "s-1", "id": "q1"}));
        assert_eq!(c.queued(), 0);
        assert!(c.handle(Input::Tick).is_empty(), "nothing held: a stray tick sends nothing");
        // Another refusal is final: let go, and shown.
        c.handle(Input::Answer { id: "q2", answers: vec![] });
        let effects = frame(&mut c, json!({"type": "error", "ref": "s-2", "error": {"code": "internal", "message": "x"}}));
        assert_eq!(c.queued(), 0);
        assert_eq!(events(&effects).len(), 1);
    }

    #[test]
    fn answers_sent_faster_than_the_socket_reads_are_sent_again_after_a_backoff() {
        let mut c = open();
        c.handle(Input::Answer { id: "q1", answers: vec![Selection::option("Yes")] });
        c.handle(Input::Answer { id: "q2", answers: vec![Selection::option("No")] });
        frame(&mut c, json!({"type": "ack", "ref": "s-1", "id": "q1"}));
        // One message was dropped unread; which one, the bridge does not say.
        let dropped = json!({"type": "error", "error": {"code": "too_many", "message": "too many messages"}});
        assert_eq!(frame(&mut c, dropped.clone()), [Effect::After(backoff(1))]);
        let again = sends(&c.handle(Input::Tick));
        assert_eq!(again, [json!({"type": "answer", "ref": "s-2", "id": "q2", "answers": [{"selected": ["No"]}]})]);
        frame(&mut c, json!({"type": "ack", "ref": "s-2", "id": "q2"}));
        // With nothing queued, the refusal is the front end's to show.
        assert_eq!(events(&frame(&mut c, dropped)).len(), 1);
    }

    #[test]
    fn answers_given_offline_are_sent_on_every_reconnect_until_acknowledged_exactly_once() {
        let (mut c, _) = Client::new("s", None);
        // Offline from the start: queued, not sent.
        let effects = c.handle(Input::Answer { id: "q1", answers: vec![Selection::custom("later")] });
        assert!(sends(&effects).is_empty());
        // The first socket never opens: the token is checked, not refused, so retry.
        assert_eq!(c.handle(Input::Closed), [Effect::CheckToken]);
        let effects = c.handle(Input::TokenChecked { refused: false });
        assert_eq!(effects, [Effect::Connection { state: State::Reconnecting, attempt: 1 }, Effect::After(backoff(1))]);
        assert_eq!(c.handle(Input::Tick), [Effect::Connection { state: State::Reconnecting, attempt: 1 }, Effect::Connect]);
        // Open: the queued answer goes out; the socket drops before the ack.
        assert_eq!(sends(&c.handle(Input::Opened)).len(), 1);
        assert_eq!(c.state(), State::Open);
        let effects = c.handle(Input::Closed);
        assert_eq!(effects, [Effect::Connection { state: State::Reconnecting, attempt: 1 }, Effect::After(backoff(1))]);
        c.handle(Input::Tick);
        // Sent again, the same frame (the bridge acknowledges an identical resend).
        let again = sends(&c.handle(Input::Opened));
        assert_eq!(again, [json!({"type": "answer", "ref": "s-1", "id": "q1", "answers": [{"custom": "later"}]})]);
        frame(&mut c, json!({"type": "ack", "ref": "s-1", "id": "q1"}));
        c.handle(Input::Closed);
        c.handle(Input::Tick);
        assert!(sends(&c.handle(Input::Opened)).is_empty(), "acknowledged: never sent again");
    }

    #[test]
    fn the_outbox_survives_a_reload() {
        let (mut c, _) = Client::new("s", None);
        let kept = saved(&c.handle(Input::Answer { id: "q1", answers: vec![] })).unwrap().unwrap();
        let (mut reloaded, _) = Client::new("t", Some(&kept));
        assert_eq!(reloaded.queued(), 1);
        assert_eq!(sends(&reloaded.handle(Input::Opened))[0]["ref"], "s-1");
        let (garbage, _) = Client::new("t", Some("{not json"));
        assert_eq!(garbage.queued(), 0);
    }

    #[test]
    fn duplicate_and_late_acks_change_nothing() {
        let mut c = open();
        c.handle(Input::Answer { id: "q1", answers: vec![] });
        c.handle(Input::Answer { id: "q2", answers: vec![] });
        frame(&mut c, json!({"type": "ack", "ref": "s-2", "id": "q2"}));
        let effects = frame(&mut c, json!({"type": "ack", "ref": "s-2", "id": "q2"}));
        assert_eq!(saved(&effects), None, "a second ack: nothing to save");
        assert_eq!(c.queued(), 1);
        // Acks pass on to the page as events, in order.
        assert!(matches!(events(&effects)[..], [BrowserEvent::Ack { .. }]));
    }

    #[test]
    fn snapshot_parts_become_one_snapshot() {
        let mut c = open();
        let agent = json!({"sessionId": "a", "name": "bot", "connected": true});
        let effects =
            frame(&mut c, json!({"type": "snapshot", "client": "c-1", "questions": [record("q1")], "agents": [agent], "more": true}));
        assert!(events(&effects).is_empty());
        frame(&mut c, json!({"type": "snapshot", "client": "c-1", "questions": [record("q2")], "agents": [], "more": true}));
        let effects = frame(&mut c, json!({"type": "snapshot", "client": "c-1", "questions": [record("q3")], "agents": []}));
        let [BrowserEvent::Snapshot { client, questions, agents, more, .. }] = &events(&effects)[..] else { panic!("{effects:?}") };
        assert_eq!((client.as_str(), agents.len(), *more), ("c-1", 1, false));
        assert_eq!(questions.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), ["q1", "q2", "q3"]);
        // A drop mid-snapshot forgets the parts: the next socket sends a whole one.
        frame(&mut c, json!({"type": "snapshot", "client": "c-1", "questions": [record("q1")], "agents": [], "more": true}));
        c.handle(Input::Closed);
        c.handle(Input::Tick);
        c.handle(Input::Opened);
        let effects = frame(&mut c, json!({"type": "snapshot", "client": "c-2", "questions": [record("q9")], "agents": []}));
        let [BrowserEvent::Snapshot { questions, .. }] = &events(&effects)[..] else { panic!() };
        assert_eq!(questions.len(), 1);
    }

    #[test]
    fn a_refused_token_stops_retrying() {
        let (mut c, _) = Client::new("s", None);
        assert_eq!(c.handle(Input::Closed), [Effect::CheckToken]);
        assert_eq!(
            c.handle(Input::TokenChecked { refused: true }),
            [Effect::ForgetToken, Effect::Connection { state: State::Unauthorized, attempt: 0 }]
        );
        assert!(c.handle(Input::Tick).is_empty() && c.handle(Input::Closed).is_empty(), "no more attempts");
        assert_eq!(c.state(), State::Unauthorized);
    }

    #[test]
    fn backoff_grows_with_each_failure_and_resets_once_open() {
        let mut c = open();
        c.handle(Input::Closed);
        for attempt in 1..=4 {
            c.handle(Input::Tick);
            let effects = c.handle(Input::Closed); // opened earlier, never again: check the token
            assert_eq!(effects, [Effect::CheckToken]);
            let effects = c.handle(Input::TokenChecked { refused: false });
            assert_eq!(effects[1], Effect::After(backoff(attempt + 1)));
        }
        c.handle(Input::Tick);
        c.handle(Input::Opened);
        c.handle(Input::Closed);
        assert_eq!(c.handle(Input::Tick), [Effect::Connection { state: State::Reconnecting, attempt: 1 }, Effect::Connect]);
    }

    #[test]
    fn history_goes_out_only_while_open_and_stop_is_final() {
        let (mut c, _) = Client::new("s", None);
        assert!(c.handle(Input::History { search: None, offset: 0, limit: 20 }).is_empty());
        c.handle(Input::Opened);
        let sent = sends(&c.handle(Input::History { search: Some("db".into()), offset: 20, limit: 20 }));
        assert_eq!(sent, [json!({"type": "history", "search": "db", "offset": 20, "limit": 20})]);
        assert_eq!(c.handle(Input::Stop), [Effect::Close, Effect::Connection { state: State::Closed, attempt: 0 }]);
        assert!(c.handle(Input::Opened).is_empty() && c.handle(Input::Tick).is_empty());
        assert!(c.handle(Input::Answer { id: "q", answers: vec![] }).is_empty(), "stopped: nothing more");
    }

    #[test]
    fn unreadable_frames_change_nothing() {
        let mut c = open();
        c.handle(Input::Answer { id: "q1", answers: vec![] });
        assert!(c.handle(Input::Frame("{not json")).is_empty());
        assert!(frame(&mut c, json!({"type": "from_the_future"})).is_empty());
        assert_eq!(c.queued(), 1);
    }

    /// A bridge as the protocol has it: the first final answer wins, an identical resend
    /// is acknowledged, a different one is a conflict.
    #[derive(Default)]
    struct FakeBridge {
        stored: std::collections::BTreeMap<String, serde_json::Value>,
        /// Answers stored, counting resends that changed nothing: must be one per question.
        stores: usize,
    }

    impl FakeBridge {
        /// The bridge's reply to a frame, if any.
        fn receive(&mut self, text: &str) -> Option<serde_json::Value> {
            let m: serde_json::Value = serde_json::from_str(text).unwrap();
            let (id, reference) = (m["id"].as_str()?.to_owned(), m["ref"].clone());
            let answer = m["answers"].clone();
            match self.stored.get(&id) {
                None => {
                    self.stored.insert(id.clone(), answer);
                    self.stores += 1;
                    Some(json!({"type": "ack", "ref": reference, "id": id}))
                }
                Some(a) if *a == answer => Some(json!({"type": "ack", "ref": reference, "id": id})),
                Some(_) => Some(json!({"type": "error", "ref": reference, "id": id, "error": {"code": "conflict", "message": "final"}})),
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// The person answers question n (once each; later ones are ignored).
        Answer(u8),
        /// The socket opens (if one was asked for).
        Open,
        /// The network drops the socket.
        Drop,
        /// The bridge reads the next frame in flight; with `lose_reply`, the socket drops
        /// before the reply reaches the client.
        Deliver { lose_reply: bool },
        /// The reconnect timer fires.
        Tick,
        /// The tab reloads: a new client from the saved outbox.
        Reload,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..5).prop_map(Step::Answer),
            Just(Step::Open),
            Just(Step::Drop),
            any::<bool>().prop_map(|lose_reply| Step::Deliver { lose_reply }),
            Just(Step::Tick),
            Just(Step::Reload),
        ]
    }

    /// A client, its socket and the frames in flight, as the front end would run them.
    struct Net {
        client: Client,
        saved: Option<String>,
        in_flight: std::collections::VecDeque<String>,
        socket_open: bool,
        wants_socket: bool,
    }

    impl Net {
        fn new(seed: &str, saved: Option<String>) -> Net {
            let (client, effects) = Client::new(seed, saved.as_deref());
            let mut net = Net { client, saved, in_flight: Default::default(), socket_open: false, wants_socket: false };
            net.run(effects);
            net
        }

        fn input(&mut self, input: Input<'_>) {
            let effects = self.client.handle(input);
            self.run(effects);
        }

        /// Carries out effects; a token check is answered "not refused" at once.
        fn run(&mut self, effects: Vec<Effect>) {
            for e in effects {
                match e {
                    Effect::Connect => self.wants_socket = true,
                    Effect::Send(t) if self.socket_open => self.in_flight.push_back(t),
                    Effect::CheckToken => self.input(Input::TokenChecked { refused: false }),
                    Effect::SaveOutbox(s) => self.saved = s,
                    _ => {}
                }
            }
        }

        fn open(&mut self) {
            self.wants_socket = false;
            self.socket_open = true;
            self.input(Input::Opened);
        }

        fn drop_socket(&mut self) {
            self.socket_open = false;
            self.in_flight.clear();
            self.input(Input::Closed);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// Whatever the network does, each answer the person gave reaches the bridge
        /// exactly once, as given, and the outbox empties once the network behaves.
        #[test]
        fn offline_answers_land_exactly_once(steps in proptest::collection::vec(step(), 0..60)) {
            let mut bridge = FakeBridge::default();
            let mut given: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
            let mut net = Net::new("a", None);
            let mut reloads = 0;
            for s in steps {
                match s {
                    Step::Answer(n) => {
                        let id = format!("q{n}");
                        if given.contains_key(&id) { continue; }
                        let answer = vec![Selection::custom(format!("answer {n}"))];
                        given.insert(id.clone(), serde_json::to_value(&answer).unwrap());
                        net.input(Input::Answer { id: &id, answers: answer });
                    }
                    Step::Open if net.wants_socket && !net.socket_open => net.open(),
                    Step::Drop if net.socket_open => net.drop_socket(),
                    Step::Deliver { lose_reply } if net.socket_open => {
                        let Some(frame) = net.in_flight.pop_front() else { continue };
                        match bridge.receive(&frame) {
                            Some(reply) if !lose_reply => net.input(Input::Frame(&reply.to_string())),
                            _ => net.drop_socket(),
                        }
                    }
                    Step::Tick => net.input(Input::Tick),
                    Step::Reload if reloads < 3 => {
                        reloads += 1;
                        net = Net::new(&format!("r{reloads}"), net.saved.take());
                    }
                    _ => {}
                }
            }
            // Then the network behaves: connect, deliver everything, every reply arrives.
            for _ in 0..20 {
                if !net.socket_open {
                    net.input(Input::Tick);
                    if net.wants_socket {
                        net.open();
                    }
                }
                while let Some(frame) = net.in_flight.pop_front() {
                    if let Some(reply) = bridge.receive(&frame) {
                        net.input(Input::Frame(&reply.to_string()));
                    }
                }
                if net.client.queued() == 0 { break; }
            }
            proptest::prop_assert_eq!(net.client.queued(), 0, "the outbox empties");
            proptest::prop_assert_eq!(net.saved, None, "and so does what is kept across reloads");
            proptest::prop_assert_eq!(&bridge.stored, &given, "every answer landed, as given");
            proptest::prop_assert_eq!(bridge.stores, given.len(), "each exactly once");
        }
    }
}
