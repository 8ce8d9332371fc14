//! Several bridges on one PostgreSQL database behave as one: a question asked at any
//! appears at all, the first answer wins across them, an agent resumes at any, presence
//! merges, timeouts and the late-answer hook happen once, and a database restart loses
//! nothing acknowledged. Each test runs its own throwaway cluster (`pg.rs`).

use crate::pg::Cluster;
use crate::support::*;
use askuser_core::protocol::{BrowserEvent, ErrorCode, Refused};
use askuser_core::Status;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

async fn bridges(url: &str, n: usize) -> Vec<TestBridge> {
    bridges_with(url, n, |_| {}).await
}

async fn bridges_with(url: &str, n: usize, configure: impl Fn(&mut askuser_bridge::ServeOptions)) -> Vec<TestBridge> {
    let mut all = vec![];
    for _ in 0..n {
        let url = url.to_owned();
        all.push(
            bridge_configured(tempfile::tempdir().unwrap(), |o| {
                o.store = Some(url);
                configure(o);
            })
            .await,
        );
    }
    all
}

fn question(id: &str) -> Value {
    json!({"id": id, "question": "Which database?", "choices": ["PostgreSQL", "SQLite"], "agent": {"name": "bot", "sessionId": format!("s-{id}")}})
}

/// Events on `ws` until `done` says enough (each within 5 s).
async fn until(ws: &mut Socket, mut done: impl FnMut(&BrowserEvent) -> bool) {
    loop {
        if done(&next_event(ws).await) {
            return;
        }
    }
}

#[tokio::test]
async fn three_bridges_one_inbox_each_question_answered_once_from_another_bridge() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 3).await;
    let mut tabs = vec![];
    for bridge in &b {
        let mut tab = bridge.browser().await;
        next_event(&mut tab).await; // the snapshot
        tabs.push(tab);
    }
    let ids: Vec<String> = (0..3).map(|i| format!("q-{i}")).collect();
    let asking: Vec<_> = ids.iter().enumerate().map(|(i, id)| b[i].ask(question(id), "canonical")).collect();
    // Every tab, at every bridge, shows every question.
    for tab in &mut tabs {
        let mut seen = HashSet::new();
        until(tab, |e| {
            if let BrowserEvent::Asked { question } = e {
                seen.insert(question.id.clone());
            }
            seen.len() == 3
        })
        .await;
    }
    // Each question is answered at once from the two other bridges' tabs, differently.
    for (i, id) in ids.iter().enumerate() {
        let (x, y) = ((i + 1) % 3, (i + 2) % 3);
        send(&mut tabs[x], json!({"type": "answer", "ref": "x", "id": id, "answers": [{"selected": ["PostgreSQL"]}]})).await;
        send(&mut tabs[y], json!({"type": "answer", "ref": "y", "id": id, "answers": [{"selected": ["SQLite"]}]})).await;
    }
    // Every tab hears of each answer exactly once; of each pair exactly one won.
    let mut won: HashMap<String, usize> = HashMap::new();
    for (t, tab) in tabs.iter_mut().enumerate() {
        let mut answered: HashMap<String, usize> = HashMap::new();
        let mut replies = 0;
        let expected_replies = 2; // each tab sent two answers (for the two others' questions)
        until(tab, |e| {
            match e {
                BrowserEvent::Answered { id, .. } => *answered.entry(id.clone()).or_default() += 1,
                BrowserEvent::Ack { id, .. } => {
                    *won.entry(id.clone()).or_default() += 1;
                    replies += 1;
                }
                BrowserEvent::Error(Refused { error, .. }) => {
                    assert_eq!(error.code, ErrorCode::Conflict, "the losing answer is a conflict");
                    replies += 1;
                }
                _ => {}
            }
            answered.len() == 3 && replies == expected_replies
        })
        .await;
        assert!(answered.values().all(|n| *n == 1), "tab {t} heard each answer once: {answered:?}");
    }
    assert_eq!(won.len(), 3);
    assert!(won.values().all(|n| *n == 1), "exactly one answer won each question: {won:?}");
    // Each agent got the answer that won, as stored.
    for (i, asked) in asking.into_iter().enumerate() {
        let result: Value = asked.await.unwrap().json().await.unwrap();
        for bridge in &b {
            let stored: Value = bridge.get(&format!("/v1/questions/{}", ids[i])).send().await.unwrap().json().await.unwrap();
            assert_eq!(stored["result"], result, "every bridge reads the same final answer");
        }
    }
}

#[tokio::test]
async fn an_agent_resumes_at_another_bridge_and_its_presence_shows_everywhere() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 3).await;
    let mut tab = b[2].browser().await;
    next_event(&mut tab).await;
    // Asked at A; the agent goes away.
    let first = b[0].ask(question("moving"), "canonical");
    until(&mut tab, |e| matches!(e, BrowserEvent::Asked { question } if question.id == "moving")).await;
    until(&mut tab, |e| matches!(e, BrowserEvent::Agent { agent } if agent.connected)).await;
    first.abort();
    until(&mut tab, |e| matches!(e, BrowserEvent::Agent { agent } if !agent.connected)).await;
    let mut tab_a = b[0].browser().await;
    next_event(&mut tab_a).await;
    // It comes back at B with the same id: resumed, not asked again; the tabs at A and C
    // see it back.
    let resumed = b[1].ask(question("moving"), "canonical");
    until(&mut tab, |e| {
        assert!(!matches!(e, BrowserEvent::Asked { .. }), "a resume is not a new question");
        matches!(e, BrowserEvent::Agent { agent } if agent.session_id == "s-moving" && agent.connected)
    })
    .await;
    until(&mut tab_a, |e| matches!(e, BrowserEvent::Agent { agent } if agent.session_id == "s-moving" && agent.connected)).await;
    // A new tab at A shows the agent connected (merged presence) in its snapshot.
    let mut late = b[0].browser().await;
    let BrowserEvent::Snapshot { agents, questions, .. } = next_event(&mut late).await else { panic!("a snapshot first") };
    assert_eq!(questions.len(), 1);
    assert!(agents.iter().any(|a| a.session_id == "s-moving" && a.connected), "{agents:?}");
    // Answered at C: the agent at B gets it.
    send(&mut tab, json!({"type": "answer", "ref": "r", "id": "moving", "answers": [{"selected": ["SQLite"]}]})).await;
    let response = resumed.await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["answers"][0]["selectedOptions"], json!(["SQLite"]));
    // Answered, its agent no longer waits anywhere: the other bridges show it gone.
    until(&mut tab_a, |e| matches!(e, BrowserEvent::Agent { agent } if agent.session_id == "s-moving" && !agent.connected)).await;
}

#[tokio::test]
async fn a_timeout_fires_once_though_its_bridge_is_gone() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let mut b = bridges(&url, 3).await;
    let mut tab = b[2].browser().await;
    next_event(&mut tab).await;
    let mut asked = question("soon");
    asked["timeoutSeconds"] = json!(2);
    let asking = b[0].ask(asked, "canonical");
    until(&mut tab, |e| matches!(e, BrowserEvent::Asked { .. })).await;
    // The bridge it was asked at stops; the other two both track its timeout.
    asking.abort();
    b.remove(0).stop().await;
    until(&mut tab, |e| matches!(e, BrowserEvent::Withdrawn { id, status: Status::TimedOut } if id == "soon")).await;
    // Once: no second close within the next second, and the store says timed out.
    let more = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            if let BrowserEvent::Withdrawn { .. } | BrowserEvent::Answered { .. } = next_event(&mut tab).await {
                return;
            }
        }
    })
    .await;
    assert!(more.is_err(), "the timeout closed the question once");
    let stored: Value = b[0].get("/v1/questions/soon").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["status"], "timed_out");
}

#[tokio::test]
async fn the_late_answer_hook_runs_once_across_bridges() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let out = tempfile::tempdir().unwrap();
    let log = out.path().join("late.log");
    let hook = vec!["sh".to_owned(), "-c".to_owned(), format!("echo {{id}} >> {}", log.display())];
    let b = bridges_with(&url, 3, |o| o.settings.on_late_answer = hook.clone()).await;
    let mut tab = b[2].browser().await;
    next_event(&mut tab).await;
    let asking = b[0].ask(question("late"), "canonical");
    until(&mut tab, |e| matches!(e, BrowserEvent::Agent { agent } if agent.connected)).await;
    asking.abort();
    until(&mut tab, |e| matches!(e, BrowserEvent::Agent { agent } if !agent.connected)).await;
    send(&mut tab, json!({"type": "answer", "ref": "r", "id": "late", "answers": [{"selected": ["SQLite"]}]})).await;
    until(&mut tab, |e| matches!(e, BrowserEvent::Ack { .. })).await;
    let mut lines = String::new();
    for _ in 0..50 {
        lines = std::fs::read_to_string(&log).unwrap_or_default();
        if !lines.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // room for a second run, if there were one
    let lines = std::fs::read_to_string(&log).unwrap_or(lines);
    assert_eq!(lines, "late\n", "the hook ran exactly once");
}

#[tokio::test]
async fn a_database_restart_loses_nothing_and_the_bridges_resync() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 2).await;
    let mut tab = b[1].browser().await;
    next_event(&mut tab).await;
    let before = b[0].ask(question("before"), "canonical");
    until(&mut tab, |e| matches!(e, BrowserEvent::Asked { .. })).await;
    send(&mut tab, json!({"type": "answer", "ref": "r", "id": "before", "answers": [{"selected": ["SQLite"]}]})).await;
    until(&mut tab, |e| matches!(e, BrowserEvent::Ack { .. })).await;
    assert_eq!(before.await.unwrap().status(), 200);
    let waiting = b[0].ask(question("across"), "canonical");
    until(&mut tab, |e| matches!(e, BrowserEvent::Asked { .. })).await;

    // The database crashes and comes back.
    let store = askuser_bridge::store::Postgres::connect(&url).await.unwrap();
    db.down();
    let e = askuser_bridge::store::Questions::get(&*store, "before").await.expect_err("no database to ask");
    assert!(e.is_transient(), "a database that is down may come back, so the error says try again: {e}");
    assert!(std::error::Error::source(&e).is_some(), "the driver's error is kept: {e:?}");
    let refused = b[1].post("/v1/ask?wait=false").json(&question("while-down")).send().await.unwrap();
    assert!(refused.status().is_server_error(), "an ask while the database is down is refused, not acknowledged");
    let health = b[1].get("/v1/health").send().await.unwrap();
    assert_eq!(health.status(), 503, "a load balancer takes the bridge out");
    let health: Value = health.json().await.unwrap();
    assert!(health["error"].as_str().unwrap().contains("database"), "{health}");
    db.up();

    // Back to healthy with no ask in between (behind a balancer none would arrive): health
    // writes itself, and that write clears the failed one's mark.
    let mut healthy = None;
    for _ in 0..100 {
        let r = b[1].get("/v1/health").send().await.unwrap();
        if r.status() == 200 {
            healthy = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(healthy.is_some(), "the database is back: health says so within 10 s, with no ask to write first");

    // Asked at B after the restart: A hears of it (the listener reconnected and resynced).
    let mut tab_a = b[0].browser().await;
    let BrowserEvent::Snapshot { questions, .. } = next_event(&mut tab_a).await else { panic!("a snapshot") };
    assert_eq!(questions.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), ["across"], "the answered one stayed answered");
    let after = b[1].ask(question("after"), "canonical");
    tokio::time::timeout(
        Duration::from_secs(15),
        until(&mut tab_a, |e| matches!(e, BrowserEvent::Asked { question } if question.id == "after")),
    )
    .await
    .expect("the other bridge hears of a question asked after the restart");
    // The agent that waited across the restart at A gets the answer given at B.
    send(&mut tab, json!({"type": "answer", "ref": "r2", "id": "across", "answers": [{"selected": ["PostgreSQL"]}]})).await;
    let response = tokio::time::timeout(Duration::from_secs(15), waiting).await.expect("the answer arrives").unwrap();
    assert_eq!(response.status(), 200);
    after.abort();
    let stored: Value = b[0].get("/v1/questions/before").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["result"]["answers"][0]["selectedOptions"], json!(["SQLite"]), "the answer acknowledged before the crash is kept");
}

/// A database that answers nothing (paused, its connections open): health and asks say 503
/// within seconds instead of hanging with it, and all is well again once it answers.
#[tokio::test]
async fn a_paused_database_makes_health_and_asks_503_at_once_and_200_after() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 1).await;
    assert_eq!(b[0].get("/v1/health").send().await.unwrap().status(), 200);
    db.freeze(true);
    let started = std::time::Instant::now();
    // Each check answers at once, from the heartbeat's state; the beat the checks ask for
    // and the database does not answer makes it 503 (before: each took 2.0 s).
    let mut slowest = Duration::ZERO;
    let health = loop {
        let asked = std::time::Instant::now();
        let health = tokio::time::timeout(Duration::from_secs(10), b[0].get("/v1/health").send()).await;
        slowest = slowest.max(asked.elapsed());
        match health {
            Ok(Ok(r)) if r.status() == 200 && started.elapsed() < Duration::from_secs(8) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            health => break health,
        }
    };
    let health_after = started.elapsed();
    // An ask fails fast too, acknowledging nothing.
    let asked = tokio::time::timeout(Duration::from_secs(15), b[0].post("/v1/ask?wait=false").json(&question("paused")).send()).await;
    let asked_after = started.elapsed();
    db.freeze(false);
    let asked = asked.expect("an ask answers while the database is paused").unwrap();
    assert_eq!(asked.status(), 503, "not acknowledged");
    assert!(asked.text().await.unwrap().contains("did not answer in time; nothing was acknowledged"));
    assert!(asked_after < Duration::from_secs(12), "health and the ask each within their bound, took {asked_after:?}");
    let health = health.expect("health answers while the database is paused").unwrap();
    assert_eq!(health.status(), 503, "a database that does not answer is not healthy");
    assert!(health_after < Duration::from_secs(5), "503 within the health check's bound, took {health_after:?}");
    assert!(slowest < Duration::from_millis(1_000), "every check answered at once; the slowest took {slowest:?}");
    println!("paused database: health 503 after {health_after:?}, the slowest check took {slowest:?}");
    let health: Value = health.json().await.unwrap();
    assert!(health["error"].as_str().unwrap().contains("did not answer within"), "{health}");
    let mut status = 0;
    for _ in 0..100 {
        status = b[0].get("/v1/health").send().await.unwrap().status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "healthy again once the database answers");
    let again = b[0].post("/v1/ask?wait=false").json(&question("paused")).send().await.unwrap();
    assert!(again.status().is_success(), "asked again with the same id once it answers: {}", again.status());
}

/// A push subscription a browser could make (fixed keys: nothing is pushed to it).
fn push_subscription(endpoint: &str) -> Value {
    use base64::Engine as _;
    use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;
    let public = web_push_native::p256::SecretKey::from_slice(&[7u8; 32]).unwrap().public_key().to_encoded_point(false);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    json!({"endpoint": endpoint, "keys": {"p256dh": b64.encode(public.as_bytes()), "auth": b64.encode([9u8; 16])}})
}

/// Thaws the database when dropped, so a failed assertion never leaves it paused.
struct Thaw<'a>(&'a Cluster);

impl Drop for Thaw<'_> {
    fn drop(&mut self) {
        self.0.freeze(false);
    }
}

/// With the database paused, the store calls behind credentials, teams, push
/// subscriptions, pairing codes and answer links fail within the store's 5 s bound (503;
/// an answer link's page too) instead of hanging with it, and work once it answers.
#[tokio::test]
async fn a_paused_database_fails_every_store_call_in_time_and_they_work_after() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges_with(&url, 1, |o| {
        o.notify.push_services = askuser_bridge::notify::PushServices { hosts: vec!["127.0.0.1".into()], plain_http: true };
    })
    .await;
    let b = &b[0];
    let made = |scope: &str| b.post("/v1/tokens").json(&json!({"scope": scope, "name": "paused"})).send();
    let device: Value = made("device").await.unwrap().json().await.unwrap();
    let device = device["token"].as_str().unwrap().to_owned();
    let agent: Value = made("agent").await.unwrap().json().await.unwrap();
    let agent = agent["credential"]["id"].as_str().unwrap().to_owned();
    let endpoint = "http://127.0.0.1:9/push/paused";
    let link = format!("{}/a/{}", b.url, "0".repeat(32));
    // What each does, its request, and its status while the database is paused and after.
    let calls = || {
        vec![
            ("list the credentials", b.get("/v1/tokens"), 503, 200),
            ("make a credential", b.post("/v1/tokens").json(&json!({"scope": "agent", "name": "ci"})), 503, 201),
            ("revoke a credential", b.http.delete(format!("{}/v1/tokens/{agent}", b.url)).bearer_auth(TOKEN), 503, 200),
            (
                "set a person's teams",
                b.http.put(format!("{}/v1/people/alice", b.url)).bearer_auth(TOKEN).json(&json!({"teams": ["db"]})),
                503,
                200,
            ),
            (
                "subscribe to push",
                b.http
                    .post(format!("{}/v1/push/subscriptions", b.url))
                    .bearer_auth(&device)
                    .json(&json!({"subscription": push_subscription(endpoint)})),
                503,
                201,
            ),
            ("read one's push subscriptions", b.http.get(format!("{}/v1/push", b.url)).bearer_auth(&device), 503, 200),
            (
                "unsubscribe",
                b.http.delete(format!("{}/v1/push/subscriptions", b.url)).bearer_auth(TOKEN).json(&json!({"endpoint": endpoint})),
                503,
                200,
            ),
            ("make a pairing code", b.post("/v1/pairings").json(&json!({"name": "phone"})), 503, 201),
            ("claim a pairing code", b.http.post(format!("{}/v1/pair", b.url)).json(&json!({"code": "NOPE-NOPE"})), 503, 404),
            ("open an answer link", b.http.get(&link), 503, 404),
            ("use an answer link", b.http.post(&link), 503, 404),
        ]
    };
    let send = |request: reqwest::RequestBuilder| async move {
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(Duration::from_secs(20), async {
            let r = request.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
        .await
        .ok();
        (answer, started.elapsed())
    };

    let thaw = Thaw(&db);
    db.freeze(true);
    let paused = calls().into_iter().map(|(what, request, expected, _)| async move { (what, expected, send(request).await) });
    let paused = futures_util::future::join_all(paused).await;
    drop(thaw);
    // Each call's outcome, all of them said at once.
    let wrong: Vec<String> = paused
        .into_iter()
        .filter_map(|(what, expected, (answer, took))| {
            let Some((status, text)) = answer else { return Some(format!("{what}: no answer within 20 s")) };
            let fine = status == expected && text.contains("did not answer") && took < Duration::from_secs(9);
            (!fine).then(|| {
                format!("{what}: expected {expected} within the 5 s bound (and 4 s to spare), got {status} after {took:?}: {text}")
            })
        })
        .collect();
    assert!(wrong.is_empty(), "while the database is paused:\n{}", wrong.join("\n"));

    let mut healthy = 0;
    for _ in 0..100 {
        healthy = b.get("/v1/health").send().await.unwrap().status().as_u16();
        if healthy == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(healthy, 200, "healthy again once the database answers");
    for (what, request, _, expected) in calls() {
        let (answer, _) = send(request).await;
        let Some((status, text)) = answer else { panic!("{what}: no answer within 20 s once the database answers") };
        assert_eq!(status, expected, "{what} once the database answers: {text}");
    }
}

/// Connections the server closed (`pg_terminate_backend`, a restarted pooler, an idle
/// timeout) are not handed to the next ask: each ask right after is stored, not a 500.
#[tokio::test]
async fn asks_right_after_the_server_closed_the_pools_connections_are_stored() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 1).await;
    for round in 0..5 {
        // Every connection of the bridge in the pool is in use once, then idle.
        let warm: Vec<_> = (0..4).map(|i| b[0].post("/v1/ask?wait=false").json(&question(&format!("warm-{round}-{i}"))).send()).collect();
        for r in futures_util::future::join_all(warm).await {
            assert_eq!(r.unwrap().status(), 202);
        }
        db.psql("team", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'team' AND pid <> pg_backend_pid() AND query NOT LIKE 'LISTEN%'");
        let r = b[0].post("/v1/ask?wait=false").json(&question(&format!("after-{round}"))).send().await.unwrap();
        let status = r.status();
        assert_eq!(status, 202, "round {round}: an ask after the server closed the pooled connections: {}", r.text().await.unwrap());
    }
}

/// TLS to the database: a server that takes only TLS connections, its certificate signed
/// by a CA made here. With the CA (`sslrootcert`) the bridge connects and works; without
/// it the certificate does not verify and the bridge says so; without TLS it is refused.
#[tokio::test]
async fn tls_to_the_database_is_verified_against_the_given_ca() {
    needs!(Postgres);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let certs = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server_cert = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let ca_file = certs.path().join("ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();

    // The server's files are its own (PostgreSQL refuses a key others can read).
    let db = Cluster::init(&[
        &format!("port={port}"),
        "listen_addresses=127.0.0.1",
        "ssl=on",
        "ssl_cert_file=server.crt",
        "ssl_key_file=server.key",
    ]);
    let data = db.data();
    std::fs::write(data.join("server.crt"), server_cert.pem()).unwrap();
    std::fs::write(data.join("server.key"), server_key.serialize_pem()).unwrap();
    std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n").unwrap();
    db.own(&["server.crt", "server.key", "pg_hba.conf"]);
    db.up();

    let base = format!("postgresql://askuser@127.0.0.1:{port}/postgres");
    let open = |url: String| async move {
        askuser_bridge::start({
            let mut o = askuser_bridge::ServeOptions::new(tempfile::tempdir().unwrap().keep());
            o.addr = "127.0.0.1:0".into();
            o.token = Some(TOKEN.into());
            o.announce = false;
            o.store = Some(url);
            o
        })
        .await
    };
    let unverified = open(format!("{base}?sslmode=require")).await.err().expect("an unknown CA is refused");
    assert!(format!("{unverified:#}").contains("certificate"), "the error names the certificate: {unverified:#}");
    let plain = open(format!("{base}?sslmode=disable")).await.err().expect("no TLS, no connection");
    assert!(format!("{plain:#}").contains("pg_hba.conf"), "the server's refusal is shown: {plain:#}");

    let url = format!("{base}?sslmode=require&sslrootcert={}", ca_file.display());
    let b = bridges(&url, 2).await;
    let asked = b[0].post("/v1/ask?wait=false").json(&question("over-tls")).send().await.unwrap();
    assert_eq!(asked.status(), 202);
    let stored: Value = b[1].get("/v1/questions/over-tls").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["status"], "pending", "the other bridge reads it over TLS too");
    let health: Value = b[1].get("/v1/health").send().await.unwrap().json().await.unwrap();
    assert_eq!(health["ok"], true, "{health}");
}

/// The store itself: eight connections' worth of bridges finishing one question at
/// once, 50 times: exactly one wins each time, and every loser reads the winner's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_many_concurrent_finishes_exactly_one_wins() {
    needs!(Postgres);
    use askuser_bridge::store::{Finished, Postgres, Questions};
    use askuser_core::protocol::QuestionRecord;
    use askuser_core::{AskResult, Request, Selection};
    let db = Cluster::start();
    let url = db.database("race");
    let mut stores = vec![];
    for _ in 0..8 {
        stores.push(Postgres::connect(&url).await.unwrap());
    }
    let request: Request =
        serde_json::from_value(json!({"questions": [{"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]})).unwrap();
    for round in 0..50 {
        let id = format!("race-{round}");
        let record = QuestionRecord {
            id: id.clone(),
            request: request.clone(),
            status: Status::Pending,
            created_at: 1,
            answered_at: None,
            result: None,
            answered_by: None,
        };
        stores[round % 8].insert(&record).await.unwrap();
        let finishes = stores.iter().enumerate().map(|(i, store)| {
            let (store, request, id) = (store.clone(), request.clone(), id.clone());
            tokio::spawn(async move {
                let label = if i % 2 == 0 { "A" } else { "B" };
                let answers = askuser_core::resolve(&request.questions, &[Selection::option(label)]).unwrap();
                let result = AskResult::answered(&id, &request, answers, 2 + i as u64);
                (result.clone(), store.finish(&id, &result, Some(&format!("c-{i}"))).await.unwrap())
            })
        });
        let outcomes = futures_util::future::join_all(finishes).await;
        let winners: Vec<_> = outcomes.iter().map(|o| o.as_ref().unwrap()).filter(|(_, f)| matches!(f, Finished::Done(_))).collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one finish wins");
        let won = winners[0].0.clone();
        for o in &outcomes {
            match &o.as_ref().unwrap().1 {
                Finished::Done(r) | Finished::AlreadyFinal(r) => assert_eq!(r.result.as_ref(), Some(&won), "round {round}"),
            }
        }
    }
}

/// F8 in the shared store: the condition is in the write itself, so another credential's
/// subscription of an endpoint one holds (two first subscriptions racing past the
/// handler's check, at one bridge or two) is not taken and changes nothing, while its
/// maker's again replaces keys and rules.
#[tokio::test]
async fn a_push_endpoint_is_replaced_only_by_the_credential_that_made_it() {
    needs!(Postgres);
    use askuser_bridge::store::{Deliveries, Postgres, StoredSubscription};
    let db = Cluster::start();
    let url = db.database("push");
    let (a, b) = (Postgres::connect(&url).await.unwrap(), Postgres::connect(&url).await.unwrap());
    let sub = |endpoint: &str, credential: Option<&str>, key: &str, at| StoredSubscription {
        endpoint: endpoint.into(),
        credential: credential.map(str::to_owned),
        p256dh: format!("p256dh-{key}"),
        auth: format!("auth-{key}"),
        rules: format!("{{\"agents\": [\"{key}\"]}}"),
        created_at: at,
    };
    let (phone, admins) = ("https://push.example/phone", "https://push.example/admins");
    assert!(a.add_subscription(&sub(phone, Some("device-a"), "a1", 1)).await.unwrap(), "a new endpoint is taken");
    assert!(!b.add_subscription(&sub(phone, Some("device-b"), "b1", 2)).await.unwrap(), "another credential's is not taken");
    assert!(!b.add_subscription(&sub(phone, None, "admin", 3)).await.unwrap(), "nor the admin token's");
    assert_eq!(b.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a1", 1)], "the first is kept as it was");
    assert!(b.add_subscription(&sub(phone, Some("device-a"), "a2", 4)).await.unwrap(), "its maker's again is taken, at any bridge");
    assert_eq!(a.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a2", 4)], "with its new keys and rules");
    // One the admin token made (no credential) is the admin token's alike.
    assert!(a.add_subscription(&sub(admins, None, "x1", 5)).await.unwrap());
    assert!(!b.add_subscription(&sub(admins, Some("device-a"), "a3", 6)).await.unwrap(), "a device's is not taken");
    assert!(b.add_subscription(&sub(admins, None, "x2", 7)).await.unwrap(), "the admin token's again is taken");
    assert_eq!(a.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a2", 4), sub(admins, None, "x2", 7)]);
}

/// A bridge that stored many questions refreshes the planner's statistics itself, so a
/// snapshot's parts are read by index at once, not after autovacuum's next look.
#[tokio::test]
async fn a_bridge_refreshes_the_statistics_after_many_new_questions() {
    needs!(Postgres);
    use askuser_bridge::store::{Postgres, Questions};
    use askuser_core::protocol::QuestionRecord;
    let db = Cluster::start_with(&["autovacuum=off"]);
    let url = db.database("grown");
    let store = Postgres::connect(&url).await.unwrap();
    let request: askuser_core::Request = serde_json::from_value(json!({"questions": [{"question": "Which?"}]})).unwrap();
    let page = "EXPLAIN SELECT id FROM questions WHERE status = 'pending' AND seq > 0 ORDER BY seq LIMIT 101";
    let analyzed = "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'questions'";
    for n in 0..1_000 {
        let record = QuestionRecord {
            id: format!("g-{n}"),
            request: request.clone(),
            status: Status::Pending,
            created_at: 1,
            answered_at: None,
            result: None,
            answered_by: None,
        };
        store.insert(&record).await.unwrap();
        if n == 998 {
            assert_eq!(db.psql("grown", analyzed).trim(), "f", "not before the 1,000th");
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while db.psql("grown", analyzed).trim() != "t" {
        assert!(std::time::Instant::now() < deadline, "no ANALYZE within 10 s of the 1,000th question");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let plan = db.psql("grown", page);
    assert!(plan.contains("Index Scan using questions_pending"), "{plan}");
}

/// A pairing code made at one bridge works once at any (no sticky sessions), and the
/// device it makes belongs to its person at every bridge.
#[tokio::test]
async fn a_pairing_code_made_at_one_bridge_is_claimed_once_at_another() {
    needs!(Postgres);
    let db = Cluster::start();
    let url = db.database("team");
    let b = bridges(&url, 3).await;
    let made: Value =
        b[0].post("/v1/pairings").json(&json!({"name": "phone", "person": "alice"})).send().await.unwrap().json().await.unwrap();
    let code = made["code"].as_str().unwrap().to_lowercase(); // typed in lower case, as people do
    let claim = |i: usize| b[i].http.post(format!("{}/v1/pair", b[i].url)).json(&json!({"code": code})).send();
    let (first, second) = tokio::join!(claim(1), claim(2));
    let statuses = [first.unwrap().status().as_u16(), second.unwrap().status().as_u16()];
    assert!(statuses.contains(&200) && statuses.contains(&404), "once, at whichever bridge: {statuses:?}");
    let mut devices = Value::Null;
    for _ in 0..40 {
        for bridge in &b {
            devices = bridge.get("/v1/people").send().await.unwrap().json().await.unwrap();
            if devices[0]["person"] != "alice" {
                break;
            }
        }
        if devices[0]["person"] == "alice" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(devices[0]["person"], "alice", "every bridge hears of the new device");
    assert_eq!(devices[0]["devices"].as_array().unwrap().len(), 1, "every bridge knows the new device: {devices}");
}

/// Approval rules and the audit log are the database's: a rule made at one bridge is
/// listed and removed at another, and decisions recorded at either come back at both,
/// newest first. A database prepared before approvals is upgraded by the bridge that
/// starts next.
#[tokio::test]
async fn approval_rules_and_decisions_are_shared_by_every_bridge() {
    needs!(Postgres);
    use askuser_bridge::store::{Postgres, Questions, Store, StoredDecision, StoredRule};
    let db = Cluster::start();
    let url = db.database("approvals");
    let a = Postgres::connect(&url).await.unwrap();
    // As if `a` were from before approvals (schema version 5): `b` upgrades the database,
    // through the steps both stores share (7: notifications keep their message's id; 8:
    // page sessions; 9: when people last wrote).
    db.psql(
        "approvals",
        "DROP TABLE rules, decisions, page_sessions, heard; ALTER TABLE notified DROP COLUMN message; UPDATE askuser_schema SET version = 5",
    );
    let b = Postgres::connect(&url).await.unwrap();
    assert_eq!(db.psql("approvals", "SELECT version FROM askuser_schema").trim(), "9");
    assert!(db.psql("approvals", "SELECT indexname FROM pg_indexes WHERE tablename = 'notified'").contains("notified_message"));
    let rule = |id: &str, at| StoredRule {
        id: id.into(),
        rule: format!("{{\"tool\": \"Bash\", \"prefix\": \"cargo {id}\"}}"),
        created_at: at,
        created_by: Some("c-phone".into()),
    };
    let decision = |summary: &str, at, by: Option<&str>| StoredDecision {
        question: by.map(|_| format!("q-{summary}")),
        tool: "Bash".into(),
        summary: summary.into(),
        decision: if by.is_some() { "allow" } else { "always" }.into(),
        rule: by.is_none().then(|| "r-00000000000a".into()),
        by: by.map(str::to_owned),
        agent: Some("claude-code (s-1)".into()),
        at,
    };
    a.add_rule(&rule("r-00000000000a", 1_000)).await.unwrap();
    b.add_rule(&rule("r-00000000000b", 2_000)).await.unwrap();
    assert!(b.add_rule(&rule("r-00000000000a", 3_000)).await.is_err(), "an id is kept once, whichever bridge made it");
    assert_eq!(b.rules().await.unwrap(), [rule("r-00000000000a", 1_000), rule("r-00000000000b", 2_000)], "oldest first");
    assert!(b.remove_rule("r-00000000000a").await.unwrap(), "removed at the other bridge");
    assert!(!a.remove_rule("r-00000000000a").await.unwrap(), "and gone at both");
    assert!(!a.remove_rule("r-\0").await.unwrap(), "an id that cannot be stored names no rule");
    assert_eq!(a.rules().await.unwrap(), [rule("r-00000000000b", 2_000)]);

    a.add_decision(&decision("first", 1_000, Some("c-phone"))).await.unwrap();
    b.add_decision(&decision("tie-1", 3_000, Some("c-laptop"))).await.unwrap();
    a.add_decision(&decision("ruled", 2_000, None)).await.unwrap();
    a.add_decision(&decision("tie-2", 3_000, Some("c-phone"))).await.unwrap();
    let newest = [decision("tie-2", 3_000, Some("c-phone")), decision("tie-1", 3_000, Some("c-laptop")), decision("ruled", 2_000, None)];
    for store in [&a, &b] {
        let all = store.decisions(10).await.unwrap();
        let summaries: Vec<&str> = all.iter().map(|d| d.summary.as_str()).collect();
        assert_eq!(summaries, ["tie-2", "tie-1", "ruled", "first"], "newest first; ties: the later added first");
        assert_eq!(store.decisions(3).await.unwrap(), newest);
    }
    assert_eq!(b.prune(2_000).await.unwrap(), 0, "the count is of questions");
    assert_eq!(a.decisions(10).await.unwrap(), newest, "decisions before the cutoff are pruned");
    assert_eq!(a.rules().await.unwrap().len(), 1, "rules are not");
    assert_eq!((a.health().await, b.health().await), (Ok(()), Ok(())));
}
