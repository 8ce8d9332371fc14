//! The Slack app against a local stand-in for Slack's Web API that checks what Slack
//! checks (the bot token, JSON bodies, the Block Kit limits a message must keep, known
//! channels and messages), and a person pressing buttons, played as Slack sends them:
//! a form-encoded `block_actions` payload signed with the app's signing secret, or over
//! Socket Mode: `apps.connections.open` with the app token, then a WebSocket whose
//! envelopes the bridge must acknowledge. A person typing a command is played as the
//! Events API sends a `message` event: signed to `/slack/events`, or in an `events_api`
//! envelope.

use crate::support::{bridge_configured, TestBridge};
use askuser_bridge::notify::SlackApp;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BOT: &str = "xoxb-1-test";
const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const SHARED: &str = "C0SHARED";
const APP: &str = "xapp-1-A0APP-1-test";

/// One Web API call Slack got: its method and body.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    body: Value,
}

/// Slack's Web API, as far as the app uses it.
#[derive(Clone, Default)]
struct FakeSlack {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Errors to answer the next calls with before `ok` (`"ratelimited"`, `"429"`, ...).
    failures: Arc<Mutex<Vec<&'static str>>>,
    /// Channel → the ts of each message posted there.
    posted: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
    /// Socket Mode: where to send envelopes on each connection made, in order.
    sockets: Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<String>>>>,
    /// The envelope ids acknowledged, and how long after it was sent each was.
    acks: Arc<Mutex<Vec<(String, Duration)>>>,
    /// When each envelope was sent, by id.
    sent: Arc<Mutex<BTreeMap<String, std::time::Instant>>>,
    /// The Socket Mode URL's address.
    socket_url: Arc<Mutex<String>>,
    /// Socket Mode connections open now, and the most ever open at once.
    live: Arc<Mutex<(usize, usize)>>,
    /// The ts of each message people wrote (a thread a reply may go in).
    written: Arc<Mutex<Vec<String>>>,
}

/// Counts a Socket Mode connection closed when its task ends.
struct Closed(Arc<Mutex<(usize, usize)>>);

impl Drop for Closed {
    fn drop(&mut self) {
        if let Ok(mut live) = self.0.lock() {
            live.0 -= 1;
        }
    }
}

impl FakeSlack {
    async fn start() -> (FakeSlack, String) {
        let slack = FakeSlack::default();
        let app = axum::Router::new()
            .route("/api/{method}", axum::routing::post(call))
            .route("/link", axum::routing::get(socket))
            .with_state(slack.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/", listener.local_addr().unwrap());
        *slack.socket_url.lock().unwrap() = format!("ws://{}/link", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (slack, url)
    }

    fn calls(&self, method: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|c| c.method == method).map(|c| c.body.clone()).collect()
    }

    /// Sends `envelope` on the latest Socket Mode connection.
    fn envelope(&self, envelope: Value) {
        if let Some(id) = envelope["envelope_id"].as_str() {
            self.sent.lock().unwrap().insert(id.to_owned(), std::time::Instant::now());
        }
        let sockets = self.sockets.lock().unwrap();
        sockets.last().expect("a connection").send(envelope.to_string()).unwrap();
    }

    /// Sends `envelope` on every connection still open (as Slack would not: it picks one;
    /// two bridges each with a connection would both act on what they got).
    fn envelope_all(&self, envelope: Value) {
        for socket in self.sockets.lock().unwrap().iter() {
            let _ = socket.send(envelope.to_string());
        }
    }

    /// Waits up to 15 s for the `n`th call of `method` (1-based).
    async fn nth(&self, method: &str, n: usize) -> Value {
        crate::support::nth_seen(&format!("{method} call"), n, || self.calls(method)).await
    }
}

/// What Slack checks of a message before it takes it: the limits its docs give.
fn check_message(body: &Value) -> Result<(), String> {
    let blocks = body["blocks"].as_array().ok_or("no blocks")?;
    if blocks.is_empty() || blocks.len() > 50 {
        return Err(format!("{} blocks", blocks.len()));
    }
    if body["text"].as_str().is_none_or(str::is_empty) {
        return Err("no fallback text".into());
    }
    let mut texts = vec![];
    fn walk(v: &Value, texts: &mut Vec<(String, String)>, path: &str) {
        match v {
            Value::Object(m) => {
                if let (Some(kind), Some(text)) = (m.get("type").and_then(Value::as_str), m.get("text").and_then(Value::as_str)) {
                    texts.push((format!("{path}/{kind}"), text.to_owned()));
                }
                for (k, v) in m {
                    walk(v, texts, &format!("{path}/{k}"));
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, texts, path)),
            _ => {}
        }
    }
    walk(&Value::Array(blocks.clone()), &mut texts, "");
    for block in blocks {
        let kind = block["type"].as_str().ok_or("a block without a type")?;
        if !["header", "section", "actions", "input", "context", "divider", "rich_text"].contains(&kind) {
            return Err(format!("block type {kind:?}"));
        }
        if kind == "header" && block["text"]["text"].as_str().unwrap_or_default().chars().count() > 150 {
            return Err("header over 150".into());
        }
        if kind == "actions" && block["elements"].as_array().map_or(0, Vec::len) > 25 {
            return Err("more than 25 elements".into());
        }
        for element in block["elements"].as_array().into_iter().flatten().chain(block.get("element")) {
            if element["action_id"].as_str().is_some_and(|a| a.len() > 255) {
                return Err("action_id over 255".into());
            }
            if element["type"] == "button" && element["text"]["text"].as_str().unwrap_or_default().chars().count() > 75 {
                return Err("button text over 75".into());
            }
        }
    }
    for (path, text) in texts {
        if text.chars().count() > 3000 {
            return Err(format!("{path}: text over 3000"));
        }
    }
    Ok(())
}

/// Socket Mode's WebSocket, as `apps.connections.open` gave it: `hello`, then the
/// envelopes the test sends; acknowledgements are kept with how long they took.
async fn socket(
    State(slack): State<FakeSlack>,
    axum::extract::Query(query): axum::extract::Query<BTreeMap<String, String>>,
    ws: axum::extract::ws::WebSocketUpgrade,
) -> axum::response::Response {
    use axum::extract::ws::Message;
    use axum::response::IntoResponse;
    if query.get("ticket").map(String::as_str) != Some("t-1") {
        return axum::http::StatusCode::UNAUTHORIZED.into_response();
    }
    ws.on_upgrade(move |mut socket| async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        slack.sockets.lock().unwrap().push(tx);
        {
            let mut live = slack.live.lock().unwrap();
            live.0 += 1;
            live.1 = live.1.max(live.0);
        }
        let _closed = Closed(slack.live.clone());
        let hello = json!({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0APP"}});
        if socket.send(Message::Text(hello.to_string().into())).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(text) => {
                        let disconnect = text.contains("\"disconnect\"");
                        if socket.send(Message::Text(text.into())).await.is_err() || disconnect {
                            return;
                        }
                    }
                    None => return,
                },
                got = socket.recv() => match got {
                    Some(Ok(Message::Text(text))) => {
                        let ack: Value = serde_json::from_str(&text).unwrap_or_default();
                        let id = ack["envelope_id"].as_str().unwrap_or("not an ack").to_owned();
                        let took = slack.sent.lock().unwrap().get(&id).map(|at| at.elapsed()).unwrap_or(Duration::MAX);
                        slack.acks.lock().unwrap().push((id, took));
                    }
                    Some(Ok(_)) => {}
                    _ => return,
                },
            }
        }
    })
}

async fn call(State(slack): State<FakeSlack>, Path(method): Path<String>, headers: HeaderMap, body: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let bad = |error: &str| Json(json!({"ok": false, "error": error})).into_response();
    if method == "apps.connections.open" {
        // Only the app-level token opens a connection; the bot token does not.
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {APP}")) {
            return bad("not_allowed_token_type");
        }
        slack.calls.lock().unwrap().push(Call { method, body: Value::Null });
        let url = format!("{}?ticket=t-1", slack.socket_url.lock().unwrap());
        return Json(json!({"ok": true, "url": url})).into_response();
    }
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {BOT}")) {
        return bad("not_authed");
    }
    if !headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("application/json")) {
        return bad("invalid_form_data");
    }
    let Ok(body) = serde_json::from_str::<Value>(&body) else { return bad("invalid_json") };
    slack.calls.lock().unwrap().push(Call { method: method.clone(), body: body.clone() });
    let failure = {
        let mut failures = slack.failures.lock().unwrap();
        (!failures.is_empty()).then(|| failures.remove(0))
    };
    match failure {
        Some("429") => return (axum::http::StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], "").into_response(),
        Some(error) => return bad(error),
        None => {}
    }
    let channel = body["channel"].as_str().unwrap_or_default().to_owned();
    if !channel.starts_with(['C', 'D', 'G']) {
        return bad("channel_not_found");
    }
    match method.as_str() {
        "chat.postMessage" => {
            let text_only = body.get("blocks").is_none();
            if text_only && body["text"].as_str().is_none_or(|t| t.is_empty() || t.chars().count() > 40_000) {
                return bad("no_text");
            }
            if !text_only {
                if let Err(e) = check_message(&body) {
                    return bad(&format!("invalid_blocks: {e}"));
                }
            }
            if let Some(thread) = body.get("thread_ts") {
                let known = thread.as_str().is_some_and(|t| {
                    slack.written.lock().unwrap().iter().any(|w| w == t) || slack.posted.lock().unwrap().values().flatten().any(|p| p == t)
                });
                if !known {
                    return bad("thread_not_found");
                }
            }
            if body["unfurl_links"] != false {
                return bad("expected unfurl_links false");
            }
            let mut posted = slack.posted.lock().unwrap();
            let list = posted.entry(channel.clone()).or_default();
            let ts = format!("1700000000.{:06}", list.len() + 1);
            list.push(ts.clone());
            Json(json!({"ok": true, "channel": channel, "ts": ts})).into_response()
        }
        "chat.update" => {
            let ts = body["ts"].as_str().unwrap_or_default();
            if !slack.posted.lock().unwrap().get(&channel).is_some_and(|l| l.iter().any(|t| t == ts)) {
                return bad("message_not_found");
            }
            if let Err(e) = check_message(&body) {
                return bad(&format!("invalid_blocks: {e}"));
            }
            Json(json!({"ok": true, "channel": channel, "ts": ts})).into_response()
        }
        "chat.postEphemeral" if body["user"].is_string() && body["text"].is_string() => {
            Json(json!({"ok": true, "message_ts": "1700000001.000001"})).into_response()
        }
        _ => bad("unknown_method"),
    }
}

fn app(api: &str, routes: &[(&str, &str)]) -> SlackApp {
    SlackApp {
        token: BOT.into(),
        signing_secret: SECRET.into(),
        app_token: None,
        lease: askuser_bridge::notify::SLACK_LEASE,
        api: api.parse().unwrap(),
        channel: Some(SHARED.into()),
        routes: routes.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        rules: Default::default(),
    }
}

async fn slack_bridge(dir: tempfile::TempDir, api: &str, routes: &[(&str, &str)]) -> TestBridge {
    let slack = app(api, routes);
    bridge_configured(dir, move |opts| {
        opts.notify.add(slack);
    })
    .await
}

fn question(id: &str) -> Value {
    json!({"id": id, "agent": {"name": "ci"}, "questions": [{
        "question": "Which database? <!channel> & <https://evil.example|click>", "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}, {"label": "MySQL"}]}]})
}

/// The button labelled `label` in a posted message: its block id and action id.
fn button(message: &Value, label: &str) -> (String, String) {
    for block in message["blocks"].as_array().unwrap() {
        for e in block["elements"].as_array().into_iter().flatten() {
            if e["type"] == "button" && e["text"]["text"] == label {
                return (block["block_id"].as_str().unwrap().into(), e["action_id"].as_str().unwrap().into());
            }
        }
    }
    panic!("no button {label:?} in {message:#}");
}

/// Slack's `v0` signature of `body` at `timestamp` under `secret`.
fn sign(secret: &str, timestamp: &str, body: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, format!("v0:{timestamp}:{body}").as_bytes());
    format!("v0={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A person (Slack user `user`) pressing the button `(block, action)` of message `ts`
/// in `channel`, as Slack sends it: the form body and its timestamp.
fn press(channel: &str, ts: &str, pressed: &(String, String), user: &str) -> String {
    let payload = press_payload(channel, ts, pressed, user);
    url::form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish()
}

/// The `block_actions` payload of such a press.
fn press_payload(channel: &str, ts: &str, (block, action): &(String, String), user: &str) -> Value {
    json!({
        "type": "block_actions", "user": {"id": user, "username": "alice", "name": "alice", "team_id": "T0TEAM"},
        "api_app_id": "A0APP", "team": {"id": "T0TEAM", "domain": "example"},
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
        "trigger_id": "1.2.3", "channel": {"id": channel, "name": "agents"},
        "message": {"type": "message", "ts": ts, "text": "…"},
        "response_url": "https://hooks.slack.com/actions/T0TEAM/1/x", "state": {"values": {}},
        "actions": [{"type": "button", "block_id": block, "action_id": action, "value": "0", "action_ts": "1700000002.1",
                     "text": {"type": "plain_text", "text": "…"}}]
    })
}

async fn send_action(b: &TestBridge, body: &str, timestamp: &str, signature: &str) -> reqwest::Response {
    b.http
        .post(format!("{}/slack/actions", b.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp)
        .header("x-slack-signature", signature)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_question_set_posted_to_slack_is_answered_by_its_button_and_then_says_so() {
    let (slack, api) = FakeSlack::start().await;
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("s-1")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 1).await;
    assert_eq!(posted["channel"], SHARED);
    let shown = posted.to_string();
    assert!(!shown.contains("<!channel>") && !shown.contains("<https://evil"), "agent text never pings or links: {shown}");
    assert!(shown.contains("&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;"), "{shown}");
    assert!(shown.contains("#q=s-1"), "a button opens the inbox on the question: {shown}");

    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let body = press(SHARED, &ts, &button(&posted, "SQLite"), "U0ALICE");
    let at = now_s().to_string();
    let r = send_action(&b, &body, &at, &sign(SECRET, &at, &body)).await;
    assert_eq!(r.status(), 200, "acknowledged at once");
    let record = b.until_status("s-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}");
    assert_eq!(record["answeredBy"], "slack:U0ALICE", "who answered, as Slack names them");

    let updated = slack.nth("chat.update", 1).await;
    assert_eq!((updated["channel"].as_str(), updated["ts"].as_str()), (Some(SHARED), Some(ts.as_str())), "the same message");
    let text = updated.to_string();
    assert!(text.contains("SQLite") && text.contains("U0ALICE"), "it says what was answered and by whom: {text}");
    assert!(!text.contains("\"actions\""), "no buttons left: {text}");
    assert!(slack.calls("chat.postEphemeral").is_empty(), "nothing went wrong to tell");
}

#[tokio::test]
async fn requests_not_signed_by_the_app_are_refused_and_answer_nothing() {
    let (slack, api) = FakeSlack::start().await;
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("s-2")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 1).await;
    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let body = press(SHARED, &ts, &button(&posted, "Postgres"), "U0MALLORY");
    let now = now_s().to_string();
    let stale = (now_s() - 600).to_string();
    for (timestamp, signature, why) in [
        (now.clone(), sign("another app's secret", &now, &body), "another secret"),
        (stale.clone(), sign(SECRET, &stale, &body), "an old request, replayed"),
        (now.clone(), sign(SECRET, &now, &body.replace("Postgres", "MySQL").replace("U0MALLORY", "U0ALICE")), "signed for another body"),
        (now.clone(), String::new(), "no signature"),
    ] {
        let r = send_action(&b, &body, &timestamp, &signature).await;
        assert_eq!(r.status(), 401, "{why}");
        assert!(r.text().await.unwrap().starts_with("not from Slack"), "{why}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.record("s-2").await["status"], "pending", "nothing was answered");
    assert!(slack.calls("chat.update").is_empty());
}

#[tokio::test]
async fn answered_elsewhere_the_message_says_so_and_a_late_press_is_told() {
    let (slack, api) = FakeSlack::start().await;
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("s-3")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 1).await;
    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let answered = b.post("/v1/questions/s-3/answer").json(&json!({"answers": [{"selected": ["MySQL"]}]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let updated = slack.nth("chat.update", 1).await;
    assert_eq!(updated["ts"], ts.as_str());
    assert!(updated.to_string().contains("MySQL"), "{updated}");

    // Someone presses a button of the old message before Slack showed the edit.
    let body = press(SHARED, &ts, &button(&posted, "Postgres"), "U0BOB");
    let at = now_s().to_string();
    assert_eq!(send_action(&b, &body, &at, &sign(SECRET, &at, &body)).await.status(), 200);
    let told = slack.nth("chat.postEphemeral", 1).await;
    assert_eq!((told["channel"].as_str(), told["user"].as_str()), (Some(SHARED), Some("U0BOB")), "only the one who pressed");
    assert!(told["text"].as_str().unwrap().contains("not waiting any more"), "{told}");
    assert_eq!(b.record("s-3").await["result"]["answers"][0]["answer"], "MySQL", "the first answer stands");
}

#[tokio::test]
async fn a_restart_posts_nothing_twice_and_still_edits_the_message() {
    let (slack, api) = FakeSlack::start().await;
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("s-4")).send().await.unwrap();
    slack.nth("chat.postMessage", 1).await;
    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let dir = b.stop().await;
    let b = slack_bridge(dir, &api, &[]).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(slack.calls("chat.postMessage").len(), 1, "not posted again after the restart");
    b.post("/v1/questions/s-4/answer").json(&json!({"answers": [{"selected": ["Postgres"]}]})).send().await.unwrap();
    let updated = slack.nth("chat.update", 1).await;
    assert_eq!(updated["ts"], ts.as_str(), "the message posted before the restart is the one edited");
}

#[tokio::test]
async fn slack_being_down_or_limiting_is_tried_again_and_posts_once() {
    let (slack, api) = FakeSlack::start().await;
    slack.failures.lock().unwrap().extend(["429", "internal_error"]);
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("s-5")).send().await.unwrap();
    let third = slack.nth("chat.postMessage", 3).await;
    assert_eq!(third["channel"], SHARED);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(slack.posted.lock().unwrap()[SHARED].len(), 1, "posted once, after two failures");
    // A refusal for good (a wrong channel) is not tried again.
    slack.failures.lock().unwrap().push("channel_not_found");
    b.post("/v1/ask?wait=false").json(&question("s-6")).send().await.unwrap();
    slack.nth("chat.postMessage", 4).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(slack.calls("chat.postMessage").len(), 4, "not tried again");
}

#[tokio::test]
async fn a_set_for_a_person_goes_to_their_channel_and_to_the_shared_one_only_when_it_escalates() {
    let (slack, api) = FakeSlack::start().await;
    let b = bridge_configured(tempfile::tempdir().unwrap(), {
        let slack = app(&api, &[("alice", "D0ALICE")]);
        move |opts| {
            {
                opts.notify.add(slack);
            };
            opts.settings.escalate_after = Some(Duration::from_millis(600));
        }
    })
    .await;
    let mut for_alice = question("s-7");
    for_alice["agent"]["assignee"] = "alice".into();
    let mut for_bob = question("s-8");
    for_bob["agent"]["assignee"] = "bob".into();
    b.post("/v1/ask?wait=false").json(&for_alice).send().await.unwrap();
    b.post("/v1/ask?wait=false").json(&for_bob).send().await.unwrap();
    let first = slack.nth("chat.postMessage", 1).await;
    assert_eq!(first["channel"], "D0ALICE", "alice's at once, in her channel");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(slack.calls("chat.postMessage").len(), 1, "bob's waits for bob (who has no channel) until it escalates");
    let second = slack.nth("chat.postMessage", 2).await;
    assert_eq!(second["channel"], SHARED, "then everyone's");
    assert!(second.to_string().contains("s-8"), "{second}");
}

#[tokio::test]
async fn over_socket_mode_a_press_answers_with_no_public_url_and_a_disconnect_reconnects() {
    let (slack, api) = FakeSlack::start().await;
    let mut app = app(&api, &[]);
    (app.signing_secret, app.app_token) = (String::new(), Some(APP.into()));
    let b = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(app);
    })
    .await;
    let r = send_action(&b, "payload=%7B%7D", &now_s().to_string(), "v0=00").await;
    assert!([404, 405].contains(&r.status().as_u16()), "no signing secret: no /slack/actions at all ({})", r.status());
    crate::support::nth_seen("a Socket Mode connection", 1, || slack.sockets.lock().unwrap().clone()).await;

    b.post("/v1/ask?wait=false").json(&question("s-1")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 1).await;
    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let payload = press_payload(SHARED, &ts, &button(&posted, "SQLite"), "U0ALICE");
    slack.envelope(json!({"envelope_id": "e-1", "type": "interactive", "payload": payload, "accepts_response_payload": false}));
    let (id, took) = crate::support::nth_seen("an ack", 1, || slack.acks.lock().unwrap().clone()).await;
    assert!(id == "e-1" && took < Duration::from_secs(3), "acknowledged within Slack's 3 s: {id} after {took:?}");
    let record = b.until_status("s-1", "answered").await;
    assert_eq!((record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()), (Some("SQLite"), Some("slack:U0ALICE")));
    let updated = slack.nth("chat.update", 1).await;
    assert_eq!(updated["ts"].as_str(), Some(ts.as_str()), "the message says so");

    // Slack refreshes the connection: the bridge opens a new one and answers over it.
    slack.envelope(json!({"type": "disconnect", "reason": "refresh_requested"}));
    crate::support::nth_seen("a second connection", 2, || slack.sockets.lock().unwrap().clone()).await;
    assert_eq!(slack.calls("apps.connections.open").len(), 2, "a new URL for it");
    b.post("/v1/ask?wait=false").json(&question("s-2")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 2).await;
    let ts = slack.posted.lock().unwrap()[SHARED][1].clone();
    let payload = press_payload(SHARED, &ts, &button(&posted, "MySQL"), "U0BOB");
    slack.envelope(json!({"envelope_id": "e-2", "type": "interactive", "payload": payload}));
    let record = b.until_status("s-2", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "MySQL");
    // Envelopes it does not act on are acknowledged too, or Slack sends them again.
    slack.envelope(json!({"envelope_id": "e-3", "type": "events_api", "payload": {"event": {"type": "app_mention"}}}));
    let acked = crate::support::nth_seen("the acks", 3, || slack.acks.lock().unwrap().clone()).await;
    assert_eq!(acked.0, "e-3");
}

#[tokio::test]
async fn bridges_sharing_a_store_keep_one_socket_mode_connection() {
    needs!(Postgres);
    let db = crate::pg::Cluster::start();
    let url = db.database("slack");
    let (slack, api) = FakeSlack::start().await;
    let mut bridges = vec![];
    for _ in 0..2 {
        let mut app = app(&api, &[]);
        (app.signing_secret, app.app_token, app.lease) = (String::new(), Some(APP.into()), Duration::from_secs(3));
        let url = url.clone();
        bridges.push(
            bridge_configured(tempfile::tempdir().unwrap(), move |o| {
                o.store = Some(url);
                o.notify.add(app);
            })
            .await,
        );
    }
    crate::support::nth_seen("a Socket Mode connection", 1, || slack.sockets.lock().unwrap().clone()).await;
    tokio::time::sleep(Duration::from_secs(7)).await;
    let most = slack.live.lock().unwrap().1;
    assert_eq!(most, 1, "never two connections at once");
    bridges[0].post("/v1/ask?wait=false").json(&question("s-20")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 1).await;
    let ts = slack.posted.lock().unwrap()[SHARED][0].clone();
    let payload = press_payload(SHARED, &ts, &button(&posted, "SQLite"), "U0ALICE");
    slack.envelope_all(json!({"envelope_id": "e-20", "type": "interactive", "payload": payload}));
    bridges[1].until_status("s-20", "answered").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(slack.calls("chat.postEphemeral").is_empty(), "acted on once: nobody told it came too late");
    // One stops (the holder, or not): the one left connects within two terms and answers.
    let left = bridges.pop().unwrap();
    bridges.pop().unwrap().stop().await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let live = *slack.live.lock().unwrap();
    assert_eq!(live, (1, 1), "the one left holds it, alone");
    left.post("/v1/ask?wait=false").json(&question("s-21")).send().await.unwrap();
    let posted = slack.nth("chat.postMessage", 2).await;
    let ts = slack.posted.lock().unwrap()[SHARED][1].clone();
    let payload = press_payload(SHARED, &ts, &button(&posted, "MySQL"), "U0BOB");
    slack.envelope_all(json!({"envelope_id": "e-21", "type": "interactive", "payload": payload}));
    left.until_status("s-21", "answered").await;
}

/// docs/notify.md's lines, pasted into a shell: the `export`, then each `askuser serve`
/// (here on a free port and a data directory of its own): the bridge starts with the
/// app, and shows neither the token nor the secret.
#[test]
fn the_docs_commands_start_a_bridge_with_the_slack_app() {
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
    // Each command with the `export` line above it.
    let mut export = "";
    let mut commands = vec![];
    for line in docs.lines() {
        if line.starts_with("export ASKUSER_SLACK_") {
            export = line;
        } else if line.starts_with("askuser serve ") && line.contains("--notify-slack") {
            commands.push((export, line));
        }
    }
    assert_eq!(commands.len(), 3);
    for (export, command) in commands {
        let env: Vec<(&str, &str)> = export.trim_start_matches("export ").split_whitespace().filter_map(|a| a.split_once('=')).collect();
        // Socket Mode connects as it starts: to nothing here, not to Slack.
        let said =
            crate::support::serve_as_pasted(command, &env, &["--slack-api=http://127.0.0.1:9/"], |l| l.starts_with("askuser: open "));
        assert!(said.contains("askuser: open "), "{command}: {said}");
        let how = if export.contains("APP_TOKEN") { "buttons answer over Socket Mode\n" } else { "buttons answer at /slack/actions\n" };
        assert!(said.contains("askuser: question sets go to Slack channel(s) C0123ABCD") && said.contains(how), "{said}");
        assert!(!said.contains("xoxb-your-token") && !said.contains("your-signing-secret") && !said.contains("xapp-your"), "{said}");
    }
}

/// A person's message as the Events API posts it (`event_callback`), written now at `ts`
/// (kept as a thread a reply may go in).
fn written(slack: &FakeSlack, channel: &str, user: &str, text: &str, ts: &str) -> Value {
    slack.written.lock().unwrap().push(ts.to_owned());
    let kind = if channel.starts_with('D') { "im" } else { "channel" };
    json!({"token": "legacy", "team_id": "T0TEAM", "api_app_id": "A0APP", "type": "event_callback", "event_id": format!("Ev{ts}"),
           "event_time": now_s(), "authorizations": [{"team_id": "T0TEAM", "user_id": "U0BOT", "is_bot": true}],
           "event": {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts, "team": "T0TEAM",
                     "channel_type": kind, "event_ts": ts}})
}

/// `body` posted to the events URL, signed with `secret` now.
async fn send_event(b: &TestBridge, body: &Value, secret: &str) -> reqwest::Response {
    let body = body.to_string();
    let at = now_s().to_string();
    b.http
        .post(format!("{}/slack/events", b.url))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", &at)
        .header("x-slack-signature", sign(secret, &at, &body))
        .body(body)
        .send()
        .await
        .unwrap()
}

/// What the app said in the thread of message `ts` in `channel`.
fn replies(slack: &FakeSlack, channel: &str, ts: &str) -> Vec<String> {
    let calls = slack.calls("chat.postMessage").into_iter();
    calls.filter(|c| c["channel"] == channel && c["thread_ts"] == ts).map(|c| c["text"].as_str().unwrap_or_default().to_owned()).collect()
}

/// Typed commands over the Events API's signed URL: `approve ID` and the others answer a set
/// by the short id its message shows, only in a channel it was posted to and only from a
/// person (not a bot, not an edit); the thread is told what was done or why not.
#[tokio::test]
async fn typed_commands_in_a_channel_answer_a_set_by_its_id_only_where_it_was_posted() {
    use askuser_bridge::notify::short_id;
    let (slack, api) = FakeSlack::start().await;
    let b = slack_bridge(tempfile::tempdir().unwrap(), &api, &[("alice", "D0ALICE")]).await;
    // Slack checks the URL first: its challenge echoed, only when signed.
    let check = json!({"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
    let r = send_event(&b, &check, SECRET).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), check["challenge"].as_str().unwrap());
    assert_eq!(send_event(&b, &check, "another app's secret").await.status(), 401);

    b.post("/v1/ask?wait=false").json(&question("s-30")).send().await.unwrap();
    slack.nth("chat.postMessage", 1).await;
    let id = short_id("s-30");
    // A bot's message, an edit, a channel askuser does not post to: nothing answered or said.
    let mut bot = written(&slack, SHARED, "U0CI", &format!("answer {id} 2"), "1700000100.000001");
    bot["event"]["bot_id"] = "B0CI".into();
    let mut edit = written(&slack, SHARED, "U0ALICE", &format!("answer {id} 2"), "1700000100.000002");
    edit["event"]["subtype"] = "message_changed".into();
    let other = written(&slack, "C0OTHER", "U0ALICE", &format!("answer {id} 2"), "1700000100.000003");
    let talk = written(&slack, SHARED, "U0ALICE", "deny it, we talked about this", "1700000100.000004");
    for body in [&bot, &edit, &other, &talk] {
        assert_eq!(send_event(&b, body, SECRET).await.status(), 200, "acknowledged all the same");
    }
    // Alice's own channel: the set was not posted there.
    let asked = written(&slack, "D0ALICE", "U0ALICE", &format!("answer {id} 2"), "1700000100.000005");
    send_event(&b, &asked, SECRET).await;
    let told = crate::support::nth_seen("the reply in her channel", 1, || replies(&slack, "D0ALICE", "1700000100.000005")).await;
    assert!(told.starts_with(&format!("No question set with id {id} waits in this chat")), "{told}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.record("s-30").await["status"], "pending");
    assert_eq!(slack.calls("chat.postMessage").len(), 2, "the question and that reply: nothing else said");
    // Unsigned: refused, nothing done.
    let forged = written(&slack, SHARED, "U0MALLORY", &format!("answer {id} 1"), "1700000100.000006");
    assert_eq!(send_event(&b, &forged, "another app's secret").await.status(), 401);

    let asked = written(&slack, SHARED, "U0ALICE", &format!("answer {id} sqlite"), "1700000100.000007");
    send_event(&b, &asked, SECRET).await;
    let record = b.until_status("s-30", "answered").await;
    assert_eq!((record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()), (Some("SQLite"), Some("slack:U0ALICE")));
    let said = crate::support::nth_seen("the reply", 1, || replies(&slack, SHARED, "1700000100.000007")).await;
    assert_eq!(said, format!("Answered: {id}."));
    // After the app's mention, words that are no command are told how commands go.
    let mentioned = written(&slack, SHARED, "U0BOB", "<@U0BOT> deny it", "1700000100.000011");
    send_event(&b, &mentioned, SECRET).await;
    let said = crate::support::nth_seen("how commands go", 1, || replies(&slack, SHARED, "1700000100.000011")).await;
    assert!(said.starts_with("deny needs the question's id"), "{said}");
    let late = written(&slack, SHARED, "U0BOB", &format!("<@U0BOT> deny {id}"), "1700000100.000008");
    send_event(&b, &late, SECRET).await;
    let said = crate::support::nth_seen("the late reply", 1, || replies(&slack, SHARED, "1700000100.000008")).await;
    assert_eq!(said, "This question set is not waiting any more.");

    // An approval too long to show whole: `approve` is refused, as its Allow is.
    let bash = |command: &str, call: &str| json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": call});
    let r: Value = b
        .post("/v1/approve?wait=false")
        .json(&bash(&format!("echo {} | sh", "a".repeat(3100)), "t-1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let long = r["id"].as_str().unwrap().to_owned();
    crate::support::nth_seen("the approval", 2, || {
        slack.calls("chat.postMessage").into_iter().filter(|c| c["blocks"].is_array()).collect()
    })
    .await;
    let asked = written(&slack, SHARED, "U0ALICE", &format!("approve {}", short_id(&long)), "1700000100.000009");
    send_event(&b, &asked, SECRET).await;
    let said = crate::support::nth_seen("the refusal", 1, || replies(&slack, SHARED, "1700000100.000009")).await;
    assert!(said.starts_with("Too long to show here whole"), "{said}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.record(&long).await["status"], "pending");
    let r: Value = b.post("/v1/approve?wait=false").json(&bash("rm -rf build", "t-2")).send().await.unwrap().json().await.unwrap();
    let short = r["id"].as_str().unwrap().to_owned();
    crate::support::nth_seen("the second approval", 3, || {
        slack.calls("chat.postMessage").into_iter().filter(|c| c["blocks"].is_array()).collect()
    })
    .await;
    let asked = written(&slack, SHARED, "U0ALICE", &format!("approve {}", short_id(&short)), "1700000100.000010");
    send_event(&b, &asked, SECRET).await;
    let record = b.until_status(&short, "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Allow", "{record:#}");
    assert_eq!(
        crate::support::nth_seen("allowed", 1, || replies(&slack, SHARED, "1700000100.000010")).await,
        format!("Allowed: {}.", short_id(&short))
    );
}

/// Over Socket Mode a command comes in an `events_api` envelope, acknowledged at once.
#[tokio::test]
async fn over_socket_mode_a_typed_command_answers_and_its_envelope_is_acknowledged() {
    use askuser_bridge::notify::short_id;
    let (slack, api) = FakeSlack::start().await;
    let mut app = app(&api, &[]);
    (app.signing_secret, app.app_token) = (String::new(), Some(APP.into()));
    let b = bridge_configured(tempfile::tempdir().unwrap(), move |opts| {
        opts.notify.add(app);
    })
    .await;
    let r = b.http.post(format!("{}/slack/events", b.url)).body("{}").send().await.unwrap();
    assert!([404, 405].contains(&r.status().as_u16()), "no signing secret: no /slack/events ({})", r.status());
    crate::support::nth_seen("a Socket Mode connection", 1, || slack.sockets.lock().unwrap().clone()).await;
    b.post("/v1/ask?wait=false").json(&question("s-31")).send().await.unwrap();
    slack.nth("chat.postMessage", 1).await;
    let payload = written(&slack, SHARED, "U0ALICE", &format!("answer {} 3", short_id("s-31")), "1700000200.000001");
    slack.envelope(json!({"envelope_id": "e-31", "type": "events_api", "payload": payload, "accepts_response_payload": false, "retry_attempt": 0, "retry_reason": ""}));
    let (acked, took) = crate::support::nth_seen("an ack", 1, || slack.acks.lock().unwrap().clone()).await;
    assert!(acked == "e-31" && took < Duration::from_secs(3), "{acked} after {took:?}");
    let record = b.until_status("s-31", "answered").await;
    assert_eq!((record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()), (Some("MySQL"), Some("slack:U0ALICE")));
    let said = crate::support::nth_seen("the reply", 1, || replies(&slack, SHARED, "1700000200.000001")).await;
    assert_eq!(said, format!("Answered: {}.", short_id("s-31")));
}
