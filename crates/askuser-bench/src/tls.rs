//! What TLS costs (`askuser serve --tls`): a bridge in this process with its own
//! certificate, and the same bridge without TLS, each asked by a client that pins the
//! certificate as `askuser ask` does. Two figures per bridge: a request on a kept
//! connection (`GET /v1/health`), and a new connection for every request (the TCP and
//! TLS handshakes included).

use crate::stats::{ms, Summary};
use askuser::serve::{start, ServeOptions, Tls};
use askuser::tls::http;
use std::fmt::Write as _;
use std::time::Instant;

pub struct Figures {
    pub tls: bool,
    pub kept: Summary,
    pub fresh: Summary,
}

pub async fn run(requests: usize, connections: usize) -> anyhow::Result<Vec<Figures>> {
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
        running.stop().await;
        out.push(Figures { tls, kept: Summary::of(kept), fresh: Summary::of(fresh) });
    }
    Ok(out)
}

pub fn table(figures: &[Figures]) -> String {
    let mut out = String::from(
        "## TLS: a request to the bridge, with and without\n\n\
         | bridge | connection | n | p50 ms | p90 ms | p99 ms | max ms |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        let name = if f.tls { "`--tls` (ECDSA P-256, pinned)" } else { "plain HTTP" };
        for (how, s) in [("kept (one request)", &f.kept), ("new for each request (handshakes)", &f.fresh)] {
            let _ = writeln!(out, "| {name} | {how} | {} | {} | {} | {} | {} |", s.n, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max));
        }
    }
    out
}
