//! One bridge on SQLite against three bridges sharing one PostgreSQL database
//! (`askuser serve --store postgres://…`): what crossing bridges costs a round trip and a
//! question's fan-out to tabs, and what many pending questions cost each process.
//!
//! Every bridge is the real binary (`askuser serve`), each on its own data directory.
//! PostgreSQL is a throwaway cluster (`initdb`, `pg_ctl`) in a temporary folder,
//! listening on a unix socket there only, with `fsync` on (as a real database runs);
//! stopped and removed when the scenario ends, also on error.

use crate::bridge::{PACE, TOKEN};
use crate::clients::{self, Browsers, MESSAGE_LIMIT};
use crate::stats::{self, mib, ms, sample, Summary};
use anyhow::{bail, Context};
use futures_util::StreamExt;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::process::Child;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

#[path = "../../../tests/integration/pg.rs"]
mod pg;
use pg::Cluster;

/// How many of everything the scenario uses.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Sequential round trips per setup.
    pub round_trips: usize,
    /// Questions whose fan-out is timed, per setup.
    pub fanouts: usize,
    /// Agent sockets holding questions, and pending questions on each.
    pub agents: usize,
    pub per_agent: usize,
    /// New tabs' snapshots per bridge.
    pub snapshots: usize,
    /// Unmeasured questions before each measured series.
    pub warmup: usize,
}

/// How many bridges share the database.
const SHARED: usize = 3;
/// "Quiet": all processes together use less than this share of one core ...
const QUIET_CPU: f64 = 0.05;
/// ... waited for at most this long.
const QUIET_LIMIT: Duration = Duration::from_secs(120);

pub struct Figures {
    pub counts: Counts,
    pub postgres: String,
    /// From the last shared bridge printing its URL until a question asked at each bridge
    /// had reached tabs at every bridge.
    pub ready: Duration,
    /// (what, round trips).
    pub round_trips: Vec<(String, Summary)>,
    /// (what, ask sent → a passive tab has the `asked` event).
    pub fanouts: Vec<(String, Summary)>,
    pub sqlite: Hold,
    pub shared: Hold,
    /// The PostgreSQL server's processes: proportional set size (shared memory counted
    /// once), with the bridges connected and idle, and after the fill.
    pub db_idle: Option<Footprint>,
    pub db_after: Option<Footprint>,
    /// Its CPU during the fill.
    pub db_fill_cpu: Option<Duration>,
}

/// A setup's figures for many agents holding pending questions; per bridge where a `Vec`.
pub struct Hold {
    /// Agent sockets on each bridge.
    pub agents: Vec<usize>,
    pub pending: usize,
    pub fill: Duration,
    /// New tabs' snapshots right after the fill, and once every process is quiet.
    pub snapshot: Vec<Summary>,
    pub snapshot_quiet: Vec<Summary>,
    /// Then, on PostgreSQL, once more after `ANALYZE` (fresh planner statistics).
    pub snapshot_analyzed: Option<Vec<Summary>>,
    pub snapshot_bytes: usize,
    pub idle: Vec<stats::ProcSample>,
    pub after: Vec<stats::ProcSample>,
    /// CPU each bridge used during the fill.
    pub fill_cpu: Vec<Duration>,
    /// From the end of the fill until the bridges and the database were quiet (None:
    /// not within [`QUIET_LIMIT`]), and the CPU all of them used in that time.
    pub settled: Option<Duration>,
    pub settle_cpu: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct Footprint {
    pub processes: usize,
    pub pss_kib: u64,
    pub cpu: Duration,
}

pub async fn run(bin: &Path, c: Counts) -> anyhow::Result<Figures> {
    let http = askuser_bridge::client::http_client(None);
    let ticks = stats::clock_ticks();
    let gap = Duration::from_secs_f64(1.0 / PACE);

    // One SQLite bridge.
    eprintln!("shared: one SQLite bridge");
    let one = Running::spawn(bin, None).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sqlite_idle = sample(one.pid, ticks)?;
    let mut round_trips = Vec::new();
    let mut fanouts = Vec::new();
    {
        eprintln!("shared: SQLite round trips × {}", c.round_trips);
        let tab = Browsers::open(&one.url, &one.ws(), 1, None).await?;
        let at = [one.url.clone()];
        asks(&http, &at, 1_000_000, c.warmup, gap).await?;
        let lat = asks(&http, &at, 0, c.round_trips, gap).await?;
        check(tab.close().await?, "SQLite round trips")?;
        round_trips.push(("one SQLite bridge; the tab on it".to_owned(), Summary::of(lat)));

        eprintln!("shared: SQLite fan-out × {}", c.fanouts);
        let mut tabs = vec![Passive::open(&one.url, &one.ws()).await?];
        let at = [one.url.clone()];
        fan_out(&http, &at, &mut tabs, "wfan-sqlite-", c.warmup).await?;
        let mut lat = fan_out(&http, &at, &mut tabs, "fan-sqlite-", c.fanouts).await?;
        fanouts.push(("one SQLite bridge: a tab on the same bridge".to_owned(), Summary::of(lat.remove(0))));
    }
    eprintln!("shared: SQLite, {} agents × {} pending", c.agents, c.per_agent);
    let sqlite = hold(std::slice::from_ref(&one), &[sqlite_idle], c, ticks, None).await?.0;
    one.stop().await;
    {
        // As durable as the PostgreSQL bridges (each commit waits for the disk), to tell
        // what the shared store costs from what durability does.
        eprintln!("shared: SQLite --durability full round trips × {}", c.round_trips);
        let full = Running::spawn_with(bin, None, askuser_bridge::store::Durability::Full).await?;
        let tab = Browsers::open(&full.url, &full.ws(), 1, None).await?;
        let at = [full.url.clone()];
        asks(&http, &at, 1_000_000, c.warmup, gap).await?;
        let lat = asks(&http, &at, 0, c.round_trips, gap).await?;
        check(tab.close().await?, "SQLite --durability full round trips")?;
        round_trips.push((
            "one SQLite bridge, `--durability full` (each commit synced, as on PostgreSQL); the tab on it".to_owned(),
            Summary::of(lat),
        ));
        full.stop().await;
    }

    // Three bridges on one PostgreSQL database.
    eprintln!("shared: PostgreSQL cluster");
    // fsync on, as a real database runs.
    let db = Cluster::start_with(&["fsync=on", "max_connections=300"]);
    let db_url = db.url("postgres");
    let mut bridges = Vec::new();
    for i in 0..SHARED {
        eprintln!("shared: PostgreSQL bridge {i}");
        bridges.push(Running::spawn(bin, Some(&db_url)).await?);
    }
    // Before measuring anything: a question asked at each bridge in turn, until listening
    // tabs at every bridge have it (so no measured question falls into a bridge's start).
    let up = Instant::now();
    let mut tabs = Vec::new();
    for b in &bridges {
        tabs.push(Passive::open(&b.url, &b.ws()).await?);
    }
    let everywhere: Vec<String> = bridges.iter().map(|b| b.url.clone()).collect();
    fan_out(&http, &everywhere, &mut tabs, "ready-", SHARED).await?;
    let ready = up.elapsed();
    drop(tabs);
    eprintln!("shared: every bridge hears the others {:.0} ms after the last one listened", ready.as_secs_f64() * 1e3);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = bridges.iter().map(|b| sample(b.pid, ticks)).collect::<anyhow::Result<Vec<_>>>()?;
    let db_idle = footprint(&db, ticks);
    {
        eprintln!("shared: PostgreSQL round trips across bridges × {}", c.round_trips);
        let tab = Browsers::open(&bridges[1].url, &bridges[1].ws(), 1, None).await?;
        let at = [bridges[0].url.clone(), bridges[2].url.clone()];
        asks(&http, &at, 3_000_000, c.warmup, gap).await?;
        let lat = asks(&http, &at, 2_000_000, c.round_trips, gap).await?;
        check(tab.close().await?, "cross-bridge round trips")?;
        round_trips.push((
            "three bridges on PostgreSQL; asked at bridges 0 and 2 in turn, the only tab on bridge 1 (every answer crosses bridges)"
                .to_owned(),
            Summary::of(lat),
        ));

        eprintln!("shared: PostgreSQL round trips on one bridge × {}", c.round_trips);
        let tab = Browsers::open(&bridges[0].url, &bridges[0].ws(), 1, None).await?;
        let at = [bridges[0].url.clone()];
        asks(&http, &at, 5_000_000, c.warmup, gap).await?;
        let lat = asks(&http, &at, 4_000_000, c.round_trips, gap).await?;
        check(tab.close().await?, "same-bridge round trips on PostgreSQL")?;
        round_trips.push(("three bridges on PostgreSQL; asked at bridge 0, the only tab on bridge 0".to_owned(), Summary::of(lat)));

        eprintln!("shared: PostgreSQL fan-out × {}", c.fanouts);
        let mut tabs = Vec::new();
        for b in &bridges {
            tabs.push(Passive::open(&b.url, &b.ws()).await?);
        }
        let at = [bridges[0].url.clone()];
        fan_out(&http, &at, &mut tabs, "wfan-pg-", c.warmup).await?;
        let lat = fan_out(&http, &at, &mut tabs, "fan-pg-", c.fanouts).await?;
        let later: Vec<Duration> = lat[1].iter().zip(&lat[2]).map(|(a, b)| *a.max(b)).collect();
        let [same, b1, b2] = <[Vec<Duration>; 3]>::try_from(lat).map_err(|_| anyhow::anyhow!("three tabs"))?;
        fanouts.push(("three bridges on PostgreSQL, asked at bridge 0: a tab on bridge 0".to_owned(), Summary::of(same)));
        fanouts.push(("… a tab on bridge 1".to_owned(), Summary::of(b1)));
        fanouts.push(("… a tab on bridge 2".to_owned(), Summary::of(b2)));
        fanouts.push(("… the later of bridges 1 and 2".to_owned(), Summary::of(later)));
    }
    eprintln!("shared: PostgreSQL, {} agents × {} pending over {SHARED} bridges", c.agents, c.per_agent);
    let (shared, db_fill_cpu) = hold(&bridges, &idle, c, ticks, Some(&db)).await?;
    let db_after = footprint(&db, ticks);
    for b in bridges {
        b.stop().await;
    }
    let postgres = db.version();
    drop(db);
    Ok(Figures { counts: c, postgres, ready, round_trips, fanouts, sqlite, shared, db_idle, db_after, db_fill_cpu })
}

fn check(report: clients::BrowserReport, what: &str) -> anyhow::Result<()> {
    if report.errors > 0 || report.resyncs > 0 {
        bail!("{what}: the tab got {} errors, {} resyncs", report.errors, report.resyncs);
    }
    Ok(())
}

/// `n` questions asked over HTTP one after another, in turn at each of `at`, each
/// waiting for its answer; one every `gap` at most, so the answering tab stays under the
/// bridge's per-socket message limit. Ids are `rt-N` from `first` on (the tabs answer
/// those; each series has its own range).
async fn asks(http: &reqwest::Client, at: &[String], first: usize, n: usize, gap: Duration) -> anyhow::Result<Vec<Duration>> {
    let mut out = Vec::with_capacity(n);
    let mut next = tokio::time::Instant::now();
    for i in 0..n {
        tokio::time::sleep_until(next).await;
        next += gap;
        let base = &at[i % at.len()];
        out.push(clients::http_ask(http, base, &format!("rt-{}", first + i), "shared").await?);
    }
    Ok(out)
}

/// `n` questions asked without waiting (`?wait=false`), one at a time, in turn at each of
/// `at`: for each
/// tab, the time from the ask until it had the `asked` event. Each question is withdrawn
/// once every tab has it, so none stays pending.
async fn fan_out(
    http: &reqwest::Client,
    at: &[String],
    tabs: &mut [Passive],
    prefix: &str,
    n: usize,
) -> anyhow::Result<Vec<Vec<Duration>>> {
    let mut out = vec![Vec::with_capacity(n); tabs.len()];
    for i in 0..n {
        let base = &at[i % at.len()];
        let id = format!("{prefix}{i}");
        let t0 = Instant::now();
        let r = tokio::time::timeout(
            MESSAGE_LIMIT,
            http.post(format!("{base}/v1/ask?wait=false")).bearer_auth(TOKEN).json(&clients::request(&id, "fan-out")).send(),
        )
        .await
        .context("the ask timed out")??;
        if r.status() != 202 {
            bail!("POST /v1/ask?wait=false {id}: {}: {}", r.status(), r.text().await.unwrap_or_default());
        }
        for (tab, times) in tabs.iter_mut().zip(&mut out) {
            times.push(tab.wait_for(&id).await? - t0);
        }
        let r = tokio::time::timeout(MESSAGE_LIMIT, http.delete(format!("{base}/v1/questions/{id}")).bearer_auth(TOKEN).send())
            .await
            .context("the withdrawal timed out")??;
        if !r.status().is_success() {
            bail!("DELETE /v1/questions/{id}: {}", r.status());
        }
    }
    Ok(out)
}

/// `c.snapshots` new tabs at each bridge, one after another: their times, and the size
/// of the snapshot.
async fn snapshots(bridges: &[Running], c: Counts) -> anyhow::Result<(Vec<Summary>, usize)> {
    let (mut out, mut size) = (Vec::new(), 0);
    for b in bridges {
        let mut times = Vec::new();
        for _ in 0..c.snapshots {
            let (took, bytes, questions) = clients::snapshot_once(&b.url, &b.ws()).await?;
            if questions != c.agents * c.per_agent {
                bail!("a snapshot at {} has {questions} questions, expected {}", b.url, c.agents * c.per_agent);
            }
            size = bytes;
            times.push(took);
        }
        out.push(Summary::of(times));
    }
    Ok((out, size))
}

/// Waits until the bridges and the database together use less than [`QUIET_CPU`] of a
/// core over half a second, at most [`QUIET_LIMIT`] after `since`: how long after
/// `since` that was (None if never), and the CPU they used from here until then.
async fn quiet(bridges: &[Running], db: Option<&Cluster>, ticks: u64, since: Instant) -> anyhow::Result<(Option<Duration>, Duration)> {
    let cpu = || -> anyhow::Result<Duration> {
        let mut total = db.and_then(|d| footprint(d, ticks)).map_or(Duration::ZERO, |f| f.cpu);
        for b in bridges {
            total += sample(b.pid, ticks)?.cpu;
        }
        Ok(total)
    };
    let first = cpu()?;
    let mut last = first;
    let step = Duration::from_millis(500);
    while since.elapsed() < QUIET_LIMIT {
        tokio::time::sleep(step).await;
        let now = cpu()?;
        if now.saturating_sub(last).as_secs_f64() < QUIET_CPU * step.as_secs_f64() {
            return Ok((Some(since.elapsed()), now.saturating_sub(first)));
        }
        last = now;
    }
    Ok((None, cpu()?.saturating_sub(first)))
}

/// `c.agents` agent sockets, agent k on bridge k % bridges, each holding `c.per_agent`
/// pending questions; then new tabs' snapshots at every bridge and every process's memory.
/// Returns the figures, and the database's CPU during the fill.
async fn hold(
    bridges: &[Running],
    idle: &[stats::ProcSample],
    c: Counts,
    ticks: u64,
    db: Option<&Cluster>,
) -> anyhow::Result<(Hold, Option<Duration>)> {
    let (agents, per) = (c.agents, c.per_agent);
    let before = bridges.iter().map(|b| sample(b.pid, ticks)).collect::<anyhow::Result<Vec<_>>>()?;
    let db_before = db.and_then(|d| footprint(d, ticks));
    let (stop, stopped) = watch::channel(false);
    let t0 = Instant::now();
    let urls: Vec<String> = bridges.iter().map(Running::ws).collect();
    let holders = clients::hold_pending(&urls, agents, per, stopped).await?;
    let fill = t0.elapsed();
    let filled = bridges.iter().map(|b| sample(b.pid, ticks)).collect::<anyhow::Result<Vec<_>>>()?;
    let db_fill_cpu = db.and_then(|d| footprint(d, ticks)).zip(db_before).map(|(a, b)| a.cpu.saturating_sub(b.cpu));
    eprintln!("shared: filled {} in {:.2} s", agents * per, fill.as_secs_f64());

    let (snapshot, snapshot_bytes) = snapshots(bridges, c).await?;
    eprintln!("shared: waiting until the bridges and the database are quiet");
    let (settled, settle_cpu) = quiet(bridges, db, ticks, t0 + fill).await?;
    let (snapshot_quiet, _) = snapshots(bridges, c).await?;
    let snapshot_analyzed = match db {
        Some(db) => {
            db.psql("postgres", "ANALYZE");
            Some(snapshots(bridges, c).await?.0)
        }
        None => None,
    };
    let after = bridges.iter().map(|b| sample(b.pid, ticks)).collect::<anyhow::Result<Vec<_>>>()?;
    let _ = stop.send(true);
    for h in holders {
        let _ = tokio::time::timeout(Duration::from_secs(10), h).await;
    }
    Ok((
        Hold {
            agents: (0..bridges.len()).map(|i| (i..agents).step_by(bridges.len()).count()).collect(),
            pending: agents * per,
            fill,
            snapshot,
            snapshot_quiet,
            snapshot_analyzed,
            snapshot_bytes,
            settled,
            settle_cpu,
            idle: idle.to_vec(),
            after,
            fill_cpu: filled.iter().zip(&before).map(|(a, b)| a.cpu.saturating_sub(b.cpu)).collect(),
        },
        db_fill_cpu,
    ))
}

/// A browser socket that only listens: when each `asked` event came, by question id.
struct Passive {
    events: mpsc::UnboundedReceiver<(String, Instant)>,
    task: tokio::task::JoinHandle<()>,
}

impl Passive {
    /// Connected and past its snapshot.
    async fn open(base: &str, base_ws: &str) -> anyhow::Result<Passive> {
        let mut req = format!("{base_ws}/v1/ui?token={TOKEN}").into_client_request()?;
        req.headers_mut().insert("origin", base.parse()?);
        let connecting = tokio_tungstenite::connect_async_with_config(req, None, true);
        let (mut ws, _) = tokio::time::timeout(MESSAGE_LIMIT, connecting).await.context("connect timed out")??;
        // Bounded: 10,000 parts is a million questions.
        let mut whole = false;
        for _ in 0..10_000 {
            let frame = tokio::time::timeout(MESSAGE_LIMIT, ws.next()).await.context("no snapshot")?;
            let Some(Ok(Message::Text(text))) = frame else { bail!("the tab's socket closed before its snapshot: {frame:?}") };
            let v: Value = serde_json::from_str(text.as_str())?;
            if v["type"] == "snapshot" && v["more"] != true {
                whole = true;
                break;
            }
        }
        if !whole {
            bail!("the snapshot did not end");
        }
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Some(Ok(frame)) = ws.next().await {
                let at = Instant::now();
                let Message::Text(text) = frame else { continue };
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                if v["type"] == "asked" {
                    let id = v["question"]["id"].as_str().unwrap_or_default().to_owned();
                    if tx.send((id, at)).is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Passive { events, task })
    }

    /// When the `asked` event for `id` came (skipping any others).
    async fn wait_for(&mut self, id: &str) -> anyhow::Result<Instant> {
        for _ in 0..100_000 {
            let got = tokio::time::timeout(MESSAGE_LIMIT, self.events.recv()).await.with_context(|| format!("no `asked` for {id}"))?;
            let (got, at) = got.context("the tab's socket closed")?;
            if got == id {
                return Ok(at);
            }
        }
        bail!("no `asked` for {id}")
    }
}

impl Drop for Passive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `askuser serve` as a child process, on its own data directory.
struct Running {
    url: String,
    pid: u32,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Running {
    /// `askuser serve --addr 127.0.0.1:0 [--store URL]`, once it listens.
    async fn spawn(bin: &Path, store: Option<&str>) -> anyhow::Result<Running> {
        Running::spawn_with(bin, store, askuser_bridge::store::Durability::Normal).await
    }

    async fn spawn_with(bin: &Path, store: Option<&str>, durability: askuser_bridge::store::Durability) -> anyhow::Result<Running> {
        let dir = crate::bridge::fresh_dir()?;
        let extra = store.map(|url| vec!["--store", url]).unwrap_or_default();
        let (child, url, _) = crate::bridge::spawn_serve(bin, dir.path(), durability, &extra).await?;
        let pid = child.id().context("the bridge exited at once")?;
        Ok(Running { url, pid, child, _dir: dir })
    }

    fn ws(&self) -> String {
        self.url.replacen("http", "ws", 1)
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

/// A throwaway PostgreSQL cluster: stopped and removed on drop.
/// The cluster's postmaster and its children: how many, their PSS summed, their CPU summed.
fn footprint(db: &Cluster, ticks: u64) -> Option<Footprint> {
    let pid_file = std::fs::read_to_string(db.data().join("postmaster.pid")).ok()?;
    let master: u32 = pid_file.lines().next()?.trim().parse().ok()?;
    let mut pids = vec![master];
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(master) {
            pids.push(pid);
        }
    }
    let mut f = Footprint { processes: 0, pss_kib: 0, cpu: Duration::ZERO };
    for pid in pids {
        let Ok(s) = sample(pid, ticks) else { continue };
        let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .ok()
            .and_then(|r| r.lines().find_map(|l| l.strip_prefix("Pss:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()))
            .unwrap_or(s.rss_kib);
        f.processes += 1;
        f.pss_kib += pss;
        f.cpu += s.cpu;
    }
    Some(f)
}

pub fn table(f: &Figures) -> String {
    let c = &f.counts;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "## One SQLite bridge against {SHARED} bridges sharing one PostgreSQL database\n\n\
         Every bridge is `askuser serve` (its own process and data directory); the shared ones run with `--store` on one \
         database of a local {} cluster (unix socket, `fsync` and `synchronous_commit` on: each write waits for the disk, \
         as a real database's does), the SQLite one with its default `--durability normal` (no fsync per write). Agents \
         ask over HTTP; questions go out one every {:.0} ms at most, so the answering tab stays under the bridge's \
         per-socket message limit (the latency of each is unaffected); {} unmeasured questions before each series.\n",
        f.postgres,
        1e3 / PACE,
        c.warmup
    );
    let s3 = |s: &Summary| format!("{} | {} | {} | {}", s.n, ms(s.p50), ms(s.p99), ms(s.max));
    t.push_str("### Round trip: `POST /v1/ask` → a tab answers → the agent has the result, one question at a time\n\n");
    t.push_str("| setup | n | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|--:|\n");
    for (what, s) in &f.round_trips {
        let _ = writeln!(t, "| {what} | {} |", s3(s));
    }
    let _ = writeln!(
        t,
        "\n### Fan-out: `POST /v1/ask?wait=false` sent → a listening tab has the `asked` event\n\n\
         One question at a time, withdrawn once every tab has it; the tabs only listen. Before any measurement the \
         three bridges were started one after another, and a question asked at each in turn had reached tabs at all \
         three {} ms after the last bridge printed its URL (waited for, so no measured question falls into a bridge's \
         start).\n",
        ms(f.ready)
    );
    t.push_str("| setup | n | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|--:|\n");
    for (what, s) in &f.fanouts {
        let _ = writeln!(t, "| {what} | {} |", s3(s));
    }
    let _ = writeln!(
        t,
        "\n### {} agents × {} pending questions\n\n\
         Agent k on bridge k mod (number of bridges), each holding its questions on one agent socket (64 connecting at \
         once); then {} new tab(s) per bridge, one after another, take the whole snapshot ({} questions, {:.0} KiB), \
         right after the fill, again once every process is quiet (the bridges and the database server together below \
         {:.0} % of one core over half a second; waited for at most {} s), and on PostgreSQL once more after an \
         `ANALYZE` (the tables grew within the run, faster than autovacuum gathers statistics). Figures per bridge are \
         given in bridge order (0 / 1 / 2).\n",
        c.agents,
        c.per_agent,
        c.snapshots,
        f.shared.pending,
        f.shared.snapshot_bytes as f64 / 1024.0,
        QUIET_CPU * 100.0,
        QUIET_LIMIT.as_secs()
    );
    let _ = writeln!(t, "| | one SQLite bridge | {SHARED} bridges on PostgreSQL |\n|---|--:|--:|");
    let each = |h: &Hold, g: &dyn Fn(usize) -> String| (0..h.agents.len()).map(g).collect::<Vec<_>>().join(" / ");
    let mut row = |name: &str, g: &dyn Fn(&Hold) -> String| {
        let _ = writeln!(t, "| {name} | {} | {} |", g(&f.sqlite), g(&f.shared));
    };
    row("agent sockets per bridge", &|h| each(h, &|i| h.agents[i].to_string()));
    row("fill: all accepted, s (questions/s)", &|h| {
        format!("{:.2} ({:.0}/s)", h.fill.as_secs_f64(), h.pending as f64 / h.fill.as_secs_f64())
    });
    row("bridge CPU during the fill, s", &|h| each(h, &|i| format!("{:.2}", h.fill_cpu[i].as_secs_f64())));
    row("new tab's snapshot right after the fill, ms p50", &|h| each(h, &|i| ms(h.snapshot[i].p50)));
    row("after the fill, until the bridges and database are quiet, s", &|h| {
        h.settled.map_or_else(|| format!("not within {} s", QUIET_LIMIT.as_secs()), |d| format!("{:.1}", d.as_secs_f64()))
    });
    row("CPU of all processes from the end of those snapshots until quiet, s", &|h| format!("{:.2}", h.settle_cpu.as_secs_f64()));
    row("new tab's snapshot once quiet, ms p50", &|h| each(h, &|i| ms(h.snapshot_quiet[i].p50)));
    row("new tab's snapshot after `ANALYZE`, ms p50", &|h| {
        h.snapshot_analyzed.as_ref().map_or_else(|| "–".to_owned(), |a| each(h, &|i| ms(a[i].p50)))
    });
    row("bridge RSS idle after start, MiB", &|h| each(h, &|i| mib(h.idle[i].rss_kib)));
    row("bridge RSS after the fill and snapshots, MiB", &|h| each(h, &|i| mib(h.after[i].rss_kib)));
    row("bridge peak RSS (VmHWM) over the whole scenario, MiB", &|h| each(h, &|i| mib(h.after[i].hwm_kib)));
    row("bridges' RSS after, total MiB", &|h| mib(h.after.iter().map(|s| s.rss_kib).sum()));
    let pss = |p: &Option<Footprint>| p.map_or("–".into(), |p| format!("{} MiB ({} processes)", mib(p.pss_kib), p.processes));
    let _ = writeln!(
        t,
        "\nPostgreSQL server (postmaster and its children, proportional set size: shared memory counted once): {} with the \
         bridges connected and idle, {} after the fill; its CPU during the fill {}.",
        pss(&f.db_idle),
        pss(&f.db_after),
        f.db_fill_cpu.map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64()))
    );
    t
}
