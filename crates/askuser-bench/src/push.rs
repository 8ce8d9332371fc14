//! Web Push to many devices: N subscribed devices, a question asked, and the time until
//! the push service (a receiver in this process, on loopback) has the last of the N
//! messages; and the bridge's CPU per message sent (encryption, VAPID signature, HTTP).
//!
//! The bridge runs as `askuser serve` does, on one thread of its own (a current-thread
//! runtime), so its CPU is that thread's (`/proc/self/task/TID/stat`), apart from the
//! receiver and the asking client.

use crate::stats::{ms, Summary};
use askuser_bridge::notify::PushServices;
use askuser_bridge::{start, ServeOptions};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use web_push_native::p256;

pub struct Figures {
    pub devices: usize,
    pub questions: usize,
    pub first: Summary,
    pub last: Summary,
    pub cpu_per_push: Duration,
    pub rate: f64,
}

/// Arrival times per question id.
type Arrivals = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

pub async fn run(devices: usize, questions: usize) -> anyhow::Result<Figures> {
    // The push service: takes every message (201), notes when it came.
    let arrivals: Arrivals = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let service = format!("http://{}", listener.local_addr()?);
    let seen = arrivals.clone();
    let receive = move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let seen = seen.clone();
        async move {
            let tag = headers.get("topic").and_then(|t| t.to_str().ok()).unwrap_or_default().to_owned();
            if body.len() > 4096 || headers.get("authorization").is_none() {
                return axum::http::StatusCode::BAD_REQUEST;
            }
            seen.lock().unwrap().entry(tag).or_default().push(Instant::now());
            axum::http::StatusCode::CREATED
        }
    };
    let app = axum::Router::new().route("/push/{device}", axum::routing::post(receive));
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The bridge, on its own thread.
    let dir = tempfile::tempdir()?;
    let mut opts = ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.announce = false;
    opts.notify.push_services = PushServices { hosts: vec!["127.0.0.1".into()], plain_http: true };
    let (ready, started) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        askuser_bridge::runtime().block_on(async move {
            let tid = std::fs::read_link("/proc/thread-self").ok().and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok());
            match start(opts).await {
                Ok(running) => {
                    let _ = ready.send(Ok((running.url.clone(), running.token.clone(), tid)));
                    let _ = stopped.await;
                    running.stop().await;
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            }
        });
    });
    let (url, token, tid) = started.await??;
    let http = askuser_bridge::client::http_client(None);
    for i in 0..devices {
        let mut scalar = [0u8; 32];
        getrandom::fill(&mut scalar)?;
        let key = p256::SecretKey::from_slice(&scalar)?;
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let public = key.public_key().to_encoded_point(false);
        let body = serde_json::json!({"subscription": {"endpoint": format!("{service}/push/{i}"),
            "keys": {"p256dh": B64.encode(public.as_bytes()), "auth": B64.encode([i as u8; 16])}}});
        http.post(format!("{url}/v1/push/subscriptions")).bearer_auth(&token).json(&body).send().await?.error_for_status()?;
    }
    let cpu = || tid.and_then(|t| thread_cpu(t).ok()).unwrap_or_default();
    let mut first = Vec::new();
    let mut last = Vec::new();
    let mut cpu_used = Duration::ZERO;
    let mut sending = Duration::ZERO;
    // One warm-up question (connections to the push service open), then the measured ones.
    for q in 0..=questions {
        let id = format!("push-{q}");
        let topic = askuser_bridge::notify::push_topic(&id);
        let (c0, t0) = (cpu(), Instant::now());
        let body = serde_json::json!({"id": id, "questions": [{"question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
        http.post(format!("{url}/v1/ask?wait=false")).bearer_auth(&token).json(&body).send().await?.error_for_status()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let times = loop {
            let got = arrivals.lock().unwrap().get(&topic).cloned().unwrap_or_default();
            if got.len() >= devices {
                break got;
            }
            anyhow::ensure!(Instant::now() < deadline, "{} of {devices} pushes for {id} within 60 s", got.len());
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        if q == 0 {
            continue;
        }
        // The sends' tasks finish just after their answer: let the thread settle.
        tokio::time::sleep(Duration::from_millis(20)).await;
        cpu_used += cpu().saturating_sub(c0);
        let spread = times.iter().max().map_or(Duration::ZERO, |t| t.duration_since(t0));
        sending += spread;
        first.push(times.iter().min().map_or(Duration::ZERO, |t| t.duration_since(t0)));
        last.push(spread);
    }
    let _ = stop.send(());
    let _ = thread.join();
    let pushes = (devices * questions).max(1);
    Ok(Figures {
        devices,
        questions,
        first: Summary::of(first),
        last: Summary::of(last),
        cpu_per_push: cpu_used / pushes as u32,
        rate: pushes as f64 / sending.as_secs_f64().max(1e-9),
    })
}

/// A thread's CPU time (utime + stime) from `/proc/self/task/TID/stat`.
fn thread_cpu(tid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))?;
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest.split_whitespace().skip(11).take(2).filter_map(|f| f.parse().ok()).collect();
    let ticks = crate::stats::clock_ticks();
    Ok(Duration::from_micros(fields.iter().sum::<u64>() * 1_000_000 / ticks.max(1)))
}

pub fn table(f: &Figures) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "## Web Push to {} devices\n\n{} questions, each pushed to every device (RFC 8291 encryption and a VAPID JWT per message) \
         through a push service on loopback; from the ask to each message's arrival.\n",
        f.devices, f.questions
    );
    t.push_str("| measure | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|\n");
    let _ = writeln!(t, "| ask → first push arrives | {} | {} | {} |", ms(f.first.p50), ms(f.first.p99), ms(f.first.max));
    let _ = writeln!(t, "| ask → last of {} pushes arrives | {} | {} | {} |", f.devices, ms(f.last.p50), ms(f.last.p99), ms(f.last.max));
    let _ = writeln!(
        t,
        "\nbridge CPU per push: {:.0} µs (its thread, encryption + signature + HTTP); {:.0} pushes/s while sending",
        f.cpu_per_push.as_secs_f64() * 1e6,
        f.rate
    );
    t
}
