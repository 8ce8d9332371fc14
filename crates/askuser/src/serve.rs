//! Starting and stopping a bridge: bind, serve, announce, shut down cleanly.
//!
//! [`start`] runs a bridge inside the current runtime and returns a handle (tests,
//! benchmarks and `askuser mcp` use it); [`serve`] is `askuser serve`: start, write
//! `bridge.json`, wait for SIGINT/SIGTERM, stop.

use crate::config::{self, BridgeFile};
use crate::http::{self, App, Security};
use crate::hub::{Bridge, Settings};
use crate::store::Durability;
use anyhow::Context;
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
}

impl ServeOptions {
    pub fn new(data_dir: PathBuf) -> Self {
        ServeOptions {
            addr: config::DEFAULT_ADDR.into(),
            data_dir,
            token: None,
            allow_origins: vec![],
            settings: Settings::default(),
            durability: Durability::default(),
            announce: true,
        }
    }
}

/// A bridge running in this process.
pub struct Running {
    pub addr: SocketAddr,
    pub url: String,
    pub token: String,
    pub bridge: Arc<Bridge>,
    bridge_file: Option<PathBuf>,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    /// This bridge's claim on its data directory, released when it stops.
    _lock: std::fs::File,
}

impl Running {
    /// The address a person opens: the token travels in the fragment, never to a server log.
    pub fn open_url(&self) -> String {
        format!("{}/#token={}", self.url, self.token)
    }

    /// Stops accepting, tells every client, and waits for the server to finish.
    pub async fn stop(self) {
        self.bridge.shut_down();
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.server).await;
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
fn lock_dir(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let path = dir.join("bridge.lock");
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            let pid = std::process::id();
            (|| -> std::io::Result<()> {
                file.set_len(0)?;
                file.rewind()?;
                write!(file, "{pid}")
            })()
            .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            let url = std::fs::read_to_string(config::bridge_file(dir))
                .ok()
                .and_then(|t| serde_json::from_str::<BridgeFile>(&t).ok())
                .map(|f| format!(" at {}", f.url))
                .unwrap_or_default();
            anyhow::bail!(
                "another askuser bridge (pid {}{url}) already serves the data directory {}; use that one \
                 (`askuser pending`, or open its page), stop it first, or give this one another --data-dir",
                pid.trim(),
                dir.display()
            )
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

/// The question store and its WAL files readable by this user only: SQLite creates them
/// with the process's umask (often 0644), and the questions are private.
fn private_store_files(db: &std::path::Path) -> anyhow::Result<()> {
    match config::create_private(db) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("cannot open the question store {}", db.display()))
        }
        _ => {}
    }
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let path = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("cannot make {} private", path.display()))?;
        }
    }
    Ok(())
}

pub async fn start(opts: ServeOptions) -> anyhow::Result<Running> {
    config::ensure_dir(&opts.data_dir)?;
    let lock = lock_dir(&opts.data_dir)?;
    let token = config::token(opts.token.as_deref(), &opts.data_dir)?;
    let db = opts.data_dir.join("askuser.db");
    private_store_files(&db)?;
    let bridge = Bridge::open(&db, opts.durability, opts.settings.clone())?;
    bridge.start_background()?;
    let listener = match tokio::net::TcpListener::bind(&opts.addr).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "{} is already in use (another askuser bridge, or another program). \
             Choose another address with --addr, or --addr 127.0.0.1:0 for any free port",
            opts.addr
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot listen on {}", opts.addr)),
    };
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        tracing::warn!("listening on {addr}, which is not loopback: anyone who can reach it and has the token can answer");
    }
    let security = Security::new(token.clone(), addr, &opts.allow_origins);
    let app = App { bridge: bridge.clone(), security: Arc::new(security) };
    let (stop, mut stopped) = watch::channel(false);
    let router = http::router(app);
    // Small frames go out at once: with Nagle, a second frame waits for the peer's
    // delayed ACK and every round trip costs 40 ms (BENCHMARKS.md).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|s| *s).await;
            })
            .await
    });
    let host = if addr.ip().is_unspecified() || addr.ip().is_loopback() { "127.0.0.1".to_owned() } else { addr.ip().to_string() };
    let url = format!("http://{host}:{}", addr.port());
    let bridge_file = if opts.announce {
        let path = config::bridge_file(&opts.data_dir);
        let file = BridgeFile { url: url.clone(), token: token.clone(), pid: std::process::id() };
        config::write_private(&path, serde_json::to_string_pretty(&file)?.as_bytes())?;
        Some(path)
    } else {
        None
    };
    Ok(Running { addr, url, token, bridge, bridge_file, stop, server, _lock: lock })
}

/// Resolves when SIGINT or SIGTERM arrives.
pub async fn terminated() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
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
pub async fn serve(opts: ServeOptions, open: bool) -> anyhow::Result<()> {
    let running = start(opts).await?;
    eprintln!("askuser: open {}", running.open_url());
    if !crate::assets::has_ui() {
        eprintln!("askuser: this build has no web UI; answer with `askuser pending` and `askuser answer`");
    }
    if open {
        open_browser(&running.open_url());
    }
    terminated().await;
    eprintln!("askuser: shutting down");
    running.stop().await;
    Ok(())
}
