//! The Slack app (`--notify-slack`): posts each question set to a channel as the
//! message [`super::slack::message`] builds, edits it to what became of the set once it
//! closes, and tells a person alone why a press did not count. Its buttons answer at
//! `POST /slack/actions` ([`ACTIONS`], its [`super::Channel::receive`]), each request
//! checked against the app's signing secret, what it chose taken by
//! [`super::Notifier::answer_from_chat`].
//!
//! # Socket Mode: no public URL
//! With an app-level token (`xapp-…`, `--slack-app-token`) the bridge fetches the same
//! interactions itself: it asks `apps.connections.open` for a WebSocket URL, connects,
//! and acknowledges each envelope at once (Slack wants it within 3 s) before carrying
//! out what it carries, through the same code as `/slack/actions` ([`SlackApp::interact`]).
//! A `disconnect` envelope (Slack refreshes connections every few hours) or a closed
//! socket opens a new one. Slack hands each envelope to one of an app's connections, so
//! bridges sharing a store keep one between them ([`super::channel::Turns`]); the signed
//! HTTP endpoint stays for a bridge that has a public URL (it is served only when the
//! signing secret is given).
//!
//! # Typed commands
//! Messages people write in the app's channels come as Events API `message` events, at
//! `POST /slack/events` ([`EVENTS`], signed as `/slack/actions` is) or in Socket Mode's
//! `events_api` envelopes; a command among them (`approve ID`, [`super::command`]) is taken
//! by [`super::Notifier::command_from_chat`] for a set posted to that channel, and answered
//! in the message's thread. In a shared channel only a first word that is a command and a
//! second that is an id make a command (people talk there); in a direct message with the
//! app, or after its mention (`@askuser …`), anything else gets how commands are written.
//!
//! Calls go to Slack's Web API with the bridge's notification client (no redirects, the
//! bridge's TLS): `chat.postMessage`, `chat.update` and `chat.postEphemeral` (to tell
//! only the person who pressed a button what was wrong). A call Slack refuses for good
//! (`channel_not_found`, `invalid_auth`, ...) is not tried again; a rate limit (429) or an
//! outage is, with the notifier's backoff or Slack's `Retry-After`.

use super::channel::{Places, Retry, SettingsError, Turn, Turns};
use super::push::{outcome, Sent};
use super::slack::{self, Interaction};
use super::Rules;
use askuser_core::protocol::QuestionRecord;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Slack's Web API.
pub const API: &str = "https://slack.com/api/";
/// Where Slack posts what a person did in a message (the app's "Interactivity" request URL).
pub const ACTIONS: &str = "/slack/actions";
/// Where Slack posts the events the app subscribed to (its "Event Subscriptions" request
/// URL): messages in its channels, read for typed commands.
pub const EVENTS: &str = "/slack/events";
/// The Socket Mode connection's lease term, for bridges sharing a store.
pub const LEASE: Duration = Duration::from_secs(30);

/// How one Slack app is set up (`askuser serve --notify-slack`, docs/notify.md).
#[derive(Clone)]
pub struct SlackApp {
    /// The bot token (`xoxb-…`): posts and edits the messages.
    pub token: String,
    /// The signing secret: proves a request to `/slack/actions` comes from Slack (empty:
    /// no such endpoint, Socket Mode only).
    pub signing_secret: String,
    /// The app-level token (`xapp-…`, with `connections:write`): Socket Mode.
    pub app_token: Option<String>,
    /// The Socket Mode connection's lease term among bridges sharing a store ([`LEASE`]).
    pub lease: Duration,
    /// Where the Web API is (ends with `/`): [`API`], or a test's stand-in.
    pub api: reqwest::Url,
    /// Where question sets for no one go, and everyone else's once they escalate.
    pub channel: Option<String>,
    /// Where question sets for a person or a team go (name → channel id).
    pub routes: BTreeMap<String, String>,
    /// Which question sets it hears of, and when.
    pub rules: Rules,
}

/// Says where it posts, never the token or the secret.
impl std::fmt::Debug for SlackApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackApp")
            .field("api", &self.api.as_str())
            .field("socket_mode", &self.app_token.is_some())
            .field("channel", &self.channel)
            .field("routes", &self.routes)
            .finish()
    }
}

impl SlackApp {
    /// The app `--notify-slack [NAME=]CHANNEL` (`places`), `--slack-bot-token`,
    /// `--slack-signing-secret`, `--slack-app-token` and `--slack-api` set up, hearing of
    /// sets as `rules` say. The signing secret may be left out with an app token (Socket
    /// Mode only).
    pub fn configure(
        places: &[String],
        bot_token: Option<&str>,
        signing_secret: Option<&str>,
        app_token: Option<&str>,
        api: &str,
        rules: Rules,
    ) -> Result<SlackApp, SettingsError> {
        let channel_id = |c: &str| {
            let ok = c.len() >= 3 && c.starts_with(['C', 'G', 'D']) && c.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
            match ok {
                true => Ok(c.to_owned()),
                false => Err(SettingsError::invalid("notify-slack", "a channel id (C…, G… or D…, as Slack's channel details show it)", c)),
            }
        };
        let places = Places::parse("notify-slack", "CHANNEL", "channel", places, channel_id)?;
        let given = |value: Option<&str>, what, flag, var| match value.map(str::trim) {
            Some(v) if !v.is_empty() => Ok(v.to_owned()),
            _ => Err(SettingsError::Missing { channel: "notify-slack", what, flag, var }),
        };
        let app_token = match app_token.map(str::trim).filter(|t| !t.is_empty()) {
            // Checked without showing it: it is a password.
            Some(t) if !t.starts_with("xapp-") => {
                return Err(SettingsError::Invalid {
                    flag: "slack-app-token",
                    expected: "an app-level token (xapp-…, Basic Information → App-Level Tokens)".into(),
                    got: format!("{} characters that do not start with xapp-", t.chars().count()),
                })
            }
            t => t.map(str::to_owned),
        };
        let signing_secret = match (signing_secret.map(str::trim).filter(|s| !s.is_empty()), &app_token) {
            (Some(s), _) => s.to_owned(),
            (None, Some(_)) => String::new(),
            (None, None) => {
                return Err(SettingsError::Missing {
                    channel: "notify-slack",
                    what: "the Slack app's slack-signing-secret (or an app token for Socket Mode, --slack-app-token)",
                    flag: "slack-signing-secret",
                    var: "ASKUSER_SLACK_SIGNING_SECRET",
                })
            }
        };
        Ok(SlackApp {
            token: given(bot_token, "the Slack app's slack-bot-token", "slack-bot-token", "ASKUSER_SLACK_BOT_TOKEN")?,
            signing_secret,
            app_token,
            lease: LEASE,
            api: super::channel::api_url("slack-api", api)?,
            channel: places.shared,
            routes: places.own,
            rules,
        })
    }

    /// Calls Web API method `method` with `body` as the bot: its answer when Slack says `ok`.
    async fn call(&self, http: &reqwest::Client, method: &str, body: &Value) -> Result<Value, Sent> {
        self.call_as(http, &self.token, method, body).await
    }

    /// Calls Web API method `method` with `body` and `token`.
    async fn call_as(&self, http: &reqwest::Client, token: &str, method: &str, body: &Value) -> Result<Value, Sent> {
        let url = self.api.join(method).map_err(|e| Sent::Refused(format!("Slack's API address: {e}")))?;
        let response = http.post(url).bearer_auth(token).json(body).timeout(Duration::from_secs(30)).send().await;
        let response = match response {
            Ok(r) if r.status().is_success() => r,
            other => {
                return Err(match outcome("Slack", other).await {
                    Sent::Delivered | Sent::Posted(_) => Sent::Refused("Slack answered without a body".into()),
                    failed => failed,
                })
            }
        };
        let answer: Value = response.json().await.map_err(|e| Sent::Retry { why: format!("Slack's answer: {e}"), after: None })?;
        if answer["ok"] == true {
            return Ok(answer);
        }
        let error = answer["error"].as_str().unwrap_or("no error given").chars().take(100).collect::<String>();
        // Slack's own trouble is worth another try; anything else (a wrong channel,
        // token or payload) will not pass by trying again.
        Err(match error.as_str() {
            "ratelimited" | "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
                Sent::Retry { why: format!("Slack said {error}"), after: None }
            }
            _ => Sent::Refused(format!("Slack refused {method}: {error}")),
        })
    }

    /// Posts `message` to `channel`: [`Sent::Posted`] with the message's `ts`.
    pub async fn post(&self, http: &reqwest::Client, channel: &str, message: &Value) -> Sent {
        let mut body = message.clone();
        body["channel"] = channel.into();
        // Agent text must not unfurl into previews of whatever it links.
        body["unfurl_links"] = false.into();
        body["unfurl_media"] = false.into();
        match self.call(http, "chat.postMessage", &body).await {
            Ok(answer) => match answer["ts"].as_str() {
                Some(ts) => Sent::Posted(ts.to_owned()),
                None => Sent::Refused("Slack's chat.postMessage answer has no ts".into()),
            },
            Err(failed) => failed,
        }
    }

    /// Replaces message `ts` in `channel` with `message`.
    pub async fn update(&self, http: &reqwest::Client, channel: &str, ts: &str, message: &Value) -> Sent {
        let mut body = message.clone();
        body["channel"] = channel.into();
        body["ts"] = ts.into();
        match self.call(http, "chat.update", &body).await {
            Ok(_) => Sent::Delivered,
            Err(failed) => failed,
        }
    }

    /// Whether `channel` is one the app posts to (and so may answer in).
    pub fn allows(&self, channel: &str) -> bool {
        self.channel.as_deref() == Some(channel) || self.routes.values().any(|c| c == channel)
    }

    /// Posts `text` (askuser's own words, escaped) in the thread of message `thread_ts`.
    pub async fn say(&self, http: &reqwest::Client, channel: &str, thread_ts: &str, text: &str) -> Sent {
        let body =
            json!({"channel": channel, "thread_ts": thread_ts, "text": slack::escape(text), "unfurl_links": false, "unfurl_media": false});
        match self.call(http, "chat.postMessage", &body).await {
            Ok(_) => Sent::Delivered,
            Err(failed) => failed,
        }
    }

    /// A message someone wrote (over the events URL or Socket Mode): a typed command in one
    /// of the app's channels answers the set it names, if that set was posted there, and is
    /// answered in its thread with what was done or why not.
    pub async fn heard(&self, notifier: &super::Notifier, said: &slack::Said) {
        if !self.allows(&said.channel) {
            return tracing::warn!(
                channel = said.channel,
                "a Slack message in a channel askuser does not post to: ignored (to post there, add --notify-slack {})",
                said.channel
            );
        }
        let told = match super::command::parse(&said.text, !said.addressed) {
            Some(Ok(command)) => {
                let key = format!("slack:{}", said.channel);
                let reply = |record: &QuestionRecord, text: &str| {
                    let open = super::telegram::open_link(notifier.base(), &record.id);
                    super::command::reply(record, text, Some(&open), slack::allowable, str::to_owned)
                };
                let done = notifier.command_from_chat(&key, &said.answered_by(), &command, slack::allowable, reply).await;
                done.unwrap_or_else(|not| not.told(str::to_owned))
            }
            Some(Err(how)) => how,
            None if said.addressed => {
                format!("askuser posts its questions here. To answer one, press its buttons. {}", super::command::USAGE)
            }
            None => return,
        };
        // `say` escapes the whole text.
        if let Sent::Refused(e) | Sent::Retry { why: e, .. } = self.say(notifier.http(), &said.channel, &said.thread_ts, &told).await {
            tracing::warn!("cannot answer a command in Slack: {e}");
        }
    }

    /// Carries out one interaction, however it came (`/slack/actions` or Socket Mode): a
    /// button pressed or a menu chosen in a message; anything else (a modal's submission:
    /// the app opens none) is not askuser's.
    pub async fn interact(&self, notifier: &super::Notifier, interaction: &Interaction) {
        match interaction.kind.as_str() {
            "block_actions" => self.act(notifier, interaction).await,
            other => tracing::debug!("a Slack {other} interaction: not one askuser acts on"),
        }
    }

    /// Carries out a `block_actions` interaction.
    async fn act(&self, notifier: &super::Notifier, interaction: &Interaction) {
        let (Some(channel), Some(ts)) = (interaction.channel_id(), interaction.message_ts()) else { return };
        let by = interaction.answered_by().unwrap_or_else(|| "slack".into());
        let key = format!("slack:{channel}");
        let Err(not) = notifier.answer_from_chat(&key, ts, &by, |record| slack::selections(interaction, record)).await else { return };
        // `tell` escapes the whole text.
        if let Sent::Refused(e) | Sent::Retry { why: e, .. } =
            self.tell(notifier.http(), channel, &interaction.user.id, &not.told(str::to_owned)).await
        {
            tracing::warn!("cannot tell a Slack user why their answer was not taken: {e}");
        }
    }

    /// Tells `user` alone, in `channel`, `text` (askuser's own words, escaped).
    pub async fn tell(&self, http: &reqwest::Client, channel: &str, user: &str, text: &str) -> Sent {
        let body = json!({"channel": channel, "user": user, "text": slack::escape(text)});
        match self.call(http, "chat.postEphemeral", &body).await {
            Ok(_) => Sent::Delivered,
            Err(failed) => failed,
        }
    }
}

#[async_trait::async_trait]
impl super::Channel for SlackApp {
    fn name(&self) -> &'static str {
        "slack"
    }

    /// Where it posts and how answers come (never a token or the secret).
    fn describe(&self, _: &std::path::Path) -> Option<String> {
        let places: Vec<&str> = self.channel.iter().chain(self.routes.values()).map(String::as_str).collect();
        let how = match (self.app_token.is_some(), self.signing_secret.is_empty()) {
            (true, true) => "over Socket Mode".to_owned(),
            (true, false) => format!("over Socket Mode and at {ACTIONS}"),
            (false, _) => format!("at {ACTIONS}"),
        };
        Some(format!("question sets go to Slack channel(s) {}; buttons answer {how}", places.join(", ")))
    }

    fn secrets(&self) -> Vec<&str> {
        [Some(self.token.as_str()), Some(self.signing_secret.as_str()), self.app_token.as_deref()].into_iter().flatten().collect()
    }

    async fn routes(&self, _: &super::Notifier, record: &QuestionRecord) -> Vec<super::Route> {
        super::channel::route(self.channel.as_ref(), &self.routes, record, &self.rules).into_iter().collect()
    }

    /// Its buttons answer: no answer links.
    async fn post(&self, notifier: &super::Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        let open = Some(notice.message.open.as_str());
        let message = match &notice.reminder {
            Some(line) => slack::reminder(&notice.record, open, line),
            None => slack::message(&notice.record, open),
        };
        self.post(notifier.http(), &route.to, &message).await
    }

    fn closes(&self) -> bool {
        true
    }

    /// Slack's "Interactivity" request URL (a button pressed, a box ticked, a menu chosen
    /// in one of the app's messages) and its "Event Subscriptions" one (messages).
    fn inbound(&self) -> Vec<&'static str> {
        match self.signing_secret.is_empty() {
            true => vec![],
            false => vec![ACTIONS, EVENTS],
        }
    }

    /// Checked against the signing secret first; then acknowledged at once (Slack wants
    /// an answer within 3 s) and carried out: the question set the message is about is
    /// answered or declined as `slack:USER`, or the person alone is told why not; at
    /// [`EVENTS`], the URL's challenge echoed, or a message read for a command.
    async fn receive(&self, notifier: &Arc<super::Notifier>, path: &str, headers: &HeaderMap, body: &[u8]) -> (StatusCode, String) {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let now_s = notifier.now_ms() / 1000;
        let (timestamp, signature) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
        if self.signing_secret.is_empty() {
            return (StatusCode::NOT_FOUND, String::new());
        }
        if let Err(e) = slack::verify(self.signing_secret.as_bytes(), timestamp, signature, body, now_s) {
            tracing::warn!("refused a request to {path}: {e}");
            return (StatusCode::UNAUTHORIZED, format!("not from Slack: {e}"));
        }
        if path == EVENTS {
            return match slack::Event::parse(body) {
                Ok(slack::Event::Challenge(challenge)) => (StatusCode::OK, challenge),
                Ok(slack::Event::Said(said)) => {
                    let (app, notifier) = (self.clone(), notifier.clone());
                    tokio::spawn(async move { app.heard(&notifier, &said).await });
                    (StatusCode::OK, String::new())
                }
                Ok(slack::Event::Other) => (StatusCode::OK, String::new()),
                Err(e) => (StatusCode::BAD_REQUEST, e),
            };
        }
        let interaction = match Interaction::from_form(body) {
            Ok(i) => i,
            Err(e) => return (StatusCode::BAD_REQUEST, e),
        };
        let (app, notifier) = (self.clone(), notifier.clone());
        tokio::spawn(async move { app.interact(&notifier, &interaction).await });
        (StatusCode::OK, String::new())
    }

    async fn close(&self, notifier: &super::Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        match message {
            Some(ts) => self.update(notifier.http(), to, ts, &slack::answered(record)).await,
            None => Sent::Delivered,
        }
    }

    /// Socket Mode, with an app token.
    fn start(self: Arc<Self>, notifier: Arc<super::Notifier>) {
        if self.app_token.is_some() {
            tokio::spawn(socket_mode(notifier, (*self).clone()));
        }
    }
}

/// Why a Socket Mode connection could not be had.
async fn open_socket(app: &SlackApp, http: &reqwest::Client) -> Result<crate::tls::Socket, String> {
    let token = app.app_token.as_deref().unwrap_or_default();
    let answer = app.call_as(http, token, "apps.connections.open", &json!({})).await.map_err(|failed| match failed {
        Sent::Refused(why) | Sent::Retry { why, .. } => why,
        other => format!("{other:?}"),
    })?;
    let url = answer["url"].as_str().ok_or("Slack's apps.connections.open answer has no url")?;
    let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
        .map_err(|e| format!("Slack's Socket Mode URL: {e}"))?;
    // The URL holds a ticket: it is never logged.
    crate::tls::websocket(request, None).await.map_err(|e| format!("cannot open Slack's Socket Mode socket: {}", crate::tls::explain(&e)))
}

/// Keeps a Socket Mode connection while the bridge runs (with bridges sharing a store,
/// while this one holds it), acknowledging each envelope and carrying out interactions.
async fn socket_mode(notifier: Arc<super::Notifier>, app: SlackApp) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Frame;
    let token = app.app_token.clone().unwrap_or_default();
    let mut turns = Turns::new("slack-socket", super::channel::fingerprint(&token), app.lease);
    let mut socket: Option<crate::tls::Socket> = None;
    let mut opened = tokio::time::Instant::now();
    let mut retry = Retry::default();
    loop {
        let run = match turns.next(&notifier, Duration::from_secs(3600)).await {
            Turn::Run(run) => run,
            Turn::Wait(wait) => {
                if let Some(mut s) = socket.take() {
                    let _ = s.close(None).await;
                }
                tokio::select! {
                    _ = tokio::time::sleep(wait) => continue,
                    _ = notifier.stopped() => return,
                }
            }
        };
        let until = tokio::time::Instant::now() + run;
        let s = match &mut socket {
            Some(s) => s,
            None => match open_socket(&app, notifier.http()).await {
                Ok(s) => {
                    tracing::info!("connected to Slack over Socket Mode");
                    opened = tokio::time::Instant::now();
                    socket.insert(s)
                }
                Err(why) => {
                    let why = super::channel::scrub(&why, &app.secrets_of());
                    if retry.tell(&why) {
                        tracing::warn!("cannot connect to Slack over Socket Mode: {why}; trying again");
                    }
                    let pause = retry.next(run);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue,
                        _ = notifier.stopped() => return,
                    }
                }
            },
        };
        let mut lost = false;
        loop {
            let frame = tokio::select! {
                frame = s.next() => frame,
                _ = tokio::time::sleep_until(until) => break,
                _ = notifier.stopped() => {
                    let _ = s.close(None).await;
                    return;
                }
            };
            let text = match frame {
                Some(Ok(Frame::Text(text))) => text,
                Some(Ok(Frame::Close(_))) | Some(Err(_)) | None => {
                    lost = true;
                    break;
                }
                Some(Ok(_)) => continue, // pings are answered by the socket itself
            };
            let envelope = match slack::Envelope::parse(&text) {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("{e}");
                    continue;
                }
            };
            // Acknowledged first, whatever it is: Slack sends it again otherwise.
            if let Some(ack) = envelope.ack() {
                if s.send(Frame::text(ack)).await.is_err() {
                    lost = true;
                    break;
                }
            }
            match envelope.kind.as_str() {
                "hello" => {}
                "disconnect" => {
                    tracing::info!("Slack asked for a new Socket Mode connection");
                    lost = true;
                    break;
                }
                "events_api" => {
                    if let Some(slack::Event::Said(said)) = envelope.event() {
                        let (app, notifier) = (app.clone(), notifier.clone());
                        tokio::spawn(async move { app.heard(&notifier, &said).await });
                    }
                }
                _ => match envelope.interaction() {
                    Ok(Some(interaction)) => {
                        let (app, notifier) = (app.clone(), notifier.clone());
                        tokio::spawn(async move { app.interact(&notifier, &interaction).await });
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("{e}"),
                },
            }
        }
        if lost {
            if let Some(mut s) = socket.take() {
                let _ = s.close(None).await;
            }
            // A connection that ends as soon as it is made is not made again at once.
            if opened.elapsed() < Duration::from_secs(5) {
                let pause = retry.next(Duration::MAX);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = notifier.stopped() => return,
                }
            } else {
                retry.lasted();
            }
        }
    }
}

impl SlackApp {
    /// What it holds that must never be shown ([`super::Channel::secrets`]).
    fn secrets_of(&self) -> Vec<&str> {
        <Self as super::Channel>::secrets(self)
    }
}
