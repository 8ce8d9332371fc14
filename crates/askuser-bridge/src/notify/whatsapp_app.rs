//! WhatsApp (`--notify-whatsapp`): sends each question set to a person's phone as the
//! message [`super::whatsapp::message`] builds, over the Cloud API, and takes their answers
//! from the webhook Meta calls ([`WEBHOOK`], this channel's [`super::Channel::receive`]):
//! each call checked against the app secret (`X-Hub-Signature-256`), only from the
//! configured numbers, what it chose taken by [`super::Notifier::answer_from_chat`] or,
//! typed as a command, [`super::Notifier::command_from_chat`].
//!
//! # The 24-hour window
//! WhatsApp lets a business send free-form messages to a person only within 24 hours of
//! their last message to it (else it refuses with error 131047); outside that, only an
//! approved template. The store keeps when each person last wrote
//! ([`crate::store::Deliveries::add_heard`]), so a restarted bridge and the bridges
//! sharing its store know too. A set for someone outside the window is held: the
//! template named by `--whatsapp-template` goes out (once per held set), the store keeps
//! the set as posted with a message id `held:…`, and the person's next message (any: a
//! tap on the template's button, "hi") opens the window and brings every set held for
//! them. A 131047 from WhatsApp (its clock and ours disagree) holds the set the same way.
//!
//! Calls go to the Graph API with the bridge's notification client (no redirects, the
//! bridge's TLS), the access token as a bearer token, never in a URL.

use super::channel::{Places, SettingsError};
use super::push::Sent;
use super::whatsapp::{self, Inbound, Said};
use super::{Notifier, Outcome, Rules};
use askuser_core::protocol::QuestionRecord;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The Graph API.
pub const API: &str = "https://graph.facebook.com/v23.0/";
/// Where Meta posts the webhook's calls (the app's "Callback URL"), and sends its handshake.
pub const WEBHOOK: &str = "/whatsapp/webhook";
/// WhatsApp's error for a free-form message outside the 24-hour window.
pub const OUTSIDE_WINDOW: u64 = 131047;
/// The message id a held set is kept under begins so.
const HELD: &str = "held:";

/// The template sent to open the window: its name and language code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub language: String,
}

/// How one WhatsApp business number is set up (`askuser serve --notify-whatsapp`).
#[derive(Clone)]
pub struct WhatsApp {
    /// The business phone number's id (not the number): the Graph API's sender.
    pub phone_number_id: String,
    /// The access token (a system user's, permanent).
    pub token: String,
    /// The app secret: proves a webhook call comes from Meta.
    pub app_secret: String,
    /// What the webhook's handshake must present.
    pub verify_token: String,
    /// Where the Graph API is (ends with `/`): [`API`], or a test's stand-in.
    pub api: reqwest::Url,
    /// Sent to open the window when a person has not written for 24 hours.
    pub template: Option<Template>,
    /// Where sets for no one go (a phone number, digits), and everyone's once they escalate.
    pub phone: Option<String>,
    /// Where a person's or team's sets go (name → phone number).
    pub routes: BTreeMap<String, String>,
    pub rules: Rules,
}

/// Says where it sends, never a secret.
impl std::fmt::Debug for WhatsApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsApp")
            .field("phone_number_id", &self.phone_number_id)
            .field("api", &self.api.as_str())
            .field("template", &self.template)
            .field("phone", &self.phone)
            .field("routes", &self.routes)
            .finish()
    }
}

/// What `--notify-whatsapp` and its flags say.
#[derive(Debug, Clone, Default)]
pub struct Settings<'a> {
    pub places: &'a [String],
    pub phone_number_id: Option<&'a str>,
    pub token: Option<&'a str>,
    pub app_secret: Option<&'a str>,
    pub verify_token: Option<&'a str>,
    /// `NAME` or `NAME:LANGUAGE` (`en_US` when not given).
    pub template: Option<&'a str>,
    pub api: &'a str,
}

/// A failed call: what it means for the message, or WhatsApp's 24-hour rule.
#[derive(Debug)]
enum Failed {
    Sent(Sent),
    Window,
}

impl WhatsApp {
    /// The channel `settings` set up, hearing of sets as `rules` say.
    pub fn configure(settings: &Settings<'_>, rules: Rules) -> Result<WhatsApp, SettingsError> {
        let phone = |p: &str| {
            let digits = p.strip_prefix('+').unwrap_or(p);
            match (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
                true => Ok(digits.to_owned()),
                false => {
                    Err(SettingsError::invalid("notify-whatsapp", "a phone number in international form, digits only (+15551234567)", p))
                }
            }
        };
        let places = Places::parse("notify-whatsapp", "PHONE", "phone number", settings.places, phone)?;
        let given = |value: Option<&str>, what, flag, var| match value.map(str::trim) {
            Some(v) if !v.is_empty() => Ok(v.to_owned()),
            _ => Err(SettingsError::Missing { channel: "notify-whatsapp", what, flag, var }),
        };
        let phone_number_id = given(
            settings.phone_number_id,
            "the business phone number's id",
            "whatsapp-phone-number-id",
            "ASKUSER_WHATSAPP_PHONE_NUMBER_ID",
        )?;
        if !phone_number_id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SettingsError::invalid(
                "whatsapp-phone-number-id",
                "the phone number's id (digits, from the app's WhatsApp API Setup page; not the number)",
                &phone_number_id,
            ));
        }
        let template = match settings.template.map(str::trim).filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => {
                let (name, language) = t.split_once(':').unwrap_or((t, "en_US"));
                let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                if !ok || language.is_empty() {
                    return Err(SettingsError::invalid(
                        "whatsapp-template",
                        "a template's name (lowercase letters, digits and _), and :LANGUAGE if not en_US",
                        t,
                    ));
                }
                Some(Template { name: name.to_owned(), language: language.to_owned() })
            }
        };
        Ok(WhatsApp {
            phone_number_id,
            token: given(settings.token, "the access token", "whatsapp-token", "ASKUSER_WHATSAPP_TOKEN")?,
            app_secret: given(settings.app_secret, "the app secret", "whatsapp-app-secret", "ASKUSER_WHATSAPP_APP_SECRET")?,
            verify_token: given(
                settings.verify_token,
                "the webhook's verify token",
                "whatsapp-verify-token",
                "ASKUSER_WHATSAPP_VERIFY_TOKEN",
            )?,
            api: super::channel::api_url("whatsapp-api", settings.api)?,
            template,
            phone: places.shared,
            routes: places.own,
            rules,
        })
    }

    /// Whether `phone` is one it sends to (and so may answer).
    pub fn allows(&self, phone: &str) -> bool {
        self.phone.as_deref() == Some(phone) || self.routes.values().any(|p| p == phone)
    }

    /// Sends `payload`: the message's id (`wamid.…`).
    async fn send(&self, http: &reqwest::Client, payload: &Value) -> Result<String, Failed> {
        let refused = |why: String| Failed::Sent(Sent::Refused(why));
        let url =
            self.api.join(&format!("{}/messages", self.phone_number_id)).map_err(|e| refused(format!("the Graph API's address: {e}")))?;
        let response = match http.post(url).bearer_auth(&self.token).json(payload).timeout(Duration::from_secs(30)).send().await {
            Ok(r) => r,
            Err(e) => return Err(Failed::Sent(Sent::Retry { why: format!("cannot reach WhatsApp: {}", e.without_url()), after: None })),
        };
        let status = response.status();
        if status.is_redirection() {
            return Err(refused(format!("WhatsApp answered {status}; askuser does not follow redirects")));
        }
        let answer: Value = match response.json().await {
            Ok(v) => v,
            Err(_) if status.is_server_error() || status.as_u16() == 429 => {
                return Err(Failed::Sent(Sent::Retry { why: format!("WhatsApp answered {status}"), after: None }))
            }
            Err(_) => return Err(refused(format!("WhatsApp answered {status} without its JSON"))),
        };
        if status.is_success() {
            return match answer["messages"][0]["id"].as_str() {
                Some(id) => Ok(id.to_owned()),
                None => Err(refused("WhatsApp's answer names no message id".into())),
            };
        }
        let error = &answer["error"];
        let code = error["code"].as_u64().unwrap_or(0);
        let message: String = error["message"].as_str().unwrap_or("no message").chars().take(200).collect();
        Err(match code {
            OUTSIDE_WINDOW => Failed::Window,
            // Throttled (the app's or the number's rate, a pair rate), or Meta's own trouble.
            4 | 80007 | 130429 | 131056 | 1 | 2 | 131000 | 131016 => {
                Failed::Sent(Sent::Retry { why: format!("WhatsApp said {code} {message}"), after: None })
            }
            _ if status.is_server_error() => Failed::Sent(Sent::Retry { why: format!("WhatsApp said {status} {message}"), after: None }),
            _ => refused(format!("WhatsApp refused the message: {code} {message}")),
        })
    }

    /// Sends the template that opens the window (none set: nothing), as a [`Sent`].
    async fn open_window(&self, http: &reqwest::Client, to: &str, id: &str) -> Sent {
        let Some(template) = &self.template else {
            tracing::info!(%id, "held for WhatsApp {to} until they write (outside the 24-hour window, and no --whatsapp-template)");
            return Sent::Posted(format!("{HELD}{id}"));
        };
        let payload = json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "template",
            "template": {"name": template.name, "language": {"code": template.language}}});
        match self.send(http, &payload).await {
            Ok(wamid) => Sent::Posted(format!("{HELD}{wamid}")),
            Err(Failed::Sent(sent)) => sent,
            Err(Failed::Window) => Sent::Refused("WhatsApp refused the template as outside the window".into()),
        }
    }

    /// Sends `text` (askuser's words) to `to`, if the window is open.
    async fn tell(&self, notifier: &Notifier, to: &str, text: &str) {
        let heard = notifier.deliveries.heard(&format!("whatsapp:{to}")).await.ok().flatten();
        if !whatsapp::in_window(heard, notifier.now_ms()) {
            return tracing::info!("not telling WhatsApp {to} (outside the 24-hour window): {text}");
        }
        let http = notifier.http();
        let payload = whatsapp::Outgoing::Text { body: whatsapp::cut(text, whatsapp::MAX_TEXT) }.payload(to);
        if let Err(failed) = self.send(http, &payload).await {
            tracing::warn!("cannot tell WhatsApp {to} why: {failed:?}");
        }
    }

    /// The sets held for `key` (`whatsapp:PHONE`) and still waiting: their ids.
    async fn held(&self, notifier: &Notifier, key: &str) -> Vec<String> {
        let sent = notifier.deliveries.notified().await.unwrap_or_default();
        sent.into_iter()
            .filter(|n| n.waits && n.target == key && n.message.as_deref().is_some_and(|m| m.starts_with(HELD)))
            .map(|n| n.id)
            .collect()
    }

    /// Sends set `id`, held for `to`, now that they wrote; the store then keeps its message.
    async fn release(&self, notifier: &Notifier, to: &str, id: &str) {
        let Ok(record) = notifier.bridge.get(id).await else { return };
        if record.status != askuser_core::Status::Pending {
            return;
        }
        let open = super::telegram::open_link(notifier.base(), id);
        match self.send(notifier.http(), &whatsapp::message(&record, &open).payload(to)).await {
            Ok(wamid) => {
                if let Err(e) = notifier.deliveries.add_notified(id, &format!("whatsapp:{to}"), notifier.now_ms(), Some(&wamid)).await {
                    tracing::warn!(%id, "{e}");
                }
            }
            Err(failed) => tracing::warn!(%id, "cannot send a held set to WhatsApp {to}: {failed:?}"),
        }
    }

    /// Carries out what one webhook call carries.
    async fn act(&self, notifier: &Arc<Notifier>, inbound: Inbound) {
        for (wamid, to, code) in inbound.failed {
            // Sent, then refused as outside the window: held, and the template sent.
            let key = format!("whatsapp:{to}");
            if code != OUTSIDE_WINDOW {
                continue;
            }
            if let Ok(Some(id)) = notifier.deliveries.notified_by_message(&key, &wamid).await {
                if let Sent::Posted(held) = self.open_window(notifier.http(), &to, &id).await {
                    let _ = notifier.deliveries.add_notified(&id, &key, notifier.now_ms(), Some(&held)).await;
                }
            }
        }
        for message in inbound.messages {
            self.heard(notifier, message).await;
        }
    }

    /// A person's message: it opens the window (bringing what was held for them), or answers.
    async fn heard(&self, notifier: &Arc<Notifier>, message: whatsapp::Message) {
        let to = message.from.clone();
        if !self.allows(&to) {
            return tracing::warn!(
                "a WhatsApp message from a number askuser does not send to: ignored (to send there, add --notify-whatsapp {to})"
            );
        }
        let key = format!("whatsapp:{to}");
        // When they wrote, not when Meta delivered it (a late or replayed call opens no
        // window that WhatsApp has closed).
        let wrote = message.sent_ms.map_or(notifier.now_ms(), |at| at.min(notifier.now_ms()));
        if let Err(e) = notifier.deliveries.add_heard(&key, wrote).await {
            tracing::warn!("{e}");
        }
        // Only a message written within the window opens it: one delivered late brings
        // nothing held (WhatsApp would refuse it as outside the window).
        let held = match whatsapp::in_window(Some(wrote), notifier.now_ms()) {
            true => self.held(notifier, &key).await,
            false => Vec::new(),
        };
        let released = !held.is_empty();
        for id in held {
            self.release(notifier, &to, &id).await;
        }
        // A message that opened the window brings the questions and answers none of them,
        // unless it names what it answers (a tap, a swiped reply, a command).
        let names = match &message.said {
            Said::Chose(_) => true,
            Said::Text(text) => message.context.is_some() || super::command::parse(text, false).is_some(),
            Said::Other => false,
        };
        if released && !names {
            return;
        }
        let by = message.answered_by();
        let open = |record: &QuestionRecord| super::telegram::open_link(notifier.base(), &record.id);
        let text = match &message.said {
            Said::Text(text) => text.clone(),
            Said::Chose(data) => {
                let Some(context) = &message.context else { return };
                let taken = notifier.answer_from_chat(&key, context, &by, |record| whatsapp::pressed(record, data).map(Some)).await;
                if let Err(not) = taken {
                    self.tell(notifier, &to, &not.told(str::to_owned)).await;
                }
                return;
            }
            Said::Other => return,
        };
        if let Some(command) = super::command::parse(&text, message.context.is_some()) {
            let told = match command {
                Ok(command) => {
                    let reply = |record: &QuestionRecord, text: &str| whatsapp::replied(record, text, &open(record));
                    let done = notifier.command_from_chat(&key, &by, &command, whatsapp::allowable, reply).await;
                    done.unwrap_or_else(|not| not.told(str::to_owned))
                }
                Err(how) => how,
            };
            return self.tell(notifier, &to, &told).await;
        }
        // A reply (swiped) names its message; else the one set waiting here.
        let message_id = match &message.context {
            Some(context) => context.clone(),
            None => {
                let sent = notifier.deliveries.notified().await.unwrap_or_default();
                let waiting: Vec<String> = sent
                    .into_iter()
                    .filter(|n| n.waits && n.target == key)
                    .filter_map(|n| n.message)
                    .filter(|m| !m.starts_with(HELD))
                    .collect();
                match waiting.as_slice() {
                    [one] => one.clone(),
                    [] => return self.tell(notifier, &to, &format!("No question waits here now. {}", super::command::USAGE)).await,
                    _ => {
                        let text = format!(
                            "{} questions wait here: reply to one (swipe it right), or answer by its id. {}",
                            waiting.len(),
                            super::command::USAGE
                        );
                        return self.tell(notifier, &to, &text).await;
                    }
                }
            }
        };
        let decide = |record: &QuestionRecord| whatsapp::replied(record, &text, &open(record)).map(|s| Some(Outcome::Answer(s)));
        if let Err(not) = notifier.answer_from_chat(&key, &message_id, &by, decide).await {
            self.tell(notifier, &to, &not.told(str::to_owned)).await;
        }
    }
}

#[async_trait::async_trait]
impl super::Channel for WhatsApp {
    fn name(&self) -> &'static str {
        "whatsapp"
    }

    /// The access token, the app secret and the verify token.
    fn secrets(&self) -> Vec<&str> {
        vec![self.token.as_str(), self.app_secret.as_str(), self.verify_token.as_str()]
    }

    fn describe(&self, _: &std::path::Path) -> Option<String> {
        let template = self.template.as_ref().map_or("no template: held until they write".into(), |t| format!("template {}", t.name));
        Some(format!("WhatsApp from number id {} ({template}); its webhook is {WEBHOOK}", self.phone_number_id))
    }

    async fn routes(&self, _: &Notifier, record: &QuestionRecord) -> Vec<super::Route> {
        super::channel::route(self.phone.as_ref(), &self.routes, record, &self.rules).into_iter().collect()
    }

    /// Within the window, the set; outside it, the template, the set held until they write.
    async fn post(&self, notifier: &Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        let key = route.key(self.name());
        let heard = match notifier.deliveries.heard(&key).await {
            Ok(heard) => heard,
            Err(e) => return Sent::Retry { why: e.to_string(), after: None },
        };
        let id = &notice.record.id;
        if !whatsapp::in_window(heard, notifier.now_ms()) {
            return self.open_window(notifier.http(), &route.to, id).await;
        }
        let open = super::telegram::open_link(notifier.base(), id);
        match self.send(notifier.http(), &whatsapp::reminder(&notice.record, &open, notice.reminder.as_deref()).payload(&route.to)).await {
            Ok(wamid) => Sent::Posted(wamid),
            Err(Failed::Window) => self.open_window(notifier.http(), &route.to, id).await,
            Err(Failed::Sent(sent)) => sent,
        }
    }

    /// WhatsApp cannot edit a message: it tells what became of the set, within the window.
    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, notifier: &Notifier, to: &str, message: Option<&str>, record: &QuestionRecord) -> Sent {
        if message.is_none_or(|m| m.starts_with(HELD)) {
            return Sent::Delivered; // never shown
        }
        let heard = notifier.deliveries.heard(&format!("whatsapp:{to}")).await.ok().flatten();
        if !whatsapp::in_window(heard, notifier.now_ms()) {
            return Sent::Delivered;
        }
        let payload = whatsapp::Outgoing::Text { body: whatsapp::closed(record) }.payload(to);
        match self.send(notifier.http(), &payload).await {
            Ok(_) | Err(Failed::Window) => Sent::Delivered,
            Err(Failed::Sent(sent)) => sent,
        }
    }

    fn inbound(&self) -> Vec<&'static str> {
        vec![WEBHOOK]
    }

    /// The subscription handshake: the challenge echoed for the verify token.
    fn look(&self, query: &str) -> (StatusCode, String) {
        match whatsapp::challenge(query, &self.verify_token) {
            Ok(challenge) => (StatusCode::OK, challenge),
            Err(e) => {
                tracing::warn!("refused a WhatsApp webhook handshake: {e}");
                (StatusCode::FORBIDDEN, e)
            }
        }
    }

    /// Checked against the app secret first; then acknowledged at once (Meta retries what
    /// is not answered 200 quickly) and carried out.
    async fn receive(&self, notifier: &Arc<Notifier>, _path: &str, headers: &HeaderMap, body: &[u8]) -> (StatusCode, String) {
        let signature = headers.get("x-hub-signature-256").and_then(|v| v.to_str().ok()).unwrap_or_default();
        if let Err(e) = whatsapp::verify(self.app_secret.as_bytes(), signature, body) {
            tracing::warn!("refused a request to {WEBHOOK}: {e}");
            return (StatusCode::UNAUTHORIZED, format!("not from Meta: {e}"));
        }
        let inbound = match Inbound::parse(body, &self.phone_number_id) {
            Ok(inbound) => inbound,
            Err(e) => return (StatusCode::BAD_REQUEST, e),
        };
        let (app, notifier) = (self.clone(), notifier.clone());
        tokio::spawn(async move { app.act(&notifier, inbound).await });
        (StatusCode::OK, String::new())
    }
}
