//! What TLS costs (`askuser serve --tls`): a bridge in this process with its own
//! certificate, and the same bridge without TLS, each asked by a client that pins the
//! certificate as `askuser ask` does. Three figures per bridge: a request on a kept
//! connection (`GET /v1/health`), a new connection for every request (the TCP and
//! TLS handshakes included), and a question's round trip (an agent's `POST /v1/ask`
//! answered by a browser socket, both over TLS when the bridge speaks it).

use crate::stats::{ms, Summary};
use askuser_bridge::client::http;
use askuser_bridge::{start, ServeOptions, Tls};
use std::fmt::Write as _;
use std::time::Instant;

pub struct Figures {
    pub tls: bool,
    pub kept: Summary,
    pub fresh: Summary,
    pub round_trip: Summary,
}

pub async fn run(requests: usize, connections: usize, questions: usize) -> anyhow::Result<Vec<Figures>> {
    let mut out = Vec::new();
    for tls in [false, true] {
        let dir = tempfile::tempdir()?;
        let mut opts = ServeOptions::new(dir.path().to_path_buf());
        opts.addr = "127.0.0.1:0".into();
        opts.announce = false;
        opts.tls = tls.then_some(Tls::SelfSigned);
        let running = start(opts).await?;
        let url = format!("{}/v1/health", running.url);
        let pin = running.fingerprint;
        let kept_client = http(pin).build()?;
        // Warm up: the first handshake and the allocator.
        for _ in 0..20 {
            kept_client.get(&url).bearer_auth(&running.token).send().await?.error_for_status()?;
        }
        let mut kept = Vec::with_capacity(requests);
        for _ in 0..requests {
            let t = Instant::now();
            kept_client.get(&url).bearer_auth(&running.token).send().await?.error_for_status()?.bytes().await?;
            kept.push(t.elapsed());
        }
        let mut fresh = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = http(pin).pool_max_idle_per_host(0).build()?;
            let t = Instant::now();
            client.get(&url).bearer_auth(&running.token).send().await?.error_for_status()?.bytes().await?;
            fresh.push(t.elapsed());
        }
        let round_trip = round_trips(&running, questions).await?;
        running.stop().await;
        out.push(Figures { tls, kept: Summary::of(kept), fresh: Summary::of(fresh), round_trip: Summary::of(round_trip) });
    }
    Ok(out)
}

/// `n` questions asked one after another, each answered by a browser socket as soon as
/// it arrives; 25 ms apart, under the bridge's 50 messages a second per socket.
async fn round_trips(running: &askuser_bridge::Running, n: usize) -> anyhow::Result<Vec<std::time::Duration>> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    let ws = format!("{}/v1/ui?token={}", running.url.replacen("http", "ws", 1), running.token);
    let mut request = ws.into_client_request()?;
    request.headers_mut().insert("origin", running.url.parse()?);
    let socket = askuser_bridge::client::websocket(request, running.fingerprint).await?;
    let (mut sink, mut stream) = socket.split();
    let browser = tokio::spawn(async move {
        while let Some(Ok(frame)) = stream.next().await {
            let Message::Text(text) = frame else { continue };
            let event: serde_json::Value = serde_json::from_str(text.as_str()).unwrap_or_default();
            if event["type"] == "asked" {
                let answer = serde_json::json!({"type": "answer", "id": event["question"]["id"], "answers": [{"selected": ["Yes"]}]});
                if sink.send(Message::Text(answer.to_string().into())).await.is_err() {
                    break;
                }
            }
        }
    });
    let agent = http(running.fingerprint).build()?;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + 20 {
        let body = serde_json::json!({"id": format!("tls-{i}"), "questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
        let t = Instant::now();
        agent
            .post(format!("{}/v1/ask", running.url))
            .bearer_auth(&running.token)
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        if i >= 20 {
            samples.push(t.elapsed()); // the first 20 warm up
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    browser.abort();
    Ok(samples)
}

pub fn table(figures: &[Figures]) -> String {
    let mut out = String::from(
        "## TLS: a request to the bridge, with and without\n\n\
         | bridge | connection | n | p50 ms | p90 ms | p99 ms | max ms |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        let name = if f.tls { "`--tls` (ECDSA P-256, pinned)" } else { "plain HTTP" };
        for (how, s) in [
            ("kept (one request)", &f.kept),
            ("new for each request (handshakes)", &f.fresh),
            ("a question's round trip (agent HTTP, browser socket)", &f.round_trip),
        ] {
            let _ = writeln!(out, "| {name} | {how} | {} | {} | {} | {} | {} |", s.n, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max));
        }
    }
    out
}
