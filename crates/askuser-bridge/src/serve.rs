//! Starting and stopping a bridge: bind, serve, announce, shut down cleanly.
//!
//! [`start`] runs a bridge inside the current runtime and returns a handle (tests,
//! benchmarks and `askuser mcp` use it); [`serve`] is `askuser serve`: start, write
//! `bridge.json`, wait for SIGINT/SIGTERM, stop.

use crate::client::{self, BridgeFile};
use crate::error::{invalid, Error, OrFile, Result};
use crate::files;
use crate::http::{self, App, Security};
use crate::hub::{Bridge, Settings};
use crate::store::Durability;
use crate::tls::{Fingerprint, Identity};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub addr: String,
    pub data_dir: PathBuf,
    pub token: Option<String>,
    pub allow_origins: Vec<String>,
    pub settings: Settings,
    pub durability: Durability,
    /// Write `bridge.json` so other commands find this bridge.
    pub announce: bool,
    /// Connections at once, and how long one may take to send a request head.
    pub limits: crate::listen::Limits,
    /// Start even on a store found damaged, with what SQLite can still read.
    pub accept_damaged_store: bool,
    /// Keep everything in this PostgreSQL database, shared with other bridges
    /// (`postgres://…`), instead of the SQLite file in the data directory.
    pub store: Option<String>,
    /// Speak TLS (required beyond loopback unless `trust_proxy`).
    pub tls: Option<Tls>,
    /// Host names people reach the bridge by (accepted as Host and Origin; put in a
    /// self-signed certificate).
    pub names: Vec<String>,
    /// Where people reach the bridge through a TLS proxy (`https://…`, no path).
    pub public_url: Option<reqwest::Url>,
    /// Listen beyond loopback without TLS: the proxy at `public_url` is in front.
    pub trust_proxy: bool,
    /// Push, the webhook, ntfy and their rules.
    pub notify: crate::notify::NotifyOptions,
}

/// Where the bridge's certificate comes from.
#[derive(Debug, Clone)]
pub enum Tls {
    /// Made once for this data directory and kept (`tls/` in it).
    SelfSigned,
    /// PEM files of the person's own.
    Files { cert: PathBuf, key: PathBuf },
}

impl ServeOptions {
    pub fn new(data_dir: PathBuf) -> Self {
        ServeOptions {
            addr: client::DEFAULT_ADDR.into(),
            data_dir,
            token: None,
            allow_origins: vec![],
            settings: Settings::default(),
            durability: Durability::default(),
            announce: true,
            limits: crate::listen::Limits::default(),
            accept_damaged_store: false,
            store: None,
            tls: None,
            names: vec![],
            public_url: None,
            trust_proxy: false,
            notify: crate::notify::NotifyOptions::default(),
        }
    }
}

/// A bridge running in this process.
pub struct Running {
    pub addr: SocketAddr,
    pub url: String,
    pub token: String,
    /// The certificate's SHA-256 fingerprint, when the bridge speaks TLS.
    pub fingerprint: Option<Fingerprint>,
    /// The origin people open through a TLS proxy (`--public-url`), if any.
    pub public: Option<String>,
    pub bridge: Arc<Bridge>,
    bridge_file: Option<PathBuf>,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    /// This bridge's claim on its data directory, released when it stops.
    _lock: std::fs::File,
    data_dir: PathBuf,
    /// The store, let go (a shared one's claims) once the server stopped.
    store: Arc<dyn crate::store::Store>,
    /// The SQLite store's recorded state (none for a shared store).
    store_state: Option<crate::damage::State>,
}

impl Running {
    /// The address a person opens: the token travels in the fragment, never to a server log.
    pub fn open_url(&self) -> String {
        format!("{}/#token={}", self.public.as_deref().unwrap_or(&self.url), self.token)
    }

    /// Stops accepting, tells every client, and waits for the server to finish.
    pub async fn stop(self) {
        self.bridge.shut_down();
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.server).await;
        self.store.close().await;
        if let Some(state) = self.store_state {
            let clean = crate::damage::State { clean: true, ..state };
            if let Err(e) = crate::damage::write_state(&self.data_dir, clean) {
                tracing::warn!("cannot record the clean shutdown: {e:#}");
            }
        }
        if let Some(path) = self.bridge_file {
            remove_if_ours(&path);
        }
    }
}

fn remove_if_ours(path: &std::path::Path) {
    let ours = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<BridgeFile>(&t).ok())
        .is_some_and(|f| f.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(path);
    }
}

/// One bridge per data directory: two would share the store but not their waiting
/// agents, so an answer given through one would never reach an agent waiting on the other.
/// The lock is the OS's (released when the process dies, however it dies); the file
/// holds the holder's pid for the message.
fn lock_dir(dir: &std::path::Path) -> Result<std::fs::File> {
    use std::io::{Seek, Write};
    let path = dir.join("bridge.lock");
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).or_file("open", &path)?;
    // A bridge that is stopping, or a child process forked at that moment and not yet
    // exec'd (it shares the lock until then), holds it a little longer: wait up to 1 s.
    let mut locked = file.try_lock();
    for _ in 0..20 {
        if !matches!(locked, Err(std::fs::TryLockError::WouldBlock)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        locked = file.try_lock();
    }
    match locked {
        Ok(()) => {
            let pid = std::process::id();
            (|| -> std::io::Result<()> {
                file.set_len(0)?;
                file.rewind()?;
                write!(file, "{pid}")
            })()
            .or_file("write", &path)?;
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            let url = std::fs::read_to_string(client::bridge_file(dir))
                .ok()
                .and_then(|t| serde_json::from_str::<BridgeFile>(&t).ok())
                .map(|f| format!(" at {}", f.url))
                .unwrap_or_default();
            Err(Error::Locked(format!(
                "another askuser bridge (pid {}{url}) already serves the data directory {}; use that one \
                 (`askuser pending`, or open its page), stop it first, or give this one another --data-dir",
                pid.trim(),
                dir.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).or_file("lock", &path),
    }
}

/// The question store and its WAL files readable by this user only: SQLite creates them
/// with the process's umask (often 0644), and the questions are private.
fn private_store_files(db: &std::path::Path) -> Result<()> {
    match files::create_private(db) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e).or_file("open the question store", db),
        _ => {}
    }
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let path = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).or_file("make private", &path)?;
        }
    }
    Ok(())
}

/// Starts a bridge: its data directory (locked) and token, its store, its address and
/// certificate, its credentials, notifications and routes, in that order.
pub async fn start(opts: ServeOptions) -> Result<Running> {
    files::ensure_dir(&opts.data_dir)?;
    let lock = lock_dir(&opts.data_dir)?;
    let token = files::token(opts.token.as_deref(), &opts.data_dir)?;
    let (store, store_state) = open_store(&opts).await?;
    let bridge = Bridge::with_store(store.clone(), opts.settings.clone());
    bridge.start_background().await.map_err(|e| Error::Store(e.into()))?;
    let (listener, addr) = listen(&opts).await?;
    let (acceptor, fingerprint) = certificate(&opts)?;
    let scheme = if acceptor.is_some() { "https" } else { "http" };
    let registry = Arc::new(crate::tokens::Registry::load(store.clone()).await.map_err(|e| Error::Store(Box::new(e)))?);
    let people = registry.clone();
    let shared = store.clone().shared();
    if let Some(heard) = shared.as_ref().map(|s| s.events()) {
        reload_credentials(bridge.clone(), registry.clone(), heard);
    }
    let mut security = Security::new(token.clone(), registry, addr, scheme, &opts.names, &opts.allow_origins);
    security.trust_proxy = opts.trust_proxy;
    let public = opts.public_url.as_ref().map(|u| u.origin().ascii_serialization());
    if let Some(url) = &opts.public_url {
        let host = url.host_str().unwrap_or_default();
        security.hosts.push(url.port().map_or_else(|| host.to_owned(), |p| format!("{host}:{p}")));
        security.origins.push(url.origin().ascii_serialization());
    }
    let url = format!("{scheme}://{}", reachable(addr));
    // Links in notifications point where people reach the bridge.
    let base = public
        .clone()
        .or_else(|| opts.names.first().map(|n| format!("{scheme}://{}", http::host_port(n, addr.port()))))
        .unwrap_or_else(|| url.clone());
    let vapid = crate::notify::push::Vapid::for_store(shared.as_deref(), &opts.data_dir, &opts.notify.push_contact).await?;
    let notifier = crate::notify::Notifier::start(bridge.clone(), store.clone(), people, opts.notify.clone(), vapid, base);
    let app = App { bridge: bridge.clone(), security: Arc::new(security), notifier };
    let (stop, stopped) = watch::channel(false);
    let router = http::router(app);
    let server = tokio::spawn(crate::listen::serve(listener, router, opts.limits, acceptor, stopped));
    let bridge_file = if opts.announce {
        let path = client::bridge_file(&opts.data_dir);
        let file = BridgeFile { url: url.clone(), token: token.clone(), pid: std::process::id(), fingerprint };
        files::write_private(&path, &serde_json::to_vec_pretty(&file).map_err(|e| Error::invalid(e.to_string()))?)?;
        Some(path)
    } else {
        None
    };
    Ok(Running {
        addr,
        url,
        public,
        token,
        fingerprint,
        bridge,
        bridge_file,
        stop,
        server,
        _lock: lock,
        data_dir: opts.data_dir,
        store,
        store_state,
    })
}

/// The question store `opts` name: the shared one, or this data directory's SQLite
/// file, checked for damage first; and the latter's state to keep.
async fn open_store(opts: &ServeOptions) -> Result<(Arc<dyn crate::store::Store>, Option<crate::damage::State>)> {
    let store_error = |e: crate::store::StoreError| Error::Store(Box::new(e));
    if let Some(url) = &opts.store {
        let store = crate::store::Postgres::connect(url).await.map_err(store_error)?;
        tracing::info!(
            "sharing the store at {} (this bridge: {})",
            crate::redact::redact(crate::redact::Secret::Store(url)),
            store.bridge_id()
        );
        return Ok((store, None));
    }
    let db = opts.data_dir.join(crate::damage::DB);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let (state, clean) = crate::damage::before_open(&opts.data_dir, now, opts.accept_damaged_store)?;
    if !clean {
        tracing::debug!("the last bridge on {} did not stop cleanly; checking the store's integrity", opts.data_dir.display());
    }
    crate::damage::check(crate::store::Sqlite::check(&db, !clean), !clean, &opts.data_dir, opts.accept_damaged_store)?;
    private_store_files(&db)?;
    let store = crate::store::Sqlite::open(&db, opts.durability).map_err(store_error)?;
    // Running from now on: its log exists until the store closes cleanly.
    crate::damage::write_state(&opts.data_dir, state)?;
    Ok((Arc::new(store), Some(state)))
}

/// The listening socket on `opts.addr` and its address; plain HTTP beyond loopback is
/// refused before binding when the address says so, after it for a host name.
async fn listen(opts: &ServeOptions) -> Result<(tokio::net::TcpListener, SocketAddr)> {
    let literal = opts.addr.parse::<SocketAddr>().ok();
    if let Some(addr) = literal {
        plain_beyond_loopback(opts, addr)?;
    }
    let listener = match tokio::net::TcpListener::bind(&opts.addr).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(Error::AddressInUse(format!(
                "{} is already in use (another askuser bridge, or another program). \
                 Choose another address with --addr, or --addr 127.0.0.1:0 for any free port",
                opts.addr
            )))
        }
        Err(e) => return Err(Error::invalid(format!("cannot listen on {}: {e}", opts.addr))),
    };
    let addr = listener.local_addr().map_err(|e| Error::invalid(format!("cannot listen on {}: {e}", opts.addr)))?;
    if literal.is_none() {
        plain_beyond_loopback(opts, addr)?;
    }
    Ok((listener, addr))
}

/// The TLS acceptor `opts` ask for, and its certificate's fingerprint.
fn certificate(opts: &ServeOptions) -> Result<(Option<tokio_rustls::TlsAcceptor>, Option<Fingerprint>)> {
    let identity = match &opts.tls {
        None => return Ok((None, None)),
        Some(Tls::SelfSigned) => Identity::self_signed(&opts.data_dir, &opts.names)?,
        Some(Tls::Files { cert, key }) => Identity::from_files(cert, key)?,
    };
    let fingerprint = identity.fingerprint;
    Ok((Some(tokio_rustls::TlsAcceptor::from(Arc::new(identity.server_config()?))), Some(fingerprint)))
}

/// Keeps the credentials in force here the same as at the other bridges sharing the store.
fn reload_credentials(
    bridge: Arc<Bridge>,
    registry: Arc<crate::tokens::Registry>,
    mut heard: tokio::sync::broadcast::Receiver<crate::store::StoreEvent>,
) {
    use crate::store::StoreEvent;
    let mut stop = bridge.shutdown_signal();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                e = heard.recv() => e,
                _ = crate::hub::stopped(&mut stop) => return,
            };
            match event {
                Ok(StoreEvent::Credentials | StoreEvent::Resync) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    if let Err(e) = registry.reload().await {
                        tracing::warn!("cannot read the credentials: {e}");
                    }
                }
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

/// `--public-url`: an https address with nothing after the host and port.
pub fn public_url(text: &str) -> Result<reqwest::Url> {
    let url =
        reqwest::Url::parse(text).map_err(|e| Error::invalid(format!("--public-url: expected an https:// address, got {text:?} ({e})")))?;
    if url.scheme() != "https" || url.host_str().is_none() || url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        invalid!("--public-url: expected an https:// address with only a host and port (the proxy's), got {text:?}");
    }
    Ok(url)
}

/// Plain HTTP beyond loopback only behind a TLS proxy, said by name (`--trust-proxy`).
fn plain_beyond_loopback(opts: &ServeOptions, addr: SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() || opts.tls.is_some() {
        return Ok(());
    }
    if !opts.trust_proxy {
        invalid!(
            "refusing to listen on {addr} without TLS: anyone on the way could read the token and every answer. \
             Add --tls (a certificate made once for this data directory; clients pin its fingerprint), \
             or --tls-cert and --tls-key, or --public-url https://… --trust-proxy behind a TLS proxy"
        );
    }
    tracing::warn!("listening on {addr} without TLS (--trust-proxy): the proxy at --public-url must be the only way in");
    Ok(())
}

/// The address a client on this machine uses for a bridge listening on `addr`: a
/// wildcard becomes the loopback of its family, IPv6 gets its brackets.
fn reachable(addr: SocketAddr) -> String {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port()).to_string()
}

/// Opens `url` in the default browser, if there is one.
pub fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    if let Err(e) =
        std::process::Command::new(program).arg(url).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn()
    {
        tracing::warn!("cannot open a browser with {program}: {e}");
    }
}

/// `askuser serve`.
pub async fn serve(opts: ServeOptions, open: bool) -> Result<()> {
    let stop = crate::terminated();
    let (notify, data_dir) = (opts.notify.clone(), opts.data_dir.clone());
    let running = start(opts).await?;
    for said in notify.channels.iter().filter_map(|c| c.describe(&data_dir)) {
        eprintln!("askuser: {said}");
    }
    eprintln!("askuser: open {}", running.open_url());
    if let Some(fp) = running.fingerprint {
        eprintln!("askuser: certificate SHA-256 fingerprint {fp}");
        eprintln!("askuser: clients elsewhere: --url {} --cert-fingerprint {fp}", running.url);
    }
    if !crate::assets::has_ui() {
        eprintln!("askuser: this build has no web UI; answer with `askuser pending` and `askuser answer`");
    }
    if open {
        open_browser(&running.open_url());
    }
    stop.await;
    eprintln!("askuser: shutting down");
    running.stop().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{plain_beyond_loopback, reachable, ServeOptions, Tls};

    #[test]
    fn plain_http_beyond_loopback_needs_tls_or_a_trusted_proxy() {
        let wide = "0.0.0.0:7823".parse().unwrap();
        let mut opts = ServeOptions::new("/nowhere".into());
        assert!(plain_beyond_loopback(&opts, "127.0.0.1:7823".parse().unwrap()).is_ok());
        assert!(plain_beyond_loopback(&opts, "[::1]:7823".parse().unwrap()).is_ok());
        let refused = plain_beyond_loopback(&opts, wide).unwrap_err().to_string();
        assert!(refused.contains("refusing to listen on 0.0.0.0:7823 without TLS"), "{refused}");
        opts.trust_proxy = true;
        assert!(plain_beyond_loopback(&opts, wide).is_ok());
        opts.trust_proxy = false;
        opts.tls = Some(Tls::SelfSigned);
        assert!(plain_beyond_loopback(&opts, wide).is_ok());
    }

    #[test]
    fn clients_reach_a_bridge_by_its_own_family() {
        assert_eq!(reachable("127.0.0.1:7823".parse().unwrap()), "127.0.0.1:7823");
        assert_eq!(reachable("0.0.0.0:7823".parse().unwrap()), "127.0.0.1:7823");
        assert_eq!(reachable("[::1]:7823".parse().unwrap()), "[::1]:7823");
        assert_eq!(reachable("[::]:7823".parse().unwrap()), "[::1]:7823");
        assert_eq!(reachable("192.168.1.5:80".parse().unwrap()), "192.168.1.5:80");
    }
}
