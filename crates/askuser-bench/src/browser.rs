//! The served page in a real headless Chromium (Debian's, through chromedriver): how long
//! a bridge message or a key takes to reach the screen, read back from the page's own
//! User Timing entries (`askuser-web`'s `perf` module, on with `/?perf`).
//!
//! For each step the page measures, from the moment the message or key arrived, until
//! the next animation frame was rendered. Each step runs twice: in a Chromium that draws
//! at 60 Hz, as a person's does (so every figure includes waiting for the next frame),
//! and in one with the frame-rate limit off (`--disable-frame-rate-limit
//! --disable-gpu-vsync`), where a frame starts as soon as the page has changed: the cost
//! of the step itself.

use crate::bridge::{Bridge, Mode, TOKEN};
use crate::clients::MESSAGE_LIMIT;
use crate::stats::Summary;
use anyhow::{bail, Context};
use askuser_bridge::store::Durability;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How many of everything the browser part does.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Questions asked one at a time, per option count.
    pub asks: usize,
    /// Down keys pressed in each of those questions (at most options - 1).
    pub keys: usize,
    /// Pending questions for the inbox, and the agents that asked them.
    pub pending: usize,
    pub agents: usize,
    /// Page loads with that inbox.
    pub loads: usize,
}

/// One measured step: arrived → painted, at 60 Hz and unthrottled.
pub struct Step {
    pub what: String,
    pub at_60hz: Summary,
    /// Share of the 60 Hz samples painted within one frame interval of arriving.
    pub in_frame: f64,
    pub unthrottled: Summary,
}

pub struct Report {
    pub chromium: String,
    /// Median time between animation frames, at 60 Hz and unthrottled.
    pub frame: Duration,
    pub frame_unthrottled: Duration,
    pub steps: Vec<Step>,
}

/// Waits until the page has `count` `{name}:paint` entries, then returns their
/// durations in ms. Gives up after 10 s with `null`.
const WAIT_FOR: &str = r#"
const [name, count, done] = arguments;
const started = performance.now();
(function poll() {
  const paint = performance.getEntriesByName(`${name}:paint`, 'measure').map((e) => e.duration);
  if (paint.length >= count) return done(paint);
  if (performance.now() - started > 10000) return done(null);
  setTimeout(poll, 5);
})();
"#;

/// The median interval of 60 animation frames.
const FRAME: &str = r#"
const done = arguments[0];
const times = [];
(function frame(t) {
  times.push(t);
  if (times.length < 61) return requestAnimationFrame(frame);
  const gaps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  done(gaps[30]);
})(performance.now());
"#;

/// A question with `options` options (single choice, so Enter submits it).
fn question(id: &str, options: usize, session: &str) -> Value {
    let options: Vec<Value> = (1..=options)
        .map(|i| json!({"label": format!("Option {i}"), "description": format!("What choosing option {i} means, in a sentence")}))
        .collect();
    json!({
        "id": id,
        "questions": [{"question": "Which one should the agent use?", "header": "Choice", "options": options}],
        "agent": {"name": "bench-agent", "sessionId": session}
    })
}

struct Page {
    client: Client,
    driver: Child,
    /// Entries of each name already read, so each wait asks for one more.
    seen: std::collections::HashMap<String, usize>,
}

/// Chromium as the harness runs it: headless, as root, off the network.
pub const HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];

/// A chromedriver on a free local port (killed when dropped), and the port.
pub fn chromedriver_at(chromedriver: &str) -> anyhow::Result<(Child, u16)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let driver = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {chromedriver} (install chromium-driver; scripts/setup does)"))?;
    Ok((driver, port))
}

impl Page {
    async fn open(chromedriver: &str, unthrottled: bool) -> anyhow::Result<Page> {
        let (driver, port) = chromedriver_at(chromedriver)?;
        let mut args = HEADLESS.to_vec();
        args.push("--window-size=1000,800");
        if unthrottled {
            args.extend(["--disable-frame-rate-limit", "--disable-gpu-vsync"]);
        }
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let mut last = None;
        for _ in 0..50 {
            match ClientBuilder::new(connector.clone()).capabilities(caps.clone()).connect(&format!("http://127.0.0.1:{port}")).await {
                Ok(client) => return Ok(Page { client, driver, seen: Default::default() }),
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("chromedriver did not start: {last:?}")
    }

    /// Loads the page afresh (a new document, so a new performance timeline).
    async fn load(&mut self, url: &str) -> anyhow::Result<()> {
        self.seen.clear();
        self.client.goto("about:blank").await?;
        self.client.goto(&format!("{url}/?perf#token={TOKEN}")).await?;
        Ok(())
    }

    /// Waits for the next `{name}` entry; returns its duration.
    async fn next(&mut self, name: &str) -> anyhow::Result<Duration> {
        let count = self.seen.get(name).copied().unwrap_or(0) + 1;
        let got = self.client.execute_async(WAIT_FOR, vec![json!(name), json!(count)]).await?;
        if got.is_null() {
            bail!("the page measured no {name} within 10 s (is it the UI built with this change? scripts/build-ui)");
        }
        let ms = got.get(count - 1).and_then(Value::as_f64).context("a list of durations")?;
        self.seen.insert(name.to_owned(), count);
        if std::env::var_os("BENCH_TRACE").is_some() {
            eprintln!("page: {name} #{count}: {ms} ms");
        }
        Ok(Duration::from_secs_f64(ms / 1e3))
    }

    async fn key(&self, key: &str) -> anyhow::Result<()> {
        self.client.active_element().await?.send_keys(key).await?;
        Ok(())
    }

    async fn close(mut self) {
        let _ = self.client.close().await;
        let _ = self.driver.kill().await;
    }
}

/// One pass's samples of each step, in order.
type Pass = Vec<(String, Vec<Duration>)>;

/// Asks `POST /v1/ask` and waits for the answer in the background.
fn ask(http: &reqwest::Client, base: &str, body: Value) -> tokio::task::JoinHandle<anyhow::Result<Value>> {
    let req = http.post(format!("{base}/v1/ask?format=canonical")).bearer_auth(TOKEN).json(&body);
    tokio::spawn(async move {
        let res = tokio::time::timeout(MESSAGE_LIMIT, req.send()).await.context("no answer in time")??;
        let status = res.status();
        let v: Value = res.json().await?;
        if !status.is_success() {
            bail!("POST /v1/ask: {status}: {v}");
        }
        Ok(v)
    })
}

/// Questions with `options` options, one at a time: `asked` → painted, arrow keys,
/// then Enter submits and the agent gets its answer.
async fn dialogs(page: &mut Page, http: &reqwest::Client, url: &str, options: usize, c: &Counts, out: &mut Pass) -> anyhow::Result<()> {
    let (mut asked, mut keys, mut enter) = (Vec::new(), Vec::new(), Vec::new());
    // Down moves through the options (not on to "Other", where Enter would start typing).
    let downs = c.keys.min(options - 1);
    for i in 0..c.asks {
        let answer = ask(http, url, question(&format!("paint-{options}-{i}"), options, "paint"));
        asked.push(page.next("askuser:asked").await?);
        for _ in 0..downs {
            page.key(&Key::Down.to_string()).await?;
            keys.push(page.next("askuser:key").await?);
        }
        page.key(&Key::Enter.to_string()).await?;
        enter.push(page.next("askuser:key").await?);
        let result = answer.await??;
        if result["status"] != "answered" || result["answers"][0]["answer"] != format!("Option {}", downs + 1) {
            bail!("the page answered {result}, expected Option {}", downs + 1);
        }
    }
    out.push((format!("`asked` → dialog painted, {options} options (empty inbox)"), asked));
    out.push((format!("↓ key → painted, {options} options"), keys));
    out.push((format!("Enter (submit) → painted, {options} options"), enter));
    Ok(())
}

/// `c.pending` questions from `c.agents` agents waiting; the page loads, then one more
/// question arrives at a time, and keys move in the oldest one's dialog.
async fn inbox(page: &mut Page, http: &reqwest::Client, url: &str, c: &Counts, out: &mut Pass) -> anyhow::Result<()> {
    let per_agent = c.pending.div_ceil(c.agents);
    let mut asks = Vec::new();
    for i in 0..c.pending {
        let body = question(&format!("inbox-{i}"), 4, &format!("agent-{}", i / per_agent));
        asks.push(http.post(format!("{url}/v1/ask?wait=false")).bearer_auth(TOKEN).json(&body).send());
        if asks.len() == 64 || i + 1 == c.pending {
            for res in futures_util::future::join_all(asks.drain(..)).await {
                let res = res?;
                if !res.status().is_success() {
                    bail!("POST /v1/ask?wait=false: {}", res.status());
                }
            }
        }
    }
    let mut loads = Vec::new();
    for _ in 0..c.loads {
        page.load(url).await?;
        loads.push(page.next("askuser:snapshot").await?);
    }
    let mut asked = Vec::new();
    let mut keys = Vec::new();
    let mut waiting = Vec::new();
    for i in 0..c.asks {
        waiting.push(ask(http, url, question(&format!("inbox-more-{i}"), 4, "late-agent")));
        asked.push(page.next("askuser:asked").await?);
        page.key(&Key::Down.to_string()).await?;
        keys.push(page.next("askuser:key").await?);
    }
    for w in waiting {
        w.abort();
    }
    let n = c.pending;
    out.push((format!("snapshot of {n} pending ({} agents) → inbox and dialog painted", c.agents), loads));
    out.push((format!("`asked` → painted, {n} pending"), asked));
    out.push((format!("↓ key → painted, {n} pending"), keys));
    Ok(())
}

/// One pass on a fresh bridge and a fresh browser: the frame interval and every step.
async fn pass(bin: &Path, chromedriver: &str, unthrottled: bool, c: &Counts) -> anyhow::Result<(Duration, Pass)> {
    let bridge = Bridge::start(Mode::Binary, bin, Durability::Normal).await?;
    let http = askuser_bridge::client::http_client(None);
    let index = http.get(format!("{}/", bridge.url)).send().await?.text().await?;
    if !index.contains("askuser-init.js") {
        bail!("{} serves no web UI: run scripts/build-ui, then rebuild it", bin.display());
    }
    let mut page = Page::open(chromedriver, unthrottled).await?;
    let outcome = async {
        page.load(&bridge.url).await?;
        page.next("askuser:snapshot").await?;
        let frame = page.client.execute_async(FRAME, vec![]).await?.as_f64().context("a frame interval")?;
        let mut steps = Vec::new();
        for options in [4, 50] {
            dialogs(&mut page, &http, &bridge.url, options, c, &mut steps).await?;
        }
        inbox(&mut page, &http, &bridge.url, c, &mut steps).await?;
        anyhow::Ok((Duration::from_secs_f64(frame / 1e3), steps))
    }
    .await;
    page.close().await;
    bridge.stop().await;
    outcome
}

/// Runs the browser part against the real binary: at 60 Hz, then unthrottled.
pub async fn run(bin: &Path, c: &Counts) -> anyhow::Result<Report> {
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let version = std::process::Command::new("chromium").arg("--version").output();
    let chromium = version.map_or_else(|e| format!("chromium ({e})"), |o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let (frame, at_60hz) = pass(bin, &chromedriver, false, c).await?;
    let (frame_unthrottled, unthrottled) = pass(bin, &chromedriver, true, c).await?;
    let steps = at_60hz
        .into_iter()
        .zip(unthrottled)
        .map(|((what, slow), (_, fast))| {
            let in_frame = slow.iter().filter(|d| **d <= frame).count() as f64 / slow.len().max(1) as f64;
            Step { what, at_60hz: Summary::of(slow), in_frame, unthrottled: Summary::of(fast) }
        })
        .collect();
    Ok(Report { chromium, frame, frame_unthrottled, steps })
}
