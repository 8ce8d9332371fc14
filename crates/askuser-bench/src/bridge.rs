//! The bridge under test: started in this process (`askuser::serve::start`) or as the
//! real binary (`askuser serve --addr 127.0.0.1:0`), each on a fresh data directory.

use anyhow::{bail, Context};
use askuser::hub::Settings;
use askuser::serve::{start, ServeOptions};
use askuser::store::Durability;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

pub const TOKEN: &str = "bench-token-0123456789abcdef";
/// How long a spawned bridge or MCP server may take to come up before the run fails.
const START_LIMIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    InProcess,
    Binary,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::InProcess => "in-process",
            Mode::Binary => "binary",
        }
    }
}

pub fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::Normal => "normal",
        Durability::Full => "full",
    }
}

enum Handle {
    InProcess { stop: oneshot::Sender<()>, thread: std::thread::JoinHandle<()> },
    Binary(Child),
}

/// A running bridge.
pub struct Bridge {
    pub url: String,
    /// The process that runs the bridge (this one, for in-process).
    pub pid: u32,
    handle: Handle,
    dir: tempfile::TempDir,
}

impl Bridge {
    pub async fn start(mode: Mode, bin: &Path, durability: Durability) -> anyhow::Result<Bridge> {
        Bridge::start_in(mode, bin, durability, fresh_dir()?).await
    }

    /// Starts on `dir` (a restart keeps the questions stored there).
    pub async fn start_in(mode: Mode, bin: &Path, durability: Durability, dir: tempfile::TempDir) -> anyhow::Result<Bridge> {
        match mode {
            Mode::InProcess => {
                let mut opts = ServeOptions::new(dir.path().to_path_buf());
                opts.addr = "127.0.0.1:0".into();
                opts.token = Some(TOKEN.into());
                opts.durability = durability;
                opts.announce = false;
                opts.settings = unthrottled();
                // On its own thread and runtime, as `askuser serve` runs (`serve::runtime`),
                // apart from the clients on the harness's runtime.
                let (url_tx, url_rx) = oneshot::channel::<anyhow::Result<String>>();
                let (stop, stopped) = oneshot::channel::<()>();
                let thread = std::thread::spawn(move || {
                    askuser::serve::runtime().block_on(async move {
                        match start(opts).await {
                            Ok(running) => {
                                let _ = url_tx.send(Ok(running.url.clone()));
                                let _ = stopped.await;
                                running.stop().await;
                            }
                            Err(e) => _ = url_tx.send(Err(e)),
                        }
                    });
                });
                let url = url_rx.await.context("the bridge's thread ended")??;
                Ok(Bridge { url, pid: std::process::id(), handle: Handle::InProcess { stop, thread }, dir })
            }
            Mode::Binary => {
                let (child, url, _) = spawn_serve(bin, dir.path(), durability, &[]).await?;
                let pid = child.id().context("the bridge exited at once")?;
                Ok(Bridge { url, pid, handle: Handle::Binary(child), dir })
            }
        }
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("{}{path}", self.url.replacen("http", "ws", 1))
    }

    /// Stops the bridge and hands back its data directory.
    pub async fn stop(self) -> tempfile::TempDir {
        match self.handle {
            Handle::InProcess { stop, thread } => {
                let _ = stop.send(());
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
            Handle::Binary(mut child) => {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            }
        }
        self.dir
    }
}

/// The bridge's default settings without the per-socket message limit, so in-process
/// runs measure the machinery rather than the limit. (`askuser serve` has no flag for
/// it: runs against the binary pace their clients below it instead; see [`PACE`].)
fn unthrottled() -> Settings {
    Settings { messages_per_second: 1_000_000, message_burst: 1_000_000, ..Settings::default() }
}

/// Messages per second each client socket stays under when the bridge enforces its
/// default limit (50 per second per socket, bursts of 100).
pub const PACE: f64 = 45.0;

impl Mode {
    /// Whether this bridge limits each socket to the default 50 messages per second.
    pub fn throttled(self) -> bool {
        self == Mode::Binary
    }
}

/// A data directory under the system's temporary directory (a real disk here, so
/// `Durability::Full`'s fsync costs what it costs).
pub fn fresh_dir() -> anyhow::Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new().prefix("askuser-bench-").tempdir()?)
}

/// `askuser serve --addr 127.0.0.1:0` (and `extra` arguments); returns once its port
/// accepts a connection.
pub async fn spawn_serve(bin: &Path, dir: &Path, durability: Durability, extra: &[&str]) -> anyhow::Result<(Child, String, Duration)> {
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--durability", durability_name(durability)])
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        .env("RUST_LOG", "warn")
        .env_remove("ASKUSER_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    // `serve` prints "askuser: open http://127.0.0.1:PORT/#token=…" once it listens.
    let url = tokio::time::timeout(START_LIMIT, async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix("askuser: open ") {
                return Ok(rest.split("/#").next().unwrap_or(rest).to_owned());
            }
            if seen.len() < 20 {
                seen.push(line);
            }
        }
        bail!("askuser serve exited before listening: {}", seen.join("\n"))
    })
    .await
    .context("askuser serve did not start in time")??;
    let addr = url.trim_start_matches("http://").to_owned();
    tokio::time::timeout(START_LIMIT, async {
        for _ in 0..10_000 {
            if tokio::net::TcpStream::connect(&addr).await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        bail!("{addr} never accepted")
    })
    .await??;
    let started_in = t0.elapsed();
    // Keep draining the log so the bridge never blocks on a full pipe.
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if std::env::var_os("BENCH_TRACE").is_some() {
                eprintln!("bridge: {line}");
            }
        }
    });
    Ok((child, url, started_in))
}

/// `askuser serve` from spawn until its port accepts, on `dir`.
pub async fn serve_startup(bin: &Path, dir: &Path) -> anyhow::Result<Duration> {
    let (mut child, _, took) = spawn_serve(bin, dir, Durability::Normal, &[]).await?;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(took)
}

/// `askuser mcp --url --token` from spawn until its answer to `initialize` is on stdout.
pub async fn mcp_startup(bin: &Path, url: &str, data_dir: &PathBuf) -> anyhow::Result<Duration> {
    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"askuser-bench","version":"0"}}}"#;
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["mcp", "--url", url, "--token", TOKEN])
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    stdin.write_all(format!("{INITIALIZE}\n").as_bytes()).await?;
    stdin.flush().await?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let line = tokio::time::timeout(START_LIMIT, lines.next_line()).await.context("askuser mcp did not answer initialize in time")??;
    let took = t0.elapsed();
    let line = line.context("askuser mcp closed stdout without answering")?;
    let reply: serde_json::Value = serde_json::from_str(&line).with_context(|| format!("not JSON-RPC: {line}"))?;
    if reply["id"] != 1 || reply.get("result").is_none() {
        bail!("unexpected answer to initialize: {line}");
    }
    drop(stdin);
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(took)
}
