//! Scoped credentials: what each token may do.
//!
//! - **admin**: everything. The data directory's `token` (or `--token`) is the admin
//!   token; more can be made.
//! - **agent**: ask, read and withdraw questions, the agent socket. Never answer.
//! - **device** (a person's browser, phone or terminal): the inbox, answering and
//!   declining, the browser socket. Never ask or withdraw.
//!
//! A token is shown once, when it is made; the store keeps only its SHA-256. Revoking
//! one refuses its next request and closes its open sockets at once.
//!
//! A **page session** is not a token: the first-paint cookie of one browser
//! (`http/first.rs`), opened with a token that is not an agent's and good for that
//! token's person's question sets on `/` and `/answer/` only, never the API. Kept as its
//! SHA-256 too; it ends when revoked, when it expires, or with its credential.

pub use crate::store::{Credential, Paired, Scope, StoredSession};
use crate::store::{Credentials, Shared, Store, StoreError};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use tokio::sync::{broadcast, watch};

/// Who sent a request: the admin token (`id` None) or a stored credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub scope: Scope,
    pub id: Option<String>,
}

impl Caller {
    /// The credential whose questions alone this caller reaches (agent credentials);
    /// None: every question.
    pub fn owner(&self) -> Option<&str> {
        if self.scope == Scope::Agent {
            self.id.as_deref()
        } else {
            None
        }
    }
}

pub fn hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The credentials in force, by hash, kept in step with the store.
pub struct Registry {
    /// Where credentials and teams are kept: only the registry reads and writes them.
    store: Arc<dyn Credentials>,
    /// Where pairing codes are kept when other bridges share the store.
    shared: Option<Arc<dyn Shared>>,
    by_hash: RwLock<HashMap<String, Credential>>,
    /// Each person's teams.
    teams: RwLock<HashMap<String, Vec<String>>>,
    /// Ids of credentials as they are revoked, for the sockets using them.
    revoked: broadcast::Sender<String>,
    /// Ticks when someone's teams change (here, or at a bridge sharing the store), for the
    /// open pages whose view depends on them ([`Registry::watch_viewer`]).
    teams_changed: watch::Sender<()>,
}

/// Says how many credentials are in force, never their hashes.
impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.by_hash.read().map_or(0, |m| m.len());
        write!(f, "Registry({n} credentials in force)")
    }
}

impl Registry {
    /// The credentials and teams kept in `store`, which the registry alone uses for them.
    pub async fn load(store: Arc<dyn Store>) -> Result<Registry, StoreError> {
        let by_hash = store.credentials().await?.into_iter().filter(|c| c.revoked_at.is_none()).map(|c| (c.hash.clone(), c)).collect();
        let registry = Registry {
            shared: store.clone().shared(),
            store,
            by_hash: RwLock::new(by_hash),
            teams: RwLock::default(),
            revoked: broadcast::channel(16).0,
            teams_changed: watch::Sender::new(()),
        };
        registry.load_teams().await?;
        Ok(registry)
    }

    async fn load_teams(&self) -> Result<(), StoreError> {
        let mut teams: HashMap<String, Vec<String>> = HashMap::new();
        for (person, team) in self.store.teams().await? {
            teams.entry(person).or_default().push(team);
        }
        let mut held = self.teams.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *held != teams {
            *held = teams;
            self.teams_changed.send_replace(());
        }
        Ok(())
    }

    /// Makes `teams` the teams `person` is in, here and in the store.
    pub async fn set_teams(&self, person: &str, teams: Vec<String>) -> Result<(), StoreError> {
        self.store.set_teams(person, &teams).await?;
        self.teams.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(person.to_owned(), teams);
        self.teams_changed.send_replace(());
        Ok(())
    }

    /// Every person known (a device's, or a team member), with their teams and devices.
    pub fn people(&self) -> Vec<(String, Vec<String>, Vec<String>)> {
        let teams = self.teams.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let by_hash = self.by_hash.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut people: std::collections::BTreeMap<String, (Vec<String>, Vec<String>)> =
            teams.iter().map(|(p, t)| (p.clone(), (t.clone(), vec![]))).collect();
        for c in by_hash.values() {
            if let Some(p) = &c.person {
                people.entry(p.clone()).or_default().1.push(c.id.clone());
            }
        }
        people
            .into_iter()
            .map(|(p, (t, mut d))| {
                d.sort();
                (p, t, d)
            })
            .collect()
    }

    /// Who a caller is, as a person: its device's person and their teams (None: the
    /// admin token, or a credential that belongs to no one).
    /// `caller`'s credential as the audit log names it: its name and its person (or
    /// scope); "the admin token" for the data directory's token.
    pub fn label(&self, caller: &Caller) -> String {
        let Some(id) = caller.id.as_deref() else { return "the admin token".into() };
        let by_hash = self.by_hash.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        match by_hash.values().find(|c| c.id == id) {
            Some(c) => format!("{} ({})", c.name, c.person.as_deref().unwrap_or(c.scope.as_str())),
            None => format!("token {id}"),
        }
    }

    pub fn viewer(&self, caller: &Caller) -> Option<askuser_core::protocol::Viewer> {
        let id = caller.id.as_deref()?;
        let person = {
            let by_hash = self.by_hash.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            by_hash.values().find(|c| c.id == id)?.person.clone()?
        };
        let teams = self.teams.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(&person).cloned().unwrap_or_default();
        Some(askuser_core::protocol::Viewer { person, teams })
    }

    /// Reads the credentials again (another bridge sharing the store made or revoked
    /// one): the new ones work here now, and the sockets of revoked ones close.
    pub async fn reload(&self) -> Result<(), StoreError> {
        let fresh: HashMap<String, Credential> =
            self.store.credentials().await?.into_iter().filter(|c| c.revoked_at.is_none()).map(|c| (c.hash.clone(), c)).collect();
        let gone: Vec<String> = {
            let mut by_hash = self.by_hash.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            let gone = by_hash.values().filter(|c| !fresh.contains_key(&c.hash)).map(|c| c.id.clone()).collect();
            *by_hash = fresh;
            gone
        };
        for id in gone {
            let _ = self.revoked.send(id);
        }
        self.load_teams().await
    }

    /// The credential `token` is, if any (the token is hashed first, so the lookup
    /// says nothing about how close a wrong token came).
    pub fn find(&self, token: &str) -> Option<Caller> {
        let by_hash = self.by_hash.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        by_hash.get(&hash(token)).map(|c| Caller { scope: c.scope, id: Some(c.id.clone()) })
    }

    /// Makes a credential; returns it with its token (shown this once).
    pub async fn create(&self, scope: Scope, name: &str, person: Option<&str>, now: u64) -> Result<(Credential, String), StoreError> {
        let token = crate::files::random_hex(32);
        let credential = Credential {
            id: format!("{}-{}", scope.as_str(), crate::files::random_hex(4)),
            name: name.to_owned(),
            scope,
            hash: hash(&token),
            created_at: now,
            revoked_at: None,
            person: person.map(str::to_owned),
        };
        self.store.add_credential(&credential).await?;
        self.by_hash.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(credential.hash.clone(), credential.clone());
        Ok((credential, token))
    }

    /// Every credential, revoked ones too.
    pub async fn credentials(&self) -> Result<Vec<Credential>, StoreError> {
        self.store.credentials().await
    }

    /// Keeps pairing code `code` where every bridge sharing the store can take it; false:
    /// the store is not shared (keep it in [`Pairings`]).
    pub async fn share_pairing(&self, code: &str, paired: &Paired, expires_at: u64) -> Result<bool, StoreError> {
        match &self.shared {
            Some(shared) => shared.put_pairing(&hash(code), paired, expires_at).await.map(|()| true),
            None => Ok(false),
        }
    }

    /// Takes a code [`Registry::share_pairing`] kept, once, at any bridge.
    pub async fn take_shared_pairing(&self, code: &str) -> Result<Option<(Paired, u64)>, StoreError> {
        match &self.shared {
            Some(shared) => shared.take_pairing(&hash(code)).await,
            None => Ok(None),
        }
    }

    /// Whether credential `id` is in force (not revoked).
    pub fn in_force(&self, id: &str) -> bool {
        self.by_hash.read().unwrap_or_else(std::sync::PoisonError::into_inner).values().any(|c| c.id == id)
    }

    /// Revokes credential `id`: its next request is refused, its sockets close now, and
    /// its push subscriptions and page sessions are forgotten (its answer links stop
    /// working: see [`Registry::in_force`]).
    pub async fn revoke(&self, id: &str, now: u64) -> Result<bool, StoreError> {
        let revoked = self.store.revoke_credential(id, now).await?;
        self.by_hash.write().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|_, c| c.id != id);
        if revoked {
            let _ = self.revoked.send(id.to_owned());
        }
        Ok(revoked)
    }

    /// Opens a page session for `caller` (not an agent) until `now + lasts` ms: the
    /// session and the cookie's value, shown this once (a random value, no token).
    pub async fn open_session(&self, caller: &Caller, now: u64, lasts: u64) -> Result<(StoredSession, String), StoreError> {
        let cookie = crate::files::random_hex(32);
        let session = StoredSession {
            id: format!("session-{}", crate::files::random_hex(4)),
            hash: hash(&cookie),
            credential: caller.id.clone(),
            created_at: now,
            expires_at: now.saturating_add(lasts),
        };
        self.store.add_session(&session).await?;
        Ok((session, cookie))
    }

    /// Who the page session with cookie `cookie` reads and answers for, at `now`: a
    /// device page of its credential (`Scope::Device` whatever the credential's scope,
    /// so a session the admin token opened is no admin), and the session's id. None:
    /// no such session, expired, or its credential revoked.
    pub async fn session(&self, cookie: &str, now: u64) -> Result<Option<(Caller, String)>, StoreError> {
        let Some(session) = self.store.session(&hash(cookie)).await? else { return Ok(None) };
        if session.expires_at <= now {
            return Ok(None);
        }
        let in_force = |id: &str| self.in_force(id);
        if let Some(id) = session.credential.as_deref().filter(|id| !in_force(id)) {
            // Made at another bridge sharing the store a moment ago, or revoked.
            self.reload().await?;
            if !in_force(id) {
                return Ok(None);
            }
        }
        Ok(Some((Caller { scope: Scope::Device, id: session.credential }, session.id)))
    }

    /// The page sessions in force at `now`, oldest first.
    pub async fn sessions(&self, now: u64) -> Result<Vec<StoredSession>, StoreError> {
        let mut sessions = self.store.sessions().await?;
        sessions.retain(|s| s.expires_at > now && s.credential.as_deref().is_none_or(|id| self.in_force(id)));
        Ok(sessions)
    }

    /// Ends page session `id`; whether there was one.
    pub async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        self.store.remove_session(id).await
    }

    /// Resolves when credential `id` is revoked (never for the admin token).
    /// Who `caller` is now ([`Registry::viewer`]), kept up to date while a page is open.
    pub fn watch_viewer(self: &Arc<Self>, caller: Caller) -> ViewerWatch {
        ViewerWatch { changed: self.teams_changed.subscribe(), registry: self.clone(), caller }
    }

    pub fn revocation(&self, id: Option<String>) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut heard = self.revoked.subscribe();
        async move {
            let Some(id) = id else { return std::future::pending().await };
            loop {
                match heard.recv().await {
                    Ok(gone) if gone == id => return,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
                }
            }
        }
    }
}

/// The person an open page belongs to, and their teams, as they change.
pub struct ViewerWatch {
    changed: watch::Receiver<()>,
    registry: Arc<Registry>,
    caller: Caller,
}

impl ViewerWatch {
    /// The page's token as the audit log names it: "alice's phone (alice)", "ci
    /// (agent)", "the admin token".
    pub fn label(&self) -> String {
        self.registry.label(&self.caller)
    }

    /// Who the page's token belongs to now (None: the admin token, shown everything).
    pub fn now(&mut self) -> Option<askuser_core::protocol::Viewer> {
        self.changed.mark_unchanged();
        self.registry.viewer(&self.caller)
    }

    /// Resolves when someone's teams may have changed (never, once the registry is gone).
    pub async fn changed(&mut self) {
        if self.changed.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One-time pairing codes (`askuser pair`): each is traded once, before it expires,
/// for a device token. Kept in memory: a restart voids them.
#[derive(Debug, Default)]
pub struct Pairings {
    open: std::sync::Mutex<HashMap<String, (Paired, u64)>>,
    /// When recent claims with a wrong or expired code came, per source (see
    /// [`Pairings::source`]), to slow down guessing: a guesser's misses never refuse a
    /// claim from elsewhere.
    misses: std::sync::Mutex<HashMap<IpAddr, VecDeque<u64>>>,
}

/// Why a code was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unpaired {
    #[error("no such pairing code, or it was used already; run `askuser pair` again")]
    Unknown,
    #[error("this pairing code has expired; run `askuser pair` again")]
    Expired,
    #[error("too many wrong pairing codes in the last minute; wait a minute")]
    TooMany,
}

/// Wrong codes allowed per minute from one source (a code has 50 random bits, so this
/// alone makes guessing hopeless).
const MISSES_PER_MINUTE: usize = 10;
const MINUTE_MS: u64 = 60_000;
/// Sources whose misses are remembered at once: past it, those with none in the last
/// minute are forgotten, then the one whose last miss is the oldest.
const MAX_SOURCES: usize = 4096;
/// Letters and digits that cannot be mistaken for each other.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

impl Pairings {
    /// A new code (10 letters and digits, 50 random bits).
    pub fn code() -> String {
        let mut bytes = [0u8; 10];
        getrandom::fill(&mut bytes).expect("the operating system's random source is available");
        bytes.iter().map(|b| CODE_ALPHABET[usize::from(b % 32)] as char).collect()
    }

    /// Keeps `code` here (a store shared with other bridges keeps it instead).
    pub fn keep(&self, code: &str, paired: Paired, expires_at: u64) {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.insert(code.to_owned(), (paired, expires_at));
    }

    /// `code` as kept: case, spaces and dashes ignored.
    pub fn normal(code: &str) -> String {
        code.chars().filter(|c| !c.is_whitespace() && *c != '-').collect::<String>().to_ascii_uppercase()
    }

    /// What wrong codes from the peer `ip` count against: its address; an IPv6 one by
    /// its /64 (what one host is given, so it cannot step through addresses), an
    /// IPv4-mapped one as IPv4.
    pub fn source(ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
            },
            v4 => v4,
        }
    }

    /// Refuses when too many wrong codes came from `source` in the last minute.
    pub fn limited(&self, source: IpAddr, now: u64) -> Result<(), Unpaired> {
        let mut misses = self.misses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(times) = misses.get_mut(&source) else { return Ok(()) };
        recent(times, now);
        if times.len() >= MISSES_PER_MINUTE {
            return Err(Unpaired::TooMany);
        }
        Ok(())
    }

    /// Takes the normalised `code` from those kept here.
    pub fn take(&self, code: &str, now: u64) -> Option<(Paired, u64)> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.retain(|_, (_, expires)| *expires + 3_600_000 > now); // forget long-dead codes
        open.remove(code)
    }

    /// What a code taken (or not) amounts to at `now`.
    pub fn judge(taken: Option<(Paired, u64)>, now: u64) -> Result<Paired, Unpaired> {
        match taken {
            Some((paired, expires)) if now < expires => Ok(paired),
            Some(_) => Err(Unpaired::Expired),
            None => Err(Unpaired::Unknown),
        }
    }

    /// Counts a wrong code against `source`'s limit.
    pub fn outcome(&self, source: IpAddr, outcome: Result<Paired, Unpaired>, now: u64) -> Result<Paired, Unpaired> {
        if matches!(outcome, Err(Unpaired::Unknown | Unpaired::Expired)) {
            let mut misses = self.misses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !misses.contains_key(&source) && misses.len() >= MAX_SOURCES {
                make_room(&mut misses, now);
            }
            let times = misses.entry(source).or_default();
            recent(times, now);
            times.push_back(now);
            if times.len() > MISSES_PER_MINUTE {
                times.pop_front(); // more than refuses is never needed
            }
        }
        outcome
    }

    /// How many sources have misses remembered (bounded by [`MAX_SOURCES`]).
    #[cfg(test)]
    pub fn sources(&self) -> usize {
        self.misses.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

/// Forgets misses older than a minute.
fn recent(times: &mut VecDeque<u64>, now: u64) {
    while times.front().is_some_and(|&t| t + MINUTE_MS <= now) {
        times.pop_front();
    }
}

/// Room for one more source: the quiet ones go, else the one quiet the longest.
fn make_room(misses: &mut HashMap<IpAddr, VecDeque<u64>>, now: u64) {
    misses.retain(|_, times| times.back().is_some_and(|&last| last + MINUTE_MS > now));
    if misses.len() >= MAX_SOURCES {
        let oldest = misses.iter().min_by_key(|(_, times)| times.back().copied().unwrap_or(0)).map(|(source, _)| *source);
        if let Some(source) = oldest {
            misses.remove(&source);
        }
    }
}

/// Whether `scope` may make this request (the path is one of the bridge's `/v1` routes).
pub fn allowed(scope: Scope, method: &axum::http::Method, path: &str) -> bool {
    use axum::http::Method;
    let question = path.strip_prefix("/v1/questions/");
    match scope {
        Scope::Admin => true,
        Scope::Agent => match (method, path) {
            (_, "/v1/health" | "/v1/agent") => true,
            (&Method::POST, "/v1/ask" | "/v1/approve") => true,
            (&Method::GET | &Method::DELETE, _) => question.is_some_and(|rest| !rest.contains('/')),
            _ => false,
        },
        Scope::Device => match (method, path) {
            (_, "/v1/health" | "/v1/ui") => true,
            (&Method::GET, "/v1/push") | (&Method::POST | &Method::DELETE, "/v1/push/subscriptions" | "/v1/session") => true,
            (&Method::GET, "/v1/questions" | "/v1/rules" | "/v1/decisions") => true,
            // Removing a rule only makes the bridge ask again: a person may, from any device.
            (&Method::DELETE, _) => path.strip_prefix("/v1/rules/").is_some_and(|id| !id.is_empty() && !id.contains('/')),
            (&Method::GET, _) => question.is_some_and(|rest| !rest.contains('/')),
            (&Method::POST, _) => question.is_some_and(|rest| rest.ends_with("/answer") || rest.ends_with("/cancel")),
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn wrong_pairing_codes_count_per_source_and_the_sources_stay_bounded() {
        let p = Pairings::default();
        let (guesser, other): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..MISSES_PER_MINUTE + 5 {
            assert_eq!(p.outcome(guesser, Err(Unpaired::Unknown), 1_000), Err(Unpaired::Unknown));
        }
        assert_eq!(p.limited(guesser, 1_000), Err(Unpaired::TooMany));
        assert_eq!(p.limited(other, 1_000), Ok(()), "another source's claim is not refused");
        assert_eq!(p.limited(guesser, 1_000 + MINUTE_MS), Ok(()), "a minute later");
        // One IPv6 host is its /64; an IPv4-mapped address is its IPv4 one.
        let source = |ip: &str| Pairings::source(ip.parse().unwrap());
        assert_eq!(source("2001:db8::1"), source("2001:db8::ffff:2"));
        assert_ne!(source("2001:db8::1"), source("2001:db8:0:1::1"));
        assert_eq!(source("::ffff:192.0.2.1"), guesser);
        // Guesses from more sources than are remembered: the map stays bounded, and the
        // newest are kept.
        for i in 0..MAX_SOURCES as u32 + 100 {
            let _ = p.outcome(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)), Err(Unpaired::Unknown), 2_000 + u64::from(i));
        }
        assert_eq!(p.sources(), MAX_SOURCES);
        let newest = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + MAX_SOURCES as u32 + 99));
        for _ in 1..MISSES_PER_MINUTE {
            let _ = p.outcome(newest, Err(Unpaired::Unknown), 10_000);
        }
        assert_eq!(p.limited(newest, 10_000), Err(Unpaired::TooMany), "its first miss was kept");
    }

    #[test]
    fn agents_ask_and_devices_answer_and_neither_does_the_other() {
        let can = |scope, method: Method, path: &str| allowed(scope, &method, path);
        assert!(can(Scope::Agent, Method::POST, "/v1/ask"));
        assert!(can(Scope::Agent, Method::GET, "/v1/questions/q1"));
        assert!(can(Scope::Agent, Method::DELETE, "/v1/questions/q1"));
        assert!(can(Scope::Agent, Method::GET, "/v1/agent"));
        assert!(!can(Scope::Agent, Method::POST, "/v1/questions/q1/answer"));
        assert!(!can(Scope::Agent, Method::POST, "/v1/questions/q1/cancel"));
        assert!(!can(Scope::Agent, Method::GET, "/v1/questions"), "not the whole inbox");
        assert!(!can(Scope::Agent, Method::GET, "/v1/ui"));
        assert!(!can(Scope::Agent, Method::GET, "/v1/tokens"));
        assert!(!can(Scope::Agent, Method::GET, "/v1/push"));
        assert!(!can(Scope::Agent, Method::POST, "/v1/push/subscriptions"));
        assert!(can(Scope::Device, Method::GET, "/v1/push"));
        assert!(can(Scope::Device, Method::POST, "/v1/push/subscriptions"));
        assert!(can(Scope::Device, Method::DELETE, "/v1/push/subscriptions"));

        assert!(can(Scope::Device, Method::GET, "/v1/questions"));
        assert!(can(Scope::Device, Method::POST, "/v1/questions/q1/answer"));
        assert!(can(Scope::Device, Method::POST, "/v1/questions/q1/cancel"));
        assert!(can(Scope::Device, Method::GET, "/v1/ui"));
        assert!(!can(Scope::Device, Method::POST, "/v1/ask"));
        assert!(!can(Scope::Device, Method::DELETE, "/v1/questions/q1"));
        assert!(!can(Scope::Device, Method::GET, "/v1/agent"));
        assert!(!can(Scope::Device, Method::POST, "/v1/tokens"));

        assert!(can(Scope::Admin, Method::POST, "/v1/tokens"));
    }

    #[tokio::test]
    async fn a_page_session_is_no_token_no_admin_and_ends_with_its_credential() {
        let store: Arc<dyn Store> = Arc::new(crate::store::Sqlite::open_in_memory().unwrap());
        let registry = Registry::load(store.clone()).await.unwrap();
        let (device, token) = registry.create(Scope::Device, "phone", Some("alice"), 1).await.unwrap();
        let phone = Caller { scope: Scope::Device, id: Some(device.id.clone()) };
        let (session, cookie) = registry.open_session(&phone, 10, 100).await.unwrap();
        assert_ne!(cookie, token);
        assert!(registry.find(&cookie).is_none(), "the cookie is no bearer token");
        assert!(registry.session(&token, 20).await.unwrap().is_none(), "nor is a token a cookie");
        assert_eq!(registry.session(&cookie, 20).await.unwrap(), Some((phone.clone(), session.id.clone())));
        assert_eq!(registry.session(&cookie, 110).await.unwrap(), None, "expired");
        // One the admin token opened is a device page of no one: never the admin.
        let admin = Caller { scope: Scope::Admin, id: None };
        let (_, admins) = registry.open_session(&admin, 10, 100).await.unwrap();
        let (as_admin, _) = registry.session(&admins, 20).await.unwrap().unwrap();
        assert_eq!(as_admin, Caller { scope: Scope::Device, id: None });
        assert_eq!(registry.sessions(20).await.unwrap().len(), 2);
        assert!(store.sessions().await.unwrap().iter().all(|s| s.hash != cookie && s.hash != admins), "kept hashed");
        // Revoking the device ends its session; ending the admin's ends it.
        assert!(registry.revoke(&device.id, 30).await.unwrap());
        assert_eq!(registry.session(&cookie, 40).await.unwrap(), None);
        let left = registry.sessions(40).await.unwrap();
        assert_eq!(left.iter().map(|s| s.credential.clone()).collect::<Vec<_>>(), [None]);
        assert!(registry.end_session(&left[0].id).await.unwrap());
        assert_eq!(registry.session(&admins, 40).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_token_is_stored_only_as_its_hash_and_revoking_it_takes_effect_at_once() {
        let sqlite = Arc::new(crate::store::Sqlite::open_in_memory().unwrap());
        let store: Arc<dyn Store> = sqlite.clone();
        let registry = Registry::load(store.clone()).await.unwrap();
        let (device, token) = registry.create(Scope::Device, "phone", Some("alice"), 1).await.unwrap();
        assert_eq!(registry.find(&token), Some(Caller { scope: Scope::Device, id: Some(device.id.clone()) }));
        let viewer = |r: &Registry| r.viewer(&Caller { scope: Scope::Device, id: Some(device.id.clone()) });
        assert_eq!(viewer(&registry).map(|v| (v.person, v.teams)), Some(("alice".into(), vec![])));
        registry.set_teams("alice", vec!["db".into()]).await.unwrap();
        assert_eq!(viewer(&Registry::load(store.clone()).await.unwrap()).unwrap().teams, ["db"], "teams are stored");
        assert_eq!(registry.viewer(&Caller { scope: Scope::Admin, id: None }), None, "the admin token is no one");
        assert!(registry.find("wrong").is_none());
        let stored = sqlite.credentials().unwrap();
        assert_eq!(stored[0].hash, hash(&token));
        assert_ne!(stored[0].hash, token);
        // A new registry (a restart) knows it too.
        assert!(Registry::load(store.clone()).await.unwrap().find(&token).is_some());
        let gone = registry.revocation(Some(device.id.clone()));
        assert!(registry.revoke(&device.id, 2).await.unwrap());
        tokio::time::timeout(std::time::Duration::from_secs(1), gone).await.expect("the revocation is heard");
        assert!(registry.find(&token).is_none());
        assert!(Registry::load(store.clone()).await.unwrap().find(&token).is_none(), "revoked for good");
        assert!(!registry.revoke(&device.id, 3).await.unwrap(), "once");
    }
}
