//! WhatsApp against a local stand-in for the Graph API that checks what the Cloud API
//! checks: the bearer token, the payload's shape and its limits (a body of 1,024
//! characters, 1 to 3 reply buttons of 20, a list of at most 10 rows of 24 with
//! descriptions of 72, a text of 4,096), known templates, and the 24-hour rule: a
//! free-form message to someone who has not written within 24 hours is refused with
//! error 131047, as WhatsApp does. A person is played by webhook calls signed as Meta
//! signs them (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body under the app secret).

use crate::support::{bridge_configured, TestBridge};
use askuser_bridge::notify::{WhatsApp, WhatsAppSettings};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ACCESS_TOKEN: &str = "EAAtest-access-token-0123456789";
const APP_SECRET: &str = "app-secret-0123456789abcdef";
const VERIFY_TOKEN: &str = "verify-me-0123456789";
const NUMBER_ID: &str = "106540352242922";
const TEMPLATE: &str = "askuser_question";
/// Alice's phone: the shared place.
const ALICE: &str = "15551234567";
/// Bob's: his own sets only.
const BOB: &str = "15557654321";
/// A number askuser does not send to.
const STRANGER: &str = "15550000000";

/// The Graph API's `/{phone-number-id}/messages`, as far as askuser uses it.
#[derive(Clone, Default)]
struct FakeGraph {
    /// Every accepted message: (to, payload, id).
    sent: Arc<Mutex<Vec<(String, Value, String)>>>,
    /// Every refusal: (to, error code).
    refused: Arc<Mutex<Vec<(String, u64)>>>,
    /// Who wrote within the last 24 hours (the platform knows when each person last wrote).
    window: Arc<Mutex<BTreeSet<String>>>,
}

fn graph_error(status: StatusCode, code: u64, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "OAuthException", "code": code,
        "error_data": {"messaging_product": "whatsapp", "details": message}, "fbtrace_id": "AbCdEf"}});
    (status, Json(body)).into_response()
}

/// What the Cloud API refuses in `payload`, if anything: (code, why).
fn invalid(payload: &Value) -> Option<(u64, String)> {
    let chars = |v: &Value| v.as_str().map(|s| s.chars().count());
    let bad = |why: String| Some((131009, why));
    if payload["messaging_product"] != "whatsapp" || payload["recipient_type"] != "individual" {
        return bad("messaging_product must be whatsapp".into());
    }
    match payload["type"].as_str() {
        Some("text") => match chars(&payload["text"]["body"]) {
            Some(n) if (1..=4096).contains(&n) => None,
            n => bad(format!("text.body: {n:?} characters")),
        },
        Some("template") => match (payload["template"]["name"].as_str(), payload["template"]["language"]["code"].as_str()) {
            (Some(TEMPLATE), Some("en_US")) => None,
            _ => Some((132001, "Template name does not exist in the translation".into())),
        },
        Some("interactive") => {
            let i = &payload["interactive"];
            if !chars(&i["body"]["text"]).is_some_and(|n| (1..=1024).contains(&n)) {
                return bad(format!("interactive.body.text: {:?} characters", chars(&i["body"]["text"])));
            }
            match i["type"].as_str() {
                Some("button") => {
                    let buttons = i["action"]["buttons"].as_array().cloned().unwrap_or_default();
                    let ids: BTreeSet<&str> = buttons.iter().filter_map(|b| b["reply"]["id"].as_str()).collect();
                    if !(1..=3).contains(&buttons.len()) || ids.len() != buttons.len() {
                        return bad(format!("{} buttons, {} distinct ids", buttons.len(), ids.len()));
                    }
                    buttons
                        .iter()
                        .find(|b| {
                            b["type"] != "reply"
                                || !chars(&b["reply"]["title"]).is_some_and(|n| (1..=20).contains(&n))
                                || b["reply"]["id"].as_str().is_none_or(|id| id.len() > 256)
                        })
                        .map(|b| (131009, format!("button {b}")))
                }
                Some("list") => {
                    if !chars(&i["action"]["button"]).is_some_and(|n| (1..=20).contains(&n)) {
                        return bad("action.button".into());
                    }
                    let rows: Vec<Value> = i["action"]["sections"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|s| s["rows"].as_array().cloned().unwrap_or_default())
                        .collect();
                    if !(1..=10).contains(&rows.len()) {
                        return bad(format!("{} rows", rows.len()));
                    }
                    rows.iter()
                        .find(|r| {
                            !chars(&r["title"]).is_some_and(|n| (1..=24).contains(&n))
                                || r.get("description").is_some_and(|d| chars(d).is_none_or(|n| n > 72))
                                || r["id"].as_str().is_none_or(|id| id.len() > 200)
                        })
                        .map(|r| (131009, format!("row {r}")))
                }
                other => bad(format!("interactive.type {other:?}")),
            }
        }
        other => bad(format!("type {other:?}")),
    }
}

async fn messages(
    State(fake): State<FakeGraph>,
    Path((_version, number)): Path<(String, String)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {ACCESS_TOKEN}")) {
        return graph_error(StatusCode::UNAUTHORIZED, 190, "Invalid OAuth access token - Cannot parse access token");
    }
    if number != NUMBER_ID {
        return graph_error(StatusCode::BAD_REQUEST, 100, "Unsupported post request. Object with ID does not exist");
    }
    let Ok(payload) = serde_json::from_str::<Value>(&body) else {
        return graph_error(StatusCode::BAD_REQUEST, 100, "Invalid parameter");
    };
    let to = payload["to"].as_str().unwrap_or_default().to_owned();
    if let Some((code, why)) = invalid(&payload) {
        fake.refused.lock().unwrap().push((to, code));
        return graph_error(StatusCode::BAD_REQUEST, code, &format!("(#{code}) Parameter value is not valid: {why}"));
    }
    if payload["type"] != "template" && !fake.window.lock().unwrap().contains(&to) {
        fake.refused.lock().unwrap().push((to, 131047));
        return graph_error(
            StatusCode::BAD_REQUEST,
            131047,
            "(#131047) Re-engagement message: more than 24 hours have passed since the customer last replied to this number.",
        );
    }
    let mut sent = fake.sent.lock().unwrap();
    let id = format!("wamid.HBgL{}", sent.len() + 1);
    sent.push((to.clone(), payload, id.clone()));
    Json(json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}], "messages": [{"id": id}]})).into_response()
}

impl FakeGraph {
    async fn start() -> (FakeGraph, String) {
        let fake = FakeGraph::default();
        let app = axum::Router::new().route("/{version}/{number}/messages", axum::routing::post(messages)).with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v23.0", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (fake, url)
    }

    fn sent_to(&self, to: &str) -> Vec<(Value, String)> {
        self.sent.lock().unwrap().iter().filter(|(t, _, _)| t == to).map(|(_, p, id)| (p.clone(), id.clone())).collect()
    }

    /// Waits for the `n`th message to `to` (1-based).
    async fn nth(&self, to: &str, n: usize) -> (Value, String) {
        crate::support::nth_seen(&format!("message to {to}"), n, || self.sent_to(to)).await
    }

    /// The texts of the text messages to `to`.
    fn texts(&self, to: &str) -> Vec<String> {
        self.sent_to(to)
            .into_iter()
            .filter(|(p, _)| p["type"] == "text")
            .map(|(p, _)| p["text"]["body"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn nth_text(&self, to: &str, n: usize) -> String {
        crate::support::nth_seen(&format!("text to {to}"), n, || self.texts(to)).await
    }
}

fn sign(body: &[u8], secret: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag: String = ring::hmac::sign(&key, body).as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={tag}")
}

/// Posts a webhook call carrying `message` from `from`, as Meta sends it: signed with
/// `secret` (the app secret: the person wrote now, so the platform opens their window).
async fn write(b: &TestBridge, fake: &FakeGraph, from: &str, message: Value, secret: &str) -> reqwest::Response {
    if secret == APP_SECRET {
        // Meta's own call: the person wrote, which the platform knows before it calls.
        fake.window.lock().unwrap().insert(from.to_owned());
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    deliver(b, from, message, secret, now).await
}

/// Posts a webhook call carrying `message` that `from` sent at `sent` (Unix seconds).
async fn deliver(b: &TestBridge, from: &str, message: Value, secret: &str, sent: u64) -> reqwest::Response {
    let mut message = message;
    message["from"] = from.into();
    message["id"] = format!("wamid.in{}", rand_suffix()).into();
    message["timestamp"] = sent.to_string().into();
    let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages",
        "value": {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550783881", "phone_number_id": NUMBER_ID},
                  "contacts": [{"profile": {"name": "Alice"}, "wa_id": from}], "messages": [message]}}]}]})
    .to_string();
    b.http
        .post(format!("{}/whatsapp/webhook", b.url))
        .header("content-type", "application/json")
        .header("x-hub-signature-256", sign(body.as_bytes(), secret))
        .body(body)
        .send()
        .await
        .unwrap()
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

fn text(body: &str) -> Value {
    json!({"type": "text", "text": {"body": body}})
}

/// A reply button pressed in message `context`.
fn press(context: &str, id: &str, title: &str) -> Value {
    json!({"type": "interactive", "context": {"from": "15550783881", "id": context},
           "interactive": {"type": "button_reply", "button_reply": {"id": id, "title": title}}})
}

async fn whatsapp_bridge(api: &str, dir: tempfile::TempDir) -> TestBridge {
    let api = api.to_owned();
    bridge_configured(dir, move |opts| {
        let places = [ALICE.to_owned(), format!("bob=+{BOB}")];
        let settings = WhatsAppSettings {
            places: &places,
            phone_number_id: Some(NUMBER_ID),
            token: Some(ACCESS_TOKEN),
            app_secret: Some(APP_SECRET),
            verify_token: Some(VERIFY_TOKEN),
            template: Some(TEMPLATE),
            api: &api,
        };
        opts.notify.add(WhatsApp::configure(&settings, Default::default()).unwrap());
    })
    .await
}

fn buttons(payload: &Value) -> Vec<(String, String)> {
    payload["interactive"]["action"]["buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["reply"]["id"].as_str().unwrap().to_owned(), b["reply"]["title"].as_str().unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn outside_the_window_the_template_goes_first_the_question_once_they_write_and_a_button_answers_it() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    let ask = json!({"id": "w-1", "agent": {"name": "ci"}, "questions": [{"question": "Which database?", "header": "Database",
                     "options": [{"label": "PostgreSQL with the pgvector extension"}, {"label": "SQLite"}]}]});
    b.post("/v1/ask?wait=false").json(&ask).send().await.unwrap();
    let (first, _) = fake.nth(ALICE, 1).await;
    assert_eq!((first["type"].as_str(), first["template"]["name"].as_str()), (Some("template"), Some(TEMPLATE)), "{first:#}");
    assert!(fake.refused.lock().unwrap().is_empty(), "the bridge knew the window was closed: {:?}", fake.refused.lock().unwrap());

    // She taps the template's button (or writes anything): the question follows, and her
    // message answers nothing.
    let r = write(&b, &fake, ALICE, json!({"type": "button", "button": {"payload": "Show me", "text": "Show me"}}), APP_SECRET).await;
    assert_eq!(r.status(), 200);
    let (question, wamid) = fake.nth(ALICE, 2).await;
    assert_eq!(question["interactive"]["type"], "button", "{question:#}");
    let body = question["interactive"]["body"]["text"].as_str().unwrap();
    let id = askuser_bridge::notify::short_id("w-1");
    assert!(
        body.starts_with(&format!(
            "ci asks · Database · id {id}\n\nWhich database?\n\n1. PostgreSQL with the pgvector extension\n2. SQLite"
        )),
        "{body}"
    );
    let titles: Vec<String> = buttons(&question).into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["PostgreSQL with the…", "SQLite"]);
    assert_eq!(b.record("w-1").await["status"], "pending");

    let sqlite = buttons(&question)[1].0.clone();
    write(&b, &fake, ALICE, press(&wamid, &sqlite, "SQLite"), APP_SECRET).await;
    let record = b.until_status("w-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite");
    assert_eq!(record["answeredBy"], format!("whatsapp:{ALICE} Alice"));
    let closed = fake.nth_text(ALICE, 1).await;
    assert!(closed.ends_with("→ SQLite\n\nAnswered here."), "{closed}");

    // A late press is told.
    let first_id = buttons(&question)[0].0.clone();
    write(&b, &fake, ALICE, press(&wamid, &first_id, "PostgreSQL"), APP_SECRET).await;
    assert_eq!(fake.nth_text(ALICE, 2).await, "This question set is not waiting any more.");
    assert_eq!(b.record("w-1").await["result"]["answers"][0]["answer"], "SQLite", "the first answer stands");
}

#[tokio::test]
async fn the_webhook_answers_the_handshake_and_refuses_what_meta_did_not_sign() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    let handshake = |token: &str| {
        let url = format!("{}/whatsapp/webhook?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444", b.url);
        b.http.get(url).send()
    };
    let ok = handshake(VERIFY_TOKEN).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.text().await.unwrap(), "1158201444");
    assert_eq!(handshake("guess").await.unwrap().status(), 403);

    b.post("/v1/ask?wait=false")
        .json(&json!({"id": "w-2", "questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]}))
        .send()
        .await
        .unwrap();
    fake.nth(ALICE, 1).await; // the template
    let r = write(&b, &fake, ALICE, text("hi"), "not-the-app-secret").await;
    assert_eq!(r.status(), 401, "a bad signature is refused");
    let unsigned = b.http.post(format!("{}/whatsapp/webhook", b.url)).body("{}").send().await.unwrap();
    assert_eq!(unsigned.status(), 401);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.sent_to(ALICE).len(), 1, "nothing followed a forged message");

    // A number askuser does not send to answers nothing (and is not written back to).
    write(&b, &fake, STRANGER, text("hi"), APP_SECRET).await;
    write(&b, &fake, ALICE, text("hi"), APP_SECRET).await;
    let (question, _) = fake.nth(ALICE, 2).await;
    assert_eq!(question["interactive"]["type"], "button");
    write(&b, &fake, STRANGER, text(&format!("answer {} 1", askuser_bridge::notify::short_id("w-2"))), APP_SECRET).await;
    // Alice's free words answer the one set waiting for her.
    write(&b, &fake, ALICE, text("no"), APP_SECRET).await;
    let record = b.until_status("w-2", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "No");
    assert!(fake.sent_to(STRANGER).is_empty());
}

#[tokio::test]
async fn a_free_form_message_whatsapp_refuses_as_outside_the_window_is_held_until_they_write() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    // Bob wrote (the bridge knows), but the platform has his window closed: 131047.
    write(&b, &fake, BOB, text("hello"), APP_SECRET).await;
    let (nothing, _) = fake.nth(BOB, 1).await;
    assert!(nothing["text"]["body"].as_str().unwrap().starts_with("No question waits here now."), "{nothing:#}");
    fake.window.lock().unwrap().clear();
    let labels: Vec<Value> =
        (1..=5).map(|i| json!({"label": format!("Region number {i} in the far north-east"), "description": "d".repeat(100)})).collect();
    let ask = json!({"id": "w-3", "agent": {"name": "ci", "assignee": "bob"}, "questions": [{"question": "Where?", "options": labels}]});
    b.post("/v1/ask?wait=false").json(&ask).send().await.unwrap();
    let (template, _) = fake.nth(BOB, 2).await;
    assert_eq!(template["type"], "template");
    assert_eq!(*fake.refused.lock().unwrap(), [(BOB.to_owned(), 131047)], "the free-form message was refused first");
    assert!(fake.sent_to(ALICE).is_empty(), "Bob's own set goes to his phone only");

    write(&b, &fake, BOB, text("ok"), APP_SECRET).await;
    let (list, _) = fake.nth(BOB, 3).await;
    assert_eq!(list["interactive"]["type"], "list", "{list:#}");
    let rows = list["interactive"]["action"]["sections"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["title"], "1. Region number 1 in t…");
    assert_eq!(rows[0]["description"], "Region number 1 in the far north-east", "the label cut in the title is whole below it");
    // Typed: answer by the short id.
    let id = askuser_bridge::notify::short_id("w-3");
    write(&b, &fake, BOB, text(&format!("answer {id} 4")), APP_SECRET).await;
    let record = b.until_status("w-3", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Region number 4 in the far north-east");
}

#[tokio::test]
async fn typed_commands_approve_and_deny_by_the_short_id_and_say_what_they_did() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    write(&b, &fake, ALICE, text("hi"), APP_SECRET).await;
    assert_eq!(fake.nth_text(ALICE, 1).await, format!("No question waits here now. {}", askuser_bridge::notify::COMMAND_USAGE));
    let bash = |command: &str, call: &str| json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": call, "cwd": "/work/app", "agent": {"name": "Claude Code"}});
    let r: Value = b.post("/v1/approve?wait=false").json(&bash("rm -rf build", "toolu_1")).send().await.unwrap().json().await.unwrap();
    let first = r["id"].as_str().expect("the approval's id").to_owned();
    let (message, _) = fake.nth(ALICE, 2).await;
    let body = message["interactive"]["body"]["text"].as_str().unwrap();
    assert!(body.contains("\n```\nrm -rf build\n```"), "{body}");
    let titles: Vec<String> = buttons(&message).into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["Allow", "Deny"]);
    let short = askuser_bridge::notify::short_id(&first);
    assert!(body.starts_with(&format!("Claude Code asks · Bash · id {short}")), "{body}");

    write(&b, &fake, ALICE, text("approve 000000"), APP_SECRET).await;
    assert!(fake.nth_text(ALICE, 2).await.starts_with("No question set with id 000000 waits in this chat"));
    write(&b, &fake, ALICE, text(&format!("approve {short}")), APP_SECRET).await;
    let record = b.until_status(&first, "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Allow", "{record:#}");
    // The reply, and the set's close ("→ Allowed."), in either order.
    let allowed = format!("Allowed: {short}.");
    crate::support::nth_seen("the command's reply", 1, || fake.texts(ALICE).into_iter().filter(|t| *t == allowed).collect::<Vec<_>>())
        .await;
    write(&b, &fake, ALICE, text(&format!("deny {short} too late")), APP_SECRET).await;
    let late = crate::support::nth_seen("the late command's reply", 1, || {
        fake.texts(ALICE).into_iter().filter(|t| t.contains("not waiting")).collect::<Vec<_>>()
    })
    .await;
    assert_eq!(late, "This question set is not waiting any more.");

    // A command too long for the body: no Allow, and `approve` is refused the same way.
    let long = format!("echo {} | sh", "a".repeat(1100));
    let r: Value = b.post("/v1/approve?wait=false").json(&bash(&long, "toolu_2")).send().await.unwrap().json().await.unwrap();
    let second = r["id"].as_str().unwrap().to_owned();
    let short = askuser_bridge::notify::short_id(&second);
    let message = crate::support::nth_seen("the long approval", 1, || {
        fake.sent_to(ALICE)
            .into_iter()
            .filter(|(p, _)| p["interactive"]["body"]["text"].as_str().is_some_and(|t| t.contains(&short)))
            .collect::<Vec<_>>()
    })
    .await
    .0;
    let titles: Vec<String> = buttons(&message).into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["Deny"]);
    assert!(message["interactive"]["body"]["text"].as_str().unwrap().contains("Too long to show here whole"));
    write(&b, &fake, ALICE, text(&format!("approve {short}")), APP_SECRET).await;
    let refused = crate::support::nth_seen("approve refused", 1, || {
        fake.texts(ALICE).into_iter().filter(|t| t.starts_with("Too long")).collect::<Vec<_>>()
    })
    .await;
    assert!(refused.contains("open askuser"), "{refused}");
    write(&b, &fake, ALICE, text(&format!("deny {short} use make clean")), APP_SECRET).await;
    let record = b.until_status(&second, "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "use make clean", "{record:#}");
}

#[tokio::test]
async fn when_people_last_wrote_outlives_a_restart_and_a_late_call_opens_no_window() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    // Bob's message of two days ago, delivered late (or replayed): his window stays shut.
    let two_days_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 48 * 3600;
    assert_eq!(deliver(&b, BOB, text("old"), APP_SECRET, two_days_ago).await.status(), 200);
    let his = json!({"id": "w-5", "agent": {"name": "ci", "assignee": "bob"}, "questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
    b.post("/v1/ask?wait=false").json(&his).send().await.unwrap();
    let (first, _) = fake.nth(BOB, 1).await;
    assert_eq!(first["type"], "template", "{first:#}");
    assert!(fake.refused.lock().unwrap().is_empty(), "nothing free-form was tried: {:?}", fake.refused.lock().unwrap());
    // Another of his old messages, now that his set is held: it brings nothing (it would
    // be refused as outside the window).
    assert_eq!(deliver(&b, BOB, text("older"), APP_SECRET, two_days_ago).await.status(), 200);
    for _ in 0..20 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(fake.refused.lock().unwrap().is_empty(), "nothing free-form was tried: {:?}", fake.refused.lock().unwrap());
        assert_eq!(fake.sent_to(BOB).len(), 1, "only the template");
    }

    // Alice writes; the bridge restarts; her next set goes straight to her.
    write(&b, &fake, ALICE, text("hi"), APP_SECRET).await;
    fake.nth(ALICE, 1).await; // "No question waits here now."
    let dir = b.stop().await;
    let b = whatsapp_bridge(&api, dir).await;
    b.post("/v1/ask?wait=false")
        .json(&json!({"id": "w-6", "questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]}))
        .send()
        .await
        .unwrap();
    let (second, _) = fake.nth(ALICE, 2).await;
    assert_eq!(second["type"], "interactive", "the store knew she wrote: {second:#}");
    assert!(!fake.refused.lock().unwrap().iter().any(|(to, _)| to == ALICE), "{:?}", fake.refused.lock().unwrap());
    assert_eq!(fake.sent_to(BOB).len(), 1, "Bob's held set is not sent again after the restart");
}

/// WhatsApp may accept a message and report later, in a status call, that it failed as
/// outside the window (131047): the set is then held, the template sent, and the set sent
/// again once the person writes (a command in that message answering it too).
#[tokio::test]
async fn a_message_reported_failed_as_outside_the_window_is_held_and_sent_when_they_write() {
    let (fake, api) = FakeGraph::start().await;
    let b = whatsapp_bridge(&api, tempfile::tempdir().unwrap()).await;
    write(&b, &fake, ALICE, text("hi"), APP_SECRET).await;
    fake.nth(ALICE, 1).await; // "No question waits here now."
    b.post("/v1/ask?wait=false")
        .json(&json!({"id": "w-8", "questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]}))
        .send()
        .await
        .unwrap();
    let (question, wamid) = fake.nth(ALICE, 2).await;
    assert_eq!(question["type"], "interactive");
    fake.window.lock().unwrap().clear();
    let status = json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages",
        "value": {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550783881", "phone_number_id": NUMBER_ID},
                  "statuses": [{"id": wamid, "status": "failed", "timestamp": "1700000000", "recipient_id": ALICE,
                                "errors": [{"code": 131047, "title": "Re-engagement message"}]}]}}]}]})
    .to_string();
    let r = b
        .http
        .post(format!("{}/whatsapp/webhook", b.url))
        .header("x-hub-signature-256", sign(status.as_bytes(), APP_SECRET))
        .body(status)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (template, _) = fake.nth(ALICE, 3).await;
    assert_eq!(template["type"], "template", "{template:#}");
    // Her next message brings it back; one that names what it answers (a command) also
    // answers it, rather than only opening the window.
    let id = askuser_bridge::notify::short_id("w-8");
    write(&b, &fake, ALICE, text(&format!("answer {id} 1")), APP_SECRET).await;
    let (again, _) = fake.nth(ALICE, 4).await;
    assert_eq!(again["interactive"]["body"], question["interactive"]["body"], "the same set, sent again");
    assert_eq!(b.until_status("w-8", "answered").await["result"]["answers"][0]["answer"], "Yes");
}

/// docs/notify.md's lines, pasted into a shell: the `export`, then each `askuser serve`
/// (here on a free port and a data directory of its own): the bridge starts with
/// WhatsApp, says where its webhook is, and shows none of the secrets.
#[test]
fn the_docs_commands_start_a_bridge_with_whatsapp() {
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
    let export = docs.lines().find(|l| l.starts_with("export ASKUSER_WHATSAPP_")).expect("the export line");
    let env: Vec<(&str, &str)> = export.trim_start_matches("export ").split_whitespace().filter_map(|a| a.split_once('=')).collect();
    assert_eq!(env.len(), 4, "{env:?}");
    let commands: Vec<&str> = docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-whatsapp")).collect();
    assert_eq!(commands.len(), 2);
    for command in commands {
        let said = crate::support::serve_as_pasted(command, &env, &[], |l| l.starts_with("askuser: open "));
        assert!(said.contains("askuser: open "), "{command}: {said}");
        assert!(
            said.contains("WhatsApp from number id 106540352242922 (template askuser_question); its webhook is /whatsapp/webhook"),
            "{said}"
        );
        for (_, secret) in &env[1..] {
            assert!(!said.contains(secret), "{said}");
        }
    }
}
