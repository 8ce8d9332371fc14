//! Reaching a person away from the screen. Every way is a [`Channel`] ([`channel`]):
//! Web Push to paired devices (`push`), a signed webhook and ntfy (`channels`),
//! Slack (`slack_app`, its messages in `slack`), Telegram (`telegram_bot`, its
//! messages in `telegram`), WhatsApp (`whatsapp_app`, its messages in `whatsapp`),
//! Discord (`discord_bot`, its messages in `discord`) and email (`mailbox`, its mails and
//! replies in `email`), each with rules (which agents, quiet hours, a delay).
//! Push, the webhook, ntfy and email carry answer links that answer one question with one
//! option, once (`http/links.rs`); a chat's own buttons and replies (and email's replies)
//! answer through [`Notifier::answer_from_chat`].
//!
//! The [`Notifier`] listens to the bridge's events like a browser tab does. Nothing it
//! does can hold the bridge up: every delivery is its own task that sleeps until the
//! rules say, checks the question still waits, and sends with retries and backoff; at
//! most [`CONCURRENT_SENDS`] sends run at once. A question that closes closes its
//! notifications everywhere they went.

pub mod channel;
pub(crate) mod channels;
pub(crate) mod command;
pub(crate) mod discord;
pub(crate) mod discord_bot;
pub(crate) mod email;
#[cfg(test)]
mod fixtures;
pub(crate) mod mailbox;
pub(crate) mod push;
pub(crate) mod slack;
pub(crate) mod slack_app;
pub(crate) mod telegram;
pub(crate) mod telegram_bot;
pub(crate) mod whatsapp;
pub(crate) mod whatsapp_app;

pub use channels::{webhook_secret, Ntfy, Webhook};
pub use command::{short_id, USAGE as COMMAND_USAGE};
pub use discord_bot::{DiscordBot, ANSWER_WITHIN as DISCORD_ANSWER_WITHIN, API as DISCORD_API};
pub use mailbox::{Email, Security as MailSecurity, Server as MailServer};
pub use push::{topic as push_topic, Services as PushServices, Vapid};
pub use slack_app::{SlackApp, API as SLACK_API, LEASE as SLACK_LEASE};
pub use telegram_bot::{TelegramBot, API as TELEGRAM_API};
pub use whatsapp_app::{Settings as WhatsAppSettings, Template as WhatsAppTemplate, WhatsApp, API as WHATSAPP_API};

use crate::hub::Bridge;
use crate::lock;
use crate::store::{Deliveries, LinkUse, Shared, Store, StoreError, StoredLink, StoredSubscription};
use askuser_core::approval::{ALLOW, DENY};
use askuser_core::protocol::{BrowserEvent, QuestionRecord};
use askuser_core::remind::{self, Reminder};
use askuser_core::Status;
pub use channel::{Channel, Headline, NotTaken, Notice, Outcome, Reach, Route};
use push::Sent;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Semaphore;

/// Sends in flight at once, over every device and channel.
pub const CONCURRENT_SENDS: usize = 16;

/// Tries per message before it is dropped (backoff 1, 2, 4, 8 s ... or `Retry-After`).
const ATTEMPTS: u32 = 6;

/// Options shown as buttons at most: a notification shows two actions, ntfy three
/// (one of them "Answer…"); a webhook lists this many.
const MAX_LINKED: usize = 10;

/// Which questions a device or channel hears of, and when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rules {
    /// Only questions from these agents (by name or session id); empty: every agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Only if still unanswered this many seconds after it was asked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_seconds: u64,
    /// Hours without notifications; a question asked then is sent when they end (if
    /// it still waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<Quiet>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Quiet hours, `from` to `to` (`"22:00"`, `"07:00"`: over midnight when `to` is
/// earlier), in the local time of a place `utcOffsetMinutes` east of UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quiet {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub utc_offset_minutes: i32,
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// This machine's offset from UTC now, in minutes east, as `date +%z` says it (0, UTC,
/// where it cannot be read).
pub fn local_offset_minutes() -> i32 {
    let out = std::process::Command::new("date").arg("+%z").output().ok();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
    let sign = if text.starts_with('-') { -1 } else { 1 };
    let digits = text.trim_start_matches(['+', '-']);
    match (digits.len(), digits.get(..2).and_then(|h| h.parse::<i32>().ok()), digits.get(2..).and_then(|m| m.parse::<i32>().ok())) {
        (4, Some(h), Some(m)) => sign * (h * 60 + m),
        _ => 0,
    }
}

/// `"HH:MM"` as minutes after midnight.
fn minutes(field: &str, text: &str) -> Result<i64, String> {
    let parsed = text.split_once(':').and_then(|(h, m)| {
        let (h, m) = (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?);
        ((0..24).contains(&h) && (0..60).contains(&m) && text.len() <= 5).then_some(h * 60 + m)
    });
    parsed.ok_or_else(|| format!("{field}: expected a time of day as HH:MM (\"22:00\"), got {text:?}"))
}

impl Rules {
    /// Checks every field, naming the one that is wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.delay_seconds > 7 * 24 * 3600 {
            return Err(format!("rules.delaySeconds: expected at most a week (604800), got {}", self.delay_seconds));
        }
        if self.agents.len() > 100 || self.agents.iter().any(|a| a.trim().is_empty() || a.len() > 200) {
            return Err("rules.agents: expected up to 100 agent names or session ids, none empty".into());
        }
        if let Some(q) = &self.quiet {
            minutes("rules.quiet.from", &q.from)?;
            minutes("rules.quiet.to", &q.to)?;
            if q.utc_offset_minutes.abs() > 14 * 60 {
                return Err(format!("rules.quiet.utcOffsetMinutes: expected -840 to 840, got {}", q.utc_offset_minutes));
            }
        }
        Ok(())
    }

    /// Whether a question from `record`'s agent concerns this device or channel.
    pub fn wants(&self, record: &QuestionRecord) -> bool {
        if self.agents.is_empty() {
            return true;
        }
        let Some(agent) = &record.request.agent else { return false };
        self.agents.iter().any(|a| *a == agent.name || Some(a) == agent.session_id.as_ref())
    }

    /// When a question asked at `asked_ms` should be sent: after the delay, and not
    /// during quiet hours (then when they end).
    pub fn due(&self, asked_ms: u64) -> u64 {
        let at = asked_ms.saturating_add(self.delay_seconds.saturating_mul(1000));
        let Some(q) = &self.quiet else { return at };
        let (Ok(from), Ok(to)) = (minutes("", &q.from), minutes("", &q.to)) else { return at };
        let (from, to) = (from * 60_000, to * 60_000);
        let offset = i64::from(q.utc_offset_minutes) * 60_000;
        let local = i64::try_from(at).unwrap_or(i64::MAX / 2) + offset;
        let of_day = local.rem_euclid(DAY_MS);
        let quiet_for = if from <= to {
            (of_day >= from && of_day < to).then(|| to - of_day)
        } else if of_day >= from {
            Some(DAY_MS - of_day + to)
        } else {
            (of_day < to).then(|| to - of_day)
        };
        at + quiet_for.map_or(0, |ms| u64::try_from(ms).unwrap_or(0))
    }
}

/// How the bridge notifies: push (which needs a device to subscribe) and the channels
/// added ([`NotifyOptions::add`]).
#[derive(Clone)]
pub struct NotifyOptions {
    /// Where push messages may go.
    pub push_services: push::Services,
    /// The VAPID `sub`: who runs this bridge.
    pub push_contact: String,
    /// How long an answer link works.
    pub link_ttl: Duration,
    /// The channels besides push (the webhook, ntfy, Slack, Telegram, ...).
    pub channels: Vec<Arc<dyn Channel>>,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        NotifyOptions {
            push_services: push::Services::default(),
            push_contact: "mailto:askuser@localhost".into(),
            link_ttl: Duration::from_secs(24 * 3600),
            channels: vec![],
        }
    }
}

/// Names the channels, never what they hold.
impl std::fmt::Debug for NotifyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let channels: Vec<_> = self.channels.iter().map(|c| c.name()).collect();
        f.debug_struct("NotifyOptions")
            .field("push_services", &self.push_services)
            .field("link_ttl", &self.link_ttl)
            .field("channels", &channels)
            .finish()
    }
}

impl NotifyOptions {
    /// Adds `channel` (one of each kind: a second of the same name replaces the first).
    pub fn add(&mut self, channel: impl Channel) -> &mut Self {
        self.channels.retain(|c| c.name() != channel.name());
        self.channels.push(Arc::new(channel));
        self
    }

    /// The channel of type `T`, if added.
    pub fn channel<T: Channel>(&self) -> Option<&T> {
        self.channels.iter().find_map(|c| (&**c as &dyn std::any::Any).downcast_ref::<T>())
    }
}

/// A question as a notification says it, with one answer link per linked option.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub question: String,
    /// The options a tap can answer with (only for one question with options).
    pub options: Vec<LinkedOption>,
    /// Whether the question has more to answer than these links (more options, Other,
    /// more questions): then only the app answers it fully.
    pub more: bool,
    /// The page, opened on this question.
    pub open: String,
    /// On a reminder, what it says first (`Reminder: still waiting since 14:05 (10
    /// min)`), which `question` then starts with too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminder: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkedOption {
    pub label: String,
    /// The answer link: a confirmation page on GET, the answer on POST.
    pub link: String,
}

pub struct Notifier {
    bridge: Arc<Bridge>,
    /// Where deliveries are kept (subscriptions, links, what reached whom): only the
    /// notifier reads and writes them.
    deliveries: Arc<dyn Deliveries>,
    /// Claims and leases, when other bridges share the store.
    shared: Option<Arc<dyn Shared>>,
    /// Whose each device is: a question for someone else reaches it when it escalates.
    registry: Arc<crate::tokens::Registry>,
    options: NotifyOptions,
    /// Push, then the channels added.
    channels: Vec<Arc<dyn Channel>>,
    pub vapid: push::Vapid,
    http: reqwest::Client,
    /// Where the bridge's links point (its public origin).
    base: String,
    /// The places (as the store keys them) each open question reached at this bridge,
    /// to close it there ([`Channel::close`]).
    reached: Mutex<HashMap<String, Vec<String>>>,
    /// (question, target) pairs sent or being sent: each is sent once, also across a
    /// restart (the store keeps the sent ones).
    claimed: Mutex<HashSet<(String, String)>>,
    gate: Semaphore,
    /// This machine's offset from UTC (minutes east): the time of day a reminder says.
    utc_offset_minutes: i32,
}

impl Notifier {
    /// Starts listening to `bridge`; links point to `base` (`https://host:port`).
    pub fn start(
        bridge: Arc<Bridge>,
        store: Arc<dyn Store>,
        registry: Arc<crate::tokens::Registry>,
        options: NotifyOptions,
        vapid: push::Vapid,
        base: String,
    ) -> Arc<Notifier> {
        let channels = std::iter::once(Arc::new(push::Push) as Arc<dyn Channel>).chain(options.channels.iter().cloned()).collect();
        let notifier = Arc::new(Notifier {
            bridge: bridge.clone(),
            shared: store.clone().shared(),
            deliveries: store,
            registry,
            options,
            channels,
            vapid,
            http: crate::tls::notify_client(),
            base,
            reached: Mutex::default(),
            claimed: Mutex::default(),
            gate: Semaphore::new(CONCURRENT_SENDS),
            utc_offset_minutes: local_offset_minutes(),
        });
        let me = notifier.clone();
        let mut events = bridge.subscribe();
        let mut stop = bridge.shutdown_signal();
        for channel in &notifier.channels {
            channel.clone().start(notifier.clone());
        }
        tokio::spawn(async move {
            // What a previous run sent is not sent again (and closes when answered);
            // what it had not sent yet (a delay, quiet hours) is scheduled again.
            me.resume().await;
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    _ = crate::hub::stopped(&mut stop) => return,
                };
                match event {
                    Ok(BrowserEvent::Asked { question }) => me.asked(&question).await,
                    Ok(BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. }) => me.closed(&id),
                    Ok(_) => {}
                    // Fell behind: what was asked meanwhile is still pending in the store.
                    Err(RecvError::Lagged(_)) => me.schedule_pending().await,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        notifier
    }

    pub fn options(&self) -> &NotifyOptions {
        &self.options
    }

    /// Push, then the channels added.
    pub fn channels(&self) -> &[Arc<dyn Channel>] {
        &self.channels
    }

    /// The client every channel sends with (no redirects, the bridge's TLS).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The bridge's clock (ms since the Unix epoch).
    pub fn now_ms(&self) -> u64 {
        self.bridge.now_ms()
    }

    /// The bridge's public origin (`https://host:port`), which links point to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A future that ends when the bridge stops (for a channel's own tasks).
    pub async fn stopped(&self) {
        crate::hub::stopped(&mut self.bridge.shutdown_signal()).await
    }

    /// The push subscriptions credential `whose` made (None: the admin token's).
    pub async fn subscriptions_of(&self, whose: Option<&str>) -> Result<Vec<StoredSubscription>, StoreError> {
        Ok(self.deliveries.subscriptions().await?.into_iter().filter(|s| s.credential.as_deref() == whose).collect())
    }

    /// Keeps push subscription `sub`; false: another credential holds its endpoint
    /// ([`crate::store::Deliveries::add_subscription`]).
    pub async fn subscribe(&self, sub: &StoredSubscription) -> Result<bool, StoreError> {
        self.deliveries.add_subscription(sub).await
    }

    /// Forgets the subscription at `endpoint` (only credential `whose`'s, when given).
    pub async fn unsubscribe(&self, endpoint: &str, whose: Option<Option<&str>>) -> Result<bool, StoreError> {
        self.deliveries.remove_subscription(endpoint, whose).await
    }

    /// The answer link whose key is `key`, and whether it was used, without using it.
    pub async fn link(&self, key: &str) -> Result<Option<(StoredLink, bool)>, StoreError> {
        self.deliveries.link(&crate::tokens::hash(key)).await
    }

    /// Uses the answer link whose key is `key`, once ([`crate::store::Deliveries::use_link`]).
    pub async fn use_link(&self, key: &str) -> Result<LinkUse, StoreError> {
        self.deliveries.use_link(&crate::tokens::hash(key), self.bridge.now_ms()).await
    }

    /// Claims sending question `id` to `target` among the bridges sharing the store (at
    /// one bridge alone there is nobody to claim against).
    async fn claim_notified(&self, id: &str, target: &str) -> Result<bool, StoreError> {
        match self.shared.as_deref() {
            Some(shared) => shared.claim_notified(id, target, self.bridge.now_ms()).await,
            None => Ok(true),
        }
    }

    /// Claims closing question `id`'s notification at `target` ([`crate::store::Shared::claim_close`]).
    async fn claim_close(&self, id: &str, target: &str) -> Result<bool, StoreError> {
        match self.shared.as_deref() {
            Some(shared) => shared.claim_close(id, target, self.bridge.now_ms()).await,
            None => Ok(true),
        }
    }

    /// Takes in what the store says was sent, closes what closed meanwhile (or whose
    /// close did not go out before a stop), then schedules every pending question.
    async fn resume(self: &Arc<Self>) {
        let sent = self.deliveries.notified().await.unwrap_or_else(|e| {
            tracing::warn!("cannot read the notifications sent: {e}");
            vec![]
        });
        let mut closed = HashSet::new();
        for crate::store::Notified { id, target, waits, .. } in sent {
            if target.starts_with("close:") {
                continue; // a claim to close (or a polling lease's term), not a notification
            }
            lock(&self.reached).entry(id.clone()).or_default().push(target.clone());
            if !waits {
                closed.insert(id.clone());
            }
            lock(&self.claimed).insert((id, target));
        }
        for id in closed {
            self.closed(&id);
        }
        self.schedule_pending().await;
    }

    /// Schedules every pending question (a target already claimed is skipped when due).
    async fn schedule_pending(self: &Arc<Self>) {
        for record in self.bridge.list(crate::store::Filter::Pending, 10_000, None).await.unwrap_or_default() {
            self.asked(&record).await;
        }
    }

    /// Schedules a notification of `record` for every place of every channel that wants it.
    async fn asked(self: &Arc<Self>, record: &QuestionRecord) {
        for channel in &self.channels {
            for route in channel.routes(self, record).await {
                if !route.rules.wants(record) {
                    continue;
                }
                // A place of someone the set is not for (a shared chat, another person's
                // device) gets it when it escalates.
                let Some(from) = self.reached_from(record, &route) else { continue };
                let due = route.rules.due(from);
                let (me, id, channel) = (self.clone(), record.id.clone(), channel.clone());
                self.at(due, async move { me.deliver(&id, &*channel, route, None).await });
            }
        }
        // Its reminders, from the store's times (a restart schedules them again; what was
        // sent is claimed): after a bridge was down through two, only the latest.
        for (at, reminder) in remind::remaining(&record.request, record.created_at, self.now_ms()) {
            let (me, id) = (self.clone(), record.id.clone());
            self.at(at, async move { me.remind(&id, reminder, at).await });
        }
    }

    /// Runs `then` in a task of its own at bridge time `at` (ms), unless the bridge stops first.
    fn at(&self, at: u64, then: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut stop = self.bridge.shutdown_signal();
        let wait = Duration::from_millis(at.saturating_sub(self.bridge.now_ms()));
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(wait) => then.await,
                _ = crate::hub::stopped(&mut stop) => {}
            }
        });
    }

    /// From when `route` is for `record` (None: never).
    fn reached_from(&self, record: &QuestionRecord, route: &Route) -> Option<u64> {
        match &route.reach {
            Reach::Asked => Some(record.created_at),
            Reach::Everyone => self.bridge.seen_from(record, Some(&askuser_core::protocol::Viewer::default())),
            Reach::Viewer(viewer) => self.bridge.seen_from(record, viewer.as_ref()),
        }
    }

    /// Reminder `reminder` of question set `id`, due at `at`: the set again, marked as a
    /// reminder, to every place whose notice was due before (a place it reaches only now,
    /// as it escalates, gets its first notice instead), each once among bridges sharing a
    /// store; quiet hours hold it as they hold a notice.
    async fn remind(self: &Arc<Self>, id: &str, reminder: Reminder, at: u64) {
        let Ok(record) = self.bridge.get(id).await else { return };
        if record.status != Status::Pending {
            return;
        }
        for channel in &self.channels {
            for route in channel.routes(self, &record).await {
                let Some(from) = self.reached_from(&record, &route).filter(|_| route.rules.wants(&record)) else { continue };
                if route.rules.due(from) >= at {
                    continue;
                }
                let due = Rules { delay_seconds: 0, ..route.rules.clone() }.due(at);
                let (me, id, channel) = (self.clone(), id.to_owned(), channel.clone());
                let mut stop = self.bridge.shutdown_signal();
                tokio::spawn(async move {
                    let wait = Duration::from_millis(due.saturating_sub(me.bridge.now_ms()));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = crate::hub::stopped(&mut stop) => return,
                    }
                    me.deliver(&id, &*channel, route, Some(reminder)).await;
                });
            }
        }
    }

    /// Sends question `id` (as `reminder`, if one) to `route` of `channel` if it still
    /// waits, retrying with backoff.
    async fn deliver(self: &Arc<Self>, id: &str, channel: &dyn Channel, route: Route, reminder: Option<Reminder>) {
        let Ok(record) = self.bridge.get(id).await else { return };
        if record.status != Status::Pending {
            return; // answered before it was due
        }
        let name = channel.name();
        // A reminder is a message of its own: kept (and claimed) as `remind1:slack:C0123`.
        let key = match reminder {
            Some(r) => format!("{}:{}", r.key(), route.key(name)),
            None => route.key(name),
        };
        if !lock(&self.claimed).insert((id.to_owned(), key.clone())) {
            return; // sent already, or on its way
        }
        // Bridges sharing a store: one of them sends it.
        match self.claim_notified(id, &key).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return tracing::warn!(%id, "{e}"),
        }
        let links = channel.links().then(|| (name, route.credential.clone()));
        let notice = match self.notice(&record, links).await {
            Ok(notice) if reminder.is_some() => notice.reminder(self.bridge.now_ms(), self.utc_offset_minutes),
            Ok(notice) => notice,
            Err(e) => return tracing::warn!(%id, "cannot make answer links: {e}"),
        };
        let mut backoff = Duration::from_secs(1);
        for attempt in 1..=ATTEMPTS {
            // Also before the first attempt: the claim above succeeds too when the
            // question closed meanwhile and its records were forgotten (which frees
            // the claim), and an ask must not follow its own close.
            if !self.waits(id).await {
                return; // answered meanwhile
            }
            let sent = {
                let _permit = self.gate.acquire().await;
                channel.post(self, &route, &notice).await
            };
            match sent {
                Sent::Delivered | Sent::Posted(_) => {
                    let posted = match &sent {
                        Sent::Posted(m) => Some(m.as_str()),
                        _ => None,
                    };
                    if let Err(e) = self.deliveries.add_notified(id, &key, self.bridge.now_ms(), posted).await {
                        tracing::warn!(%id, "{e}");
                    }
                    lock(&self.reached).entry(id.to_owned()).or_default().push(key);
                    // It may have closed while this was on its way: close it there too.
                    if !self.waits(id).await {
                        self.closed(id);
                    }
                    return;
                }
                Sent::Gone => return, // the channel forgot the place
                Sent::Refused(why) => {
                    let why = channel::scrub(&why, &channel.secrets());
                    return tracing::warn!(%id, "{name} refused the notification: {why}");
                }
                Sent::Retry { why, after } => {
                    let why = channel::scrub(&why, &channel.secrets());
                    if attempt == ATTEMPTS {
                        return tracing::warn!(%id, "gave up notifying {name} after {ATTEMPTS} tries: {why}");
                    }
                    tracing::info!(%id, "{name} failed ({why}); trying again");
                    let mut stop = self.bridge.shutdown_signal();
                    tokio::select! {
                        _ = tokio::time::sleep(after.unwrap_or(backoff).min(Duration::from_secs(300))) => {}
                        _ = crate::hub::stopped(&mut stop) => return,
                    }
                    backoff *= 2;
                }
            }
        }
    }

    /// Whether question `id` still waits for an answer.
    async fn waits(&self, id: &str) -> bool {
        self.bridge.get(id).await.is_ok_and(|r| r.status == Status::Pending)
    }

    /// `record` as a notice; with `links` (the channel and the credential they act
    /// for), with fresh answer links.
    async fn notice(&self, record: &QuestionRecord, links: Option<(&str, Option<String>)>) -> Result<Notice, StoreError> {
        let questions = &record.request.questions;
        let first = questions.first();
        let linkable = questions.len() == 1;
        let choices = first.map(|q| q.options.as_slice()).unwrap_or_default();
        let expires_at = self.bridge.now_ms() + self.options.link_ttl.as_millis() as u64;
        let mut stored = vec![];
        let mut options = vec![];
        // An approval links Allow (when the notification shows it whole) and Deny (a
        // deny from a link asks for no message); "Always allow" and a message need the page.
        let approval = record.request.approval.as_ref().filter(|a| a.is_permission()).map(approval_text);
        let linked: Vec<_> = match &approval {
            Some((_, whole)) => {
                let offered: &[&str] = if *whole { &[ALLOW, DENY] } else { &[DENY] };
                choices.iter().enumerate().filter(|(_, c)| offered.contains(&c.label.as_str())).collect()
            }
            None => choices.iter().enumerate().take(MAX_LINKED).collect(),
        };
        if let (true, Some((channel, credential))) = (linkable, links) {
            for (i, choice) in linked {
                let key = crate::files::random_hex(16);
                stored.push(StoredLink {
                    hash: crate::tokens::hash(&key),
                    question_id: record.id.clone(),
                    option: i,
                    channel: channel.to_owned(),
                    credential: credential.clone(),
                    expires_at,
                });
                options.push(LinkedOption { label: choice.label.clone(), link: format!("{}/a/{key}", self.base) });
            }
            self.deliveries.add_links(&stored).await?;
        }
        let message = Message {
            id: record.id.clone(),
            agent: askuser_core::inbox::agent_name(record),
            header: first.and_then(|q| q.header.clone()),
            more: !linkable || choices.len() > options.len() || choices.is_empty(),
            question: match approval {
                Some((text, _)) => text,
                None => first.map(|q| askuser_core::text::summary(&q.question)).unwrap_or_default(),
            },
            options,
            open: format!("{}/#q={}", self.base, record.id),
            reminder: None,
        };
        Ok(Notice { record: record.clone(), message, reminder: None })
    }

    /// The question a channel's message is about ([`crate::store::Deliveries::notified_by_message`]):
    /// the set's first message at `target`, or a reminder of it.
    pub async fn question_of(&self, target: &str, message: &str) -> Result<Option<String>, StoreError> {
        if let Some(id) = self.deliveries.notified_by_message(target, message).await? {
            return Ok(Some(id));
        }
        for reminder in [Reminder::Again, Reminder::Escalate] {
            if let Some(id) = self.deliveries.notified_by_message(&format!("{}:{target}", reminder.key()), message).await? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The channel a place the store keys (`slack:C0123`, `webhook`, a reminder's
    /// `remind1:slack:C0123`) is in, and the place.
    fn place<'a>(&self, key: &'a str) -> Option<(&Arc<dyn Channel>, &'a str)> {
        let key = key.split_once(':').filter(|(r, _)| Reminder::from_key(r).is_some()).map_or(key, |(_, place)| place);
        let (name, to) = key.split_once(':').unwrap_or((key, ""));
        self.channels.iter().find(|c| c.name() == name).map(|c| (c, to))
    }

    /// Question `id` closed: every place it reached that changes what it showed (a chat
    /// message, a device's notification) says what became of it; one bridge of those
    /// sharing a store closes each, tried again with backoff.
    async fn close_at(self: &Arc<Self>, id: &str, channel: &dyn Channel, key: &str, to: &str, message: Option<&str>) {
        if !self.claim_close(id, &format!("close:{key}")).await.unwrap_or(true) {
            return;
        }
        let Ok(record) = self.bridge.get(id).await else { return };
        let name = channel.name();
        let mut backoff = Duration::from_secs(1);
        for attempt in 1..=ATTEMPTS {
            let closed = {
                let _permit = self.gate.acquire().await;
                channel.close(self, to, message, &record).await
            };
            match closed {
                Sent::Retry { why, after } if attempt < ATTEMPTS => {
                    let why = channel::scrub(&why, &channel.secrets());
                    tracing::info!(%id, "closing it in {name} failed ({why}); trying again");
                    let mut stop = self.bridge.shutdown_signal();
                    tokio::select! {
                        _ = tokio::time::sleep(after.unwrap_or(backoff).min(Duration::from_secs(300))) => {}
                        _ = crate::hub::stopped(&mut stop) => return,
                    }
                    backoff *= 2;
                }
                Sent::Retry { why, .. } | Sent::Refused(why) => {
                    let why = channel::scrub(&why, &channel.secrets());
                    return tracing::warn!(%id, "cannot close it in {name}: {why}");
                }
                _ => return,
            }
        }
    }

    /// Question `id` closed: its notifications close everywhere they went (what this
    /// bridge sent, and the messages the store says any bridge posted).
    fn closed(self: &Arc<Self>, id: &str) {
        lock(&self.claimed).retain(|(q, _)| q != id);
        let reached = lock(&self.reached).remove(id).unwrap_or_default();
        let me = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let posted = match me.deliveries.posted(&id).await {
                Ok(posted) => posted,
                Err(e) => {
                    tracing::warn!(%id, "cannot read where it was posted: {e}");
                    vec![]
                }
            };
            let mut places: Vec<(String, Option<String>)> = posted.into_iter().map(|(key, m)| (key, Some(m))).collect();
            for key in reached {
                if !places.iter().any(|(k, _)| *k == key) {
                    places.push((key, None));
                }
            }
            let closing: Vec<_> = places
                .into_iter()
                .filter_map(|(key, message)| {
                    let (channel, to) = me.place(&key).filter(|(c, _)| c.closes())?;
                    let (me, id, channel, to) = (me.clone(), id.clone(), channel.clone(), to.to_owned());
                    Some(tokio::spawn(async move { me.close_at(&id, &*channel, &key, &to, message.as_deref()).await }))
                })
                .collect();
            // Forgotten once every close went out: a bridge stopped before that closes
            // them when it starts again.
            for close in closing {
                if close.await.is_err() {
                    return;
                }
            }
            let _ = me.deliveries.forget_notified(&id).await;
        });
    }
}

/// The most characters of an approval a notification says whole: a push body is cut at
/// 1,000 (less when it holds wide characters), and a notification shows only so much.
const WHOLE_APPROVAL: usize = 600;

/// An approval as a notification says it: "Run this command in /srv/app?" and the
/// command or diff, whole (`true`), or its start and where to see the rest (`false`:
/// then it offers no Allow, as the person would allow what they did not see).
fn approval_text(approval: &askuser_core::approval::Approval) -> (String, bool) {
    let Some(view) = approval.view() else { return (approval.title(), false) };
    let text = match view.shown.as_text().filter(|code| !code.trim().is_empty()) {
        Some(code) => format!("{}\n{}", view.title, code.trim_end()),
        None => view.title,
    };
    if text.chars().count() <= WHOLE_APPROVAL {
        return (text, true);
    }
    let start: String = text.chars().take(WHOLE_APPROVAL / 2).collect();
    (format!("{start}…\n(Too long to show here whole: open askuser to see all of it and allow it.)"), false)
}

/// The push message for `m`: what the service worker shows (`web/sw.js`), within the
/// size a push service takes (long text is cut).
pub fn push_payload(m: &Message) -> Vec<u8> {
    let cut = |s: &str, n: usize| -> String {
        if s.chars().count() <= n {
            s.to_owned()
        } else {
            s.chars().take(n - 1).chain(['…']).collect()
        }
    };
    let title = Headline { agent: m.agent.clone(), chip: m.header.clone(), id: None }.line(60, 40, cut);
    let actions: Vec<_> = m.options.iter().take(2).map(|o| serde_json::json!({"title": cut(&o.label, 40), "link": o.link})).collect();
    let more = m.more || m.options.len() > 2;
    let mut body = 1000;
    loop {
        let payload = serde_json::json!({
            "type": "ask", "tag": m.id, "title": title, "body": cut(&m.question, body),
            "actions": actions, "more": more, "open": m.open,
        })
        .to_string();
        if payload.len() <= push::MAX_PLAINTEXT || body < 20 {
            return payload.into_bytes();
        }
        body /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000;
    const MIN: u64 = 60_000;

    #[test]
    fn quiet_hours_hold_a_question_until_they_end() {
        let day = 20_000 * 24 * H; // a midnight, UTC
        let quiet = |from: &str, to: &str, offset| Rules {
            quiet: Some(Quiet { from: from.into(), to: to.into(), utc_offset_minutes: offset }),
            ..Rules::default()
        };
        let night = quiet("22:00", "07:00", 0);
        assert_eq!(night.due(day + 12 * H), day + 12 * H, "noon is not quiet");
        assert_eq!(night.due(day + 23 * H), day + 31 * H, "23:00 waits until 07:00 the next day");
        assert_eq!(night.due(day + 3 * H), day + 7 * H, "03:00 waits until 07:00");
        assert_eq!(night.due(day + 7 * H), day + 7 * H, "07:00 is awake");
        let lunch = quiet("12:00", "13:30", 0);
        assert_eq!(lunch.due(day + 12 * H + 10 * MIN), day + 13 * H + 30 * MIN);
        // 22:00 in Berlin (UTC+1) is 21:00 UTC.
        let berlin = quiet("22:00", "07:00", 60);
        assert_eq!(berlin.due(day + 21 * H), day + 30 * H, "until 07:00 Berlin = 06:00 UTC");
        assert_eq!(berlin.due(day + 20 * H), day + 20 * H);
        // A delay first, then quiet hours.
        let both = Rules { delay_seconds: 3600, ..night };
        assert_eq!(both.due(day + 21 * H + 30 * MIN), day + 31 * H);
    }

    #[test]
    fn rules_name_the_wrong_field() {
        let bad = |v: serde_json::Value| serde_json::from_value::<Rules>(v).map_err(|e| e.to_string()).and_then(|r| r.check());
        assert!(bad(serde_json::json!({"quiet": {"from": "25:00", "to": "07:00"}})).unwrap_err().contains("rules.quiet.from"));
        assert!(bad(serde_json::json!({"quiet": {"from": "22:00", "to": "7"}})).unwrap_err().contains("rules.quiet.to"));
        assert!(bad(serde_json::json!({"delaySeconds": 9_000_000})).unwrap_err().contains("rules.delaySeconds"));
        assert!(bad(serde_json::json!({"agents": [""]})).unwrap_err().contains("rules.agents"));
        assert!(bad(serde_json::json!({"volume": 3})).unwrap_err().contains("volume"));
        assert_eq!(bad(serde_json::json!({"agents": ["ci"], "delaySeconds": 30})), Ok(()));
    }

    #[test]
    fn an_approval_said_whole_stays_whole_in_a_push_message() {
        // What a notification offers Allow for is what the push body holds, even in wide characters.
        let mut a = askuser_core::approval::Approval::from_claude(
            &serde_json::json!({"tool_name": "Bash", "input": {"command": "😀\"".repeat(280)}}),
        )
        .unwrap();
        a.cwd = Some("/srv/app".into());
        let (text, whole) = approval_text(&a);
        assert!(whole && text.chars().count() <= WHOLE_APPROVAL, "{}", text.chars().count());
        let links = (0..2).map(|i| LinkedOption { label: "Allow".into(), link: format!("https://h/a/{i:032}") }).collect();
        let m = Message {
            id: "q-1".into(),
            agent: "a".repeat(100),
            header: None,
            question: text.clone(),
            options: links,
            more: true,
            open: "https://h/#q=q-1".into(),
            reminder: None,
        };
        let v: serde_json::Value = serde_json::from_slice(&push_payload(&m)).unwrap();
        assert_eq!(v["body"], text.as_str(), "not cut");
        a.input.insert("command".into(), "x".repeat(WHOLE_APPROVAL).into());
        assert!(!approval_text(&a).1, "longer: not whole, so no Allow");
    }

    /// A reminder says so first in every channel, and the set below it is the same.
    #[test]
    fn a_reminder_is_marked_in_slack_and_telegram_above_the_same_set() {
        use crate::notify::fixtures::{record, single};
        let mut set = record(vec![single(&["PostgreSQL", "SQLite"])]);
        set.request.questions[0].question = "Which database? Run `make db` first.".into();
        let line = "Reminder: still waiting since 12:00 (10 min)";
        let (plain, reminded) = (slack::message(&set, None), slack::reminder(&set, None, line));
        assert_eq!(reminded["blocks"][0]["text"]["text"], format!("{line} · claude-code asks · DB · id {}", command::short_id(&set.id)));
        assert!(reminded["text"].as_str().unwrap().starts_with(line));
        assert_eq!(plain["blocks"].as_array().unwrap()[1..], reminded["blocks"].as_array().unwrap()[1..], "the same set below");
        let (plain, reminded) = (telegram::message(&set, None), telegram::reminder(&set, None, Some(line)));
        assert_eq!(reminded.text, format!("{line}\n{}", plain.text));
        assert_eq!(reminded.keyboard, plain.keyboard);
        let shift = telegram::len16(line) + 1;
        let code = &reminded.entities[0];
        assert_eq!((code.offset, code.length), (plain.entities[0].offset + shift, plain.entities[0].length), "code stays over `make db`");
    }

    #[test]
    fn a_push_message_fits_what_push_services_take() {
        let m = Message {
            id: "q-1".into(),
            agent: "claude-code".into(),
            header: Some("Database".into()),
            question: "é".repeat(20_000),
            options: (0..5)
                .map(|i| LinkedOption { label: format!("option {i} ").repeat(50), link: format!("https://h/a/{i:032}") })
                .collect(),
            more: false,
            open: "https://h/#q=q-1".into(),
            reminder: None,
        };
        let payload = push_payload(&m);
        assert!(payload.len() <= push::MAX_PLAINTEXT, "{}", payload.len());
        let v: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(v["actions"].as_array().unwrap().len(), 2, "two options as actions");
        assert_eq!(v["more"], true, "five options: the app answers the rest");
        assert_eq!(v["title"], "claude-code asks · Database");
    }
}
