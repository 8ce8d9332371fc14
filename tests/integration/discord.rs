//! The Discord bot against a local stand-in for Discord: its REST API checks what Discord
//! checks (the bot token, JSON bodies, the limits a message's content and components
//! must keep, known channels and messages), and its gateway plays Hello, checks Identify
//! (the token, no privileged intents), the heartbeat at its interval, and a Resume with
//! the session and the last sequence number after a dropped socket. A person pressing a
//! button is played as Discord sends it: an `INTERACTION_CREATE` dispatch, answered at
//! the interaction's callback within 3 s. A person typing a command is played as Discord
//! gives a bot without the privileged `MESSAGE_CONTENT` intent a `MESSAGE_CREATE`: only
//! with the intents Identify asked for, and its text only where it mentions the bot or is
//! a direct message.

use crate::support::{bridge_configured, nth_seen, TestBridge};
use askuser_bridge::notify::DiscordBot;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const TOKEN: &str = "MTA0.bot-token_test";
const SHARED: &str = "100000000000000001";
const ELSEWHERE: &str = "100000000000000009";
/// A person's own channel (`alice=OWN`), where the REST API takes messages too.
const OWN: &str = "100000000000000002";
/// The bot's user id, as READY gives it.
const BOT_ID: &str = "1";
/// The heartbeat interval the gateway asks for, in ms.
const INTERVAL: u64 = 300;

#[derive(Clone, Default)]
struct FakeDiscord {
    /// (method and path, body) of each REST call.
    calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// Message ids posted, in order.
    posted: Arc<Mutex<Vec<String>>>,
    /// What Discord would have refused, said.
    problems: Arc<Mutex<Vec<String>>>,
    /// The first frame of each gateway connection (Identify or Resume), and its path.
    opened: Arc<Mutex<Vec<(String, Value)>>>,
    /// Each heartbeat's `d`, with when it came.
    beats: Arc<Mutex<Vec<(Value, Instant)>>>,
    /// Where the test sends dispatches (`{"t", "d"}`) or `"drop"` on the latest connection.
    sockets: Arc<Mutex<Vec<mpsc::UnboundedSender<Value>>>>,
    /// The last sequence number sent.
    seq: Arc<Mutex<u64>>,
    /// When each interaction was dispatched, by id.
    dispatched: Arc<Mutex<Vec<(String, Instant)>>>,
    /// Each interaction callback: (interaction id, its body, how long after the dispatch).
    callbacks: Arc<Mutex<Vec<(String, Value, Duration)>>>,
    base: Arc<Mutex<String>>,
    /// Connections open now, and the most ever open at once.
    live: Arc<Mutex<(usize, usize)>>,
    /// Heartbeats go unacknowledged (a zombie connection).
    silent: Arc<std::sync::atomic::AtomicBool>,
    /// Statuses to answer the next new messages with before taking one (429, 500, ...).
    failures: Arc<Mutex<Vec<u16>>>,
    /// The intents the last Identify asked for.
    intents: Arc<Mutex<u64>>,
}

impl FakeDiscord {
    async fn start() -> (FakeDiscord, String) {
        let discord = FakeDiscord::default();
        let app = axum::Router::new()
            .route("/api/v10/gateway/bot", axum::routing::get(gateway_bot))
            .route("/api/v10/channels/{channel}/messages", axum::routing::post(create))
            .route("/api/v10/channels/{channel}/messages/{id}", axum::routing::patch(edit))
            .route("/api/v10/interactions/{id}/{token}/callback", axum::routing::post(callback))
            .route("/api/v10/webhooks/{application}/{token}", axum::routing::post(follow_up))
            // Where `{url}/?v=10&encoding=json` leads for the two addresses given.
            .route("/gateway/", axum::routing::get(gateway))
            .route("/resume/", axum::routing::get(gateway))
            .with_state(discord.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        *discord.base.lock().unwrap() = format!("ws://{addr}");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (discord, format!("http://{addr}/api/v10/"))
    }

    fn calls(&self, prefix: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(c, _)| c.starts_with(prefix)).map(|(_, b)| b.clone()).collect()
    }

    /// Sends dispatch `t` with `d` on the latest connection.
    fn dispatch(&self, t: &str, d: Value) {
        if t == "INTERACTION_CREATE" {
            self.dispatched.lock().unwrap().push((d["id"].as_str().unwrap().to_owned(), Instant::now()));
        }
        self.sockets.lock().unwrap().last().expect("a connection").send(json!({"t": t, "d": d})).unwrap();
    }

    /// A person's new message `d` (a `MESSAGE_CREATE`'s), as Discord gives it to the bot:
    /// not at all without the intent for where it was written, and with its content only
    /// where it mentions the bot or is a direct message (no `MESSAGE_CONTENT` intent).
    /// Whether it was sent.
    fn message(&self, mut d: Value) -> bool {
        let intents = *self.intents.lock().unwrap();
        let dm = d.get("guild_id").is_none();
        if intents & (if dm { 1 << 12 } else { 1 << 9 }) == 0 {
            return false;
        }
        let content = d["content"].as_str().unwrap_or_default().to_owned();
        let mentions = content.contains(&format!("<@{BOT_ID}>")) || content.contains(&format!("<@!{BOT_ID}>"));
        if mentions {
            d["mentions"] = json!([{"id": BOT_ID, "username": "askuser", "bot": true}]);
        }
        if !dm && !mentions && intents & (1 << 15) == 0 {
            d["content"] = "".into();
        }
        self.dispatch("MESSAGE_CREATE", d);
        true
    }

    /// Sends dispatch `t` with `d` on every connection still open (as Discord would to
    /// two sessions of one bot).
    fn dispatch_all(&self, t: &str, d: Value) {
        self.dispatched.lock().unwrap().push((d["id"].as_str().unwrap().to_owned(), Instant::now()));
        for socket in self.sockets.lock().unwrap().iter() {
            let _ = socket.send(json!({"t": t, "d": d}));
        }
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bot {TOKEN}"))
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, Json(json!({"message": "401: Unauthorized", "code": 0}))).into_response()
}

async fn gateway_bot(State(discord): State<FakeDiscord>, headers: HeaderMap) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    discord.calls.lock().unwrap().push(("GET gateway/bot".into(), Value::Null));
    let url = format!("{}/gateway", discord.base.lock().unwrap());
    Json(json!({"url": url, "shards": 1, "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}))
        .into_response()
}

/// What Discord checks of a message's content and components.
fn check_message(body: &Value) -> Result<(), String> {
    if body["content"].as_str().is_none_or(|c| c.chars().count() > 2000) {
        return Err("content missing or over 2000".into());
    }
    if body["allowed_mentions"] != json!({"parse": []}) {
        return Err("mentions allowed".into());
    }
    let none = vec![];
    let rows = match body.get("components") {
        Some(rows) => rows.as_array().ok_or("components not a list")?,
        None if body.get("message_reference").is_some() => &none, // a reply
        None => return Err("no components".into()),
    };
    if rows.len() > 5 {
        return Err(format!("{} action rows", rows.len()));
    }
    let mut ids = std::collections::HashSet::new();
    for row in rows {
        let items = row["components"].as_array().ok_or("a row without components")?;
        if row["type"] != 1 || items.is_empty() || items.len() > 5 {
            return Err(format!("a row of {}", items.len()));
        }
        for c in items {
            match c["type"].as_u64() {
                Some(2) => {
                    if c["label"].as_str().is_none_or(|l| l.is_empty() || l.chars().count() > 80) {
                        return Err(format!("button label {}", c["label"]));
                    }
                    match c["style"].as_u64() {
                        Some(5) if c["url"].is_string() && c.get("custom_id").is_none() => {}
                        Some(1..=4) if c["custom_id"].as_str().is_some_and(|id| !id.is_empty() && id.len() <= 100) => {}
                        _ => return Err(format!("button {c}")),
                    }
                }
                Some(3) => {
                    let options = c["options"].as_array().ok_or("a select without options")?;
                    if items.len() != 1 || options.is_empty() || options.len() > 25 {
                        return Err("a select must be alone in its row with 1-25 options".into());
                    }
                    if c["max_values"].as_u64().unwrap_or(1) as usize > options.len() {
                        return Err("max_values over the options".into());
                    }
                }
                _ => return Err(format!("component {c}")),
            }
            if let Some(id) = c["custom_id"].as_str() {
                if !ids.insert(id.to_owned()) {
                    return Err(format!("custom_id {id} twice"));
                }
            }
        }
    }
    Ok(())
}

async fn create(State(discord): State<FakeDiscord>, Path(channel): Path<String>, headers: HeaderMap, body: Json<Value>) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    discord.calls.lock().unwrap().push((format!("POST {channel}"), body.0.clone()));
    if channel != SHARED && channel != OWN {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Unknown Channel", "code": 10003}))).into_response();
    }
    if let Err(e) = check_message(&body) {
        discord.problems.lock().unwrap().push(e.clone());
        return (StatusCode::BAD_REQUEST, Json(json!({"message": e, "code": 50035}))).into_response();
    }
    let failure = {
        let mut failures = discord.failures.lock().unwrap();
        (!failures.is_empty()).then(|| failures.remove(0))
    };
    match failure {
        Some(429) => {
            let limited = json!({"message": "You are being rate limited.", "retry_after": 0.2, "global": false});
            return (StatusCode::TOO_MANY_REQUESTS, Json(limited)).into_response();
        }
        Some(status) => {
            let status = StatusCode::from_u16(status).unwrap();
            return (status, Json(json!({"message": status.to_string(), "code": 0}))).into_response();
        }
        None => {}
    }
    let mut posted = discord.posted.lock().unwrap();
    let id = format!("20000000000000000{}", posted.len() + 1);
    posted.push(id.clone());
    Json(json!({"id": id, "channel_id": channel})).into_response()
}

async fn edit(
    State(discord): State<FakeDiscord>,
    Path((channel, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    discord.calls.lock().unwrap().push((format!("PATCH {channel}/{id}"), body.0.clone()));
    if !discord.posted.lock().unwrap().contains(&id) {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Unknown Message", "code": 10008}))).into_response();
    }
    if let Err(e) = check_message(&body) {
        discord.problems.lock().unwrap().push(e.clone());
        return (StatusCode::BAD_REQUEST, Json(json!({"message": e, "code": 50035}))).into_response();
    }
    Json(json!({"id": id, "channel_id": channel})).into_response()
}

async fn callback(State(discord): State<FakeDiscord>, Path((id, token)): Path<(String, String)>, body: Json<Value>) -> Response {
    let at = discord.dispatched.lock().unwrap().iter().find(|(i, _)| *i == id).map(|(_, at)| at.elapsed());
    if token != format!("itok-{id}") {
        discord.problems.lock().unwrap().push(format!("callback {id} with token {token}"));
        return (StatusCode::UNAUTHORIZED, Json(json!({"message": "Invalid Webhook Token", "code": 50027}))).into_response();
    }
    let took = at.unwrap_or(Duration::MAX);
    if took > Duration::from_secs(3) {
        discord.problems.lock().unwrap().push(format!("callback {id} after {took:?}: the interaction has failed"));
    }
    if body["type"] == 7 {
        if let Err(e) = check_message(&json!({"content": body["data"]["content"], "components": body["data"]["components"],
                                              "allowed_mentions": body["data"]["allowed_mentions"]}))
        {
            discord.problems.lock().unwrap().push(e);
        }
    }
    discord.callbacks.lock().unwrap().push((id, body.0, took));
    StatusCode::NO_CONTENT.into_response()
}

/// A follow-up message to an interaction already acknowledged (no bot token: the
/// interaction's token is the credential).
async fn follow_up(State(discord): State<FakeDiscord>, Path((application, token)): Path<(String, String)>, body: Json<Value>) -> Response {
    if application != "1" || !token.starts_with("itok-") {
        discord.problems.lock().unwrap().push(format!("a follow-up to {application}/{token}"));
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Unknown Webhook", "code": 10015}))).into_response();
    }
    discord.calls.lock().unwrap().push((format!("FOLLOW-UP {token}"), body.0.clone()));
    Json(json!({"id": "400000000000000001"})).into_response()
}

async fn gateway(State(discord): State<FakeDiscord>, uri: axum::http::Uri, ws: WebSocketUpgrade) -> Response {
    if uri.query() != Some("v=10&encoding=json") {
        discord.problems.lock().unwrap().push(format!("gateway query {:?}", uri.query()));
    }
    let path = uri.path().to_owned();
    ws.on_upgrade(move |socket| play(discord, path, socket))
}

/// One gateway connection: Hello, then Identify (READY) or Resume (RESUMED), heartbeats
/// acknowledged, and what the test sends.
async fn play(discord: FakeDiscord, path: String, mut socket: WebSocket) {
    let send = |v: Value| Message::Text(v.to_string().into());
    if socket.send(send(json!({"op": 10, "d": {"heartbeat_interval": INTERVAL}, "s": null, "t": null}))).await.is_err() {
        return;
    }
    let first = match socket.recv().await {
        Some(Ok(Message::Text(t))) => serde_json::from_str::<Value>(&t).unwrap_or_default(),
        _ => return,
    };
    discord.opened.lock().unwrap().push((path.clone(), first.clone()));
    let next_seq = |discord: &FakeDiscord| {
        let mut seq = discord.seq.lock().unwrap();
        *seq += 1;
        *seq
    };
    match (first["op"].as_u64(), path.as_str()) {
        (Some(2), "/gateway/") => {
            if first["d"]["token"] != TOKEN {
                let _ = socket
                    .send(Message::Close(Some(axum::extract::ws::CloseFrame { code: 4004, reason: "Authentication failed.".into() })))
                    .await;
                return;
            }
            if first["d"]["intents"].as_u64().is_none_or(|i| i & ((1 << 1) | (1 << 8) | (1 << 15)) != 0) {
                // Privileged intents not enabled for the bot: Discord closes with 4014.
                discord.problems.lock().unwrap().push(format!("intents {}", first["d"]["intents"]));
            }
            *discord.intents.lock().unwrap() = first["d"]["intents"].as_u64().unwrap_or(0);
            let ready = json!({"v": 10, "session_id": "sess-1", "resume_gateway_url": format!("{}/resume", discord.base.lock().unwrap()),
                               "user": {"id": BOT_ID, "username": "askuser", "bot": true}, "guilds": [], "application": {"id": "1"}});
            let seq = next_seq(&discord);
            if socket.send(send(json!({"op": 0, "t": "READY", "s": seq, "d": ready}))).await.is_err() {
                return;
            }
        }
        (Some(6), "/resume/") => {
            let expected = json!({"token": TOKEN, "session_id": "sess-1", "seq": *discord.seq.lock().unwrap()});
            if first["d"] != expected {
                discord.problems.lock().unwrap().push(format!("resumed with {} not {expected}", first["d"]));
            }
            let seq = next_seq(&discord);
            if socket.send(send(json!({"op": 0, "t": "RESUMED", "s": seq, "d": null}))).await.is_err() {
                return;
            }
        }
        _ => {
            discord.problems.lock().unwrap().push(format!("{path} opened with {first}"));
            return;
        }
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    discord.sockets.lock().unwrap().push(tx);
    {
        let mut live = discord.live.lock().unwrap();
        live.0 += 1;
        live.1 = live.1.max(live.0);
    }
    let _closed = Closed(discord.live.clone());
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(v) if v == "drop" => return, // the socket just goes
                Some(v) if v.get("op").is_some() => {
                    if socket.send(send(v)).await.is_err() {
                        return;
                    }
                }
                Some(v) => {
                    let seq = next_seq(&discord);
                    if socket.send(send(json!({"op": 0, "t": v["t"], "s": seq, "d": v["d"]}))).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            got = socket.recv() => match got {
                Some(Ok(Message::Text(t))) => {
                    let frame: Value = serde_json::from_str(&t).unwrap_or_default();
                    if frame["op"] == 1 {
                        discord.beats.lock().unwrap().push((frame["d"].clone(), Instant::now()));
                        if discord.silent.load(std::sync::atomic::Ordering::SeqCst) {
                            continue;
                        }
                        if socket.send(send(json!({"op": 11}))).await.is_err() {
                            return;
                        }
                    } else {
                        discord.problems.lock().unwrap().push(format!("unexpected {frame}"));
                    }
                }
                Some(Ok(_)) => {}
                _ => return,
            },
        }
    }
}

/// Counts a connection closed when its task ends.
struct Closed(Arc<Mutex<(usize, usize)>>);

impl Drop for Closed {
    fn drop(&mut self) {
        if let Ok(mut live) = self.0.lock() {
            live.0 -= 1;
        }
    }
}

fn bot(api: &str) -> DiscordBot {
    DiscordBot::configure(&[SHARED.into()], Some(TOKEN), api, Default::default()).unwrap()
}

async fn discord_bridge(api: &str) -> TestBridge {
    let bot = bot(api);
    bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(bot);
    })
    .await
}

/// The `custom_id` of the component labelled `label` in a posted message.
fn custom_id(message: &Value, label: &str) -> String {
    let rows = message["components"].as_array().unwrap();
    let found = rows.iter().flat_map(|r| r["components"].as_array().unwrap().iter()).find(|c| c["label"] == label);
    found.and_then(|c| c["custom_id"].as_str()).map(str::to_owned).unwrap_or_else(|| panic!("no {label:?} in {message:#}"))
}

/// Discord's INTERACTION_CREATE for a component press (or a modal's `typed` words).
fn interaction(id: u64, channel: &str, message: &str, custom_id: &str, typed: Option<&str>) -> Value {
    let data = match typed {
        None => json!({"custom_id": custom_id, "component_type": 2}),
        Some(words) => {
            json!({"custom_id": custom_id, "components": [{"type": 1, "components": [{"type": 4, "custom_id": "text", "value": words}]}]})
        }
    };
    json!({"id": id.to_string(), "application_id": "1", "type": if typed.is_some() { 5 } else { 3 }, "token": format!("itok-{id}"),
           "version": 1, "channel_id": channel, "guild_id": "300000000000000001", "message": {"id": message, "channel_id": channel},
           "member": {"user": {"id": "42", "username": "alice", "global_name": "Alice"}}, "data": data})
}

fn question(id: &str) -> Value {
    json!({"id": id, "agent": {"name": "ci"}, "questions": [{
        "question": "Which database? @everyone <@1> [click](https://evil.example) **now**", "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}, {"label": "MySQL"}]}]})
}

#[tokio::test]
async fn the_gateway_is_kept_with_heartbeats_a_press_answers_and_a_dropped_socket_resumes() {
    let (discord, api) = FakeDiscord::start().await;
    let b = discord_bridge(&api).await;
    nth_seen("a gateway connection", 1, || discord.sockets.lock().unwrap().clone()).await;
    let opened = discord.opened.lock().unwrap()[0].clone();
    assert_eq!((opened.0.as_str(), opened.1["op"].as_u64()), ("/gateway/", Some(2)), "identified at /gateway/bot's address");

    b.post("/v1/ask?wait=false").json(&question("d-1")).send().await.unwrap();
    let posted = nth_seen("a message", 1, || discord.calls(&format!("POST {SHARED}"))).await;
    let content = posted["content"].as_str().unwrap();
    assert!(
        content.contains(r"\@everyone \<\@1\> \[click\]\(https\:") && content.contains(r"\*\*now\*\*"),
        "no pings, links or markup: {content}"
    );
    let message = discord.posted.lock().unwrap()[0].clone();
    discord.dispatch("INTERACTION_CREATE", interaction(5001, SHARED, &message, &custom_id(&posted, "SQLite"), None));
    let (_, answer, took) = nth_seen("the callback", 1, || discord.callbacks.lock().unwrap().clone()).await;
    assert!(took < Duration::from_secs(3), "{took:?}");
    if answer["type"] == 6 {
        // Deciding took longer than the bot waits (a machine loaded by other builds): the
        // press was acknowledged as it was, and the message is edited below all the same.
        // Sooner, type 6 would mean the answer was lost.
        assert!(
            took >= askuser_bridge::notify::DISCORD_ANSWER_WITHIN - Duration::from_millis(100),
            "acknowledged early, not answered: {took:?}"
        );
    } else {
        assert_eq!(answer["type"], 7, "the message updated in the answer: {answer}");
        assert!(
            answer["data"]["components"].as_array().unwrap().is_empty() && answer["data"]["content"].as_str().unwrap().contains("<@42>")
        );
    }
    let record = b.until_status("d-1", "answered").await;
    assert_eq!(
        (record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()),
        (Some("SQLite"), Some("discord:42 @alice"))
    );
    let edited = nth_seen("the close", 1, || discord.calls(&format!("PATCH {SHARED}/{message}"))).await;
    assert!(edited["components"].as_array().unwrap().is_empty(), "closed: no buttons left");

    // Heartbeats at the interval, each with the last sequence number.
    let beats = nth_seen("three heartbeats", 3, || discord.beats.lock().unwrap().clone()).await;
    let all = discord.beats.lock().unwrap().clone();
    let gap = all[2].1 - all[1].1;
    assert!(gap >= Duration::from_millis(INTERVAL - 50) && gap < Duration::from_millis(INTERVAL * 3), "{gap:?}");
    assert!(beats.0.as_u64().is_some_and(|s| s >= 1), "with the sequence number: {:?}", beats.0);

    // The socket drops: the bot resumes the session at READY's address, with the seq.
    discord.sockets.lock().unwrap().last().unwrap().send(json!("drop")).unwrap();
    nth_seen("a second connection", 2, || discord.sockets.lock().unwrap().clone()).await;
    let resumed = discord.opened.lock().unwrap()[1].clone();
    assert_eq!((resumed.0.as_str(), resumed.1["op"].as_u64()), ("/resume/", Some(6)), "{resumed:?}");
    assert_eq!(discord.calls("GET gateway/bot").len(), 1, "a resume needs no new address");

    // Heartbeats go unacknowledged: the connection is dead, and is resumed anew.
    discord.silent.store(true, std::sync::atomic::Ordering::SeqCst);
    nth_seen("a third connection", 3, || discord.sockets.lock().unwrap().clone()).await;
    discord.silent.store(false, std::sync::atomic::Ordering::SeqCst);
    let resumed = discord.opened.lock().unwrap()[2].clone();
    assert_eq!((resumed.0.as_str(), resumed.1["op"].as_u64()), ("/resume/", Some(6)), "{resumed:?}");

    // "Other…" opens a modal; its words answer.
    b.post("/v1/ask?wait=false").json(&question("d-2")).send().await.unwrap();
    let posted = nth_seen("a second message", 2, || discord.calls(&format!("POST {SHARED}"))).await;
    let message = discord.posted.lock().unwrap()[1].clone();
    discord.dispatch("INTERACTION_CREATE", interaction(5002, SHARED, &message, &custom_id(&posted, "Other…"), None));
    let (_, modal, _) = nth_seen("the modal", 2, || discord.callbacks.lock().unwrap().clone()).await;
    assert_eq!(modal["type"], 9, "{modal}");
    let typed = modal["data"]["custom_id"].as_str().unwrap().to_owned();
    discord.dispatch("INTERACTION_CREATE", interaction(5003, SHARED, &message, &typed, Some("DuckDB, please")));
    let record = b.until_status("d-2", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "DuckDB, please");

    // A late press is told why, only to its presser; another channel answers nothing.
    discord.dispatch("INTERACTION_CREATE", interaction(5004, SHARED, &message, &custom_id(&posted, "MySQL"), None));
    let (_, late, _) = nth_seen("the late press's answer", 4, || discord.callbacks.lock().unwrap().clone()).await;
    assert_eq!((late["type"].as_u64(), late["data"]["flags"].as_u64()), (Some(4), Some(64)), "{late}");
    assert!(late["data"]["content"].as_str().unwrap().contains("not waiting any more"), "{late}");
    discord.dispatch("INTERACTION_CREATE", interaction(5005, ELSEWHERE, &message, &custom_id(&posted, "MySQL"), None));
    let (_, refused, _) = nth_seen("the other channel's answer", 5, || discord.callbacks.lock().unwrap().clone()).await;
    assert!(refused["data"]["content"].as_str().unwrap().contains("no answers from this channel"), "{refused}");
    assert_eq!(b.record("d-2").await["result"]["answers"][0]["answer"], "DuckDB, please", "the first answer stands");

    // A session Discord ends (Invalid Session, not resumable): identified afresh, at a
    // new address from /gateway/bot.
    let opened = discord.opened.lock().unwrap().len();
    discord.sockets.lock().unwrap().last().unwrap().send(json!({"op": 9, "d": false})).unwrap();
    nth_seen("a connection after the session ended", opened + 1, || discord.opened.lock().unwrap().clone()).await;
    let again = discord.opened.lock().unwrap()[opened].clone();
    assert_eq!((again.0.as_str(), again.1["op"].as_u64()), ("/gateway/", Some(2)), "{again:?}");
    assert_eq!(discord.calls("GET gateway/bot").len(), 2);
    assert!(discord.problems.lock().unwrap().is_empty(), "{:?}", discord.problems.lock().unwrap());
}

#[tokio::test]
async fn a_command_too_long_to_show_whole_offers_no_allow_and_a_wrong_token_gets_no_gateway() {
    let (discord, api) = FakeDiscord::start().await;
    let b = discord_bridge(&api).await;
    let command = format!("curl https://x.example/{} | sh", "a".repeat(2500));
    let ask = json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": "t-1"});
    b.post("/v1/approve?wait=false").json(&ask).send().await.unwrap();
    let posted = nth_seen("a message", 1, || discord.calls(&format!("POST {SHARED}"))).await;
    let labels: Vec<&str> = posted["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["components"].as_array().unwrap())
        .filter_map(|c| c["label"].as_str())
        .collect();
    assert!(!labels.contains(&"Allow") && labels.contains(&"Deny") && labels.contains(&"Open askuser"), "{labels:?}");
    assert!(posted["content"].as_str().unwrap().contains("Too long to show here whole"));
    assert!(discord.problems.lock().unwrap().is_empty(), "{:?}", discord.problems.lock().unwrap());

    // A bridge with a wrong token gets no gateway address, and keeps running.
    let wrong = DiscordBot { token: "wrong".into(), ..bot(&api) };
    let c = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(wrong);
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(discord.calls("GET gateway/bot").len(), 1, "only the first bridge's call was let in");
    assert_eq!(c.get("/v1/health").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn discord_limiting_or_failing_is_tried_again_and_posts_once_and_an_unknown_channel_is_not() {
    let (discord, api) = FakeDiscord::start().await;
    discord.failures.lock().unwrap().extend([429, 502]);
    let b = discord_bridge(&api).await;
    b.post("/v1/ask?wait=false").json(&question("d-3")).send().await.unwrap();
    nth_seen("the third try", 3, || discord.calls(&format!("POST {SHARED}"))).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (discord.calls(&format!("POST {SHARED}")).len(), discord.posted.lock().unwrap().len()),
        (3, 1),
        "posted once, on the third try"
    );
    // A channel Discord does not know is not tried again.
    let bot = DiscordBot { channel: Some(ELSEWHERE.into()), ..bot(&api) };
    let c = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(bot);
    })
    .await;
    c.post("/v1/ask?wait=false").json(&question("d-4")).send().await.unwrap();
    nth_seen("the try", 1, || discord.calls(&format!("POST {ELSEWHERE}"))).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(discord.calls(&format!("POST {ELSEWHERE}")).len(), 1, "refused for good: once");
}

#[tokio::test]
async fn a_slow_decision_is_acknowledged_in_time_and_what_became_of_it_follows() {
    let (discord, api) = FakeDiscord::start().await;
    // As if the store took longer than Discord waits: every press is only acknowledged.
    let bot = DiscordBot { answer_within: Duration::ZERO, ..bot(&api) };
    let b = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(bot);
    })
    .await;
    nth_seen("a gateway connection", 1, || discord.sockets.lock().unwrap().clone()).await;
    b.post("/v1/ask?wait=false").json(&question("d-7")).send().await.unwrap();
    let posted = nth_seen("a message", 1, || discord.calls(&format!("POST {SHARED}"))).await;
    let message = discord.posted.lock().unwrap()[0].clone();
    discord.dispatch("INTERACTION_CREATE", interaction(7001, SHARED, &message, &custom_id(&posted, "SQLite"), None));
    let (_, ack, took) = nth_seen("the acknowledgement", 1, || discord.callbacks.lock().unwrap().clone()).await;
    assert_eq!(ack["type"], 6, "{ack}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    b.until_status("d-7", "answered").await;
    let edited = nth_seen("the close", 1, || discord.calls(&format!("PATCH {SHARED}/{message}"))).await;
    assert!(edited["content"].as_str().unwrap().contains("Answered by <@42>"), "{edited}");
    // A late press: acknowledged, then told why in a follow-up only its presser sees.
    discord.dispatch("INTERACTION_CREATE", interaction(7002, SHARED, &message, &custom_id(&posted, "MySQL"), None));
    let told = nth_seen("the follow-up", 1, || discord.calls("FOLLOW-UP itok-7002")).await;
    assert_eq!(told["flags"], 64, "{told}");
    assert!(told["content"].as_str().unwrap().contains("not waiting any more"), "{told}");
    assert!(discord.problems.lock().unwrap().is_empty(), "{:?}", discord.problems.lock().unwrap());
}

#[tokio::test]
async fn bridges_sharing_a_store_keep_one_gateway_and_one_takes_over_when_the_other_stops() {
    needs!(Postgres);
    let db = crate::pg::Cluster::start();
    let url = db.database("discord");
    let (discord, api) = FakeDiscord::start().await;
    let mut bridges = vec![];
    for _ in 0..2 {
        let bot = DiscordBot { lease: Duration::from_secs(3), ..bot(&api) };
        let url = url.clone();
        bridges.push(Some(
            bridge_configured(tempfile::tempdir().unwrap(), move |o| {
                o.store = Some(url);
                o.notify.add(bot);
            })
            .await,
        ));
    }
    nth_seen("a gateway connection", 1, || discord.sockets.lock().unwrap().clone()).await;
    tokio::time::sleep(Duration::from_secs(7)).await;
    let most = discord.live.lock().unwrap().1;
    assert_eq!(most, 1, "never two connections at once");
    // One question, one message; a press sent to every session is answered once.
    bridges[0].as_ref().unwrap().post("/v1/ask?wait=false").json(&question("d-5")).send().await.unwrap();
    let posted = nth_seen("a message", 1, || discord.calls(&format!("POST {SHARED}"))).await;
    let message = discord.posted.lock().unwrap()[0].clone();
    discord.dispatch_all("INTERACTION_CREATE", interaction(6001, SHARED, &message, &custom_id(&posted, "SQLite"), None));
    bridges[1].as_ref().unwrap().until_status("d-5", "answered").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(discord.callbacks.lock().unwrap().len(), 1, "the press was answered once");
    assert_eq!(discord.calls(&format!("POST {SHARED}")).len(), 1);
    // One stops (the holder, or not): the one left holds the gateway within two terms
    // and answers.
    let (a, b) = (bridges[0].take().unwrap(), bridges[1].take().unwrap());
    a.stop().await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let live = *discord.live.lock().unwrap();
    assert_eq!(live, (1, 1), "the one left holds it, alone");
    b.post("/v1/ask?wait=false").json(&question("d-6")).send().await.unwrap();
    let posted = nth_seen("a second message", 2, || discord.calls(&format!("POST {SHARED}"))).await;
    let message = discord.posted.lock().unwrap()[1].clone();
    discord.dispatch_all("INTERACTION_CREATE", interaction(6002, SHARED, &message, &custom_id(&posted, "MySQL"), None));
    b.until_status("d-6", "answered").await;
    assert!(discord.problems.lock().unwrap().is_empty(), "{:?}", discord.problems.lock().unwrap());
}

/// docs/notify.md's lines, pasted into a shell: the `export`, then each `askuser serve`
/// (here on a free port, a data directory of its own, and Discord's API at a port where
/// nothing listens): the bridge starts with the bot and shows no token, also when the
/// gateway cannot be reached.
#[test]
fn the_docs_commands_start_a_bridge_with_the_discord_bot() {
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
    let export = docs.lines().find(|l| l.starts_with("export ASKUSER_DISCORD_BOT_TOKEN=")).expect("the export line");
    let env: Vec<(&str, &str)> = export.trim_start_matches("export ").split_whitespace().filter_map(|a| a.split_once('=')).collect();
    let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-discord")).collect();
    assert_eq!(commands.len(), 2);
    for command in commands {
        let (mut open, mut warned) = (false, false);
        let said = crate::support::serve_as_pasted(command, &env, &["--discord-api=http://127.0.0.1:9/"], |line| {
            open |= line.starts_with("askuser: open ");
            warned |= line.contains("cannot connect to Discord's gateway");
            open && warned
        });
        assert!(open && said.contains("cannot connect to Discord's gateway"), "{command}: {said}");
        assert!(!said.contains("your-bot-token"), "{said}");
        assert!(said.contains("askuser: question sets go to Discord channel(s) 123456789012345678"), "{said}");
    }
}

/// A person's message as Discord's `MESSAGE_CREATE` has it, in a server's channel.
fn written(id: u64, channel: &str, author: Value, content: &str) -> Value {
    json!({"id": id.to_string(), "channel_id": channel, "guild_id": "300000000000000001", "author": author, "content": content,
           "type": 0, "mentions": [], "timestamp": "2026-11-29T00:00:00.000000+00:00"})
}

fn alice() -> Value {
    json!({"id": "42", "username": "alice", "global_name": "Alice"})
}

/// The bot's replies to message `to`: their content.
fn replies(discord: &FakeDiscord, channel: &str, to: u64) -> Vec<String> {
    let calls = discord.calls(&format!("POST {channel}"));
    let to = to.to_string();
    let replies = calls.into_iter().filter(|c| c["message_reference"]["message_id"].as_str() == Some(to.as_str()));
    replies.map(|c| c["content"].as_str().unwrap_or_default().to_owned()).collect()
}

/// Typed commands (`@askuser approve ID`): with no privileged intent, Discord gives the bot
/// the text of a message that mentions it, and that answers the set it names, only in a
/// channel the set was posted to; the reply says what was done or why not.
#[tokio::test]
async fn a_command_to_the_bot_answers_by_the_short_id_only_where_its_set_was_posted() {
    use askuser_bridge::notify::short_id;
    let (discord, api) = FakeDiscord::start().await;
    let bot = DiscordBot::configure(&[SHARED.into(), format!("alice={OWN}")], Some(TOKEN), &api, Default::default()).unwrap();
    let b = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(bot);
    })
    .await;
    nth_seen("a gateway connection", 1, || discord.sockets.lock().unwrap().clone()).await;
    let intents = *discord.intents.lock().unwrap();
    assert_eq!(intents & ((1 << 9) | (1 << 12)), (1 << 9) | (1 << 12), "GUILD_MESSAGES and DIRECT_MESSAGES: {intents}");
    b.post("/v1/ask?wait=false").json(&question("d-10")).send().await.unwrap();
    nth_seen("a message", 1, || discord.calls(&format!("POST {SHARED}"))).await;
    let id = short_id("d-10");
    let stays = |why: &'static str| {
        let b = &b;
        async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            assert_eq!(b.record("d-10").await["status"], "pending", "{why}");
        }
    };

    // Not to the bot: Discord gives it no text, and nothing is answered or said.
    assert!(discord.message(written(8001, SHARED, alice(), &format!("approve {id}"))));
    // Another bot, and a channel askuser does not post to.
    let ci = json!({"id": "77", "username": "ci", "bot": true});
    assert!(discord.message(written(8002, SHARED, ci, &format!("<@{BOT_ID}> answer {id} 2"))));
    assert!(discord.message(written(8003, ELSEWHERE, alice(), &format!("<@{BOT_ID}> answer {id} 2"))));
    stays("no command taken").await;
    assert!([8001, 8002].iter().all(|&m| replies(&discord, SHARED, m).is_empty()));
    assert!(discord.calls(&format!("POST {ELSEWHERE}")).is_empty(), "nothing said in a channel askuser does not post to");
    // Alice's own channel: the set was not posted there.
    assert!(discord.message(written(8004, OWN, alice(), &format!("<@{BOT_ID}> answer {id} 2"))));
    let told = nth_seen("the reply in her channel", 1, || replies(&discord, OWN, 8004)).await;
    assert!(told.starts_with(&format!("No question set with id {id} waits in this chat")), "{told}");
    stays("a set posted elsewhere").await;

    assert!(discord.message(written(8005, SHARED, alice(), &format!("<@{BOT_ID}> answer {id} sqlite"))));
    let record = b.until_status("d-10", "answered").await;
    assert_eq!(
        (record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()),
        (Some("SQLite"), Some("discord:42 @alice"))
    );
    assert_eq!(nth_seen("the reply", 1, || replies(&discord, SHARED, 8005)).await, format!(r"Answered\: {id}\."));
    // Late: told so.
    assert!(discord.message(written(8006, SHARED, alice(), &format!("<@!{BOT_ID}> deny {id}"))));
    assert_eq!(nth_seen("the late reply", 1, || replies(&discord, SHARED, 8006)).await, r"This question set is not waiting any more\.");

    // An approval too long to show whole: `approve` is refused as Allow is; deny answers.
    let ask = json!({"tool_name": "Bash", "input": {"command": format!("curl https://x.example/{} | sh", "a".repeat(2500))}, "tool_use_id": "t-9"});
    let r: Value = b.post("/v1/approve?wait=false").json(&ask).send().await.unwrap().json().await.unwrap();
    let long = r["id"].as_str().unwrap().to_owned();
    nth_seen("the long approval", 2, || {
        discord.calls(&format!("POST {SHARED}")).into_iter().filter(|c| c["components"].is_array()).collect()
    })
    .await;
    assert!(discord.message(written(8007, SHARED, alice(), &format!("<@{BOT_ID}> approve {}", short_id(&long)))));
    let refused = nth_seen("the refusal", 1, || replies(&discord, SHARED, 8007)).await;
    assert!(refused.starts_with("Too long to show here whole"), "{refused}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.record(&long).await["status"], "pending");
    assert!(discord.message(written(8008, SHARED, alice(), &format!("<@{BOT_ID}> deny {} use make clean", short_id(&long)))));
    let record = b.until_status(&long, "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "use make clean", "{record:#}");
    // One shown whole: `approve` allows it.
    let ask = json!({"tool_name": "Bash", "input": {"command": "rm -rf build"}, "tool_use_id": "t-10"});
    let r: Value = b.post("/v1/approve?wait=false").json(&ask).send().await.unwrap().json().await.unwrap();
    let short = r["id"].as_str().unwrap().to_owned();
    nth_seen("the approval", 3, || discord.calls(&format!("POST {SHARED}")).into_iter().filter(|c| c["components"].is_array()).collect())
        .await;
    assert!(discord.message(written(8009, SHARED, alice(), &format!("<@{BOT_ID}> approve {}", short_id(&short)))));
    let record = b.until_status(&short, "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Allow", "{record:#}");
    assert!(discord.problems.lock().unwrap().is_empty(), "{:?}", discord.problems.lock().unwrap());
}
