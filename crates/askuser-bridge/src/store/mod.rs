//! The question store: every question an agent asks and the final answer to it, the
//! credentials, push subscriptions, answer links, approval rules and the audit log of
//! approvals. The only durable state a bridge has.
//!
//! One trait, [`Store`], in three concerns, each used by one part of the bridge only:
//! [`Questions`] (the hub), [`Credentials`] (`tokens::Registry`) and [`Deliveries`] (the
//! notifier); and two implementations: [`Sqlite`] (one file in the data directory, the
//! embedded default, one bridge) and [`Postgres`] (a database several bridges share,
//! `--store postgres://…`), which alone has the optional part [`Shared`]. Only
//! `serve.rs` knows which store it has.
//!
//! Both keep the rule the rest of the bridge relies on: **a question becomes final
//! once**. The first [`Questions::finish`] wins atomically (one `UPDATE … WHERE status =
//! 'pending'`, in whichever process or bridge); any later one gets
//! [`Finished::AlreadyFinal`] and changes nothing. Every write is committed before the
//! call returns, so a bridge killed with SIGKILL loses nothing it acknowledged.
//!
//! A shared store also carries the bridges' events to each other ([`Shared::events`]);
//! SQLite, with one bridge, has none.

#[cfg(test)]
mod conformance;
pub(crate) mod postgres;
mod sqlite;

use askuser_core::protocol::QuestionRecord;
use askuser_core::AskResult;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::broadcast;

pub use postgres::{parse_url, Postgres};
pub use sqlite::{Durability, Sqlite, MIN_FREE_BYTES};

/// The durable store a bridge keeps everything in (see the module docs): its three
/// concerns, each used by one part of the bridge only, and, for a store several bridges
/// share, what they need of it to work together.
#[async_trait::async_trait]
pub trait Store: Questions + Credentials + Deliveries + std::fmt::Debug {
    /// What the bridges sharing this store need of it; `None`: only this bridge uses it
    /// (no events, no agents waiting elsewhere, nobody to claim a notification against).
    fn shared(self: Arc<Self>) -> Option<Arc<dyn Shared>> {
        None
    }

    /// Whether the store can take writes; `Err` says why not.
    async fn health(&self) -> Result<(), String>;

    /// This bridge is stopping: whatever it holds in a shared store is let go.
    async fn close(&self) {}
}

/// Questions, their answers, who asked them, and approvals (rules and the audit log):
/// the hub's alone.
#[async_trait::async_trait]
pub trait Questions: Send + Sync {
    /// Stores a new question (normally pending; the record is stored as given).
    ///
    /// If `record.id` is already stored: with the same `request.questions` this is a
    /// resume and returns `Ok(Inserted::Existing(stored record))`, changing nothing; with
    /// different questions it returns [`StoreError::Conflict`], changing nothing.
    async fn insert(&self, record: &QuestionRecord) -> Result<Inserted, StoreError>;

    /// Makes the pending question `id` final with `result` (its status and
    /// `answered_at`); `by` is the client that gave the answer, if any. Atomic: of several
    /// concurrent calls, from any bridge, exactly one returns [`Finished::Done`]. An
    /// unknown id is [`StoreError::NotFound`]; a pending `result` is refused.
    async fn finish(&self, id: &str, result: &AskResult, by: Option<&str>) -> Result<Finished, StoreError>;

    /// The question `id`, or `None` if it is not stored.
    async fn get(&self, id: &str) -> Result<Option<QuestionRecord>, StoreError>;

    /// At most `limit` questions. [`Filter::Pending`]: oldest first (insertion order).
    /// [`Filter::Final`]: most recently finished first. [`Filter::All`]: newest first.
    async fn list(&self, filter: Filter, limit: usize) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Pending questions after position `after` (0: from the first), oldest first: at most
    /// `max_count`, and no more once their stored text passes `max_bytes` (at least one
    /// is returned, however big). Returns them, the last one's position for the next call,
    /// and whether more follow.
    async fn pending_page(&self, after: i64, max_count: usize, max_bytes: usize) -> Result<(Vec<QuestionRecord>, i64, bool), StoreError>;

    /// Final questions, most recently finished first, from `offset`; with `search`, only
    /// those whose request or result contains it (ASCII case ignored).
    async fn history(&self, search: Option<&str>, offset: usize, limit: usize) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Deletes the final questions that became final before `cutoff_ms` (and expired
    /// answer links, old notification records and approval decisions made before it);
    /// how many questions. Pending questions and approval rules are never deleted.
    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError>;

    /// How many questions are `(pending, final)`.
    async fn counts(&self) -> Result<(usize, usize), StoreError>;

    /// Records that credential `owner` asked question `id` (kept if one is recorded).
    async fn set_owner(&self, id: &str, owner: &str) -> Result<(), StoreError>;

    /// The agent credential that asked question `id`, if one did.
    async fn owner(&self, id: &str) -> Result<Option<String>, StoreError>;

    /// Keeps approval rule `rule` (a new id).
    async fn add_rule(&self, rule: &StoredRule) -> Result<(), StoreError>;

    /// Every approval rule, oldest first.
    async fn rules(&self) -> Result<Vec<StoredRule>, StoreError>;

    /// Forgets rule `id`; whether there was one.
    async fn remove_rule(&self, id: &str) -> Result<bool, StoreError>;

    /// Adds one decision to the audit log.
    async fn add_decision(&self, decision: &StoredDecision) -> Result<(), StoreError>;

    /// The newest `limit` decisions, newest first (ties: the later added first).
    async fn decisions(&self, limit: usize) -> Result<Vec<StoredDecision>, StoreError>;
}

/// Credentials and people's teams: `tokens::Registry`'s alone.
#[async_trait::async_trait]
pub trait Credentials: Send + Sync {
    /// Stores a new credential (its token only as a hash).
    async fn add_credential(&self, c: &Credential) -> Result<(), StoreError>;

    /// Every credential, revoked ones included, oldest first.
    async fn credentials(&self) -> Result<Vec<Credential>, StoreError>;

    /// Marks credential `id` revoked at `at` and forgets the page sessions it opened and
    /// the push subscriptions it made, in one transaction; false when there is none or it
    /// already was.
    async fn revoke_credential(&self, id: &str, at: u64) -> Result<bool, StoreError>;

    /// Every (person, team) membership.
    async fn teams(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// Makes `teams` the teams `person` is in (none: in no team).
    async fn set_teams(&self, person: &str, teams: &[String]) -> Result<(), StoreError>;

    /// Keeps a new page session (its cookie only as a hash), and forgets those expired
    /// by its `created_at`.
    async fn add_session(&self, s: &StoredSession) -> Result<(), StoreError>;

    /// The page session whose cookie hashes to `hash`, expired or not.
    async fn session(&self, hash: &str) -> Result<Option<StoredSession>, StoreError>;

    /// Every page session kept, oldest first.
    async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError>;

    /// Forgets page session `id`; whether there was one.
    async fn remove_session(&self, id: &str) -> Result<bool, StoreError>;
}

/// Where notifications went: push subscriptions, answer links, what reached whom: the
/// notifier's alone (answer links' pages go through it).
#[async_trait::async_trait]
pub trait Deliveries: Send + Sync {
    /// Keeps `sub`, replacing the subscription with the same endpoint only when the same
    /// credential made it; false: another credential holds the endpoint, and nothing
    /// changed. Decided in the write itself, so of two first subscriptions of an endpoint
    /// racing, the second does not replace the first (F8).
    async fn add_subscription(&self, sub: &StoredSubscription) -> Result<bool, StoreError>;

    /// Every push subscription, oldest first.
    async fn subscriptions(&self) -> Result<Vec<StoredSubscription>, StoreError>;

    /// Forgets the subscription at `endpoint` (only `credential`'s, when given); whether
    /// there was one.
    async fn remove_subscription(&self, endpoint: &str, credential: Option<Option<&str>>) -> Result<bool, StoreError>;

    /// Keeps answer links (their keys only as hashes).
    async fn add_links(&self, links: &[StoredLink]) -> Result<(), StoreError>;

    /// Uses the link whose key hashes to `hash` at `now`: marks it used if it is unused
    /// and unexpired, atomically, so a link answers once however many use it at once.
    async fn use_link(&self, hash: &str, now: u64) -> Result<LinkUse, StoreError>;

    /// The link whose key hashes to `hash`, and whether it was used, without using it.
    async fn link(&self, hash: &str) -> Result<Option<(StoredLink, bool)>, StoreError>;

    /// Records that question `id` reached `target` (`push:ENDPOINT`, `webhook`, `ntfy`,
    /// `slack:CHANNEL`); `message` is the channel's id for what it shows (a Slack
    /// message's `ts`), to change it when the question closes.
    async fn add_notified(&self, id: &str, target: &str, at: u64, message: Option<&str>) -> Result<(), StoreError>;

    /// Every notification recorded as sent.
    async fn notified(&self) -> Result<Vec<Notified>, StoreError>;

    /// The question a channel's message (`target`, `message` as [`Deliveries::add_notified`]
    /// kept them) is about, if it is still recorded.
    async fn notified_by_message(&self, target: &str, message: &str) -> Result<Option<String>, StoreError>;

    /// The channels' messages question `id` was posted as: `(target, message)`.
    async fn posted(&self, id: &str) -> Result<Vec<(String, String)>, StoreError>;

    /// Forgets where question `id` was sent (its notifications are closed).
    async fn forget_notified(&self, id: &str) -> Result<(), StoreError>;

    /// Records that the person at `place` (`whatsapp:PHONE`) wrote at `at`, for a channel
    /// that may write to them only within a window after (WhatsApp's 24 hours); an
    /// earlier time never replaces a later one.
    async fn add_heard(&self, place: &str, at: u64) -> Result<(), StoreError>;

    /// When the person at `place` last wrote, if ever ([`Deliveries::add_heard`]).
    async fn heard(&self, place: &str) -> Result<Option<u64>, StoreError>;
}

/// What several bridges sharing one store need of it: each other's events, where agents
/// wait, values they must agree on, claims so one of them sends each notification,
/// pairing codes any of them can take.
#[async_trait::async_trait]
pub trait Shared: Send + Sync {
    /// What the other bridges sharing this store did.
    fn events(&self) -> broadcast::Receiver<StoreEvent>;

    /// The ids of every pending question (a resync compares them with its own).
    async fn pending_ids(&self) -> Result<HashSet<String>, StoreError>;

    /// Records that an agent of `session` waits on question `id` at this bridge
    /// (`attached`), or that none waits here any more.
    async fn attach(&self, id: &str, session: Option<&str>, attached: bool) -> Result<(), StoreError>;

    /// Whether an agent waits on question `id` at another bridge that is alive.
    async fn attached_elsewhere(&self, id: &str) -> Result<bool, StoreError>;

    /// The agent sessions with an agent waiting at another bridge that is alive.
    async fn sessions_elsewhere(&self) -> Result<HashSet<String>, StoreError>;

    /// The value named `name` that every bridge sharing the store uses (a key they must
    /// all sign with): the stored one, or `fresh`, stored now, if there is none yet.
    async fn shared_value(&self, name: &str, fresh: &str) -> Result<String, StoreError>;

    /// Claims sending question `id` to `target`: true for exactly one bridge sharing
    /// the store (recorded as sent, see [`Deliveries::add_notified`]).
    async fn claim_notified(&self, id: &str, target: &str, at: u64) -> Result<bool, StoreError>;

    /// Claims closing question `id`'s notification at `target` (a `close:` key): true for
    /// one of the bridges sharing the store that know it was sent there, or again once
    /// [`CLOSE_CLAIM_MS`] passed with the claim still kept (its bridge stopped before it
    /// closed).
    async fn claim_close(&self, id: &str, target: &str, at: u64) -> Result<bool, StoreError>;

    /// Keeps a pairing code (as its hash) where every bridge sharing the store can take it.
    async fn put_pairing(&self, hash: &str, paired: &Paired, expires_at: u64) -> Result<(), StoreError>;

    /// Takes a code kept by [`Shared::put_pairing`], once, at any bridge.
    async fn take_pairing(&self, hash: &str) -> Result<Option<(Paired, u64)>, StoreError>;
}

/// How long a claim to close a notification holds (see [`Shared::claim_close`]).
pub const CLOSE_CLAIM_MS: u64 = 60_000;

/// What another bridge sharing the store did (see [`Shared::events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// It stored a new question with this id.
    Asked(String),
    /// It made this question final.
    Final(String),
    /// An agent started or stopped waiting there.
    Presence,
    /// A credential was made or revoked.
    Credentials,
    /// Events may have been missed (a lost connection), or it is simply time: compare
    /// with the store.
    Resync,
}

/// A device's push subscription as stored (`rules` as JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSubscription {
    pub endpoint: String,
    /// The device credential that made it (`None`: the admin token).
    pub credential: Option<String>,
    pub p256dh: String,
    pub auth: String,
    pub rules: String,
    pub created_at: u64,
}

/// An answer link as stored: `hash` is its key's SHA-256 in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLink {
    pub hash: String,
    pub question_id: String,
    /// The option it picks, by index in the (only) question's options.
    pub option: usize,
    /// Where it was sent (`push`, `webhook`, `ntfy`).
    pub channel: String,
    /// The device it was pushed to, so revoking the device voids it.
    pub credential: Option<String>,
    pub expires_at: u64,
}

/// An approval rule as kept: the rule itself is the core's JSON (the store does not read it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRule {
    /// `r-` and 12 hex digits, chosen by the caller.
    pub id: String,
    /// The rule, as JSON text (askuser_core::approval::Rule).
    pub rule: String,
    pub created_at: u64,
    /// The credential id of who made it (a device or the admin), if known.
    pub created_by: Option<String>,
}

/// One decision on an approval, kept for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDecision {
    /// The question it was asked as; `None` when a rule answered without asking.
    pub question: Option<String>,
    /// The tool the agent asked to use (`Bash`, `Edit`, …).
    pub tool: String,
    /// What it would do, one line (`rm -rf build`, `src/main.rs`).
    pub summary: String,
    /// `allow`, `always` or `deny`.
    pub decision: String,
    /// The rule that answered it, or that an "always" made.
    pub rule: Option<String>,
    /// Who decided: a credential id, or None for a rule.
    pub by: Option<String>,
    /// The agent (its name, and session if known) that asked.
    pub agent: Option<String>,
    pub at: u64,
}

/// What a credential may do (see `tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Admin,
    Agent,
    Device,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Admin => "admin",
            Scope::Agent => "agent",
            Scope::Device => "device",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "admin" => Ok(Scope::Admin),
            "agent" => Ok(Scope::Agent),
            "device" => Ok(Scope::Device),
            other => Err(format!("expected admin, agent or device, got {other:?}")),
        }
    }
}

/// A stored credential. `hash` is the token's SHA-256 in hex; the token itself is
/// never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    pub id: String,
    pub name: String,
    pub scope: Scope,
    #[serde(skip_serializing, default)]
    pub hash: String,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<u64>,
    /// The person a device belongs to: questions for them or their teams reach it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

/// A page session as kept: what the first-paint cookie of one browser opens (see
/// `http/first.rs`), never a token. `hash` is the cookie's SHA-256 in hex; the cookie
/// itself is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSession {
    /// `session-` and 8 hex digits: what lists show and revoking names.
    pub id: String,
    #[serde(skip_serializing, default)]
    pub hash: String,
    /// The credential whose token opened it (`None`: the admin token): the session
    /// reads and answers what that credential's page would, and ends with it.
    pub credential: Option<String>,
    pub created_at: u64,
    pub expires_at: u64,
}

/// What a pairing code makes: a device credential with this name, for this person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paired {
    pub name: String,
    pub person: Option<String>,
}

/// A notification that went out: question `id` reached `target`; `waits`: the question
/// still waits for an answer; `message`: the channel's id for what it shows, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notified {
    pub id: String,
    pub target: String,
    pub waits: bool,
    pub message: Option<String>,
}

/// Schema steps both stores take alike. Each store's own history brought it to
/// version [`OWN_VERSIONS`] with the same tables (PostgreSQL's in fewer, bigger steps,
/// plus the tables bridges sharing it coordinate with); from there, version
/// `OWN_VERSIONS + n` is `SHARED_MIGRATIONS[n - 1]` in both. New steps go here, in SQL
/// both accept.
pub(crate) const SHARED_MIGRATIONS: &[&str] = &[
    // 6 -> 7: the channel's id for a message it shows (a Slack message's ts), to edit it
    // once the question closes and to find the question a reply in the channel is about.
    "ALTER TABLE notified ADD COLUMN message TEXT;
     CREATE INDEX notified_message ON notified (target, message);",
    // 7 -> 8: page sessions: what the first-paint cookie opens instead of carrying a
    // token (a cookie reaches every port of its host). Each kept as its cookie's
    // SHA-256, with the credential that opened it (NULL: the admin token).
    "CREATE TABLE page_sessions (
         id         TEXT   PRIMARY KEY,
         hash       TEXT   NOT NULL UNIQUE,
         credential TEXT,
         created_at BIGINT NOT NULL,
         expires_at BIGINT NOT NULL
     );
     CREATE INDEX page_sessions_credential ON page_sessions (credential);",
    // 8 -> 9: when each person last wrote to a chat that may write to them only within
    // a window after (WhatsApp's 24 hours), so a restarted bridge and the others sharing
    // the store know whether a question may go out or must wait for them.
    "CREATE TABLE heard (
         place TEXT   PRIMARY KEY,
         at    BIGINT NOT NULL
     );",
];

/// The version both stores' own histories end at.
pub(crate) const OWN_VERSIONS: usize = 6;

/// What [`Deliveries::use_link`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkUse {
    /// Unused and unexpired: now used.
    Fresh(StoredLink),
    Used,
    Expired,
    Unknown,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Opening failed: `message` says what went wrong and what to do about it.
    #[error("cannot open the question store at {}: {message}", path.display())]
    Open { path: PathBuf, message: String },
    /// The id exists with different questions.
    #[error("question id {id:?} is already used by different questions; ask with a new id, or with the same questions to resume")]
    Conflict { id: String },
    /// No question has this id (it never existed, or was pruned).
    #[error("no question with id {id:?}")]
    NotFound { id: String },
    /// Any other database failure (disk full, I/O error, a lost connection, a corrupt
    /// row...): `message` with context and the cause explained, and the database's own
    /// error as the source, so a caller can tell one worth retrying
    /// ([`StoreError::is_transient`]).
    #[error("question store: {message}")]
    Db {
        message: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The database did not answer in time; nothing was changed that anyone was told of.
    #[error("question store: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// A database failure askuser found itself (a row it cannot read, a value out of range).
    pub fn db(message: impl Into<String>) -> StoreError {
        StoreError::Db { message: message.into(), source: None }
    }

    /// A database failure the database reported: `message` says what was being done and
    /// why it failed, `source` is the driver's error.
    pub fn from_db(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError::Db { message: message.into(), source: Some(Box::new(source)) }
    }

    /// Whether trying again may succeed: the database did not answer in time, the
    /// connection was lost or refused, a transaction lost a serialization race or a
    /// deadlock, the server is shutting down, or SQLite's file was locked a moment. Not:
    /// a conflict, a missing question, a full disk, a damaged file, a bad row.
    pub fn is_transient(&self) -> bool {
        let source = match self {
            StoreError::Unavailable(_) => return true,
            StoreError::Db { source: Some(source), .. } => source.as_ref(),
            _ => return false,
        };
        if let Some(e) = source.downcast_ref::<rusqlite::Error>() {
            return matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked));
        }
        if let Some(e) = source.downcast_ref::<tokio_postgres::Error>() {
            return postgres::transient(e);
        }
        source.downcast_ref::<deadpool_postgres::PoolError>().is_some_and(postgres::pool_transient)
    }
}

/// What [`Questions::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant, reason = "one per ask, moved straight out; a Box would only add an allocation")]
pub enum Inserted {
    /// The question is stored as new.
    New,
    /// The id was already stored with the same questions (a resume): nothing changed,
    /// and this is the stored record, which may already be final.
    Existing(QuestionRecord),
}

/// What [`Questions::finish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// This call made the question final; this is the record as now stored.
    Done(QuestionRecord),
    /// The question was already final: nothing changed, and this is the record with the
    /// result that won.
    AlreadyFinal(QuestionRecord),
}

/// Which questions [`Questions::list`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Questions still waiting for an answer, oldest first.
    Pending,
    /// Final questions, most recently finished first.
    Final,
    /// Every question, newest first.
    All,
}

/// Parses stored JSON text into a record's parts, naming the question when it is not.
pub(crate) fn parse_record(raw: RawRecord) -> Result<QuestionRecord, StoreError> {
    use askuser_core::Status;
    let id = raw.id;
    let corrupt = |what: &str, e: &dyn std::fmt::Display| StoreError::db(format!("question {id:?} has an invalid stored {what}: {e}"));
    let status: Status = raw.status.parse().map_err(|e: String| corrupt("status", &e))?;
    let request = serde_json::from_str(&raw.request).map_err(|e| corrupt("request", &e))?;
    let result = match raw.result {
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| corrupt("result", &e))?),
        None => None,
    };
    let ms = |v: i64, what: &str| u64::try_from(v).map_err(|_| corrupt(what, &format!("negative time {v}")));
    let created_at = ms(raw.created_at, "createdAt")?;
    let answered_at = raw.answered_at.map(|v| ms(v, "answeredAt")).transpose()?;
    Ok(QuestionRecord { id, request, status, created_at, answered_at, result, answered_by: raw.answered_by })
}

/// A stored question row, copied out of the database as is; [`parse_record`] parses it.
pub(crate) struct RawRecord {
    pub id: String,
    pub status: String,
    pub created_at: i64,
    pub answered_at: Option<i64>,
    pub answered_by: Option<String>,
    pub request: String,
    pub result: Option<String>,
}

/// The columns a [`RawRecord`] is read from, in its field order.
macro_rules! record_columns {
    () => {
        "id, status, created_at, answered_at, answered_by, request, result"
    };
}
pub(crate) use record_columns;

pub(crate) fn to_json<T: serde::Serialize>(value: &T, what: &str, id: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::db(format!("cannot encode the {what} of question {id:?}: {e}")))
}

pub(crate) fn to_sql_ms(ms: u64, what: &str, id: &str) -> Result<i64, StoreError> {
    i64::try_from(ms).map_err(|_| StoreError::db(format!("question {id:?}: {what} {ms} is out of range")))
}

/// The `%…%` pattern for a history search, with LIKE's wildcards escaped (`\`).
pub(crate) fn like_pattern(search: &str) -> String {
    format!("%{}%", search.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"))
}
