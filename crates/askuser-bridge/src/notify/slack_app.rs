//! The Slack app (`--notify-slack`): posts each question set to a channel as the
//! message [`super::slack::message`] builds, edits it to what became of the set once it
//! closes, and tells a person alone why a press did not count. Its buttons answer at
//! `POST /slack/actions` ([`ACTIONS`], its [`super::Channel::receive`]), each request
//! checked against the app's signing secret, what it chose taken by
//! [`super::Notifier::answer_from_chat`].
//!
//! Calls go to Slack's Web API with the bridge's notification client (no redirects, the
//! bridge's TLS): `chat.postMessage`, `chat.update` and `chat.postEphemeral` (to tell
//! only the person who pressed a button what was wrong). A call Slack refuses for good
//! (`channel_not_found`, `invalid_auth`, ...) is not tried again; a rate limit (429) or an
//! outage is, with the notifier's backoff or Slack's `Retry-After`.

use super::channel::{Places, SettingsError};
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

/// How one Slack app is set up (`askuser serve --notify-slack`, docs/notify.md).
#[derive(Clone)]
pub struct SlackApp {
    /// The bot token (`xoxb-…`): posts and edits the messages.
    pub token: String,
    /// The signing secret: proves a request to `/slack/actions` comes from Slack.
    pub signing_secret: String,
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
        f.debug_struct("SlackApp").field("api", &self.api.as_str()).field("channel", &self.channel).field("routes", &self.routes).finish()
    }
}

impl SlackApp {
    /// The app `--notify-slack [NAME=]CHANNEL` (`places`), `--slack-bot-token`,
    /// `--slack-signing-secret` and `--slack-api` set up, hearing of sets as `rules` say.
    pub fn configure(
        places: &[String],
        bot_token: Option<&str>,
        signing_secret: Option<&str>,
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
        Ok(SlackApp {
            token: given(bot_token, "the Slack app's slack-bot-token", "slack-bot-token", "ASKUSER_SLACK_BOT_TOKEN")?,
            signing_secret: given(
                signing_secret,
                "the Slack app's slack-signing-secret",
                "slack-signing-secret",
                "ASKUSER_SLACK_SIGNING_SECRET",
            )?,
            api: super::channel::api_url("slack-api", api)?,
            channel: places.shared,
            routes: places.own,
            rules,
        })
    }

    /// Calls Web API method `method` with `body`: its answer when Slack says `ok`.
    async fn call(&self, http: &reqwest::Client, method: &str, body: &Value) -> Result<Value, Sent> {
        let url = self.api.join(method).map_err(|e| Sent::Refused(format!("Slack's API address: {e}")))?;
        let response = http.post(url).bearer_auth(&self.token).json(body).timeout(Duration::from_secs(30)).send().await;
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

    /// Carries out one interaction ([`super::Channel::receive`]).
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

    fn secrets(&self) -> Vec<&str> {
        vec![self.token.as_str(), self.signing_secret.as_str()]
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

    /// Slack's "Interactivity" request URL: a button pressed (or a box ticked, a menu
    /// chosen) in one of the app's messages.
    fn inbound(&self) -> Option<&'static str> {
        Some(ACTIONS)
    }

    /// Checked against the signing secret first; then acknowledged at once (Slack wants
    /// an answer within 3 s) and carried out: the question set the message is about is
    /// answered or declined as `slack:USER`, or the person alone is told why not.
    async fn receive(&self, notifier: &Arc<super::Notifier>, headers: &HeaderMap, body: &[u8]) -> (StatusCode, String) {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let now_s = notifier.now_ms() / 1000;
        let (timestamp, signature) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
        if let Err(e) = slack::verify(self.signing_secret.as_bytes(), timestamp, signature, body, now_s) {
            tracing::warn!("refused a request to {ACTIONS}: {e}");
            return (StatusCode::UNAUTHORIZED, format!("not from Slack: {e}"));
        }
        let interaction = match Interaction::from_form(body) {
            Ok(i) => i,
            Err(e) => return (StatusCode::BAD_REQUEST, e),
        };
        if interaction.kind == "block_actions" {
            let (app, notifier) = (self.clone(), notifier.clone());
            tokio::spawn(async move { app.act(&notifier, &interaction).await });
        }
        (StatusCode::OK, String::new())
    }

    async fn close(&self, notifier: &super::Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        match message {
            Some(ts) => self.update(notifier.http(), to, ts, &slack::answered(record)).await,
            None => Sent::Delivered,
        }
    }
}
