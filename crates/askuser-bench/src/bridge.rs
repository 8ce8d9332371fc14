//! The bridge under test: started in this process (`askuser_bridge::start`) or as the
//! real binary (`askuser serve --addr 127.0.0.1:0`), each on a fresh data directory.

use anyhow::{bail, Context};
use askuser_bridge::client::Fingerprint;
use askuser_bridge::store::Durability;
use askuser_bridge::Settings;
use askuser_bridge::{start, ServeOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
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
                    askuser_bridge::runtime().block_on(async move {
                        match start(opts).await {
                            Ok(running) => {
                                let _ = url_tx.send(Ok(running.url.clone()));
                                let _ = stopped.await;
                                running.stop().await;
                            }
                            Err(e) => _ = url_tx.send(Err(e.into())),
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
    let (child, url, _, started_in) = spawn_serve_pinned(bin, dir, durability, extra).await?;
    Ok((child, url, started_in))
}

/// [`spawn_serve`], and with `--tls` among `extra` the certificate's pin it prints.
pub async fn spawn_serve_pinned(
    bin: &Path,
    dir: &Path,
    durability: Durability,
    extra: &[&str],
) -> anyhow::Result<(Child, String, Option<Fingerprint>, Duration)> {
    let tls = extra.contains(&"--tls");
    let t0 = Instant::now();
    let mut child = Command::new(bin)
        .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--durability", durability_name(durability)])
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        // BENCH_TRACE=1 prints the bridges' log; BENCH_LOG sets its level (RUST_LOG's form).
        .env("RUST_LOG", std::env::var("BENCH_LOG").unwrap_or_else(|_| "warn".into()))
        .env_remove("ASKUSER_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    // `serve` prints "askuser: open http://127.0.0.1:PORT/#token=…" once it listens, and
    // with `--tls` the certificate's fingerprint after it.
    let (url, pin) = tokio::time::timeout(START_LIMIT, async {
        let (mut url, mut seen) = (None::<String>, Vec::new());
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix("askuser: open ") {
                url = Some(rest.split("/#").next().unwrap_or(rest).to_owned());
                if !tls {
                    return Ok((url.unwrap_or_default(), None));
                }
            } else if let Some(fp) = line.strip_prefix("askuser: certificate SHA-256 fingerprint ") {
                let pin: Fingerprint = fp.parse().map_err(anyhow::Error::msg)?;
                return Ok((url.context("the fingerprint came before the address")?, Some(pin)));
            } else if seen.len() < 20 {
                seen.push(line);
            }
        }
        bail!("askuser serve exited before listening: {}", seen.join("\n"))
    })
    .await
    .context("askuser serve did not start in time")??;
    let addr = url.split("://").nth(1).unwrap_or(&url).to_owned();
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
    Ok((child, url, pin, started_in))
}

/// `askuser serve` from spawn until its port accepts, on `dir`.
pub async fn serve_startup(bin: &Path, dir: &Path) -> anyhow::Result<Duration> {
    let (mut child, _, took) = spawn_serve(bin, dir, Durability::Normal, &[]).await?;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(took)
}

/// The two eras of MCP that `askuser mcp` serves on one stdio connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` (protocol 2025-11-25) and `notifications/initialized`, then requests.
    Handshake,
    /// 2026-07-28: no `initialize`; a `server/discover` probe, and the client's version,
    /// capabilities and name in every request's `params._meta`.
    Stateless,
}

impl Era {
    pub const ALL: [Era; 2] = [Era::Handshake, Era::Stateless];

    pub fn name(self) -> &'static str {
        match self {
            Era::Handshake => "2025-11-25 (`initialize`)",
            Era::Stateless => "2026-07-28 (`server/discover`, `_meta`)",
        }
    }

    /// The request that opens a connection in this era.
    pub fn opening(self) -> &'static str {
        match self {
            Era::Handshake => "initialize",
            Era::Stateless => "server/discover",
        }
    }
}

/// `askuser mcp --url --token`, spoken to over its stdin and stdout as a host does.
pub struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    era: Era,
    /// The client's capabilities (in `initialize`, or in each request's `_meta`).
    capabilities: Value,
    next_id: u64,
    /// Just before the process was spawned.
    pub spawned: Instant,
}

impl Mcp {
    /// Spawns `askuser mcp --url URL --token` and opens the connection in `era`; returns
    /// it and the time from spawn until the answer to the era's opening request (see
    /// [`Era::opening`]) was on stdout.
    pub async fn connect(bin: &Path, url: &str, data_dir: &Path, era: Era) -> anyhow::Result<(Mcp, Duration)> {
        Mcp::connect_with(bin, url, data_dir, era, json!({})).await
    }

    /// [`Mcp::connect`] for a client declaring `capabilities`.
    pub async fn connect_with(bin: &Path, url: &str, data_dir: &Path, era: Era, capabilities: Value) -> anyhow::Result<(Mcp, Duration)> {
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
        let stdin = child.stdin.take().context("stdin")?;
        let lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let mut mcp = Mcp { child, stdin, lines, era, capabilities, next_id: 1, spawned: t0 };
        match era {
            Era::Handshake => {
                let params = json!({"protocolVersion": "2025-11-25", "capabilities": mcp.capabilities, "clientInfo": client_info()});
                mcp.request("initialize", params).await?;
                let took = t0.elapsed();
                mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
                Ok((mcp, took))
            }
            Era::Stateless => {
                mcp.request("server/discover", json!({})).await?;
                Ok((mcp, t0.elapsed()))
            }
        }
    }

    /// Sends a request (in 2026-07-28 with the client's `_meta`) and returns its result
    /// once its answer is on stdout; lines before it (notifications) are skipped.
    pub async fn request(&mut self, method: &str, mut params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        if self.era == Era::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": client_info(),
            });
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        tokio::time::timeout(START_LIMIT, async {
            while let Some(line) = self.lines.next_line().await? {
                let mut reply: Value = serde_json::from_str(&line).with_context(|| format!("not JSON-RPC: {line}"))?;
                if reply["id"] != id || reply.get("method").is_some() {
                    continue;
                }
                return match reply.get_mut("result") {
                    Some(result) => Ok(result.take()),
                    None => bail!("askuser mcp answered {method} with {line}"),
                };
            }
            bail!("askuser mcp closed stdout without answering {method}")
        })
        .await
        .with_context(|| format!("askuser mcp did not answer {method} within {START_LIMIT:?}"))?
    }

    async fn send(&mut self, message: Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(&message)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        Ok(self.stdin.flush().await?)
    }

    pub async fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

/// How the harness names itself to `askuser mcp`.
fn client_info() -> Value {
    json!({"name": "askuser-bench", "version": "0"})
}
