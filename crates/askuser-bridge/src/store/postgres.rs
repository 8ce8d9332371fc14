//! The shared store: one PostgreSQL database that several bridges use at once
//! (`askuser serve --store postgres://…`).
//!
//! The database is both the store and the bus between bridges. Every write that others
//! must hear about sends a `NOTIFY askuser` in its own transaction, so it is heard only
//! once committed; each bridge keeps one extra connection that `LISTEN`s and turns what
//! other bridges did into [`StoreEvent`]s. No event is needed for correctness: after a
//! lost connection, and every [`RESYNC_EVERY`] anyway, a bridge is told to resync from
//! the tables.
//!
//! The rules are the SQLite store's: the first `UPDATE … WHERE status = 'pending'` wins
//! (PostgreSQL re-checks the condition after a concurrent update commits, so of any
//! number of bridges exactly one finishes a question), and every write is committed
//! before the call returns. Times of the bridges' liveness come from the database's
//! clock, so bridges on machines with skewed clocks agree on who is alive.
//!
//! Driver: tokio-postgres (async, LISTEN/NOTIFY through its connection's messages, no
//! compile-time database), pooled by deadpool-postgres; TLS by the same rustls as the
//! rest of askuser (see [`crate::tls::database_config`]).

use super::{
    like_pattern, parse_record, record_columns, to_json, to_sql_ms, Credential, Credentials, Deliveries, Filter, Finished, Inserted,
    LinkUse, Notified, Paired, Questions, RawRecord, Scope, Shared, Store, StoreError, StoreEvent, StoredDecision, StoredLink, StoredRule,
    StoredSession, StoredSubscription,
};
use crate::lock;
use askuser_core::protocol::QuestionRecord;
use askuser_core::AskResult;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The channel every bridge listens on.
const CHANNEL: &str = "askuser"; // also in `LISTEN` below
/// A bridge says it is alive this often ...
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A heartbeat the database has not answered for this long makes `/v1/health` 503.
const HEALTH_WITHIN: Duration = Duration::from_secs(2);
/// ... and counts as gone (its waiting agents no longer keep questions) after this long.
const ALIVE_MS: i64 = 15_000;
/// How often a bridge resyncs from the tables even when no connection was lost.
pub const RESYNC_EVERY: Duration = Duration::from_secs(10);
/// Connections in the pool (the listener has its own).
const POOL_SIZE: usize = 8;
/// A call waits at most this long for a connection (the database is down: fail clearly).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an ask, an answer, a read or a tab's snapshot waits for the database before
/// it fails (503): a database that does not answer (paused, partitioned) must not hold
/// agents and tabs for as long as it is away.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// After storing this many questions a bridge refreshes the planner's statistics itself
/// (`ANALYZE`): autovacuum looks once a minute, and until then a table that grew from
/// nearly empty is planned as if it still were (a new tab's snapshot of 10,000 pending
/// questions, read in 100 parts, took 0.6 s instead of 0.1 s; BENCHMARKS.md).
const ANALYZE_AFTER: usize = 1_000;
/// How long that `ANALYZE` may take before it is given up (it holds a pooled connection).
const ANALYZE_WITHIN: Duration = Duration::from_secs(60);
/// How long a starting bridge waits to prepare the schema: another bridge may hold the
/// migration lock while it migrates, which takes well under a second.
const MIGRATE_WITHIN: Duration = Duration::from_secs(30);

/// The database's clock in ms, for liveness.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

const _: () = assert!(MIGRATIONS.len() == super::OWN_VERSIONS, "a new step goes in SHARED_MIGRATIONS");

/// Each entry migrates the schema from version `index` to `index + 1`; then
/// [`super::SHARED_MIGRATIONS`].
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: everything the SQLite store has at its version 4, and the bridges.
    "CREATE TABLE questions (
         seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         id          TEXT   NOT NULL UNIQUE,
         status      TEXT   NOT NULL
                     CHECK (status IN ('pending', 'answered', 'cancelled', 'timed_out', 'withdrawn')),
         created_at  BIGINT NOT NULL,
         answered_at BIGINT,
         answered_by TEXT,
         final_seq   BIGINT,
         request     TEXT   NOT NULL,
         result      TEXT,
         owner       TEXT
     );
     CREATE SEQUENCE questions_final_seq;
     CREATE INDEX questions_pending ON questions (seq) WHERE status = 'pending';
     CREATE INDEX questions_final ON questions (final_seq) WHERE final_seq IS NOT NULL;
     CREATE INDEX questions_answered_at ON questions (answered_at) WHERE answered_at IS NOT NULL;
     CREATE TABLE credentials (
         id         TEXT   PRIMARY KEY,
         name       TEXT   NOT NULL,
         scope      TEXT   NOT NULL CHECK (scope IN ('agent', 'device', 'admin')),
         hash       TEXT   NOT NULL UNIQUE,
         created_at BIGINT NOT NULL,
         revoked_at BIGINT
     );
     CREATE TABLE push_subscriptions (
         endpoint   TEXT   PRIMARY KEY,
         credential TEXT,
         p256dh     TEXT   NOT NULL,
         auth       TEXT   NOT NULL,
         rules      TEXT   NOT NULL,
         created_at BIGINT NOT NULL
     );
     CREATE TABLE answer_links (
         hash        TEXT    PRIMARY KEY,
         question_id TEXT    NOT NULL,
         option      INTEGER NOT NULL,
         channel     TEXT    NOT NULL,
         credential  TEXT,
         expires_at  BIGINT  NOT NULL,
         used_at     BIGINT
     );
     CREATE TABLE notified (
         question_id TEXT   NOT NULL,
         target      TEXT   NOT NULL,
         at          BIGINT NOT NULL,
         PRIMARY KEY (question_id, target)
     );
     -- The bridges using this database, each with when it last said it was alive, and
     -- the questions an agent waits on at each (presence, the grace period, the
     -- late-answer hook are decided across bridges from these).
     CREATE TABLE bridges (
         id      TEXT   PRIMARY KEY,
         seen_at BIGINT NOT NULL
     );
     CREATE TABLE attached (
         bridge      TEXT NOT NULL,
         question_id TEXT NOT NULL,
         session_id  TEXT,
         PRIMARY KEY (bridge, question_id)
     );",
    // 1 -> 2: values every bridge must use alike (the VAPID key that signs pushes).
    "CREATE TABLE shared (
         name  TEXT PRIMARY KEY,
         value TEXT NOT NULL
     );",
    // 2 -> 3: people. A device credential may belong to a person; people are in teams.
    "ALTER TABLE credentials ADD COLUMN person TEXT;
     CREATE TABLE teams (
         person TEXT NOT NULL,
         team   TEXT NOT NULL,
         PRIMARY KEY (person, team)
     );",
    // 3 -> 4: pairing codes (as hashes), so a code made at one bridge works at any.
    "CREATE TABLE pairings (
         hash       TEXT   PRIMARY KEY,
         name       TEXT   NOT NULL,
         person     TEXT,
         expires_at BIGINT NOT NULL
     );",
    // 4 -> 5: statistics kept fresh as questions arrive in bursts: with stale ones the
    // planner took a snapshot page for a few rows and read every later pending row and
    // sorted them (3 ms a page at 10,000 pending, against 0.08 ms by the index).
    "ALTER TABLE questions SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200);
     ALTER TABLE attached SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200);",
    // 5 -> 6: approvals, as the SQLite store's version 6. The rules that answer an
    // agent's request to use a tool without asking (each the core's JSON), and the audit
    // log of every decision; `seq` breaks ties of `at` (the later added first), and the
    // index holds both, so the newest are read without a sort.
    "CREATE TABLE rules (
         id         TEXT   PRIMARY KEY,
         rule       TEXT   NOT NULL,
         created_at BIGINT NOT NULL,
         created_by TEXT
     );
     CREATE TABLE decisions (
         seq           BIGSERIAL PRIMARY KEY,
         question      TEXT,
         tool          TEXT   NOT NULL,
         summary       TEXT   NOT NULL,
         decision      TEXT   NOT NULL,
         rule          TEXT,
         by_credential TEXT,
         agent         TEXT,
         at            BIGINT NOT NULL
     );
     CREATE INDEX decisions_at ON decisions (at, seq);",
];

/// The shared PostgreSQL store. Cheap to share: wrap it in an `Arc`.
pub struct Postgres {
    pool: Pool,
    /// This bridge's id (random per start), in every notification it sends.
    me: String,
    /// Where the database is, without a password (for messages).
    shown: String,
    events: broadcast::Sender<StoreEvent>,
    /// Why the last write failed, until one succeeds.
    write_failure: Mutex<Option<String>>,
    /// What the heartbeat found last, which `/v1/health` answers from at once.
    pulse: Mutex<Pulse>,
    /// Asks the heartbeat for a beat now (a health check does).
    beat_now: Arc<tokio::sync::Notify>,
    stop: tokio::sync::watch::Sender<bool>,
    /// Questions stored since the statistics were last refreshed ([`ANALYZE_AFTER`]).
    stored: AtomicUsize,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("at", &self.shown).field("bridge", &self.me).finish_non_exhaustive()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The heartbeat's state.
struct Pulse {
    /// When a beat last succeeded (or the store connected).
    ok_at: tokio::time::Instant,
    /// When the beat under way started.
    beating: Option<tokio::time::Instant>,
    /// Why the last beat failed, until one succeeds.
    failed: Option<String>,
}

/// Where the database is and how to reach it: a `postgres://` or `postgresql://` URL
/// (or a libpq `key=value` string). `sslrootcert=FILE` names the CA that signed the
/// server's certificate (PEM); without it the system's authorities are trusted. TLS is
/// used as `sslmode` says (`disable`, `prefer`: the default, `require`), and when used
/// the server's certificate is always verified.
pub fn parse_url(url: &str) -> Result<(tokio_postgres::Config, Option<std::path::PathBuf>), String> {
    let mut ca = None;
    let mut kept = vec![];
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslrootcert", file)) => {
                let decoded = percent_encoding::percent_decode_str(file)
                    .decode_utf8()
                    .map_err(|_| format!("sslrootcert: expected a file name whose %-escapes decode to UTF-8 text, got {file:?}"))?;
                ca = Some(std::path::PathBuf::from(decoded.into_owned()));
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    let config: tokio_postgres::Config =
        url.parse().map_err(|e: tokio_postgres::Error| format!("not a PostgreSQL connection URL: {}", explain(&e)))?;
    Ok((config, ca))
}

impl Postgres {
    /// One more question stored: every [`ANALYZE_AFTER`], fresh statistics, in the
    /// background (for the questions and who waits on them).
    fn grew(&self) {
        if self.stored.fetch_add(1, Ordering::Relaxed) + 1 < ANALYZE_AFTER {
            return;
        }
        self.stored.store(0, Ordering::Relaxed);
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let analyze = async {
                match pool.get().await {
                    Ok(client) => client.batch_execute("ANALYZE questions, attached").await.map_err(|e| e.to_string()),
                    Err(e) => Err(pool_error(&e)),
                }
            };
            let analyzed = tokio::time::timeout(ANALYZE_WITHIN, analyze)
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {} s", ANALYZE_WITHIN.as_secs())));
            if let Err(e) = analyzed {
                tracing::debug!("cannot refresh the statistics: {e}");
            }
        });
    }

    /// Connects to the database at `url` (see [`parse_url`]), migrates its schema (one
    /// bridge at a time, under an advisory lock) and starts listening for the other
    /// bridges. Fails with [`StoreError::Open`] saying what is wrong: an unreachable
    /// server, refused credentials, a certificate that does not verify, a schema written
    /// by a newer askuser.
    pub async fn connect(url: &str) -> Result<Arc<Postgres>, StoreError> {
        let at = crate::redact::redact(crate::redact::Secret::Store(url));
        let fail = |message: String| StoreError::Open { path: at.clone().into(), message };
        let (config, ca) = parse_url(url).map_err(fail)?;
        let tls = MakeRustlsConnect::new(crate::tls::database_config(ca.as_deref()).map_err(|e| fail(format!("{e:#}")))?);
        // Verified: a connection the server closed (terminated, a pooler restarted, an idle
        // timeout) is found by an empty query before it is handed out, and replaced; with
        // Fast it went to the next ask unnoticed, which failed with a 500 (issue 28: 19 of
        // 1,229 asks). It costs one round trip per checkout.
        let manager = Manager::from_config(config.clone(), tls.clone(), ManagerConfig { recycling_method: RecyclingMethod::Verified });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        {
            let mut client = pool
                .get()
                .await
                .map_err(|e| fail(format!("{}; is PostgreSQL running there, and may this user connect?", pool_error(&e))))?;
            tokio::time::timeout(MIGRATE_WITHIN, migrate(&mut client))
                .await
                .map_err(|_| {
                    fail(format!(
                        "the database did not finish preparing its schema within {} s (does another bridge hold its lock?)",
                        MIGRATE_WITHIN.as_secs()
                    ))
                })?
                .map_err(fail)?;
        }
        let me = format!("b-{}", crate::files::random_hex(6));
        let store = Arc::new(Postgres {
            pool,
            me,
            shown: at.clone(),
            events: broadcast::channel(4096).0,
            write_failure: Mutex::new(None),
            pulse: Mutex::new(Pulse { ok_at: tokio::time::Instant::now(), beating: None, failed: None }),
            beat_now: Arc::new(tokio::sync::Notify::new()),
            stop: tokio::sync::watch::channel(false).0,
            stored: AtomicUsize::new(0),
        });
        store.within("cannot record that this bridge is alive", store.beat()).await.map_err(|e| fail(e.to_string()))?;
        tokio::spawn(heartbeat(Arc::downgrade(&store), store.beat_now.clone(), store.stop.subscribe()));
        let (listening, heard) = tokio::sync::oneshot::channel();
        let listener = Listener { config, tls, store: Arc::downgrade(&store), stop: store.stop.subscribe(), listening: Some(listening) };
        tokio::spawn(listener.run());
        // What others store from now on is heard; what they stored before, the bridge
        // reads when it starts (so nothing falls between the two).
        if tokio::time::timeout(CONNECT_TIMEOUT, heard).await.is_err() {
            tracing::warn!("not yet listening to the other bridges; the resync every {} s covers it", RESYNC_EVERY.as_secs());
        }
        Ok(store)
    }

    /// This bridge's id among those sharing the database.
    pub fn bridge_id(&self) -> &str {
        &self.me
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            let message = format!("cannot reach the database at {}: {}", self.shown, pool_error(&e));
            StoreError::from_db(message, e)
        })
    }

    fn noted<T>(&self, outcome: Result<T, StoreError>) -> Result<T, StoreError> {
        *lock(&self.write_failure) = match &outcome {
            Err(StoreError::Db { message, .. }) => Some(message.clone()),
            _ => None,
        };
        outcome
    }

    fn note(&self, kind: &str, id: &str) -> String {
        serde_json::json!({"b": self.me, "k": kind, "id": id}).to_string()
    }

    /// Says this bridge is alive, and forgets the attachments of bridges long gone.
    async fn beat(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        let fail = |e| db_error("cannot record that this bridge is alive", e);
        client
            .execute(
                &format!(
                    "INSERT INTO bridges (id, seen_at) VALUES ($1, {NOW_MS}) ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at"
                ),
                &[&self.me],
            )
            .await
            .map_err(fail)?;
        client
            .execute(&format!("DELETE FROM attached WHERE bridge IN (SELECT id FROM bridges WHERE seen_at < {NOW_MS} - {ALIVE_MS})"), &[])
            .await
            .map_err(fail)?;
        client.execute(&format!("DELETE FROM bridges WHERE seen_at < {NOW_MS} - 86400000"), &[]).await.map_err(fail)?;
        Ok(())
    }

    /// Says this bridge is gone (a clean stop): its waiting agents no longer count. Best
    /// effort, and bounded, so a database that does not answer cannot hold up a stop (the
    /// others forget this bridge [`ALIVE_MS`] after its last heartbeat anyway).
    pub async fn leave(&self) {
        let gone = async {
            let client = self.client().await?;
            let _ = client.execute("DELETE FROM attached WHERE bridge = $1", &[&self.me]).await;
            let _ = client.execute("DELETE FROM bridges WHERE id = $1", &[&self.me]).await;
            let _ = client.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("presence", "")]).await;
            Ok(())
        };
        if let Err(e) = self.within("cannot say this bridge is gone", gone).await {
            tracing::debug!("{e}");
        }
    }

    async fn records(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        what: &str,
    ) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client.query(sql, params).await.map_err(|e| db_error(what, e))
            })
            .await?;
        rows.iter().map(|r| parse_record(raw(r, 0))).collect()
    }

    /// `work` within [`QUERY_TIMEOUT`]. A write cut off may still commit: the caller was
    /// told it failed, and asking again with the same id finds it (inserts are idempotent).
    ///
    /// The bound is looked at first: the pool gives up waiting for a connection after as
    /// long ([`CONNECT_TIMEOUT`]), often in the same tick, and that is the same database
    /// not answering (503), not a failure (500).
    async fn within<T>(&self, what: &str, work: impl std::future::Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        tokio::select! {
            biased;
            () = tokio::time::sleep(QUERY_TIMEOUT) => Err(StoreError::Unavailable(format!(
                "{what}: the database at {} did not answer within {} s",
                self.shown,
                QUERY_TIMEOUT.as_secs()
            ))),
            outcome = work => outcome,
        }
    }
}

/// The columns named by `record_columns!`, from column `at`.
fn raw(row: &Row, at: usize) -> RawRecord {
    RawRecord {
        id: row.get(at),
        status: row.get(at + 1),
        created_at: row.get(at + 2),
        answered_at: row.get(at + 3),
        answered_by: row.get(at + 4),
        request: row.get(at + 5),
        result: row.get(at + 6),
    }
}

fn pool_error(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => explain(e),
        deadpool_postgres::PoolError::Timeout(_) => format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()),
        other => explain(other),
    }
}

/// Whether trying again may succeed (see [`StoreError::is_transient`]): the connection
/// closed or could not be made (SQLSTATE class 08, or an I/O error), a serialization
/// failure or deadlock (40001, 40P01), the server shutting down or starting (57P01-57P03).
pub(crate) fn transient(e: &tokio_postgres::Error) -> bool {
    let code = e.code().map(|c| c.code());
    e.is_closed()
        || code.is_some_and(|c| c.starts_with("08") || ["40001", "40P01", "57P01", "57P02", "57P03"].contains(&c))
        || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// Whether a pool's failure to hand out a connection may pass: it timed out, or the
/// database refused or dropped the connection.
pub(crate) fn pool_transient(e: &deadpool_postgres::PoolError) -> bool {
    match e {
        deadpool_postgres::PoolError::Timeout(_) => true,
        deadpool_postgres::PoolError::Backend(e) => transient(e),
        _ => false,
    }
}

fn db_error(context: &str, e: tokio_postgres::Error) -> StoreError {
    let message = format!("{context}: {}", explain(&e));
    StoreError::from_db(message, e)
}

/// An error with its causes (tokio-postgres says "db error" and puts the server's
/// message in the source).
fn explain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// Whether PostgreSQL can hold `text` at all (it has no NUL in its text type): an id
/// or key from a URL that cannot be stored names nothing stored.
fn storable(text: &str) -> bool {
    !text.contains('\0')
}

fn ms(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Brings the schema to the newest version, one bridge at a time.
async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), String> {
    let fail = |e: tokio_postgres::Error| format!("cannot prepare the database: {}", explain(&e));
    let tx = client.transaction().await.map_err(fail)?;
    // Bridges starting together wait here for each other.
    tx.execute("SELECT pg_advisory_xact_lock(7070707)", &[]).await.map_err(fail)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS askuser_schema (version INTEGER NOT NULL)").await.map_err(fail)?;
    let found: Option<i32> = tx.query_opt("SELECT version FROM askuser_schema", &[]).await.map_err(fail)?.map(|r| r.get(0));
    let found = found.unwrap_or(0);
    let steps: Vec<&str> = MIGRATIONS.iter().chain(super::SHARED_MIGRATIONS).copied().collect();
    let known = i32::try_from(steps.len()).unwrap_or(i32::MAX);
    if found > known {
        return Err(format!(
            "it was prepared by a newer askuser (schema version {found}; this one knows up to {known}); upgrade every bridge"
        ));
    }
    for sql in &steps[usize::try_from(found).unwrap_or(0)..] {
        tx.batch_execute(sql).await.map_err(fail)?;
    }
    tx.execute("DELETE FROM askuser_schema", &[]).await.map_err(fail)?;
    tx.execute("INSERT INTO askuser_schema (version) VALUES ($1)", &[&known]).await.map_err(fail)?;
    tx.commit().await.map_err(fail)
}

/// Says every [`HEARTBEAT`] (and when a health check asks) that this bridge is alive,
/// over the pool, until the store stops; what it finds is what `/v1/health` says.
async fn heartbeat(store: std::sync::Weak<Postgres>, now: Arc<tokio::sync::Notify>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut every = tokio::time::interval(HEARTBEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = now.notified() => {}
            _ = stop.changed() => return,
        }
        let Some(store) = store.upgrade() else { return };
        lock(&store.pulse).beating = Some(tokio::time::Instant::now());
        // A write like any other: it sets and clears what health reports.
        let beat = store.within("cannot record that this bridge is alive", store.beat()).await;
        {
            let mut pulse = lock(&store.pulse);
            pulse.beating = None;
            match &beat {
                Ok(()) => (pulse.ok_at, pulse.failed) = (tokio::time::Instant::now(), None),
                Err(e) => pulse.failed = Some(e.to_string()),
            }
        }
        if let Err(e) = store.noted(beat) {
            tracing::warn!("{e}");
        }
    }
}

/// The connection that listens for the other bridges.
struct Listener {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    store: std::sync::Weak<Postgres>,
    stop: tokio::sync::watch::Receiver<bool>,
    /// Told once the first LISTEN is in place.
    listening: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Listener {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(100);
        let mut lost = false;
        loop {
            let connecting = tokio::time::timeout(CONNECT_TIMEOUT, self.config.connect(self.tls.clone()));
            let connected = connecting.await.map_err(|_| format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()));
            match connected.and_then(|c| c.map_err(|e| explain(&e))) {
                Ok((client, connection)) => {
                    backoff = Duration::from_millis(100);
                    if lost {
                        tracing::info!("the database is back; resyncing");
                    }
                    if self.listen(&client, connection, lost).await {
                        return;
                    }
                    lost = true;
                    tracing::warn!("lost the connection to the database; reconnecting");
                }
                Err(e) => {
                    if !lost {
                        tracing::warn!("cannot listen to the database: {e}");
                    }
                    lost = true;
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.stop.changed() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }

    /// Listens until the connection is lost (false) or the store stops (true).
    async fn listen<S, T>(
        &mut self,
        client: &tokio_postgres::Client,
        mut connection: tokio_postgres::Connection<S, T>,
        resync: bool,
    ) -> bool
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let driver = async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = futures_util::StreamExt::next(&mut messages).await {
                match message {
                    Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                        let _ = tx.send(n.payload().to_owned());
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        };
        tokio::pin!(driver);
        let listening = tokio::time::timeout(QUERY_TIMEOUT, client.batch_execute(concat!("LISTEN ", "askuser")));
        tokio::select! {
            r = listening => if !matches!(r, Ok(Ok(()))) { return false },
            () = &mut driver => return false,
        }
        let Some(store) = self.store.upgrade() else { return true };
        if resync {
            let _ = store.events.send(StoreEvent::Resync);
        }
        if let Some(listening) = self.listening.take() {
            let _ = listening.send(());
        }
        drop(store);
        let mut resync = tokio::time::interval(RESYNC_EVERY);
        resync.reset();
        loop {
            tokio::select! {
                () = &mut driver => return false,
                Some(payload) = rx.recv() => {
                    let Some(store) = self.store.upgrade() else { return true };
                    if let Some(event) = parse_note(&payload, &store.me) {
                        let _ = store.events.send(event);
                    }
                }
                _ = resync.tick() => {
                    let Some(store) = self.store.upgrade() else { return true };
                    let _ = store.events.send(StoreEvent::Resync);
                }
                _ = self.stop.changed() => return true,
            }
        }
    }
}

/// A notification from another bridge as an event (none for this bridge's own).
fn parse_note(payload: &str, me: &str) -> Option<StoreEvent> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    if v["b"].as_str() == Some(me) {
        return None;
    }
    let id = v["id"].as_str().unwrap_or_default().to_owned();
    Some(match v["k"].as_str()? {
        "asked" => StoreEvent::Asked(id),
        "final" => StoreEvent::Final(id),
        "presence" => StoreEvent::Presence,
        "credentials" => StoreEvent::Credentials,
        _ => return None,
    })
}

#[async_trait::async_trait]
impl Store for Postgres {
    fn shared(self: Arc<Self>) -> Option<Arc<dyn Shared>> {
        Some(self)
    }

    /// The store as the heartbeat (a write) last found it, at once: a database that has
    /// not answered the beat under way for [`HEALTH_WITHIN`] is not healthy, nor one whose
    /// last beat or write failed. Each check asks for a beat now, so a change is seen
    /// within that bound while someone checks; a beat's success clears an earlier
    /// failure: one blip must not keep a bridge out of its balancer.
    async fn health(&self) -> Result<(), String> {
        self.beat_now.notify_one();
        let pulse = lock(&self.pulse);
        if pulse.beating.is_some_and(|since| since.elapsed() >= HEALTH_WITHIN) {
            return Err(format!("the database at {} did not answer within {} s", self.shown, HEALTH_WITHIN.as_secs()));
        }
        if let Some(e) = &pulse.failed {
            return Err(format!("the question store cannot take writes now: {e}"));
        }
        if let Some(e) = &*lock(&self.write_failure) {
            return Err(format!("the question store cannot take writes now: {e}"));
        }
        let quiet = pulse.ok_at.elapsed();
        if quiet > HEARTBEAT + QUERY_TIMEOUT + HEALTH_WITHIN {
            return Err(format!("the database at {} has not answered this bridge's heartbeat for {} s", self.shown, quiet.as_secs()));
        }
        Ok(())
    }

    async fn close(&self) {
        self.leave().await;
    }
}

#[async_trait::async_trait]
impl Questions for Postgres {
    async fn insert(&self, record: &QuestionRecord) -> Result<Inserted, StoreError> {
        let outcome = async {
            let context = format!("cannot store question {:?}", record.id);
            let fail = |e| db_error(&context, e);
            let request = to_json(&record.request, "request", &record.id)?;
            let result = record.result.as_ref().map(|r| to_json(r, "result", &record.id)).transpose()?;
            let created_at = to_sql_ms(record.created_at, "createdAt", &record.id)?;
            let answered_at = record.answered_at.map(|ms| to_sql_ms(ms, "answeredAt", &record.id)).transpose()?;
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            let added = tx
                .execute(
                    "INSERT INTO questions (id, status, created_at, answered_at, answered_by, request, result, final_seq)
                     VALUES ($1, $2::text, $3, $4, $5, $6, $7,
                             CASE WHEN $2::text = 'pending' THEN NULL ELSE nextval('questions_final_seq') END)
                     ON CONFLICT (id) DO NOTHING",
                    &[&record.id, &record.status.as_str(), &created_at, &answered_at, &record.answered_by, &request, &result],
                )
                .await
                .map_err(fail)?;
            if added == 1 {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("asked", &record.id)]).await.map_err(fail)?;
                tx.commit().await.map_err(fail)?;
                self.grew();
                return Ok(Inserted::New);
            }
            let stored = tx
                .query_opt(concat!("SELECT ", record_columns!(), " FROM questions WHERE id = $1"), &[&record.id])
                .await
                .map_err(fail)?
                .ok_or_else(|| StoreError::db(format!("question {:?} was neither inserted nor found", record.id)))?;
            let stored = parse_record(raw(&stored, 0))?;
            if stored.request.questions == record.request.questions {
                Ok(Inserted::Existing(stored))
            } else {
                Err(StoreError::Conflict { id: record.id.clone() })
            }
        };
        self.noted(self.within(&format!("cannot store question {:?}", record.id), outcome).await)
    }

    async fn finish(&self, id: &str, result: &AskResult, by: Option<&str>) -> Result<Finished, StoreError> {
        if !result.status.is_final() {
            return Err(StoreError::db(format!("cannot finish question {id:?} with status \"pending\"; a final status is needed")));
        }
        if !storable(id) {
            return Err(StoreError::NotFound { id: id.to_owned() });
        }
        let outcome = async {
            let context = format!("cannot finish question {id:?}");
            let fail = |e| db_error(&context, e);
            let json = to_json(result, "result", id)?;
            let answered_at = to_sql_ms(result.answered_at, "answeredAt", id)?;
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            let done = tx
                .query_opt(
                    concat!(
                        "UPDATE questions
                         SET status = $2, answered_at = $3, answered_by = $4, result = $5, final_seq = nextval('questions_final_seq')
                         WHERE id = $1 AND status = 'pending'
                         RETURNING ",
                        record_columns!()
                    ),
                    &[&id, &result.status.as_str(), &answered_at, &by, &json],
                )
                .await
                .map_err(fail)?;
            if let Some(row) = done {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("final", id)]).await.map_err(fail)?;
                tx.commit().await.map_err(fail)?;
                return Ok(Finished::Done(parse_record(raw(&row, 0))?));
            }
            let stored =
                tx.query_opt(concat!("SELECT ", record_columns!(), " FROM questions WHERE id = $1"), &[&id]).await.map_err(fail)?;
            match stored {
                Some(row) => Ok(Finished::AlreadyFinal(parse_record(raw(&row, 0))?)),
                None => Err(StoreError::NotFound { id: id.to_owned() }),
            }
        };
        self.noted(self.within(&format!("cannot finish question {id:?}"), outcome).await)
    }

    async fn get(&self, id: &str) -> Result<Option<QuestionRecord>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let sql = concat!("SELECT ", record_columns!(), " FROM questions WHERE id = $1");
        Ok(self.records(sql, &[&id], &format!("cannot read question {id:?}")).await?.pop())
    }

    async fn list(&self, filter: Filter, limit: usize) -> Result<Vec<QuestionRecord>, StoreError> {
        let sql = match filter {
            Filter::Pending => concat!("SELECT ", record_columns!(), " FROM questions WHERE status = 'pending' ORDER BY seq LIMIT $1"),
            Filter::Final => {
                concat!("SELECT ", record_columns!(), " FROM questions WHERE final_seq IS NOT NULL ORDER BY final_seq DESC LIMIT $1")
            }
            Filter::All => concat!("SELECT ", record_columns!(), " FROM questions ORDER BY seq DESC LIMIT $1"),
        };
        self.records(sql, &[&to_i64(limit)], "cannot list questions").await
    }

    async fn pending_page(&self, after: i64, max_count: usize, max_bytes: usize) -> Result<(Vec<QuestionRecord>, i64, bool), StoreError> {
        let sql = concat!("SELECT seq, ", record_columns!(), " FROM questions WHERE status = 'pending' AND seq > $1 ORDER BY seq LIMIT $2");
        let what = "cannot list pending questions";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client.query(sql, &[&after, &to_i64(max_count.max(1).saturating_add(1))]).await.map_err(|e| db_error(what, e))
            })
            .await?;
        let (mut records, mut last, mut more, mut bytes) = (Vec::new(), after, false, 0usize);
        for row in &rows {
            if records.len() == max_count.max(1) || (!records.is_empty() && bytes >= max_bytes) {
                more = true;
                break;
            }
            let r = raw(row, 1);
            bytes += r.request.len() + r.result.as_ref().map_or(0, String::len);
            last = row.get(0);
            records.push(parse_record(r)?);
        }
        Ok((records, last, more))
    }

    async fn history(&self, search: Option<&str>, offset: usize, limit: usize) -> Result<Vec<QuestionRecord>, StoreError> {
        let pattern = search.map(like_pattern);
        let sql = concat!(
            "SELECT ",
            record_columns!(),
            " FROM questions WHERE final_seq IS NOT NULL",
            " AND ($1::text IS NULL OR request ILIKE $1 ESCAPE '\\' OR result ILIKE $1 ESCAPE '\\')",
            " ORDER BY final_seq DESC LIMIT $2 OFFSET $3"
        );
        self.records(sql, &[&pattern, &to_i64(limit), &to_i64(offset)], "cannot read the history").await
    }

    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let cutoff = i64::try_from(cutoff_ms).unwrap_or(i64::MAX);
        let what = "cannot prune old questions";
        self.within(what, async {
            let client = self.client().await?;
            let fail = |e| db_error(what, e);
            client.execute("DELETE FROM answer_links WHERE expires_at < $1", &[&cutoff]).await.map_err(fail)?;
            client.execute("DELETE FROM notified WHERE at < $1", &[&cutoff]).await.map_err(fail)?;
            client.execute("DELETE FROM decisions WHERE at < $1", &[&cutoff]).await.map_err(fail)?;
            let n =
                client.execute("DELETE FROM questions WHERE answered_at < $1 AND status <> 'pending'", &[&cutoff]).await.map_err(fail)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
        .await
    }

    async fn counts(&self) -> Result<(usize, usize), StoreError> {
        let what = "cannot count questions";
        let row = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query_one("SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FROM questions", &[])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        let (pending, total): (i64, i64) = (row.get(0), row.get(1));
        let count = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok((count(pending), count(total - pending)))
    }

    async fn set_owner(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let what = format!("cannot record who asked {id:?}");
        let outcome = async {
            let client = self.client().await?;
            client
                .execute("UPDATE questions SET owner = $2 WHERE id = $1 AND owner IS NULL", &[&id, &owner])
                .await
                .map(drop)
                .map_err(|e| db_error(&what, e))
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn owner(&self, id: &str) -> Result<Option<String>, StoreError> {
        if !storable(id) {
            return Ok(None);
        }
        let what = format!("cannot read who asked {id:?}");
        let row = self
            .within(&what, async {
                let client = self.client().await?;
                client.query_opt("SELECT owner FROM questions WHERE id = $1", &[&id]).await.map_err(|e| db_error(&what, e))
            })
            .await?;
        Ok(row.and_then(|r| r.get(0)))
    }

    async fn add_rule(&self, rule: &StoredRule) -> Result<(), StoreError> {
        let what = format!("cannot store approval rule {:?}", rule.id);
        let outcome = async {
            let created = i64::try_from(rule.created_at).unwrap_or(i64::MAX);
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO rules (id, rule, created_at, created_by) VALUES ($1, $2, $3, $4)",
                    &[&rule.id, &rule.rule, &created, &rule.created_by],
                )
                .await
                .map(drop)
                .map_err(|e| db_error(&what, e))
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        let what = "cannot read the approval rules";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query("SELECT id, rule, created_at, created_by FROM rules ORDER BY created_at, id", &[])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows.iter().map(|r| StoredRule { id: r.get(0), rule: r.get(1), created_at: ms(r.get(2)), created_by: r.get(3) }).collect())
    }

    async fn remove_rule(&self, id: &str) -> Result<bool, StoreError> {
        if !storable(id) {
            return Ok(false);
        }
        let what = format!("cannot remove approval rule {id:?}");
        let outcome = async {
            let client = self.client().await?;
            let n = client.execute("DELETE FROM rules WHERE id = $1", &[&id]).await.map_err(|e| db_error(&what, e))?;
            Ok(n > 0)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn add_decision(&self, decision: &StoredDecision) -> Result<(), StoreError> {
        let what = "cannot record an approval decision";
        let outcome = async {
            let d = decision;
            let at = i64::try_from(d.at).unwrap_or(i64::MAX);
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO decisions (question, tool, summary, decision, rule, by_credential, agent, at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[&d.question, &d.tool, &d.summary, &d.decision, &d.rule, &d.by, &d.agent, &at],
                )
                .await
                .map(drop)
                .map_err(|e| db_error(what, e))
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn decisions(&self, limit: usize) -> Result<Vec<StoredDecision>, StoreError> {
        let what = "cannot read the approval decisions";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query(
                        "SELECT question, tool, summary, decision, rule, by_credential, agent, at FROM decisions
                         ORDER BY at DESC, seq DESC LIMIT $1",
                        &[&to_i64(limit)],
                    )
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows
            .iter()
            .map(|r| StoredDecision {
                question: r.get(0),
                tool: r.get(1),
                summary: r.get(2),
                decision: r.get(3),
                rule: r.get(4),
                by: r.get(5),
                agent: r.get(6),
                at: ms(r.get(7)),
            })
            .collect())
    }
}

#[async_trait::async_trait]
impl Credentials for Postgres {
    async fn add_credential(&self, c: &Credential) -> Result<(), StoreError> {
        let what = format!("cannot store credential {:?}", c.id);
        let outcome = async {
            let created = to_sql_ms(c.created_at, "createdAt", &c.id)?;
            let fail = |e| db_error(&what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            tx.execute(
                "INSERT INTO credentials (id, name, scope, hash, created_at, person) VALUES ($1, $2, $3, $4, $5, $6)",
                &[&c.id, &c.name, &c.scope.as_str(), &c.hash, &created, &c.person],
            )
            .await
            .map_err(fail)?;
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("credentials", &c.id)]).await.map_err(fail)?;
            tx.commit().await.map_err(fail)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn credentials(&self) -> Result<Vec<Credential>, StoreError> {
        let what = "cannot read the credentials";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query("SELECT id, name, scope, hash, created_at, revoked_at, person FROM credentials ORDER BY created_at, id", &[])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows
            .iter()
            .map(|r| Credential {
                id: r.get(0),
                name: r.get(1),
                scope: r.get::<_, String>(2).parse().unwrap_or(Scope::Device),
                hash: r.get(3),
                created_at: ms(r.get(4)),
                revoked_at: r.get::<_, Option<i64>>(5).map(ms),
                person: r.get(6),
            })
            .collect())
    }

    async fn revoke_credential(&self, id: &str, at: u64) -> Result<bool, StoreError> {
        let what = format!("cannot revoke credential {id:?}");
        let outcome = async {
            let at = to_sql_ms(at, "revokedAt", id)?;
            let fail = |e| db_error(&what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            let n = tx
                .execute("UPDATE credentials SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL", &[&id, &at])
                .await
                .map_err(fail)?;
            tx.execute("DELETE FROM page_sessions WHERE credential = $1", &[&id]).await.map_err(fail)?;
            tx.execute("DELETE FROM push_subscriptions WHERE credential = $1", &[&id]).await.map_err(fail)?;
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("credentials", id)]).await.map_err(fail)?;
            tx.commit().await.map_err(fail)?;
            Ok(n == 1)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn teams(&self) -> Result<Vec<(String, String)>, StoreError> {
        let what = "cannot read the teams";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client.query("SELECT person, team FROM teams ORDER BY person, team", &[]).await.map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    async fn set_teams(&self, person: &str, teams: &[String]) -> Result<(), StoreError> {
        let what = format!("cannot set the teams of {person:?}");
        let outcome = async {
            let fail = |e| db_error(&what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            tx.execute("DELETE FROM teams WHERE person = $1", &[&person]).await.map_err(fail)?;
            for team in teams {
                tx.execute("INSERT INTO teams (person, team) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&person, team])
                    .await
                    .map_err(fail)?;
            }
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("credentials", person)]).await.map_err(fail)?;
            tx.commit().await.map_err(fail)
        };
        self.noted(self.within(&what, outcome).await)
    }

    /// No event: every bridge reads a session from the table when its cookie comes.
    async fn add_session(&self, s: &StoredSession) -> Result<(), StoreError> {
        let what = format!("cannot store page session {:?}", s.id);
        let outcome = async {
            let created = to_sql_ms(s.created_at, "createdAt", &s.id)?;
            let expires = to_sql_ms(s.expires_at, "expiresAt", &s.id)?;
            let fail = |e| db_error(&what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            tx.execute("DELETE FROM page_sessions WHERE expires_at <= $1", &[&created]).await.map_err(fail)?;
            tx.execute(
                "INSERT INTO page_sessions (id, hash, credential, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
                &[&s.id, &s.hash, &s.credential, &created, &expires],
            )
            .await
            .map_err(fail)?;
            tx.commit().await.map_err(fail)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn session(&self, hash: &str) -> Result<Option<StoredSession>, StoreError> {
        let what = "cannot read a page session";
        let row = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query_opt("SELECT id, hash, credential, created_at, expires_at FROM page_sessions WHERE hash = $1", &[&hash])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(row.as_ref().map(session_row))
    }

    async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let what = "cannot read the page sessions";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query("SELECT id, hash, credential, created_at, expires_at FROM page_sessions ORDER BY created_at, id", &[])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows.iter().map(session_row).collect())
    }

    async fn remove_session(&self, id: &str) -> Result<bool, StoreError> {
        let what = format!("cannot remove page session {id:?}");
        let outcome = async {
            let client = self.client().await?;
            let n = client.execute("DELETE FROM page_sessions WHERE id = $1", &[&id]).await.map_err(|e| db_error(&what, e))?;
            Ok(n > 0)
        };
        self.noted(self.within(&what, outcome).await)
    }
}

fn session_row(r: &tokio_postgres::Row) -> StoredSession {
    StoredSession { id: r.get(0), hash: r.get(1), credential: r.get(2), created_at: ms(r.get(3)), expires_at: ms(r.get(4)) }
}

#[async_trait::async_trait]
impl Deliveries for Postgres {
    /// Kept only when the endpoint is new or already this credential's: the condition is
    /// in the write itself, so of two first subscriptions of one endpoint racing, the
    /// second finds the first's row and does not replace it (F8).
    async fn add_subscription(&self, sub: &StoredSubscription) -> Result<bool, StoreError> {
        let what = "cannot store the push subscription";
        let outcome = async {
            let created = to_sql_ms(sub.created_at, "createdAt", &sub.endpoint)?;
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO push_subscriptions (endpoint, credential, p256dh, auth, rules, created_at) VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (endpoint) DO UPDATE SET credential = excluded.credential, p256dh = excluded.p256dh,
                         auth = excluded.auth, rules = excluded.rules, created_at = excluded.created_at
                     WHERE push_subscriptions.credential IS NOT DISTINCT FROM excluded.credential",
                    &[&sub.endpoint, &sub.credential, &sub.p256dh, &sub.auth, &sub.rules, &created],
                )
                .await
                .map(|n| n == 1)
                .map_err(|e| db_error(what, e))
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn subscriptions(&self) -> Result<Vec<StoredSubscription>, StoreError> {
        let what = "cannot read the push subscriptions";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query(
                        "SELECT endpoint, credential, p256dh, auth, rules, created_at FROM push_subscriptions ORDER BY created_at, endpoint",
                        &[],
                    )
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows
            .iter()
            .map(|r| StoredSubscription {
                endpoint: r.get(0),
                credential: r.get(1),
                p256dh: r.get(2),
                auth: r.get(3),
                rules: r.get(4),
                created_at: ms(r.get(5)),
            })
            .collect())
    }

    async fn remove_subscription(&self, endpoint: &str, credential: Option<Option<&str>>) -> Result<bool, StoreError> {
        let what = "cannot remove the push subscription";
        let outcome = async {
            let client = self.client().await?;
            let n = match credential {
                None => client.execute("DELETE FROM push_subscriptions WHERE endpoint = $1", &[&endpoint]).await,
                Some(c) => {
                    client
                        .execute(
                            "DELETE FROM push_subscriptions WHERE endpoint = $1 AND credential IS NOT DISTINCT FROM $2",
                            &[&endpoint, &c],
                        )
                        .await
                }
            };
            n.map(|n| n > 0).map_err(|e| db_error(what, e))
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn add_links(&self, links: &[StoredLink]) -> Result<(), StoreError> {
        let what = "cannot store answer links";
        let outcome = async {
            let fail = |e| db_error(what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO answer_links (hash, question_id, option, channel, credential, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await
                .map_err(fail)?;
            for l in links {
                let option = i32::try_from(l.option).unwrap_or(i32::MAX);
                let expires = i64::try_from(l.expires_at).unwrap_or(i64::MAX);
                tx.execute(&insert, &[&l.hash, &l.question_id, &option, &l.channel, &l.credential, &expires]).await.map_err(fail)?;
            }
            tx.commit().await.map_err(fail)
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn use_link(&self, hash: &str, now: u64) -> Result<LinkUse, StoreError> {
        if !storable(hash) {
            return Ok(LinkUse::Unknown);
        }
        let what = "cannot use an answer link";
        let outcome = async {
            let at = i64::try_from(now).unwrap_or(i64::MAX);
            let fail = |e| db_error(what, e);
            let client = self.client().await?;
            // One UPDATE decides, so a link answers once however many bridges take it.
            let used = client
                .query_opt(
                    "UPDATE answer_links SET used_at = $2 WHERE hash = $1 AND used_at IS NULL AND expires_at > $2
                     RETURNING question_id, option, channel, credential, expires_at, used_at",
                    &[&hash, &at],
                )
                .await
                .map_err(fail)?;
            if let Some(row) = used {
                return Ok(LinkUse::Fresh(link_of(hash, &row).0));
            }
            Ok(match read_link(&client, hash).await.map_err(fail)? {
                None => LinkUse::Unknown,
                Some((_, Some(_))) => LinkUse::Used,
                Some((_, None)) => LinkUse::Expired,
            })
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn link(&self, hash: &str) -> Result<Option<(StoredLink, bool)>, StoreError> {
        if !storable(hash) {
            return Ok(None);
        }
        let what = "cannot read an answer link";
        let found = self
            .within(what, async {
                let client = self.client().await?;
                read_link(&client, hash).await.map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(found.map(|(link, used)| (link, used.is_some())))
    }

    async fn add_notified(&self, id: &str, target: &str, at: u64, message: Option<&str>) -> Result<(), StoreError> {
        let what = format!("cannot record a notification of {id:?}");
        let outcome = async {
            let at = to_sql_ms(at, "notifiedAt", id)?;
            let client = self.client().await?;
            // The claim (`claim_notified`) made the row: the message is added to it.
            client
                .execute(
                    "INSERT INTO notified (question_id, target, at, message) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (question_id, target) DO UPDATE SET message = coalesce(EXCLUDED.message, notified.message)",
                    &[&id, &target, &at, &message],
                )
                .await
                .map(drop)
                .map_err(|e| db_error(&what, e))
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn notified(&self) -> Result<Vec<Notified>, StoreError> {
        let what = "cannot read the notifications sent";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query(
                        "SELECT n.question_id, n.target, q.status = 'pending', n.message FROM notified n \
                         LEFT JOIN questions q ON q.id = n.question_id",
                        &[],
                    )
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows
            .iter()
            .map(|r| Notified { id: r.get(0), target: r.get(1), waits: r.get::<_, Option<bool>>(2).unwrap_or(false), message: r.get(3) })
            .collect())
    }

    async fn posted(&self, id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let what = format!("cannot read where {id:?} was posted");
        let rows = self
            .within(&what, async {
                let client = self.client().await?;
                client
                    .query("SELECT target, message FROM notified WHERE question_id = $1 AND message IS NOT NULL", &[&id])
                    .await
                    .map_err(|e| db_error(&what, e))
            })
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    async fn add_heard(&self, place: &str, at: u64) -> Result<(), StoreError> {
        let what = "cannot record when a person last wrote";
        let outcome = async {
            let at = to_sql_ms(at, "heardAt", place)?;
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO heard (place, at) VALUES ($1, $2) ON CONFLICT (place) DO UPDATE SET at = GREATEST(heard.at, EXCLUDED.at)",
                    &[&place, &at],
                )
                .await
                .map(drop)
                .map_err(|e| db_error(what, e))
        };
        self.noted(self.within(what, outcome).await)
    }

    async fn heard(&self, place: &str) -> Result<Option<u64>, StoreError> {
        let what = "cannot read when a person last wrote";
        let row = self
            .within(what, async {
                let client = self.client().await?;
                client.query_opt("SELECT at FROM heard WHERE place = $1", &[&place]).await.map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(row.map(|r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)))
    }

    async fn notified_by_message(&self, target: &str, message: &str) -> Result<Option<String>, StoreError> {
        let what = "cannot find the question of a channel's message";
        let row = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query_opt("SELECT question_id FROM notified WHERE target = $1 AND message = $2", &[&target, &message])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn forget_notified(&self, id: &str) -> Result<(), StoreError> {
        let what = format!("cannot forget the notifications of {id:?}");
        let outcome = async {
            let client = self.client().await?;
            // Claims to close stay a while, so a bridge that hears the answer late does
            // not close again ([`Shared::claim_close`]).
            client
                .execute(
                    "DELETE FROM notified WHERE question_id = $1 AND target NOT LIKE 'close:%' \
                     OR target LIKE 'close:%' AND at < (extract(epoch FROM now()) * 1000)::bigint - $2",
                    &[&id, &(10 * super::CLOSE_CLAIM_MS as i64)],
                )
                .await
                .map(drop)
                .map_err(|e| db_error(&what, e))
        };
        self.noted(self.within(&what, outcome).await)
    }
}

#[async_trait::async_trait]
impl Shared for Postgres {
    fn events(&self) -> broadcast::Receiver<StoreEvent> {
        self.events.subscribe()
    }

    async fn pending_ids(&self) -> Result<HashSet<String>, StoreError> {
        let what = "cannot list pending questions";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client.query("SELECT id FROM questions WHERE status = 'pending'", &[]).await.map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn attach(&self, id: &str, session: Option<&str>, attached: bool) -> Result<(), StoreError> {
        let what = format!("cannot record an agent waiting on {id:?}");
        self.within(&what, async {
            let fail = |e| db_error(&what, e);
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            // Presence, not a question or an answer: a database crash may lose it (the
            // agent's next wait notes it again), so its commit does not wait for the
            // disk, which it would on the round trip of every ask (issue 51).
            tx.execute("SET LOCAL synchronous_commit = off", &[]).await.map_err(fail)?;
            if attached {
                // Only while it waits: an answer may have landed meanwhile (its detach then
                // ran first, and this row would stay).
                tx.execute(
                    "INSERT INTO attached (bridge, question_id, session_id)
                     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM questions WHERE id = $2 AND status = 'pending')
                     ON CONFLICT DO NOTHING",
                    &[&self.me, &id, &session],
                )
                .await
                .map_err(fail)?;
            } else {
                tx.execute("DELETE FROM attached WHERE bridge = $1 AND question_id = $2", &[&self.me, &id]).await.map_err(fail)?;
            }
            if session.is_some() {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &self.note("presence", id)]).await.map_err(fail)?;
            }
            tx.commit().await.map_err(fail)
        })
        .await
    }

    async fn attached_elsewhere(&self, id: &str) -> Result<bool, StoreError> {
        let what = format!("cannot tell whether an agent waits on {id:?}");
        let row = self
            .within(&what, async {
                let client = self.client().await?;
                client
                    .query_one(
                        &format!(
                            "SELECT EXISTS (SELECT 1 FROM attached a JOIN bridges b ON b.id = a.bridge
                             WHERE a.question_id = $1 AND a.bridge <> $2 AND b.seen_at > {NOW_MS} - {ALIVE_MS})"
                        ),
                        &[&id, &self.me],
                    )
                    .await
                    .map_err(|e| db_error(&what, e))
            })
            .await?;
        Ok(row.get(0))
    }

    async fn sessions_elsewhere(&self) -> Result<HashSet<String>, StoreError> {
        let what = "cannot read which agents wait elsewhere";
        let rows = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query(
                        &format!(
                            "SELECT DISTINCT a.session_id FROM attached a JOIN bridges b ON b.id = a.bridge
                             WHERE a.bridge <> $1 AND a.session_id IS NOT NULL AND b.seen_at > {NOW_MS} - {ALIVE_MS}"
                        ),
                        &[&self.me],
                    )
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn shared_value(&self, name: &str, fresh: &str) -> Result<String, StoreError> {
        let what = format!("cannot read the shared {name}");
        let row = self
            .within(&what, async {
                let fail = |e| db_error(&what, e);
                let client = self.client().await?;
                client
                    .execute("INSERT INTO shared (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", &[&name, &fresh])
                    .await
                    .map_err(fail)?;
                client.query_one("SELECT value FROM shared WHERE name = $1", &[&name]).await.map_err(fail)
            })
            .await?;
        Ok(row.get(0))
    }

    async fn claim_notified(&self, id: &str, target: &str, at: u64) -> Result<bool, StoreError> {
        let what = format!("cannot claim a notification of {id:?}");
        let outcome = async {
            let at = to_sql_ms(at, "notifiedAt", id)?;
            let client = self.client().await?;
            let n = client
                .execute("INSERT INTO notified (question_id, target, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", &[&id, &target, &at])
                .await
                .map_err(|e| db_error(&what, e))?;
            Ok(n == 1)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn claim_close(&self, id: &str, target: &str, at: u64) -> Result<bool, StoreError> {
        let what = format!("cannot claim closing a notification of {id:?}");
        let outcome = async {
            let (now, stale) = (to_sql_ms(at, "notifiedAt", id)?, to_sql_ms(at.saturating_sub(super::CLOSE_CLAIM_MS), "notifiedAt", id)?);
            let client = self.client().await?;
            let n = client
                .execute(
                    "INSERT INTO notified (question_id, target, at) VALUES ($1, $2, $3) \
                     ON CONFLICT (question_id, target) DO UPDATE SET at = EXCLUDED.at WHERE notified.at < $4",
                    &[&id, &target, &now, &stale],
                )
                .await
                .map_err(|e| db_error(&what, e))?;
            Ok(n == 1)
        };
        self.noted(self.within(&what, outcome).await)
    }

    async fn put_pairing(&self, hash: &str, paired: &Paired, expires_at: u64) -> Result<(), StoreError> {
        let what = "cannot keep a pairing code";
        let expires = i64::try_from(expires_at).unwrap_or(i64::MAX);
        self.within(what, async {
            let fail = |e| db_error(what, e);
            let client = self.client().await?;
            client.execute("DELETE FROM pairings WHERE expires_at < $1", &[&(expires - 7_200_000)]).await.map_err(fail)?;
            client
                .execute(
                    "INSERT INTO pairings (hash, name, person, expires_at) VALUES ($1, $2, $3, $4)",
                    &[&hash, &paired.name, &paired.person, &expires],
                )
                .await
                .map_err(fail)?;
            Ok(())
        })
        .await
    }

    async fn take_pairing(&self, hash: &str) -> Result<Option<(Paired, u64)>, StoreError> {
        if !storable(hash) {
            return Ok(None);
        }
        let what = "cannot take a pairing code";
        let row = self
            .within(what, async {
                let client = self.client().await?;
                client
                    .query_opt("DELETE FROM pairings WHERE hash = $1 RETURNING name, person, expires_at", &[&hash])
                    .await
                    .map_err(|e| db_error(what, e))
            })
            .await?;
        Ok(row.map(|r| (Paired { name: r.get(0), person: r.get(1) }, ms(r.get(2)))))
    }
}

fn link_of(hash: &str, row: &Row) -> (StoredLink, Option<i64>) {
    let link = StoredLink {
        hash: hash.to_owned(),
        question_id: row.get(0),
        option: usize::try_from(row.get::<_, i32>(1)).unwrap_or(usize::MAX),
        channel: row.get(2),
        credential: row.get(3),
        expires_at: ms(row.get(4)),
    };
    (link, row.get(5))
}

async fn read_link(client: &impl GenericClient, hash: &str) -> Result<Option<(StoredLink, Option<i64>)>, tokio_postgres::Error> {
    let row = client
        .query_opt("SELECT question_id, option, channel, credential, expires_at, used_at FROM answer_links WHERE hash = $1", &[&hash])
        .await?;
    Ok(row.map(|r| link_of(hash, &r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslrootcert_is_taken_out_of_the_url_and_the_rest_is_parsed() {
        let (config, ca) = parse_url("postgres://u@db/askuser?sslmode=require&sslrootcert=/etc/a%20b/ca.pem").unwrap();
        assert_eq!(ca, Some(std::path::PathBuf::from("/etc/a b/ca.pem")));
        assert_eq!(config.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(config.get_dbname(), Some("askuser"));
        let err = parse_url("postgres://u@db/askuser?sslmode=sometimes").unwrap_err();
        assert!(err.starts_with("not a PostgreSQL connection URL"), "{err}");
        // A `%` before a multi-byte character is kept as it is (it panicked, slicing the
        // character); escapes that make no UTF-8 are refused, naming the field.
        let (_, ca) = parse_url("postgres://u@db/askuser?sslrootcert=/ca%aé.pem").unwrap();
        assert_eq!(ca, Some(std::path::PathBuf::from("/ca%aé.pem")));
        let (_, ca) = parse_url("postgres://u@db/askuser?sslrootcert=/%C3%A9t%C3%A9/ca%2Epem").unwrap();
        assert_eq!(ca, Some(std::path::PathBuf::from("/été/ca.pem")));
        let err = parse_url("postgres://u@db/askuser?sslrootcert=/ca%ff.pem").unwrap_err();
        assert!(err.starts_with("sslrootcert: expected a file name whose %-escapes decode to UTF-8 text"), "{err}");
    }

    #[test]
    fn another_bridges_notes_become_events_and_this_ones_do_not() {
        let note = |b: &str, k: &str| serde_json::json!({"b": b, "k": k, "id": "q1"}).to_string();
        assert_eq!(parse_note(&note("b-2", "asked"), "b-1"), Some(StoreEvent::Asked("q1".into())));
        assert_eq!(parse_note(&note("b-2", "final"), "b-1"), Some(StoreEvent::Final("q1".into())));
        assert_eq!(parse_note(&note("b-2", "presence"), "b-1"), Some(StoreEvent::Presence));
        assert_eq!(parse_note(&note("b-1", "asked"), "b-1"), None, "its own");
        assert_eq!(parse_note("not json", "b-1"), None);
        assert_eq!(parse_note(&note("b-2", "unheard-of"), "b-1"), None);
    }
}
