//! What a notification channel is: a [`Channel`] says where a question set goes in it
//! ([`Channel::routes`]), sends it there ([`Channel::post`]) from one model of what a
//! notification says ([`Notice`]), changes what it sent once the set closes
//! ([`Channel::close`]) and runs what it needs beside the notifier ([`Channel::start`]: a
//! poll, a gateway connection). A chat whose messages answer hands what a person chose to
//! [`super::Notifier::answer_from_chat`]. The notifier does the rest for every channel
//! alike: rules, when a set is due, sending each once among bridges sharing a store,
//! retries with backoff, closing everywhere it went.
//!
//! A channel is added by one implementation and one registration
//! ([`super::NotifyOptions::add`]; `tests/integration/channel.rs` adds one from outside).
//!
//! # How a chat answers
//! Answers that arrive over a gateway connection (Slack's Socket Mode, Discord's gateway)
//! come from the channel's own task ([`Channel::start`], handed the notifier); bridges
//! sharing a store run one such connection at a time, each in the terms it claimed
//! ([`Lease`], [`Turns`]), as Telegram's poller does. Answers a service posts
//! to the bridge (a WhatsApp webhook, Slack's actions without Socket Mode) come to
//! [`Channel::receive`] at the paths [`Channel::inbound`] names, the raw body kept for the
//! signature. Either way [`super::Notifier::answer_from_chat`] takes them. A channel that
//! may only write within a window (WhatsApp: 24 hours after the person last wrote) keeps
//! when it last heard from each place and leaves a place out of [`Channel::routes`], or
//! sends a template from [`Channel::post`], once the window closed. Email takes answer
//! links ([`Channel::links`]) and reads replies in its own task (IMAP, `mailbox.rs`).

/// The attribute a [`Channel`] is implemented under (`#[channel::async_trait]`), so an
/// implementation elsewhere needs no dependency of its own.
pub use async_trait::async_trait;

/// What became of one message (a channel's [`Channel::post`] and [`Channel::close`]).
pub use super::push::Sent;
use super::{Message, Notifier, Rules};
use askuser_core::protocol::{QuestionRecord, Viewer};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use std::sync::Arc;

/// Where one notification of a question set goes within its channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The place within the channel (a Slack channel's id, a Telegram chat's id, a
    /// device's push endpoint); empty for a channel with one place (a webhook).
    pub to: String,
    /// From when the set is for this place.
    pub reach: Reach,
    /// Which sets it hears of, and when.
    pub rules: Rules,
    /// The credential whose answer links these are (a device's), if any.
    pub credential: Option<String>,
}

impl Route {
    /// The channel's one place, reached at once.
    pub fn one(rules: &Rules) -> Route {
        Route { to: String::new(), reach: Reach::Asked, rules: rules.clone(), credential: None }
    }

    /// Place `to`: `own` when it is the set's person's or team's own (reached at once),
    /// else a shared place, reached when everyone may see the set (when it escalates).
    pub fn to(to: impl Into<String>, own: bool, rules: &Rules) -> Route {
        let reach = if own { Reach::Asked } else { Reach::Everyone };
        Route { to: to.into(), reach, rules: rules.clone(), credential: None }
    }

    /// How the store records it: `NAME` or `NAME:PLACE` (`slack:C0123`, `push:https://…`).
    pub fn key(&self, channel: &str) -> String {
        match self.to.as_str() {
            "" => channel.to_owned(),
            to => format!("{channel}:{to}"),
        }
    }
}

/// From when a set is for a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// As soon as it is asked (a place that hears of every set, or the set's person's own).
    Asked,
    /// When everyone may see it: a shared place hears of a set for someone when it escalates.
    Everyone,
    /// When this person may (None: no one's, who sees every set).
    Viewer(Option<Viewer>),
}

/// What a notification of a question set says, for every channel to render its way.
#[derive(Debug, Clone)]
pub struct Notice {
    pub record: QuestionRecord,
    /// The set as a notification with answer links says it: the links only for a channel
    /// that takes them ([`Channel::links`]).
    pub message: Message,
    /// On a reminder, what it says first: `Reminder: still waiting since 14:05 (10 min)`
    /// ([`askuser_core::remind::reminder_line`]); a channel shows it above the set.
    pub reminder: Option<String>,
}

impl Notice {
    /// Who asks, and the chip of a lone question.
    pub fn headline(&self) -> Headline {
        Headline::of(&self.record)
    }

    /// This notice as a reminder at `now`: marked, and its message's text starting with
    /// the mark (so push, the webhook and ntfy say it with no code of their own).
    pub fn reminder(mut self, now: u64, utc_offset_minutes: i32) -> Notice {
        let line = askuser_core::remind::reminder_line(self.record.created_at, now, utc_offset_minutes);
        self.message.question = format!("{line}\n{}", self.message.question);
        self.message.reminder = Some(line.clone());
        self.reminder = Some(line);
        self
    }
}

/// "{agent} asks · {chip} · id {id}": who asks, for one question its chip, and the set's
/// short id a typed command names it by (`approve a1b2c3`, [`super::command`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    pub agent: String,
    pub chip: Option<String>,
    /// The set's short id ([`super::command::short_id`]); none where no command answers.
    pub id: Option<String>,
}

impl Headline {
    /// `record`'s: its agent, and the chip of a lone question (not blank).
    pub fn of(record: &QuestionRecord) -> Headline {
        let questions = &record.request.questions;
        let chip = match questions.as_slice() {
            [q] => q.header.clone().filter(|c| !c.trim().is_empty()),
            _ => None,
        };
        Headline { agent: askuser_core::inbox::agent_name(record), chip, id: Some(super::command::short_id(&record.id)) }
    }

    /// The line, agent text through `fit` (a channel's escaping and cutting) at most
    /// `agent_max` and `chip_max` long.
    pub fn line(&self, agent_max: usize, chip_max: usize, fit: impl Fn(&str, usize) -> String) -> String {
        let id = self.id.as_ref().map(|id| format!(" · id {id}")).unwrap_or_default();
        match &self.chip {
            Some(chip) => format!("{} asks · {}{id}", fit(&self.agent, agent_max), fit(chip, chip_max)),
            None => format!("{} asks{id}", fit(&self.agent, agent_max)),
        }
    }
}

/// The permission an approval asks (not Claude Code's own `AskUserQuestion`, which is
/// shown as its questions).
pub fn permission(record: &QuestionRecord) -> Option<askuser_core::approval::ApprovalView> {
    record.request.approval.as_ref().and_then(|a| a.view())
}

/// What was answered to each question of a closed set, as a closed message says it (an
/// approval's as "Allowed", "Denied: …"); none when it was not answered.
pub fn said(record: &QuestionRecord) -> Vec<String> {
    let answers = record.result.as_ref().filter(|r| r.status == askuser_core::Status::Answered).map(|r| r.answers.as_slice());
    let is_permission = permission(record).is_some();
    let say = |a: &askuser_core::Answer| match is_permission {
        true => askuser_core::approval::said(&askuser_core::Selection {
            selected: a.selected_options.clone(),
            custom: a.custom.clone(),
            notes: None,
        }),
        false => a.answer.joined(),
    };
    answers.unwrap_or_default().iter().map(say).collect()
}

/// A way to reach people: push, the webhook, ntfy, Slack, Telegram.
#[async_trait::async_trait]
pub trait Channel: std::any::Any + Send + Sync {
    /// Its name: in the store's records of where a set went (`slack:C0123`), in
    /// `--notify-delay slack:60` and in the log.
    fn name(&self) -> &'static str;

    /// Where set `record` goes (none: not here).
    async fn routes(&self, notifier: &Notifier, record: &QuestionRecord) -> Vec<Route>;

    /// Whether its notices carry answer links (its messages cannot answer by themselves).
    fn links(&self) -> bool {
        false
    }

    /// Sends `notice` to `route`: [`Sent::Posted`] with its message's id when it changes
    /// it once the set closes; [`Sent::Gone`] when the place is gone for good.
    async fn post(&self, notifier: &Notifier, route: &Route, notice: &Notice) -> Sent;

    /// Whether it changes what it sent once the set closes ([`Channel::close`]).
    fn closes(&self) -> bool {
        false
    }

    /// Says at place `to` (in its message `message`, when it kept one) what became of
    /// set `record`: an edit without buttons, a notification taken away.
    async fn close(&self, _notifier: &Notifier, _to: &str, _message: Option<&str>, _record: &QuestionRecord) -> Sent {
        Sent::Delivered
    }

    /// What `askuser serve` says of it as it starts (secrets redacted), given the data
    /// directory `data_dir`.
    fn describe(&self, _data_dir: &std::path::Path) -> Option<String> {
        None
    }

    /// The values it holds that must never be shown (a token, a signing secret, a
    /// webhook's path): the notifier takes them out of whatever it logs of this channel
    /// ([`scrub`]), should a service ever echo one.
    fn secrets(&self) -> Vec<&str> {
        vec![]
    }

    /// The paths its service posts to on this bridge (Slack's interactivity and events
    /// URLs; a webhook WhatsApp calls), if any: [`Channel::receive`] takes them.
    fn inbound(&self) -> Vec<&'static str> {
        vec![]
    }

    /// A request its service sent to `path`, one of [`Channel::inbound`], as it came
    /// (headers, the raw body a signature covers): checked, and answered at once with the
    /// status and body to send; what it asks is carried out after, in its own task.
    async fn receive(&self, _notifier: &Arc<Notifier>, _path: &str, _headers: &HeaderMap, _body: &[u8]) -> (StatusCode, String) {
        (StatusCode::NOT_FOUND, String::new())
    }

    /// A GET its service sends to [`Channel::inbound`] with query `query` (WhatsApp's
    /// subscription handshake): the status and body to answer. None by default.
    fn look(&self, _query: &str) -> (StatusCode, String) {
        (StatusCode::METHOD_NOT_ALLOWED, String::new())
    }

    /// Starts what it runs beside the notifier while the bridge runs (a poll for
    /// answers, a gateway connection).
    fn start(self: Arc<Self>, _notifier: Arc<Notifier>) {}
}

/// Where `record` goes in a chat with a `shared` place and people's or teams' `own`
/// places: its person's or team's own, else the shared one (once it escalates).
pub fn route<T: ToString>(
    shared: Option<&T>,
    own: &std::collections::BTreeMap<String, T>,
    record: &QuestionRecord,
    rules: &Rules,
) -> Option<Route> {
    match askuser_core::inbox::assignee(record).and_then(|to| own.get(to)) {
        Some(place) => Some(Route::to(place.to_string(), true, rules)),
        None => shared.map(|place| Route::to(place.to_string(), false, rules)),
    }
}

/// What a person in a chat chose for the set its message shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// One selection per question, in order (checked with [`askuser_core::resolve`]).
    Answer(Vec<askuser_core::Selection>),
    /// The person declined the set.
    Decline,
}

/// Why a chat's answer was not taken: what the person who gave it is told.
#[derive(Debug, thiserror::Error)]
pub enum NotTaken {
    /// Answered, declined or withdrawn before (a late press), or a message the store
    /// no longer knows.
    #[error("This question set is not waiting any more.")]
    Gone,
    /// Another answer came first.
    #[error("This question set was answered or closed elsewhere already.")]
    Elsewhere,
    /// The store could not say which set the message shows.
    #[error("The answer was not taken: {0}. Try again.")]
    Unread(crate::store::StoreError),
    /// The bridge refused it.
    #[error("The answer was not taken: {0}")]
    Refused(crate::hub::BridgeError),
    /// What the chat read of the answer says is wrong with it (in askuser's words,
    /// ready to send).
    #[error("{0}")]
    Unclear(String),
}

impl NotTaken {
    /// What to tell the person, the bridge's own error text (which may quote agent text)
    /// through `safe`, the chat's way of showing text as typed.
    pub fn told(&self, safe: impl Fn(&str) -> String) -> String {
        match self {
            NotTaken::Unread(e) => format!("The answer was not taken: {}. Try again.", safe(&e.to_string())),
            NotTaken::Refused(e) => format!("The answer was not taken: {}", safe(&e.to_string())),
            other => other.to_string(),
        }
    }
}

impl Notifier {
    /// A person's answer from a chat: the set that message `message` at place `key`
    /// (`slack:C0123`, as the store keys it) shows, answered as `decide` reads it from
    /// the set, by `by` (as a record's `answered_by` keeps it). The first answer wins; a
    /// later one, or one for a set no longer waiting, is [`NotTaken`] with what to tell
    /// them. `Ok(false)`: nothing to do yet (`decide` said a box was ticked, not sent).
    pub async fn answer_from_chat(
        &self,
        key: &str,
        message: &str,
        by: &str,
        decide: impl FnOnce(&QuestionRecord) -> Result<Option<Outcome>, String>,
    ) -> Result<bool, NotTaken> {
        let id = match self.question_of(key, message).await {
            Ok(Some(id)) => id,
            Ok(None) => return Err(NotTaken::Gone),
            Err(e) => return Err(NotTaken::Unread(e)),
        };
        let record = self.bridge.get(&id).await.map_err(NotTaken::Refused)?;
        if record.status != askuser_core::Status::Pending {
            return Err(NotTaken::Gone);
        }
        let who = crate::hub::Answerer { viewer: None, by: Some(by) };
        let done = match decide(&record).map_err(NotTaken::Unclear)? {
            None => return Ok(false),
            Some(Outcome::Answer(selections)) => self.bridge.answer(&id, &selections, who).await,
            Some(Outcome::Decline) => self.bridge.decline(&id, false, who).await,
        };
        let channel = key.split_once(':').map_or(key, |(name, _)| name);
        match done {
            Ok(_) => {
                tracing::info!(%id, "answered in {channel} by {by}");
                Ok(true)
            }
            Err(e) if e.is_conflict() => Err(NotTaken::Elsewhere),
            Err(e) => Err(NotTaken::Refused(e)),
        }
    }
}

impl Notifier {
    /// A command typed at place `key` by `by` ([`super::command`]): the set whose short id
    /// it names, if it was sent to this place, answered as the command says (`allowable`
    /// and `reply` are the chat's: whether Allow may be chosen there, how it reads a
    /// reply's words). What to tell the person: that it was done, or why not (an id no
    /// set sent here has, or a set no longer waiting).
    pub async fn command_from_chat(
        &self,
        key: &str,
        by: &str,
        command: &super::command::Command,
        allowable: impl FnOnce(&QuestionRecord, &str) -> Result<(), String>,
        reply: impl FnOnce(&QuestionRecord, &str) -> Result<Vec<askuser_core::Selection>, String>,
    ) -> Result<String, NotTaken> {
        use super::command::short_id;
        let id = command.id();
        let pending = self.bridge.list(crate::store::Filter::Pending, 10_000, None).await.map_err(NotTaken::Refused)?;
        let mut here = vec![];
        for record in pending.into_iter().filter(|r| short_id(&r.id) == id) {
            let posted = self.deliveries.posted(&record.id).await.map_err(NotTaken::Unread)?;
            if let Some((_, message)) = posted.into_iter().find(|(target, _)| target == key) {
                here.push((record, message));
            }
        }
        let (record, message) = match here.len() {
            1 => here.remove(0),
            0 => {
                let recent = self.bridge.list(crate::store::Filter::Final, 1_000, None).await.map_err(NotTaken::Refused)?;
                if recent.iter().any(|r| short_id(&r.id) == id) {
                    return Err(NotTaken::Gone);
                }
                return Err(NotTaken::Unclear(format!("No question set with id {id} waits in this chat: check the id in its message.")));
            }
            _ => return Err(NotTaken::Unclear(format!("Several question sets here have id {id}: answer by replying to its message."))),
        };
        let done = match (command, permission(&record).is_some()) {
            (super::command::Command::Approve { .. }, _) => "Allowed",
            (super::command::Command::Deny { .. }, true) => "Denied",
            (super::command::Command::Deny { .. }, false) => "Declined",
            (super::command::Command::Answer { .. }, _) => "Answered",
        };
        let decide = |r: &QuestionRecord| super::command::outcome(r, command, allowable, reply).map(Some);
        self.answer_from_chat(key, &message, by, decide).await?;
        Ok(format!("{done}: {id}."))
    }
}

/// Why a channel's settings are refused: names the flag, what it expects and what came
/// (never a secret's value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("--{flag}: expected {expected}, got {got}")]
    Invalid { flag: &'static str, expected: String, got: String },
    #[error("--{channel} needs {what}: pass --{flag} or set {var} (docs/notify.md)")]
    Missing { channel: &'static str, what: &'static str, flag: &'static str, var: &'static str },
}

impl SettingsError {
    /// `--{flag}: expected {expected}, got {got:?}`.
    pub fn invalid(flag: &'static str, expected: impl Into<String>, got: &str) -> SettingsError {
        SettingsError::Invalid { flag, expected: expected.into(), got: format!("{got:?}") }
    }
}

/// A chat's places as its `[NAME=]ID` flags give them: one shared place (`C0123`), and
/// people's or teams' own (`alice=D0ALICE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places<T> {
    pub shared: Option<T>,
    pub own: std::collections::BTreeMap<String, T>,
}

impl<T> Places<T> {
    /// The values of `--{flag}`, each `ID` (the shared `place`, once) or `NAME=ID`
    /// (`form`: how the flag's help writes an id, `CHANNEL`), each id read by `id`.
    pub fn parse(
        flag: &'static str,
        form: &str,
        place: &str,
        values: &[String],
        id: impl Fn(&str) -> Result<T, SettingsError>,
    ) -> Result<Places<T>, SettingsError> {
        let mut places = Places { shared: None, own: std::collections::BTreeMap::new() };
        for value in values {
            match value.split_once('=') {
                Some((name, to)) if !name.trim().is_empty() => {
                    places.own.insert(name.trim().to_owned(), id(to.trim())?);
                }
                Some(_) => return Err(SettingsError::invalid(flag, format!("NAME={form} with a person or team name"), value)),
                None if places.shared.is_some() => {
                    return Err(SettingsError::invalid(flag, format!("one shared {place} at most"), value));
                }
                None => places.shared = Some(id(value.trim())?),
            }
        }
        Ok(places)
    }
}

/// An API's base URL from flag `--{flag}`, ending with `/` so methods join under it.
pub fn api_url(flag: &'static str, text: &str) -> Result<reqwest::Url, SettingsError> {
    let mut api: reqwest::Url =
        text.parse().map_err(|e| SettingsError::Invalid { flag, expected: "a URL".into(), got: format!("{text:?} ({e})") })?;
    if !api.path().ends_with('/') {
        api.set_path(&format!("{}/", api.path()));
    }
    Ok(api)
}

/// `text` with each of `secrets` (those of 6 characters or more: shorter ones are no
/// secret worth the name, and would blot out ordinary words) as `…`.
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    secrets.iter().filter(|s| s.len() >= 6).fold(text.to_owned(), |text, secret| text.replace(secret, "…"))
}

/// When each of several bridges sharing a store may run a chat's one connection for
/// answers: only one may at a time (Telegram ends a second `getUpdates` with 409 and two
/// pollers would each take updates the other has not confirmed; a Slack app's Socket Mode
/// and a Discord bot's gateway would hand each event to every connection, and two bridges
/// would both act on it). Time is cut in terms of `term_ms`, and a bridge runs it only in
/// a term it claimed through the store ([`crate::store::Shared::claim_close`] under
/// [`Lease::key`], true for one bridge). The holder claims the next term [`Lease::lead`]
/// before its term ends, so it keeps the connection while it runs; the others try each
/// term [`Lease::grace`] after it began, so a holder that stopped is replaced within a
/// term. A bridge whose claim failed stops [`Lease::margin`] before its term ends: with
/// clocks less than that apart, two never run it at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub term_ms: u64,
}

/// What a lease's holder does next ([`Lease::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Claim term `n` (then ask again, with what came of it).
    Claim(u64),
    /// Run (poll, keep the connection), for at most this many ms.
    Poll(u64),
    /// Wait this many ms, then ask again.
    Wait(u64),
}

/// Runs shorter than this are not started (a wait instead).
const MIN_POLL_MS: u64 = 2000;

impl Lease {
    pub fn lead(&self) -> u64 {
        self.term_ms / 6
    }

    pub fn margin(&self) -> u64 {
        self.term_ms / 15
    }

    pub fn grace(&self) -> u64 {
        self.term_ms / 10
    }

    pub fn term(&self, now_ms: u64) -> u64 {
        now_ms / self.term_ms.max(1)
    }

    pub fn end(&self, term: u64) -> u64 {
        (term + 1) * self.term_ms
    }

    /// The claim of term `term` of connection `kind` (`telegram-poll`, `slack-socket`,
    /// `discord-gateway`) for `who` (a bot, an app) in the store: (question id, target).
    /// The target is a `close:` key, so [`crate::store::Deliveries::forget_notified`]
    /// sweeps old terms away as it does old claims to close.
    pub fn key(kind: &str, who: &str, term: u64) -> (String, String) {
        (format!("{kind}:{who}"), format!("close:{kind}:{term}"))
    }

    /// What a bridge does at `now_ms` that holds terms up to `held` and whose claim of term
    /// `refused` (if any) was refused.
    pub fn step(&self, now_ms: u64, held: Option<u64>, refused: Option<u64>) -> Step {
        let current = self.term(now_ms);
        if let Some(h) = held.filter(|&h| self.end(h) > now_ms) {
            let renew_at = self.end(h) - self.lead();
            if now_ms < renew_at {
                return poll_or_wait(renew_at - now_ms);
            }
            if refused != Some(h + 1) {
                return Step::Claim(h + 1);
            }
            // Another bridge has the next term: run out this one, then step aside.
            let stop_at = self.end(h) - self.margin();
            if now_ms < stop_at {
                return poll_or_wait(stop_at - now_ms);
            }
            return Step::Wait(self.end(h) + self.grace() - now_ms);
        }
        if refused != Some(current) {
            return Step::Claim(current);
        }
        Step::Wait(self.end(current) + self.grace() - now_ms)
    }
}

fn poll_or_wait(ms: u64) -> Step {
    if ms >= MIN_POLL_MS {
        Step::Poll(ms)
    } else {
        Step::Wait(ms)
    }
}

/// Whether option `label` may be chosen in a chat whose message showed `whole` the
/// approval it asks (when `approval`): Deny always, Allow only when shown whole (else the
/// person would allow what they did not see), "Always allow" only in askuser, which names
/// the rule it keeps. Anything goes on a question.
pub fn allowable(approval: bool, whole: impl FnOnce() -> bool, label: &str) -> Result<(), String> {
    use askuser_core::approval::{ALLOW, DENY};
    match label {
        _ if !approval => Ok(()),
        DENY => Ok(()),
        ALLOW if whole() => Ok(()),
        ALLOW => Err("Too long to show here whole: open askuser to see all of it and allow it.".into()),
        _ => Err("Allow or Deny here; Always allow is in askuser, which names the rule it keeps.".into()),
    }
}

/// How a chat's connection (Slack's Socket Mode, Discord's gateway) is tried again: after a
/// failure, or one that ended as soon as it was made, a pause from 1 s doubling to a minute;
/// a reason said once until it changes; both forgotten once a connection lasts.
#[derive(Debug)]
pub struct Retry {
    pause: std::time::Duration,
    told: Option<String>,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry { pause: std::time::Duration::from_secs(1), told: None }
    }
}

impl Retry {
    /// The pause before the next try, at most `most` (what is left of this bridge's turn).
    pub fn next(&mut self, most: std::time::Duration) -> std::time::Duration {
        let pause = self.pause.min(most);
        self.pause = (self.pause * 2).min(std::time::Duration::from_secs(60));
        pause
    }

    /// Whether `why` is to be said: not when it was the last reason said.
    pub fn tell(&mut self, why: &str) -> bool {
        let new = self.told.as_deref() != Some(why);
        self.told = Some(why.to_owned());
        new
    }

    /// A connection that lasted: the next failure is said, and waited for from 1 s again.
    pub fn lasted(&mut self) {
        *self = Retry::default();
    }
}

/// A chat's one connection among bridges sharing a store ([`Lease`]), claimed as it goes:
/// [`Turns::next`] says how long this bridge may keep it now, or how long to wait.
#[derive(Debug)]
pub struct Turns {
    lease: Lease,
    kind: &'static str,
    who: String,
    /// The last term this bridge holds, and the last one refused it.
    pub held: Option<u64>,
    refused: Option<u64>,
}

/// What a connection does now ([`Turns::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Keep it (open it) for at most this long, then ask again.
    Run(std::time::Duration),
    /// Not this bridge's: have it closed, and ask again after this long.
    Wait(std::time::Duration),
}

impl Turns {
    /// Connection `kind` of `who` (not a secret: it is kept in the store), in terms of `term`.
    pub fn new(kind: &'static str, who: impl Into<String>, term: std::time::Duration) -> Turns {
        let lease = Lease { term_ms: (term.as_millis() as u64).max(1000) };
        Turns { lease, kind, who: who.into(), held: None, refused: None }
    }

    /// Alone (no shared store): always this bridge's, for `alone` at a time. Sharing one:
    /// claims the terms as [`Lease::step`] says.
    pub async fn next(&mut self, notifier: &Notifier, alone: std::time::Duration) -> Turn {
        let Some(shared) = notifier.shared.as_deref() else { return Turn::Run(alone) };
        loop {
            let now = notifier.now_ms();
            match self.lease.step(now, self.held, self.refused) {
                Step::Claim(term) => {
                    let (id, target) = Lease::key(self.kind, &self.who, term);
                    match shared.claim_close(&id, &target, now).await {
                        Ok(true) => {
                            if self.held.is_none_or(|h| h + 1 != term) {
                                tracing::info!("this bridge holds {} for the bridges sharing its store", self.kind);
                            }
                            self.held = Some(term);
                        }
                        Ok(false) => self.refused = Some(term),
                        Err(e) => {
                            tracing::warn!("cannot claim {}: {e}", self.kind);
                            self.refused = Some(term);
                        }
                    }
                }
                Step::Poll(ms) => return Turn::Run(std::time::Duration::from_millis(ms)),
                Step::Wait(ms) => return Turn::Wait(std::time::Duration::from_millis(ms)),
            }
        }
    }
}

/// A stand-in for a secret in what the store keeps (a lease's owner): 16 hex digits of
/// its SHA-256, which name it without giving it away.
pub fn fingerprint(secret: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    digest.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::fixtures::{record, single};

    #[test]
    fn a_headline_names_the_chip_of_a_lone_question_only() {
        let one = record(vec![single(&["A"])]);
        let id = super::super::command::short_id("q-1");
        assert_eq!(Headline::of(&one).line(100, 60, |s, _| s.to_owned()), format!("claude-code asks · DB · id {id}"));
        let cut = |s: &str, max: usize| s.chars().take(max).collect::<String>();
        assert_eq!(Headline::of(&one).line(6, 1, cut), format!("claude asks · D · id {id}"), "each part fitted its own way");
        let two = record(vec![single(&["A"]), single(&["B"])]);
        assert_eq!(Headline::of(&two).line(100, 60, |s, _| s.to_owned()), format!("claude-code asks · id {id}"), "no one chip for several");
        let push = Headline { agent: "ci".into(), chip: None, id: None };
        assert_eq!(push.line(100, 60, |s, _| s.to_owned()), "ci asks", "no id where no command answers");
        let mut blank = one.clone();
        blank.request.questions[0].header = Some("  ".into());
        assert_eq!(Headline::of(&blank).chip, None);
    }

    #[test]
    fn what_is_logged_of_a_channel_holds_none_of_its_secrets() {
        let said = "Telegram refused sendMessage: 401 Unauthorized (bot 123456:AAsecret-x) for /";
        assert_eq!(scrub(said, &["123456:AAsecret-x", "/"]), "Telegram refused sendMessage: 401 Unauthorized (bot …) for /");
    }

    #[test]
    fn places_are_one_shared_and_each_ones_own() {
        let id = |t: &str| t.parse::<i64>().map_err(|_| SettingsError::invalid("notify-x", "a number", t));
        let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let places = Places::parse("notify-x", "ID", "chat", &values(&["-100", "alice=5", " db-team = 6 "]), id).unwrap();
        assert_eq!((places.shared, places.own.get("alice"), places.own.get("db-team")), (Some(-100), Some(&5), Some(&6)));
        let e = Places::parse("notify-x", "ID", "chat", &values(&["1", "2"]), id).unwrap_err().to_string();
        assert_eq!(e, "--notify-x: expected one shared chat at most, got \"2\"");
        let e = Places::parse("notify-x", "ID", "chat", &values(&["=1"]), id).unwrap_err().to_string();
        assert_eq!(e, "--notify-x: expected NAME=ID with a person or team name, got \"=1\"");
        let e = Places::parse("notify-x", "ID", "chat", &values(&["@ops"]), id).unwrap_err().to_string();
        assert_eq!(e, "--notify-x: expected a number, got \"@ops\"");
    }

    #[test]
    fn one_bridge_at_a_time_holds_the_polling_lease() {
        let lease = Lease { term_ms: 30_000 };
        let t = 1_000 * 30_000; // a term's start
                                // Nobody holds it: claim the current term at once.
        assert_eq!(lease.step(t + 12_000, None, None), Step::Claim(1_000));
        // Held: poll until the renewal, then claim the next term.
        assert_eq!(lease.step(t + 12_000, Some(1_000), None), Step::Poll(30_000 - 5_000 - 12_000));
        assert_eq!(lease.step(t + 25_000, Some(1_000), None), Step::Claim(1_001));
        assert_eq!(lease.step(t + 25_000, Some(1_001), None), Step::Poll(30_000 + 25_000 - 25_000));
        // The next term is another's: poll until just before the end, then step aside.
        assert_eq!(lease.step(t + 25_000, Some(1_000), Some(1_001)), Step::Poll(28_000 - 25_000));
        assert_eq!(lease.step(t + 27_500, Some(1_000), Some(1_001)), Step::Wait(500));
        assert_eq!(lease.step(t + 28_000, Some(1_000), Some(1_001)), Step::Wait(2_000 + 3_000));
        // Refused: wait for the next term's start and its grace, then try it.
        assert_eq!(lease.step(t + 12_000, None, Some(1_000)), Step::Wait(18_000 + 3_000));
        assert_eq!(lease.step(t + 33_000, None, Some(1_000)), Step::Claim(1_001));
        // A holder stops polling before others start: a margin before its term ends,
        // against a grace after the next begins.
        assert!(lease.margin() + lease.grace() >= 5_000 && lease.lead() > lease.margin());
        assert_eq!(Lease::key("telegram-poll", "123", 7), ("telegram-poll:123".to_owned(), "close:telegram-poll:7".to_owned()));
    }

    #[test]
    fn a_connection_is_tried_again_after_a_pause_that_doubles_to_a_minute() {
        use std::time::Duration;
        let mut retry = Retry::default();
        let pauses: Vec<u64> = (0..8).map(|_| retry.next(Duration::MAX).as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(retry.next(Duration::from_secs(5)), Duration::from_secs(5), "never past the turn's end");
        assert!(retry.tell("refused") && !retry.tell("refused"), "a reason is said once");
        assert!(retry.tell("timed out"), "until it changes");
        retry.lasted();
        assert_eq!(
            (retry.next(Duration::MAX), retry.tell("timed out")),
            (Duration::from_secs(1), true),
            "a connection that lasted starts over"
        );
    }
}
