//! The simulated clients: agents (HTTP and the agent socket), browser tabs that answer
//! as soon as a question arrives, and the echo floor.
//!
//! Question ids say who answers: `rt-N` is answered by browser `N % browsers`;
//! `hold-…` is never answered (it stays pending for the load scenario).

use crate::bridge::TOKEN;
use anyhow::{bail, Context};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long any single message may take before the run fails.
pub const MESSAGE_LIMIT: Duration = Duration::from_secs(30);

/// One small Claude Code style question (about 300 bytes of JSON).
pub fn request(id: &str, session: &str) -> Value {
    json!({
        "id": id,
        "questions": [{
            "question": "Deploy build 1234 to production now?",
            "header": "Deploy",
            "options": [
                {"label": "Yes", "description": "Ship it to every region"},
                {"label": "No", "description": "Keep the current release"}
            ],
            "multiSelect": false
        }],
        "agent": {"name": "bench-agent", "sessionId": session}
    })
}

pub async fn next_text(ws: &mut Socket) -> anyhow::Result<Option<(String, Instant)>> {
    loop {
        let frame = tokio::time::timeout(MESSAGE_LIMIT, ws.next()).await.with_context(|| format!("no message within {MESSAGE_LIMIT:?}"))?;
        match frame {
            None | Some(Ok(Message::Close(_))) => return Ok(None),
            Some(Ok(Message::Text(t))) => return Ok(Some((t.as_str().to_owned(), Instant::now()))),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
        }
    }
}

pub async fn connect(url: &str, origin: Option<&str>, bearer: bool) -> anyhow::Result<Socket> {
    let mut req = url.into_client_request()?;
    if let Some(o) = origin {
        req.headers_mut().insert("origin", o.parse()?);
    }
    if bearer {
        req.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse()?);
    }
    // TCP_NODELAY, as browsers and hyper set it: the clients add no Nagle delay of their own.
    let connecting = tokio_tungstenite::connect_async_with_config(req, None, true);
    let (ws, _) = tokio::time::timeout(MESSAGE_LIMIT, connecting).await.context("connect timed out")??;
    Ok(ws)
}

/// An agent socket (`/v1/agent`).
pub async fn agent_socket(base_ws: &str) -> anyhow::Result<Socket> {
    connect(&format!("{base_ws}/v1/agent"), None, true).await
}

/// Asks on an agent socket and waits for the result; returns the round trip.
pub async fn ws_ask(ws: &mut Socket, id: &str, session: &str) -> anyhow::Result<Duration> {
    let msg = json!({"type": "ask", "ref": id, "request": request(id, session), "format": "canonical"});
    let t0 = Instant::now();
    ws.send(Message::text(msg.to_string())).await?;
    for _ in 0..1_000 {
        let Some((text, at)) = next_text(ws).await? else { bail!("the agent socket closed") };
        let v: Value = serde_json::from_str(&text)?;
        match v["type"].as_str() {
            Some("result") if v["id"] == id => {
                if v["status"] != "answered" {
                    bail!("question {id} ended {}", v["status"]);
                }
                return Ok(at - t0);
            }
            Some("error") => bail!("the bridge refused {id}: {text}"),
            _ => {}
        }
    }
    bail!("no result for {id}")
}

/// Sends `ids` as asks on one socket and waits until every one is accepted.
pub async fn ws_hold(ws: &mut Socket, ids: &[String], session: &str) -> anyhow::Result<()> {
    for id in ids {
        let msg = json!({"type": "ask", "ref": id, "request": request(id, session)});
        ws.send(Message::text(msg.to_string())).await?;
    }
    let mut accepted = 0;
    while accepted < ids.len() {
        let Some((text, _)) = next_text(ws).await? else { bail!("the agent socket closed") };
        if text.contains(r#""type":"accepted""#) {
            accepted += 1;
        } else if text.contains(r#""type":"error""#) {
            bail!("the bridge refused a held question: {text}");
        }
    }
    Ok(())
}

/// `POST /v1/ask` and wait for the answer; returns the round trip.
pub async fn http_ask(http: &reqwest::Client, base: &str, id: &str, session: &str) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    let response = tokio::time::timeout(
        MESSAGE_LIMIT,
        http.post(format!("{base}/v1/ask?format=canonical")).bearer_auth(TOKEN).json(&request(id, session)).send(),
    )
    .await
    .with_context(|| format!("no answer to {id} within {MESSAGE_LIMIT:?}"))??;
    let status = response.status();
    let body = response.bytes().await?;
    let took = t0.elapsed();
    if !status.is_success() {
        bail!("POST /v1/ask {id}: {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(took)
}

/// One approval round trip over HTTP (`POST /v1/approve`, Claude Code's permission call),
/// allowed by a browser: how long it took.
pub async fn http_approve(http: &reqwest::Client, base: &str, id: &str, session: &str) -> anyhow::Result<Duration> {
    let body = json!({
        "tool_name": "Bash", "input": {"command": "cargo build --release", "description": "Build the release"},
        "id": id, "cwd": "/srv/bench", "agent": {"name": "bench", "sessionId": session}
    });
    let t0 = Instant::now();
    let response = tokio::time::timeout(MESSAGE_LIMIT, http.post(format!("{base}/v1/approve")).bearer_auth(TOKEN).json(&body).send())
        .await
        .with_context(|| format!("no decision on {id} within {MESSAGE_LIMIT:?}"))??;
    let status = response.status();
    let reply: Value = response.json().await?;
    let took = t0.elapsed();
    if !status.is_success() || reply["behavior"] != "allow" {
        bail!("POST /v1/approve {id}: {status}: {reply}");
    }
    Ok(took)
}

/// When a browser saw an `asked` event for an `rt-` question.
#[derive(Debug)]
pub struct Seen {
    pub browser: usize,
    pub id: String,
    pub at: Instant,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct BrowserReport {
    /// Snapshots after the first: the browser fell behind and was resynced.
    pub resyncs: usize,
    pub answered: usize,
    pub errors: usize,
}

/// A browser tab (`/v1/ui`, with the bridge's Origin) that answers its share of `rt-`
/// questions ("Yes") the moment they arrive. `ready` fires after the first snapshot.
pub async fn browser(
    base: String,
    base_ws: String,
    index: usize,
    count: usize,
    seen: Option<mpsc::UnboundedSender<Seen>>,
    ready: oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<BrowserReport> {
    let mut ws = connect(&format!("{base_ws}/v1/ui?token={TOKEN}"), Some(&base), false).await?;
    let mut report = BrowserReport::default();
    let mut ready = Some(ready);
    let mut snapshots = 0usize;
    loop {
        let frame = tokio::select! {
            f = ws.next() => f,
            _ = stop.wait_for(|s| *s) => break,
        };
        let text = match frame {
            None | Some(Ok(Message::Close(_))) => break,
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
        };
        let at = Instant::now();
        if std::env::var_os("BENCH_TRACE").is_some() {
            eprintln!("browser {index}: {}", &text.as_str()[..text.len().min(120)]);
        }
        let v: Value = serde_json::from_str(text.as_str())?;
        match v["type"].as_str() {
            // A snapshot comes in parts; it is whole with the one without `more`.
            Some("snapshot") if v["more"] != true => {
                snapshots += 1;
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
            }
            Some("asked") => {
                let id = v["question"]["id"].as_str().unwrap_or_default();
                let Some(n) = id.strip_prefix("rt-").and_then(|n| n.parse::<usize>().ok()) else { continue };
                if let Some(tx) = &seen {
                    let _ = tx.send(Seen { browser: index, id: id.to_owned(), at });
                }
                if n % count == index {
                    // The first option: "Yes" of a question, "Allow" of an approval.
                    let first = &v["question"]["request"]["questions"][0]["options"][0]["label"];
                    let answer = json!({"type": "answer", "id": id, "answers": [{"selected": [first]}]});
                    ws.send(Message::text(answer.to_string())).await?;
                    report.answered += 1;
                }
            }
            Some("error") => report.errors += 1,
            _ => {}
        }
    }
    report.resyncs = snapshots.saturating_sub(1);
    let _ = ws.close(None).await;
    Ok(report)
}

/// `count` browsers connected and past their first snapshot.
pub struct Browsers {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<BrowserReport>>>,
}

impl Browsers {
    pub async fn open(base: &str, base_ws: &str, count: usize, seen: Option<mpsc::UnboundedSender<Seen>>) -> anyhow::Result<Browsers> {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        let mut readies = Vec::new();
        for index in 0..count {
            let (ready, is_ready) = oneshot::channel();
            readies.push(is_ready);
            tasks.push(tokio::spawn(browser(base.to_owned(), base_ws.to_owned(), index, count, seen.clone(), ready, stopped.clone())));
        }
        for r in readies {
            tokio::time::timeout(MESSAGE_LIMIT, r)
                .await
                .context("a browser got no snapshot")?
                .context("a browser failed before its snapshot")?;
        }
        Ok(Browsers { stop, tasks })
    }

    pub async fn close(self) -> anyhow::Result<BrowserReport> {
        let _ = self.stop.send(true);
        let mut total = BrowserReport::default();
        for t in self.tasks {
            let r = tokio::time::timeout(MESSAGE_LIMIT, t).await.context("a browser did not stop")???;
            total.resyncs += r.resyncs;
            total.answered += r.answered;
            total.errors += r.errors;
        }
        Ok(total)
    }
}

/// Times one new browser from connect until the last part of its snapshot has arrived;
/// returns the time, the snapshot's size in bytes (all parts) and its number of questions.
pub async fn snapshot_once(base: &str, base_ws: &str) -> anyhow::Result<(Duration, usize, usize)> {
    let t0 = Instant::now();
    let mut ws = connect(&format!("{base_ws}/v1/ui?token={TOKEN}"), Some(base), false).await?;
    let (mut bytes, mut questions) = (0, 0);
    // Bounded: 10,000 parts is a million questions.
    for _ in 0..10_000 {
        let (text, at) = next_text(&mut ws).await?.context("closed before the snapshot")?;
        let v: Value = serde_json::from_str(&text)?;
        if v["type"] != "snapshot" {
            bail!("expected the snapshot's parts first, got {}", v["type"]);
        }
        bytes += text.len();
        questions += v["questions"].as_array().map_or(0, Vec::len);
        if v["more"] != true {
            let _ = ws.close(None).await;
            return Ok((at - t0, bytes, questions));
        }
    }
    bail!("the snapshot did not end")
}

/// The floor: a loopback WebSocket echo between tokio tasks (tokio-tungstenite on both
/// ends, no HTTP routing, no JSON, no store). Returns per-message round trips and wall time.
/// With a `gap`, each client sends one message per `gap` (as agents are paced against
/// the binary), so the floor also pays for waking up from idle.
pub async fn echo_floor(clients: usize, per_client: usize, payload: usize, gap: Duration) -> anyhow::Result<(Vec<Duration>, Duration)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        for _ in 0..clients {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else { return };
                while let Some(Ok(msg)) = ws.next().await {
                    if msg.is_text() && ws.send(msg).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let text = "x".repeat(payload);
    let (done_tx, mut done_rx) = mpsc::channel(clients.max(1));
    let mut sockets = Vec::new();
    for _ in 0..clients {
        sockets.push(connect(&format!("ws://{addr}/"), None, false).await?);
    }
    let t0 = Instant::now();
    for mut ws in sockets {
        let (done_tx, text) = (done_tx.clone(), text.clone());
        tokio::spawn(async move {
            let mut out = Vec::with_capacity(per_client);
            let r: anyhow::Result<()> = async {
                let mut next = tokio::time::Instant::now();
                for _ in 0..per_client {
                    tokio::time::sleep_until(next).await;
                    next += gap;
                    let t = Instant::now();
                    ws.send(Message::text(text.clone())).await?;
                    let (_, at) = next_text(&mut ws).await?.context("the echo closed")?;
                    out.push(at - t);
                }
                Ok(())
            }
            .await;
            let _ = done_tx.send(r.map(|()| out)).await;
        });
    }
    drop(done_tx);
    let mut all = Vec::new();
    while let Some(r) = done_rx.recv().await {
        all.extend(r?);
    }
    let wall = t0.elapsed();
    server.abort();
    Ok((all, wall))
}

/// `agents` agent sockets (agent k at `ws_urls[k % len]`), each asking `per` questions and
/// keeping them pending (64 connecting at once) until `stopped` turns true. Returns once
/// every question was accepted, with the holders (still holding).
pub async fn hold_pending(
    ws_urls: &[String],
    agents: usize,
    per: usize,
    stopped: watch::Receiver<bool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let (filled_tx, mut filled_rx) = mpsc::channel::<anyhow::Result<()>>(agents.max(1));
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
    let mut holders = Vec::new();
    for k in 0..agents {
        let ws_url = ws_urls[k % ws_urls.len()].clone();
        let (filled_tx, gate, mut stopped) = (filled_tx.clone(), gate.clone(), stopped.clone());
        holders.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await;
            let held = async {
                let mut ws = agent_socket(&ws_url).await?;
                let ids: Vec<String> = (0..per).map(|q| format!("hold-{k}-{q}")).collect();
                ws_hold(&mut ws, &ids, &format!("hold-{k}")).await?;
                anyhow::Ok(ws)
            }
            .await;
            drop(permit);
            let mut ws = match held {
                Ok(ws) => {
                    let _ = filled_tx.send(Ok(())).await;
                    ws
                }
                Err(e) => {
                    let _ = filled_tx.send(Err(e)).await;
                    return;
                }
            };
            // Hold the connection (reading, so pings are answered) until told to stop.
            loop {
                tokio::select! {
                    f = ws.next() => if f.is_none() { return },
                    _ = stopped.wait_for(|s| *s) => break,
                }
            }
            let _ = ws.close(None).await;
        }));
    }
    drop(filled_tx);
    for _ in 0..agents {
        filled_rx.recv().await.context("a holder vanished")??;
    }
    Ok(holders)
}

/// Stores question `id` on the bridge at `url` and answers it (`Yes`), as a person would.
pub async fn answered_question(url: &str, id: &str) -> anyhow::Result<()> {
    let http = askuser_bridge::client::http_client(None);
    let stored = http.post(format!("{url}/v1/ask?wait=false")).bearer_auth(TOKEN).json(&request(id, "mcp-bench")).send().await?;
    if stored.status() != 202 {
        bail!("storing {id}: {}", stored.status());
    }
    let answer = http.post(format!("{url}/v1/questions/{id}/answer")).bearer_auth(TOKEN).json(&json!({"answers": ["Yes"]})).send().await?;
    if !answer.status().is_success() {
        bail!("answering {id}: {}", answer.status());
    }
    Ok(())
}
