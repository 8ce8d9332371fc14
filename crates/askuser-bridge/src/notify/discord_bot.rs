//! The Discord bot (`--notify-discord`): posts each question set to a channel as the
//! message [`super::discord::message`] builds, edits it to what became of the set once it
//! closes, and takes answers from its components over the gateway (no public URL, no
//! interactions endpoint): one connection the notifier starts, which only the bridge
//! holding its lease keeps when bridges share a store ([`super::channel::Turns`]; Discord
//! hands each interaction to the bot's session, and two would both act on it).
//!
//! The gateway: `GET /gateway/bot` gives its address; Hello says the heartbeat interval,
//! the bot sends a heartbeat at it (the first after a random part of it) and expects
//! each acknowledged before the next, else the connection is dead and is resumed; it
//! identifies with its token and the intents for new messages
//! ([`super::discord::INTENTS`]), keeps READY's session, resume address and bot user id
//! and the last sequence number, and after a dropped socket, a Reconnect (op 7) or a
//! resumable Invalid Session (op 9) resumes there with them, so what happened meanwhile
//! is replayed. A close code that says the token or the intents
//! are wrong is not retried at once (a minute's pause, said once in the log).
//!
//! An interaction is answered within Discord's 3 s at
//! `POST /interactions/{id}/{token}/callback`: the message updated to what became of the
//! set (type 7), a modal for the person's words (type 9), or what went wrong, which only
//! they see (type 4, ephemeral). Calls go to the REST API with the bridge's notification
//! client (no redirects, the bridge's TLS), the token in the `Authorization` header only.
//! Only the configured channels answer: an interaction in another is refused and logged.
//!
//! A typed command (`@askuser approve a1b2c3`, [`super::command`]) comes as a
//! `MESSAGE_CREATE` that mentions the bot (or in a direct message): Discord gives a bot
//! without the privileged `MESSAGE_CONTENT` intent the text of those only, which is all it
//! reads. It answers the set it names if that set was posted to the channel, by
//! [`super::Notifier::command_from_chat`], and the message gets a reply.

use super::channel::{Places, Retry, SettingsError, Turn, Turns};
use super::discord::{self, op, Act, Frame, Interaction};
use super::push::Sent;
use super::{Notifier, Rules};
use askuser_core::protocol::QuestionRecord;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Discord's REST API.
pub const API: &str = "https://discord.com/api/v10/";
/// The gateway connection's lease term, for bridges sharing a store.
pub const LEASE: Duration = Duration::from_secs(30);
/// How long an interaction's answer may take to decide before the interaction is only
/// acknowledged: within Discord's 3 s, with room for the callback's own way there.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(2000);

/// How one Discord bot is set up (`askuser serve --notify-discord`, docs/notify.md).
#[derive(Clone)]
pub struct DiscordBot {
    /// The bot's token (Developer Portal → Bot → Reset Token).
    pub token: String,
    /// Where the REST API is (ends with `/`): [`API`], or a test's stand-in.
    pub api: reqwest::Url,
    /// Where question sets for no one go, and everyone else's once they escalate.
    pub channel: Option<String>,
    /// Where question sets for a person or a team go (name → channel id).
    pub routes: BTreeMap<String, String>,
    /// Which question sets it hears of, and when.
    pub rules: Rules,
    /// The gateway connection's lease term among bridges sharing a store ([`LEASE`]).
    pub lease: Duration,
    /// How long an interaction waits for its answer to be decided before it is only
    /// acknowledged ([`ANSWER_WITHIN`]; Discord fails it after 3 s; zero: always only
    /// acknowledged at once).
    pub answer_within: Duration,
}

/// Says where it posts, never the token.
impl std::fmt::Debug for DiscordBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordBot").field("api", &self.api.as_str()).field("channel", &self.channel).field("routes", &self.routes).finish()
    }
}

impl DiscordBot {
    /// The bot `--notify-discord [NAME=]CHANNEL_ID` (`places`), `--discord-bot-token` and
    /// `--discord-api` set up, hearing of sets as `rules` say.
    pub fn configure(places: &[String], token: Option<&str>, api: &str, rules: Rules) -> Result<DiscordBot, SettingsError> {
        let channel_id = |c: &str| match discord::is_snowflake(c) {
            true => Ok(c.to_owned()),
            false => Err(SettingsError::invalid(
                "notify-discord",
                "a channel id (digits: Developer Mode on, then the channel's Copy Channel ID)",
                c,
            )),
        };
        let places = Places::parse("notify-discord", "CHANNEL_ID", "channel", places, channel_id)?;
        let token = match token.map(str::trim) {
            Some(t) if !t.is_empty() => t.to_owned(),
            _ => {
                return Err(SettingsError::Missing {
                    channel: "notify-discord",
                    what: "the bot's token",
                    flag: "discord-bot-token",
                    var: "ASKUSER_DISCORD_BOT_TOKEN",
                })
            }
        };
        // Checked without showing it: it is a password.
        if !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(SettingsError::Invalid {
                flag: "discord-bot-token",
                expected: "the bot's token (letters, digits, '.', '-' and '_')".into(),
                got: format!("{} characters that are not one", token.chars().count()),
            });
        }
        let api = super::channel::api_url("discord-api", api)?;
        Ok(DiscordBot { token, api, channel: places.shared, routes: places.own, rules, lease: LEASE, answer_within: ANSWER_WITHIN })
    }

    /// Whether `channel` is one the bot posts to (and so may answer).
    pub fn allows(&self, channel: &str) -> bool {
        self.channel.as_deref() == Some(channel) || self.routes.values().any(|c| c == channel)
    }

    /// Calls `method` `path` (under the API) with `body`: its JSON when Discord says 2xx.
    async fn call(&self, http: &reqwest::Client, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, Sent> {
        let url = self.api.join(path).map_err(|e| Sent::Refused(format!("Discord's API address: {e}")))?;
        let mut request = http.request(method, url).header("authorization", format!("Bot {}", self.token)).timeout(Duration::from_secs(30));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Err(Sent::Retry { why: format!("cannot reach Discord: {}", e.without_url()), after: None }),
        };
        let status = response.status();
        if status == reqwest::StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        if status.is_redirection() {
            return Err(Sent::Refused(format!("Discord answered {status}; askuser does not follow redirects")));
        }
        let answer: Value = response.json().await.unwrap_or_default();
        if status.is_success() {
            return Ok(answer);
        }
        let message: String = answer["message"].as_str().unwrap_or("no message").chars().take(200).collect();
        Err(match status.as_u16() {
            429 => Sent::Retry {
                why: format!("Discord said {message}"),
                after: Some(Duration::from_secs_f64(answer["retry_after"].as_f64().unwrap_or(1.0).clamp(0.5, 3600.0))),
            },
            500..=599 => Sent::Retry { why: format!("Discord said {status} {message}"), after: None },
            _ => Sent::Refused(format!("Discord refused {path}: {status} {message} ({})", answer["code"])),
        })
    }

    /// Posts `message` to `channel`: [`Sent::Posted`] with the message's id.
    pub async fn post(&self, http: &reqwest::Client, channel: &str, message: &discord::Outgoing) -> Sent {
        let path = format!("channels/{channel}/messages");
        match self.call(http, reqwest::Method::POST, &path, Some(&message.fields())).await {
            Ok(posted) => match posted["id"].as_str() {
                Some(id) => Sent::Posted(id.to_owned()),
                None => Sent::Refused("Discord's answer to a new message has no id".into()),
            },
            Err(failed) => failed,
        }
    }

    /// Replaces message `id` in `channel` with `message`.
    pub async fn edit(&self, http: &reqwest::Client, channel: &str, id: &str, message: &discord::Outgoing) -> Sent {
        let path = format!("channels/{channel}/messages/{id}");
        match self.call(http, reqwest::Method::PATCH, &path, Some(&message.fields())).await {
            Ok(_) => Sent::Delivered,
            Err(failed) => failed,
        }
    }

    /// Answers interaction `interaction` with `callback` (`{"type", "data"}`).
    async fn respond(&self, http: &reqwest::Client, interaction: &Interaction, callback: Value) {
        let path = format!("interactions/{}/{}/callback", interaction.id, interaction.token);
        if let Err(failed) = self.call(http, reqwest::Method::POST, &path, Some(&callback)).await {
            let why = match failed {
                Sent::Refused(why) | Sent::Retry { why, .. } => why,
                other => format!("{other:?}"),
            };
            // The interaction's token is in the path: never shown.
            tracing::warn!("cannot answer a Discord interaction: {}", super::channel::scrub(&why, &[&self.token, &interaction.token]));
        }
    }

    /// Tells the one who acted `text` (askuser's words), only them.
    async fn tell(&self, http: &reqwest::Client, interaction: &Interaction, text: &str) {
        let data =
            json!({"content": discord::cut(text, discord::MAX_CONTENT), "flags": discord::EPHEMERAL, "allowed_mentions": {"parse": []}});
        self.respond(http, interaction, json!({"type": discord::REPLY, "data": data})).await
    }

    /// Tells the one who acted `text` after their interaction was acknowledged: a
    /// follow-up message only they see.
    async fn follow_up(&self, http: &reqwest::Client, interaction: &Interaction, text: &str) {
        let Some(application) = interaction.application_id.as_deref() else { return };
        let data =
            json!({"content": discord::cut(text, discord::MAX_CONTENT), "flags": discord::EPHEMERAL, "allowed_mentions": {"parse": []}});
        let path = format!("webhooks/{application}/{}", interaction.token);
        if let Err(failed) = self.call(http, reqwest::Method::POST, &path, Some(&data)).await {
            let why = match failed {
                Sent::Refused(why) | Sent::Retry { why, .. } => why,
                other => format!("{other:?}"),
            };
            tracing::warn!(
                "cannot tell a Discord user why their answer was not taken: {}",
                super::channel::scrub(&why, &[&self.token, &interaction.token])
            );
        }
    }

    /// The gateway's address (`GET /gateway/bot`).
    async fn gateway_address(&self, http: &reqwest::Client) -> Result<String, String> {
        let answer = self.call(http, reqwest::Method::GET, "gateway/bot", None).await.map_err(|failed| match failed {
            Sent::Refused(why) | Sent::Retry { why, .. } => why,
            other => format!("{other:?}"),
        })?;
        let url = answer["url"].as_str().ok_or("Discord's /gateway/bot answer has no url")?;
        Ok(url.to_owned())
    }
}

/// Carries out one interaction: the set answered or declined (the message updated), the
/// modal opened, or the one who acted told why not; answered within Discord's 3 s.
async fn interacted(notifier: Arc<Notifier>, bot: DiscordBot, interaction: Interaction) {
    let http = notifier.http();
    if ![discord::COMPONENT, discord::MODAL_SUBMIT].contains(&interaction.kind) {
        return bot.tell(http, &interaction, "askuser answers only its own messages' buttons.").await;
    }
    let (Some(channel), Some(message)) = (interaction.channel_id.clone(), interaction.message_id.clone()) else {
        return bot.tell(http, &interaction, "That is not one of askuser's messages.").await;
    };
    if !bot.allows(&channel) {
        tracing::warn!(channel, user = interaction.user.id, "a Discord interaction in a channel askuser does not post to: ignored");
        return bot.tell(http, &interaction, "askuser takes no answers from this channel.").await;
    }
    let key = format!("discord:{channel}");
    // Decided in its own task, so that what Discord waits for goes out in time even when
    // the store is slow: past `answer_within`, the press is acknowledged as it is and
    // what became of it follows (the message edited when the set closes, or a follow-up
    // only the presser sees).
    let decided = tokio::spawn({
        let (notifier, interaction, key, message) = (notifier.clone(), interaction.clone(), key.clone(), message.clone());
        async move {
            let mut modal = None;
            let taken = notifier
                .answer_from_chat(&key, &message, &interaction.user.answered_by(), |record| match discord::act(record, &interaction) {
                    Ok(Act::Outcome(outcome)) => Ok(Some(outcome)),
                    Ok(Act::Modal(m)) => {
                        modal = Some(m);
                        Ok(None)
                    }
                    Err(e) => Err(e),
                })
                .await;
            let taken = taken.map_err(|not| not.told(discord::escape));
            let answered = match taken {
                Ok(true) => match notifier.question_of(&key, &message).await {
                    Ok(Some(id)) => notifier.bridge.get(&id).await.ok(),
                    _ => None,
                },
                _ => None,
            };
            (taken, modal, answered)
        }
    });
    let mut decided = std::pin::pin!(decided);
    let waited = match bot.answer_within.is_zero() {
        true => None,
        false => tokio::select! {
            biased;
            _ = tokio::time::sleep(bot.answer_within) => None,
            done = &mut decided => Some(done),
        },
    };
    let (taken, modal, answered) = match waited {
        Some(Ok(done)) => done,
        Some(Err(_)) => return,
        None => {
            bot.respond(http, &interaction, json!({"type": discord::DEFERRED_UPDATE})).await;
            if let Ok((Err(why), _, _)) = decided.await {
                bot.follow_up(http, &interaction, &why).await;
            }
            return;
        }
    };
    match (taken, modal, answered) {
        (Ok(true), _, Some(record)) => {
            bot.respond(http, &interaction, json!({"type": discord::UPDATE, "data": discord::answered(&record).fields()})).await
        }
        (Ok(_), Some(modal), _) => bot.respond(http, &interaction, json!({"type": discord::MODAL, "data": modal})).await,
        (Ok(_), None, _) => bot.respond(http, &interaction, json!({"type": discord::DEFERRED_UPDATE})).await,
        (Err(why), _, _) => bot.tell(http, &interaction, &why).await,
    }
}

/// A message someone wrote: a typed command to the bot (`@askuser approve a1b2c3`, or in
/// a direct message) in one of its channels answers the set it names, if that set was
/// posted there; the message gets a reply saying what was done or why not. Messages not
/// to the bot are not read (Discord gives their text only to a bot with the privileged
/// `MESSAGE_CONTENT` intent, which askuser does not ask for).
async fn heard(notifier: Arc<Notifier>, bot: DiscordBot, said: discord::Said, bot_id: String) {
    let Some(text) = said.to_bot(&bot_id) else { return };
    if !bot.allows(&said.channel_id) {
        return tracing::warn!(
            channel = said.channel_id,
            user = said.author.id,
            "a Discord message to the bot in a channel askuser does not post to: ignored (to post there, add --notify-discord {})",
            said.channel_id
        );
    }
    let told = match super::command::parse(text, false) {
        Some(Ok(command)) => {
            let key = format!("discord:{}", said.channel_id);
            let reply = |record: &QuestionRecord, text: &str| {
                let open = super::telegram::open_link(notifier.base(), &record.id);
                super::command::reply(record, text, Some(&open), discord::allowable, str::to_owned)
            };
            let done = notifier.command_from_chat(&key, &said.author.answered_by(), &command, discord::allowable, reply).await;
            done.unwrap_or_else(|not| not.told(str::to_owned))
        }
        Some(Err(how)) => how,
        None => format!("askuser posts its questions here. To answer one, press its buttons. {}", super::command::USAGE),
    };
    let path = format!("channels/{}/messages", said.channel_id);
    // `reply` escapes the whole text.
    if let Err(Sent::Refused(e) | Sent::Retry { why: e, .. }) =
        bot.call(notifier.http(), reqwest::Method::POST, &path, Some(&discord::reply(&said.id, &told))).await
    {
        tracing::warn!("cannot answer a command in Discord: {}", super::channel::scrub(&e, &[&bot.token]));
    }
}

/// What the gateway session has for a resume, and the bot's own user id (READY's).
struct Session {
    id: String,
    resume_url: String,
    bot_id: String,
}

/// Why a gateway connection ended.
enum Ended {
    /// Resume (or identify, if the session is gone) at once.
    Again,
    /// The session is gone: identify afresh.
    SessionGone,
    /// Pause this long first, saying why.
    Pause(String, Duration),
    /// The term is over (with bridges sharing a store): the socket stays.
    TermOver,
    /// The bridge stops.
    Stopped,
}

/// One open gateway socket, with its heartbeat.
struct Connection {
    socket: crate::tls::Socket,
    interval: Duration,
    next_beat: tokio::time::Instant,
    acked: bool,
    opened: tokio::time::Instant,
}

/// Keeps the gateway connection while the bridge runs (with bridges sharing a store,
/// while this one holds it), carrying out interactions.
async fn gateway(notifier: Arc<Notifier>, bot: DiscordBot) {
    let mut turns = Turns::new("discord-gateway", super::channel::fingerprint(&bot.token), bot.lease);
    let mut session: Option<Session> = None;
    let mut seq: Option<u64> = None;
    let mut connection: Option<Connection> = None;
    let mut retry = Retry::default();
    loop {
        let run = match turns.next(&notifier, Duration::from_secs(3600)).await {
            Turn::Run(run) => run,
            Turn::Wait(wait) => {
                if let Some(mut c) = connection.take() {
                    let _ = c.socket.close(None).await;
                }
                tokio::select! {
                    _ = tokio::time::sleep(wait) => continue,
                    _ = notifier.stopped() => return,
                }
            }
        };
        let until = tokio::time::Instant::now() + run;
        if connection.is_none() {
            match connect(&notifier, &bot, session.as_ref(), seq).await {
                Ok(c) => connection = Some(c),
                Err(why) => {
                    let why = super::channel::scrub(&why, &[&bot.token]);
                    if retry.tell(&why) {
                        tracing::warn!("cannot connect to Discord's gateway: {why}; trying again");
                    }
                    let pause = retry.next(run);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue,
                        _ = notifier.stopped() => return,
                    }
                }
            }
        }
        let Some(c) = connection.as_mut() else { continue };
        let ended = run_connection(&notifier, &bot, c, &mut session, &mut seq, until).await;
        // A connection that ends as soon as it is made (a resume refused over and over)
        // is not made again at once: the pause grows as when it cannot be made at all.
        let brief = c.opened.elapsed() < Duration::from_secs(5);
        if !matches!(ended, Ended::TermOver) {
            if let Some(mut c) = connection.take() {
                let _ = c.socket.close(None).await;
            }
        }
        if !brief {
            retry.lasted();
        }
        if brief && matches!(ended, Ended::Again | Ended::SessionGone) {
            let pause = retry.next(Duration::MAX);
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = notifier.stopped() => return,
            }
        }
        match ended {
            Ended::TermOver | Ended::Again => {}
            Ended::Stopped => return,
            Ended::SessionGone => {
                (session, seq) = (None, None);
            }
            Ended::Pause(why, pause) => {
                if retry.tell(&why) {
                    tracing::warn!("Discord's gateway: {why}");
                }
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = notifier.stopped() => return,
                }
            }
        }
    }
}

/// Opens a gateway socket: to the session's resume address (and resumes it), else to
/// `GET /gateway/bot`'s (and identifies); Hello's interval taken first.
async fn connect(notifier: &Notifier, bot: &DiscordBot, session: Option<&Session>, seq: Option<u64>) -> Result<Connection, String> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as WsFrame;
    let base = match session {
        Some(s) => s.resume_url.clone(),
        None => bot.gateway_address(notifier.http()).await?,
    };
    let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(discord::gateway_url(&base))
        .map_err(|e| format!("Discord's gateway address: {e}"))?;
    let mut socket =
        crate::tls::websocket(request, None).await.map_err(|e| format!("cannot open Discord's gateway: {}", crate::tls::explain(&e)))?;
    let hello = tokio::time::timeout(Duration::from_secs(20), socket.next()).await;
    let interval = match hello {
        Ok(Some(Ok(WsFrame::Text(text)))) => match Frame::parse(&text) {
            Ok(f) if f.op == op::HELLO => f.d["heartbeat_interval"].as_u64().filter(|ms| *ms >= 100),
            _ => None,
        },
        _ => None,
    };
    let interval = Duration::from_millis(interval.ok_or("Discord's gateway sent no Hello with a heartbeat interval")?);
    let first = match session {
        Some(s) => discord::resume(&bot.token, &s.id, seq),
        None => discord::identify(&bot.token),
    };
    socket.send(WsFrame::text(first)).await.map_err(|e| format!("Discord's gateway: {e}"))?;
    // The first heartbeat after a random part of the interval, as Discord asks.
    let jitter = interval.mul_f64(f64::from(notifier.now_ms() as u32 % 1000) / 1000.0);
    tracing::info!("connected to Discord's gateway");
    let now = tokio::time::Instant::now();
    Ok(Connection { socket, interval, next_beat: now + jitter, acked: true, opened: now })
}

/// Reads the gateway until the connection ends or `until`.
async fn run_connection(
    notifier: &Arc<Notifier>,
    bot: &DiscordBot,
    c: &mut Connection,
    session: &mut Option<Session>,
    seq: &mut Option<u64>,
    until: tokio::time::Instant,
) -> Ended {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as WsFrame;
    loop {
        let got = tokio::select! {
            got = c.socket.next() => got,
            _ = tokio::time::sleep_until(c.next_beat) => {
                if !c.acked {
                    // The last heartbeat was never acknowledged: a dead connection.
                    return Ended::Again;
                }
                if c.socket.send(WsFrame::text(discord::heartbeat(*seq))).await.is_err() {
                    return Ended::Again;
                }
                c.acked = false;
                c.next_beat = tokio::time::Instant::now() + c.interval;
                continue;
            }
            _ = tokio::time::sleep_until(until) => return Ended::TermOver,
            _ = notifier.stopped() => return Ended::Stopped,
        };
        let text = match got {
            Some(Ok(WsFrame::Text(text))) => text,
            Some(Ok(WsFrame::Close(frame))) => {
                let code = frame.map_or(1000, |f| u16::from(f.code));
                if let Some(why) = discord::fatal_close(code) {
                    return Ended::Pause(why.to_owned(), Duration::from_secs(60));
                }
                return if discord::session_ended(code) { Ended::SessionGone } else { Ended::Again };
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Ended::Again,
        };
        let frame = match Frame::parse(&text) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("{e}");
                continue;
            }
        };
        match frame.op {
            op::DISPATCH => {
                if let Some(s) = frame.s {
                    *seq = Some(seq.map_or(s, |old| old.max(s)));
                }
                match frame.t.as_deref() {
                    Some("READY") => {
                        let id = frame.d["session_id"].as_str().unwrap_or_default();
                        let resume_url = frame.d["resume_gateway_url"].as_str().unwrap_or_default();
                        let bot_id = frame.d["user"]["id"].as_str().unwrap_or_default();
                        *session = (!id.is_empty() && !resume_url.is_empty()).then(|| Session {
                            id: id.to_owned(),
                            resume_url: resume_url.to_owned(),
                            bot_id: bot_id.to_owned(),
                        });
                    }
                    Some("RESUMED") => tracing::info!("resumed the Discord gateway session"),
                    Some("INTERACTION_CREATE") => match Interaction::parse(&frame.d) {
                        Some(interaction) => {
                            tokio::spawn(interacted(notifier.clone(), bot.clone(), interaction));
                        }
                        None => tracing::warn!("a Discord interaction without an id or a token: ignored"),
                    },
                    Some("MESSAGE_CREATE") => {
                        let bot_id = session.as_ref().map(|s| s.bot_id.clone()).unwrap_or_default();
                        if let Some(said) = discord::Said::parse(&frame.d) {
                            tokio::spawn(heard(notifier.clone(), bot.clone(), said, bot_id));
                        }
                    }
                    _ => {}
                }
            }
            // Discord asks for one now.
            op::HEARTBEAT if c.socket.send(WsFrame::text(discord::heartbeat(*seq))).await.is_err() => return Ended::Again,
            op::HEARTBEAT_ACK => c.acked = true,
            op::RECONNECT => return Ended::Again,
            op::INVALID_SESSION => {
                return match frame.d.as_bool() {
                    Some(true) => Ended::Again,
                    _ => Ended::SessionGone,
                }
            }
            _ => {}
        }
    }
}

#[async_trait::async_trait]
impl super::Channel for DiscordBot {
    fn name(&self) -> &'static str {
        "discord"
    }

    /// Where it posts and how answers come (never the token).
    fn describe(&self, _: &std::path::Path) -> Option<String> {
        let places: Vec<&str> = self.channel.iter().chain(self.routes.values()).map(String::as_str).collect();
        Some(format!("question sets go to Discord channel(s) {}; buttons answer over Discord's gateway", places.join(", ")))
    }

    /// Its token (in every REST call's header and in Identify).
    fn secrets(&self) -> Vec<&str> {
        vec![self.token.as_str()]
    }

    async fn routes(&self, _: &Notifier, record: &QuestionRecord) -> Vec<super::Route> {
        super::channel::route(self.channel.as_ref(), &self.routes, record, &self.rules).into_iter().collect()
    }

    /// Its components answer: no answer links.
    async fn post(&self, notifier: &Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        let open = Some(notice.message.open.as_str());
        let message = match notice.reminder.as_deref() {
            Some(line) => discord::reminder(&notice.record, open, Some(line)),
            None => discord::message(&notice.record, open),
        };
        self.post(notifier.http(), &route.to, &message).await
    }

    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, notifier: &Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        match message {
            Some(id) => self.edit(notifier.http(), to, id, &discord::answered(record)).await,
            None => Sent::Delivered,
        }
    }

    /// The gateway connection.
    fn start(self: Arc<Self>, notifier: Arc<Notifier>) {
        tokio::spawn(gateway(notifier, (*self).clone()));
    }
}
