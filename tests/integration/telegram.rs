//! The Telegram bot against a local stand-in for the Bot API that checks what Telegram
//! checks (the token in the path, JSON bodies, a message's limits, known chats and
//! messages, `callback_data` of at most 64 bytes) and plays `getUpdates` as Telegram does:
//! long polls that wait for an update, an `offset` that confirms every update before it,
//! and a second poller ending the first with 409. A person is played by the updates it
//! queues: a button pressed (`callback_query`) or a reply to the bot's message.

use crate::support::{bridge_configured, TestBridge};
use askuser_bridge::notify::TelegramBot;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "123456789:AAtest_token-0123456789abcdef";
const BOT: i64 = 123456789;
/// The shared chat: a group.
const SHARED: i64 = -1001234567890;
/// Alice's private chat with the bot (a private chat's id is its person's).
const ALICE: i64 = 111;
/// A chat the bot is in that askuser does not send to.
const STRANGERS: i64 = -1009999;

/// One Bot API call: who made it (the API prefix it used), its method and body.
#[derive(Debug, Clone)]
struct Call {
    via: String,
    method: String,
    body: Value,
}

/// What the next sends get instead of `ok`.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// 429 with `retry_after`.
    TooMany(u64),
    /// 500.
    Internal,
    /// 403: the bot was blocked by the user.
    Blocked,
}

#[derive(Default)]
struct Polls {
    /// Updates not confirmed yet, by id.
    queue: Vec<Value>,
    next_update: i64,
    /// Which getUpdates is the newest (a newer one ends the one waiting with 409).
    generation: u64,
    /// getUpdates calls that overlapped another.
    conflicts: usize,
    /// How often each update was handed out.
    handed: BTreeMap<i64, usize>,
}

/// The Bot API, as far as the bot uses it.
#[derive(Clone)]
struct FakeTelegram {
    token: String,
    calls: Arc<Mutex<Vec<Call>>>,
    failures: Arc<Mutex<Vec<Failure>>>,
    /// (chat, message_id) → the message's text and keyboard as it is now.
    messages: Arc<Mutex<BTreeMap<(i64, i64), Value>>>,
    next_message: Arc<AtomicUsize>,
    polls: Arc<Mutex<Polls>>,
    wake: Arc<tokio::sync::Notify>,
}

impl FakeTelegram {
    async fn start() -> (FakeTelegram, String) {
        FakeTelegram::with_token(TOKEN).await
    }

    async fn with_token(token: &str) -> (FakeTelegram, String) {
        let fake = FakeTelegram {
            token: token.to_owned(),
            calls: Arc::default(),
            failures: Arc::default(),
            messages: Arc::default(),
            next_message: Arc::new(AtomicUsize::new(100)),
            polls: Arc::new(Mutex::new(Polls { next_update: 500, ..Polls::default() })),
            wake: Arc::default(),
        };
        let app = axum::Router::new().route("/{via}/{bot}/{method}", axum::routing::post(call)).with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (fake, url)
    }

    fn calls(&self, method: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|c| c.method == method).map(|c| c.body.clone()).collect()
    }

    /// Waits up to 15 s for the `n`th call of `method` (1-based).
    async fn nth(&self, method: &str, n: usize) -> Value {
        crate::support::nth_seen(&format!("{method} call"), n, || self.calls(method)).await
    }

    /// The `n`th question set sent (1-based; not counting replies to people), and its
    /// message_id.
    async fn sent(&self, n: usize) -> (Value, i64) {
        let mut found = None;
        for _ in 0..300 {
            let sets: Vec<Value> = self.calls("sendMessage").into_iter().filter(|m| m.get("reply_parameters").is_none()).collect();
            if let Some(body) = sets.get(n - 1) {
                found = Some(body.clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let body = found.unwrap_or_else(|| panic!("question set {n} was never sent: {:#?}", self.calls("sendMessage")));
        let chat = body["chat_id"].as_i64().unwrap();
        let text = body["text"].clone();
        let messages = self.messages.lock().unwrap();
        let id = messages.iter().find(|((c, _), m)| *c == chat && m["text"] == text).map(|((_, id), _)| *id).expect("it was kept");
        (body, id)
    }

    /// Queues an update (its `update_id` given here) for the next `getUpdates`.
    fn queue(&self, kind: &str, mut content: Value) -> i64 {
        let mut polls = self.polls.lock().unwrap();
        polls.next_update += 1;
        let id = polls.next_update;
        if content.get("date").is_none() && kind == "message" {
            content["date"] = 1_700_000_000.into();
        }
        polls.queue.push(json!({"update_id": id, kind: content}));
        drop(polls);
        self.wake.notify_waiters();
        id
    }

    /// `user` pressing the button with `data` in message `message_id` of `chat`.
    fn press(&self, chat: i64, message_id: i64, data: &str, user: Value) -> String {
        let id = format!("cb-{}", self.polls.lock().unwrap().next_update + 1);
        let chat_json = if chat > 0 {
            json!({"id": chat, "type": "private", "first_name": "Alice"})
        } else {
            json!({"id": chat, "type": "supergroup", "title": "Ops"})
        };
        self.queue(
            "callback_query",
            json!({"id": id, "from": user, "chat_instance": "-42", "data": data,
                   "message": {"message_id": message_id, "date": 1_700_000_000, "chat": chat_json, "text": "…",
                               "from": {"id": BOT, "is_bot": true, "first_name": "askuser", "username": "askuser_test_bot"}}}),
        );
        id
    }

    /// `user` replying `text` in `chat` to message `to` (the bot's, unless `to_from` says whose).
    fn reply(&self, chat: i64, to: i64, text: &str, user: Value) -> i64 {
        let chat_json = if chat > 0 {
            json!({"id": chat, "type": "private", "first_name": "Alice"})
        } else {
            json!({"id": chat, "type": "supergroup", "title": "Ops"})
        };
        let message_id = self.next_message.fetch_add(1, Ordering::SeqCst) as i64;
        self.queue(
            "message",
            json!({"message_id": message_id, "chat": chat_json, "from": user, "text": text,
                   "reply_to_message": {"message_id": to, "date": 1_700_000_000, "chat": chat_json, "text": "…",
                                        "from": {"id": BOT, "is_bot": true, "first_name": "askuser", "username": "askuser_test_bot"}}}),
        );
        message_id
    }

    /// `user` writing `text` in `chat`, replying to nothing.
    fn say(&self, chat: i64, text: &str, user: Value) -> i64 {
        let chat_json = if chat > 0 {
            json!({"id": chat, "type": "private", "first_name": "Alice"})
        } else {
            json!({"id": chat, "type": "supergroup", "title": "Ops"})
        };
        let message_id = self.next_message.fetch_add(1, Ordering::SeqCst) as i64;
        self.queue("message", json!({"message_id": message_id, "chat": chat_json, "from": user, "text": text}));
        message_id
    }

    /// The answers to button press `id`.
    fn answers_to(&self, id: &str) -> Vec<Value> {
        self.calls("answerCallbackQuery").into_iter().filter(|a| a["callback_query_id"] == id).collect()
    }

    async fn answer_to(&self, id: &str) -> Value {
        for _ in 0..300 {
            if let Some(a) = self.answers_to(id).first() {
                return a.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("press {id} was never answered: {:#?}", self.calls("answerCallbackQuery"));
    }

    /// The messages sent to `chat` in reply to its message `to`.
    fn told(&self, chat: i64, to: i64) -> Vec<String> {
        self.calls("sendMessage")
            .into_iter()
            .filter(|m| m["chat_id"] == chat && m["reply_parameters"]["message_id"] == to)
            .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    async fn told_one(&self, chat: i64, to: i64) -> String {
        for _ in 0..300 {
            if let Some(t) = self.told(chat, to).first() {
                return t.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nothing was said to message {to}: {:#?}", self.calls("sendMessage"));
    }

    /// Waits until every queued update was confirmed (an offset past it).
    async fn all_confirmed(&self) {
        for _ in 0..300 {
            if self.polls.lock().unwrap().queue.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("updates never confirmed: {:#?}", self.polls.lock().unwrap().queue);
    }
}

fn alice() -> Value {
    json!({"id": ALICE, "is_bot": false, "first_name": "Alice", "username": "alice", "language_code": "en"})
}

fn bob() -> Value {
    json!({"id": 222, "is_bot": false, "first_name": "Bob evil.example"})
}

fn error(code: u16, description: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap();
    (status, Json(json!({"ok": false, "error_code": code, "description": description}))).into_response()
}

fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

/// What Telegram checks of a message: its text, entities, keyboard and options.
fn check_message(body: &Value) -> Result<(), String> {
    let text = body["text"].as_str().ok_or("no text")?;
    let units = text.encode_utf16().count();
    if text.trim().is_empty() || units > 4096 {
        return Err(format!("message text is empty or too long ({units})"));
    }
    if body.get("parse_mode").is_some() {
        return Err("askuser sends no parse_mode".into());
    }
    if body["link_preview_options"]["is_disabled"] != true {
        return Err("link previews must be off".into());
    }
    for e in body["entities"].as_array().into_iter().flatten() {
        let (offset, length) = (e["offset"].as_u64().ok_or("offset")?, e["length"].as_u64().ok_or("length")?);
        if length == 0 || (offset + length) as usize > units || !["pre", "code"].contains(&e["type"].as_str().unwrap_or_default()) {
            return Err(format!("bad entity {e}"));
        }
    }
    if let Some(markup) = body.get("reply_markup") {
        let rows = markup["inline_keyboard"].as_array().ok_or("reply_markup without inline_keyboard")?;
        let buttons: Vec<&Value> = rows.iter().flat_map(|r| r.as_array().into_iter().flatten()).collect();
        if buttons.len() > 100 {
            return Err("more than 100 buttons".into());
        }
        for b in buttons {
            let data = b["callback_data"].as_str().ok_or("a button without callback_data")?;
            if data.is_empty() || data.len() > 64 || b["text"].as_str().is_none_or(str::is_empty) {
                return Err(format!("BUTTON_DATA_INVALID: {b}"));
            }
        }
    }
    Ok(())
}

async fn call(
    State(fake): State<FakeTelegram>,
    Path((via, bot, method)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if bot != format!("bot{}", fake.token) {
        return error(401, "Unauthorized");
    }
    if !headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("application/json")) {
        return error(400, "Bad Request: expected JSON");
    }
    let Ok(body) = serde_json::from_str::<Value>(&body) else { return error(400, "Bad Request: can't parse JSON") };
    fake.calls.lock().unwrap().push(Call { via, method: method.clone(), body: body.clone() });
    if method == "getUpdates" {
        return updates(&fake, &body).await;
    }
    if matches!(method.as_str(), "sendMessage" | "editMessageText") {
        let failure = {
            let mut failures = fake.failures.lock().unwrap();
            (!failures.is_empty()).then(|| failures.remove(0))
        };
        match failure {
            Some(Failure::TooMany(after)) => {
                let answer = json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {after}"), "parameters": {"retry_after": after}});
                return (StatusCode::TOO_MANY_REQUESTS, Json(answer)).into_response();
            }
            Some(Failure::Internal) => return error(500, "Internal Server Error"),
            Some(Failure::Blocked) => return error(403, "Forbidden: bot was blocked by the user"),
            None => {}
        }
    }
    let chat = body["chat_id"].as_i64();
    let known = |c: Option<i64>| c.is_some_and(|c| [SHARED, ALICE, STRANGERS].contains(&c));
    match method.as_str() {
        "sendMessage" => {
            if !known(chat) {
                return error(400, "Bad Request: chat not found");
            }
            if let Err(e) = check_message(&body) {
                return error(400, &format!("Bad Request: {e}"));
            }
            let id = fake.next_message.fetch_add(1, Ordering::SeqCst) as i64;
            fake.messages.lock().unwrap().insert((chat.unwrap(), id), json!({"text": body["text"], "reply_markup": body["reply_markup"]}));
            ok(json!({"message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "supergroup"}, "text": body["text"],
                      "from": {"id": BOT, "is_bot": true, "first_name": "askuser"}}))
        }
        "editMessageText" => {
            let key = (chat.unwrap_or_default(), body["message_id"].as_i64().unwrap_or_default());
            let mut messages = fake.messages.lock().unwrap();
            let Some(now) = messages.get_mut(&key) else { return error(400, "Bad Request: message to edit not found") };
            if let Err(e) = check_message(&body) {
                return error(400, &format!("Bad Request: {e}"));
            }
            let new = json!({"text": body["text"], "reply_markup": body["reply_markup"]});
            if *now == new {
                return error(
                    400,
                    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same",
                );
            }
            *now = new;
            ok(json!({"message_id": key.1, "chat": {"id": key.0}, "text": body["text"]}))
        }
        "answerCallbackQuery" => {
            if body["callback_query_id"].as_str().is_none_or(str::is_empty)
                || body["text"].as_str().is_some_and(|t| t.chars().count() > 200)
            {
                return error(400, "Bad Request: query is invalid");
            }
            ok(json!(true))
        }
        _ => error(404, "Not Found"),
    }
}

/// `getUpdates`: confirms what is before `offset`, hands out the rest, or waits up to
/// `timeout` seconds for one; a newer call ends a waiting one with 409.
async fn updates(fake: &FakeTelegram, body: &Value) -> Response {
    if body["allowed_updates"] != json!(["message", "callback_query"]) {
        return error(400, "Bad Request: askuser asks for messages and button presses only");
    }
    let limit = body["limit"].as_u64().unwrap_or(100) as usize;
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    let generation = {
        let mut polls = fake.polls.lock().unwrap();
        if let Some(offset) = body["offset"].as_i64() {
            polls.queue.retain(|u| u["update_id"].as_i64().unwrap() >= offset);
        }
        polls.generation += 1;
        polls.generation
    };
    fake.wake.notify_waiters();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let woken = fake.wake.notified();
        {
            let mut polls = fake.polls.lock().unwrap();
            if polls.generation != generation {
                polls.conflicts += 1;
                return error(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running");
            }
            if !polls.queue.is_empty() || tokio::time::Instant::now() >= deadline {
                let handed: Vec<Value> = polls.queue.iter().take(limit).cloned().collect();
                for u in &handed {
                    *polls.handed.entry(u["update_id"].as_i64().unwrap()).or_default() += 1;
                }
                return ok(Value::Array(handed));
            }
        }
        let _ = tokio::time::timeout_at(deadline, woken).await;
    }
}

fn bot(api: &str, via: &str, routes: &[(&str, i64)]) -> TelegramBot {
    TelegramBot {
        token: TOKEN.into(),
        api: format!("{api}/{via}/").parse().unwrap(),
        chat: Some(SHARED),
        routes: routes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        rules: Default::default(),
        poll: Duration::from_secs(2),
        lease: Duration::from_secs(4),
    }
}

async fn telegram_bridge(dir: tempfile::TempDir, api: &str, routes: &[(&str, i64)]) -> TestBridge {
    let bot = bot(api, "a", routes);
    bridge_configured(dir, move |opts| {
        opts.notify.add(bot);
    })
    .await
}

fn question(id: &str) -> Value {
    json!({"id": id, "agent": {"name": "ci"}, "questions": [{
        "question": "Which database? See https://evil.example/login or ask @channel /start", "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}, {"label": "MySQL"}]}]})
}

/// The `callback_data` of the button labelled `text` in a sent message.
fn button(message: &Value, text: &str) -> String {
    for row in message["reply_markup"]["inline_keyboard"].as_array().into_iter().flatten() {
        for b in row.as_array().into_iter().flatten() {
            if b["text"] == text {
                return b["callback_data"].as_str().unwrap().to_owned();
            }
        }
    }
    panic!("no button {text:?} in {message:#}");
}

#[tokio::test]
async fn a_question_set_sent_to_telegram_is_answered_by_its_button_and_then_says_so() {
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("t-1")).send().await.unwrap();
    let (sent, message_id) = tg.sent(1).await;
    assert_eq!(sent["chat_id"], SHARED);
    let text = sent["text"].as_str().unwrap();
    let id = askuser_bridge::notify::short_id("t-1");
    assert!(text.starts_with(&format!("ci asks · Database · id {id}\n\n")), "{text}");
    assert!(
        !text.contains("evil.example") && !text.contains("@channel") && !text.contains(" /start"),
        "agent text links and pings nothing: {text:?}"
    );
    assert!(text.contains("1. Postgres\n2. SQLite\n3. MySQL"), "{text}");
    assert!(text.contains("#q=t-1"), "it links to the set in askuser: {text}");
    let data = button(&sent, "2. SQLite");
    assert!(!data.contains("t-1") && data.len() <= 64, "{data}");

    let press = tg.press(SHARED, message_id, &data, alice());
    let record = b.until_status("t-1", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "SQLite", "{record:#}");
    assert_eq!(record["answeredBy"], "telegram:111 @alice", "who answered, as Telegram names them");
    let answer = tg.answer_to(&press).await;
    assert!(answer.get("text").is_none(), "a press that answered needs no words: {answer}");

    let edited = tg.nth("editMessageText", 1).await;
    assert_eq!((edited["chat_id"].as_i64(), edited["message_id"].as_i64()), (Some(SHARED), Some(message_id)), "the same message");
    let text = edited["text"].as_str().unwrap();
    assert!(text.contains("→ SQLite") && text.ends_with("Answered by @alice"), "it says what was answered and by whom: {text}");
    assert!(edited.get("reply_markup").is_none(), "no buttons left: {edited}");
    tg.all_confirmed().await;
    assert!(tg.polls.lock().unwrap().handed.values().all(|&n| n == 1), "each update handed out once");
}

#[tokio::test]
async fn a_reply_answers_by_number_or_in_words_and_a_wrong_one_is_told_why() {
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("t-2")).send().await.unwrap();
    let (_, first) = tg.sent(1).await;
    let wrong = tg.reply(SHARED, first, "7", bob());
    let told = tg.told_one(SHARED, wrong).await;
    assert!(told.contains("There is no option 7: reply with a number from 1 to 3"), "{told}");
    assert_eq!(b.record("t-2").await["status"], "pending");
    tg.reply(SHARED, first, "3", bob());
    let record = b.until_status("t-2", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "MySQL");
    assert_eq!(record["answeredBy"], "telegram:222 Bob evil.example");
    let edited = tg.nth("editMessageText", 1).await;
    assert!(edited["text"].as_str().unwrap().ends_with("Answered by Bob evil.\u{200B}example"), "a name links nothing: {edited}");

    // Several answers by their numbers; words where the question takes them.
    let mut features = question("t-3");
    features["questions"][0]["multiSelect"] = true.into();
    b.post("/v1/ask?wait=false").json(&features).send().await.unwrap();
    let (sent, second) = tg.sent(2).await;
    assert!(sent["text"].as_str().unwrap().contains("numbers of your choices"), "{sent}");
    tg.reply(SHARED, second, "3, 1", alice());
    let record = b.until_status("t-3", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], json!(["Postgres", "MySQL"]));
    b.post("/v1/ask?wait=false").json(&question("t-4")).send().await.unwrap();
    let (_, third) = tg.sent(3).await;
    tg.reply(SHARED, third, "Whatever the team already runs", alice());
    let record = b.until_status("t-4", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Whatever the team already runs");

    // A set of several questions is answered in askuser: the reply says where.
    let several = json!({"id": "t-5", "questions": [{"question": "Which database?", "options": [{"label": "A"}, {"label": "B"}]},
                                                    {"question": "Why?"}]});
    b.post("/v1/ask?wait=false").json(&several).send().await.unwrap();
    let (sent, fourth) = tg.sent(4).await;
    assert_eq!(sent["reply_markup"]["inline_keyboard"].as_array().unwrap().len(), 1, "only Decline: {sent}");
    let asked = tg.reply(SHARED, fourth, "1", alice());
    let told = tg.told_one(SHARED, asked).await;
    assert!(told.starts_with("This set has 2 questions: answer them in askuser: ") && told.ends_with("#q=t-5"), "{told}");
    assert_eq!(b.record("t-5").await["status"], "pending");
    // Its Decline declines it.
    let press = tg.press(SHARED, fourth, &button(&sent, "Decline"), alice());
    b.until_status("t-5", "cancelled").await;
    tg.answer_to(&press).await;
}

#[tokio::test]
async fn only_the_configured_chats_answer_and_a_forged_press_is_refused() {
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("t-6")).send().await.unwrap();
    let (sent, message_id) = tg.sent(1).await;
    let data = button(&sent, "1. Postgres");
    // The same buttons, pressed in a chat askuser does not send to (a copy of the message
    // id there), and a reply there.
    let elsewhere = tg.press(STRANGERS, message_id, &data, bob());
    let refused = tg.answer_to(&elsewhere).await;
    assert!(refused["text"].as_str().unwrap().contains("no answers from this chat"), "{refused}");
    let reply = tg.reply(STRANGERS, message_id, "1", bob());
    // Another set's button, or something that is no button of askuser's, in the right chat.
    b.post("/v1/ask?wait=false").json(&question("t-7")).send().await.unwrap();
    let (other, _) = tg.sent(2).await;
    let forged = tg.press(SHARED, message_id, &button(&other, "3. MySQL"), bob());
    let refused = tg.answer_to(&forged).await;
    assert!(refused["text"].as_str().unwrap().contains("another question set"), "{refused}");
    let nonsense = tg.press(SHARED, message_id, "t-6:o0", bob());
    assert!(tg.answer_to(&nonsense).await["text"].as_str().unwrap().contains("another question set"));
    tg.all_confirmed().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.record("t-6").await["status"], "pending", "nothing was answered");
    assert!(tg.told(STRANGERS, reply).is_empty(), "nothing is said to a stranger's chat");
    assert!(tg.calls("editMessageText").is_empty());
}

#[tokio::test]
async fn answered_elsewhere_the_message_says_so_and_a_late_press_is_told() {
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("t-8")).send().await.unwrap();
    let (sent, message_id) = tg.sent(1).await;
    let answered = b.post("/v1/questions/t-8/answer").json(&json!({"answers": [{"selected": ["MySQL"]}]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let edited = tg.nth("editMessageText", 1).await;
    assert_eq!(edited["message_id"], message_id);
    let text = edited["text"].as_str().unwrap();
    assert!(text.contains("→ MySQL") && text.ends_with("Answered in askuser"), "{text}");
    // Someone presses a button of the old message before Telegram showed the edit.
    let late = tg.press(SHARED, message_id, &button(&sent, "1. Postgres"), alice());
    let told = tg.answer_to(&late).await;
    assert!(told["text"].as_str().unwrap().contains("not waiting any more"), "{told}");
    assert_eq!(b.record("t-8").await["result"]["answers"][0]["answer"], "MySQL", "the first answer stands");
    // Withdrawn: said so too.
    b.post("/v1/ask?wait=false").json(&question("t-9")).send().await.unwrap();
    tg.sent(2).await;
    b.http.delete(format!("{}/v1/questions/t-9", b.url)).bearer_auth(crate::support::TOKEN).send().await.unwrap();
    let edited = tg.nth("editMessageText", 2).await;
    assert!(edited["text"].as_str().unwrap().ends_with("Withdrawn by the agent"), "{edited}");
}

#[tokio::test]
async fn a_restart_sends_nothing_twice_and_still_edits_the_message() {
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    b.post("/v1/ask?wait=false").json(&question("t-10")).send().await.unwrap();
    let (sent, message_id) = tg.sent(1).await;
    let dir = b.stop().await;
    let b = telegram_bridge(dir, &api, &[]).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(tg.calls("sendMessage").len(), 1, "not sent again after the restart");
    // The restarted bridge takes a press on the message sent before it.
    let press = tg.press(SHARED, message_id, &button(&sent, "1. Postgres"), alice());
    let record = b.until_status("t-10", "answered").await;
    assert_eq!(record["result"]["answers"][0]["answer"], "Postgres");
    tg.answer_to(&press).await;
    let edited = tg.nth("editMessageText", 1).await;
    assert_eq!(edited["message_id"], message_id, "the message sent before the restart is the one edited");
}

#[tokio::test]
async fn telegram_down_or_limiting_is_tried_again_and_sends_once() {
    let (tg, api) = FakeTelegram::start().await;
    tg.failures.lock().unwrap().extend([Failure::TooMany(3), Failure::Internal]);
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[]).await;
    let asked = std::time::Instant::now();
    b.post("/v1/ask?wait=false").json(&question("t-11")).send().await.unwrap();
    let third = tg.nth("sendMessage", 3).await;
    // 3 s as Telegram said, then the backoff's 2 s (its own 1 s and 2 s would be 3 s).
    assert!(asked.elapsed() >= Duration::from_millis(4_500), "Telegram's retry_after was kept: {:?}", asked.elapsed());
    assert_eq!(third["chat_id"], SHARED);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(tg.messages.lock().unwrap().len(), 1, "sent once, after two failures");
    // A refusal for good (the bot blocked) is not tried again.
    tg.failures.lock().unwrap().push(Failure::Blocked);
    b.post("/v1/ask?wait=false").json(&question("t-12")).send().await.unwrap();
    tg.nth("sendMessage", 4).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(tg.calls("sendMessage").len(), 4, "not tried again");
    // Closing retries too: the edit goes out after Telegram's trouble.
    tg.failures.lock().unwrap().push(Failure::Internal);
    b.post("/v1/questions/t-11/answer").json(&json!({"answers": [{"selected": ["SQLite"]}]})).send().await.unwrap();
    let edited = tg.nth("editMessageText", 2).await;
    assert!(edited["text"].as_str().unwrap().contains("→ SQLite"));
    assert!(tg.messages.lock().unwrap().values().any(|m| m["text"].as_str().unwrap().contains("→ SQLite")), "the edit went through");
}

#[tokio::test]
async fn a_set_for_a_person_goes_to_their_chat_and_to_the_shared_one_only_when_it_escalates() {
    let (tg, api) = FakeTelegram::start().await;
    let b = bridge_configured(tempfile::tempdir().unwrap(), {
        let bot = bot(&api, "a", &[("alice", ALICE)]);
        move |opts| {
            {
                opts.notify.add(bot);
            };
            opts.settings.escalate_after = Some(Duration::from_millis(600));
        }
    })
    .await;
    let mut for_alice = question("t-13");
    for_alice["agent"]["assignee"] = "alice".into();
    let mut for_bob = question("t-14");
    for_bob["agent"]["assignee"] = "bob".into();
    b.post("/v1/ask?wait=false").json(&for_alice).send().await.unwrap();
    b.post("/v1/ask?wait=false").json(&for_bob).send().await.unwrap();
    let (first, message_id) = tg.sent(1).await;
    assert_eq!(first["chat_id"], ALICE, "alice's at once, in her chat");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(tg.calls("sendMessage").len(), 1, "bob's waits for bob (who has no chat) until it escalates");
    let (second, _) = tg.sent(2).await;
    assert_eq!(second["chat_id"], SHARED, "then everyone's");
    assert!(second["text"].as_str().unwrap().contains("#q=t-14"), "{second}");
    // Alice answers hers in her chat.
    tg.reply(ALICE, message_id, "2", alice());
    assert_eq!(b.until_status("t-13", "answered").await["result"]["answers"][0]["answer"], "SQLite");
}

#[tokio::test]
async fn bridges_sharing_a_store_take_turns_polling_and_one_takes_over_when_the_other_stops() {
    needs!(Postgres);
    let db = crate::pg::Cluster::start();
    let url = db.database("telegram");
    let (tg, api) = FakeTelegram::start().await;
    let mut bridges = vec![];
    for via in ["a", "b"] {
        let bot = TelegramBot { lease: Duration::from_secs(3), poll: Duration::from_secs(1), ..bot(&api, via, &[]) };
        let url = url.clone();
        bridges.push(Some(
            bridge_configured(tempfile::tempdir().unwrap(), move |o| {
                o.store = Some(url);
                o.notify.add(bot);
            })
            .await,
        ));
    }
    let pollers = |since: usize| -> Vec<String> {
        tg.calls.lock().unwrap().iter().skip(since).filter(|c| c.method == "getUpdates").map(|c| c.via.clone()).collect()
    };
    tokio::time::sleep(Duration::from_secs(8)).await;
    let polled = pollers(0);
    assert!(polled.len() >= 3, "someone polls: {polled:?}");
    assert_eq!(tg.polls.lock().unwrap().conflicts, 0, "never two polls at once");
    // One question, one message, one answer, though both bridges hear of it.
    bridges[0].as_ref().unwrap().post("/v1/ask?wait=false").json(&question("t-15")).send().await.unwrap();
    let (sent, message_id) = tg.sent(1).await;
    let press = tg.press(SHARED, message_id, &button(&sent, "2. SQLite"), alice());
    bridges[1].as_ref().unwrap().until_status("t-15", "answered").await;
    tg.answer_to(&press).await;
    tg.all_confirmed().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.answers_to(&press).len(), 1, "the press was carried out once");
    assert_eq!(tg.calls("sendMessage").len(), 1);
    // The one polling now stops: the other takes over within two terms.
    let holder = pollers(0).last().unwrap().clone();
    let stopping = if holder == "a" { 0 } else { 1 };
    bridges[stopping].take().unwrap().stop().await;
    let since = tg.calls.lock().unwrap().len();
    tokio::time::sleep(Duration::from_secs(9)).await;
    let after = pollers(since);
    let other = if holder == "a" { "b" } else { "a" };
    assert!(after.iter().any(|v| v == other), "{other} polls once {holder} stopped: {after:?}");
    assert!(after.iter().all(|v| v == other), "{holder} stopped polling: {after:?}");
    assert_eq!(tg.polls.lock().unwrap().conflicts, 0, "never two polls at once");
    let left = bridges[1 - stopping].as_ref().unwrap();
    left.post("/v1/ask?wait=false").json(&question("t-16")).send().await.unwrap();
    let (sent, message_id) = tg.sent(2).await;
    tg.press(SHARED, message_id, &button(&sent, "1. Postgres"), alice());
    left.until_status("t-16", "answered").await;
}

/// docs/notify.md's lines, pasted into a shell: the `export`, then each `askuser serve`
/// (here on a free port, a data directory of its own, and this file's stand-in for the
/// Bot API): the bridge starts with the bot, polls with the token, and shows it nowhere.
#[tokio::test]
async fn the_docs_commands_start_a_bridge_with_the_telegram_bot() {
    use std::io::BufRead;
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
    let export = docs.lines().find(|l| l.starts_with("export ASKUSER_TELEGRAM_BOT_TOKEN=")).expect("the export line");
    let env: Vec<(String, String)> = export
        .trim_start_matches("export ")
        .split_whitespace()
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let token = env.iter().find(|(k, _)| k == "ASKUSER_TELEGRAM_BOT_TOKEN").unwrap().1.clone();
    let commands: Vec<String> =
        docs.lines().filter(|l| l.starts_with("askuser serve ") && l.contains("--notify-telegram")).map(str::to_owned).collect();
    assert_eq!(commands.len(), 2);
    for command in commands {
        let (tg, api) = FakeTelegram::with_token(&token).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = crate::support::askuser();
        cmd.args(command.split_whitespace().skip(1))
            .args(["--addr", "127.0.0.1:0", "--telegram-api", &format!("{api}/docs/"), "--data-dir"])
            .arg(dir.path());
        cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).env("HOME", dir.path());
        cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let said = tokio::task::spawn_blocking(move || {
            let mut said = vec![];
            for line in stderr.lines().map_while(Result::ok) {
                said.push(line.clone());
                if line.starts_with("askuser: open ") {
                    break;
                }
            }
            said.join("\n")
        })
        .await
        .unwrap();
        let polled = tg.nth("getUpdates", 1).await;
        let _ = child.kill();
        let _ = child.wait();
        assert!(said.contains("askuser: open "), "{command}: {said}");
        assert!(!said.contains(&token) && !said.contains("your-bot-token"), "{said}");
        assert_eq!(polled["allowed_updates"], json!(["message", "callback_query"]), "{command}");
    }
}

/// Typed commands (`answer ID 2`, `/deny@bot ID`) answer a set by the short id its message
/// shows, only in a chat it was sent to; an id no set sent there has is told so.
#[tokio::test]
async fn typed_commands_answer_a_set_by_its_id_only_in_a_chat_it_was_sent_to() {
    use askuser_bridge::notify::short_id;
    let (tg, api) = FakeTelegram::start().await;
    let b = telegram_bridge(tempfile::tempdir().unwrap(), &api, &[("alice", ALICE)]).await;
    let mut hers = question("t-20");
    hers["agent"]["assignee"] = "alice".into();
    b.post("/v1/ask?wait=false").json(&hers).send().await.unwrap();
    b.post("/v1/ask?wait=false").json(&question("t-21")).send().await.unwrap();
    let (first, _) = tg.sent(1).await;
    let (second, _) = tg.sent(2).await;
    let chats = [first["chat_id"].as_i64(), second["chat_id"].as_i64()];
    assert!(chats.contains(&Some(ALICE)) && chats.contains(&Some(SHARED)), "{chats:?}");

    let asked = tg.say(ALICE, &format!("answer {} 2", short_id("t-21")), alice());
    let told = tg.told_one(ALICE, asked).await;
    assert!(told.starts_with(&format!("No question set with id {} waits in this chat", short_id("t-21"))), "{told}");
    let asked = tg.say(ALICE, &format!("answer {} sqlite", short_id("t-20")), alice());
    let record = b.until_status("t-20", "answered").await;
    assert_eq!(
        (record["result"]["answers"][0]["answer"].as_str(), record["answeredBy"].as_str()),
        (Some("SQLite"), Some("telegram:111 @alice"))
    );
    assert_eq!(tg.told_one(ALICE, asked).await, format!("Answered: {}.", short_id("t-20")));

    // A group's command, as Telegram writes one with privacy mode on.
    tg.say(SHARED, &format!("/deny@askuser_test_bot {}", short_id("t-21")), alice());
    let record = b.until_status("t-21", "cancelled").await;
    assert_eq!(record["answeredBy"], "telegram:111 @alice");
    let late = tg.say(SHARED, &format!("approve {}", short_id("t-21")), alice());
    assert_eq!(tg.told_one(SHARED, late).await, "This question set is not waiting any more.");
    let bad = tg.say(ALICE, "approve", alice());
    assert!(tg.told_one(ALICE, bad).await.starts_with("approve needs the question's id"));
}
