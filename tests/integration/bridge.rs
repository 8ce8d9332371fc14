//! The bridge over real HTTP and WebSockets: round trips, races, resume, restart,
//! refusals and timeouts.

use crate::support::{bridge, bridge_in, next_asked, next_event, next_json, send, TOKEN};
use askuser_bridge::store::Sqlite;
use askuser_bridge::{Bridge, Settings};
use askuser_core::protocol::BrowserEvent;
use askuser_core::Status;
use serde_json::{json, Value};
use std::time::Duration;

fn db_question(id: Option<&str>) -> Value {
    let mut q = json!({"questions": [{
        "question": "Which database should we use?", "header": "Database",
        "options": [{"label": "PostgreSQL (Recommended)", "description": "Relational"}, {"label": "SQLite"}]
    }], "metadata": {"source": "test"}, "agent": {"name": "claude-code", "sessionId": "s-1"}});
    if let Some(id) = id {
        q["id"] = id.into();
    }
    q
}

#[tokio::test]
async fn single_select_round_trip_in_claude_format() {
    let b = bridge().await;
    let mut ui = b.browser().await;
    let BrowserEvent::Snapshot { questions, .. } = next_event(&mut ui).await else { panic!("snapshot first") };
    assert!(questions.is_empty());
    let asking = b.ask(db_question(None), "claude");
    let id = next_asked(&mut ui).await;
    send(&mut ui, json!({"type": "answer", "ref": "r1", "id": id, "answers": [{"selected": ["SQLite"]}]})).await;
    let mut acked = false;
    let mut answered = false;
    while !(acked && answered) {
        match next_event(&mut ui).await {
            BrowserEvent::Ack { reference, .. } => acked = reference == "r1",
            BrowserEvent::Answered { id: aid, by, .. } => {
                assert_eq!(aid, id);
                assert!(by.unwrap().starts_with("c-"));
                answered = true;
            }
            _ => {}
        }
    }
    let response = asking.await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-askuser-id"], id.as_str());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["answers"]["Which database should we use?"], "SQLite");
    assert!(body["message"].as_str().unwrap().starts_with("User has answered your questions"));
}

#[tokio::test]
async fn multi_select_free_text_and_other_in_every_format() {
    let b = bridge().await;
    let mut ui = b.browser().await;
    next_event(&mut ui).await;
    let request = json!({"questions": [
        {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "API"}, {"label": "UI"}]},
        {"question": "What should we name this service?"},
        {"question": "Which cloud?", "options": [{"label": "AWS"}, {"label": "GCP"}]}
    ], "metadata": {"k": 1}});
    let answers = json!([{"selected": ["Auth", "UI"], "custom": "Billing"}, {"custom": "order-processor"}, {"custom": "Hetzner"}]);
    for format in ["canonical", "pi", "text", "claude"] {
        let asking = b.ask(request.clone(), format);
        let id = next_asked(&mut ui).await;
        send(&mut ui, json!({"type": "answer", "id": id, "answers": answers})).await;
        let response = asking.await.unwrap();
        assert_eq!(response.status(), 200, "{format}");
        let text = response.text().await.unwrap();
        match format {
            "canonical" => {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["status"], "answered");
                assert_eq!(v["answers"][0]["answer"], json!(["Auth", "UI", "Billing"]));
                assert_eq!(v["answers"][0]["wasCustom"], true);
                assert_eq!(v["answers"][2]["custom"], "Hetzner");
                assert_eq!(v["metadata"], json!({"k": 1}));
            }
            "pi" => {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["answered"], true);
                assert_eq!(v["answers"][1]["answer"], "order-processor");
            }
            "text" => assert_eq!(
                text,
                "Which features? → Auth, UI, Billing\nWhat should we name this service? → order-processor\nWhich cloud? → Hetzner"
            ),
            _ => {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["answers"]["Which features?"], "Auth, UI, Billing");
            }
        }
    }
}

#[tokio::test]
async fn two_browsers_race_and_exactly_one_wins() {
    let b = bridge().await;
    let (mut one, mut two) = (b.browser().await, b.browser().await);
    next_event(&mut one).await;
    next_event(&mut two).await;
    let asking = b.ask(db_question(None), "canonical");
    let id = next_asked(&mut one).await;
    assert_eq!(next_asked(&mut two).await, id);
    send(&mut one, json!({"type": "answer", "ref": "a", "id": id, "answers": [{"selected": ["PostgreSQL (Recommended)"]}]})).await;
    send(&mut two, json!({"type": "answer", "ref": "b", "id": id, "answers": [{"selected": ["SQLite"]}]})).await;
    let mut outcomes = Vec::new();
    for ws in [&mut one, &mut two] {
        let mut seen_answered = 0;
        let mut mine = None;
        while mine.is_none() || seen_answered == 0 {
            match next_event(ws).await {
                BrowserEvent::Answered { .. } => seen_answered += 1,
                BrowserEvent::Ack { .. } => mine = Some(true),
                BrowserEvent::Error(askuser_core::protocol::Refused { error, .. }) => {
                    assert_eq!(error.code, askuser_core::protocol::ErrorCode::Conflict);
                    mine = Some(false);
                }
                _ => {}
            }
        }
        assert_eq!(seen_answered, 1, "every tab hears of the one answer");
        outcomes.push(mine.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|won| **won).count(), 1, "exactly one answer wins: {outcomes:?}");
    let result: Value = asking.await.unwrap().json().await.unwrap();
    let stored: Value = b.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["result"], result, "the agent got the stored answer");
}

#[tokio::test]
async fn resume_by_id_and_conflicting_reuse() {
    let b = bridge().await;
    // The first ask's connection drops before an answer.
    let first = b.ask(db_question(Some("run-7")), "canonical");
    tokio::time::sleep(Duration::from_millis(100)).await;
    first.abort();
    let pending: Value = b.get("/v1/questions?status=pending").send().await.unwrap().json().await.unwrap();
    assert_eq!(pending[0]["id"], "run-7");
    // Asking again with the same id waits on the same question.
    let second = b.ask(db_question(Some("run-7")), "canonical");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let answered = b.post("/v1/questions/run-7/answer").json(&json!({"answers": ["sqlite"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let v: Value = second.await.unwrap().json().await.unwrap();
    assert_eq!(v["answers"][0]["answer"], "SQLite");
    // An answered id returns its result at once.
    let again: Value = b.ask(db_question(Some("run-7")), "canonical").await.unwrap().json().await.unwrap();
    assert_eq!(again, v);
    // The same id with other questions is refused and changes nothing.
    let mut other = db_question(Some("run-7"));
    other["questions"][0]["question"] = "Which cache?".into();
    let r = b.ask(other, "canonical").await.unwrap();
    assert_eq!(r.status(), 409);
    let stored: Value = b.get("/v1/questions/run-7").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["request"]["questions"][0]["question"], "Which database should we use?");
    // A second answer is refused too.
    let r = b.post("/v1/questions/run-7/answer").json(&json!({"answers": ["PostgreSQL (Recommended)"]})).send().await.unwrap();
    assert_eq!(r.status(), 409);
}

#[tokio::test]
async fn restart_keeps_pending_and_answered_questions() {
    let b = bridge().await;
    let pending = b.ask(db_question(Some("keep-pending")), "canonical");
    let done = b.ask(db_question(Some("keep-answered")), "canonical");
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.post("/v1/questions/keep-answered/answer").json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    let answered: Value = done.await.unwrap().json().await.unwrap();
    let dir = b.stop().await;
    // The waiting agent was told the bridge went away, and may resume.
    assert_eq!(pending.await.unwrap().status(), 503);

    let b = bridge_in(dir).await;
    let mut ui = b.browser().await;
    let BrowserEvent::Snapshot { questions, .. } = next_event(&mut ui).await else { panic!() };
    assert_eq!(questions.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), ["keep-pending"]);
    let again: Value = b.ask(db_question(Some("keep-answered")), "canonical").await.unwrap().json().await.unwrap();
    assert_eq!(again, answered);
    let resumed = b.ask(db_question(Some("keep-pending")), "text");
    tokio::time::sleep(Duration::from_millis(100)).await;
    send(&mut ui, json!({"type": "answer", "id": "keep-pending", "answers": [{"custom": "DuckDB"}]})).await;
    assert_eq!(resumed.await.unwrap().text().await.unwrap(), "Which database should we use? → DuckDB");
}

#[tokio::test]
async fn refusals_401_403_413_400() {
    let b = bridge().await;
    let url = &b.url;
    let client = askuser_bridge::client::http_client(None);
    // No token, wrong token.
    let r = client.get(format!("{url}/v1/questions")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = client.get(format!("{url}/v1/questions")).bearer_auth("wrong-token-0123456789").send().await.unwrap();
    assert_eq!(r.status(), 401);
    // A foreign Origin (a web page the developer visits) and a foreign Host (DNS rebinding).
    let r = b.get("/v1/questions").header("origin", "https://evil.example").send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = b.get("/v1/questions").header("host", "evil.example:7823").send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = client.get(format!("{url}/")).header("host", "attacker.test").send().await.unwrap();
    assert_eq!(r.status(), 403);
    // The browser socket: no Origin, a foreign one, no token.
    assert!(b.socket("/v1/ui", None).await.is_err());
    assert!(b.socket("/v1/ui", Some("https://evil.example")).await.is_err());
    // Oversized body.
    let big = json!({"question": "x".repeat(2 * 1024 * 1024)});
    let r = b.post("/v1/ask").json(&big).send().await.unwrap();
    assert_eq!(r.status(), 413);
    // Malformed and invalid requests: 400 with every path.
    let r = b.post("/v1/ask").body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["message"].as_str().unwrap().starts_with("expected JSON"));
    let r = b
        .post("/v1/ask")
        .json(&json!({"questions": [{"question": ""}, {"question": "Q", "options": [{"label": "A"}, {"label": "a"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let paths: Vec<&str> = v["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["questions[0].question", "questions[1].options[1].label"]);
    // Nothing was stored by any of it.
    let all: Value = b.get("/v1/questions?status=all").send().await.unwrap().json().await.unwrap();
    assert_eq!(all, json!([]));
    // Security headers on the page.
    let r = client.get(format!("{url}/")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert!(r.headers()["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn agent_socket_asks_several_and_withdraws() {
    let b = bridge().await;
    let mut ui = b.browser().await;
    next_event(&mut ui).await;
    let mut agent = b.socket("/v1/agent", None).await.unwrap();
    send(&mut agent, json!({"type": "ask", "ref": "1", "request": {"question": "First?"}, "format": "text"})).await;
    send(&mut agent, json!({"type": "ask", "ref": "2", "request": {"question": "Second?", "choices": ["Yes", "No"]}})).await;
    send(&mut agent, json!({"type": "ask", "ref": "3", "request": {"questions": []}})).await;
    let mut ids = std::collections::HashMap::new();
    for _ in 0..3 {
        let m = next_json(&mut agent).await;
        match m["type"].as_str().unwrap() {
            "accepted" => {
                ids.insert(m["ref"].as_str().unwrap().to_owned(), m["id"].as_str().unwrap().to_owned());
            }
            "error" => {
                assert_eq!(m["ref"], "3");
                assert_eq!(m["error"]["errors"][0]["path"], "questions");
            }
            t => panic!("unexpected {t}"),
        }
    }
    // Answer the second first: results arrive in answer order.
    send(&mut ui, json!({"type": "answer", "id": ids["2"], "answers": [{"selected": ["no"]}]})).await;
    let m = next_json(&mut agent).await;
    assert_eq!((m["type"].as_str(), m["id"].as_str()), (Some("result"), Some(ids["2"].as_str())));
    assert_eq!(m["result"]["answers"][0]["answer"], "No");
    send(&mut agent, json!({"type": "withdraw", "id": ids["1"]})).await;
    let m = next_json(&mut agent).await;
    assert_eq!(m["status"], "withdrawn");
    assert!(m["result"].as_str().unwrap().contains("withdrawn"));
    // A bad frame gets a clear error and the socket stays usable.
    send(&mut agent, json!({"type": "explode"})).await;
    let m = next_json(&mut agent).await;
    assert_eq!(m["error"]["message"], "type: expected one of ask, withdraw, got \"explode\"");
}

#[tokio::test]
async fn browser_cancel_reaches_the_agent() {
    let b = bridge().await;
    let mut ui = b.browser().await;
    next_event(&mut ui).await;
    let asking = b.ask(db_question(None), "claude");
    let id = next_asked(&mut ui).await;
    send(&mut ui, json!({"type": "cancel", "id": id})).await;
    let v: Value = asking.await.unwrap().json().await.unwrap();
    assert!(v["message"].as_str().unwrap().contains("Do not assume an answer"));
    let stored: Value = b.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["status"], "cancelled");
}

#[tokio::test]
async fn chat_about_this_tells_the_agent_to_talk_it_over() {
    let b = bridge().await;
    let mut ui = b.browser().await;
    next_event(&mut ui).await;
    // From a tab.
    let asking = b.ask(db_question(None), "claude");
    let id = next_asked(&mut ui).await;
    send(&mut ui, json!({"type": "cancel", "id": id, "chat": true})).await;
    let v: Value = asking.await.unwrap().json().await.unwrap();
    assert_eq!(v["chat"], true);
    assert!(v["message"].as_str().unwrap().contains("talk these questions over"), "{v}");
    // Over HTTP, with a bad body refused by name and a good one accepted.
    let asking = b.ask(db_question(None), "canonical");
    let id = next_asked(&mut ui).await;
    let r = b.post(&format!("/v1/questions/{id}/cancel")).json(&json!({"chat": "yes"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("chat: expected true or false"));
    let r = b.post(&format!("/v1/questions/{id}/cancel")).json(&json!({"chat": true})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = asking.await.unwrap().json().await.unwrap();
    assert_eq!((v["status"].as_str(), v["chat"].as_bool()), (Some("cancelled"), Some(true)));
}

#[tokio::test(start_paused = true)]
async fn timeouts_fire_under_paused_time() {
    let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), Settings { default_timeout: Some(3600), ..Settings::default() });
    bridge.start_background().await.unwrap();
    let own = bridge.ask(&json!({"question": "Quick?", "timeoutSeconds": 60})).await.unwrap();
    let default = bridge.ask(&json!({"question": "Slow?"})).await.unwrap();
    let (b1, b2) = (bridge.clone(), bridge.clone());
    let own_wait = tokio::spawn(async move { b1.wait(&own.record.id).await.unwrap() });
    let default_wait = tokio::spawn(async move { b2.wait(&default.record.id).await.unwrap() });
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(!own_wait.is_finished());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = own_wait.await.unwrap();
    assert_eq!(r.status, Status::TimedOut);
    assert!(r.summary().contains("timed out"));
    assert!(!default_wait.is_finished());
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(default_wait.await.unwrap().status, Status::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_question_is_withdrawn_after_the_grace_period() {
    let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), Settings { grace: Duration::from_secs(100), ..Settings::default() });
    bridge.start_background().await.unwrap();
    let asked = bridge.ask(&json!({"question": "Anyone?"})).await.unwrap();
    let id = asked.record.id.clone();
    // An agent waits for a while, then goes away.
    let b = bridge.clone();
    let waiting = tokio::spawn({
        let id = id.clone();
        async move { b.wait(&id).await }
    });
    tokio::time::sleep(Duration::from_secs(500)).await;
    assert_eq!(bridge.get(&id).await.unwrap().status, Status::Pending, "a waiting agent keeps it");
    waiting.abort();
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert_eq!(bridge.get(&id).await.unwrap().status, Status::Pending, "still within the grace period");
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(bridge.get(&id).await.unwrap().status, Status::Withdrawn);
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error() {
    let b = bridge().await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = b.running().addr.to_string();
    opts.token = Some(TOKEN.into());
    let err = askuser_bridge::start(opts).await.err().expect("the second bridge cannot bind");
    assert!(err.to_string().contains("is already in use"), "{err}");
    // The first bridge is untouched.
    assert_eq!(b.get("/v1/health").send().await.unwrap().status(), 200);
}

/// Sessions with nothing pending and no agent connected leave the snapshot (a busy
/// bridge once sent 2,000 finished sessions to every new tab); busy ones stay.
#[tokio::test]
async fn finished_agent_sessions_are_forgotten() {
    let settings = Settings { grace: Duration::from_millis(200), ..Settings::default() };
    let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), settings);
    bridge.start_background().await.unwrap();
    let ask = |id: &str, session: &str| json!({"id": id, "question": "Go?", "choices": ["Yes", "No"], "agent": {"name": session, "sessionId": session}});
    bridge.ask(&ask("done", "s-done")).await.unwrap();
    bridge.ask(&ask("busy", "s-busy")).await.unwrap();
    let waiting = {
        let bridge = bridge.clone();
        tokio::spawn(async move { bridge.wait("busy").await })
    };
    bridge.answer("done", &[askuser_core::Selection::option("Yes")], Default::default()).await.unwrap();
    async fn sessions(bridge: &Bridge) -> Vec<String> {
        let Some(BrowserEvent::Snapshot { agents, .. }) = bridge.snapshot("c").await.unwrap().into_iter().next() else {
            panic!("a snapshot")
        };
        let mut ids: Vec<String> = agents.into_iter().map(|a| a.session_id).collect();
        ids.sort();
        ids
    }
    let mut now = sessions(&bridge).await;
    for _ in 0..50 {
        if now == ["s-busy"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        now = sessions(&bridge).await;
    }
    assert_eq!(now, ["s-busy"], "the finished session is forgotten, the waiting one kept");
    waiting.abort();
}

/// A snapshot comes in parts of at most 100 questions, read from the store part by part:
/// the agents in the first, every pending question once, oldest first; one answered
/// between two parts is simply not in the later one.
#[tokio::test]
async fn a_snapshot_is_read_part_by_part() {
    let bridge = Bridge::new(Sqlite::open_in_memory().unwrap(), Settings::default());
    for i in 0..250 {
        bridge.ask(&json!({"id": format!("q-{i:03}"), "question": "Go?", "agent": {"name": "bot", "sessionId": "s-1"}})).await.unwrap();
    }
    let questions = |part: &BrowserEvent| match part {
        BrowserEvent::Snapshot { questions, agents, more, .. } => {
            (questions.iter().map(|q| q.id.clone()).collect::<Vec<_>>(), agents.len(), *more)
        }
        other => panic!("a snapshot part, got {other:?}"),
    };
    let mut cursor = bridge.snapshot_cursor();
    let (first, agents, more) = questions(&bridge.snapshot_part("c-1", &mut cursor).await.unwrap().unwrap());
    assert_eq!((first.len(), agents, more), (100, 1, true));
    assert_eq!(first[0], "q-000");
    bridge.answer("q-150", &[askuser_core::Selection::custom("done")], Default::default()).await.unwrap();
    let mut rest = Vec::new();
    while let Some(part) = bridge.snapshot_part("c-1", &mut cursor).await.unwrap() {
        let (ids, agents, _) = questions(&part);
        assert_eq!(agents, 0, "the agents come once, in the first part");
        rest.extend(ids);
    }
    assert_eq!(rest.len(), 149, "q-100 to q-249 but the one answered meanwhile");
    assert!(!rest.contains(&"q-150".to_owned()) && rest.windows(2).all(|w| w[0] < w[1]), "oldest first, each once");
    assert!(bridge.snapshot_part("c-1", &mut cursor).await.unwrap().is_none(), "done stays done");
}

/// The app's files go out as `scripts/build-ui` compressed them, chosen by the browser's
/// `Accept-Encoding` (with `Vary`), and as they are without it; the page itself (which the
/// binary changes) and small files always as they are. Each form decodes to the file.
#[tokio::test]
async fn the_apps_files_are_served_precompressed_by_accept_encoding() {
    needs!(Node);
    let b = bridge().await;
    let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../askuser-bridge/ui");
    let names: Vec<String> = std::fs::read_dir(&ui).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
    let wasm = names.iter().find(|n| n.ends_with("_bg.wasm")).expect("the app's wasm in crates/askuser-bridge/ui");
    let get = async |path: &str, accept: Option<&str>| {
        let mut request = b.http.get(format!("{}/{path}", b.url));
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let encoding = r.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_owned());
        let vary = r.headers().get("vary").map(|v| v.to_str().unwrap().to_owned());
        (encoding, vary, r.bytes().await.unwrap().to_vec())
    };
    let file = std::fs::read(ui.join(wasm)).unwrap();
    assert_eq!(get(wasm, None).await, (None, Some("accept-encoding".into()), file.clone()), "no Accept-Encoding: as it is");
    assert_eq!(get(wasm, Some("br;q=0, gzip;q=0")).await.0, None, "both refused");
    for (accept, coding, ext) in [("gzip, deflate, br, zstd", "br", "br"), ("gzip, deflate", "gzip", "gz"), ("gzip, br;q=0", "gzip", "gz")]
    {
        let (encoding, vary, body) = get(wasm, Some(accept)).await;
        assert_eq!((encoding.as_deref(), vary.as_deref()), (Some(coding), Some("accept-encoding")), "{accept}");
        assert_eq!(body, std::fs::read(ui.join(format!("{wasm}.{ext}"))).unwrap(), "{accept}: the file build-ui made");
        assert_eq!(decoded(coding, &body), file, "{coding} decodes to the file");
    }
    let br = std::fs::read(ui.join(format!("{wasm}.br"))).unwrap();
    assert!(br.len() * 100 < file.len() * 35, "brotli makes the wasm {} of {} bytes", br.len(), file.len());
    // (`/` is a page the bridge makes: first.rs, gzipped when it may.)
    for small in ["index.html", "favicon.svg", "manifest.webmanifest"] {
        let (encoding, vary, _) = get(small, Some("gzip, deflate, br")).await;
        assert_eq!((encoding, vary), (None, None), "/{small} goes as it is");
    }
}

/// `body` decoded from `coding`, by Node's zlib.
fn decoded(coding: &str, body: &[u8]) -> Vec<u8> {
    let f = if coding == "br" { "brotliDecompressSync" } else { "gunzipSync" };
    let mut node = std::process::Command::new("node")
        .args(["-e", &format!("const z = require('zlib'); const b = []; process.stdin.on('data', d => b.push(d)).on('end', () => process.stdout.write(z.{f}(Buffer.concat(b))))")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (scripts/setup installs it)");
    let mut stdin = node.stdin.take().unwrap();
    let input = body.to_vec();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input).unwrap());
    let out = node.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "node could not decode {coding}");
    out.stdout
}
