//! # askuser-bench
//!
//! Measures what the bridge adds to a question's round trip, under load, and at
//! start-up, and prints Markdown tables (progress goes to stderr).
//!
//! ```sh
//! scripts/bench            # release build, full run (figures in BENCHMARKS.md)
//! scripts/bench --smoke    # seconds; keeps the harness working, asserts no timings
//! askuser-bench [--smoke] [--bin target/release/askuser] [--only floor,sequential,concurrent,load,big,startup,mcp,live,browser,terminal,tls,push,shared,sizes,phone] [--bridges 0,1,2] [--phone-loads N]
//! BENCH_TRACE=1 askuser-bench …   # every browser prints what it receives (debugging)
//! ```
//!
//! Every figure is measured from the outside, over loopback TCP, by clients running in
//! this process: an agent asks (HTTP `POST /v1/ask` or the agent socket), the bridge
//! stores the question and pushes it to every browser socket, the browser that owns
//! the question answers at once, the bridge stores the answer and returns the result.
//! The floor is a bare tokio-tungstenite echo on the same machine, in the same run.
//!
//! # Layout
//! - [`bridge`]: the bridge under test, in this process or as `askuser serve`; start-up timing;
//!   `askuser mcp` spoken to in either MCP era.
//! - [`clients`]: agents, browser tabs, the echo floor.
//! - [`live`]: a live question through `askuser mcp` (per era, as a task) against
//!   `POST /v1/ask`, quiet and with both cores busy.
//! - [`browser`]: the served page in headless Chromium: message and key to paint.
//! - [`phone`]: a phone on Slow 4G opening one waiting question, askuser against a peer.
//! - [`terminal`]: the terminal dialog: key to frame.
//! - [`tls`]: what TLS adds to a request, and to a new connection.
//! - [`push`]: Web Push to many devices: ask to last push, CPU per push.
//! - [`shared`]: one SQLite bridge against three bridges sharing one PostgreSQL database.
//! - [`sizes`]: what a browser downloads (the app, the embed package), raw and gzip.
//! - [`stats`]: percentiles and `/proc` samples.

mod bridge;
mod browser;
mod clients;
mod live;
mod phone;
mod push;
mod shared;
mod sizes;
mod stats;
mod terminal;
mod tls;

use anyhow::{bail, Context};
use askuser_bridge::store::Durability;
use bridge::{durability_name, Bridge, Era, Mcp, Mode};
use clients::{Browsers, Seen};
use stats::{mib, ms, ratio, reset_peak, sample, ProcSample, Summary};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How many of everything a run uses.
#[derive(Debug, Clone, Copy)]
struct Counts {
    sequential: usize,
    agents: usize,
    per_agent: usize,
    concurrent_browsers: usize,
    connections: usize,
    per_connection: usize,
    load_browsers: usize,
    probes: usize,
    snapshots: usize,
    /// Pending questions of ~1 MB each, and tabs that open on them at once.
    big_questions: usize,
    big_tabs: usize,
    startups: usize,
    /// `tools/call`s timed on one `askuser mcp` connection, per era.
    mcp_calls: usize,
    /// Live questions (answered by a browser) per way of asking, quiet and loaded.
    live_calls: usize,
    live_warmup: usize,
    warmup: usize,
    browser: browser::Counts,
    /// Keys pressed in the terminal dialog.
    terminal_keys: usize,
    /// Requests on a kept connection, and new connections, with and without TLS.
    tls_requests: usize,
    tls_connections: usize,
    tls_questions: usize,
    /// Subscribed devices, and questions pushed to all of them.
    push_devices: usize,
    push_questions: usize,
    /// One SQLite bridge against three on one PostgreSQL database.
    shared: shared::Counts,
    /// Page loads per figure on the phone (the median is shown).
    phone_loads: usize,
    /// Each scenario must finish within this.
    limit: Duration,
}

const FULL: Counts = Counts {
    sequential: 1_000,
    agents: 100,
    per_agent: 20,
    concurrent_browsers: 10,
    connections: 1_000,
    per_connection: 10,
    load_browsers: 10,
    probes: 200,
    snapshots: 5,
    big_questions: 100,
    big_tabs: 5,
    startups: 20,
    mcp_calls: 1_000,
    live_calls: 200,
    live_warmup: 10,
    warmup: 50,
    browser: browser::Counts { asks: 30, keys: 5, pending: 1_000, agents: 100, loads: 10 },
    terminal_keys: 2_000,
    tls_requests: 2_000,
    tls_connections: 300,
    tls_questions: 300,
    push_devices: 100,
    push_questions: 20,
    shared: shared::Counts { round_trips: 500, fanouts: 500, agents: 1_000, per_agent: 10, snapshots: 5, warmup: 20 },
    phone_loads: 5,
    limit: Duration::from_secs(300),
};

const SMOKE: Counts = Counts {
    sequential: 20,
    agents: 5,
    per_agent: 4,
    concurrent_browsers: 2,
    connections: 20,
    per_connection: 5,
    load_browsers: 3,
    probes: 10,
    snapshots: 2,
    big_questions: 3,
    big_tabs: 2,
    startups: 2,
    mcp_calls: 5,
    live_calls: 3,
    live_warmup: 1,
    warmup: 2,
    browser: browser::Counts { asks: 2, keys: 2, pending: 20, agents: 4, loads: 2 },
    terminal_keys: 20,
    tls_requests: 20,
    tls_connections: 5,
    tls_questions: 5,
    push_devices: 5,
    push_questions: 2,
    shared: shared::Counts { round_trips: 10, fanouts: 10, agents: 10, per_agent: 2, snapshots: 1, warmup: 2 },
    phone_loads: 1,
    limit: Duration::from_secs(60),
};

/// The bridges every scenario runs against.
const VARIANTS: [(Mode, Durability); 3] =
    [(Mode::InProcess, Durability::Normal), (Mode::Binary, Durability::Normal), (Mode::Binary, Durability::Full)];

/// The size of an `ask` frame, so the echo floor moves as many bytes.
const PAYLOAD: usize = 400;

struct Args {
    smoke: bool,
    bin: PathBuf,
    only: Option<Vec<String>>,
    /// Bridge variants to run, by index into [`VARIANTS`] (all by default).
    bridges: Option<Vec<usize>>,
    /// Page loads per figure in the phone part, instead of the mode's count.
    phone_loads: Option<usize>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut smoke = false;
    let mut bin = None;
    let mut only = None;
    let mut bridges = None;
    let mut phone_loads = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => smoke = true,
            "--bin" => bin = Some(PathBuf::from(it.next().context("--bin needs a path")?)),
            "--only" => only = Some(it.next().context("--only needs a list")?.split(',').map(str::to_owned).collect()),
            "--bridges" => {
                let list = it.next().context("--bridges needs a list of 0-2")?;
                bridges = Some(
                    list.split(',').map(|b| b.parse().context("--bridges takes indices 0-2")).collect::<anyhow::Result<Vec<usize>>>()?,
                );
            }
            "--phone-loads" => {
                phone_loads = Some(it.next().context("--phone-loads needs a number")?.parse().context("--phone-loads takes a number")?);
            }
            "-h" | "--help" => {
                println!("usage: askuser-bench [--smoke] [--bin PATH_TO_ASKUSER] [--only floor,sequential,concurrent,load,big,startup,mcp,live,browser,terminal,tls,push,shared,sizes,phone] [--bridges 0,1,2] [--phone-loads N]\n  bridges: 0 in-process, 1 binary, 2 binary with --durability full\n  phone-loads: page loads per figure on the phone (default 5, smoke 1)");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}; see --help"),
        }
    }
    // Default: the askuser binary next to this one (target/<profile>/).
    let bin = match bin {
        Some(b) => b,
        None => std::env::current_exe()?.with_file_name("askuser"),
    };
    if !bin.exists() {
        bail!("{} does not exist; build it (cargo build --release -p askuser) or pass --bin", bin.display());
    }
    Ok(Args { smoke, bin, only, bridges, phone_loads })
}

impl Args {
    fn wants(&self, part: &str) -> bool {
        self.only.as_ref().is_none_or(|o| o.iter().any(|p| p == part))
    }

    fn variants(&self) -> Vec<(Mode, Durability)> {
        VARIANTS.iter().enumerate().filter(|(i, _)| self.bridges.as_ref().is_none_or(|b| b.contains(i))).map(|(_, v)| *v).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Http,
    Ws,
    /// An approval (`POST /v1/approve`) instead of a question.
    Approve,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Http => "HTTP",
            Transport::Ws => "agent WS",
            Transport::Approve => "HTTP approval",
        }
    }
}

/// One line of the round-trip table.
struct Row {
    scenario: String,
    bridge: String,
    transport: String,
    durability: String,
    /// Asks were spaced to stay under the bridge's per-socket message limit, so the
    /// throughput is the pace's, not the bridge's.
    paced: bool,
    latency: Summary,
    wall: Duration,
    /// CPU and peak RSS of the bridge's process during the measured part.
    cpu: Option<Duration>,
    peak_kib: Option<u64>,
    /// The floor row this one is compared with.
    floor: Option<usize>,
}

impl Row {
    fn throughput(&self) -> f64 {
        self.latency.n as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The gap between one agent's asks that keeps every socket under the binary's
/// per-socket message limit (each browser answers 1/`browsers` of the questions).
fn pace(agents: usize, browsers: usize) -> Duration {
    Duration::from_secs_f64(agents as f64 / (bridge::PACE * browsers as f64))
}

async fn floor(clients: usize, per_client: usize, label: &str, gap: Option<Duration>) -> anyhow::Result<Row> {
    eprintln!("floor: echo, {clients} client(s) × {per_client}, gap {gap:?}");
    // Warm up the loopback path and the allocator, as the askuser scenarios do.
    clients::echo_floor(clients, 5, PAYLOAD, Duration::ZERO).await?;
    let (lat, wall) = clients::echo_floor(clients, per_client, PAYLOAD, gap.unwrap_or_default()).await?;
    Ok(Row {
        scenario: label.into(),
        bridge: if gap.is_some() { "echo floor, paced" } else { "echo floor" }.into(),
        transport: "WS echo".into(),
        durability: "–".into(),
        paced: gap.is_some(),
        latency: Summary::of(lat),
        wall,
        cpu: None,
        peak_kib: None,
        floor: None,
    })
}

/// `agents` agents each asking `per_agent` questions one after another, answered by
/// `browsers` browser tabs.
#[allow(clippy::too_many_arguments)]
async fn round_trips(
    args: &Args,
    c: &Counts,
    scenario: &str,
    mode: Mode,
    durability: Durability,
    transport: Transport,
    agents: usize,
    per_agent: usize,
    browsers: usize,
    floor: usize,
) -> anyhow::Result<Row> {
    eprintln!(
        "{scenario}: {} {} {}, {agents} agent(s) × {per_agent}, {browsers} browser(s)",
        mode.name(),
        transport.name(),
        durability_name(durability)
    );
    let bridge = Bridge::start(mode, &args.bin, durability).await?;
    let base = bridge.url.clone();
    let base_ws = bridge.ws_url("");
    let tabs = Browsers::open(&base, &base_ws, browsers, None).await?;
    let ticks = stats::clock_ticks();
    // Against a bridge that limits each socket to 50 messages/s, every agent waits
    // between asks so that no browser (each answers 1/browsers of the questions) and no
    // agent socket goes past it. The latency of each question is unaffected; the
    // throughput is then the pace's.
    let gap = mode.throttled().then(|| pace(agents, browsers));
    let run = |first: usize, per_agent: usize| {
        let mut tasks = Vec::new();
        for a in 0..agents {
            let (base, base_ws) = (base.clone(), base_ws.clone());
            tasks.push(tokio::spawn(async move {
                let session = format!("s-{a}");
                // Interleaved, so the questions asked at one moment spread over the browsers.
                let ids = (0..per_agent).map(move |k| format!("rt-{}", first + k * agents + a));
                let mut out = Vec::with_capacity(per_agent);
                let mut next = tokio::time::Instant::now();
                let mut pace = || {
                    let at = next;
                    next += gap.unwrap_or_default();
                    tokio::time::sleep_until(at)
                };
                match transport {
                    Transport::Http => {
                        let http = askuser_bridge::client::http_client(None);
                        for id in ids {
                            pace().await;
                            out.push(clients::http_ask(&http, &base, &id, &session).await?);
                        }
                    }
                    Transport::Approve => {
                        let http = askuser_bridge::client::http_client(None);
                        for id in ids {
                            pace().await;
                            out.push(clients::http_approve(&http, &base, &id, &session).await?);
                        }
                    }
                    Transport::Ws => {
                        let mut ws = clients::agent_socket(&base_ws).await?;
                        for id in ids {
                            pace().await;
                            out.push(clients::ws_ask(&mut ws, &id, &session).await?);
                        }
                    }
                }
                anyhow::Ok(out)
            }));
        }
        async move {
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await??);
            }
            anyhow::Ok(all)
        }
    };
    // Warm-up (not measured): connections, statement cache, allocator.
    run(10_000_000, c.warmup.div_ceil(agents).max(1)).await?;
    reset_peak(bridge.pid);
    let before = sample(bridge.pid, ticks)?;
    let t0 = Instant::now();
    let latencies = run(0, per_agent).await?;
    let wall = t0.elapsed();
    let after = sample(bridge.pid, ticks)?;
    let report = tabs.close().await?;
    bridge.stop().await;
    if latencies.len() != agents * per_agent || report.errors > 0 || report.resyncs > 0 {
        bail!(
            "{scenario}: {} of {} round trips, {} browser errors, {} resyncs",
            latencies.len(),
            agents * per_agent,
            report.errors,
            report.resyncs
        );
    }
    Ok(Row {
        scenario: scenario.into(),
        bridge: mode.name().into(),
        transport: transport.name().into(),
        durability: durability_name(durability).into(),
        paced: gap.is_some(),
        latency: Summary::of(latencies),
        wall,
        cpu: Some(after.cpu.saturating_sub(before.cpu)),
        peak_kib: Some(after.hwm_kib),
        floor: Some(floor),
    })
}

/// The 1,000-connection scenario's figures.
struct Load {
    column: String,
    connections: usize,
    pending: usize,
    fill: Duration,
    after_fill: ProcSample,
    snapshot: Summary,
    snapshot_bytes: usize,
    /// Agent's ask sent → the last browser has the `asked` event.
    fanout_all: Summary,
    /// First browser has it → last browser has it.
    fanout_spread: Summary,
    round_trip: Summary,
    resyncs: usize,
    peak_kib: u64,
    cpu: Duration,
    dir: Option<tempfile::TempDir>,
}

async fn load(args: &Args, c: &Counts, mode: Mode, durability: Durability) -> anyhow::Result<Load> {
    let (conns, per) = (c.connections, c.per_connection);
    eprintln!("load: {} {}, {conns} agent sockets × {per} pending, {} browsers", mode.name(), durability_name(durability), c.load_browsers);
    let bridge = Bridge::start(mode, &args.bin, durability).await?;
    let (base, base_ws) = (bridge.url.clone(), bridge.ws_url(""));
    let ticks = stats::clock_ticks();
    reset_peak(bridge.pid);
    let start = sample(bridge.pid, ticks)?;
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<Seen>();
    let tabs = Browsers::open(&base, &base_ws, c.load_browsers, Some(seen_tx)).await?;

    // Fill: `conns` agent sockets, each holding `per` pending questions.
    let (stop, stopped) = watch::channel(false);
    let t0 = Instant::now();
    let holders = clients::hold_pending(std::slice::from_ref(&base_ws), conns, per, stopped).await?;
    let fill = t0.elapsed();
    let after_fill = sample(bridge.pid, ticks)?;
    eprintln!("load: filled {} in {:.2} s; bridge RSS {} MiB", conns * per, fill.as_secs_f64(), mib(after_fill.rss_kib));

    // A new browser's snapshot.
    let mut snaps = Vec::new();
    let mut snapshot_bytes = 0;
    for _ in 0..c.snapshots {
        let (took, bytes, questions) = clients::snapshot_once(&base, &base_ws).await?;
        if questions != conns * per {
            bail!("the snapshot has {questions} questions, expected {}", conns * per);
        }
        snaps.push(took);
        snapshot_bytes = bytes;
    }

    // Probes: one more agent asks, one question at a time; every browser records when
    // it sees the question, the owner answers.
    let mut probe = clients::agent_socket(&base_ws).await?;
    let mut sent: HashMap<String, Instant> = HashMap::new();
    let mut rtt = Vec::new();
    let gap = if mode.throttled() { Duration::from_secs_f64(1.0 / bridge::PACE) } else { Duration::ZERO };
    let mut next = tokio::time::Instant::now();
    for i in 0..c.probes {
        tokio::time::sleep_until(next).await;
        next += gap;
        let id = format!("rt-{i}");
        sent.insert(id.clone(), Instant::now());
        rtt.push(clients::ws_ask(&mut probe, &id, "probe").await?);
    }
    // Let the last fan-out arrive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut arrivals: HashMap<String, Vec<Instant>> = HashMap::new();
    while let Ok(s) = seen_rx.try_recv() {
        debug_assert!(s.browser < c.load_browsers);
        arrivals.entry(s.id).or_default().push(s.at);
    }
    let (mut all, mut spread) = (Vec::new(), Vec::new());
    for (id, at) in &arrivals {
        let (Some(first), Some(last)) = (at.iter().min(), at.iter().max()) else { continue };
        if at.len() == c.load_browsers {
            all.push(*last - sent[id]);
            spread.push(*last - *first);
        }
    }
    if all.len() != c.probes {
        bail!("only {} of {} probe questions reached every browser", all.len(), c.probes);
    }
    let end = sample(bridge.pid, ticks)?;
    let _ = stop.send(true);
    for h in holders {
        let _ = tokio::time::timeout(Duration::from_secs(10), h).await;
    }
    let report = tabs.close().await?;
    if report.errors > 0 {
        bail!("load: the browsers got {} errors", report.errors);
    }
    let dir = bridge.stop().await;
    Ok(Load {
        column: format!("{}, {}", mode.name(), durability_name(durability)),
        connections: conns,
        pending: conns * per,
        fill,
        after_fill,
        snapshot: Summary::of(snaps),
        snapshot_bytes,
        fanout_all: Summary::of(all),
        fanout_spread: Summary::of(spread),
        round_trip: Summary::of(rtt),
        resyncs: report.resyncs,
        peak_kib: end.hwm_kib,
        cpu: end.cpu.saturating_sub(start.cpu),
        dir: (mode == Mode::Binary).then_some(dir),
    })
}

struct Startup {
    what: String,
    times: Summary,
}

async fn startups(args: &Args, c: &Counts, loaded: Option<(tempfile::TempDir, usize)>) -> anyhow::Result<Vec<Startup>> {
    let mut out = Vec::new();
    eprintln!("startup: askuser serve, fresh data directory × {}", c.startups);
    let mut times = Vec::new();
    for _ in 0..c.startups {
        let dir = bridge::fresh_dir()?;
        times.push(bridge::serve_startup(&args.bin, dir.path()).await?);
    }
    out.push(Startup { what: "`askuser serve` until its port accepts (fresh data directory)".into(), times: Summary::of(times) });

    let mut times = Vec::new();
    let dir = bridge::fresh_dir()?;
    for _ in 0..c.startups {
        times.push(bridge::serve_startup(&args.bin, dir.path()).await?);
    }
    out.push(Startup { what: "`askuser serve` until its port accepts (existing, empty store)".into(), times: Summary::of(times) });

    if let Some((dir, pending)) = loaded {
        let n = c.startups.min(5);
        eprintln!("startup: askuser serve with {pending} pending questions stored × {n}");
        let mut times = Vec::new();
        for _ in 0..n {
            times.push(bridge::serve_startup(&args.bin, dir.path()).await?);
        }
        out.push(Startup {
            what: format!("`askuser serve` until its port accepts ({pending} pending questions stored)"),
            times: Summary::of(times),
        });
    }

    eprintln!("startup: askuser mcp initialize × {}", c.startups);
    let running = Bridge::start(Mode::Binary, &args.bin, Durability::Normal).await?;
    let mcp_dir = bridge::fresh_dir()?;
    let mut times = Vec::new();
    for _ in 0..c.startups {
        let (mcp, took) = Mcp::connect(&args.bin, &running.url, mcp_dir.path(), Era::Handshake).await?;
        mcp.stop().await;
        times.push(took);
    }
    running.stop().await;
    out.push(Startup { what: "`askuser mcp --url --token` until it answers `initialize`".into(), times: Summary::of(times) });
    Ok(out)
}

/// One line of the per-era MCP table.
struct McpFigure {
    era: Era,
    what: String,
    times: Summary,
}

/// `askuser mcp --url --token` in each era: spawn until connected (and until its tools are
/// listed), then the raw round trip on one connection: `tools/call` with `{"id": ID}` for a
/// question answered before, which the server reads from the bridge (`GET
/// /v1/questions/ID`) and returns at once.
async fn mcp_eras(args: &Args, c: &Counts) -> anyhow::Result<Vec<McpFigure>> {
    const ANSWERED: &str = "mcp-answered";
    let running = Bridge::start(Mode::Binary, &args.bin, Durability::Normal).await?;
    clients::answered_question(&running.url, ANSWERED).await?;
    let dir = bridge::fresh_dir()?;
    let call = serde_json::json!({"name": askuser::mcp::TOOL, "arguments": {"id": ANSWERED}});
    let mut out = Vec::new();
    for era in Era::ALL {
        eprintln!("mcp: {}, connect × {}, tools/call × {}", era.name(), c.startups, c.mcp_calls);
        let (mut opened, mut listed) = (Vec::new(), Vec::new());
        for _ in 0..c.startups {
            let (mut mcp, took) = Mcp::connect(&args.bin, &running.url, dir.path(), era).await?;
            opened.push(took);
            let tools = mcp.request("tools/list", serde_json::json!({})).await?;
            listed.push(mcp.spawned.elapsed());
            mcp.stop().await;
            if tools["tools"][0]["name"] != askuser::mcp::TOOL {
                bail!("mcp: {}: tools/list answered {tools}", era.name());
            }
        }
        let (mut mcp, _) = Mcp::connect(&args.bin, &running.url, dir.path(), era).await?;
        mcp.request("tools/list", serde_json::json!({})).await?;
        let mut calls = Vec::with_capacity(c.mcp_calls);
        // The warm-up connects the server to the bridge (its first call does).
        for i in 0..c.warmup + c.mcp_calls {
            let params = call.clone();
            let t0 = Instant::now();
            let result = mcp.request("tools/call", params).await?;
            let took = t0.elapsed();
            if result["structuredContent"]["answered"] != true {
                bail!("mcp: {}: tools/call answered {result}", era.name());
            }
            if i >= c.warmup {
                calls.push(took);
            }
        }
        mcp.stop().await;
        let opening = era.opening();
        out.push(McpFigure { era, what: format!("spawn → `{opening}` answered"), times: Summary::of(opened) });
        out.push(McpFigure { era, what: format!("spawn → `{opening}` + `tools/list` answered"), times: Summary::of(listed) });
        out.push(McpFigure {
            era,
            what: "round trip: `tools/call` `{\"id\"}` of an answered question → result".into(),
            times: Summary::of(calls),
        });
    }
    running.stop().await;
    Ok(out)
}

fn mcp_table(figures: &[McpFigure]) -> String {
    let mut t = String::from("| era | what | n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|--:|--:|--:|--:|--:|\n");
    for f in figures {
        let x = &f.times;
        let _ = writeln!(t, "| {} | {} | {} | {} | {} | {} | {} |", f.era.name(), f.what, x.n, ms(x.p50), ms(x.p90), ms(x.p99), ms(x.max));
    }
    t
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpus} CPUs (nproc), {model}, {:.1} GiB memory, Linux {}", mem_kib as f64 / 1024.0 / 1024.0, kernel.trim())
}

fn round_trip_table(rows: &[Row]) -> String {
    let mut t = String::new();
    t.push_str("| scenario | bridge | transport | durability | n | p50 ms | p90 ms | p99 ms | max ms | questions/s | p50 ×floor | p99 ×floor | throughput floor÷this | bridge CPU µs/question | bridge peak RSS MiB |\n");
    t.push_str("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in rows {
        let l = &r.latency;
        let (p50x, p99x, tx) = match r.floor.map(|f| &rows[f]) {
            Some(f) => (
                ratio(l.p50.as_secs_f64(), f.latency.p50.as_secs_f64()),
                ratio(l.p99.as_secs_f64(), f.latency.p99.as_secs_f64()),
                ratio(f.throughput(), r.throughput()),
            ),
            None => ("1.0×".into(), "1.0×".into(), "1.0×".into()),
        };
        let cpu = r.cpu.map_or("–".into(), |c| format!("{:.0}", c.as_secs_f64() * 1e6 / l.n.max(1) as f64));
        let rss = r.peak_kib.map_or("–".into(), mib);
        let (tput, tx) =
            if r.paced { (format!("{:.0} (paced)", r.throughput()), "paced".to_owned()) } else { (format!("{:.0}", r.throughput()), tx) };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {tput} | {p50x} | {p99x} | {tx} | {cpu} | {rss} |",
            r.scenario,
            r.bridge,
            r.transport,
            r.durability,
            l.n,
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.max)
        );
    }
    t
}

fn load_table(loads: &[Load], floor_p50: Option<Duration>) -> String {
    let mut t = String::new();
    let _ = write!(t, "| | ");
    t.push_str(&loads.iter().map(|l| l.column.clone()).collect::<Vec<_>>().join(" | "));
    t.push_str(" |\n|---|");
    t.push_str(&"--:|".repeat(loads.len()));
    t.push('\n');
    let mut row = |name: &str, f: &dyn Fn(&Load) -> String| {
        let _ = writeln!(t, "| {name} | {} |", loads.iter().map(f).collect::<Vec<_>>().join(" | "));
    };
    let s3 = |s: &Summary| format!("{} / {} / {}", ms(s.p50), ms(s.p99), ms(s.max));
    row("agent connections / pending questions", &|l| format!("{} / {}", l.connections, l.pending));
    row("fill: time (asks/s)", &|l| format!("{:.2} s ({:.0}/s)", l.fill.as_secs_f64(), l.pending as f64 / l.fill.as_secs_f64()));
    row("process RSS after fill, MiB", &|l| mib(l.after_fill.rss_kib));
    row("process peak RSS (VmHWM), MiB", &|l| mib(l.peak_kib));
    row("new browser's snapshot, ms p50 / p99 / max", &|l| s3(&l.snapshot));
    row("snapshot size, KiB", &|l| format!("{:.0}", l.snapshot_bytes as f64 / 1024.0));
    row("fan-out: ask sent → last of the browsers has it, ms p50 / p99 / max", &|l| s3(&l.fanout_all));
    row("fan-out: first → last browser, ms p50 / p99 / max", &|l| s3(&l.fanout_spread));
    row("round trip under this load, ms p50 / p99 / max", &|l| s3(&l.round_trip));
    if let Some(f) = floor_p50 {
        row("round trip p50 ×floor", &|l| ratio(l.round_trip.p50.as_secs_f64(), f.as_secs_f64()));
    }
    row("browser resyncs (fell behind the event buffer)", &|l| l.resyncs.to_string());
    row("process CPU for the whole scenario, s", &|l| format!("{:.2}", l.cpu.as_secs_f64()));
    t
}

/// Big pending questions, then tabs opening at once: what the bridge's memory does.
struct Big {
    questions: usize,
    bytes: usize,
    tabs: usize,
    per_tab: usize,
    took: Duration,
    before: ProcSample,
    peak: ProcSample,
    after: ProcSample,
}

/// A question of about 1 MiB (the body limit): 50 options with long descriptions and previews.
fn big_request(id: &str) -> serde_json::Value {
    let options: Vec<serde_json::Value> = (0..50)
        .map(|j| serde_json::json!({"label": format!("option {j}"), "description": "d".repeat(1_900), "preview": "p".repeat(19_000)}))
        .collect();
    serde_json::json!({"id": id, "questions": [{"question": format!("Big question {id}?"), "options": options}]})
}

async fn big(args: &Args, c: &Counts) -> anyhow::Result<Big> {
    let bridge = Bridge::start(Mode::Binary, &args.bin, Durability::Normal).await?;
    let (http, ticks) = (askuser_bridge::client::http_client(None), stats::clock_ticks());
    let mut bytes = 0;
    for i in 0..c.big_questions {
        let body = serde_json::to_vec(&big_request(&format!("big-{i}")))?;
        bytes = body.len();
        let r = http
            .post(format!("{}/v1/ask?wait=false", bridge.url))
            .bearer_auth(bridge::TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        if r.status() != 202 {
            bail!("big question {i}: {}", r.status());
        }
    }
    reset_peak(bridge.pid);
    let before = sample(bridge.pid, ticks)?;
    let ws = bridge.ws_url("");
    let t0 = Instant::now();
    let tabs: Vec<_> = (0..c.big_tabs)
        .map(|_| {
            let (base, ws) = (bridge.url.clone(), ws.clone());
            tokio::spawn(async move { clients::snapshot_once(&base, &ws).await })
        })
        .collect();
    let mut per_tab = 0;
    for t in tabs {
        let (_, size, questions) = t.await??;
        if questions != c.big_questions {
            bail!("a tab's snapshot held {questions} of {} questions", c.big_questions);
        }
        per_tab = size;
    }
    let took = t0.elapsed();
    let peak = sample(bridge.pid, ticks)?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = sample(bridge.pid, ticks)?;
    bridge.stop().await;
    Ok(Big { questions: c.big_questions, bytes, tabs: c.big_tabs, per_tab, took, before, peak, after })
}

fn big_table(b: &Big) -> String {
    format!(
        "## {} pending questions of {} bytes, {} tabs opening at once\n\n\
         | snapshot per tab | all tabs took | RSS before MiB | peak RSS MiB | RSS after MiB |\n|--:|--:|--:|--:|--:|\n\
         | {:.1} MB | {} ms | {} | {} | {} |\n",
        b.questions,
        b.bytes,
        b.tabs,
        b.per_tab as f64 / 1e6,
        ms(b.took),
        mib(b.before.rss_kib),
        mib(b.peak.hwm_kib),
        mib(b.after.rss_kib)
    )
}

fn startup_table(s: &[Startup]) -> String {
    let mut t = String::from("| what | n | p50 ms | p90 ms | max ms |\n|---|--:|--:|--:|--:|\n");
    for x in s {
        let _ = writeln!(t, "| {} | {} | {} | {} | {} |", x.what, x.times.n, ms(x.times.p50), ms(x.times.p90), ms(x.times.max));
    }
    t
}

fn browser_table(b: &browser::Report) -> String {
    let mut t = format!(
        "## Browser: bridge message or key → painted\n\n{}, headless, 1000×800, software rendering. From the moment the \
         message or key reached the page until the next frame was rendered. *60 Hz*: frames every {} ms, as on a person's \
         screen, so each figure includes waiting for the next frame. *Unthrottled*: `--disable-frame-rate-limit \
         --disable-gpu-vsync` (a frame every {} ms), so the figure is the step's own cost.\n\n\
         | step | n | 60 Hz p50 ms | p90 | p99 | max | within one frame | unthrottled p50 ms | p90 | p99 | max |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
        b.chromium,
        ms(b.frame),
        ms(b.frame_unthrottled)
    );
    for s in &b.steps {
        let (a, u) = (&s.at_60hz, &s.unthrottled);
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {:.0} % | {} | {} | {} | {} |",
            s.what,
            a.n,
            ms(a.p50),
            ms(a.p90),
            ms(a.p99),
            ms(a.max),
            s.in_frame * 100.0,
            ms(u.p50),
            ms(u.p90),
            ms(u.p99),
            ms(u.max)
        );
    }
    t
}

async fn run(args: Args) -> anyhow::Result<()> {
    let c = if args.smoke { SMOKE } else { FULL };
    // Each in-process connection costs two descriptors (both ends live here).
    let want = (c.connections as u64 + 100) * 2 + 256;
    let got = rlimit::increase_nofile_limit(want).context("raising the open-file limit")?;
    if got < want {
        bail!("the open-file limit is {got}, the load scenario needs {want}: raise `ulimit -n`");
    }
    let started = Instant::now();
    let limit = |what: &'static str| move |_| anyhow::anyhow!("{what} took longer than {:?}", c.limit);
    let mut out = String::new();
    let _ = writeln!(out, "machine: {}\n", machine());
    let _ = writeln!(
        out,
        "askuser binary: {}; mode: {}\n",
        args.bin.display(),
        if args.smoke { "smoke (tiny counts; figures mean nothing)" } else { "full" }
    );

    let mut rows: Vec<Row> = Vec::new();
    let mut floor1 = None;
    // Against the binary, agents are paced (see `pace`): compared with an echo paced alike.
    let paced = args.variants().iter().any(|(m, _)| m.throttled());
    let mut paced1 = None;
    if args.wants("floor") || args.wants("sequential") {
        floor1 = Some(rows.len());
        rows.push(tokio::time::timeout(c.limit, floor(1, c.sequential, "1 client sequential", None)).await.map_err(limit("floor"))??);
    }
    if args.wants("sequential") && paced {
        paced1 = Some(rows.len());
        let f = floor(1, c.sequential, "1 client sequential", Some(pace(1, 1)));
        rows.push(tokio::time::timeout(c.limit, f).await.map_err(limit("floor"))??);
    }
    if args.wants("sequential") {
        for (mode, durability) in args.variants() {
            let f = if mode.throttled() { paced1 } else { floor1 }.unwrap_or(0);
            for transport in [Transport::Http, Transport::Ws, Transport::Approve] {
                let fut = round_trips(&args, &c, "1 agent sequential", mode, durability, transport, 1, c.sequential, 1, f);
                rows.push(tokio::time::timeout(c.limit, fut).await.map_err(limit("sequential"))??);
            }
        }
    }
    if args.wants("concurrent") {
        let label = format!("{} clients concurrent", c.agents);
        let unpaced = rows.len();
        rows.push(tokio::time::timeout(c.limit, floor(c.agents, c.per_agent, &label, None)).await.map_err(limit("floor"))??);
        let paced = paced.then_some(rows.len());
        if paced.is_some() {
            let f = floor(c.agents, c.per_agent, &label, Some(pace(c.agents, c.concurrent_browsers)));
            rows.push(tokio::time::timeout(c.limit, f).await.map_err(limit("floor"))??);
        }
        let scenario = format!("{} agents concurrent, {} browsers", c.agents, c.concurrent_browsers);
        for (mode, durability) in args.variants() {
            let f = if mode.throttled() { paced.unwrap_or(unpaced) } else { unpaced };
            for transport in [Transport::Http, Transport::Ws] {
                let fut = round_trips(&args, &c, &scenario, mode, durability, transport, c.agents, c.per_agent, c.concurrent_browsers, f);
                rows.push(tokio::time::timeout(c.limit, fut).await.map_err(limit("concurrent"))??);
            }
        }
    }
    if !rows.is_empty() {
        let _ =
            writeln!(out, "## Round trips\n\nagent ask → browser event → answer → agent result; {} warm-up questions first.\n", c.warmup);
        out.push_str(&round_trip_table(&rows));
        out.push('\n');
    }

    let mut loaded = None;
    if args.wants("load") {
        let mut loads = Vec::new();
        for (mode, durability) in args.variants() {
            let mut l = tokio::time::timeout(c.limit, load(&args, &c, mode, durability)).await.map_err(limit("load"))??;
            if mode == Mode::Binary && durability == Durability::Normal {
                loaded = l.dir.take().map(|d| (d, l.pending));
            }
            loads.push(l);
        }
        let _ = writeln!(
            out,
            "## {} agent connections holding {} pending questions, {} browsers\n",
            c.connections,
            c.connections * c.per_connection,
            c.load_browsers
        );
        out.push_str(&load_table(&loads, floor1.map(|f| rows[f].latency.p50)));
        out.push('\n');
    }

    if args.wants("big") {
        let b = tokio::time::timeout(c.limit, big(&args, &c)).await.map_err(limit("big"))??;
        out.push_str(&big_table(&b));
        out.push('\n');
    }

    if args.wants("startup") {
        let s = tokio::time::timeout(c.limit, startups(&args, &c, loaded)).await.map_err(limit("startup"))??;
        out.push_str("## Start-up\n\n");
        out.push_str(&startup_table(&s));
        out.push('\n');
    }
    if args.wants("mcp") {
        let m = tokio::time::timeout(c.limit, mcp_eras(&args, &c)).await.map_err(limit("mcp"))??;
        out.push_str("## MCP, per era\n\n");
        out.push_str(&mcp_table(&m));
        out.push('\n');
    }
    if args.wants("live") {
        let (bin, calls, warmup) = (args.bin.clone(), c.live_calls, c.live_warmup);
        let l = tokio::time::timeout(c.limit, tokio::task::spawn_blocking(move || live::run(&bin, calls, warmup)))
            .await
            .map_err(limit("live"))???;
        let _ = writeln!(
            out,
            "## A live question through askuser mcp

A browser socket answers each question as it arrives; {} per row after {} warm-up, {:.0} a second.
",
            c.live_calls,
            c.live_warmup,
            bridge::PACE
        );
        out.push_str(&live::table(&l));
        out.push('\n');
    }
    if args.wants("browser") {
        let b = tokio::time::timeout(c.limit, browser::run(&args.bin, &c.browser)).await.map_err(limit("browser"))??;
        out.push_str(&browser_table(&b));
        out.push('\n');
    }

    if args.wants("terminal") {
        out.push_str(&terminal::table(&terminal::run(50, c.terminal_keys)?));
        out.push('\n');
    }

    if args.wants("tls") {
        let t =
            tokio::time::timeout(c.limit, tls::run(c.tls_requests, c.tls_connections, c.tls_questions)).await.map_err(limit("tls"))??;
        out.push_str(&tls::table(&t));
        out.push('\n');
    }

    if args.wants("push") {
        let p = tokio::time::timeout(c.limit, push::run(c.push_devices, c.push_questions)).await.map_err(limit("push"))??;
        out.push_str(&push::table(&p));
        out.push('\n');
    }

    if args.wants("shared") {
        let s = tokio::time::timeout(c.limit, shared::run(&args.bin, c.shared)).await.map_err(limit("shared"))??;
        out.push_str(&shared::table(&s));
        out.push('\n');
    }

    if args.wants("phone") {
        // Three products × cold loads and repeat visits on Slow 4G: longer than one scenario.
        let loads = args.phone_loads.unwrap_or(c.phone_loads);
        let bound = c.limit * 4;
        let p = tokio::time::timeout(bound, phone::run(&args.bin, loads, args.smoke))
            .await
            .map_err(|_| anyhow::anyhow!("phone took longer than {bound:?}"))??;
        out.push_str(&phone::table(&p));
        out.push('\n');
    }

    if args.wants("sizes") {
        out.push_str(&sizes::table()?);
        out.push('\n');
    }
    let _ = writeln!(out, "whole run: {:.1} s", started.elapsed().as_secs_f64());
    print!("{out}");
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // The load for the live scenario's busy rows: this binary again, spinning.
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some("--burn") {
        live::burn(argv.next().and_then(|s| s.parse().ok()).unwrap_or(1));
        return std::process::ExitCode::SUCCESS;
    }
    let outcome = match parse_args() {
        Ok(args) => run(args).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("askuser-bench: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
