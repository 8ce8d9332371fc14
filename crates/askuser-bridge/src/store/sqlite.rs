//! The SQLite store: one file (`askuser.db` in the data directory), the embedded default.
//!
//! Every write is a committed SQLite transaction in WAL mode before the call returns, so
//! a bridge killed with SIGKILL and restarted on the same file still has every pending
//! question and every answer it acknowledged.
//!
//! The calls are synchronous: the [`Store`] impl runs them inline on the bridge's thread
//! (each takes microseconds and never awaits).

use super::{
    like_pattern, parse_record, record_columns, to_json, to_sql_ms, Credential, Credentials, Deliveries, Filter, Finished, Inserted,
    LinkUse, Notified, Questions, RawRecord, Scope, Store, StoreError, StoredDecision, StoredLink, StoredRule, StoredSession,
    StoredSubscription,
};
use crate::lock;
use askuser_core::protocol::QuestionRecord;
use askuser_core::AskResult;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The schema version this code writes, kept in SQLite's `user_version` pragma: one
/// per entry of [`MIGRATIONS`] and then of [`super::SHARED_MIGRATIONS`].
#[allow(clippy::cast_possible_wrap, reason = "a handful of migrations")]
const SCHEMA_VERSION: i64 = (MIGRATIONS.len() + super::SHARED_MIGRATIONS.len()) as i64;

const _: () = assert!(MIGRATIONS.len() == super::OWN_VERSIONS, "a new step goes in SHARED_MIGRATIONS");

/// How long a call waits for a lock held by another connection (another process on the
/// same file) before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Each entry migrates the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the questions table.
    //
    // `seq` is the insertion order: a rowid alias, so a new row gets the largest `seq`
    // plus one. (Not AUTOINCREMENT: that would write `sqlite_sequence` on every insert
    // only to avoid reusing the `seq` of a pruned newest row, which orders the same.)
    // `final_seq` is the order in which questions became final, so "most recently
    // finished" does not depend on the clock that produced `answered_at`.
    // `request` and `result` hold the core types as JSON text.
    // The final-only indexes are partial, so inserting a pending question writes only
    // the table, the `id` index and `questions_status_seq`.
    "CREATE TABLE questions (
         seq         INTEGER PRIMARY KEY,
         id          TEXT    NOT NULL UNIQUE,
         status      TEXT    NOT NULL
                     CHECK (status IN ('pending', 'answered', 'cancelled', 'timed_out', 'withdrawn')),
         created_at  INTEGER NOT NULL,
         answered_at INTEGER,
         answered_by TEXT,
         final_seq   INTEGER,
         request     TEXT    NOT NULL,
         result      TEXT
     );
     CREATE INDEX questions_status_seq ON questions (status, seq);
     CREATE INDEX questions_final_seq ON questions (final_seq) WHERE final_seq IS NOT NULL;
     CREATE INDEX questions_answered_at ON questions (answered_at) WHERE answered_at IS NOT NULL;",
    // 1 -> 2: scoped credentials (agent, device, admin), each token kept only as its
    // SHA-256; a revoked one stays listed with when it was revoked.
    "CREATE TABLE credentials (
         id         TEXT    PRIMARY KEY,
         name       TEXT    NOT NULL,
         scope      TEXT    NOT NULL CHECK (scope IN ('agent', 'device', 'admin')),
         hash       TEXT    NOT NULL UNIQUE,
         created_at INTEGER NOT NULL,
         revoked_at INTEGER
     );",
    // 2 -> 3: the agent credential that asked a question (NULL: the admin token), so
    // an agent token reaches only its own questions.
    "ALTER TABLE questions ADD COLUMN owner TEXT;",
    // 3 -> 4: notifications. A device's push subscription (RFC 8030), with the
    // credential that made it and its rules (JSON); answer links (single use, bound to
    // one question and one option), each kept only as the SHA-256 of its key.
    "CREATE TABLE push_subscriptions (
         endpoint   TEXT    PRIMARY KEY,
         credential TEXT,
         p256dh     TEXT    NOT NULL,
         auth       TEXT    NOT NULL,
         rules      TEXT    NOT NULL,
         created_at INTEGER NOT NULL
     );
     CREATE TABLE answer_links (
         hash        TEXT    PRIMARY KEY,
         question_id TEXT    NOT NULL,
         option      INTEGER NOT NULL,
         channel     TEXT    NOT NULL,
         credential  TEXT,
         expires_at  INTEGER NOT NULL,
         used_at     INTEGER
     );
     CREATE TABLE notified (
         question_id TEXT    NOT NULL,
         target      TEXT    NOT NULL,
         at          INTEGER NOT NULL,
         PRIMARY KEY (question_id, target)
     );",
    // 4 -> 5: people. A device credential may belong to a person; people are in teams.
    "ALTER TABLE credentials ADD COLUMN person TEXT;
     CREATE TABLE teams (
         person TEXT NOT NULL,
         team   TEXT NOT NULL,
         PRIMARY KEY (person, team)
     );",
    // 5 -> 6: approvals. The rules that answer an agent's request to use a tool without
    // asking (each the core's JSON), and the audit log of every decision. `seq` is the
    // order decisions were added in (a rowid alias), which breaks ties of `at`; the index
    // on `at` holds the rowid too, so the newest come first without a sort.
    "CREATE TABLE rules (
         id         TEXT    PRIMARY KEY,
         rule       TEXT    NOT NULL,
         created_at INTEGER NOT NULL,
         created_by TEXT
     );
     CREATE TABLE decisions (
         seq           INTEGER PRIMARY KEY,
         question      TEXT,
         tool          TEXT    NOT NULL,
         summary       TEXT    NOT NULL,
         decision      TEXT    NOT NULL,
         rule          TEXT,
         by_credential TEXT,
         agent         TEXT,
         at            INTEGER NOT NULL
     );
     CREATE INDEX decisions_at ON decisions (at);",
];

/// The SQLite store. Cheap to share: wrap it in an `Arc`.
pub struct Sqlite {
    /// One connection behind a std `Mutex`, not an async one: every critical section is
    /// a few statements on one connection (microseconds), and it is never held across
    /// an `.await` (the guard is not `Send`, so the compiler refuses that in a spawned
    /// task). One connection also matches SQLite, which allows one writer at a time.
    /// Large reads ([`Questions::list`]) copy the rows' text under the lock and parse the
    /// JSON after releasing it.
    conn: Mutex<Connection>,
    /// The directory holding the file (none in memory), for the free space it has.
    dir: Option<PathBuf>,
    /// The file (none in memory).
    file: Option<PathBuf>,
    /// Why the last write failed, until one succeeds (the bridge's health says it).
    write_failure: Mutex<Option<String>>,
}

/// Below this much free space on the store's disk the bridge reports itself unhealthy:
/// a question of up to 1 MiB, its WAL frames and the checkpoint need room.
pub const MIN_FREE_BYTES: u64 = 8 * 1024 * 1024;

/// How hard a write tries to survive a crash. Every mode uses a write-ahead log (WAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=NORMAL`: a commit survives the bridge being killed (SIGKILL, panic,
    /// OOM); the last commits may be lost if the machine loses power.
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit is fsynced, so it also survives power loss.
    /// Slower per write.
    Full,
}

impl Drop for Sqlite {
    /// SQLite removes the log and its index when its last connection closes cleanly: from
    /// then on the store is whole in its file, which `store.json` records (damage.rs), so
    /// that a log gone after a stop that was not clean can be told apart.
    fn drop(&mut self) {
        let (Some(file), Some(dir)) = (self.file.take(), self.dir.take()) else { return };
        let Ok(blank) = Connection::open_in_memory() else { return };
        let conn = std::mem::replace(self.conn.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner), blank);
        match conn.close() {
            Ok(()) => {
                let log = file.with_file_name(format!("{}-wal", file.file_name().unwrap_or_default().to_string_lossy()));
                if !log.exists() {
                    crate::damage::closed(&dir);
                }
            }
            Err((_, e)) => tracing::warn!("cannot close the question store {}: {e}", file.display()),
        }
    }
}

impl fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sqlite").finish_non_exhaustive()
    }
}

impl Sqlite {
    /// Opens (creating if missing) the store file at `path`; its directory must exist.
    ///
    /// Sets WAL mode, `synchronous` per `durability` and a busy timeout, migrates the
    /// schema (the `user_version` pragma) and checks that the file is writable, so a
    /// missing or read-only directory, a read-only file, a file that is not a database or
    /// one written by a newer askuser fails here with [`StoreError::Open`], not at the
    /// first answer.
    pub(crate) fn open(path: &Path, durability: Durability) -> Result<Sqlite, StoreError> {
        let fail = |e: rusqlite::Error| StoreError::Open { path: path.to_owned(), message: open_message(&e, path) };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // SQLite silently opens a write-protected file read-only: refuse it now.
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(fail)? {
            return Err(StoreError::Open {
                path: path.to_owned(),
                message: "the file is read-only; make it and its directory writable by this user".into(),
            });
        }
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                path: path.to_owned(),
                message: format!(
                    "cannot use write-ahead logging (journal mode stays {mode:?}); put the data directory on a local file system"
                ),
            });
        }
        let synchronous = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", synchronous).map_err(fail)?;
        migrate(&mut conn, path)?;
        let mut store = Sqlite::with(conn, path.parent().map(Path::to_path_buf));
        store.file = Some(path.to_owned());
        Ok(store)
    }

    /// SQLite's own check of the store file at `path`, on a read-only connection of its
    /// own so nothing is written first: `integrity_check` when `full`, else the faster
    /// `quick_check`. `["ok"]` when sound (or when there is no store yet), else what it found.
    pub(crate) fn check(path: &Path, full: bool) -> Result<Vec<String>, String> {
        let sound = || Ok(vec!["ok".to_owned()]);
        if std::fs::metadata(path).map_or(true, |m| !m.is_file() || m.len() == 0) {
            return sound(); // nothing to check: opening says what is wrong, if anything
        }
        let sql = if full { "PRAGMA integrity_check" } else { "PRAGMA quick_check" };
        let run = || -> rusqlite::Result<Vec<String>> {
            let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect()
        };
        match run() {
            Ok(rows) => Ok(rows),
            // Not a database at all: opening it says so, with what to do.
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => sound(),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Opens an empty store that lives in memory only, for tests and benchmarks.
    pub fn open_in_memory() -> Result<Sqlite, StoreError> {
        let memory = Path::new(":memory:");
        let fail = |e: rusqlite::Error| StoreError::Open { path: memory.to_owned(), message: open_message(&e, memory) };
        let mut conn = Connection::open_in_memory().map_err(fail)?;
        migrate(&mut conn, memory)?;
        Ok(Sqlite::with(conn, None))
    }

    fn with(conn: Connection, dir: Option<PathBuf>) -> Sqlite {
        conn.set_prepared_statement_cache_capacity(32);
        Sqlite { conn: Mutex::new(conn), dir, file: None, write_failure: Mutex::new(None) }
    }

    /// Remembers how a write went, for [`Store::health`].
    fn noted<T>(&self, outcome: Result<T, StoreError>) -> Result<T, StoreError> {
        let failure = match &outcome {
            Err(StoreError::Db { message, .. }) => Some(message.clone()),
            _ => None,
        };
        *lock(&self.write_failure) = failure;
        outcome
    }

    /// Whether the store can take writes: the last one failed (say, the disk is full),
    /// or its disk has less than [`MIN_FREE_BYTES`] free. `Err` says which.
    pub(crate) fn health(&self) -> Result<(), String> {
        if let Some(failure) = lock(&self.write_failure).clone() {
            return Err(format!("the last write to the question store failed: {failure}"));
        }
        match self.dir.as_deref().and_then(free_bytes) {
            Some(free) if free < MIN_FREE_BYTES => Err(format!(
                "the disk holding the question store has {free} bytes free (askuser needs {MIN_FREE_BYTES}); new questions and \
                 answers may not be stored until space is freed"
            )),
            _ => Ok(()),
        }
    }

    /// The connection (see [`crate::lock`]: an open transaction is rolled back when dropped).
    fn lock(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// Stores a new question (normally pending; the record is stored as given).
    ///
    /// If `record.id` is already stored: with the same `request.questions` this is a
    /// resume and returns `Ok(Inserted::Existing(stored record))`, changing nothing; with
    /// different questions it returns [`StoreError::Conflict`], changing nothing.
    pub(crate) fn insert(&self, record: &QuestionRecord) -> Result<Inserted, StoreError> {
        self.noted(self.insert_unnoted(record))
    }

    fn insert_unnoted(&self, record: &QuestionRecord) -> Result<Inserted, StoreError> {
        let context = |e| db_error(format!("cannot store question {:?}", record.id), e);
        let request = to_json(&record.request, "request", &record.id)?;
        let result = record.result.as_ref().map(|r| to_json(r, "result", &record.id)).transpose()?;
        let created_at = to_sql_ms(record.created_at, "createdAt", &record.id)?;
        let answered_at = record.answered_at.map(|ms| to_sql_ms(ms, "answeredAt", &record.id)).transpose()?;

        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(context)?;
        let added = tx
            .prepare_cached(
                "INSERT INTO questions (id, status, created_at, answered_at, answered_by, request, result, final_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
                         CASE WHEN ?2 = 'pending' THEN NULL
                              ELSE (SELECT IFNULL(MAX(final_seq), 0) + 1 FROM questions WHERE final_seq IS NOT NULL) END)
                 ON CONFLICT (id) DO NOTHING",
            )
            .and_then(|mut s| {
                s.execute(params![record.id, record.status.as_str(), created_at, answered_at, record.answered_by, request, result])
            })
            .map_err(context)?;
        if added == 1 {
            tx.commit().map_err(context)?;
            return Ok(Inserted::New);
        }
        let stored = select(&tx, &record.id).map_err(context)?;
        drop(tx); // nothing was written: roll back
        drop(conn);
        let stored =
            parse_record(stored.ok_or_else(|| StoreError::db(format!("question {:?} was neither inserted nor found", record.id)))?)?;
        if stored.request.questions == record.request.questions {
            Ok(Inserted::Existing(stored))
        } else {
            Err(StoreError::Conflict { id: record.id.clone() })
        }
    }

    /// Makes the pending question `id` final with `result`: `result.status` becomes its
    /// status and `result.answered_at` its `answered_at`; `by` is the client that gave the
    /// answer (a browser client id, `cli`, `http`), if any.
    ///
    /// Atomic: one `UPDATE ... WHERE id = ? AND status = 'pending'` in a transaction, so
    /// of several concurrent calls exactly one returns [`Finished::Done`]. If the question
    /// was already final this returns [`Finished::AlreadyFinal`] with the stored record
    /// and changes nothing. An unknown id is [`StoreError::NotFound`]; a `result` whose
    /// status is `pending` is refused with [`StoreError::Db`].
    pub(crate) fn finish(&self, id: &str, result: &AskResult, by: Option<&str>) -> Result<Finished, StoreError> {
        self.noted(self.finish_unnoted(id, result, by))
    }

    fn finish_unnoted(&self, id: &str, result: &AskResult, by: Option<&str>) -> Result<Finished, StoreError> {
        if !result.status.is_final() {
            return Err(StoreError::db(format!("cannot finish question {id:?} with status \"pending\"; a final status is needed")));
        }
        let context = |e| db_error(format!("cannot finish question {id:?}"), e);
        let json = to_json(result, "result", id)?;
        let answered_at = to_sql_ms(result.answered_at, "answeredAt", id)?;

        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(context)?;
        let done = tx
            .prepare_cached(concat!(
                "UPDATE questions
                 SET status = ?2, answered_at = ?3, answered_by = ?4, result = ?5,
                     final_seq = (SELECT IFNULL(MAX(final_seq), 0) + 1 FROM questions WHERE final_seq IS NOT NULL)
                 WHERE id = ?1 AND status = 'pending'
                 RETURNING ",
                record_columns!()
            ))
            .and_then(|mut s| s.query_row(params![id, result.status.as_str(), answered_at, by, json], from_row).optional())
            .map_err(context)?;
        if let Some(raw) = done {
            tx.commit().map_err(context)?;
            drop(conn);
            return Ok(Finished::Done(parse_record(raw)?));
        }
        let stored = select(&tx, id).map_err(context)?;
        drop(tx); // nothing was written: roll back
        drop(conn);
        match stored {
            Some(raw) => Ok(Finished::AlreadyFinal(parse_record(raw)?)),
            None => Err(StoreError::NotFound { id: id.to_owned() }),
        }
    }

    /// The question `id`, or `None` if it is not stored.
    pub(crate) fn get(&self, id: &str) -> Result<Option<QuestionRecord>, StoreError> {
        let raw = select(&self.lock(), id).map_err(|e| db_error(format!("cannot read question {id:?}"), e))?;
        raw.map(parse_record).transpose()
    }

    /// At most `limit` questions. [`Filter::Pending`]: oldest first (insertion order).
    /// [`Filter::Final`]: most recently finished first. [`Filter::All`]: newest first.
    pub(crate) fn list(&self, filter: Filter, limit: usize) -> Result<Vec<QuestionRecord>, StoreError> {
        let sql = match filter {
            Filter::Pending => {
                concat!("SELECT ", record_columns!(), " FROM questions WHERE status = 'pending' ORDER BY seq LIMIT ?1")
            }
            Filter::Final => {
                concat!("SELECT ", record_columns!(), " FROM questions WHERE final_seq IS NOT NULL ORDER BY final_seq DESC LIMIT ?1")
            }
            Filter::All => concat!("SELECT ", record_columns!(), " FROM questions ORDER BY seq DESC LIMIT ?1"),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Copy the text under the lock; parse the JSON after releasing it.
        let raw: Vec<RawRecord> = {
            let conn = self.lock();
            let mut stmt = conn.prepare_cached(sql).map_err(|e| db_error("cannot list questions".into(), e))?;
            let rows = stmt.query_map([limit], from_row).map_err(|e| db_error("cannot list questions".into(), e))?;
            rows.collect::<Result<_, _>>().map_err(|e| db_error("cannot list questions".into(), e))?
        };
        raw.into_iter().map(parse_record).collect()
    }

    /// Pending questions after `after_seq` (0: from the first), oldest first: at most
    /// `max_count`, and no more once their stored text passes `max_bytes` (at least one
    /// is returned, however big). Returns them, the last one's position for the next call,
    /// and whether more follow. A snapshot is read this way, part by part, so a tab's
    /// snapshot never holds every pending question in memory at once.
    pub(crate) fn pending_page(
        &self,
        after_seq: i64,
        max_count: usize,
        max_bytes: usize,
    ) -> Result<(Vec<QuestionRecord>, i64, bool), StoreError> {
        const SQL: &str =
            concat!("SELECT seq, ", record_columns!(), " FROM questions WHERE status = 'pending' AND seq > ?1 ORDER BY seq LIMIT ?2");
        let fail = |e| db_error("cannot list pending questions".into(), e);
        let (mut raw, mut last, mut more, mut bytes) = (Vec::new(), after_seq, false, 0usize);
        {
            let conn = self.lock();
            let mut stmt = conn.prepare_cached(SQL).map_err(fail)?;
            let limit = i64::try_from(max_count.saturating_add(1)).unwrap_or(i64::MAX);
            let mut rows = stmt.query(rusqlite::params![after_seq, limit]).map_err(fail)?;
            while let Some(row) = rows.next().map_err(fail)? {
                if raw.len() == max_count.max(1) || (!raw.is_empty() && bytes >= max_bytes) {
                    more = true;
                    break;
                }
                let seq: i64 = row.get(0).map_err(fail)?;
                let record = from_row_at(row, 1).map_err(fail)?;
                bytes += record.request.len() + record.result.as_ref().map_or(0, String::len);
                last = seq;
                raw.push(record);
            }
        }
        let records = raw.into_iter().map(parse_record).collect::<Result<_, _>>()?;
        Ok((records, last, more))
    }

    /// Final questions, most recently finished first, from `offset`; with `search`, only
    /// those whose request or result contains it (ASCII case ignored, as SQLite's LIKE).
    pub(crate) fn history(&self, search: Option<&str>, offset: usize, limit: usize) -> Result<Vec<QuestionRecord>, StoreError> {
        let pattern = search.map(like_pattern);
        let (limit, offset) = (i64::try_from(limit).unwrap_or(i64::MAX), i64::try_from(offset).unwrap_or(i64::MAX));
        let raw: Vec<RawRecord> = {
            let conn = self.lock();
            let sql = concat!(
                "SELECT ",
                record_columns!(),
                " FROM questions WHERE final_seq IS NOT NULL",
                " AND (?1 IS NULL OR request LIKE ?1 ESCAPE '\\' OR result LIKE ?1 ESCAPE '\\')",
                " ORDER BY final_seq DESC LIMIT ?2 OFFSET ?3"
            );
            let mut stmt = conn.prepare_cached(sql).map_err(|e| db_error("cannot read the history".into(), e))?;
            let rows = stmt
                .query_map(rusqlite::params![pattern, limit, offset], from_row)
                .map_err(|e| db_error("cannot read the history".into(), e))?;
            rows.collect::<Result<_, _>>().map_err(|e| db_error("cannot read the history".into(), e))?
        };
        raw.into_iter().map(parse_record).collect()
    }

    /// Deletes the final questions that became final (`answered_at`) before `cutoff_ms`,
    /// and returns how many. Pending questions are never deleted. Expired answer links,
    /// old notification records and approval decisions made before `cutoff_ms` go too
    /// (approval rules stay).
    pub(crate) fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let cutoff = i64::try_from(cutoff_ms).unwrap_or(i64::MAX);
        let conn = self.lock();
        conn.prepare_cached("DELETE FROM decisions WHERE at < ?1")
            .and_then(|mut s| s.execute([cutoff]))
            .map_err(|e| db_error("cannot prune old approval decisions".into(), e))?;
        // Answer links die with their question (and long expired ones before that).
        conn.prepare_cached("DELETE FROM answer_links WHERE expires_at < ?1")
            .and_then(|mut s| s.execute([cutoff]))
            .map_err(|e| db_error("cannot prune old answer links".into(), e))?;
        conn.prepare_cached("DELETE FROM notified WHERE at < ?1")
            .and_then(|mut s| s.execute([cutoff]))
            .map_err(|e| db_error("cannot prune old notifications".into(), e))?;
        conn.prepare_cached("DELETE FROM questions WHERE answered_at < ?1 AND status <> 'pending'")
            .and_then(|mut s| s.execute([cutoff]))
            .map_err(|e| db_error("cannot prune old questions".into(), e))
    }

    /// Keeps `sub`, replacing the subscription with the same endpoint only when the same
    /// credential made it; false: another credential holds the endpoint, and nothing
    /// changed (see [`Deliveries::add_subscription`]).
    pub(crate) fn add_subscription(&self, sub: &StoredSubscription) -> Result<bool, StoreError> {
        let context = |e| db_error("cannot store the push subscription".into(), e);
        let created = to_sql_ms(sub.created_at, "createdAt", &sub.endpoint)?;
        self.noted(
            self.lock()
                .prepare_cached(
                    "INSERT INTO push_subscriptions (endpoint, credential, p256dh, auth, rules, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (endpoint) DO UPDATE SET credential = excluded.credential, p256dh = excluded.p256dh,
                         auth = excluded.auth, rules = excluded.rules, created_at = excluded.created_at
                     WHERE push_subscriptions.credential IS excluded.credential",
                )
                .and_then(|mut s| s.execute(params![sub.endpoint, sub.credential, sub.p256dh, sub.auth, sub.rules, created]))
                .map(|n| n == 1)
                .map_err(context),
        )
    }

    /// Every push subscription, oldest first.
    pub(crate) fn subscriptions(&self) -> Result<Vec<StoredSubscription>, StoreError> {
        let context = |e| db_error("cannot read the push subscriptions".into(), e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT endpoint, credential, p256dh, auth, rules, created_at FROM push_subscriptions ORDER BY created_at, endpoint",
            )
            .map_err(context)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StoredSubscription {
                    endpoint: r.get(0)?,
                    credential: r.get(1)?,
                    p256dh: r.get(2)?,
                    auth: r.get(3)?,
                    rules: r.get(4)?,
                    created_at: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                })
            })
            .map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// Forgets the subscription at `endpoint` (only `credential`'s, when given); whether
    /// there was one.
    pub(crate) fn remove_subscription(&self, endpoint: &str, credential: Option<Option<&str>>) -> Result<bool, StoreError> {
        let context = |e| db_error("cannot remove the push subscription".into(), e);
        let conn = self.lock();
        let removed = match credential {
            None => conn.prepare_cached("DELETE FROM push_subscriptions WHERE endpoint = ?1").and_then(|mut s| s.execute([endpoint])),
            Some(c) => conn
                .prepare_cached("DELETE FROM push_subscriptions WHERE endpoint = ?1 AND credential IS ?2")
                .and_then(|mut s| s.execute(params![endpoint, c])),
        };
        drop(conn);
        Ok(self.noted(removed.map_err(context))? > 0)
    }

    /// Keeps answer links (their keys only as hashes).
    pub(crate) fn add_links(&self, links: &[StoredLink]) -> Result<(), StoreError> {
        let context = |e| db_error("cannot store answer links".into(), e);
        let mut conn = self.lock();
        let outcome = (|| {
            let tx = conn.transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO answer_links (hash, question_id, option, channel, credential, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for l in links {
                    let expires = i64::try_from(l.expires_at).unwrap_or(i64::MAX);
                    stmt.execute(params![l.hash, l.question_id, l.option, l.channel, l.credential, expires])?;
                }
            }
            tx.commit()
        })();
        drop(conn);
        self.noted(outcome.map_err(context))
    }

    /// Records that question `id` reached `target` (`push:ENDPOINT`, `webhook`, `ntfy`),
    /// so a restarted bridge neither sends it again nor forgets to close it.
    pub(crate) fn add_notified(&self, id: &str, target: &str, at: u64, message: Option<&str>) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot record a notification of {id:?}"), e);
        let at = to_sql_ms(at, "notifiedAt", id)?;
        self.noted(
            self.lock()
                .prepare_cached(
                    "INSERT INTO notified (question_id, target, at, message) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (question_id, target) DO UPDATE SET message = coalesce(excluded.message, message)",
                )
                .and_then(|mut s| s.execute(params![id, target, at, message]))
                .map(|_| ())
                .map_err(context),
        )
    }

    /// Every notification recorded as sent.
    pub(crate) fn notified(&self) -> Result<Vec<Notified>, StoreError> {
        let context = |e| db_error("cannot read the notifications sent".into(), e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT n.question_id, n.target, q.status = 'pending', n.message FROM notified n \
                 LEFT JOIN questions q ON q.id = n.question_id",
            )
            .map_err(context)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Notified { id: r.get(0)?, target: r.get(1)?, waits: r.get::<_, Option<bool>>(2)?.unwrap_or(false), message: r.get(3)? })
            })
            .map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// The channels' messages question `id` was posted as.
    pub(crate) fn posted(&self, id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let context = |e| db_error(format!("cannot read where {id:?} was posted"), e);
        let conn = self.lock();
        let mut stmt =
            conn.prepare_cached("SELECT target, message FROM notified WHERE question_id = ?1 AND message IS NOT NULL").map_err(context)?;
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// The question `target`'s message `message` is about.
    pub(crate) fn notified_by_message(&self, target: &str, message: &str) -> Result<Option<String>, StoreError> {
        let context = |e| db_error("cannot find the question of a channel's message".into(), e);
        self.lock()
            .prepare_cached("SELECT question_id FROM notified WHERE target = ?1 AND message = ?2")
            .and_then(|mut s| s.query_row(params![target, message], |r| r.get(0)).optional())
            .map_err(context)
    }

    /// Forgets where question `id` was sent (its notifications are closed).
    pub(crate) fn forget_notified(&self, id: &str) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot forget the notifications of {id:?}"), e);
        self.noted(
            self.lock()
                .prepare_cached("DELETE FROM notified WHERE question_id = ?1")
                .and_then(|mut s| s.execute([id]))
                .map(drop)
                .map_err(context),
        )
    }

    /// Records that the person at `place` wrote at `at` (a later time kept).
    pub fn add_heard(&self, place: &str, at: u64) -> Result<(), StoreError> {
        let context = |e| db_error("cannot record when a person last wrote".into(), e);
        let at = to_sql_ms(at, "heardAt", place)?;
        self.noted(
            self.lock()
                .prepare_cached("INSERT INTO heard (place, at) VALUES (?1, ?2) ON CONFLICT (place) DO UPDATE SET at = max(at, excluded.at)")
                .and_then(|mut s| s.execute(params![place, at]))
                .map(drop)
                .map_err(context),
        )
    }

    /// When the person at `place` last wrote.
    pub fn heard(&self, place: &str) -> Result<Option<u64>, StoreError> {
        let context = |e| db_error("cannot read when a person last wrote".into(), e);
        let at: Option<i64> = self
            .lock()
            .prepare_cached("SELECT at FROM heard WHERE place = ?1")
            .and_then(|mut s| s.query_row([place], |r| r.get(0)).optional())
            .map_err(context)?;
        Ok(at.map(|at| u64::try_from(at).unwrap_or(0)))
    }

    /// Uses the link whose key hashes to `hash` at `now`: marks it used if it is unused
    /// and unexpired, in one `UPDATE`, so a link answers once however many use it at once.
    pub(crate) fn use_link(&self, hash: &str, now: u64) -> Result<LinkUse, StoreError> {
        let context = |e| db_error("cannot use an answer link".into(), e);
        let at = i64::try_from(now).unwrap_or(i64::MAX);
        let mut conn = self.lock();
        let outcome = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let found = read_link(&tx, hash)?;
            let result = match found {
                None => LinkUse::Unknown,
                Some((_, Some(_))) => LinkUse::Used,
                Some((link, None)) if link.expires_at <= now => LinkUse::Expired,
                Some((link, None)) => {
                    tx.prepare_cached("UPDATE answer_links SET used_at = ?2 WHERE hash = ?1")?.execute(params![hash, at])?;
                    LinkUse::Fresh(link)
                }
            };
            tx.commit()?;
            Ok(result)
        })();
        drop(conn);
        self.noted(outcome.map_err(context))
    }

    /// The link whose key hashes to `hash`, and whether it was used, without using it.
    pub(crate) fn link(&self, hash: &str) -> Result<Option<(StoredLink, bool)>, StoreError> {
        let context = |e| db_error("cannot read an answer link".into(), e);
        read_link(&self.lock(), hash).map(|found| found.map(|(link, used)| (link, used.is_some()))).map_err(context)
    }

    /// Records that credential `owner` asked question `id` (kept if one is recorded).
    pub(crate) fn set_owner(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot record who asked {id:?}"), e);
        self.noted(
            self.lock()
                .prepare_cached("UPDATE questions SET owner = ?2 WHERE id = ?1 AND owner IS NULL")
                .and_then(|mut s| s.execute(params![id, owner]))
                .map(|_| ())
                .map_err(context),
        )
    }

    /// The agent credential that asked question `id`, if one did.
    pub(crate) fn owner(&self, id: &str) -> Result<Option<String>, StoreError> {
        let context = |e| db_error(format!("cannot read who asked {id:?}"), e);
        self.lock()
            .prepare_cached("SELECT owner FROM questions WHERE id = ?1")
            .and_then(|mut s| s.query_row([id], |r| r.get::<_, Option<String>>(0)).optional())
            .map(Option::flatten)
            .map_err(context)
    }

    /// Stores a new credential (its token only as a hash).
    pub(crate) fn add_credential(&self, c: &Credential) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot store credential {:?}", c.id), e);
        let created = to_sql_ms(c.created_at, "createdAt", &c.id)?;
        self.noted(
            self.lock()
                .prepare_cached("INSERT INTO credentials (id, name, scope, hash, created_at, person) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .and_then(|mut s| s.execute(params![c.id, c.name, c.scope.as_str(), c.hash, created, c.person]))
                .map(|_| ())
                .map_err(context),
        )
    }

    /// Every credential, revoked ones included, oldest first.
    pub(crate) fn credentials(&self) -> Result<Vec<Credential>, StoreError> {
        let context = |e| db_error("cannot read the credentials".into(), e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT id, name, scope, hash, created_at, revoked_at, person FROM credentials ORDER BY created_at, id")
            .map_err(context)?;
        let rows = stmt
            .query_map([], |r| {
                let scope: String = r.get(2)?;
                let ms = |v: i64| u64::try_from(v).unwrap_or(0);
                Ok(Credential {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    scope: scope.parse().unwrap_or(Scope::Device),
                    hash: r.get(3)?,
                    created_at: ms(r.get(4)?),
                    revoked_at: r.get::<_, Option<i64>>(5)?.map(ms),
                    person: r.get(6)?,
                })
            })
            .map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// Marks credential `id` revoked at `at` and forgets the page sessions it opened and
    /// the push subscriptions it made, in one transaction; false when there is none or it
    /// already was.
    pub(crate) fn revoke_credential(&self, id: &str, at: u64) -> Result<bool, StoreError> {
        let context = |e| db_error(format!("cannot revoke credential {id:?}"), e);
        let at = to_sql_ms(at, "revokedAt", id)?;
        let mut conn = self.lock();
        let outcome = (|| {
            let tx = conn.transaction()?;
            let changed = tx
                .prepare_cached("UPDATE credentials SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL")?
                .execute(params![id, at])?;
            tx.prepare_cached("DELETE FROM page_sessions WHERE credential = ?1")?.execute([id])?;
            tx.prepare_cached("DELETE FROM push_subscriptions WHERE credential = ?1")?.execute([id])?;
            tx.commit()?;
            Ok(changed == 1)
        })();
        drop(conn);
        self.noted(outcome.map_err(context))
    }

    /// Every (person, team) membership, by person then team.
    pub(crate) fn teams(&self) -> Result<Vec<(String, String)>, StoreError> {
        let context = |e| db_error("cannot read the teams".into(), e);
        let conn = self.lock();
        let mut stmt = conn.prepare_cached("SELECT person, team FROM teams ORDER BY person, team").map_err(context)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// Makes `teams` the teams `person` is in.
    pub(crate) fn set_teams(&self, person: &str, teams: &[String]) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot set the teams of {person:?}"), e);
        let mut conn = self.lock();
        let outcome = (|| {
            let tx = conn.transaction()?;
            tx.prepare_cached("DELETE FROM teams WHERE person = ?1")?.execute([person])?;
            for team in teams {
                tx.prepare_cached("INSERT OR IGNORE INTO teams (person, team) VALUES (?1, ?2)")?.execute([person, team])?;
            }
            tx.commit()
        })();
        drop(conn);
        self.noted(outcome.map_err(context))
    }

    /// Keeps a new page session, and forgets those expired by its `created_at`.
    pub(crate) fn add_session(&self, s: &StoredSession) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot store page session {:?}", s.id), e);
        let created = to_sql_ms(s.created_at, "createdAt", &s.id)?;
        let expires = to_sql_ms(s.expires_at, "expiresAt", &s.id)?;
        let mut conn = self.lock();
        let outcome = (|| {
            let tx = conn.transaction()?;
            tx.prepare_cached("DELETE FROM page_sessions WHERE expires_at <= ?1")?.execute([created])?;
            tx.prepare_cached("INSERT INTO page_sessions (id, hash, credential, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)")?
                .execute(params![s.id, s.hash, s.credential, created, expires])?;
            tx.commit()
        })();
        drop(conn);
        self.noted(outcome.map_err(context))
    }

    /// The page session whose cookie hashes to `hash`, expired or not.
    pub(crate) fn session(&self, hash: &str) -> Result<Option<StoredSession>, StoreError> {
        let context = |e| db_error("cannot read a page session".into(), e);
        self.lock()
            .prepare_cached("SELECT id, hash, credential, created_at, expires_at FROM page_sessions WHERE hash = ?1")
            .and_then(|mut s| s.query_row([hash], read_session).optional())
            .map_err(context)
    }

    /// Every page session kept, oldest first.
    pub(crate) fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let context = |e| db_error("cannot read the page sessions".into(), e);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT id, hash, credential, created_at, expires_at FROM page_sessions ORDER BY created_at, id")
            .map_err(context)?;
        let rows = stmt.query_map([], read_session).map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// Forgets page session `id`; whether there was one.
    pub(crate) fn remove_session(&self, id: &str) -> Result<bool, StoreError> {
        let context = |e| db_error(format!("cannot remove page session {id:?}"), e);
        let sql = "DELETE FROM page_sessions WHERE id = ?1";
        let removed = self.noted(self.lock().prepare_cached(sql).and_then(|mut s| s.execute([id])).map_err(context))?;
        Ok(removed > 0)
    }

    /// Keeps approval rule `rule` (a new id: an id already kept is refused).
    pub(crate) fn add_rule(&self, rule: &StoredRule) -> Result<(), StoreError> {
        let context = |e| db_error(format!("cannot store approval rule {:?}", rule.id), e);
        let created = i64::try_from(rule.created_at).unwrap_or(i64::MAX);
        self.noted(
            self.lock()
                .prepare_cached("INSERT INTO rules (id, rule, created_at, created_by) VALUES (?1, ?2, ?3, ?4)")
                .and_then(|mut s| s.execute(params![rule.id, rule.rule, created, rule.created_by]))
                .map(|_| ())
                .map_err(context),
        )
    }

    /// Every approval rule, oldest first.
    pub(crate) fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        let context = |e| db_error("cannot read the approval rules".into(), e);
        let conn = self.lock();
        let mut stmt =
            conn.prepare_cached("SELECT id, rule, created_at, created_by FROM rules ORDER BY created_at, id").map_err(context)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StoredRule {
                    id: r.get(0)?,
                    rule: r.get(1)?,
                    created_at: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                    created_by: r.get(3)?,
                })
            })
            .map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// Forgets rule `id`; whether there was one.
    pub(crate) fn remove_rule(&self, id: &str) -> Result<bool, StoreError> {
        let context = |e| db_error(format!("cannot remove approval rule {id:?}"), e);
        let removed =
            self.noted(self.lock().prepare_cached("DELETE FROM rules WHERE id = ?1").and_then(|mut s| s.execute([id])).map_err(context))?;
        Ok(removed > 0)
    }

    /// Adds one decision to the audit log.
    pub(crate) fn add_decision(&self, decision: &StoredDecision) -> Result<(), StoreError> {
        let context = |e| db_error("cannot record an approval decision".into(), e);
        let d = decision;
        let at = i64::try_from(d.at).unwrap_or(i64::MAX);
        self.noted(
            self.lock()
                .prepare_cached(
                    "INSERT INTO decisions (question, tool, summary, decision, rule, by_credential, agent, at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .and_then(|mut s| s.execute(params![d.question, d.tool, d.summary, d.decision, d.rule, d.by, d.agent, at]))
                .map(|_| ())
                .map_err(context),
        )
    }

    /// The newest `limit` decisions, newest first (ties: the later added first).
    pub(crate) fn decisions(&self, limit: usize) -> Result<Vec<StoredDecision>, StoreError> {
        let context = |e| db_error("cannot read the approval decisions".into(), e);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT question, tool, summary, decision, rule, by_credential, agent, at FROM decisions
                 ORDER BY at DESC, seq DESC LIMIT ?1",
            )
            .map_err(context)?;
        let rows = stmt
            .query_map([limit], |r| {
                Ok(StoredDecision {
                    question: r.get(0)?,
                    tool: r.get(1)?,
                    summary: r.get(2)?,
                    decision: r.get(3)?,
                    rule: r.get(4)?,
                    by: r.get(5)?,
                    agent: r.get(6)?,
                    at: u64::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
                })
            })
            .map_err(context)?;
        rows.collect::<Result<_, _>>().map_err(context)
    }

    /// How many questions are `(pending, final)`, for `/v1/health` and benchmarks.
    pub(crate) fn counts(&self) -> Result<(usize, usize), StoreError> {
        let context = |e| db_error("cannot count questions".into(), e);
        let mut conn = self.lock();
        // One read transaction, so both counts see the same state.
        let tx = conn.transaction().map_err(context)?;
        let pending: i64 = tx
            .prepare_cached("SELECT COUNT(*) FROM questions WHERE status = 'pending'")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(context)?;
        let total: i64 =
            tx.prepare_cached("SELECT COUNT(*) FROM questions").and_then(|mut s| s.query_row([], |r| r.get(0))).map_err(context)?;
        drop(tx);
        let count = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok((count(pending), count(total - pending)))
    }
}

fn read_session(r: &Row<'_>) -> rusqlite::Result<StoredSession> {
    let ms = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(StoredSession { id: r.get(0)?, hash: r.get(1)?, credential: r.get(2)?, created_at: ms(r.get(3)?), expires_at: ms(r.get(4)?) })
}

/// The store's calls, run inline: each is the synchronous method of the same name.
macro_rules! inline {
    ($trait:ident: $($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait::async_trait]
        impl $trait for Sqlite {
            $(async fn $name(&self, $($arg: $ty),*) -> $ret { Sqlite::$name(self, $($arg),*) })*
        }
    };
}

inline! { Questions:
    insert(record: &QuestionRecord) -> Result<Inserted, StoreError>;
    finish(id: &str, result: &AskResult, by: Option<&str>) -> Result<Finished, StoreError>;
    get(id: &str) -> Result<Option<QuestionRecord>, StoreError>;
    list(filter: Filter, limit: usize) -> Result<Vec<QuestionRecord>, StoreError>;
    pending_page(after: i64, max_count: usize, max_bytes: usize) -> Result<(Vec<QuestionRecord>, i64, bool), StoreError>;
    history(search: Option<&str>, offset: usize, limit: usize) -> Result<Vec<QuestionRecord>, StoreError>;
    prune(cutoff_ms: u64) -> Result<usize, StoreError>;
    counts() -> Result<(usize, usize), StoreError>;
    set_owner(id: &str, owner: &str) -> Result<(), StoreError>;
    owner(id: &str) -> Result<Option<String>, StoreError>;
    add_rule(rule: &StoredRule) -> Result<(), StoreError>;
    rules() -> Result<Vec<StoredRule>, StoreError>;
    remove_rule(id: &str) -> Result<bool, StoreError>;
    add_decision(decision: &StoredDecision) -> Result<(), StoreError>;
    decisions(limit: usize) -> Result<Vec<StoredDecision>, StoreError>;
}

inline! { Credentials:
    add_credential(c: &Credential) -> Result<(), StoreError>;
    credentials() -> Result<Vec<Credential>, StoreError>;
    revoke_credential(id: &str, at: u64) -> Result<bool, StoreError>;
    teams() -> Result<Vec<(String, String)>, StoreError>;
    set_teams(person: &str, teams: &[String]) -> Result<(), StoreError>;
    add_session(s: &StoredSession) -> Result<(), StoreError>;
    session(hash: &str) -> Result<Option<StoredSession>, StoreError>;
    sessions() -> Result<Vec<StoredSession>, StoreError>;
    remove_session(id: &str) -> Result<bool, StoreError>;
}

inline! { Deliveries:
    add_subscription(sub: &StoredSubscription) -> Result<bool, StoreError>;
    subscriptions() -> Result<Vec<StoredSubscription>, StoreError>;
    remove_subscription(endpoint: &str, credential: Option<Option<&str>>) -> Result<bool, StoreError>;
    add_links(links: &[StoredLink]) -> Result<(), StoreError>;
    use_link(hash: &str, now: u64) -> Result<LinkUse, StoreError>;
    link(hash: &str) -> Result<Option<(StoredLink, bool)>, StoreError>;
    add_notified(id: &str, target: &str, at: u64, message: Option<&str>) -> Result<(), StoreError>;
    notified() -> Result<Vec<Notified>, StoreError>;
    notified_by_message(target: &str, message: &str) -> Result<Option<String>, StoreError>;
    posted(id: &str) -> Result<Vec<(String, String)>, StoreError>;
    forget_notified(id: &str) -> Result<(), StoreError>;
    add_heard(place: &str, at: u64) -> Result<(), StoreError>;
    heard(place: &str) -> Result<Option<u64>, StoreError>;
}

#[async_trait::async_trait]
impl Store for Sqlite {
    async fn health(&self) -> Result<(), String> {
        Sqlite::health(self)
    }
}

/// Brings the schema of the store at `path` to [`SCHEMA_VERSION`] in one write
/// transaction. The version is written even when it is current, so an unwritable file
/// or directory fails at open.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let fail = |e: rusqlite::Error| StoreError::Open { path: path.to_owned(), message: open_message(&e, path) };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(fail)?;
    let steps: Vec<&str> = MIGRATIONS.iter().chain(super::SHARED_MIGRATIONS).copied().collect();
    let Some(missing) = usize::try_from(found).ok().and_then(|v| steps.get(v..)) else {
        return Err(StoreError::Open {
            path: path.to_owned(),
            message: format!(
                "it was written by a newer askuser (schema version {found}; this one knows up to {SCHEMA_VERSION}); upgrade askuser or use another data directory"
            ),
        });
    };
    for sql in missing {
        tx.execute_batch(sql).map_err(fail)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(fail)?;
    tx.commit().map_err(fail)
}

/// Reads the columns named by `record_columns!`, in that order.
fn from_row(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
    from_row_at(row, 0)
}

/// The same, starting at column `at`.
fn from_row_at(row: &Row<'_>, at: usize) -> rusqlite::Result<RawRecord> {
    Ok(RawRecord {
        id: row.get(at)?,
        status: row.get(at + 1)?,
        created_at: row.get(at + 2)?,
        answered_at: row.get(at + 3)?,
        answered_by: row.get(at + 4)?,
        request: row.get(at + 5)?,
        result: row.get(at + 6)?,
    })
}

fn select(conn: &Connection, id: &str) -> rusqlite::Result<Option<RawRecord>> {
    conn.prepare_cached(concat!("SELECT ", record_columns!(), " FROM questions WHERE id = ?1"))?.query_row([id], from_row).optional()
}

/// The link whose key hashes to `hash`, and when it was used.
fn read_link(conn: &Connection, hash: &str) -> rusqlite::Result<Option<(StoredLink, Option<i64>)>> {
    conn.prepare_cached("SELECT question_id, option, channel, credential, expires_at, used_at FROM answer_links WHERE hash = ?1")?
        .query_row([hash], |r| {
            let link = StoredLink {
                hash: hash.to_owned(),
                question_id: r.get(0)?,
                option: r.get(1)?,
                channel: r.get(2)?,
                credential: r.get(3)?,
                expires_at: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
            };
            Ok((link, r.get(5)?))
        })
        .optional()
}

/// The bytes an unprivileged user may still write on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        let stat = rustix::fs::statvfs(dir).ok()?;
        Some(stat.f_bavail.saturating_mul(stat.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

fn db_error(context: String, e: rusqlite::Error) -> StoreError {
    let hint = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => "; free some disk space",
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "; another process holds the store locked (is a second bridge using this data directory?)"
        }
        Some(rusqlite::ErrorCode::ReadOnly) => "; the file or its directory is no longer writable",
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
            "; the store is damaged: stop the bridge, keep a copy of the data directory and see docs/reliability.md#a-damaged-store"
        }
        _ => "",
    };
    let message = format!("{context}: {e}{hint}");
    StoreError::from_db(message, e)
}

/// SQLite's reason for failing to open, and what to do about it. (The path is already
/// in [`StoreError::Open`]'s message, so SQLite's copy of it is dropped.)
fn open_message(e: &rusqlite::Error, path: &Path) -> String {
    let hint = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::CannotOpen) if path.is_dir() => "it is a directory; give the path of a file in it",
        Some(rusqlite::ErrorCode::CannotOpen) => "check that the directory exists and is writable",
        Some(rusqlite::ErrorCode::ReadOnly) => "check that the file and its directory are writable by this user",
        Some(rusqlite::ErrorCode::PermissionDenied) => "check the permissions of the file and its directory",
        Some(rusqlite::ErrorCode::NotADatabase) => {
            "the file is not an askuser store (or is damaged); move it away or use another data directory"
        }
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "another process holds it locked; is a second bridge using this data directory?"
        }
        Some(rusqlite::ErrorCode::DiskFull) => "the disk is full; free some space",
        _ => "check that the data directory is a writable local directory",
    };
    let reason = e.to_string();
    let reason = reason.strip_suffix(&format!(": {}", path.display())).unwrap_or(&reason);
    format!("{reason}; {hint}")
}

#[cfg(test)]
mod tests;
