//! The Telegram bot (`--notify-telegram`): sends each question set to a chat as the
//! message [`super::telegram::message`] builds, edits it to what became of the set once it
//! closes, and takes answers from its buttons and from replies to it. It fetches those
//! itself by long polling `getUpdates` (no public URL, no webhook): one task the notifier
//! starts, which only the bridge holding the polling lease runs when bridges share a store
//! ([`super::channel::Lease`]; Telegram answers a second poller with 409).
//!
//! Calls go to the Bot API with the bridge's notification client (no redirects, the
//! bridge's TLS): `sendMessage`, `editMessageText`, `answerCallbackQuery` and `getUpdates`.
//! The token is in every call's path, so no error or log line shows a URL. A call Telegram
//! refuses for good (chat not found, the bot blocked or removed, a bad token) is not tried
//! again; a rate limit (429, with its `retry_after`) or an outage is, with the notifier's
//! backoff or Telegram's `retry_after`. Only the configured chats are listened to: an
//! update from any other chat answers nothing and is logged without its text.

use super::channel::{Lease, Step};
use super::channel::{Places, SettingsError};
use super::push::Sent;
use super::telegram::{self, Event, Outcome, Press, Said, Update};
use super::{Notifier, Rules};
use askuser_core::protocol::QuestionRecord;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Telegram's Bot API.
pub const API: &str = "https://api.telegram.org/";
/// How long one `getUpdates` waits for an update.
pub const POLL: Duration = Duration::from_secs(25);
/// A polling lease's term, for bridges sharing a store.
pub const LEASE: Duration = Duration::from_secs(30);

/// How one Telegram bot is set up (`askuser serve --notify-telegram`, docs/notify.md).
#[derive(Clone)]
pub struct TelegramBot {
    /// The bot's token from @BotFather (`123456789:AA…`).
    pub token: String,
    /// Where the Bot API is (ends with `/`): [`API`], or a test's stand-in.
    pub api: reqwest::Url,
    /// Where question sets for no one go, and everyone else's once they escalate.
    pub chat: Option<i64>,
    /// Where question sets for a person or a team go (name → chat id).
    pub routes: BTreeMap<String, i64>,
    /// Which question sets it hears of, and when.
    pub rules: Rules,
    /// How long one `getUpdates` waits ([`POLL`]).
    pub poll: Duration,
    /// The polling lease's term among bridges sharing a store ([`LEASE`]).
    pub lease: Duration,
}

/// Says where it sends, never the token.
impl std::fmt::Debug for TelegramBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramBot")
            .field("bot", &self.bot_id())
            .field("api", &self.api.as_str())
            .field("chat", &self.chat)
            .field("routes", &self.routes)
            .finish()
    }
}

/// A failed call: what it means for the message, and whether Telegram said another poller
/// holds the bot (409).
#[derive(Debug)]
enum Failed {
    Sent(Sent),
    Conflict(String),
}

impl TelegramBot {
    /// The bot `--notify-telegram [NAME=]CHAT_ID` (`places`), `--telegram-bot-token` and
    /// `--telegram-api` set up, hearing of sets as `rules` say.
    pub fn configure(places: &[String], token: Option<&str>, api: &str, rules: Rules) -> Result<TelegramBot, SettingsError> {
        let chat_id = |c: &str| match c.parse::<i64>() {
            Ok(id) if id != 0 => Ok(id),
            _ => Err(SettingsError::invalid(
                "notify-telegram",
                "a chat id (a number: a person's, or -100… for a group, as docs/notify.md finds it)",
                c,
            )),
        };
        let places = Places::parse("notify-telegram", "CHAT_ID", "chat", places, chat_id)?;
        let token = match token.map(str::trim) {
            Some(t) if !t.is_empty() => t.to_owned(),
            _ => {
                return Err(SettingsError::Missing {
                    channel: "notify-telegram",
                    what: "the bot's token",
                    flag: "telegram-bot-token",
                    var: "ASKUSER_TELEGRAM_BOT_TOKEN",
                })
            }
        };
        // Checked without showing it: it is a password.
        let well_formed = token.split_once(':').is_some_and(|(id, key)| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
                && !key.is_empty()
                && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        });
        if !well_formed {
            return Err(SettingsError::Invalid {
                flag: "telegram-bot-token",
                expected: "the token @BotFather gave (digits, ':', then letters, digits, - and _)".into(),
                got: format!("{} characters that are not one", token.chars().count()),
            });
        }
        let api = super::channel::api_url("telegram-api", api)?;
        Ok(TelegramBot { token, api, chat: places.shared, routes: places.own, rules, poll: POLL, lease: LEASE })
    }

    /// Whether `chat` is one the bot sends to (and so may answer).
    pub fn allows(&self, chat: i64) -> bool {
        self.chat == Some(chat) || self.routes.values().any(|c| *c == chat)
    }

    /// The bot's own user id: the token's part before `:`.
    pub fn bot_id(&self) -> &str {
        self.token.split_once(':').map_or("", |(id, _)| id)
    }

    /// Calls method `method` with `body`, waiting at most `wait`: its `result` when
    /// Telegram says `ok`.
    async fn call(&self, http: &reqwest::Client, method: &str, body: &Value, wait: Duration) -> Result<Value, Failed> {
        let refused = |why: String| Failed::Sent(Sent::Refused(why));
        // `./`: the token's `123:` would otherwise read as a URL's scheme.
        let path = format!("./bot{}/{method}", self.token);
        let url = self.api.join(&path).map_err(|_| refused("the Bot API's address is not a URL".into()))?;
        let response = match http.post(url).json(body).timeout(wait).send().await {
            Ok(r) => r,
            Err(e) => return Err(Failed::Sent(Sent::Retry { why: format!("cannot reach Telegram: {}", e.without_url()), after: None })),
        };
        let status = response.status();
        if status.is_redirection() {
            return Err(refused(format!("Telegram answered {status}; askuser does not follow redirects")));
        }
        let answer: Value = match response.json().await {
            Ok(v) => v,
            Err(e) if status.is_success() || status.is_server_error() || status.as_u16() == 429 => {
                return Err(Failed::Sent(Sent::Retry { why: format!("Telegram's answer ({status}): {}", e.without_url()), after: None }))
            }
            Err(_) => return Err(refused(format!("Telegram answered {status} without its JSON"))),
        };
        if answer["ok"] == true {
            return Ok(answer["result"].clone());
        }
        let code = answer["error_code"].as_u64().unwrap_or(u64::from(status.as_u16()));
        let description: String = answer["description"].as_str().unwrap_or("no description").chars().take(200).collect();
        let parameters = &answer["parameters"];
        Err(match code {
            429 => Failed::Sent(Sent::Retry {
                why: format!("Telegram said {description}"),
                after: Some(Duration::from_secs(parameters["retry_after"].as_u64().unwrap_or(1).clamp(1, 3600))),
            }),
            409 => Failed::Conflict(description),
            500..=599 => Failed::Sent(Sent::Retry { why: format!("Telegram said {code} {description}"), after: None }),
            _ => match parameters["migrate_to_chat_id"].as_i64() {
                Some(to) => refused(format!(
                    "Telegram refused {method}: the group is a supergroup now, with chat id {to}: use --notify-telegram {to}"
                )),
                None => refused(format!("Telegram refused {method}: {code} {description}")),
            },
        })
    }

    /// [`TelegramBot::call`] for sending: a 409 is Telegram's trouble too.
    async fn send(&self, http: &reqwest::Client, method: &str, body: &Value) -> Result<Value, Sent> {
        self.call(http, method, body, Duration::from_secs(30)).await.map_err(|failed| match failed {
            Failed::Sent(sent) => sent,
            Failed::Conflict(why) => Sent::Retry { why: format!("Telegram said {why}"), after: None },
        })
    }

    /// Sends `message` to `chat`: [`Sent::Posted`] with its `message_id`.
    pub async fn post(&self, http: &reqwest::Client, chat: i64, message: &telegram::Outgoing) -> Sent {
        let mut body = message.fields();
        body["chat_id"] = chat.into();
        match self.send(http, "sendMessage", &body).await {
            Ok(sent) => match sent["message_id"].as_i64() {
                Some(id) => Sent::Posted(id.to_string()),
                None => Sent::Refused("Telegram's sendMessage answer has no message_id".into()),
            },
            Err(failed) => failed,
        }
    }

    /// Replaces message `message_id` in `chat` with `message` (its keyboard, or none).
    pub async fn edit(&self, http: &reqwest::Client, chat: i64, message_id: i64, message: &telegram::Outgoing) -> Sent {
        let mut body = message.fields();
        body["chat_id"] = chat.into();
        body["message_id"] = message_id.into();
        match self.send(http, "editMessageText", &body).await {
            Ok(_) => Sent::Delivered,
            // Already so (an edit that went out before a restart).
            Err(Sent::Refused(why)) if why.contains("message is not modified") => Sent::Delivered,
            Err(failed) => failed,
        }
    }

    /// Answers button press `id` (Telegram shows a spinner on the button until then),
    /// with `text` shown to the one who pressed it.
    pub async fn answer_press(&self, http: &reqwest::Client, id: &str, text: Option<&str>) {
        let mut body = json!({"callback_query_id": id});
        if let Some(text) = text {
            body["text"] = telegram::cut(text, telegram::MAX_CALLBACK_TEXT).into();
            body["show_alert"] = true.into();
        }
        if let Err(failed) = self.send(http, "answerCallbackQuery", &body).await {
            tracing::warn!("cannot answer a Telegram button press: {failed:?}");
        }
    }

    /// Tells `chat`, in reply to its message `reply_to`, `text` (askuser's words).
    pub async fn tell(&self, http: &reqwest::Client, chat: i64, reply_to: i64, text: &str) -> Sent {
        let body = json!({
            "chat_id": chat, "text": telegram::cut(text, telegram::MAX_TEXT),
            "reply_parameters": {"message_id": reply_to, "allow_sending_without_reply": true},
            "link_preview_options": {"is_disabled": true},
        });
        match self.send(http, "sendMessage", &body).await {
            Ok(_) => Sent::Delivered,
            Err(failed) => failed,
        }
    }

    /// The updates after `offset` (which confirms every one before it), waiting up to
    /// `timeout` for one, at most `limit`; the request gives up after `deadline`.
    async fn updates(
        &self,
        http: &reqwest::Client,
        offset: Option<i64>,
        timeout: Duration,
        limit: u32,
        deadline: Duration,
    ) -> Result<Vec<Value>, Failed> {
        let mut body = json!({"timeout": timeout.as_secs(), "limit": limit, "allowed_updates": ["message", "callback_query"]});
        if let Some(offset) = offset {
            body["offset"] = offset.into();
        }
        let result = self.call(http, "getUpdates", &body, deadline).await?;
        Ok(result.as_array().cloned().unwrap_or_default())
    }
}

/// Polls for updates and carries them out while the bridge runs: alone, always; with
/// bridges sharing the store, only while this bridge holds the polling lease.
pub(super) async fn poll(notifier: Arc<Notifier>, bot: TelegramBot) {
    let mut stop = notifier.bridge.shutdown_signal();
    let lease = Lease { term_ms: (bot.lease.as_millis() as u64).max(1000) };
    let (mut held, mut refused): (Option<u64>, Option<u64>) = (None, None);
    let mut offset: Option<i64> = None;
    let mut backoff = Duration::from_secs(1);
    let mut told = None::<String>;
    loop {
        let now = notifier.bridge.now_ms();
        let step = match notifier.shared.as_deref() {
            None => Step::Poll(bot.poll.as_millis() as u64 + 10_000),
            Some(shared) => match lease.step(now, held, refused) {
                Step::Claim(term) => {
                    let (id, target) = Lease::key("telegram-poll", bot.bot_id(), term);
                    match shared.claim_close(&id, &target, now).await {
                        Ok(true) => {
                            if held.is_none_or(|h| h + 1 != term) {
                                tracing::info!("this bridge polls Telegram for the bridges sharing its store");
                            }
                            held = Some(term);
                        }
                        Ok(false) => refused = Some(term),
                        Err(e) => {
                            tracing::warn!("cannot claim polling Telegram: {e}");
                            refused = Some(term);
                        }
                    }
                    continue;
                }
                step => step,
            },
        };
        let deadline = match step {
            Step::Claim(_) => continue,
            Step::Wait(ms) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => continue,
                    _ = crate::hub::stopped(&mut stop) => return,
                }
            }
            Step::Poll(ms) => Duration::from_millis(ms),
        };
        // The request ends within the lease: the long poll's wait, and the rest for the way.
        let wait = bot.poll.min(deadline.saturating_sub(Duration::from_secs(1)));
        let got = tokio::select! {
            got = bot.updates(&notifier.http, offset, wait, 100, deadline) => got,
            _ = crate::hub::stopped(&mut stop) => return,
        };
        let pause = match got {
            Ok(updates) if updates.is_empty() => {
                backoff = Duration::from_secs(1);
                told = None;
                continue;
            }
            Ok(updates) => {
                let before = offset;
                for value in &updates {
                    let Some(update) = Update::parse(value) else { continue };
                    offset = Some(offset.map_or(update.id + 1, |o| o.max(update.id + 1)));
                    handle(&notifier, &bot, update.event).await;
                }
                if offset == before {
                    // Nothing to confirm them by: asking again at once would get them again.
                    ("Telegram's updates have no update_id".to_owned(), backoff)
                } else {
                    backoff = Duration::from_secs(1);
                    told = None;
                    // Confirmed at once, so the bridge that polls next (or this one,
                    // restarted) does not carry them out again; within the lease, if any.
                    let until = match (notifier.shared.as_deref(), held) {
                        (Some(_), Some(h)) => (lease.end(h) - lease.margin()).saturating_sub(notifier.bridge.now_ms()),
                        (Some(_), None) => 0,
                        (None, _) => 10_000,
                    };
                    if until >= 1_000 {
                        let wait = Duration::from_millis(until.min(10_000));
                        let _ = bot.updates(&notifier.http, offset, Duration::ZERO, 1, wait).await;
                    }
                    continue;
                }
            }
            Err(Failed::Conflict(why)) => {
                let hint = if why.contains("webhook") {
                    "a webhook is set for this bot; askuser polls instead: remove it (deleteWebhook)"
                } else {
                    "another program polls this bot's updates; only one may (bridges sharing a store take turns by themselves)"
                };
                (format!("Telegram said {why}: {hint}"), Duration::from_secs(30))
            }
            Err(Failed::Sent(Sent::Retry { why, after })) => (why, after.unwrap_or(backoff)),
            Err(Failed::Sent(Sent::Refused(why))) => (why, Duration::from_secs(60).max(backoff)),
            Err(Failed::Sent(other)) => (format!("{other:?}"), backoff),
        };
        let (why, after) = pause;
        let why = super::channel::scrub(&why, &[&bot.token]);
        // Said once while it lasts, not every try.
        if told.as_deref() != Some(why.as_str()) {
            tracing::warn!("cannot fetch the Telegram bot's updates: {why}; trying again");
            told = Some(why);
        }
        backoff = (backoff * 2).min(Duration::from_secs(60));
        tokio::select! {
            _ = tokio::time::sleep(after.min(Duration::from_secs(300))) => {}
            _ = crate::hub::stopped(&mut stop) => return,
        }
    }
}

/// Carries out one update.
async fn handle(notifier: &Arc<Notifier>, bot: &TelegramBot, event: Event) {
    match event {
        Event::Press(press) => pressed(notifier, bot, press).await,
        Event::Said(said) => replied(notifier, bot, said).await,
        Event::Other => {}
    }
}

/// The set at message `message_id` of `chat`, answered as `decide` says, by `from`
/// ([`Notifier::answer_from_chat`]): what to tell them if it was not (ready to send:
/// agent text in it defused).
async fn act(
    notifier: &Arc<Notifier>,
    chat: i64,
    message_id: i64,
    from: &telegram::User,
    decide: impl FnOnce(&QuestionRecord) -> Result<Outcome, String>,
) -> Result<(), String> {
    let key = format!("telegram:{chat}");
    let taken = notifier.answer_from_chat(&key, &message_id.to_string(), &from.answered_by(), |record| decide(record).map(Some)).await;
    taken.map(drop).map_err(|not| not.told(telegram::defuse))
}

/// A button pressed: the set answered or declined, and the press answered (with why not).
async fn pressed(notifier: &Arc<Notifier>, bot: &TelegramBot, press: Press) {
    let http = &notifier.http;
    let (Some(chat), Some(message_id)) = (press.chat, press.message_id) else {
        return bot.answer_press(http, &press.id, Some("This button is not one of askuser's.")).await;
    };
    if !bot.allows(chat) {
        tracing::warn!(chat, user = press.from.id, "a button was pressed in a Telegram chat askuser does not send to: ignored");
        return bot.answer_press(http, &press.id, Some("askuser takes no answers from this chat.")).await;
    }
    let data = press.data.clone().unwrap_or_default();
    match act(notifier, chat, message_id, &press.from, |record| telegram::pressed(record, &data)).await {
        Ok(()) => bot.answer_press(http, &press.id, None).await,
        Err(why) => bot.answer_press(http, &press.id, Some(&why)).await,
    }
}

/// A message in a chat: a reply to one of the bot's messages answers its set.
async fn replied(notifier: &Arc<Notifier>, bot: &TelegramBot, said: Said) {
    let http = &notifier.http;
    if said.from.as_ref().is_some_and(|f| f.is_bot) {
        return;
    }
    if !bot.allows(said.chat) {
        let kind = if said.private { "a private chat" } else { "a group" };
        return tracing::warn!(
            chat = said.chat,
            "a message from {kind} askuser does not send to: ignored (to send there, add --notify-telegram {})",
            said.chat
        );
    }
    let tell = |text: String| async move {
        if let Sent::Refused(e) | Sent::Retry { why: e, .. } = bot.tell(http, said.chat, said.message_id, &text).await {
            tracing::warn!("cannot tell a Telegram chat why its answer was not taken: {e}");
        }
    };
    let from = said.from.clone().unwrap_or_default();
    // A typed command (`approve a1b2c3`): anywhere, but within a reply only when its
    // second word is an id (else the reply's words answer the message it replies to).
    let command = said.text.as_deref().and_then(|text| super::command::parse(text, said.reply_to.is_some()));
    if let Some(command) = command {
        let told = match command {
            Ok(command) => {
                let key = format!("telegram:{}", said.chat);
                let reply = |record: &QuestionRecord, text: &str| {
                    telegram::replied(record, text, Some(&telegram::open_link(&notifier.base, &record.id)))
                };
                let done = notifier.command_from_chat(&key, &from.answered_by(), &command, telegram::allowable, reply).await;
                done.unwrap_or_else(|not| not.told(telegram::defuse))
            }
            Err(how) => telegram::defuse(&how),
        };
        return tell(told).await;
    }
    let Some((original, original_from)) = said.reply_to.clone() else {
        if said.private {
            tell(format!(
                "askuser sends its questions here. To answer one, press its buttons or reply to its message. {}",
                super::command::USAGE
            ))
            .await;
        }
        return;
    };
    if original_from.as_ref().is_none_or(|f| f.id.to_string() != bot.bot_id()) {
        return; // a reply to someone else
    }
    let Some(text) = said.text.clone() else {
        return tell("Reply with text: an option's number, or your answer in words.".into()).await;
    };
    let decided = act(notifier, said.chat, original, &from, |record| {
        let open = telegram::open_link(&notifier.base, &record.id);
        telegram::replied(record, &text, Some(&open)).map(Outcome::Answer)
    })
    .await;
    if let Err(why) = decided {
        tell(why).await;
    }
}

#[async_trait::async_trait]
impl super::Channel for TelegramBot {
    fn name(&self) -> &'static str {
        "telegram"
    }

    /// Its token (in every Bot API path).
    fn secrets(&self) -> Vec<&str> {
        vec![self.token.as_str()]
    }

    async fn routes(&self, _: &Notifier, record: &QuestionRecord) -> Vec<super::Route> {
        super::channel::route(self.chat.as_ref(), &self.routes, record, &self.rules).into_iter().collect()
    }

    /// Its buttons and replies answer: no answer links.
    async fn post(&self, notifier: &Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        let Ok(chat) = route.to.parse::<i64>() else { return Sent::Refused(format!("{:?} is not a Telegram chat id", route.to)) };
        let open = telegram::open_link(notifier.base(), &notice.record.id);
        let message = match notice.reminder.as_deref() {
            Some(line) => telegram::reminder(&notice.record, Some(&open), Some(line)),
            None => telegram::message(&notice.record, Some(&open)),
        };
        self.post(notifier.http(), chat, &message).await
    }

    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, notifier: &Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        match (to.parse::<i64>(), message.map(str::parse::<i64>)) {
            (Ok(chat), Some(Ok(message_id))) => self.edit(notifier.http(), chat, message_id, &telegram::answered(record)).await,
            _ => Sent::Delivered,
        }
    }

    /// Polls for presses and replies.
    fn start(self: Arc<Self>, notifier: Arc<Notifier>) {
        tokio::spawn(poll(notifier, (*self).clone()));
    }
}
