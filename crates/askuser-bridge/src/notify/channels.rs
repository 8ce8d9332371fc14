//! Channels for people who live elsewhere: a signed webhook (Slack-compatible) and ntfy.
//! Each carries the question and one answer link per option; neither can answer by
//! being fetched (the links answer on POST only, see [`super::links`]).

use super::push::{outcome, Sent};
use super::Message;
use askuser_core::protocol::QuestionRecord;
use std::time::Duration;

/// `--notify-webhook URL`: a JSON POST signed with HMAC-SHA256.
///
/// The body has `text` (what a Slack-compatible incoming webhook shows: the question and
/// a link per option) and `askuser` (the same as data). Headers: `X-Askuser-Timestamp`
/// (Unix seconds) and `X-Askuser-Signature: v1=HEX`, the HMAC-SHA256 of
/// `"{timestamp}.{body}"` under the secret, so a receiver can check who sent it and
/// refuse replays of old ones.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub url: reqwest::Url,
    pub secret: String,
    /// Which questions it hears of, and when.
    pub rules: super::Rules,
}

/// `--notify-ntfy URL/TOPIC`: an ntfy message with action buttons that answer.
#[derive(Debug, Clone)]
pub struct Ntfy {
    /// The server (`https://ntfy.sh`).
    pub server: reqwest::Url,
    pub topic: String,
    /// An access token for a protected topic.
    pub token: Option<String>,
    /// Which questions it hears of, and when.
    pub rules: super::Rules,
}

impl Ntfy {
    /// `https://ntfy.sh/mytopic` as a server and a topic.
    pub fn parse(url: &str, token: Option<String>) -> Result<Ntfy, String> {
        let shown = || crate::redact::redact(crate::redact::Secret::Ntfy(url));
        let parsed: reqwest::Url = url.parse().map_err(|e| format!("--notify-ntfy: expected URL/TOPIC, got {:?} ({e})", shown()))?;
        let topic = parsed.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default().to_owned();
        if topic.is_empty() || !topic.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("--notify-ntfy: expected a topic (letters, digits, - and _) after the server, got {:?}", shown()));
        }
        let mut server = parsed.clone();
        server.set_path("/");
        Ok(Ntfy { server, topic, token, rules: super::Rules::default() })
    }

    /// The JSON ntfy publishes: title, message, a tap opening the page, and up to two
    /// options plus "Answer…" as buttons (ntfy shows three).
    pub fn body(&self, m: &Message) -> serde_json::Value {
        let mut actions: Vec<serde_json::Value> = m
            .options
            .iter()
            .take(2)
            .map(|o| serde_json::json!({"action": "http", "label": o.label, "url": o.link, "method": "POST", "clear": true}))
            .collect();
        actions.push(serde_json::json!({"action": "view", "label": "Answer…", "url": m.open}));
        let title =
            super::Headline { agent: m.agent.clone(), chip: m.header.clone(), id: None }.line(usize::MAX, usize::MAX, |s, _| s.to_owned());
        serde_json::json!({
            "topic": self.topic, "title": title, "message": m.question, "click": m.open,
            "priority": 4, "tags": ["question"], "actions": actions,
        })
    }

    pub async fn send(&self, http: &reqwest::Client, m: &Message) -> Sent {
        let mut request = http.post(self.server.clone()).json(&self.body(m)).timeout(Duration::from_secs(30));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        outcome("ntfy", request.send().await).await
    }
}

/// The webhook secret kept in `dir/notify/webhook-secret`, made on first use.
pub fn webhook_secret(dir: &std::path::Path) -> crate::error::Result<String> {
    let path = dir.join("notify").join("webhook-secret");
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        _ => {
            crate::files::ensure_dir(&dir.join("notify"))?;
            let secret = crate::files::random_hex(32);
            crate::files::write_private(&path, secret.as_bytes())?;
            Ok(secret)
        }
    }
}

impl Webhook {
    /// The body: Slack's `text` (agent text escaped, so it cannot mention or link by
    /// itself) and the question as data.
    pub fn body(m: &Message) -> serde_json::Value {
        let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut text = format!("*{}* asks", escape(&m.agent));
        if let Some(h) = &m.header {
            text.push_str(&format!(" ({})", escape(h)));
        }
        text.push_str(&format!(":\n{}\n", escape(&m.question)));
        let links: Vec<String> = m.options.iter().map(|o| format!("<{}|{}>", o.link, escape(&o.label))).collect();
        if !links.is_empty() {
            text.push_str(&format!("Answer: {}\n", links.join(" · ")));
        }
        text.push_str(&format!("<{}|Open askuser>", m.open));
        serde_json::json!({"text": text, "askuser": m})
    }

    /// `v1=HEX`: HMAC-SHA256 of `"{timestamp}.{body}"` under `secret`.
    pub fn signature(secret: &str, timestamp: u64, body: &[u8]) -> String {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
        let mut signed = format!("{timestamp}.").into_bytes();
        signed.extend_from_slice(body);
        let tag = ring::hmac::sign(&key, &signed);
        format!("v1={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    pub async fn send(&self, http: &reqwest::Client, m: &Message, now_s: u64) -> Sent {
        let body = Webhook::body(m).to_string();
        let request = http
            .post(self.url.clone())
            .header("content-type", "application/json")
            .header("x-askuser-timestamp", now_s.to_string())
            .header("x-askuser-signature", Webhook::signature(&self.secret, now_s, body.as_bytes()))
            .body(body)
            .timeout(Duration::from_secs(30));
        outcome("the webhook", request.send().await).await
    }
}

#[async_trait::async_trait]
impl super::Channel for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    /// Its signing secret, and its URL's path (Slack's and Discord's hold the credential).
    fn secrets(&self) -> Vec<&str> {
        vec![self.secret.as_str(), self.url.path()]
    }

    async fn routes(&self, _: &super::Notifier, _: &QuestionRecord) -> Vec<super::Route> {
        vec![super::Route::one(&self.rules)]
    }

    fn links(&self) -> bool {
        true
    }

    async fn post(&self, notifier: &super::Notifier, _: &super::Route, notice: &super::Notice) -> Sent {
        self.send(notifier.http(), &notice.message, notifier.now_ms() / 1000).await
    }

    fn describe(&self, data_dir: &std::path::Path) -> Option<String> {
        let kept = data_dir.join("notify").join("webhook-secret");
        let from = match std::fs::read_to_string(&kept).is_ok_and(|s| s.trim() == self.secret) {
            true => format!("the secret in {}", kept.display()),
            false => "--notify-webhook-secret".into(),
        };
        let hook = crate::redact::redact(crate::redact::Secret::Webhook(self.url.as_str()));
        Some(format!("new questions go to the webhook {hook} (signed with {from})"))
    }
}

#[async_trait::async_trait]
impl super::Channel for Ntfy {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    /// Its topic (whoever knows it reads and posts to it) and access token.
    fn secrets(&self) -> Vec<&str> {
        [Some(self.topic.as_str()), self.token.as_deref()].into_iter().flatten().collect()
    }

    async fn routes(&self, _: &super::Notifier, _: &QuestionRecord) -> Vec<super::Route> {
        vec![super::Route::one(&self.rules)]
    }

    fn links(&self) -> bool {
        true
    }

    async fn post(&self, notifier: &super::Notifier, _: &super::Route, notice: &super::Notice) -> Sent {
        self.send(notifier.http(), &notice.message).await
    }

    fn describe(&self, _: &std::path::Path) -> Option<String> {
        let topic = crate::redact::redact(crate::redact::Secret::Ntfy(&format!("{}{}", self.server, self.topic)));
        Some(format!("new questions go to the ntfy topic {topic}"))
    }
}
