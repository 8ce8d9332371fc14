//! A live question through `askuser mcp`: a host's `tools/call` asks, the question reaches
//! a browser socket (`/v1/ui`), which answers at once, and the tool result comes back on
//! stdout. Timed in its two halves, per MCP era, plain and as a task, against the same
//! question asked with `POST /v1/ask` (no MCP); on a quiet machine and with both cores
//! kept busy by another process ([`Burner`]), where every hand-off between threads waits
//! for a core.
//!
//! The harness's side (the host, the browser and the HTTP agent) runs on one thread with a
//! current-thread runtime, so that it adds the same few wake-ups to every row.

use crate::bridge::{self, Bridge, Era, Mcp, Mode, TOKEN};
use crate::clients;
use crate::stats::{ms, Summary};
use anyhow::{bail, Context};
use askuser_bridge::store::Durability;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// How a question is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// `POST /v1/ask`, waiting for the answer: the reference.
    Http,
    /// `tools/call` of `ask_user` in an era, waiting for the result.
    Mcp(Era),
    /// A 2026-07-28 `tools/call` from a host that declares the tasks extension: the call
    /// returns a task, and the host polls `tasks/get` (back to back, from the moment the
    /// browser answered) until it is completed.
    Task,
}

impl Way {
    pub const ALL: [Way; 4] = [Way::Http, Way::Mcp(Era::Handshake), Way::Mcp(Era::Stateless), Way::Task];

    fn name(self) -> &'static str {
        match self {
            Way::Http => "`POST /v1/ask` (no MCP)",
            Way::Mcp(Era::Handshake) => "`askuser mcp`, 2025-11-25",
            Way::Mcp(Era::Stateless) => "`askuser mcp`, 2026-07-28",
            Way::Task => "`askuser mcp`, 2026-07-28, as a task",
        }
    }
}

/// One row: a way of asking, quiet or loaded.
pub struct Figure {
    way: Way,
    loaded: bool,
    /// Ask sent → result read.
    whole: Summary,
    /// Ask sent → `asked` at the browser socket.
    to_socket: Summary,
    /// Answer sent by the browser → result read.
    to_result: Summary,
}

/// What one question took.
struct Sample {
    whole: Duration,
    to_socket: Duration,
    to_result: Duration,
}

/// When the browser saw a question and when it had sent the answer.
struct Seen {
    at: Instant,
    answered: Instant,
}

/// Runs every way quiet and then loaded, `calls` questions each after `warmup`, on a
/// thread of its own.
pub fn run(bin: &Path, calls: usize, warmup: usize) -> anyhow::Result<Vec<Figure>> {
    let bin = bin.to_path_buf();
    std::thread::spawn(move || askuser_bridge::runtime().block_on(all(&bin, calls, warmup)))
        .join()
        .map_err(|_| anyhow::anyhow!("the live scenario's thread panicked"))?
}

async fn all(bin: &Path, calls: usize, warmup: usize) -> anyhow::Result<Vec<Figure>> {
    let running = Bridge::start(Mode::Binary, bin, Durability::Normal).await?;
    let dir = bridge::fresh_dir()?;
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let browser = tokio::spawn(browser(running.url.clone(), running.ws_url(""), seen_tx));
    // Past the browser's snapshot before the first question.
    seen.recv().await.context("the browser failed before its snapshot")?;
    let mut out = Vec::new();
    let mut n = 0;
    for way in Way::ALL {
        for loaded in [false, true] {
            eprintln!("live: {}, {} × {calls}", way.name(), if loaded { "loaded" } else { "quiet" });
            let burner = if loaded { Some(Burner::start(calls + warmup).await?) } else { None };
            let samples = one(bin, &running.url, dir.path(), way, calls + warmup, &mut n, &mut seen).await;
            drop(burner);
            let samples: Vec<Sample> = samples?.into_iter().skip(warmup).collect();
            let of = |f: fn(&Sample) -> Duration| Summary::of(samples.iter().map(f).collect());
            out.push(Figure { way, loaded, whole: of(|s| s.whole), to_socket: of(|s| s.to_socket), to_result: of(|s| s.to_result) });
        }
    }
    browser.abort();
    running.stop().await;
    Ok(out)
}

/// `count` questions asked `way`, one at a time, paced under the browser socket's limit.
async fn one(
    bin: &Path,
    url: &str,
    dir: &Path,
    way: Way,
    count: usize,
    n: &mut usize,
    seen: &mut mpsc::UnboundedReceiver<Seen>,
) -> anyhow::Result<Vec<Sample>> {
    let http = askuser_bridge::client::http_client(None);
    let mut mcp = match way {
        Way::Http => None,
        Way::Mcp(era) => Some(Mcp::connect(bin, url, dir, era).await?.0),
        Way::Task => {
            let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
            Some(Mcp::connect_with(bin, url, dir, Era::Stateless, tasks).await?.0)
        }
    };
    let gap = Duration::from_secs_f64(1.0 / bridge::PACE);
    let mut next = tokio::time::Instant::now();
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        tokio::time::sleep_until(next).await;
        next += gap;
        *n += 1;
        let id = format!("live-{n}");
        let t0 = Instant::now();
        let done = match (&mut mcp, way) {
            (None, _) => {
                let request = clients::request(&id, "live-bench");
                let reply = http.post(format!("{url}/v1/ask?format=canonical")).bearer_auth(TOKEN).json(&request).send().await?;
                let status = reply.status();
                let body: Value = reply.json().await?;
                let done = Instant::now();
                if !status.is_success() || body["status"] != "answered" {
                    bail!("live: POST /v1/ask {id}: {status}: {body}");
                }
                done
            }
            (Some(mcp), Way::Task) => {
                let created = mcp.request("tools/call", call(&id)).await?;
                let task = created["taskId"].as_str().with_context(|| format!("live: tools/call made no task: {created}"))?.to_owned();
                // The host polls from the moment the answer was given: what is left is
                // the server's.
                let s = tokio::time::timeout(clients::MESSAGE_LIMIT, seen.recv()).await?.context("the browser stopped")?;
                loop {
                    let got = mcp.request("tasks/get", json!({"taskId": task})).await?;
                    match got["status"].as_str() {
                        Some("completed") => break finish(Instant::now(), t0, s, &got["result"], &id, &mut out)?,
                        Some("working") => {}
                        _ => bail!("live: tasks/get: {got}"),
                    }
                }
                continue;
            }
            (Some(mcp), _) => {
                let result = mcp.request("tools/call", call(&id)).await?;
                let done = Instant::now();
                if result["structuredContent"]["status"] != "answered" {
                    bail!("live: tools/call {id}: {result}");
                }
                done
            }
        };
        let s = tokio::time::timeout(clients::MESSAGE_LIMIT, seen.recv()).await?.context("the browser stopped")?;
        finish(done, t0, s, &json!({"structuredContent": {"status": "answered"}}), &id, &mut out)?;
    }
    if let Some(mcp) = mcp {
        mcp.stop().await;
    }
    Ok(out)
}

fn finish(done: Instant, t0: Instant, s: Seen, result: &Value, id: &str, out: &mut Vec<Sample>) -> anyhow::Result<()> {
    if result["structuredContent"]["status"] != "answered" {
        bail!("live: {id} ended with {result}");
    }
    out.push(Sample {
        whole: done - t0,
        to_socket: s.at.saturating_duration_since(t0),
        to_result: done.saturating_duration_since(s.answered),
    });
    Ok(())
}

/// `ask_user`'s arguments for a question of its own (the server picks its id, as a host
/// leaves it; the text names `id`, so no two calls ask the same and none resumes another).
fn call(id: &str) -> Value {
    let mut request = clients::request(id, "live-bench");
    let mut questions = request["questions"].take();
    questions[0]["question"] = format!("Deploy build {id} to production now?").into();
    json!({"name": askuser::mcp::TOOL, "arguments": {"questions": questions}})
}

/// The browser tab: answers every question the moment its `asked` arrives and says when
/// (once first when its snapshot is in).
async fn browser(base: String, base_ws: String, seen: mpsc::UnboundedSender<Seen>) -> anyhow::Result<()> {
    let mut ws = clients::connect(&format!("{base_ws}/v1/ui?token={TOKEN}"), Some(&base), false).await?;
    let mut ready = false;
    while let Some(frame) = ws.next().await {
        let Message::Text(text) = frame? else { continue };
        let at = Instant::now();
        let v: Value = serde_json::from_str(text.as_str())?;
        match v["type"].as_str() {
            Some("snapshot") if v["more"] != true && !ready => {
                ready = true;
                let _ = seen.send(Seen { at, answered: at });
            }
            Some("asked") => {
                let id = v["question"]["id"].as_str().unwrap_or_default();
                let answer = json!({"type": "answer", "id": id, "answers": [{"selected": ["Yes"]}]});
                let answered = Instant::now();
                ws.send(Message::text(answer.to_string())).await?;
                let _ = seen.send(Seen { at, answered });
            }
            Some("error") => bail!("live: the browser got {text}"),
            _ => {}
        }
    }
    Ok(())
}

/// Another process keeping every core busy (`askuser-bench --burn SECONDS`), for at most
/// as long as a loaded run may take; stopped when dropped.
struct Burner(std::process::Child);

impl Burner {
    async fn start(calls: usize) -> anyhow::Result<Burner> {
        // The run's pace, the warm-up, the spawn, and a margin; it stops itself after that.
        let secs = (calls as f64 / bridge::PACE) as u64 + 30;
        let child = std::process::Command::new(std::env::current_exe()?)
            .args(["--burn", &secs.to_string()])
            .stdin(Stdio::null())
            .spawn()
            .context("starting the load")?;
        let burner = Burner(child);
        // Until its threads run.
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(burner)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--burn SECONDS`: one spinning thread per core, for at most that long.
pub fn burn(secs: u64) {
    let until = Instant::now() + Duration::from_secs(secs.min(600));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads: Vec<_> = (0..cores)
        .map(|_| {
            std::thread::spawn(move || {
                let mut x = 0u64;
                while Instant::now() < until {
                    for i in 0..100_000u64 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

pub fn table(figures: &[Figure]) -> String {
    let http = |loaded: bool| figures.iter().find(|f| f.way == Way::Http && f.loaded == loaded).map(|f| f.whole.p50);
    let mut t = String::from(
        "| asked through | machine | n | round trip p50 ms | p90 | ask → at the socket p50 ms | p90 | answer → result p50 ms | p90 | p50 − HTTP's ms |\n\
         |---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for f in figures {
        let over = match http(f.loaded) {
            Some(h) if f.way != Way::Http => format!("{:+.3}", (f.whole.p50.as_secs_f64() - h.as_secs_f64()) * 1e3),
            _ => "–".into(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {over} |",
            f.way.name(),
            if f.loaded { "both cores busy" } else { "quiet" },
            f.whole.n,
            ms(f.whole.p50),
            ms(f.whole.p90),
            ms(f.to_socket.p50),
            ms(f.to_socket.p90),
            ms(f.to_result.p50),
            ms(f.to_result.p90)
        );
    }
    t
}
