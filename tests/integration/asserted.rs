//! Behaviour the bridge implements that no other test pinned down: the cap on pending
//! questions per agent session, identical resends, the fresh snapshot for a tab that
//! falls behind, answers a tab queued across a restart, and `askuser ask`'s exit code
//! for a withdrawn question.

use crate::support::{bridge, bridge_at, bridge_with, next_event, next_json, send, Socket, TestBridge, TOKEN};
use askuser_bridge::Settings;
use askuser_core::protocol::{BrowserEvent, SNAPSHOT_PART};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// `EVENT_BUFFER` in `crates/askuser-bridge/src/hub.rs`: the broadcast channel's capacity, i.e.
/// how many events a tab may fall behind before it is resynced from a snapshot.
const EVENT_BUFFER: usize = 1024;

fn db_question(id: &str, session: Option<&str>) -> Value {
    let mut q = json!({"id": id, "questions": [{
        "question": "Which database?", "header": "DB",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]
    }]});
    if let Some(s) = session {
        q["agent"] = json!({"name": "bot", "sessionId": s});
    }
    q
}

/// The stored record, which must exist.
async fn record(b: &TestBridge, id: &str) -> Value {
    let r = b.get(&format!("/v1/questions/{id}")).send().await.unwrap();
    assert_eq!(r.status(), 200, "{id} is stored");
    r.json().await.unwrap()
}

/// Reads frames (pings skipped) into `log` until one matches `until`, and returns it.
async fn read_until(ws: &mut Socket, log: &mut Vec<Value>, until: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..5_000 {
        let v = next_json(ws).await;
        log.push(v.clone());
        if until(&v) {
            return v;
        }
    }
    panic!("no matching frame in 5,000: {:?}", log.last());
}

/// Reads until the socket closes; the close code, if a close frame came.
async fn close_code(ws: &mut Socket) -> Option<u16> {
    for _ in 0..1_000 {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("the socket closes within 5 s") {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
    panic!("the socket never closed");
}

/// Takes `snapshot` parts until the last (`more` unset); every part must be one, of at
/// most [`SNAPSHOT_PART`] questions, for `client`. Returns the questions' ids, in order.
async fn snapshot_ids(ws: &mut Socket, client: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for part in 0.. {
        assert!(part < 1_000, "a snapshot that never ends");
        match next_event(ws).await {
            BrowserEvent::Snapshot { client: c, questions, more, .. } => {
                assert_eq!(c, client, "the snapshot names the same connection");
                assert!(!questions.is_empty() && questions.len() <= SNAPSHOT_PART, "part {part} has {} questions", questions.len());
                ids.extend(questions.into_iter().map(|q| q.id));
                if !more {
                    return ids;
                }
            }
            other => panic!("part {part}: expected a snapshot part, got {}", brief(&other)),
        }
    }
    unreachable!()
}

/// An event in one line (a snapshot of a thousand questions would fill the screen).
fn brief(event: &BrowserEvent) -> String {
    match event {
        BrowserEvent::Snapshot { questions, more, .. } => format!("a snapshot part of {} questions (more: {more})", questions.len()),
        BrowserEvent::Asked { question } => format!("{} asked", question.id),
        other => format!("{other:?}"),
    }
}

/// Opens a browser socket, reads its first snapshot and returns the socket and its client id.
async fn tab(b: &TestBridge) -> (Socket, String) {
    let mut ws = b.browser().await;
    let BrowserEvent::Snapshot { client, .. } = next_event(&mut ws).await else { panic!("snapshot first") };
    (ws, client)
}

// ---------------------------------------------------------------------------------
// 1. max_pending_per_session
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_session_at_its_pending_limit_gets_429_others_do_not_and_a_final_question_frees_a_slot() {
    let b = bridge_with(Settings { max_pending_per_session: 2, ..Settings::default() }).await;
    let store = |id: &str, session: Option<&str>| b.post("/v1/ask?wait=false").json(&db_question(id, session)).send();
    let refusal = json!({"code": "too_many",
        "message": "agent session \"s-a\" already has 2 pending questions (at most 2); wait for answers first"});
    for id in ["a-1", "a-2"] {
        assert_eq!(store(id, Some("s-a")).await.unwrap().status(), 202, "{id}");
    }
    // One more from the same session: refused by name, with wait=false and without.
    let r = store("a-3", Some("s-a")).await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.json::<Value>().await.unwrap(), refusal);
    let blocking = b.post("/v1/ask").json(&db_question("a-3", Some("s-a"))).send();
    let r = tokio::time::timeout(Duration::from_secs(2), blocking).await.expect("refused at once, not held").unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.json::<Value>().await.unwrap(), refusal);
    // The agent socket refuses it the same way, naming the ask's ref.
    let mut agent = b.socket("/v1/agent", None).await.unwrap();
    send(&mut agent, json!({"type": "ask", "ref": "k-3", "request": db_question("a-3", Some("s-a"))})).await;
    assert_eq!(next_json(&mut agent).await, json!({"type": "error", "ref": "k-3", "error": refusal}));
    assert_eq!(b.get("/v1/questions/a-3").send().await.unwrap().status(), 404, "nothing was stored");
    // Resuming a question the session already has is not one more.
    let r = store("a-1", Some("s-a")).await.unwrap();
    assert_eq!(r.status(), 200, "a resume at the limit");
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "pending");
    // ...but reusing its id for other questions is a conflict there too (it was
    // answered with the old question's record).
    let mut other = db_question("a-1", Some("s-a"));
    other["questions"][0]["question"] = json!("Which cache?");
    let r = b.post("/v1/ask?wait=false").json(&other).send().await.unwrap();
    assert_eq!(r.status(), 409, "a different question under a known id, at the limit");
    // Another session, and an ask that names none, are unaffected.
    assert_eq!(store("b-1", Some("s-b")).await.unwrap().status(), 202);
    assert_eq!(store("n-1", None).await.unwrap().status(), 202);
    // An answer frees a slot: one more fits, and the next is refused again.
    let r = b.post("/v1/questions/a-1/answer").json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(store("a-3", Some("s-a")).await.unwrap().status(), 202);
    let r = store("a-4", Some("s-a")).await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.json::<Value>().await.unwrap(), refusal);
    // So does a withdrawal.
    assert_eq!(b.http.delete(format!("{}/v1/questions/a-2", b.url)).bearer_auth(TOKEN).send().await.unwrap().status(), 200);
    assert_eq!(store("a-4", Some("s-a")).await.unwrap().status(), 202);
    let pending: Value = b.get("/v1/questions?status=pending").send().await.unwrap().json().await.unwrap();
    let mut ids: Vec<&str> = pending.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a-3", "a-4", "b-1", "n-1"]);
}

// ---------------------------------------------------------------------------------
// 2. Identical resends
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn an_identical_resend_is_acknowledged_and_a_different_answer_is_a_conflict() {
    let b = bridge().await;
    let (mut one, one_client) = tab(&b).await;
    let (mut two, _) = tab(&b).await;
    let (mut log_one, mut log_two) = (Vec::new(), Vec::new());
    let mut agent = b.socket("/v1/agent", None).await.unwrap();
    send(&mut agent, json!({"type": "ask", "ref": "k", "request": db_question("dup-1", Some("s-1")), "format": "canonical"})).await;
    assert_eq!(next_json(&mut agent).await, json!({"type": "accepted", "ref": "k", "id": "dup-1", "resumed": false}));
    for (ws, log) in [(&mut one, &mut log_one), (&mut two, &mut log_two)] {
        read_until(ws, log, |v| v["type"] == "asked" && v["question"]["id"] == "dup-1").await;
    }
    let answer = json!({"type": "answer", "ref": "r1", "id": "dup-1", "answers": [{"selected": ["SQLite"]}]});
    send(&mut one, answer.clone()).await;
    let reply = read_until(&mut one, &mut log_one, |v| v["type"] == "ack" || v["type"] == "error").await;
    assert_eq!(reply, json!({"type": "ack", "ref": "r1", "id": "dup-1"}));
    let result = next_json(&mut agent).await;
    assert_eq!(
        (result["type"].as_str(), result["id"].as_str(), result["status"].as_str()),
        (Some("result"), Some("dup-1"), Some("answered"))
    );
    assert_eq!(result["result"]["answers"][0]["answer"], "SQLite");
    let stored = record(&b, "dup-1").await;
    assert_eq!(stored["result"], result["result"], "the agent got the stored answer");
    assert_eq!(stored["answeredBy"], one_client.as_str());

    // The same message again (the same ref), and from another tab with another ref.
    send(&mut one, answer.clone()).await;
    let reply = read_until(&mut one, &mut log_one, |v| v["type"] == "ack" || v["type"] == "error").await;
    assert_eq!(reply, json!({"type": "ack", "ref": "r1", "id": "dup-1"}));
    let mut again = answer.clone();
    again["ref"] = "r2".into();
    send(&mut two, again).await;
    let reply = read_until(&mut two, &mut log_two, |v| v["type"] == "ack" || v["type"] == "error").await;
    assert_eq!(reply, json!({"type": "ack", "ref": "r2", "id": "dup-1"}));
    assert_eq!(record(&b, "dup-1").await, stored, "a resend changes nothing, not even who answered or when");

    // A different answer is refused and changes nothing.
    send(&mut one, json!({"type": "answer", "ref": "r3", "id": "dup-1", "answers": [{"selected": ["PostgreSQL"]}]})).await;
    let reply = read_until(&mut one, &mut log_one, |v| v["type"] == "ack" || v["type"] == "error").await;
    assert_eq!(
        reply,
        json!({"type": "error", "ref": "r3", "id": "dup-1",
            "error": {"code": "conflict", "message": "question \"dup-1\" is already final (answered); nothing was changed"}})
    );
    assert_eq!(record(&b, "dup-1").await, stored);

    // Every tab heard of the answer exactly once: a question asked now comes after
    // anything the resends could have broadcast.
    assert_eq!(b.post("/v1/ask?wait=false").json(&db_question("marker", None)).send().await.unwrap().status(), 202);
    for (ws, log) in [(&mut one, &mut log_one), (&mut two, &mut log_two)] {
        read_until(ws, log, |v| v["type"] == "asked" && v["question"]["id"] == "marker").await;
        let answered: Vec<&Value> = log.iter().filter(|v| v["type"] == "answered").collect();
        assert_eq!(answered.len(), 1, "{log:#?}");
        assert_eq!((answered[0]["id"].as_str(), answered[0]["by"].as_str()), (Some("dup-1"), Some(one_client.as_str())));
    }
    // The agent got exactly one result: the next thing on its socket is the reply to this.
    send(&mut agent, json!({"type": "withdraw", "id": "nope"})).await;
    let next = next_json(&mut agent).await;
    assert_eq!(
        (next["type"].as_str(), next["id"].as_str(), next["error"]["code"].as_str()),
        (Some("error"), Some("nope"), Some("not_found"))
    );

    // Over HTTP: the same body twice is 200 both times with the same result (so is the
    // same answer in the other body shape, from another client); a different one is 409.
    let waiting = b.ask(db_question("dup-2", Some("s-2")), "canonical");
    read_until(&mut one, &mut log_one, |v| v["type"] == "asked" && v["question"]["id"] == "dup-2").await;
    let post = |body: Value| b.post("/v1/questions/dup-2/answer").json(&body).send();
    let first = post(json!({"answers": ["sqlite"]})).await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["answers"][0]["answer"], "SQLite");
    let response = waiting.await.unwrap();
    assert_eq!(response.status(), 200);
    let got: Value = response.json().await.unwrap();
    let stored = record(&b, "dup-2").await;
    assert_eq!(stored["answeredBy"], "http: the admin token");
    assert_eq!((&got, &stored["result"]), (&first, &first), "the agent got the stored answer");
    let second = post(json!({"answers": ["sqlite"]})).await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(second.json::<Value>().await.unwrap(), first);
    let shaped = b
        .post("/v1/questions/dup-2/answer")
        .header("x-askuser-client", "cli")
        .json(&json!({"answers": {"Which database?": "SQLite"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(shaped.status(), 200);
    assert_eq!(shaped.json::<Value>().await.unwrap(), first);
    assert_eq!(record(&b, "dup-2").await, stored);
    let different = post(json!({"answers": ["PostgreSQL"]})).await.unwrap();
    assert_eq!(different.status(), 409);
    assert_eq!(
        different.json::<Value>().await.unwrap(),
        json!({"code": "conflict", "message": "question \"dup-2\" is already final (answered); nothing was changed"})
    );
    assert_eq!(record(&b, "dup-2").await, stored);
}

// ---------------------------------------------------------------------------------
// 3. A tab that falls behind
// ---------------------------------------------------------------------------------

/// The test and the in-process bridge share one thread. While a loop of `Bridge::ask`
/// calls runs (they never yield: the SQLite store answers inline), the tab's task cannot take events off the broadcast channel,
/// so it falls exactly as far behind as the loop makes it: no socket buffer is involved.
async fn starve_the_tab(b: &TestBridge, ids: &[String]) {
    assert_eq!(
        tokio::runtime::Handle::current().runtime_flavor(),
        tokio::runtime::RuntimeFlavor::CurrentThread,
        "the tab's task must not run while the events are produced"
    );
    let bridge = &b.running().bridge;
    for id in ids {
        bridge.ask(&json!({"id": id, "question": "Go?", "choices": ["Yes", "No"]})).await.unwrap();
    }
}

#[tokio::test]
async fn a_tab_that_falls_behind_the_event_buffer_gets_a_fresh_snapshot_of_every_pending_question() {
    let b = bridge().await;
    let (mut ws, client) = tab(&b).await;
    let ids: Vec<String> = (0..EVENT_BUFFER + 150).map(|i| format!("lag-{i:04}")).collect();
    starve_the_tab(&b, &ids).await;
    // Not one `asked` event: the next thing the tab hears is a new snapshot, in parts,
    // holding every pending question once, oldest first.
    let got = snapshot_ids(&mut ws, &client).await;
    assert_eq!(got.len(), ids.len());
    assert_eq!(got, ids);
    // The tab is live again.
    b.running().bridge.ask(&json!({"id": "after", "question": "Still there?"})).await.unwrap();
    match next_event(&mut ws).await {
        BrowserEvent::Asked { question } => assert_eq!(question.id, "after"),
        other => panic!("expected the new question, got {}", brief(&other)),
    }
}

/// The other side of the boundary: a tab exactly `EVENT_BUFFER` events behind misses
/// none of them and gets no snapshot (together with the test above, this pins the
/// buffer's size).
#[tokio::test]
async fn a_tab_no_further_behind_than_the_event_buffer_gets_every_event_and_no_snapshot() {
    let b = bridge().await;
    let (mut ws, _) = tab(&b).await;
    let ids: Vec<String> = (0..EVENT_BUFFER).map(|i| format!("near-{i:04}")).collect();
    starve_the_tab(&b, &ids).await;
    for id in &ids {
        match next_event(&mut ws).await {
            BrowserEvent::Asked { question } => assert_eq!(&question.id, id),
            other => panic!("expected {id} asked, got {}", brief(&other)),
        }
    }
    // Nothing else is on its way: a question asked now is the next thing the tab hears.
    b.running().bridge.ask(&json!({"id": "marker", "question": "Last?"})).await.unwrap();
    match next_event(&mut ws).await {
        BrowserEvent::Asked { question } => assert_eq!(question.id, "marker"),
        other => panic!("expected marker asked, got {}", brief(&other)),
    }
}

/// The same, caused by a reader that is really slow: the tab stops reading, big events
/// fill the kernel's socket buffers so the bridge's sender for this tab blocks, and
/// more than `EVENT_BUFFER` events pile up behind it in the broadcast channel. With a
/// send timeout longer than the test, the tab is resynced, not dropped.
#[tokio::test]
async fn a_slow_reader_behind_full_socket_buffers_is_resynced_not_dropped() {
    let limits = askuser_core::Limits { max_metadata_bytes: 1 << 20, ..askuser_core::Limits::default() };
    let b = bridge_with(Settings { send_timeout: Duration::from_secs(60), limits, ..Settings::default() }).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(b.running().addr).await.unwrap();
    let mut req = format!("{}/v1/ui?token={TOKEN}", b.url.replacen("http", "ws", 1)).into_client_request().unwrap();
    req.headers_mut().insert("origin", b.url.parse().unwrap());
    let (mut slow, _) = tokio_tungstenite::client_async(req, tokio_tungstenite::MaybeTlsStream::Plain(stream)).await.unwrap();
    let BrowserEvent::Snapshot { client, .. } = next_event(&mut slow).await else { panic!("snapshot first") };
    // More than the kernel can buffer for one connection (its largest send buffer, with
    // room to spare), in events of 900 KB.
    let wmem_max: usize = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|t| t.split_whitespace().last().and_then(|n| n.parse().ok()))
        .unwrap_or(4 << 20);
    let filler = "x".repeat(900_000);
    let big = (2 * wmem_max + (1 << 20)) / filler.len() + 1;
    let mut ids = Vec::new();
    for i in 0..big {
        let id = format!("big-{i:03}");
        let mut q = json!({"id": id, "question": "Big?", "choices": ["Yes", "No"]});
        q["metadata"] = json!({"filler": filler});
        assert_eq!(b.post("/v1/ask?wait=false").json(&q).send().await.unwrap().status(), 202);
        ids.push(id);
    }
    for i in 0..EVENT_BUFFER + 50 {
        let id = format!("small-{i:04}");
        let r = b.post("/v1/ask?wait=false").json(&json!({"id": id, "question": "Small?"})).send().await.unwrap();
        assert_eq!(r.status(), 202);
        ids.push(id);
    }
    // Reading again: some of the big events that were under way, then a snapshot of
    // every pending question.
    let mut before = Vec::new();
    let got = loop {
        let v = next_json(&mut slow).await;
        match v["type"].as_str() {
            Some("asked") => {
                before.push(v["question"]["id"].as_str().unwrap().to_owned());
                assert!(before.len() < big, "the tab got every big event: it never fell behind");
            }
            Some("snapshot") => {
                let first: BrowserEvent = serde_json::from_value(v).unwrap();
                let BrowserEvent::Snapshot { client: c, questions, more, .. } = first else { unreachable!() };
                assert_eq!(c, client);
                let mut got: Vec<String> = questions.into_iter().map(|q| q.id).collect();
                if more {
                    got.extend(snapshot_ids(&mut slow, &client).await);
                }
                break got;
            }
            other => panic!("unexpected {other:?}: {v}"),
        }
    };
    assert_eq!(before, ids[..before.len()], "the events before the resync came in order");
    assert_eq!(got.len(), ids.len());
    assert!(got == ids, "the snapshot holds every pending question once, oldest first");
    println!(
        "slow tab: {big} events of 900 KB and {} small ones while it did not read; {} arrived, then a snapshot of all {}",
        EVENT_BUFFER + 50,
        before.len(),
        got.len()
    );
    // Still connected, and live.
    assert_eq!(b.post("/v1/ask?wait=false").json(&json!({"id": "after", "question": "Still there?"})).send().await.unwrap().status(), 202);
    let v = next_json(&mut slow).await;
    assert_eq!((v["type"].as_str(), v["question"]["id"].as_str()), (Some("asked"), Some("after")));
}

// ---------------------------------------------------------------------------------
// 4. Answers queued across a restart
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn an_answer_queued_across_a_restart_reaches_the_resumed_agent_once() {
    let b = bridge().await;
    let addr = b.running().addr.to_string();
    let url = b.url.clone();
    let (mut ws, _) = tab(&b).await;
    let mut log = Vec::new();
    // offline-1: its agent waits over HTTP. offline-2: stored, then answered elsewhere
    // while the tab is away.
    let waiting = b.ask(db_question("offline-1", Some("s-off")), "canonical");
    assert_eq!(b.post("/v1/ask?wait=false").json(&db_question("offline-2", None)).send().await.unwrap().status(), 202);
    for id in ["offline-1", "offline-2"] {
        if !log.iter().any(|v: &Value| v["type"] == "asked" && v["question"]["id"] == id) {
            read_until(&mut ws, &mut log, |v| v["type"] == "asked" && v["question"]["id"] == id).await;
        }
    }
    // The bridge goes away: the tab is told to reconnect, the agent to resume.
    let dir = b.stop().await;
    assert_eq!(close_code(&mut ws).await, Some(1001));
    let r = waiting.await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().contains("ask again with the same id to resume"));
    // Meanwhile the person answered both in the tab: its outbox holds these.
    let queued_1 = json!({"type": "answer", "ref": "r-off-1", "id": "offline-1", "answers": [{"selected": ["SQLite"]}]});
    let queued_2 = json!({"type": "answer", "ref": "r-off-2", "id": "offline-2", "answers": [{"selected": ["SQLite"]}]});

    // The bridge is back on the same address; offline-2 is answered elsewhere first.
    let b = bridge_at(dir, &addr).await;
    assert_eq!(b.url, url);
    let r = b.post("/v1/questions/offline-2/answer").header("x-askuser-client", "cli").json(&json!({"answers": ["PostgreSQL"]}));
    assert_eq!(r.send().await.unwrap().status(), 200);
    let elsewhere = record(&b, "offline-2").await;
    // The agent resumes offline-1 by id, over the agent socket, and waits.
    let mut agent = b.socket("/v1/agent", None).await.unwrap();
    send(&mut agent, json!({"type": "ask", "ref": "again", "request": db_question("offline-1", Some("s-off")), "format": "canonical"}))
        .await;
    assert_eq!(next_json(&mut agent).await, json!({"type": "accepted", "ref": "again", "id": "offline-1", "resumed": true}));
    let mut attached = false;
    for _ in 0..250 {
        let parts = b.running().bridge.snapshot("probe").await.unwrap();
        let BrowserEvent::Snapshot { agents, .. } = &parts[0] else { panic!("a snapshot") };
        if agents.iter().any(|a| a.session_id == "s-off" && a.connected) {
            attached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(attached, "the resumed agent waits on offline-1");

    // The tab reconnects and, like the web client on open, resends its outbox at once.
    let mut ws = b.browser().await;
    send(&mut ws, queued_1.clone()).await;
    send(&mut ws, queued_2.clone()).await;
    let BrowserEvent::Snapshot { client, questions, more, .. } = next_event(&mut ws).await else { panic!("snapshot first") };
    assert!(!more);
    assert_eq!(questions.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), ["offline-1"], "offline-2 was answered elsewhere");
    let mut log = Vec::new();
    let mut replies = Vec::new();
    for _ in 0..2 {
        replies.push(read_until(&mut ws, &mut log, |v| v["type"] == "ack" || v["type"] == "error").await);
    }
    assert_eq!(replies[0], json!({"type": "ack", "ref": "r-off-1", "id": "offline-1"}));
    assert_eq!(
        replies[1],
        json!({"type": "error", "ref": "r-off-2", "id": "offline-2",
            "error": {"code": "conflict", "message": "question \"offline-2\" is already final (answered); nothing was changed"}})
    );
    assert_eq!(record(&b, "offline-2").await, elsewhere, "the answer given elsewhere stands");
    assert_eq!(elsewhere["result"]["answers"][0]["answer"], "PostgreSQL");
    // The resumed agent gets exactly the queued answer.
    let result = next_json(&mut agent).await;
    assert_eq!(
        (result["type"].as_str(), result["id"].as_str(), result["status"].as_str()),
        (Some("result"), Some("offline-1"), Some("answered"))
    );
    assert_eq!(result["result"]["answers"][0]["answer"], "SQLite");
    let stored = record(&b, "offline-1").await;
    assert_eq!(stored["result"], result["result"]);
    assert_eq!(stored["answeredBy"], client.as_str());

    // The ack was lost (the tab went away again): the next connection resends it, and
    // it is acknowledged again, not refused, and changes nothing.
    drop(ws);
    let (mut ws, _) = tab(&b).await;
    send(&mut ws, queued_1).await;
    let reply = read_until(&mut ws, &mut log, |v| v["type"] == "ack" || v["type"] == "error").await;
    assert_eq!(reply, json!({"type": "ack", "ref": "r-off-1", "id": "offline-1"}));
    assert_eq!(record(&b, "offline-1").await, stored);
    // And the agent got one result only.
    send(&mut agent, json!({"type": "withdraw", "id": "nope"})).await;
    let next = next_json(&mut agent).await;
    assert_eq!(
        (next["type"].as_str(), next["id"].as_str(), next["error"]["code"].as_str()),
        (Some("error"), Some("nope"), Some("not_found"))
    );
}

// ---------------------------------------------------------------------------------
// 5. `askuser ask` and a withdrawn question
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn askuser_ask_exits_4_when_its_question_is_withdrawn() {
    let b = bridge().await;
    for (format, id) in [("text", "cli-withdrawn-text"), ("canonical", "cli-withdrawn-json")] {
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
            .env_remove("ASKUSER_URL")
            .env_remove("ASKUSER_TOKEN")
            .env_remove("ASKUSER_DATA_DIR")
            .env_remove("RUST_LOG")
            .args(["ask", "--id", id, "--question", "Deploy now?", "--option", "Yes", "--option", "No", "--format", format, "--data-dir"])
            .arg(b.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Once stored, its ask is waiting (the handler stores and starts waiting in one step).
        let mut stored = false;
        for _ in 0..200 {
            if b.get(&format!("/v1/questions/{id}")).send().await.unwrap().status() == 200 {
                stored = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(stored, "{format}: askuser ask stored its question");
        let r = b.http.delete(format!("{}/v1/questions/{id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap()["status"], "withdrawn");
        let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output()).await.expect("askuser ask ends").unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(4), "{format}: stdout {stdout:?}, stderr {stderr:?}");
        if format == "text" {
            assert_eq!(stdout, "The question was withdrawn before the user answered. Do not assume an answer.\n");
        } else {
            let v: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(
                (v["id"].as_str(), v["status"].as_str(), v["answered"].as_bool()),
                (Some(id), Some("withdrawn"), Some(false)),
                "{v}"
            );
        }
    }
}
