//! Reaching a person away from the screen: Web Push to paired devices ([`push`]), a
//! signed webhook and ntfy ([`channels`]), each with rules (which agents, quiet hours,
//! a delay), and answer links that answer one question with one option, once
//! ([`links`]).
//!
//! The [`Notifier`] listens to the bridge's events like a browser tab does. Nothing it
//! does can hold the bridge up: every delivery is its own task that sleeps until the
//! rules say, checks the question still waits, and sends with retries and backoff; at
//! most [`CONCURRENT_SENDS`] sends run at once. A question that closes closes its
//! notifications on every device it reached.

pub mod channels;
#[cfg(test)]
mod fixtures;
pub mod push;
pub mod slack;
pub mod slack_app;
pub mod telegram;
pub mod telegram_bot;

use crate::hub::Bridge;
use crate::lock;
use crate::store::{LinkUse, Store, StoreError, StoredLink, StoredSubscription};
use askuser_core::approval::{ALLOW, DENY};
use askuser_core::protocol::{BrowserEvent, QuestionRecord};
use askuser_core::Status;
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

/// How the bridge notifies; everything off but push (which needs a device to subscribe).
#[derive(Debug, Clone)]
pub struct NotifyOptions {
    /// Where push messages may go.
    pub push_services: push::Services,
    /// The VAPID `sub`: who runs this bridge.
    pub push_contact: String,
    pub webhook: Option<channels::Webhook>,
    pub ntfy: Option<channels::Ntfy>,
    /// A Slack app that posts question sets and takes answers from its buttons.
    pub slack: Option<slack_app::SlackApp>,
    /// A Telegram bot that sends question sets and takes answers from its buttons and
    /// from replies.
    pub telegram: Option<telegram_bot::TelegramBot>,
    /// How long an answer link works.
    pub link_ttl: Duration,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        NotifyOptions {
            push_services: push::Services::default(),
            push_contact: "mailto:askuser@localhost".into(),
            webhook: None,
            ntfy: None,
            slack: None,
            telegram: None,
            link_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// Where one notification goes.
#[derive(Debug, Clone)]
enum Target {
    Push(StoredSubscription),
    Webhook,
    Ntfy,
    /// A Slack channel (its id).
    Slack(String),
    /// A Telegram chat (its id).
    Telegram(i64),
}

impl Target {
    /// Which target this is, as the store records it.
    fn key(&self) -> String {
        match self {
            Target::Push(sub) => format!("push:{}", sub.endpoint),
            Target::Slack(channel) => format!("slack:{channel}"),
            Target::Telegram(chat) => format!("telegram:{chat}"),
            t => t.channel().to_owned(),
        }
    }

    fn channel(&self) -> &'static str {
        match self {
            Target::Push(_) => "push",
            Target::Webhook => "webhook",
            Target::Ntfy => "ntfy",
            Target::Slack(_) => "slack",
            Target::Telegram(_) => "telegram",
        }
    }
}

/// A chat message to edit once its question closes.
enum Edit<'a> {
    /// A Slack channel and the message's `ts`.
    Slack(&'a str, &'a str),
    /// A Telegram chat and the message's id.
    Telegram(i64, i64),
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
    store: Arc<dyn Store>,
    /// Whose each device is: a question for someone else reaches it when it escalates.
    registry: Arc<crate::tokens::Registry>,
    options: NotifyOptions,
    pub vapid: push::Vapid,
    http: reqwest::Client,
    /// Where the bridge's links point (its public origin).
    base: String,
    /// The push endpoints each open question reached, to close it there.
    reached: Mutex<HashMap<String, Vec<StoredSubscription>>>,
    /// (question, target) pairs sent or being sent: each is sent once, also across a
    /// restart (the store keeps the sent ones).
    claimed: Mutex<HashSet<(String, String)>>,
    gate: Semaphore,
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
        let notifier = Arc::new(Notifier {
            bridge: bridge.clone(),
            store,
            registry,
            options,
            vapid,
            http: crate::tls::notify_client(),
            base,
            reached: Mutex::default(),
            claimed: Mutex::default(),
            gate: Semaphore::new(CONCURRENT_SENDS),
        });
        let me = notifier.clone();
        let mut events = bridge.subscribe();
        let mut stop = bridge.shutdown_signal();
        if let Some(bot) = notifier.options.telegram.clone() {
            tokio::spawn(telegram_bot::poll(notifier.clone(), bot));
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

    /// The push subscriptions credential `whose` made (None: the admin token's).
    pub async fn subscriptions_of(&self, whose: Option<&str>) -> Result<Vec<StoredSubscription>, StoreError> {
        Ok(self.store.subscriptions().await?.into_iter().filter(|s| s.credential.as_deref() == whose).collect())
    }

    /// Keeps push subscription `sub`; false: another credential holds its endpoint
    /// ([`crate::store::Deliveries::add_subscription`]).
    pub async fn subscribe(&self, sub: &StoredSubscription) -> Result<bool, StoreError> {
        self.store.add_subscription(sub).await
    }

    /// Forgets the subscription at `endpoint` (only credential `whose`'s, when given).
    pub async fn unsubscribe(&self, endpoint: &str, whose: Option<Option<&str>>) -> Result<bool, StoreError> {
        self.store.remove_subscription(endpoint, whose).await
    }

    /// The answer link whose key is `key`, and whether it was used, without using it.
    pub async fn link(&self, key: &str) -> Result<Option<(StoredLink, bool)>, StoreError> {
        self.store.link(&crate::tokens::hash(key)).await
    }

    /// Uses the answer link whose key is `key`, once ([`crate::store::Deliveries::use_link`]).
    pub async fn use_link(&self, key: &str) -> Result<LinkUse, StoreError> {
        self.store.use_link(&crate::tokens::hash(key), self.bridge.now_ms()).await
    }

    /// Claims sending question `id` to `target` among the bridges sharing the store (at
    /// one bridge alone there is nobody to claim against).
    async fn claim_notified(&self, id: &str, target: &str) -> Result<bool, StoreError> {
        match self.store.shared() {
            Some(shared) => shared.claim_notified(id, target, self.bridge.now_ms()).await,
            None => Ok(true),
        }
    }

    /// Claims closing question `id`'s notification at `target` ([`crate::store::Shared::claim_close`]).
    async fn claim_close(&self, id: &str, target: &str) -> Result<bool, StoreError> {
        match self.store.shared() {
            Some(shared) => shared.claim_close(id, target, self.bridge.now_ms()).await,
            None => Ok(true),
        }
    }

    /// Takes in what the store says was sent, closes what closed meanwhile (or whose
    /// close did not go out before a stop), then schedules every pending question.
    async fn resume(self: &Arc<Self>) {
        let sent = self.store.notified().await.unwrap_or_else(|e| {
            tracing::warn!("cannot read the notifications sent: {e}");
            vec![]
        });
        let subs = self.store.subscriptions().await.unwrap_or_default();
        let mut closed = HashSet::new();
        for crate::store::Notified { id, target, waits, .. } in sent {
            if target.starts_with(telegram::LEASE_PREFIX) {
                continue; // a polling lease's term, not a notification
            }
            if let Some(sub) = target.strip_prefix("push:").and_then(|e| subs.iter().find(|s| s.endpoint == e)) {
                lock(&self.reached).entry(id.clone()).or_default().push(sub.clone());
            }
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

    /// Schedules a notification of `record` for every device and channel that wants it.
    async fn asked(self: &Arc<Self>, record: &QuestionRecord) {
        let mut targets: Vec<(Target, Rules)> = vec![];
        match self.store.subscriptions().await {
            Ok(subs) => {
                for sub in subs {
                    let rules = serde_json::from_str(&sub.rules).unwrap_or_default();
                    targets.push((Target::Push(sub), rules));
                }
            }
            Err(e) => tracing::warn!("cannot read push subscriptions: {e}"),
        }
        if let Some(w) = &self.options.webhook {
            targets.push((Target::Webhook, w.rules.clone()));
        }
        if let Some(n) = &self.options.ntfy {
            targets.push((Target::Ntfy, n.rules.clone()));
        }
        let slack = self.options.slack.as_ref().and_then(|s| Some((s.route(record)?, s.rules.clone())));
        let shared_slack = slack.as_ref().is_some_and(|(route, _)| !route.own);
        if let Some((route, rules)) = slack {
            targets.push((Target::Slack(route.channel), rules));
        }
        let telegram = self.options.telegram.as_ref().and_then(|t| Some((t.route(record)?, t.rules.clone())));
        let shared_telegram = telegram.as_ref().is_some_and(|(route, _)| !route.own);
        if let Some((route, rules)) = telegram {
            targets.push((Target::Telegram(route.chat), rules));
        }
        for (target, rules) in targets {
            if !rules.wants(record) {
                continue;
            }
            // A device of someone the question is not for gets it when it escalates.
            let from = match &target {
                Target::Push(sub) => {
                    let caller = crate::tokens::Caller { scope: crate::tokens::Scope::Device, id: sub.credential.clone() };
                    self.bridge.seen_from(record, self.registry.viewer(&caller).as_ref())
                }
                // The shared channel is everyone's: a set for someone reaches it when
                // it escalates.
                Target::Slack(_) if shared_slack => self.bridge.seen_from(record, Some(&askuser_core::protocol::Viewer::default())),
                Target::Telegram(_) if shared_telegram => self.bridge.seen_from(record, Some(&askuser_core::protocol::Viewer::default())),
                _ => Some(record.created_at),
            };
            let Some(from) = from else { continue };
            let due = rules.due(from);
            let me = self.clone();
            let id = record.id.clone();
            let mut stop = self.bridge.shutdown_signal();
            tokio::spawn(async move {
                let wait = Duration::from_millis(due.saturating_sub(me.bridge.now_ms()));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = crate::hub::stopped(&mut stop) => return,
                }
                me.deliver(&id, target).await;
            });
        }
    }

    /// Sends question `id` to `target` if it still waits, retrying with backoff.
    async fn deliver(self: &Arc<Self>, id: &str, target: Target) {
        let Ok(record) = self.bridge.get(id).await else { return };
        if record.status != Status::Pending {
            return; // answered before it was due
        }
        if let Target::Push(sub) = &target {
            // Unsubscribed or revoked while this waited for its time: not sent.
            let current = self.store.subscriptions().await.unwrap_or_default();
            if !current.iter().any(|c| c.endpoint == sub.endpoint && c.credential == sub.credential) {
                return;
            }
        }
        let key = target.key();
        if !lock(&self.claimed).insert((id.to_owned(), key.clone())) {
            return; // sent already, or on its way
        }
        // Bridges sharing a store: one of them sends it.
        match self.claim_notified(id, &key).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return tracing::warn!(%id, "{e}"),
        }
        let credential = match &target {
            Target::Push(sub) => sub.credential.clone(),
            _ => None,
        };
        // Slack's and Telegram's buttons answer themselves: no answer links.
        let message = match &target {
            Target::Slack(_) | Target::Telegram(_) => None,
            _ => match self.message(&record, target.channel(), credential).await {
                Ok(m) => Some(m),
                Err(e) => return tracing::warn!(%id, "cannot make answer links: {e}"),
            },
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
                self.send(&target, message.as_ref(), &record).await
            };
            match sent {
                push::Sent::Delivered | push::Sent::Posted(_) => {
                    let posted = match &sent {
                        push::Sent::Posted(m) => Some(m.as_str()),
                        _ => None,
                    };
                    if let Err(e) = self.store.add_notified(id, &key, self.bridge.now_ms(), posted).await {
                        tracing::warn!(%id, "{e}");
                    }
                    if let Target::Push(sub) = &target {
                        lock(&self.reached).entry(id.to_owned()).or_default().push(sub.clone());
                    }
                    // It may have closed while this was on its way: close it there too.
                    if !self.waits(id).await {
                        self.closed(id);
                    }
                    return;
                }
                push::Sent::Gone => {
                    if let Target::Push(sub) = &target {
                        tracing::info!(endpoint = %sub.endpoint, "the push service says this subscription is gone: forgetting it");
                        let _ = self.store.remove_subscription(&sub.endpoint, None).await;
                    }
                    return;
                }
                push::Sent::Refused(why) => return tracing::warn!(%id, "{} refused the notification: {why}", target.channel()),
                push::Sent::Retry { why, after } => {
                    if attempt == ATTEMPTS {
                        return tracing::warn!(%id, "gave up notifying {} after {ATTEMPTS} tries: {why}", target.channel());
                    }
                    tracing::info!(%id, "{} failed ({why}); trying again", target.channel());
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

    /// A stored subscription, checked again (the allowed push services may have changed).
    fn push_target(&self, sub: &StoredSubscription) -> Result<push::Target, String> {
        let keys = push::Keys { p256dh: sub.p256dh.clone(), auth: sub.auth.clone() };
        push::Subscription { endpoint: sub.endpoint.clone(), keys }.check(&self.options.push_services)
    }

    /// Whether question `id` still waits for an answer.
    async fn waits(&self, id: &str) -> bool {
        self.bridge.get(id).await.is_ok_and(|r| r.status == Status::Pending)
    }

    /// Sends `record` to `target`: as `message` (with its answer links), or to Slack or
    /// Telegram as its own message with buttons.
    async fn send(&self, target: &Target, message: Option<&Message>, record: &QuestionRecord) -> push::Sent {
        let now_s = self.bridge.now_ms() / 1000;
        let refused = |what: &str| push::Sent::Refused(format!("no {what}"));
        match (target, message) {
            (Target::Push(sub), Some(message)) => match self.push_target(sub) {
                Ok(t) => push::send(&self.http, &self.vapid, &t, &push_payload(message), &push::topic(&message.id), now_s).await,
                Err(e) => push::Sent::Refused(e),
            },
            (Target::Webhook, Some(message)) => match &self.options.webhook {
                Some(w) => w.send(&self.http, message, now_s).await,
                None => refused("webhook"),
            },
            (Target::Ntfy, Some(message)) => match &self.options.ntfy {
                Some(n) => n.send(&self.http, message).await,
                None => refused("ntfy topic"),
            },
            (Target::Slack(channel), _) => match &self.options.slack {
                Some(slack) => {
                    let open = format!("{}/#q={}", self.base, record.id);
                    slack.post(&self.http, channel, &slack::message(record, Some(&open))).await
                }
                None => refused("Slack app"),
            },
            (Target::Telegram(chat), _) => match &self.options.telegram {
                Some(bot) => {
                    let open = telegram::open_link(&self.base, &record.id);
                    bot.post(&self.http, *chat, &telegram::message(record, Some(&open))).await
                }
                None => refused("Telegram bot"),
            },
            (_, None) => refused("message"),
        }
    }

    /// `record` as a notification for `channel`, with fresh answer links.
    async fn message(
        &self,
        record: &QuestionRecord,
        channel: &str,
        credential: Option<String>,
    ) -> Result<Message, crate::store::StoreError> {
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
        if linkable {
            for (i, choice) in linked {
                let key = crate::config::random_hex(16);
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
            self.store.add_links(&stored).await?;
        }
        Ok(Message {
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
        })
    }

    /// Tells Slack user `user` alone, in `channel`, `text` (why their press did not count).
    pub async fn tell_in_slack(&self, channel: &str, user: &str, text: &str) -> push::Sent {
        match &self.options.slack {
            Some(slack) => slack.tell(&self.http, channel, user, text).await,
            None => push::Sent::Refused("no Slack app".into()),
        }
    }

    /// The question a channel's message is about ([`crate::store::Deliveries::notified_by_message`]).
    pub async fn question_of(&self, target: &str, message: &str) -> Result<Option<String>, StoreError> {
        self.store.notified_by_message(target, message).await
    }

    /// Question `id` closed: every chat message it was posted as (Slack, Telegram) says
    /// what became of it, and shows no buttons any more (one bridge of those sharing a
    /// store edits each), tried again with backoff.
    async fn close_in_chats(self: &Arc<Self>, id: &str) {
        let Ok(record) = self.bridge.get(id).await else { return };
        let posted = match self.store.posted(id).await {
            Ok(posted) => posted,
            Err(e) => return tracing::warn!(%id, "cannot read where it was posted: {e}"),
        };
        let (slack_closed, telegram_closed) = (slack::answered(&record), telegram::answered(&record));
        for (target, message) in &posted {
            let (chat, edit) = match target.split_once(':') {
                Some(("slack", channel)) if self.options.slack.is_some() => ("Slack", Edit::Slack(channel, message)),
                Some(("telegram", chat)) if self.options.telegram.is_some() => {
                    let (Ok(chat), Ok(message_id)) = (chat.parse::<i64>(), message.parse::<i64>()) else { continue };
                    ("Telegram", Edit::Telegram(chat, message_id))
                }
                _ => continue,
            };
            if !self.claim_close(id, &format!("close:{target}")).await.unwrap_or(true) {
                continue;
            }
            let mut backoff = Duration::from_secs(1);
            for attempt in 1..=ATTEMPTS {
                let edited = {
                    let _permit = self.gate.acquire().await;
                    match (&edit, &self.options.slack, &self.options.telegram) {
                        (Edit::Slack(channel, ts), Some(slack), _) => slack.update(&self.http, channel, ts, &slack_closed).await,
                        (Edit::Telegram(chat, message_id), _, Some(bot)) => {
                            bot.edit(&self.http, *chat, *message_id, &telegram_closed).await
                        }
                        _ => break,
                    }
                };
                match edited {
                    push::Sent::Retry { why, after } if attempt < ATTEMPTS => {
                        tracing::info!(%id, "editing its {chat} message failed ({why}); trying again");
                        let mut stop = self.bridge.shutdown_signal();
                        tokio::select! {
                            _ = tokio::time::sleep(after.unwrap_or(backoff).min(Duration::from_secs(300))) => {}
                            _ = crate::hub::stopped(&mut stop) => return,
                        }
                        backoff *= 2;
                    }
                    push::Sent::Retry { why, .. } | push::Sent::Refused(why) => {
                        tracing::warn!(%id, "cannot edit its {chat} message: {why}");
                        break;
                    }
                    _ => break,
                }
            }
        }
    }

    /// Question `id` closed: its notifications close on every device it reached.
    fn closed(self: &Arc<Self>, id: &str) {
        lock(&self.claimed).retain(|(q, _)| q != id);
        let reached = lock(&self.reached).remove(id).unwrap_or_default();
        let payload = serde_json::json!({"type": "close", "tag": id}).to_string();
        let mut closing: Vec<_> = reached
            .into_iter()
            .map(|sub| {
                let me = self.clone();
                let payload = payload.clone();
                let id = id.to_owned();
                tokio::spawn(async move {
                    let Ok(target) = me.push_target(&sub) else { return };
                    // Every bridge that knows the device was reached hears the answer; one closes.
                    let key = format!("close:push:{}", sub.endpoint);
                    if !me.claim_close(&id, &key).await.unwrap_or(true) {
                        return;
                    }
                    let _permit = me.gate.acquire().await;
                    let now_s = me.bridge.now_ms() / 1000;
                    if let push::Sent::Gone = push::send(&me.http, &me.vapid, &target, payload.as_bytes(), &push::topic(&id), now_s).await {
                        let _ = me.store.remove_subscription(&sub.endpoint, None).await;
                    }
                })
            })
            .collect();
        if self.options.slack.is_some() || self.options.telegram.is_some() {
            let me = self.clone();
            let id = id.to_owned();
            closing.push(tokio::spawn(async move { me.close_in_chats(&id).await }));
        }
        // Forgotten once every close went out: a bridge stopped before that closes them
        // when it starts again.
        let me = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            for close in closing {
                if close.await.is_err() {
                    return;
                }
            }
            let _ = me.store.forget_notified(&id).await;
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
    let title = match &m.header {
        Some(h) => format!("{} asks · {}", cut(&m.agent, 60), cut(h, 40)),
        None => format!("{} asks", cut(&m.agent, 60)),
    };
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
        };
        let v: serde_json::Value = serde_json::from_slice(&push_payload(&m)).unwrap();
        assert_eq!(v["body"], text.as_str(), "not cut");
        a.input.insert("command".into(), "x".repeat(WHOLE_APPROVAL).into());
        assert!(!approval_text(&a).1, "longer: not whole, so no Allow");
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
        };
        let payload = push_payload(&m);
        assert!(payload.len() <= push::MAX_PLAINTEXT, "{}", payload.len());
        let v: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(v["actions"].as_array().unwrap().len(), 2, "two options as actions");
        assert_eq!(v["more"], true, "five options: the app answers the rest");
        assert_eq!(v["title"], "claude-code asks · Database");
    }
}
