//! The bridge's shared state: the store, the agents waiting for results, and the
//! event stream every browser subscribes to.
//!
//! Every change follows one order: commit to the store, then wake the waiting agents,
//! then broadcast to browsers. So nothing is acknowledged or shown that a killed
//! process could forget. The first final result wins in the store; everything after
//! it sees "already final" and changes nothing.
//!
//! The waiter map uses a std `Mutex`: it is held for a few map operations and never
//! across an `.await`.

use crate::lock;
use crate::store::{Filter, Finished, Inserted, Shared, Store, StoreError, StoreEvent, StoredDecision, StoredRule};
use askuser_core::approval::{self, Approval, Decision, Rule};
use askuser_core::dialect::normalize;
use askuser_core::inbox;
use askuser_core::model::Agent;
use askuser_core::protocol::{
    AgentPresence, BrowserEvent, ErrorBody, ErrorCode, QuestionRecord, Viewer, SNAPSHOT_PART, SNAPSHOT_PART_BYTES,
};
use askuser_core::remind::{self, Patience};
use askuser_core::{resolve, AskResult, Invalid, Limits, Request, Selection, Status, Warning};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot, watch};

/// Wall-clock milliseconds that follow tokio's clock, so tests can pause time.
#[derive(Debug, Clone)]
pub struct Clock {
    base_ms: u64,
    base: tokio::time::Instant,
}

impl Clock {
    pub fn new() -> Self {
        let base_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        Clock { base_ms, base: tokio::time::Instant::now() }
    }

    pub fn now_ms(&self) -> u64 {
        self.base_ms + self.base.elapsed().as_millis() as u64
    }

    /// `None` when `ms` lies beyond what the clock can represent (a timeout of
    /// centuries): such a deadline never comes.
    fn instant_at(&self, ms: u64) -> Option<tokio::time::Instant> {
        self.base.checked_add(Duration::from_millis(ms.saturating_sub(self.base_ms)))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// A client that cannot take a message within this time is disconnected.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle socket is pinged, so half-open connections are noticed.
pub const PING_EVERY: Duration = Duration::from_secs(30);

/// How the bridge behaves; every field has a default that needs no configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub limits: Limits,
    /// Applies to requests without their own `timeoutSeconds`; `None` waits forever.
    pub default_timeout: Option<u64>,
    /// How long a pending question whose agent went away stays answerable.
    pub grace: Duration,
    /// Final questions older than this are deleted from the history.
    pub retention: Duration,
    pub max_pending_per_session: usize,
    /// Run when a question is answered while no agent waits for it (no shell).
    pub on_late_answer: Vec<String>,
    /// A socket that cannot take a message within this time is disconnected.
    pub send_timeout: Duration,
    /// How often an idle socket is pinged; one that sends nothing (not even a pong)
    /// for twice this long is half-open and is dropped.
    pub ping_every: Duration,
    /// Messages per second one socket may send, on average ...
    pub messages_per_second: u32,
    /// ... and in a burst. A socket that keeps sending past it gets `too_many` errors,
    /// then is closed.
    pub message_burst: u32,
    /// A question for a person or team (`agent.assignee`) reaches everyone else's
    /// devices after this long; `None`: never.
    pub escalate_after: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            limits: Limits::default(),
            default_timeout: None,
            grace: Duration::from_secs(24 * 3600),
            retention: Duration::from_secs(30 * 24 * 3600),
            max_pending_per_session: 1_000,
            on_late_answer: vec![],
            send_timeout: SEND_TIMEOUT,
            ping_every: PING_EVERY,
            messages_per_second: 50,
            message_burst: 100,
            escalate_after: Some(Duration::from_secs(300)),
        }
    }
}

/// Why the bridge refused something. Maps onto HTTP statuses and protocol errors.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("{0}")]
    Invalid(Invalid),
    #[error("{0}")]
    Conflict(String),
    #[error("no question with id {0:?}")]
    NotFound(String),
    #[error("{0}")]
    TooMany(String),
    #[error("the bridge is shutting down; ask again with the same id to resume")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl BridgeError {
    /// Whether this is a conflict: the question set is closed already (answered,
    /// declined, withdrawn) or its id is taken by other questions.
    pub fn is_conflict(&self) -> bool {
        matches!(self, BridgeError::Conflict(_) | BridgeError::Store(StoreError::Conflict { .. }))
    }

    /// The error as sent to a client: no internals (store details go to the log).
    pub fn body(&self) -> ErrorBody {
        match self {
            BridgeError::Invalid(invalid) => ErrorBody::invalid(invalid.clone()),
            BridgeError::Conflict(m) => ErrorBody::new(ErrorCode::Conflict, m.clone()),
            BridgeError::NotFound(_) => ErrorBody::new(ErrorCode::NotFound, self.to_string()),
            BridgeError::TooMany(m) => ErrorBody::new(ErrorCode::TooMany, m.clone()),
            BridgeError::ShuttingDown => ErrorBody::new(ErrorCode::Unavailable, self.to_string()),
            BridgeError::Store(StoreError::Conflict { id }) => {
                ErrorBody::new(ErrorCode::Conflict, format!("id {id:?} is already in use with different questions; choose another id"))
            }
            BridgeError::Store(StoreError::NotFound { id }) => ErrorBody::new(ErrorCode::NotFound, format!("no question with id {id:?}")),
            BridgeError::Store(StoreError::Unavailable(m)) => {
                tracing::warn!("store: {m}");
                ErrorBody::new(
                    ErrorCode::Unavailable,
                    "the question store did not answer in time; nothing was acknowledged: try again (an ask with the same id resumes its question)",
                )
            }
            BridgeError::Store(e) => {
                tracing::error!("store: {e}");
                ErrorBody::new(ErrorCode::Internal, "the question store failed; see the bridge's log")
            }
        }
    }
}

/// Where an approval stands: decided by a rule, or asked (wait for its answer, then
/// [`Approval::decide`]).
#[derive(Debug)]
pub enum Approving {
    Decided { decision: Decision, rule: String },
    Asked(Asked),
}

/// A question accepted from an agent.
/// Who acts on a question set: whose question sets they see, and the name their
/// answer is recorded under. The bridge checks the first itself, so no route can forget.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answerer<'a> {
    /// The person (None: no one, who sees every question set: the admin token, a device
    /// of no one, an answer link sent to whoever the set reached).
    pub viewer: Option<&'a Viewer>,
    /// "page: alice's phone (alice)", "cli: the admin token", a channel's name; None:
    /// not named.
    pub by: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct Asked {
    pub record: QuestionRecord,
    /// The id already existed: this ask resumes it.
    pub resumed: bool,
    pub warnings: Vec<Warning>,
}

/// Agents waiting on one pending question.
#[derive(Default)]
struct Waiting {
    senders: Vec<(u64, oneshot::Sender<AskResult>)>,
    /// When the last waiter left (or the question arrived with none), in ms.
    detached_since: Option<u64>,
    session: Option<String>,
}

/// Where a snapshot being sent has got to (see [`Bridge::snapshot_cursor`]).
#[derive(Debug)]
pub struct SnapshotCursor {
    after: i64,
    agents: Option<Vec<AgentPresence>>,
    done: bool,
}

#[derive(Debug, Clone)]
struct Session {
    presence: AgentPresence,
    /// Agents of this session waiting here ...
    attached: usize,
    /// ... and whether one waits at another bridge sharing the store.
    elsewhere: bool,
}

pub struct Bridge {
    store: Arc<dyn Store>,
    /// What the bridges sharing `store` need of it, when others share it.
    shared: Option<Arc<dyn Shared>>,
    /// Questions this bridge is finishing, so a resync does not take them for finished
    /// elsewhere.
    settling: Mutex<HashSet<String>>,
    /// Who each connected page or terminal is ("alice's phone (alice)"), by client id:
    /// what the audit log names as the one who decided.
    clients: Mutex<HashMap<String, String>>,
    settings: Settings,
    clock: Clock,
    events: broadcast::Sender<BrowserEvent>,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Questions another bridge finished while this one did not track them: mostly
    /// never shown here, but one asked or adopted here may be between the store and
    /// [`Bridge::track`], which looks here (taken after `waiting`, in that order).
    finished_untracked: Mutex<VecDeque<String>>,
    sessions: Mutex<HashMap<String, Session>>,
    next: AtomicU64,
    shutdown: watch::Sender<bool>,
}

/// How many events a browser may fall behind before it is resynced from a snapshot.
const EVENT_BUFFER: usize = 1024;
/// How many of the latest questions finished elsewhere and not tracked here are kept for
/// [`Bridge::track`]: one on its way there is among the last few.
const UNTRACKED_KEPT: usize = 256;

impl Bridge {
    /// A bridge over `store`. Call [`Bridge::start_background`] inside a runtime to arm
    /// timeouts and the sweeper.
    pub fn new(store: impl Store + 'static, settings: Settings) -> Arc<Bridge> {
        Bridge::with_store(Arc::new(store), settings)
    }

    /// A bridge over `store`, which other bridges may share.
    pub fn with_store(store: Arc<dyn Store>, settings: Settings) -> Arc<Bridge> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Arc::new(Bridge {
            settling: Mutex::new(HashSet::new()),
            clients: Mutex::new(HashMap::new()),
            shared: store.clone().shared(),
            store,
            settings,
            clock: Clock::new(),
            events,
            waiting: Mutex::new(HashMap::new()),
            finished_untracked: Mutex::new(VecDeque::new()),
            sessions: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            shutdown: watch::channel(false).0,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Arms the timeouts of stored pending questions, prunes old history and starts
    /// the sweeper that withdraws questions whose agent never came back.
    pub async fn start_background(self: &Arc<Self>) -> Result<(), BridgeError> {
        let now = self.now_ms();
        let cutoff = now.saturating_sub(self.settings.retention.as_millis() as u64);
        let pruned = self.store.prune(cutoff).await?;
        if pruned > 0 {
            tracing::info!("pruned {pruned} answered questions older than the retention period");
        }
        for record in self.store.list(Filter::Pending, usize::MAX).await? {
            self.track(&record, now);
        }
        if let Some(mut heard) = self.shared.as_ref().map(|s| s.events()) {
            let me = Arc::downgrade(self);
            let mut stop = self.shutdown.subscribe();
            tokio::spawn(async move {
                // Presence is read again once the notes waiting are taken in: a burst of
                // agents starting to wait elsewhere costs one read, not one each.
                let mut presence = false;
                loop {
                    let event = tokio::select! {
                        e = heard.recv() => e,
                        _ = stop.changed() => return,
                    };
                    let Some(bridge) = me.upgrade() else { return };
                    match event {
                        Ok(StoreEvent::Presence) => presence = true,
                        Ok(event) => bridge.hear(event).await,
                        Err(broadcast::error::RecvError::Lagged(_)) => bridge.hear(StoreEvent::Resync).await,
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                    if presence && heard.is_empty() {
                        presence = false;
                        bridge.refresh_presence().await;
                    }
                }
            });
        }
        let me = Arc::downgrade(self);
        let period = (self.settings.grace / 10).clamp(Duration::from_millis(10), Duration::from_secs(60));
        let mut stop = self.shutdown.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(period) => {}
                    _ = stop.changed() => return,
                }
                let Some(bridge) = me.upgrade() else { return };
                bridge.sweep().await;
            }
        });
        Ok(())
    }

    /// Starts tracking a pending question: its waiter entry and its timeout.
    fn track(self: &Arc<Self>, record: &QuestionRecord, now: u64) {
        let session = record.request.agent.as_ref().and_then(|a| a.session_id.clone());
        let finished = {
            let mut waiting = lock(&self.waiting);
            waiting.entry(record.id.clone()).or_insert_with(|| Waiting { detached_since: Some(now), session, ..Waiting::default() });
            let mut untracked = lock(&self.finished_untracked);
            untracked.iter().position(|id| *id == record.id).and_then(|at| untracked.remove(at)).is_some()
        };
        if finished {
            // Another bridge finished it while it went from the store to here (a person
            // answered it there within the ask): its note came too early to settle it.
            let (me, id) = (self.clone(), record.id.clone());
            tokio::spawn(async move { me.finished_elsewhere(&id).await });
        }
        if let Some(agent) = &record.request.agent {
            if let Some(sid) = &agent.session_id {
                lock(&self.sessions).entry(sid.clone()).or_insert_with(|| Session {
                    presence: AgentPresence {
                        session_id: sid.clone(),
                        name: agent.name.clone(),
                        parent_session_id: agent.parent_session_id.clone(),
                        connected: false,
                    },
                    attached: 0,
                    elsewhere: false,
                });
            }
        }
        // Any `timeoutSeconds` an agent sends is accepted, so the deadline is computed
        // without overflow; one too far away to represent simply never fires.
        let deadline = record
            .request
            .timeout_seconds
            .or(self.settings.default_timeout)
            .and_then(|secs| secs.checked_mul(1000))
            .and_then(|ms| record.created_at.checked_add(ms))
            .and_then(|ms| self.clock.instant_at(ms));
        // A question for someone is announced again when it reaches everyone else.
        let escalation = self.escalates_at(record).filter(|at| *at > record.created_at).and_then(|at| self.clock.instant_at(at));
        if let Some(at) = escalation {
            let id = record.id.clone();
            self.at(at, move |bridge| async move {
                if let Ok(Some(record)) = bridge.store.get(&id).await {
                    if record.status == Status::Pending {
                        let _ = bridge.events.send(BrowserEvent::Asked { question: record });
                    }
                }
            });
        }
        // The default its caller asked for, unless its own timeout ends it first.
        let default = remind::default_at(&record.request, record.created_at).and_then(|ms| self.clock.instant_at(ms));
        match (deadline, default) {
            (Some(deadline), Some(default)) if default < deadline => self.default_at(record, default),
            (None, Some(default)) => self.default_at(record, default),
            (Some(deadline), _) => {
                let id = record.id.clone();
                self.at(deadline, move |bridge| async move {
                    let _ = bridge.close(&id, Status::TimedOut, None).await;
                });
            }
            (None, None) => {}
        }
    }

    /// At `at`, question set `record` ends with the default its caller asked for
    /// ([`AskResult::defaulted`]): `timed_out` with the reason, an approval denied and
    /// logged as decided by the default. Among bridges sharing a store, the first to
    /// finish it wins, as for any answer; the others see it final.
    fn default_at(self: &Arc<Self>, record: &QuestionRecord, at: tokio::time::Instant) {
        let id = record.id.clone();
        self.at(at, move |bridge| async move {
            let Ok(Some(record)) = bridge.store.get(&id).await else { return };
            if record.status != Status::Pending {
                return;
            }
            let result = AskResult::defaulted(&id, &record.request, bridge.now_ms());
            let by = result.reason.clone();
            match bridge.finish(record, result, by.as_deref()).await {
                Ok(_) => tracing::info!(%id, "{}", by.unwrap_or_default()),
                Err(e) if e.is_conflict() => {}
                Err(e) => tracing::warn!(%id, "cannot apply the default: {e}"),
            }
        });
    }

    /// Runs `then` with the bridge at `at`, unless the bridge stops or is gone first.
    fn at<F, Fut>(self: &Arc<Self>, at: tokio::time::Instant, then: F)
    where
        F: FnOnce(Arc<Bridge>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let me = Arc::downgrade(self);
        let mut stop = self.shutdown.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = stop.changed() => return,
            }
            if let Some(bridge) = me.upgrade() {
                then(bridge).await;
            }
        });
    }

    /// When a question for someone reaches everyone else (never: `None`); now for a
    /// question for no one.
    fn escalates_at(&self, record: &QuestionRecord) -> Option<u64> {
        match inbox::assignee(record) {
            None => Some(record.created_at),
            Some(_) => remind::escalate_after(&record.request, self.escalate_after()).map(|after| record.created_at.saturating_add(after)),
        }
    }

    fn escalate_after(&self) -> Option<u64> {
        self.settings.escalate_after.map(|d| d.as_millis() as u64)
    }

    /// Whether `viewer` sees `record` now (the core's rule, [`inbox::sees`], with this
    /// bridge's escalation and clock).
    pub fn visible(&self, record: &QuestionRecord, viewer: Option<&Viewer>) -> bool {
        inbox::sees(record, viewer, self.escalate_after(), self.now_ms())
    }

    /// From when `viewer` sees `record` (ms; None: never): [`inbox::seen_from`].
    pub fn seen_from(&self, record: &QuestionRecord, viewer: Option<&Viewer>) -> Option<u64> {
        inbox::seen_from(record, viewer, self.escalate_after())
    }

    /// Question set `id`, if `viewer` sees it now: one it cannot see is "not found", as
    /// if it did not exist.
    pub async fn seen(&self, id: &str, viewer: Option<&Viewer>) -> Result<QuestionRecord, BridgeError> {
        let record = self.get(id).await?;
        match self.visible(&record, viewer) {
            true => Ok(record),
            false => Err(BridgeError::NotFound(id.to_owned())),
        }
    }

    /// Question set `id`, if it is `viewer`'s own ([`inbox::own`]: it sees it waiting, or
    /// saw it before it closed): anything else is "not found", as if it did not exist.
    pub async fn mine(&self, id: &str, viewer: Option<&Viewer>) -> Result<QuestionRecord, BridgeError> {
        let record = self.get(id).await?;
        match inbox::own(&record, viewer, self.escalate_after(), self.now_ms()) {
            true => Ok(record),
            false => Err(BridgeError::NotFound(id.to_owned())),
        }
    }

    /// Whether an agent waits on question `id` at another bridge sharing the store.
    async fn attached_elsewhere(&self, id: &str) -> Result<bool, StoreError> {
        match &self.shared {
            Some(shared) => shared.attached_elsewhere(id).await,
            None => Ok(false),
        }
    }

    /// Withdraws pending questions whose agent has been away longer than the grace period.
    async fn sweep(&self) {
        let now = self.now_ms();
        let grace = self.settings.grace.as_millis() as u64;
        let expired: Vec<String> = lock(&self.waiting)
            .iter()
            .filter(|(_, w)| w.senders.is_empty() && w.detached_since.is_some_and(|t| now.saturating_sub(t) >= grace))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if self.attached_elsewhere(&id).await.unwrap_or(true) {
                // Its agent waits at another bridge: the grace period starts when it leaves.
                if let Some(w) = lock(&self.waiting).get_mut(&id) {
                    w.detached_since = Some(now);
                }
                continue;
            }
            tracing::info!(%id, "withdrawing: its agent did not come back within the grace period");
            let _ = self.close(&id, Status::Withdrawn, None).await;
        }
        self.forget_idle_sessions();
    }

    /// Forgets agent sessions that are not connected and have nothing pending, so they
    /// leave every new tab's snapshot (a busy bridge saw thousands of finished sessions).
    fn forget_idle_sessions(&self) {
        let busy: HashSet<String> = lock(&self.waiting).values().filter_map(|w| w.session.clone()).collect();
        lock(&self.sessions).retain(|sid, s| s.attached > 0 || s.elsewhere || busy.contains(sid));
    }

    /// Stores a question from an agent (any dialect), or finds the one it resumes.
    pub async fn ask(self: &Arc<Self>, input: &Value) -> Result<Asked, BridgeError> {
        let normalized = normalize(input, &self.settings.limits).map_err(BridgeError::Invalid)?;
        self.ask_request(normalized.request, normalized.warnings).await
    }

    /// Stores a request already read and checked, or finds the one it resumes.
    async fn ask_request(self: &Arc<Self>, mut request: Request, warnings: Vec<Warning>) -> Result<Asked, BridgeError> {
        let id = request.id.clone().unwrap_or_else(|| format!("q-{}", crate::files::random_hex(8)));
        request.id = Some(id.clone());
        if let Some(sid) = request.agent.as_ref().and_then(|a| a.session_id.as_deref()) {
            let pending = lock(&self.waiting).values().filter(|w| w.session.as_deref() == Some(sid)).count();
            let limit = self.settings.max_pending_per_session;
            if pending >= limit {
                // A resume is not a new question, but it is checked like one.
                return match self.store.get(&id).await? {
                    Some(existing) if existing.request.questions == request.questions => {
                        Ok(Asked { record: existing, resumed: true, warnings })
                    }
                    Some(_) => Err(BridgeError::Store(StoreError::Conflict { id })),
                    None => Err(BridgeError::TooMany(format!(
                        "agent session {sid:?} already has {pending} pending questions (at most {limit}); wait for answers first"
                    ))),
                };
            }
        }
        let now = self.now_ms();
        let record = QuestionRecord {
            id: id.clone(),
            request,
            status: Status::Pending,
            created_at: now,
            answered_at: None,
            result: None,
            answered_by: None,
        };
        match self.store.insert(&record).await? {
            Inserted::New => {
                self.track(&record, now);
                let _ = self.events.send(BrowserEvent::Asked { question: record.clone() });
                Ok(Asked { record, resumed: false, warnings })
            }
            Inserted::Existing(stored) => Ok(Asked { record: stored, resumed: true, warnings }),
        }
    }

    /// [`Bridge::ask`] for an agent credential (`owner`; None: the admin token, any
    /// question): a new question is recorded as its own, and it resumes only its own.
    pub async fn ask_as(self: &Arc<Self>, input: &Value, owner: Option<&str>) -> Result<Asked, BridgeError> {
        let asked = self.ask(input).await?;
        self.own(asked, owner).await
    }

    /// An agent's approval: allowed at once by the first rule that matches it (kept in
    /// the audit log), or asked as a question for the person, which is returned to wait
    /// on (see [`Bridge::approval_decided`] for what its answer keeps). `id`: the
    /// question's id; none: `approve-` and the host's id of the call, else a new one.
    pub async fn approve(
        self: &Arc<Self>,
        mut approval: Approval,
        agent: Option<Agent>,
        id: Option<String>,
        owner: Option<&str>,
        patience: Patience,
    ) -> Result<Approving, BridgeError> {
        approval.reason = approval.reason.filter(|r| !r.trim().is_empty());
        // The folder as this machine's file system has it: what the person is shown, and
        // the project a rule is kept for and matched in.
        if let Some(cwd) = approval.cwd.take() {
            approval.cwd = Some(real(&cwd).await);
        }
        if approval.tool != approval::ASK_USER_QUESTION {
            let matched = with_real_file(&approval).await;
            for stored in self.store.rules().await? {
                let Ok(rule) = serde_json::from_str::<Rule>(&stored.rule) else { continue };
                if real_rule(rule).await.matches(&matched, agent.as_ref()) {
                    let decision = Decision::Allow { input: approval.input.clone(), always: false };
                    self.audit(None, &approval, agent.as_ref(), &decision, Some(stored.id.clone()), None).await?;
                    return Ok(Approving::Decided { decision, rule: stored.id });
                }
            }
        }
        let rule = approval.suggest(agent.as_ref());
        let mut request = approval.request(&rule, &self.settings.limits).map_err(BridgeError::Invalid)?;
        // The host's id of the call: its retry of the same call waits on the same question.
        let call = approval.tool_use_id.as_deref().map(|call| {
            let call: String = call.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.:".contains(*c)).take(100).collect();
            format!("approve-{call}")
        });
        request.id = id.or(call);
        request.agent = agent;
        patience.apply(&mut request);
        let (request, warnings) = askuser_core::validate::validate(request, &self.settings.limits).map_err(BridgeError::Invalid)?;
        let asked = self.ask_request(request, warnings).await?;
        Ok(Approving::Asked(self.own(asked, owner).await?))
    }

    /// An approval the person answered (here, whichever bridge's tab it came from): the
    /// decision goes to the audit log, and an "always" keeps its rule. Runs once per
    /// question, on the bridge whose answer won, whether or not its agent still waits.
    async fn approval_decided(&self, record: &QuestionRecord, approval: &Approval, result: &AskResult, by: Option<&str>) {
        let decision = approval.decide(result);
        let agent = record.request.agent.as_ref();
        let mut rule_id = None;
        // The rule the person chose, as the question named it (none: "Always" allowed
        // this time only, or the question named another rule than it would now).
        if let (Decision::Allow { always: true, .. }, Some(rule)) =
            (&decision, approval.kept(&record.request, result, agent, &self.settings.limits))
        {
            let stored = StoredRule {
                id: format!("r-{}", crate::files::random_hex(6)),
                rule: serde_json::to_string(&rule).unwrap_or_default(),
                created_at: self.now_ms(),
                created_by: by.map(str::to_owned),
            };
            match self.store.add_rule(&stored).await {
                Ok(()) => rule_id = Some(stored.id),
                Err(e) => tracing::warn!(id = %record.id, "cannot keep the rule {rule}: {e}"),
            }
        }
        if let Err(e) = self.audit(Some(&record.id), approval, agent, &decision, rule_id, by).await {
            tracing::warn!(id = %record.id, "cannot log the decision: {e}");
        }
    }

    async fn audit(
        &self,
        question: Option<&str>,
        approval: &Approval,
        agent: Option<&Agent>,
        decision: &Decision,
        rule: Option<String>,
        by: Option<&str>,
    ) -> Result<(), StoreError> {
        let agent = agent.map(|a| match &a.session_id {
            Some(s) => format!("{} ({s})", a.name),
            None => a.name.clone(),
        });
        let entry = StoredDecision {
            question: question.map(str::to_owned),
            tool: approval.tool.clone(),
            summary: approval.summary(),
            decision: decision.kind().to_owned(),
            rule,
            // "c-7: alice's phone (alice)": the client, and the token it answered with.
            by: by.map(|by| match lock(&self.clients).get(by) {
                Some(who) => format!("{by}: {who}"),
                None => by.to_owned(),
            }),
            agent,
            at: self.now_ms(),
        };
        self.store.add_decision(&entry).await
    }

    /// Records a new question as `owner`'s, or checks a resumed one is.
    async fn own(&self, asked: Asked, owner: Option<&str>) -> Result<Asked, BridgeError> {
        if let Some(owner) = owner {
            if !asked.resumed {
                self.store.set_owner(&asked.record.id, owner).await?;
            } else if self.store.owner(&asked.record.id).await?.as_deref() != Some(owner) {
                return Err(BridgeError::Conflict(format!(
                    "question id {:?} is used by another agent; ask with a new id",
                    asked.record.id
                )));
            }
        }
        Ok(asked)
    }

    /// Whether `owner` (an agent credential; None: any caller) may reach question `id`:
    /// another agent's question is "not found", as if it did not exist.
    pub async fn reaches(&self, id: &str, owner: Option<&str>) -> Result<(), BridgeError> {
        match owner {
            Some(owner) if self.store.owner(id).await?.as_deref() != Some(owner) => Err(BridgeError::NotFound(id.to_owned())),
            _ => Ok(()),
        }
    }

    /// Waits until question `id` is final. While waiting, the question's agent counts
    /// as connected; dropping the future detaches it (the question stays answerable).
    pub async fn wait(self: &Arc<Self>, id: &str) -> Result<AskResult, BridgeError> {
        let (tx, rx) = oneshot::channel();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let mut tx = Some(tx);
        let mut attach = |waiting: &mut HashMap<String, Waiting>| {
            waiting.get_mut(id).map(|w| {
                w.senders.extend(tx.take().map(|tx| (key, tx)));
                w.detached_since = None;
                (w.session.clone(), w.senders.len() == 1)
            })
        };
        let mut attached = attach(&mut lock(&self.waiting));
        if attached.is_none() {
            // Not pending here: the store has the answer, or (asked at another bridge
            // sharing the store, not heard of yet) the question.
            match self.store.get(id).await? {
                Some(QuestionRecord { result: Some(result), .. }) => return Ok(result),
                Some(record) => {
                    self.take_in(record);
                    attached = attach(&mut lock(&self.waiting));
                }
                None => return Err(BridgeError::NotFound(id.to_owned())),
            }
        }
        let Some((session, first)) = attached else {
            return Err(BridgeError::Conflict(format!("question {id:?} is pending but not tracked")));
        };
        if let Some(sid) = &session {
            self.set_attached(sid, 1);
        }
        if let Some(shared) = self.shared.as_ref().filter(|_| first) {
            if let Err(e) = shared.attach(id, session.as_deref(), true).await {
                tracing::warn!(%id, "{e}");
            }
        }
        let guard = Detach { bridge: self, id, key, session };
        let mut stop = self.shutdown.subscribe();
        let outcome = tokio::select! {
            r = rx => r.map_err(|_| BridgeError::ShuttingDown),
            _ = crate::hub::stopped(&mut stop) => Err(BridgeError::ShuttingDown),
        };
        drop(guard);
        outcome
    }

    fn set_attached(&self, sid: &str, delta: isize) {
        let changed = {
            let mut sessions = lock(&self.sessions);
            let Some(s) = sessions.get_mut(sid) else { return };
            let before = s.attached > 0;
            s.attached = s.attached.saturating_add_signed(delta);
            s.presence.connected = s.attached > 0 || s.elsewhere;
            (before != s.presence.connected).then(|| s.presence.clone())
        };
        if let Some(agent) = changed {
            let _ = self.events.send(BrowserEvent::Agent { agent });
        }
    }

    /// A person's answer, if they see the question set (else "not found"). Sending the
    /// same answer again returns the stored result.
    pub async fn answer(&self, id: &str, selections: &[Selection], who: Answerer<'_>) -> Result<AskResult, BridgeError> {
        let record = self.seen(id, who.viewer).await?;
        let answers = resolve(&record.request.questions, selections).map_err(BridgeError::Invalid)?;
        let result = AskResult::answered(id, &record.request, answers, self.now_ms());
        self.finish(record, result, who.by).await
    }

    /// A person declines, if they see the question set (else "not found"); with `chat`,
    /// because they would rather talk it over.
    pub async fn decline(&self, id: &str, chat: bool, who: Answerer<'_>) -> Result<AskResult, BridgeError> {
        let record = self.seen(id, who.viewer).await?;
        let result = match chat {
            true => AskResult::chat(id, &record.request, self.now_ms()),
            false => AskResult::unanswered(id, &record.request, Status::Cancelled, self.now_ms()),
        };
        self.finish(record, result, who.by).await
    }

    /// Ends a question without an answer: `Cancelled` (a person declined),
    /// `Withdrawn` (the agent took it back) or `TimedOut`.
    pub async fn close(&self, id: &str, status: Status, by: Option<&str>) -> Result<AskResult, BridgeError> {
        let record = self.store.get(id).await?.ok_or_else(|| BridgeError::NotFound(id.to_owned()))?;
        let result = AskResult::unanswered(id, &record.request, status, self.now_ms());
        self.finish(record, result, by).await
    }

    async fn finish(&self, record: QuestionRecord, result: AskResult, by: Option<&str>) -> Result<AskResult, BridgeError> {
        let id = record.id.clone();
        let finished = {
            // Let go however this ends: a caller that goes away (a closed socket, a
            // cancelled request) drops this future mid-write, and a question left marked
            // as settling here would never be settled by a resync.
            let _settling = Settling::mark(&self.settling, &id);
            self.store.finish(&id, &result, by).await
        };
        match finished? {
            Finished::Done(_) => {}
            Finished::AlreadyFinal(stored) => {
                let previous = stored.result.expect("a final record has a result");
                // The same answer again (a browser resending after a reconnect) is not a conflict.
                if previous.status == result.status && previous.answers == result.answers && previous.chat == result.chat {
                    return Ok(previous);
                }
                return Err(BridgeError::Conflict(format!(
                    "question {id:?} is already final ({}); nothing was changed",
                    previous.status.as_str()
                )));
            }
        }
        // A decision's rule and audit entry are stored before the agent hears it, so that
        // its next call finds the rule, and a reader of the log the entry.
        if let Some(approval) = &record.request.approval {
            self.approval_decided(&record, approval, &result, by).await;
        }
        let (_, delivered) = self.settled(&id, &result, by);
        let late = !delivered && result.status == Status::Answered && !self.settings.on_late_answer.is_empty();
        // Run once: only the bridge whose answer won runs it, and not when an agent
        // waits at another bridge (it gets the answer there).
        if late && !self.attached_elsewhere(&id).await.unwrap_or(false) {
            crate::late::run(&self.settings.on_late_answer, &record, &result);
        }
        Ok(result)
    }

    /// Question `id` became final with `result` (here or at another bridge): its waiting
    /// agents get it and every tab hears it. Returns whether it was tracked here and
    /// whether an agent got it.
    fn settled(&self, id: &str, result: &AskResult, by: Option<&str>) -> (bool, bool) {
        let waiting = lock(&self.waiting).remove(id);
        let tracked = waiting.is_some();
        let mut delivered = false;
        if let Some(w) = waiting {
            if let Some(shared) = self.shared.clone().filter(|_| !w.senders.is_empty()) {
                // No agent waits on it here any more (their waits end with the result).
                detach_elsewhere(shared, id.to_owned(), w.session.clone());
            }
            for (_, tx) in w.senders {
                delivered |= tx.send(result.clone()).is_ok();
            }
        }
        let event = match result.status {
            Status::Answered | Status::Cancelled => {
                BrowserEvent::Answered { id: id.to_owned(), by: by.map(str::to_owned), result: result.clone() }
            }
            status => BrowserEvent::Withdrawn { id: id.to_owned(), status },
        };
        let _ = self.events.send(event);
        (tracked, delivered)
    }

    /// Takes in what another bridge sharing the store did.
    async fn hear(self: &Arc<Self>, event: StoreEvent) {
        match event {
            StoreEvent::Asked(id) => self.adopt(&id).await,
            StoreEvent::Final(id) => self.finished_elsewhere(&id).await,
            StoreEvent::Presence => self.refresh_presence().await,
            StoreEvent::Credentials => {}
            StoreEvent::Resync => self.resync().await,
        }
    }

    /// A question asked at another bridge: tracked here too (its timeout, its agent's
    /// presence) and shown in this bridge's tabs.
    async fn adopt(self: &Arc<Self>, id: &str) {
        if lock(&self.waiting).contains_key(id) {
            return;
        }
        match self.store.get(id).await {
            Ok(Some(record)) if record.status == Status::Pending => self.take_in(record),
            Ok(_) => {}
            Err(e) => tracing::warn!(%id, "cannot read a question asked at another bridge: {e}"),
        }
    }

    /// Tracks a pending question stored by another bridge and shows it in this bridge's
    /// tabs, unless it is tracked already.
    fn take_in(self: &Arc<Self>, record: QuestionRecord) {
        if lock(&self.waiting).contains_key(&record.id) {
            return;
        }
        self.track(&record, self.now_ms());
        let _ = self.events.send(BrowserEvent::Asked { question: record });
    }

    /// A question finished at another bridge: its agents here get the result.
    async fn finished_elsewhere(&self, id: &str) {
        {
            let waiting = lock(&self.waiting);
            if !waiting.contains_key(id) {
                // Never shown here, or settled already, or on its way to `track`.
                let mut untracked = lock(&self.finished_untracked);
                if untracked.len() >= UNTRACKED_KEPT {
                    untracked.pop_front();
                }
                untracked.push_back(id.to_owned());
                return;
            }
        }
        match self.store.get(id).await {
            Ok(Some(QuestionRecord { result: Some(result), answered_by, .. })) => {
                self.settled(id, &result, answered_by.as_deref());
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(%id, "cannot read a question finished at another bridge: {e}"),
        }
    }

    /// Compares what this bridge tracks with the store: adopts what others asked and
    /// settles what others finished, whether or not their events arrived.
    async fn resync(self: &Arc<Self>) {
        let Some(shared) = &self.shared else { return };
        let pending = match shared.pending_ids().await {
            Ok(p) => p,
            Err(e) => return tracing::warn!("cannot resync with the store: {e}"),
        };
        let local: HashSet<String> = lock(&self.waiting).keys().cloned().collect();
        for id in local.iter().filter(|id| !pending.contains(*id)) {
            if !lock(&self.settling).contains(id) {
                self.finished_elsewhere(id).await;
            }
        }
        for id in pending.iter().filter(|id| !local.contains(*id)) {
            self.adopt(id).await;
        }
        self.refresh_presence().await;
    }

    /// Which agent sessions wait at other bridges, and tabs told of every change.
    async fn refresh_presence(&self) {
        let elsewhere = match self.shared.as_ref().map(|s| s.sessions_elsewhere()) {
            Some(found) => found.await,
            None => Ok(HashSet::new()),
        };
        let elsewhere = match elsewhere {
            Ok(e) => e,
            Err(e) => return tracing::warn!("cannot read the agents waiting at other bridges: {e}"),
        };
        let changed: Vec<AgentPresence> = lock(&self.sessions)
            .iter_mut()
            .filter_map(|(sid, s)| {
                s.elsewhere = elsewhere.contains(sid);
                let connected = s.attached > 0 || s.elsewhere;
                (connected != s.presence.connected).then(|| {
                    s.presence.connected = connected;
                    s.presence.clone()
                })
            })
            .collect();
        for agent in changed {
            let _ = self.events.send(BrowserEvent::Agent { agent });
        }
    }

    pub async fn get(&self, id: &str) -> Result<QuestionRecord, BridgeError> {
        self.store.get(id).await?.ok_or_else(|| BridgeError::NotFound(id.to_owned()))
    }

    /// Final question sets, most recently finished first, from `offset`; with `search`,
    /// only those containing it. History: everyone sees it.
    pub async fn history(&self, search: Option<&str>, offset: usize, limit: usize) -> Result<Vec<QuestionRecord>, BridgeError> {
        Ok(self.store.history(search, offset, limit).await?)
    }

    /// How many question sets are `(pending, final)`.
    pub async fn counts(&self) -> Result<(usize, usize), BridgeError> {
        Ok(self.store.counts().await?)
    }

    /// Whether the store can take writes; `Err` says why not.
    pub async fn health(&self) -> Result<(), String> {
        self.store.health().await
    }

    /// Every approval rule, oldest first.
    pub async fn rules(&self) -> Result<Vec<StoredRule>, BridgeError> {
        Ok(self.store.rules().await?)
    }

    /// Keeps approval rule `rule`: it decides from now on.
    pub async fn add_rule(&self, rule: &StoredRule) -> Result<(), BridgeError> {
        Ok(self.store.add_rule(rule).await?)
    }

    /// Forgets rule `id` (whether there was one): its requests are asked again.
    pub async fn remove_rule(&self, id: &str) -> Result<bool, BridgeError> {
        Ok(self.store.remove_rule(id).await?)
    }

    /// The audit log's newest `limit` decisions, newest first.
    pub async fn decisions(&self, limit: usize) -> Result<Vec<StoredDecision>, BridgeError> {
        Ok(self.store.decisions(limit).await?)
    }

    /// Up to `limit` question sets, newest first, of those `viewer` sees now.
    pub async fn list(&self, filter: Filter, limit: usize, viewer: Option<&Viewer>) -> Result<Vec<QuestionRecord>, BridgeError> {
        let mut records = self.store.list(filter, limit).await?;
        records.retain(|r| self.visible(r, viewer));
        Ok(records)
    }

    /// Subscribe first, then take the snapshot, so no event falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<BrowserEvent> {
        self.events.subscribe()
    }

    /// A snapshot to read part by part with [`Bridge::snapshot_part`]: the agents now,
    /// the pending questions from the store as each part is asked for, so memory holds
    /// one part at a time (however big and many the questions).
    pub fn snapshot_cursor(&self) -> SnapshotCursor {
        let agents = lock(&self.sessions).values().map(|s| s.presence.clone()).collect();
        SnapshotCursor { after: 0, agents: Some(agents), done: false }
    }

    /// The next `snapshot` part (the agents go in the first), or None after the last.
    /// Questions answered between parts are simply not in the later ones, and new ones
    /// may come both in a part and as an `asked` event; a client keys questions by id.
    pub async fn snapshot_part(&self, client: &str, cursor: &mut SnapshotCursor) -> Result<Option<BrowserEvent>, BridgeError> {
        if cursor.done {
            return Ok(None);
        }
        let (questions, last, more) = self.store.pending_page(cursor.after, SNAPSHOT_PART, SNAPSHOT_PART_BYTES).await?;
        cursor.after = last;
        cursor.done = !more;
        Ok(Some(BrowserEvent::Snapshot {
            client: client.to_owned(),
            questions,
            agents: cursor.agents.take().unwrap_or_default(),
            more,
            viewer: None,
        }))
    }

    /// Every part of a snapshot at once (tests and the benchmark).
    pub async fn snapshot(&self, client: &str) -> Result<Vec<BrowserEvent>, BridgeError> {
        let mut cursor = self.snapshot_cursor();
        let mut parts = Vec::new();
        while let Some(part) = self.snapshot_part(client, &mut cursor).await? {
            parts.push(part);
        }
        Ok(parts)
    }

    /// A new id for a browser connection.
    pub fn client_id(&self) -> String {
        format!("c-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Names client `id` for the audit log while it is connected: whose token it holds.
    pub fn name_client(&self, id: &str, who: String) {
        lock(&self.clients).insert(id.to_owned(), who);
    }

    /// Client `id` went away.
    pub fn forget_client(&self, id: &str) {
        lock(&self.clients).remove(id);
    }

    /// Stops every waiter and background task; waiting agents get `ShuttingDown`.
    pub fn shut_down(&self) {
        let _ = self.shutdown.send(true);
    }

    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// Resolves once the bridge shuts down (holding no guard across awaits).
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Removes one waiter when its future ends or is dropped.
struct Detach<'a> {
    bridge: &'a Bridge,
    id: &'a str,
    key: u64,
    session: Option<String>,
}

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        let now = self.bridge.now_ms();
        let mut left = false;
        if let Some(w) = lock(&self.bridge.waiting).get_mut(self.id) {
            w.senders.retain(|(k, _)| *k != self.key);
            if w.senders.is_empty() {
                w.detached_since = Some(now);
                left = true;
            }
        }
        if let Some(shared) = self.bridge.shared.clone().filter(|_| left) {
            detach_elsewhere(shared, self.id.to_owned(), self.session.clone());
        }
        if let Some(sid) = &self.session {
            self.bridge.set_attached(sid, -1);
        }
    }
}

/// Question `id` marked as being made final by this bridge, for as long as it lives.
struct Settling<'a> {
    set: &'a Mutex<HashSet<String>>,
    id: &'a str,
}

impl<'a> Settling<'a> {
    fn mark(set: &'a Mutex<HashSet<String>>, id: &'a str) -> Self {
        lock(set).insert(id.to_owned());
        Settling { set, id }
    }
}

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        lock(self.set).remove(self.id);
    }
}

/// Tells the bridges sharing the store that no agent of `session` waits on question `id`
/// here any more, without holding up the caller.
fn detach_elsewhere(shared: Arc<dyn Shared>, id: String, session: Option<String>) {
    tokio::spawn(async move {
        if let Err(e) = shared.attach(&id, session.as_deref(), false).await {
            tracing::warn!(%id, "{e}");
        }
    });
}

/// `path` with its symlinks, `.` and `..` resolved as this machine's file system has
/// them: the path itself where it exists, else its nearest existing folder and the rest
/// as given (a file about to be written). A relative path, one that is not valid UTF-8
/// resolved, or one ending in `..` past what exists, stays as it is (the core then
/// puts a path with `..` under no folder). The bridge usually runs where its agents do;
/// a folder only another machine has resolves to itself.
async fn real(path: &str) -> String {
    let owned = path.to_owned();
    // Off the bridge's one thread: a slow file system holds up no request.
    tokio::task::spawn_blocking(move || real_now(&owned)).await.unwrap_or_else(|_| path.to_owned())
}

/// [`real`], blocking.
fn real_now(path: &str) -> String {
    let given = std::path::Path::new(path);
    if !given.is_absolute() {
        return path.to_owned();
    }
    let (mut at, mut rest) = (given, Vec::new());
    loop {
        if let Ok(found) = std::fs::canonicalize(at) {
            let whole = rest.iter().rev().fold(found, |whole, part| whole.join(part));
            return whole.to_str().map_or_else(|| path.to_owned(), str::to_owned);
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path.to_owned(),
        }
    }
}

/// `approval` with the file a file tool works on [`real`] (against its folder when
/// relative), for matching rules only: the call itself goes to the agent as it came.
async fn with_real_file(approval: &Approval) -> Approval {
    let mut matched = approval.clone();
    if !["Edit", "MultiEdit", "Write", "NotebookEdit"].contains(&approval.tool.as_str()) {
        return matched;
    }
    for key in ["file_path", "notebook_path", "path"] {
        let Some(file) = approval.input.get(key).and_then(Value::as_str) else { continue };
        let absolute = match (file.starts_with('/'), approval.cwd.as_deref()) {
            (true, _) => file.to_owned(),
            (false, Some(cwd)) => format!("{}/{file}", cwd.trim_end_matches('/')),
            (false, None) => continue,
        };
        matched.input.insert(key.to_owned(), Value::String(real(&absolute).await));
    }
    matched
}

/// `rule` with its project's folder [`real`].
async fn real_rule(mut rule: Rule) -> Rule {
    if let approval::Scope::Project(dir) = &rule.scope {
        rule.scope = approval::Scope::Project(real(dir).await);
    }
    rule
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Sqlite;

    #[tokio::test]
    async fn a_finish_that_is_dropped_midway_lets_go_of_its_question() {
        let settling = Mutex::new(HashSet::new());
        let write = async {
            let _settling = Settling::mark(&settling, "q1");
            std::future::pending::<()>().await;
        };
        // The caller goes away while the write waits (a closed socket, a cancelled request).
        assert!(tokio::time::timeout(Duration::from_millis(10), write).await.is_err());
        assert!(lock(&settling).is_empty(), "a resync may settle q1 again");
    }

    /// Visibility is the bridge's to decide, not each route's: an answer or a decline
    /// from someone who does not see a question set is "not found", and leaves it pending.
    #[tokio::test]
    async fn someone_who_does_not_see_a_question_set_cannot_answer_or_decline_it() {
        let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), Settings::default());
        let ask = serde_json::json!({"id": "q", "question": "Ship?", "choices": ["Yes", "No"],
            "agent": {"name": "ci", "assignee": "alice"}});
        bridge.ask(&ask).await.unwrap();
        let bob = Viewer { person: "bob".into(), teams: vec![] };
        let as_bob = Answerer { viewer: Some(&bob), by: Some("bob's phone") };
        let yes = [Selection::option("Yes")];
        assert!(matches!(bridge.answer("q", &yes, as_bob).await, Err(BridgeError::NotFound(_))));
        assert!(matches!(bridge.decline("q", false, as_bob).await, Err(BridgeError::NotFound(_))));
        assert!(matches!(bridge.seen("q", Some(&bob)).await, Err(BridgeError::NotFound(_))));
        assert!(bridge.list(Filter::Pending, 10, Some(&bob)).await.unwrap().is_empty());
        assert_eq!(bridge.get("q").await.unwrap().status, Status::Pending);
        let alice = Viewer { person: "alice".into(), teams: vec![] };
        let result = bridge.answer("q", &yes, Answerer { viewer: Some(&alice), by: Some("alice's phone") }).await.unwrap();
        assert!(result.answered);
        // Answered, it is history, which bob sees.
        assert_eq!(bridge.seen("q", Some(&bob)).await.unwrap().status, Status::Answered);
    }

    /// On a shared store, a question asked here can be answered at another bridge, and
    /// its note heard here, before this bridge tracks it (between the insert's commit and
    /// `track`): the note must still settle it, else its agent waits for ever (seen
    /// once in 500-1,000 cross-bridge round trips of `askuser-bench --only shared`).
    #[tokio::test]
    async fn a_question_finished_elsewhere_before_it_is_tracked_here_is_settled() {
        let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), Settings::default());
        let request: askuser_core::Request = serde_json::from_value(
            serde_json::json!({"questions": [{"question": "Ship?", "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        )
        .unwrap();
        let record = QuestionRecord {
            id: "q".into(),
            request,
            status: Status::Pending,
            created_at: 1,
            answered_at: None,
            result: None,
            answered_by: None,
        };
        bridge.store.insert(&record).await.unwrap();
        let result = AskResult::answered("q", &record.request, vec![], 2);
        bridge.store.finish("q", &result, Some("a tab at another bridge")).await.unwrap();
        bridge.hear(StoreEvent::Final("q".into())).await;
        assert!(!lock(&bridge.waiting).contains_key("q"), "not tracked yet");

        bridge.track(&record, 2);
        tokio::time::timeout(Duration::from_secs(5), async {
            while lock(&bridge.waiting).contains_key("q") {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("settled by the note heard before it was tracked");
    }
}
