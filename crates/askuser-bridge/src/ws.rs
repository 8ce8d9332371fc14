//! The two WebSockets: agents ask on `/v1/agent`, browsers answer on `/v1/ui`.
//!
//! Agent socket: each `ask` is stored, acknowledged with `accepted`, and waited on in
//! its own task, so one connection can hold many questions; their `result`s arrive in
//! whatever order people answer. When the socket drops, the waits end and the
//! questions stay answerable for the agent's resume by id.
//!
//! Browser socket: subscribe to events first, then send the snapshot, so nothing falls
//! in between. A browser that falls behind the event buffer gets a fresh snapshot; one
//! that stops reading is dropped after `Settings::send_timeout` ([`crate::hub::SEND_TIMEOUT`] by
//! default), and never stalls the others.
//!
//! Both sockets: every connection has a token bucket (`Settings::messages_per_second`,
//! `message_burst`); a message past it is refused with `too_many`, and a socket that
//! keeps flooding is closed. Idle sockets are pinged; one that sends nothing, not even a
//! pong, for two ping periods is half-open and is dropped.

use crate::hub::{Answerer, Bridge, BridgeError};
use crate::tokens::ViewerWatch;
use askuser_core::protocol::Viewer;
use askuser_core::protocol::{
    decode_agent, decode_browser, AgentEvent, AgentMessage, BrowserEvent, BrowserMessage, ErrorBody, ErrorCode, Refused, HISTORY_PAGE,
};
use askuser_core::{AskResult, Status};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

const GOING_AWAY: u16 = 1001;
const POLICY_VIOLATION: u16 = 1008;

/// A per-connection token bucket. Tokens may go negative: each refused message is a
/// debt, and a socket whose debt reaches a full burst is flooding and is closed.
struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: tokio::time::Instant,
}

enum Admit {
    Yes,
    /// Refused; the connection may continue.
    TooMany,
    /// Refused; the connection has kept flooding and must close.
    Close,
}

impl Bucket {
    fn new(bridge: &Bridge) -> Bucket {
        let s = bridge.settings();
        let burst = f64::from(s.message_burst.max(1));
        Bucket { tokens: burst, rate: f64::from(s.messages_per_second.max(1)), burst, last: tokio::time::Instant::now() }
    }

    fn admit(&mut self) -> Admit {
        let now = tokio::time::Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.burst);
        self.last = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Admit::Yes
        } else if self.tokens > -self.burst {
            Admit::TooMany
        } else {
            Admit::Close
        }
    }
}

/// Pings an idle socket and notices one that has gone silent (half-open).
struct Keepalive {
    every: Duration,
    ping: tokio::time::Interval,
    heard: tokio::time::Instant,
}

impl Keepalive {
    fn new(bridge: &Bridge) -> Keepalive {
        let every = bridge.settings().ping_every;
        let mut ping = tokio::time::interval(every.max(Duration::from_millis(1)));
        ping.reset();
        Keepalive { every, ping, heard: tokio::time::Instant::now() }
    }

    /// The peer sent something: it is alive.
    fn heard(&mut self) {
        self.heard = tokio::time::Instant::now();
    }

    /// At the next ping time: a ping to send, or `None` when the peer has sent nothing
    /// (not even a pong) for two ping periods.
    async fn due(&mut self) -> Option<Message> {
        self.ping.tick().await;
        (self.heard.elapsed() < self.every * 2).then(|| Message::Ping(Default::default()))
    }
}

fn too_many(bucket: &Bucket) -> ErrorBody {
    ErrorBody::new(
        ErrorCode::TooMany,
        format!(
            "too many messages: at most {} per second (bursts of {}); this one was ignored, and a socket that keeps sending this fast is closed",
            bucket.rate, bucket.burst
        ),
    )
}

fn flooding() -> Message {
    Message::Close(Some(CloseFrame { code: POLICY_VIOLATION, reason: "too many messages; reconnect and send more slowly".into() }))
}

fn text(value: &impl Serialize) -> Message {
    Message::Text(serde_json::to_string(value).expect("protocol messages serialize").into())
}

/// A browser event as a page gets it: with its question sets' previews parsed
/// ([`BrowserEvent::parse_previews`]), since the page carries no markdown parser.
fn to_browser(mut event: BrowserEvent) -> Message {
    event.parse_previews();
    text(&event)
}

fn revoked() -> Message {
    Message::Close(Some(CloseFrame { code: POLICY_VIOLATION, reason: "this token was revoked".into() }))
}

fn closing() -> Message {
    Message::Close(Some(CloseFrame { code: GOING_AWAY, reason: "the bridge is shutting down; reconnect to resume".into() }))
}

async fn send(sink: &mut (impl SinkExt<Message> + Unpin), msg: Message, within: Duration) -> bool {
    matches!(tokio::time::timeout(within, sink.send(msg)).await, Ok(Ok(())))
}

/// What one browser connection is shown: who it is, and the pending questions it was
/// shown (a question for someone else stays out until it escalates; what closes is
/// told only to those who saw it).
struct Sight {
    viewer: Option<Viewer>,
    shown: HashSet<String>,
}

impl Sight {
    /// The event as this connection gets it, if at all.
    /// (A question is announced again when it escalates: a connection that saw it
    /// already is not told twice.)
    fn admit(&mut self, bridge: &Bridge, event: BrowserEvent) -> Option<BrowserEvent> {
        match &event {
            BrowserEvent::Asked { question } => {
                (bridge.visible(question, self.viewer.as_ref()) && self.shown.insert(question.id.clone())).then_some(event)
            }
            BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => self.shown.remove(id).then_some(event),
            _ => Some(event),
        }
    }
}

/// Sends a fresh snapshot, part by part; false if the store failed or the browser is gone.
async fn send_snapshot(
    bridge: &Bridge,
    client: &str,
    sight: &mut Sight,
    sink: &mut (impl SinkExt<Message> + Unpin),
    within: Duration,
) -> bool {
    let mut cursor = bridge.snapshot_cursor();
    sight.shown.clear();
    let mut first = true;
    loop {
        match bridge.snapshot_part(client, &mut cursor).await {
            Ok(Some(mut part)) => {
                if let BrowserEvent::Snapshot { questions, viewer, .. } = &mut part {
                    if sight.viewer.is_some() {
                        questions.retain(|q| bridge.visible(q, sight.viewer.as_ref()));
                    }
                    sight.shown.extend(questions.iter().map(|q| q.id.clone()));
                    if first {
                        viewer.clone_from(&sight.viewer);
                    }
                }
                first = false;
                if !send(sink, to_browser(part), within).await {
                    return false;
                }
            }
            Ok(None) => return true,
            Err(e) => {
                tracing::warn!(%client, "cannot read the snapshot: {e}");
                return false;
            }
        }
    }
}

/// What a frame from either socket amounts to, once the rate limit and its type are
/// applied.
enum Incoming {
    Text(Utf8Bytes),
    /// Refused (over the rate limit, or binary); the connection goes on.
    Refused(ErrorBody),
    /// Over the rate limit for a whole burst: the connection must close.
    Flooding,
    Closed,
    /// A ping or pong.
    Nothing,
}

fn incoming(frame: Message, bucket: &mut Bucket) -> Incoming {
    if matches!(frame, Message::Text(_) | Message::Binary(_)) {
        match bucket.admit() {
            Admit::Yes => {}
            Admit::TooMany => return Incoming::Refused(too_many(bucket)),
            Admit::Close => return Incoming::Flooding,
        }
    }
    match frame {
        Message::Text(t) => Incoming::Text(t),
        Message::Binary(_) => Incoming::Refused(binary_refused()),
        Message::Close(_) => Incoming::Closed,
        Message::Ping(_) | Message::Pong(_) => Incoming::Nothing,
    }
}

fn binary_refused() -> ErrorBody {
    ErrorBody::new(ErrorCode::BadMessage, "binary frames are not accepted; send JSON text messages")
}

/// The agent socket of credential `owner` (None: the admin token); it closes when
/// `revocation` resolves (its token was revoked).
pub async fn agent(bridge: Arc<Bridge>, socket: WebSocket, owner: Option<String>, revocation: impl std::future::Future<Output = ()>) {
    tokio::pin!(revocation);
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Message>(256);
    let within = bridge.settings().send_timeout;
    let writer = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            let last = matches!(msg, Message::Close(_));
            if !send(&mut sink, msg, within).await || last {
                break;
            }
        }
    });
    let mut waits = JoinSet::new();
    let mut stop = bridge.shutdown_signal();
    let mut bucket = Bucket::new(&bridge);
    let mut alive = Keepalive::new(&bridge);
    loop {
        let frame = tokio::select! {
            f = stream.next() => f,
            ping = alive.due() => {
                let Some(ping) = ping else {
                    tracing::info!("agent socket sent nothing for two ping periods; half-open, disconnected");
                    break;
                };
                if tx.send(ping).await.is_err() {
                    break;
                }
                continue;
            }
            _ = crate::hub::stopped(&mut stop) => {
                let _ = tx.send(closing()).await;
                break;
            }
            _ = &mut revocation => {
                tracing::info!("agent socket's token was revoked; closed");
                let _ = tx.send(revoked()).await;
                break;
            }
        };
        let Some(Ok(frame)) = frame else { break };
        alive.heard();
        let reply = match incoming(frame, &mut bucket) {
            Incoming::Text(t) => match decode_agent(t.as_str()) {
                Ok(msg) => on_agent_message(&bridge, msg, owner.as_deref(), &tx, &mut waits).await,
                Err(error) => Some(AgentEvent::Error(Refused::of(error))),
            },
            Incoming::Refused(error) => Some(AgentEvent::Error(Refused::of(error))),
            Incoming::Flooding => {
                tracing::warn!("agent socket kept flooding; closed");
                let _ = tx.send(flooding()).await;
                break;
            }
            Incoming::Closed => break,
            Incoming::Nothing => None,
        };
        if let Some(event) = reply {
            if tx.send(text(&event)).await.is_err() {
                break;
            }
        }
    }
    // Ending the waits detaches this agent; its questions stay answerable.
    waits.abort_all();
    drop(tx);
    let _ = writer.await;
}

async fn on_agent_message(
    bridge: &Arc<Bridge>,
    msg: AgentMessage,
    owner: Option<&str>,
    tx: &mpsc::Sender<Message>,
    waits: &mut JoinSet<()>,
) -> Option<AgentEvent> {
    match msg {
        AgentMessage::Ask { reference, request, format } => match bridge.ask_as(&request, owner).await {
            Err(e) => Some(AgentEvent::Error(Refused { reference, id: None, error: e.body() })),
            Ok(asked) => {
                let id = asked.record.id.clone();
                let (bridge, tx, wait_id) = (bridge.clone(), tx.clone(), id.clone());
                waits.spawn(async move {
                    let event = match bridge.wait(&wait_id).await {
                        Ok(result) => AgentEvent::Result { id: wait_id, status: result.status, result: result.to_json(format) },
                        Err(e) => AgentEvent::Error(Refused { reference: None, id: Some(wait_id), error: e.body() }),
                    };
                    let _ = tx.send(text(&event)).await;
                });
                Some(AgentEvent::Accepted { reference, id, resumed: asked.resumed, warnings: asked.warnings })
            }
        },
        AgentMessage::Withdraw { id } => match withdraw(bridge, &id, owner).await {
            Ok(_) => None,
            Err(e) => Some(AgentEvent::Error(Refused { reference: None, id: Some(id), error: e.body() })),
        },
    }
}

/// An agent takes back question `id` (only its own).
async fn withdraw(bridge: &Bridge, id: &str, owner: Option<&str>) -> Result<AskResult, BridgeError> {
    bridge.reaches(id, owner).await?;
    bridge.close(id, Status::Withdrawn, None).await
}

/// The browser socket of the person `who` watches (None: no one in particular, shown
/// everything); when their teams change it sends a fresh snapshot of what they see now.
/// It closes when `revocation` resolves (its token was revoked).
pub async fn browser(bridge: Arc<Bridge>, socket: WebSocket, mut who: ViewerWatch, revocation: impl std::future::Future<Output = ()>) {
    tokio::pin!(revocation);
    let client = bridge.client_id();
    let (mut sink, mut stream) = socket.split();
    let within = bridge.settings().send_timeout;
    let mut events = bridge.subscribe();
    let mut sight = Sight { viewer: who.now(), shown: HashSet::new() };
    if !send_snapshot(&bridge, &client, &mut sight, &mut sink, within).await {
        return;
    }
    tracing::debug!(%client, "browser connected");
    bridge.name_client(&client, who.label());
    let mut stop = bridge.shutdown_signal();
    let mut bucket = Bucket::new(&bridge);
    let mut alive = Keepalive::new(&bridge);
    loop {
        let out: Message = tokio::select! {
            ev = events.recv() => match ev {
                Ok(ev) => match sight.admit(&bridge, ev) {
                    Some(ev) => to_browser(ev),
                    None => continue,
                },
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::info!(%client, "browser fell {n} events behind; resyncing from a snapshot");
                    events = bridge.subscribe();
                    if !send_snapshot(&bridge, &client, &mut sight, &mut sink, within).await {
                        break;
                    }
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            frame = stream.next() => {
                let Some(Ok(frame)) = frame else { break };
                alive.heard();
                let reply = match incoming(frame, &mut bucket) {
                    Incoming::Text(t) => match decode_browser(t.as_str()) {
                        Ok(msg) => on_browser_message(&bridge, msg, &client, sight.viewer.as_ref()).await,
                        Err(error) => Some(BrowserEvent::Error(Refused::of(error))),
                    },
                    Incoming::Refused(error) => Some(BrowserEvent::Error(Refused::of(error))),
                    Incoming::Flooding => {
                        tracing::warn!(%client, "browser socket kept flooding; closed");
                        let _ = send(&mut sink, flooding(), within).await;
                        break;
                    }
                    Incoming::Closed => break,
                    Incoming::Nothing => None,
                };
                match reply {
                    Some(r) => text(&r),
                    None => continue,
                }
            }
            _ = who.changed() => {
                let now = who.now();
                if now == sight.viewer {
                    continue;
                }
                tracing::debug!(%client, "the page's person is in other teams now; sending what they see");
                sight.viewer = now;
                if !send_snapshot(&bridge, &client, &mut sight, &mut sink, within).await {
                    break;
                }
                continue;
            }
            ping = alive.due() => match ping {
                Some(ping) => ping,
                None => {
                    tracing::info!(%client, "browser sent nothing for two ping periods; half-open, disconnected");
                    break;
                }
            },
            _ = crate::hub::stopped(&mut stop) => {
                let _ = send(&mut sink, closing(), within).await;
                break;
            }
            _ = &mut revocation => {
                tracing::info!(%client, "browser socket's token was revoked; closed");
                let _ = send(&mut sink, revoked(), within).await;
                break;
            }
        };
        if !send(&mut sink, out, within).await {
            tracing::info!(%client, "browser stopped reading; disconnected");
            break;
        }
    }
    bridge.forget_client(&client);
    tracing::debug!(%client, "browser disconnected");
}

async fn on_browser_message(bridge: &Bridge, msg: BrowserMessage, client: &str, viewer: Option<&Viewer>) -> Option<BrowserEvent> {
    let (reference, id, outcome) = match msg {
        BrowserMessage::History { reference, search, offset, limit } => {
            let limit = limit.clamp(1, HISTORY_PAGE);
            let search = search.filter(|s| !s.trim().is_empty());
            // One more than asked says whether older ones follow.
            return Some(match bridge.history(search.as_deref(), offset, limit + 1).await {
                Ok(mut records) => {
                    let more = records.len() > limit;
                    records.truncate(limit);
                    BrowserEvent::History { reference, records, offset, more }
                }
                Err(e) => BrowserEvent::Error(Refused { reference, id: None, error: e.body() }),
            });
        }
        BrowserMessage::Answer { reference, id, answers } => {
            let r = bridge.answer(&id, &answers, Answerer { viewer, by: Some(client) }).await;
            (reference, id, r)
        }
        BrowserMessage::Cancel { reference, id, chat } => {
            let r = bridge.decline(&id, chat, Answerer { viewer, by: Some(client) }).await;
            (reference, id, r)
        }
    };
    match outcome {
        Ok(_) => reference.map(|reference| BrowserEvent::Ack { reference, id }),
        Err(e) => Some(BrowserEvent::Error(Refused { reference, id: Some(id), error: e.body() })),
    }
}
