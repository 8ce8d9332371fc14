//! A phone on a slow network, waiting for one question: headless Chromium (Debian's,
//! started through chromedriver as [`crate::browser`] does) at a 360×740 viewport with
//! DevTools' "Slow 4G" profile (562.5 ms latency, 1.44 Mbit/s down, 675 kbit/s up) and
//! its CPU 4× slower, loading the page that shows one waiting question.
//!
//! Per product, the median of `loads` page loads, each timed by the page's own clock
//! from the start of the navigation:
//! - first contentful paint (the `paint` entry);
//! - the question's text on screen: a script added to every new document
//!   (`Page.addScriptToEvaluateOnNewDocument`) checks at every animation frame whether
//!   `document.body.innerText` (rendered text only) holds it, and marks the element that
//!   holds it for Element Timing as soon as it is in the document: the figure is that
//!   entry's `renderTime` (when the frame that drew it was presented, as first
//!   contentful paint is timed), else the start of the frame that first drew it;
//! - answer controls on screen: present, laid out, visible and enabled (askuser: a
//!   control of the first-paint form in `#askuser-first`, or an option of the app's
//!   dialog; the peer: its feedback text box and its submit button), at the start of
//!   the first frame that drew them, or when the text was presented if they came with it;
//! - can take an answer: the controls, and whatever else the page needs before an
//!   answer goes anywhere (the peer's script must have started and its socket must be
//!   open, or its submit button does nothing; askuser's form posts without a script,
//!   and its app only shows the dialog once connected);
//! - bytes on the wire: every HTTP response's encoded length, headers included
//!   (DevTools' `Network.loadingFinished`), and WebSocket frames received, until the
//!   network has been quiet for half a second (askuser's page with the form loads no
//!   app on a connection the browser calls 3G, as this one, unless the device keeps it:
//!   `web/first.js`);
//! - askuser only: the same cold loads by a device the bridge does not know (its session
//!   cookie cleared before each: the page is the app's shell, the wasm app shows the
//!   question); and a repeat visit, with the service worker (`web/sw.js`) an earlier
//!   visit installed and the HTTP cache kept.
//!
//! Cold loads: the HTTP cache cleared and disabled, the service worker bypassed. Before
//! them the device is made known to the bridge: the page is opened once, unthrottled,
//! with the token (`/#token=…`), and left once it is connected, so the session cookie
//! (`POST /v1/session`) and the service worker exist; then the question is asked, and
//! every measured load opens `/` without the token. The inbox the app keeps in
//! `localStorage` (`askuser:inbox:…`) is removed at the start of every measured load:
//! the question must come from the bridge, as a new question would.
//!
//! The `--tls` bridge's certificate is trusted by its public key
//! (`--ignore-certificate-errors-spki-list`), as on a phone that trusts it; with
//! `--ignore-certificate-errors` Chromium keeps nothing in its HTTP cache.
//!
//! The DevTools protocol is spoken on its own connection to the browser that chromedriver
//! started (`goog:chromeOptions.debuggerAddress`), not through chromedriver's
//! `goog/cdp/execute`: throttling a page does not throttle its service worker's fetches,
//! and the worker, a target of its own, is reached only by attaching to it.

use crate::bridge::TOKEN;
use anyhow::{bail, Context};
use askuser_bridge::client::Fingerprint;
use askuser_bridge::store::Durability;
use fantoccini::{Client, ClientBuilder};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// The question both products show.
const QUESTION: &str = "Which database should the service use?";
const OPTIONS: [(&str, &str); 2] = [
    ("SQLite", "One file beside the service; nothing else to run or back up."),
    ("PostgreSQL", "A server to run; the service can then scale out."),
];

/// DevTools' "Slow 4G" preset: 150 ms × 3.75 latency, 1.6 Mbit/s × 0.9 down, 750 kbit/s ×
/// 0.9 up (bytes per second here).
const SLOW_4G: (f64, f64, f64) = (562.5, 180_000.0, 84_375.0);
const CPU_SLOWDOWN: u32 = 4;
const VIEWPORT: (u32, u32, u32) = (360, 740, 2);

/// The peer: the closest MCP server with a web page for the human, from PyPI.
const PEER: &str = "mcp-feedback-enhanced";
const PEER_VERSION: &str = "2.8.5";

/// One DevTools command's answer.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// One page load, until every figure is in.
const LOAD_LIMIT: Duration = Duration::from_secs(90);
/// The network is quiet this long after a load: its bytes are all counted.
const QUIET: Duration = Duration::from_millis(500);
const QUIET_LIMIT: Duration = Duration::from_secs(15);
const START_LIMIT: Duration = Duration::from_secs(30);

/// One page load's figures, in ms from the start of the navigation.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub fcp: f64,
    /// The question's text presented (Element Timing), else the frame that first drew it.
    pub text: f64,
    /// The animation frame (its start) in which the text was first in the rendered page.
    pub text_frame: f64,
    pub controls: f64,
    pub ready: f64,
    pub bytes: u64,
    pub responses: usize,
    pub ws_frames: usize,
    pub ws_bytes: u64,
    /// The first WebSocket: created → open, open → first message.
    pub ws_open: Option<f64>,
    pub ws_first: Option<f64>,
    /// Whether the page's HTML carried the question (`#askuser-first`) when its text showed.
    pub first_form: bool,
    /// Cumulative layout shift until the network was quiet (shifts after no input).
    pub cls: f64,
}

pub struct Column {
    pub name: String,
    pub cold: Vec<Sample>,
    pub repeat: Option<Vec<Sample>>,
    /// askuser: cold loads by a device the bridge does not know (no session cookie).
    pub unknown: Option<Vec<Sample>>,
    pub notes: Vec<String>,
}

pub struct Report {
    pub chromium: String,
    pub loads: usize,
    pub columns: Vec<Column>,
    /// Parts that did not run, and why.
    pub skipped: Vec<String>,
}

/// What the page script looks for, per product.
struct Spec {
    /// CSS selector groups: the controls are there when each group has a usable element.
    controls: &'static [&'static str],
    /// A JS expression that must also be true before an answer can be taken.
    ready: &'static str,
    /// `localStorage` key prefixes removed before the page's own scripts run.
    forget: &'static [&'static str],
}

const ASKUSER: Spec = Spec {
    controls: &["#askuser-first form label, #askuser-first form input:not([type=hidden]), #askuser-first form button, \
         #askuser-first form textarea, .askuser-dialog [role=radio], .askuser-dialog [role=checkbox], .askuser-dialog [role=option]"],
    ready: "true",
    forget: &["askuser:inbox:"],
};

const PEER_SPEC: Spec = Spec {
    controls: &["#combinedFeedbackText", "#submitBtn"],
    ready: "(() => { const a = window.feedbackApp, w = a && a.webSocketManager; \
            return !!(a && a.isInitialized && w && w.isReady && w.isReady()); })()",
    forget: &[],
};

/// Added to every new document: records when the question's text, the controls and
/// readiness first show, and the first WebSocket's timings, in `window.__phone`.
fn page_script(spec: &Spec) -> String {
    format!(
        r#"(() => {{
  if (location.protocol !== 'http:' && location.protocol !== 'https:') return;
  const text = {text}, groups = {groups}, forget = {forget};
  try {{
    for (const k of Object.keys(localStorage)) if (forget.some((p) => k.startsWith(p))) localStorage.removeItem(k);
  }} catch (e) {{}}
  const m = window.__phone = {{ ws: [] }};
  const W = window.WebSocket;
  if (W) window.WebSocket = new Proxy(W, {{ construct(target, args) {{
    const s = Reflect.construct(target, args), r = {{ created: performance.now() }};
    m.ws.push(r);
    s.addEventListener('open', () => {{ r.open = performance.now(); }});
    s.addEventListener('message', () => {{ if (r.message === undefined) r.message = performance.now(); }});
    return s;
  }} }});
  const usable = (e) => {{
    const b = e.getBoundingClientRect();
    if (b.width <= 0 || b.height <= 0) return false;
    if (e.checkVisibility && !e.checkVisibility({{ visibilityProperty: true }})) return false;
    const c = e.control || e;
    return !c.disabled && e.getAttribute('aria-disabled') !== 'true' && !e.closest('[inert]');
  }};
  // The question's text, once in the document, is watched by Element Timing: its entry's
  // renderTime is when the frame that drew it was presented, as first-contentful-paint's.
  const mark = (node) => {{
    const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let t = node.nodeType === 3 ? node : walk.nextNode(); t; t = walk.nextNode()) {{
      if (!t.data.includes(text)) continue;
      let e = t.parentElement;
      while (e && e.parentElement && getComputedStyle(e).display.startsWith('inline')) e = e.parentElement;
      if (e && !e.hasAttribute('elementtiming')) e.setAttribute('elementtiming', 'askuser-bench-question');
    }}
  }};
  new MutationObserver((records) => {{
    for (const r of records) for (const n of r.addedNodes) mark(n);
    for (const r of records) if (r.type === 'characterData') mark(r.target);
  }}).observe(document, {{ subtree: true, childList: true, characterData: true }});
  try {{
    new PerformanceObserver((list) => {{
      for (const e of list.getEntries()) {{
        if (e.identifier === 'askuser-bench-question' && m.painted === undefined) m.painted = e.renderTime || e.loadTime;
      }}
    }}).observe({{ type: 'element', buffered: true }});
  }} catch (e) {{}}
  m.cls = 0;
  try {{
    new PerformanceObserver((list) => {{
      for (const e of list.getEntries()) if (!e.hadRecentInput) m.cls += e.value;
    }}).observe({{ type: 'layout-shift', buffered: true }});
  }} catch (e) {{}}
  const started = performance.now();
  const check = () => {{
    const now = performance.now();
    if (document.body) {{
      if (m.text === undefined && document.body.innerText.includes(text)) {{
        m.text = now;
        m.first = !!document.getElementById('askuser-first');
      }}
      if (m.controls === undefined && groups.every((g) => [...document.querySelectorAll(g)].some(usable))) m.controls = now;
      if (m.controls !== undefined && m.ready === undefined && {ready}) m.ready = now;
    }}
    if ((m.text === undefined || m.ready === undefined) && now - started < 120000) requestAnimationFrame(check);
  }};
  requestAnimationFrame(check);
}})();"#,
        text = json!(QUESTION),
        groups = json!(spec.controls),
        forget = json!(spec.forget),
        ready = spec.ready,
    )
}

/// Reads the page's figures.
const READ: &str = "JSON.stringify(Object.assign({}, window.__phone || {}, { href: location.href, \
    fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime, \
    controller: !!(navigator.serviceWorker && navigator.serviceWorker.controller) }))";

// ---------------------------------------------------------------------------------------
// The DevTools protocol, on its own connection to the browser.

/// Requests in flight and what arrived, since the last [`Phone::reset`].
#[derive(Default)]
struct Traffic {
    /// (session, request id) → its URL.
    in_flight: HashMap<(String, String), String>,
    /// Requests served by the service worker or the cache, not the network.
    local: HashSet<(String, String)>,
    bytes: u64,
    responses: usize,
    ws_frames: usize,
    ws_bytes: u64,
    last: Option<Instant>,
}

#[derive(Default)]
struct State {
    /// Attached sessions and their target's type.
    sessions: HashMap<String, String>,
    /// Network conditions for every page and worker, once set.
    conditions: Option<Value>,
    traffic: Traffic,
    /// The status of the last `POST /v1/session`.
    session_status: Option<u64>,
}

struct Inner {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    out: mpsc::UnboundedSender<Message>,
    state: Mutex<State>,
}

impl Inner {
    async fn call(self: &Arc<Inner>, session: Option<&str>, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        self.out.send(Message::Text(message.to_string().into())).ok().context("the DevTools connection is closed")?;
        let reply = match tokio::time::timeout(CALL_LIMIT, rx).await {
            Ok(reply) => reply.context("the DevTools connection closed")?,
            Err(_) => {
                self.pending.lock().unwrap().remove(&id);
                bail!("DevTools did not answer {method} within {CALL_LIMIT:?}");
            }
        };
        if let Some(e) = reply.get("error") {
            bail!("DevTools {method}: {e}");
        }
        Ok(reply["result"].clone())
    }

    fn event(self: &Arc<Inner>, v: &Value) {
        let p = &v["params"];
        let session = v["sessionId"].as_str().unwrap_or("").to_owned();
        let key = || (session.clone(), p["requestId"].as_str().unwrap_or("").to_owned());
        let mut st = self.state.lock().unwrap();
        match v["method"].as_str().unwrap_or("") {
            "Target.attachedToTarget" => {
                let id = p["sessionId"].as_str().unwrap_or("").to_owned();
                let kind = p["targetInfo"]["type"].as_str().unwrap_or("").to_owned();
                let waiting = p["waitingForDebugger"].as_bool().unwrap_or(false);
                st.sessions.insert(id.clone(), kind.clone());
                let conditions = st.conditions.clone();
                let me = self.clone();
                // A worker gets the page's network conditions before it runs.
                tokio::spawn(async move {
                    if kind.contains("worker") {
                        let _ = me.call(Some(&id), "Network.enable", json!({})).await;
                        if let Some(c) = conditions {
                            let _ = me.call(Some(&id), "Network.emulateNetworkConditions", c).await;
                        }
                    }
                    if waiting {
                        let _ = me.call(Some(&id), "Runtime.runIfWaitingForDebugger", json!({})).await;
                    }
                });
            }
            "Target.detachedFromTarget" => {
                st.sessions.remove(p["sessionId"].as_str().unwrap_or(""));
            }
            "Network.requestWillBeSent" => {
                let t = &mut st.traffic;
                t.in_flight.insert(key(), p["request"]["url"].as_str().unwrap_or("").to_owned());
                t.last = Some(Instant::now());
            }
            "Network.requestServedFromCache" => {
                st.traffic.local.insert(key());
            }
            "Network.responseReceived" => {
                let r = &p["response"];
                if r["url"].as_str().is_some_and(|u| u.ends_with("/v1/session")) {
                    st.session_status = r["status"].as_u64();
                }
                let served = r["fromServiceWorker"].as_bool() == Some(true)
                    || r["fromDiskCache"].as_bool() == Some(true)
                    || r["fromPrefetchCache"].as_bool() == Some(true);
                if served {
                    st.traffic.local.insert(key());
                }
            }
            "Network.loadingFinished" => {
                let k = key();
                let t = &mut st.traffic;
                let url = t.in_flight.remove(&k).unwrap_or_default();
                let local = t.local.remove(&k) || url.starts_with("data:");
                let bytes = p["encodedDataLength"].as_f64().unwrap_or(0.0) as u64;
                if !local {
                    t.bytes += bytes;
                    t.responses += 1;
                }
                t.last = Some(Instant::now());
                if std::env::var_os("BENCH_TRACE").is_some() {
                    let kind = st.sessions.get(&session).map_or("?", String::as_str);
                    eprintln!("phone: {kind} {url}: {bytes} bytes{}", if local { " (not from the network)" } else { "" });
                }
            }
            "Network.loadingFailed" => {
                let k = key();
                st.traffic.in_flight.remove(&k);
                st.traffic.local.remove(&k);
                st.traffic.last = Some(Instant::now());
            }
            "Network.webSocketFrameReceived" => {
                let t = &mut st.traffic;
                t.ws_frames += 1;
                t.ws_bytes += p["response"]["payloadData"].as_str().map_or(0, str::len) as u64;
                t.last = Some(Instant::now());
            }
            _ => {}
        }
    }
}

/// Chromium through chromedriver, and a DevTools connection to it.
struct Phone {
    client: Option<Client>,
    driver: Child,
    /// The browser's own process, killed if this is dropped before [`Phone::close`].
    chromium: Option<u32>,
    cdp: Arc<Inner>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The page's session.
    page: String,
}

impl Drop for Phone {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(pid) = self.chromium.take() {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

impl Phone {
    /// `pin`: the base64 SHA-256 of a certificate's public key (SPKI) Chromium takes as
    /// valid, as a phone that trusts the bridge's certificate does.
    async fn open(chromedriver: &str, pin: Option<&str>) -> anyhow::Result<Phone> {
        let (driver, port) = crate::browser::chromedriver_at(chromedriver)?;
        let mut args: Vec<String> = crate::browser::HEADLESS.iter().map(|a| a.to_string()).collect();
        args.push("--window-size=360,740".into());
        // Not `--ignore-certificate-errors`: a page with a certificate error is never kept
        // in the HTTP cache, which the repeat visit depends on.
        args.extend(pin.map(|p| format!("--ignore-certificate-errors-spki-list={p}")));
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let mut last = None;
        let mut client = None;
        for _ in 0..50 {
            match ClientBuilder::new(connector.clone()).capabilities(caps.clone()).connect(&format!("http://127.0.0.1:{port}")).await {
                Ok(c) => {
                    client = Some(c);
                    break;
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Some(client) = client else { bail!("chromedriver did not start: {last:?}") };
        let (out, outgoing) = mpsc::unbounded_channel();
        let cdp = Arc::new(Inner { next: AtomicU64::new(1), pending: Mutex::new(HashMap::new()), out, state: Mutex::default() });
        let mut phone = Phone { client: Some(client), driver, chromium: None, cdp, tasks: Vec::new(), page: String::new() };
        match phone.connect(outgoing).await {
            Ok(()) => Ok(phone),
            Err(e) => {
                phone.close().await;
                Err(e)
            }
        }
    }

    /// Connects to the browser's DevTools endpoint, attaches to every target (workers
    /// held until they have their network conditions), and sets up the page.
    async fn connect(&mut self, mut outgoing: mpsc::UnboundedReceiver<Message>) -> anyhow::Result<()> {
        let caps = self.client.as_ref().and_then(Client::capabilities).context("chromedriver returned no capabilities")?;
        let addr = caps
            .get("goog:chromeOptions")
            .and_then(|o| o["debuggerAddress"].as_str())
            .context("chromedriver did not say where the browser's DevTools listen (goog:chromeOptions.debuggerAddress)")?
            .to_owned();
        let http = askuser_bridge::client::http_client(None);
        let version: Value =
            tokio::time::timeout(START_LIMIT, async { http.get(format!("http://{addr}/json/version")).send().await?.json().await })
                .await
                .context("the browser's DevTools did not answer")??;
        let url = version["webSocketDebuggerUrl"].as_str().context("no webSocketDebuggerUrl")?;
        let socket = tokio::time::timeout(START_LIMIT, askuser_bridge::client::websocket(url.into_client_request()?, None))
            .await
            .context("the browser's DevTools did not accept a connection")??;
        let (mut sink, mut stream) = socket.split();
        self.tasks.push(tokio::spawn(async move {
            while let Some(m) = outgoing.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        }));
        let inner = self.cdp.clone();
        self.tasks.push(tokio::spawn(async move {
            while let Some(Ok(frame)) = stream.next().await {
                let Message::Text(text) = frame else { continue };
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                match v["id"].as_u64() {
                    Some(id) => {
                        if let Some(tx) = inner.pending.lock().unwrap().remove(&id) {
                            let _ = tx.send(v);
                        }
                    }
                    None => inner.event(&v),
                }
            }
            // Closed: every waiting call fails at once.
            inner.pending.lock().unwrap().clear();
        }));
        let info = self.cdp.call(None, "SystemInfo.getProcessInfo", json!({})).await.unwrap_or_default();
        self.chromium = info["processInfo"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["type"] == "browser"))
            .and_then(|p| p["id"].as_u64())
            .map(|p| p as u32);
        let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|ts| {
                ts.iter().find(|t| t["type"] == "page" && t["attached"] == true).or_else(|| ts.iter().find(|t| t["type"] == "page"))
            })
            .and_then(|t| t["targetId"].as_str())
            .context("the browser has no page")?
            .to_owned();
        self.cdp.call(None, "Target.setAutoAttach", json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true})).await?;
        let attached = self.cdp.call(None, "Target.attachToTarget", json!({"targetId": page, "flatten": true})).await?;
        self.page = attached["sessionId"].as_str().context("no session for the page")?.to_owned();
        self.cdp.state.lock().unwrap().sessions.insert(self.page.clone(), "page".into());
        let (w, h, scale) = VIEWPORT;
        self.page_call("Page.enable", json!({})).await?;
        self.page_call("Network.enable", json!({})).await?;
        self.page_call("Emulation.setDeviceMetricsOverride", json!({"width": w, "height": h, "deviceScaleFactor": scale, "mobile": true}))
            .await?;
        self.page_call("Emulation.setTouchEmulationEnabled", json!({"enabled": true, "maxTouchPoints": 5})).await?;
        Ok(())
    }

    async fn page_call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.cdp.call(Some(&self.page), method, params).await
    }

    /// Slow 4G and a 4× slower CPU, or neither; for the page and every worker.
    async fn throttle(&self, on: bool) -> anyhow::Result<()> {
        let (latency, down, up) = SLOW_4G;
        let conditions = if on {
            json!({"offline": false, "latency": latency, "downloadThroughput": down, "uploadThroughput": up, "connectionType": "cellular4g"})
        } else {
            json!({"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        };
        let workers: Vec<String> = {
            let mut st = self.cdp.state.lock().unwrap();
            st.conditions = Some(conditions.clone());
            st.sessions.iter().filter(|(_, kind)| kind.contains("worker")).map(|(s, _)| s.clone()).collect()
        };
        self.page_call("Network.emulateNetworkConditions", conditions.clone()).await?;
        for w in workers {
            // A worker that went away meanwhile is no error.
            let _ = self.cdp.call(Some(&w), "Network.emulateNetworkConditions", conditions.clone()).await;
        }
        self.page_call("Emulation.setCPUThrottlingRate", json!({"rate": if on { CPU_SLOWDOWN } else { 1 }})).await?;
        Ok(())
    }

    /// Cold: the HTTP cache cleared and off, the service worker bypassed. Else both on.
    async fn cold(&self, cold: bool) -> anyhow::Result<()> {
        if cold {
            self.page_call("Network.clearBrowserCache", json!({})).await?;
        }
        self.page_call("Network.setCacheDisabled", json!({"cacheDisabled": cold})).await?;
        self.page_call("Network.setBypassServiceWorker", json!({"bypass": cold})).await?;
        Ok(())
    }

    async fn navigate(&self, url: &str) -> anyhow::Result<()> {
        let r = self.page_call("Page.navigate", json!({"url": url})).await?;
        if let Some(e) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
            bail!("opening {url}: {e}");
        }
        Ok(())
    }

    async fn read(&self) -> Option<Value> {
        let r = self.page_call("Runtime.evaluate", json!({"expression": READ, "returnByValue": true})).await.ok()?;
        serde_json::from_str(r["result"]["value"].as_str()?).ok()
    }

    /// Waits until `done` holds for the page's figures, at most `limit`.
    async fn wait(&self, limit: Duration, what: &str, done: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
        let t0 = Instant::now();
        let mut last = Value::Null;
        while t0.elapsed() < limit {
            if let Some(v) = self.read().await {
                if done(&v) {
                    return Ok(v);
                }
                last = v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{what}: not within {limit:?}; the page had {last}")
    }

    fn reset(&self) {
        self.cdp.state.lock().unwrap().traffic = Traffic::default();
    }

    /// Waits until no request has been in flight for [`QUIET`] (at most [`QUIET_LIMIT`]).
    async fn quiet(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < QUIET_LIMIT {
            let idle = {
                let st = self.cdp.state.lock().unwrap();
                st.traffic.in_flight.is_empty() && st.traffic.last.is_none_or(|l| l.elapsed() >= QUIET)
            };
            if idle {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One measured load of `url`, then the page is left for `about:blank`.
    async fn load(&self, url: &str) -> anyhow::Result<Sample> {
        self.reset();
        self.navigate(url).await?;
        // The page may take a token out of its address (`#token=…`).
        let page = url.split('#').next().unwrap_or(url);
        let v = self
            .wait(LOAD_LIMIT, &format!("{url}: the question, the answer controls and the first paint"), |v| {
                v["href"].as_str().is_some_and(|h| h.starts_with(page))
                    && v["text"].is_number()
                    && v["ready"].is_number()
                    && v["fcp"].is_number()
            })
            .await?;
        self.quiet().await;
        // After the network settled: the text's paint entry and the app's socket are in.
        let v = self.read().await.filter(|r| r["href"] == v["href"]).unwrap_or(v);
        let mut s = {
            let st = self.cdp.state.lock().unwrap();
            let t = &st.traffic;
            Sample { bytes: t.bytes, responses: t.responses, ws_frames: t.ws_frames, ws_bytes: t.ws_bytes, ..Sample::default() }
        };
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        (s.fcp, s.text_frame, s.controls, s.ready) = (f("fcp"), f("text"), f("controls"), f("ready"));
        // Presented, where Element Timing saw it; what came in the same frame as the
        // text was presented with it.
        s.text = v["painted"].as_f64().filter(|p| *p > 0.0).unwrap_or(s.text_frame);
        for x in [&mut s.controls, &mut s.ready] {
            if *x >= s.text_frame && *x <= s.text {
                *x = s.text;
            }
        }
        s.first_form = v["first"] == true;
        s.cls = v["cls"].as_f64().unwrap_or(f64::NAN);
        if let Some(ws) = v["ws"].get(0) {
            let (created, open, message) = (ws["created"].as_f64(), ws["open"].as_f64(), ws["message"].as_f64());
            s.ws_open = created.zip(open).map(|(c, o)| o - c);
            s.ws_first = open.zip(message).map(|(o, m)| m - o);
        }
        if std::env::var_os("BENCH_TRACE").is_some() {
            eprintln!("phone: {url}: {s:?}");
        }
        self.navigate("about:blank").await?;
        Ok(s)
    }

    async fn close(mut self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(client) = self.client.take() {
            if tokio::time::timeout(Duration::from_secs(10), client.close()).await.is_ok_and(|r| r.is_ok()) {
                // chromedriver ended the browser.
                self.chromium = None;
            }
        }
        let _ = self.driver.kill().await;
        // Drop kills the browser if chromedriver did not.
    }
}

// ---------------------------------------------------------------------------------------
// askuser

/// `askuser serve` on 127.0.0.1, plain or `--tls`: its URL and certificate pin.
struct Served {
    child: Child,
    url: String,
    pin: Option<Fingerprint>,
    dir: tempfile::TempDir,
}

async fn serve(bin: &Path, tls: bool) -> anyhow::Result<Served> {
    let dir = crate::bridge::fresh_dir()?;
    let extra: &[&str] = if tls { &["--tls"] } else { &[] };
    let (child, url, pin, _) = crate::bridge::spawn_serve_pinned(bin, dir.path(), Durability::Normal, extra).await?;
    Ok(Served { child, url, pin, dir })
}

/// The base64 SHA-256 of the SubjectPublicKeyInfo of the first certificate in `pem`
/// (what Chromium's `--ignore-certificate-errors-spki-list` takes).
fn spki_pin(pem: &Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    let text = std::fs::read_to_string(pem).with_context(|| format!("reading {}", pem.display()))?;
    let b64: String =
        text.lines().skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE")).skip(1).take_while(|l| !l.starts_with("-----END")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64.trim()).context("the certificate's PEM")?;
    /// One DER element: its tag, all its bytes, its content, and what follows it.
    struct Der<'a> {
        tag: u8,
        whole: &'a [u8],
        content: &'a [u8],
        rest: &'a [u8],
    }
    fn element(b: &[u8]) -> anyhow::Result<Der<'_>> {
        let (&tag, rest) = b.split_first().context("DER: truncated")?;
        let (&first, rest) = rest.split_first().context("DER: truncated")?;
        let (len, rest) = if first < 0x80 {
            (first as usize, rest)
        } else {
            let n = (first & 0x7f) as usize;
            anyhow::ensure!(n <= 4 && rest.len() >= n, "DER: bad length");
            (rest[..n].iter().fold(0usize, |a, b| a << 8 | *b as usize), &rest[n..])
        };
        anyhow::ensure!(rest.len() >= len, "DER: truncated");
        let header = b.len() - rest.len();
        Ok(Der { tag, whole: &b[..header + len], content: &rest[..len], rest: &rest[len..] })
    }
    // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serial,
    // signature, issuer, validity, subject, subjectPublicKeyInfo, … }, … }
    let certificate = element(&der)?.content;
    let mut rest = element(certificate)?.content;
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.rest;
    }
    for _ in 0..5 {
        rest = element(rest)?.rest;
    }
    let spki = element(rest)?;
    anyhow::ensure!(spki.tag == 0x30, "DER: no subjectPublicKeyInfo where expected");
    Ok(base64::engine::general_purpose::STANDARD.encode(Fingerprint::of(spki.whole).0))
}

fn ask_body() -> Value {
    let options: Vec<Value> = OPTIONS.iter().map(|(l, d)| json!({"label": l, "description": d})).collect();
    json!({
        "id": "phone-1",
        "questions": [{"question": QUESTION, "header": "Database", "options": options}],
        "agent": {"name": "bench-agent", "sessionId": "phone"}
    })
}

async fn askuser_column(bin: &Path, chromedriver: &str, tls: bool, loads: usize) -> anyhow::Result<Column> {
    let name = if tls { "askuser (TLS)" } else { "askuser (HTTP)" };
    eprintln!("phone: {name}, {loads} cold load(s) and {loads} repeat visit(s)");
    let mut served = serve(bin, tls).await?;
    let pin = match tls {
        true => Some(spki_pin(&served.dir.path().join("tls/cert.pem"))?),
        false => None,
    };
    let phone = Phone::open(chromedriver, pin.as_deref()).await;
    let outcome = match &phone {
        Ok(phone) => askuser_loads(phone, &served, loads, name).await,
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    if let Ok(phone) = phone {
        phone.close().await;
    }
    let _ = served.child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), served.child.wait()).await;
    outcome
}

async fn askuser_loads(phone: &Phone, served: &Served, loads: usize, name: &str) -> anyhow::Result<Column> {
    let url = served.url.clone();
    let http = askuser_bridge::client::http_client(served.pin);
    let index = http.get(format!("{url}/")).send().await?.text().await?;
    if !index.contains("_bg.wasm") {
        bail!("{url} serves no web UI: run scripts/build-ui, then rebuild askuser");
    }
    phone.page_call("Page.addScriptToEvaluateOnNewDocument", json!({"source": page_script(&ASKUSER)})).await?;

    // The device becomes known: the page with the token, unthrottled, until it is
    // connected and its service worker controls it; then it is left.
    phone.throttle(false).await?;
    phone.cold(false).await?;
    phone.navigate(&format!("{url}/#token={TOKEN}")).await?;
    phone
        .wait(START_LIMIT, "the first visit: connected, with a service worker", |v| {
            v["controller"] == true && v["ws"].as_array().is_some_and(|ws| ws.iter().any(|w| w["message"].is_number()))
        })
        .await?;
    let t0 = Instant::now();
    while phone.cdp.state.lock().unwrap().session_status.is_none() && t0.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let session = phone.cdp.state.lock().unwrap().session_status;
    phone.navigate("about:blank").await?;

    let asked = http.post(format!("{url}/v1/ask?wait=false")).bearer_auth(TOKEN).json(&ask_body()).send().await?;
    if asked.status() != 202 {
        bail!("POST /v1/ask?wait=false: {}", asked.status());
    }

    phone.throttle(true).await?;
    let mut cold = Vec::with_capacity(loads);
    for _ in 0..loads {
        phone.cold(true).await?;
        cold.push(phone.load(&format!("{url}/")).await?);
    }
    // The same, on a device the bridge does not know: no session cookie (the app, once
    // started, asks for one again; it is cleared before every load).
    let mut unknown = Vec::with_capacity(loads);
    for _ in 0..loads {
        phone.page_call("Network.clearBrowserCookies", json!({})).await?;
        phone.cold(true).await?;
        // The link `askuser serve` prints, opened for the first time.
        unknown.push(phone.load(&format!("{url}/#token={TOKEN}")).await?);
    }

    // Repeat visits: once unthrottled to fill both caches as a visit does, then measured.
    phone.throttle(false).await?;
    phone.cold(false).await?;
    phone.load(&format!("{url}/")).await?;
    phone.throttle(true).await?;
    let mut repeat = Vec::with_capacity(loads);
    for _ in 0..loads {
        repeat.push(phone.load(&format!("{url}/")).await?);
    }
    phone.throttle(false).await?;

    let mut notes = Vec::new();
    notes.push(match session {
        Some(s) => format!("the first visit's `POST /v1/session` answered {s}"),
        None => "the first visit made no `POST /v1/session` (a bridge without it): the device is not known by a cookie".into(),
    });
    let forms = cold.iter().filter(|s| s.first_form).count();
    notes.push(format!("the question came in the page's HTML (`#askuser-first`) on {forms} of {} cold loads", cold.len()));
    Ok(Column { name: name.into(), cold, repeat: Some(repeat), unknown: Some(unknown), notes })
}

// ---------------------------------------------------------------------------------------
// The peer

/// The workspace (crates/askuser-bench/../..).
fn root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(2).unwrap_or(here).to_path_buf()
}

/// The peer's venv under `.tools/peer-feedback`, installed from PyPI unless it is there
/// at [`PEER_VERSION`] already (a smoke run installs nothing).
async fn peer_installed(smoke: bool) -> Result<PathBuf, String> {
    let dir = root().join(".tools/peer-feedback");
    let exe = dir.join("bin").join(PEER);
    let python = dir.join("bin/python");
    let version = || {
        let python = python.clone();
        async move {
            let out = Command::new(&python)
                .args(["-c", &format!("import importlib.metadata as m; print(m.version({PEER:?}))")])
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .output();
            let out = tokio::time::timeout(Duration::from_secs(30), out).await.ok()?.ok()?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
    };
    if exe.exists() && version().await.as_deref() == Some(PEER_VERSION) {
        return Ok(exe);
    }
    if smoke {
        return Err(format!("not installed in {} (a full run installs it)", dir.display()));
    }
    eprintln!("phone: installing {PEER}=={PEER_VERSION} into {}", dir.display());
    let run = |mut cmd: Command, limit: Duration, what: &'static str| async move {
        let out = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true).output();
        match tokio::time::timeout(limit, out).await {
            Err(_) => Err(format!("{what} took longer than {limit:?}")),
            Ok(Err(e)) => Err(format!("{what}: {e}")),
            Ok(Ok(o)) if !o.status.success() => {
                let err = String::from_utf8_lossy(&o.stderr);
                Err(format!("{what} failed: {}", err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim()))
            }
            Ok(Ok(_)) => Ok(()),
        }
    };
    let mut venv = Command::new("python3");
    venv.args(["-m", "venv"]).arg(&dir);
    run(venv, Duration::from_secs(120), "python3 -m venv").await?;
    let mut pip = Command::new(dir.join("bin/pip"));
    pip.args(["install", "-q", "--disable-pip-version-check", &format!("{PEER}=={PEER_VERSION}")]);
    run(pip, Duration::from_secs(600), "pip install").await?;
    match version().await {
        Some(v) if v == PEER_VERSION && exe.exists() => Ok(exe),
        v => Err(format!("installed, but it says version {v:?}")),
    }
}

/// The peer's MCP server on stdio, asked one question with its feedback tool; its page
/// then serves on `port`.
struct Peer {
    child: Child,
    url: String,
    _home: tempfile::TempDir,
}

async fn peer_start(exe: &Path) -> anyhow::Result<Peer> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let home = tempfile::Builder::new().prefix("askuser-bench-peer-").tempdir()?;
    // Its own web page on 127.0.0.1:port, no browser opened (`BROWSER=true` is what
    // Python's `webbrowser` runs), no desktop app; settings in a throwaway home.
    let mut child = Command::new(exe)
        .env("MCP_WEB_HOST", "127.0.0.1")
        .env("MCP_WEB_PORT", port.to_string())
        .env("MCP_LANGUAGE", "en")
        .env("BROWSER", "true")
        .env("HOME", home.path())
        .env_remove("MCP_DESKTOP_MODE")
        .env_remove("MCP_DEBUG")
        .env_remove("DISPLAY")
        .current_dir(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let send = |v: Value| {
        let mut line = v.to_string();
        line.push('\n');
        line
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "askuser-bench", "version": "0"}}});
    stdin.write_all(send(init).as_bytes()).await?;
    stdin.flush().await?;
    tokio::time::timeout(START_LIMIT, async {
        while let Some(line) = lines.next_line().await? {
            if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == 1) {
                return Ok(());
            }
        }
        bail!("{PEER} closed stdout before answering initialize")
    })
    .await
    .with_context(|| format!("{PEER} did not answer initialize within {START_LIMIT:?}"))??;
    let options: Vec<String> = OPTIONS.iter().map(|(l, d)| format!("- **{l}**: {d}")).collect();
    let summary = format!("{QUESTION}\n\n{}", options.join("\n"));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "interactive_feedback", "arguments": {"project_directory": home.path().to_string_lossy(), "summary": summary, "timeout": 3600}}});
    stdin.write_all(send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).as_bytes()).await?;
    stdin.write_all(send(call).as_bytes()).await?;
    stdin.flush().await?;
    // The call answers once someone gives feedback; its stdout is drained meanwhile,
    // and its stdin kept open (closed, the server would end).
    tokio::spawn(async move {
        let _stdin = stdin;
        while let Ok(Some(line)) = lines.next_line().await {
            if std::env::var_os("BENCH_TRACE").is_some() {
                eprintln!("peer: {line}");
            }
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let http = askuser_bridge::client::http_client(None);
    let t0 = Instant::now();
    loop {
        if let Ok(Ok(r)) = tokio::time::timeout(Duration::from_secs(5), http.get(format!("{url}/")).send()).await {
            if r.text().await.is_ok_and(|t| t.contains(QUESTION)) {
                break;
            }
        }
        if t0.elapsed() > START_LIMIT {
            let _ = child.start_kill();
            bail!("{PEER}'s page at {url}/ did not show the question within {START_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Peer { child, url, _home: home })
}

async fn peer_column(exe: &Path, chromedriver: &str, loads: usize) -> anyhow::Result<Column> {
    eprintln!("phone: {PEER} {PEER_VERSION}, {loads} cold load(s)");
    let mut peer = peer_start(exe).await?;
    let phone = Phone::open(chromedriver, None).await;
    let outcome = match &phone {
        Ok(phone) => {
            async {
                phone.page_call("Page.addScriptToEvaluateOnNewDocument", json!({"source": page_script(&PEER_SPEC)})).await?;
                phone.throttle(true).await?;
                let mut cold = Vec::with_capacity(loads);
                for _ in 0..loads {
                    phone.cold(true).await?;
                    cold.push(phone.load(&format!("{}/", peer.url)).await?);
                }
                anyhow::Ok(cold)
            }
            .await
        }
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    if let Ok(phone) = phone {
        phone.close().await;
    }
    let _ = peer.child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), peer.child.wait()).await;
    Ok(Column { name: "peer (HTTP)".into(), cold: outcome?, repeat: None, unknown: None, notes: Vec::new() })
}

// ---------------------------------------------------------------------------------------

/// askuser over HTTP and over TLS, then the peer (skipped, with the reason, when it
/// cannot be installed or run).
pub async fn run(bin: &Path, loads: usize, smoke: bool) -> anyhow::Result<Report> {
    let loads = loads.max(1);
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let version = std::process::Command::new("chromium").arg("--version").output();
    let chromium = version.map_or_else(|e| format!("chromium ({e})"), |o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mut columns = Vec::new();
    for tls in [false, true] {
        columns.push(askuser_column(bin, &chromedriver, tls, loads).await?);
    }
    let mut skipped = Vec::new();
    match peer_installed(smoke).await {
        Ok(exe) => match peer_column(&exe, &chromedriver, loads).await {
            Ok(c) => columns.push(c),
            Err(e) => skipped.push(format!("peer ({PEER} {PEER_VERSION}) skipped: {e:#}")),
        },
        Err(e) => skipped.push(format!("peer ({PEER} {PEER_VERSION}) skipped: {e}")),
    }
    Ok(Report { chromium, loads, columns, skipped })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    // The lower middle: a value that was measured.
    xs[(xs.len() - 1) / 2]
}

fn ms(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0} ms")
    } else {
        "–".into()
    }
}

pub fn table(r: &Report) -> String {
    let (latency, down, up) = SLOW_4G;
    let mut t = format!(
        "## A phone on Slow 4G: one waiting question\n\n{}, headless, {}×{} CSS px (×{}, mobile, touch), DevTools' \
         \"Slow 4G\" ({latency} ms latency, {:.2} Mbit/s down, {:.0} kbit/s up) and the CPU {CPU_SLOWDOWN}× slower. \
         Median of {} loads each, ms from the start of the navigation (the page's own clock). Cold: HTTP cache \
         cleared and off, service worker bypassed, on a device the bridge already knows (opened once with its \
         token); then without its session cookie, as a device the bridge does not know. Bytes: HTTP responses' \
         encoded length with headers (DevTools' `Network.loadingFinished`) plus WebSocket frames received, until \
         the network is quiet. DevTools' throttling delays each request, and a WebSocket's handshake, by the \
         latency, but not TCP or TLS handshakes nor WebSocket frames: TLS costs only its CPU here.\n\n",
        r.chromium,
        VIEWPORT.0,
        VIEWPORT.1,
        VIEWPORT.2,
        down * 8.0 / 1e6,
        up * 8.0 / 1e3,
        r.loads
    );
    t.push_str("| |");
    for c in &r.columns {
        let _ = write!(t, " {} |", c.name);
    }
    t.push_str("\n|---|");
    t.push_str(&"--:|".repeat(r.columns.len()));
    t.push('\n');
    let mut row = |name: &str, f: &dyn Fn(&Column) -> String| {
        let _ = write!(t, "| {name} |");
        for c in &r.columns {
            let _ = write!(t, " {} |", f(c));
        }
        t.push('\n');
    };
    let cold = |f: fn(&Sample) -> f64| move |c: &Column| ms(median(c.cold.iter().map(f).collect()));
    row("first contentful paint", &cold(|s| s.fcp));
    row("question text on screen", &cold(|s| s.text));
    row("answer controls on screen", &cold(|s| s.controls));
    row("can take an answer", &cold(|s| s.ready));
    let unknown =
        |f: fn(&Sample) -> f64| move |c: &Column| c.unknown.as_ref().map_or("n/a".into(), |us| ms(median(us.iter().map(f).collect())));
    row("cold, no session cookie: question on screen", &unknown(|s| s.text));
    row("cold, no session cookie: can take an answer", &unknown(|s| s.ready));
    row("layout shift (CLS), cold", &|c| format!("{:.3}", median(c.cold.iter().map(|s| s.cls).collect())));
    row("layout shift (CLS), cold, no session cookie", &|c| {
        c.unknown.as_ref().map_or("n/a".into(), |us| format!("{:.3}", median(us.iter().map(|s| s.cls).collect())))
    });
    row("repeat visit (PWA cache): question on screen", &|c| {
        c.repeat.as_ref().map_or("n/a".into(), |rs| ms(median(rs.iter().map(|s| s.text).collect())))
    });
    row("repeat visit (PWA cache): can take an answer", &|c| {
        c.repeat.as_ref().map_or("n/a".into(), |rs| ms(median(rs.iter().map(|s| s.ready).collect())))
    });
    row("bytes on the wire (cold)", &|c| {
        let bytes = median(c.cold.iter().map(|s| (s.bytes + s.ws_bytes) as f64).collect());
        let responses = median(c.cold.iter().map(|s| s.responses as f64).collect());
        let frames = median(c.cold.iter().map(|s| s.ws_frames as f64).collect());
        let s = |n: f64| if n == 1.0 { "" } else { "s" };
        format!("{:.1} KB in {responses:.0} response{} + {frames:.0} WS frame{}", bytes / 1e3, s(responses), s(frames))
    });
    t.push('\n');
    for c in &r.columns {
        let open = median(c.cold.iter().filter_map(|s| s.ws_open).collect());
        let first = median(c.cold.iter().filter_map(|s| s.ws_first).collect());
        let mut notes = c.notes.clone();
        notes.push(format!("WebSocket (cold): created → open {}, open → first message {}", ms(open), ms(first)));
        let _ = writeln!(t, "- {}: {}.", c.name, notes.join("; "));
    }
    for s in &r.skipped {
        let _ = writeln!(t, "- {s}");
    }
    t
}
