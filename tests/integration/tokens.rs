//! Scoped tokens: agent tokens ask, device tokens answer, neither does the other's part;
//! tokens are stored hashed, survive a restart, and revoking one closes its sockets.

use crate::support::{bridge, bridge_configured, bridge_in, TestBridge, TOKEN};
use askuser_bridge::client::Socket;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

async fn make(b: &TestBridge, scope: &str, name: &str) -> (String, String) {
    let r = b.post("/v1/tokens").json(&json!({"scope": scope, "name": name})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    assert!(v["credential"].get("hash").is_none(), "{v}");
    (v["credential"]["id"].as_str().unwrap().to_owned(), v["token"].as_str().unwrap().to_owned())
}

fn with(b: &TestBridge, method: reqwest::Method, path: &str, token: &str) -> reqwest::RequestBuilder {
    b.http.request(method, format!("{}{path}", b.url)).bearer_auth(token)
}

async fn socket(b: &TestBridge, path: &str, token: &str) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let mut req = format!("{}{path}?token={token}", b.url.replacen("http", "ws", 1)).into_client_request().unwrap();
    req.headers_mut().insert("origin", b.url.parse().unwrap());
    askuser_bridge::client::websocket(req, None).await
}

fn question(id: &str) -> Value {
    json!({"id": id, "questions": [{"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]})
}

#[tokio::test]
async fn agent_tokens_ask_device_tokens_answer_and_neither_does_the_other() {
    let b = bridge().await;
    let (_, agent) = make(&b, "agent", "ci-runner").await;
    let (_, device) = make(&b, "device", "phone").await;
    use reqwest::Method;

    // A device cannot ask; an agent can.
    let r = with(&b, Method::POST, "/v1/ask?wait=false", &device).json(&question("s-1")).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let e: Value = r.json().await.unwrap();
    assert!(e["message"].as_str().unwrap().contains("a device token may not POST /v1/ask"), "{e}");
    let r = with(&b, Method::POST, "/v1/ask?wait=false", &agent).json(&question("s-1")).send().await.unwrap();
    assert_eq!(r.status(), 202);

    // An agent cannot answer, decline or read the inbox; a device can.
    for path in ["/v1/questions/s-1/answer", "/v1/questions/s-1/cancel"] {
        let r = with(&b, Method::POST, path, &agent).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
        assert_eq!(r.status(), 403, "{path}");
    }
    assert_eq!(with(&b, Method::GET, "/v1/questions", &agent).send().await.unwrap().status(), 403);
    assert_eq!(with(&b, Method::GET, "/v1/questions", &device).send().await.unwrap().status(), 200);
    assert_eq!(with(&b, Method::GET, "/v1/questions/s-1", &agent).send().await.unwrap().status(), 200);
    // A device cannot withdraw a question.
    assert_eq!(with(&b, Method::DELETE, "/v1/questions/s-1", &device).send().await.unwrap().status(), 403);
    let r = with(&b, Method::POST, "/v1/questions/s-1/answer", &device).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert_eq!(r.status(), 200);

    // Sockets: each scope has its own.
    assert!(socket(&b, "/v1/ui", &agent).await.is_err(), "an agent token opens no browser socket");
    assert!(socket(&b, "/v1/agent", &device).await.is_err(), "a device token opens no agent socket");
    assert!(socket(&b, "/v1/ui", &device).await.is_ok());
    assert!(socket(&b, "/v1/agent", &agent).await.is_ok());

    // Neither manages tokens.
    for token in [&agent, &device] {
        assert_eq!(with(&b, Method::GET, "/v1/tokens", token).send().await.unwrap().status(), 403);
        let r = with(&b, Method::POST, "/v1/tokens", token).json(&json!({"scope": "admin", "name": "me"})).send().await.unwrap();
        assert_eq!(r.status(), 403);
    }
    // Bad requests to make one name the field.
    let r = b.post("/v1/tokens").json(&json!({"scope": "root", "name": "x"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("unknown variant `root`"));
    let r = b.post("/v1/tokens").json(&json!({"scope": "agent", "name": " "})).send().await.unwrap();
    assert!(r.text().await.unwrap().contains("name: expected 1 to 100 characters"));
}

/// F10: a blocking ask already open when its agent token is revoked ends at once with 401,
/// and the answer given later does not reach it.
#[tokio::test]
async fn revoking_a_token_ends_its_waiting_http_ask() {
    let b = bridge().await;
    let (agent_id, agent) = make(&b, "agent", "ci-runner").await;
    let body = json!({"id": "revoked-wait", "question": "Deploy?", "choices": ["Yes", "No"]});
    let asking = with(&b, reqwest::Method::POST, "/v1/ask", &agent).json(&body).send();
    let asking = tokio::spawn(asking);
    for _ in 0..100 {
        let r = b.get("/v1/questions/revoked-wait").send().await.unwrap();
        if r.status() == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = b.http.delete(format!("{}/v1/tokens/{agent_id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let ended = tokio::time::timeout(Duration::from_secs(2), asking).await.expect("the waiting ask ends within 2 s").unwrap().unwrap();
    assert_eq!(ended.status(), 401);
    assert!(ended.text().await.unwrap().contains("revoked"));
    let stored: Value = b.get("/v1/questions/revoked-wait").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["status"], "pending", "the question stays in the inbox");
}

#[tokio::test]
async fn tokens_are_stored_hashed_survive_a_restart_and_revoking_one_closes_its_sockets() {
    let b = bridge().await;
    let (agent_id, agent) = make(&b, "agent", "ci-runner").await;
    let (device_id, device) = make(&b, "device", "phone").await;
    use reqwest::Method;

    let mut ui = socket(&b, "/v1/ui", &device).await.unwrap();
    let mut agent_socket = socket(&b, "/v1/agent", &agent).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), ui.next()).await.unwrap().unwrap().unwrap();
    assert!(first.to_text().unwrap().contains("snapshot"));

    // Revoking closes each socket at once, with the reason.
    for (id, socket) in [(&device_id, &mut ui), (&agent_id, &mut agent_socket)] {
        let r = b.http.delete(format!("{}/v1/tokens/{id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let closed = tokio::time::timeout(Duration::from_secs(2), async {
            loop {
                match socket.next().await {
                    Some(Ok(Message::Close(frame))) => return frame,
                    Some(Ok(_)) => continue,
                    other => panic!("expected a close frame, got {other:?}"),
                }
            }
        })
        .await
        .expect("closed within 2 s")
        .expect("with a reason");
        assert_eq!((u16::from(closed.code), closed.reason.as_str()), (1008, "this token was revoked"));
    }
    assert_eq!(with(&b, Method::GET, "/v1/questions", &device).send().await.unwrap().status(), 401);
    let again = b.http.delete(format!("{}/v1/tokens/{device_id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(again.status(), 404);
    assert!(again.text().await.unwrap().contains("already revoked"));

    // The store has only hashes.
    let (_, live) = make(&b, "agent", "still-here").await;
    let dir = b.stop().await;
    for file in ["askuser.db", "askuser.db-wal"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for token in [&agent, &device, &live] {
            assert!(!text.contains(token.as_str()), "{file} holds a token in the clear");
        }
    }
    // After a restart: the live token works, the revoked ones stay revoked, the list shows all three.
    let b = bridge_in(dir).await;
    let r = with(&b, Method::POST, "/v1/ask?wait=false", &live).json(&question("s-2")).send().await.unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(with(&b, Method::POST, "/v1/ask?wait=false", &agent).json(&question("s-3")).send().await.unwrap().status(), 401);
    let all: Value = b.get("/v1/tokens").send().await.unwrap().json().await.unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all.iter().filter(|c| c.get("revokedAt").is_some()).count(), 2);
    assert!(all.iter().all(|c| c.get("hash").is_none() && c.get("token").is_none()));
}

#[test]
fn askuser_tokens_makes_lists_and_revokes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(bridge());
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
            .env_remove("ASKUSER_URL")
            .env_remove("ASKUSER_TOKEN")
            .args(["tokens", "--url", &b.url, "--token", TOKEN])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, token, said) = run(&["create", "--scope", "device", "--name", "phone"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(token.trim().len(), 64, "the token alone on stdout: {token:?}");
    assert!(said.contains("made device token device-"), "{said}");
    let id = said.split_whitespace().find(|w| w.starts_with("device-")).unwrap().to_owned();
    let (_, listed, _) = run(&["list"]);
    assert!(listed.contains(&id) && listed.contains("phone") && listed.contains("in force"), "{listed}");
    assert!(!listed.contains(token.trim()));
    let devices =
        std::process::Command::new(env!("CARGO_BIN_EXE_askuser")).args(["devices", "--url", &b.url, "--token", TOKEN]).output().unwrap();
    let listed_devices = String::from_utf8_lossy(&devices.stdout);
    assert!(listed_devices.contains(&id) && listed_devices.contains("phone  (paired)"), "{listed_devices}");
    let (code, revoked, _) = run(&["revoke", &id]);
    assert_eq!((code, revoked.trim()), (Some(0), format!("Revoked {id}.").as_str()));
    let (_, listed, _) = run(&["list"]);
    assert!(listed.contains("(revoked)"), "{listed}");
    let (code, _, said) = run(&["revoke", "device-nope"]);
    assert_eq!(code, Some(1));
    assert!(said.contains("no credential with id \"device-nope\""), "{said}");
    // The bridge's flags may also follow the nested subcommand (issue 29).
    let after = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .env_remove("ASKUSER_URL")
        .env_remove("ASKUSER_TOKEN")
        .args(["tokens", "create", "--scope", "agent", "--name", "ci", "--url", &b.url, "--token", TOKEN])
        .output()
        .unwrap();
    assert!(after.status.success(), "{}", String::from_utf8_lossy(&after.stderr));
    assert_eq!(String::from_utf8_lossy(&after.stdout).trim().len(), 64);
    rt.block_on(b.stop());
}

async fn pairing(b: &TestBridge, seconds: u64) -> String {
    let r = b.post("/v1/pairings").json(&json!({"name": "phone", "seconds": seconds})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["code"].as_str().unwrap().to_owned()
}

async fn claim(b: &TestBridge, code: &str) -> reqwest::Response {
    b.http.post(format!("{}/v1/pair", b.url)).json(&json!({"code": code})).send().await.unwrap()
}

#[tokio::test]
async fn a_pairing_code_gives_one_device_token_once_before_it_expires() {
    let b = bridge().await;
    let code = pairing(&b, 60).await;
    assert_eq!(code.len(), 10);
    // No token needed: the code is the credential. Case and dashes do not matter.
    let spelled = format!("{}-{}", code[..5].to_lowercase(), &code[5..]);
    let r = claim(&b, &spelled).await;
    assert_eq!(r.status(), 200);
    let paired: Value = r.json().await.unwrap();
    assert_eq!((paired["credential"]["scope"].as_str(), paired["credential"]["name"].as_str()), (Some("device"), Some("phone")));
    let token = paired["token"].as_str().unwrap();
    assert_eq!(with(&b, reqwest::Method::GET, "/v1/questions", token).send().await.unwrap().status(), 200);
    assert_eq!(with(&b, reqwest::Method::POST, "/v1/ask", token).json(&question("p-1")).send().await.unwrap().status(), 403);
    // Once only.
    let again = claim(&b, &code).await;
    assert_eq!(again.status(), 404);
    assert!(again.text().await.unwrap().contains("used already"));
    // Expired.
    let short = pairing(&b, 1).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let late = claim(&b, &short).await;
    assert_eq!(late.status(), 410);
    assert!(late.text().await.unwrap().contains("expired"));
    // Only the admin makes codes.
    let r = with(&b, reqwest::Method::POST, "/v1/pairings", token).json(&json!({"name": "x"})).send().await.unwrap();
    assert_eq!(r.status(), 403);
    // Guessing is slowed: after 10 wrong codes in a minute (two so far), even a right one waits.
    let good = pairing(&b, 60).await;
    for _ in 0..8 {
        assert_eq!(claim(&b, "AAAAAAAAAA").await.status(), 404);
    }
    let r = claim(&b, &good).await;
    assert_eq!(r.status(), 429);
    assert!(r.text().await.unwrap().contains("too many wrong pairing codes"));
}

/// Wrong codes are limited per source address: a guesser at 127.0.0.1 gets 429, and a
/// person pairing from another address (127.0.0.2, another loopback address) is not
/// refused because of it.
#[tokio::test]
async fn wrong_pairing_codes_from_one_address_do_not_refuse_another() {
    let b = bridge().await;
    let good = pairing(&b, 60).await;
    for _ in 0..12 {
        let status = claim(&b, "AAAAAAAAAA").await.status();
        assert!(status == 404 || status == 429, "{status}");
    }
    assert_eq!(claim(&b, "AAAAAAAAAA").await.status(), 429, "the guesser is slowed");
    let elsewhere = askuser_bridge::client::http(None).local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap();
    let r = elsewhere.post(format!("{}/v1/pair", b.url)).json(&json!({"code": good})).send().await.unwrap();
    assert_eq!(r.status(), 200, "a right code from another address: {}", r.text().await.unwrap());
    let paired: Value = r.json().await.unwrap();
    assert_eq!(paired["credential"]["scope"], "device");
    let r = claim(&b, "AAAAAAAAAA").await;
    assert_eq!(r.status(), 429, "the guesser is still slowed");
    assert!(r.text().await.unwrap().contains("too many wrong pairing codes"));
    let other = pairing(&b, 60).await;
    assert_eq!(claim(&b, &other).await.status(), 429, "even a right code, from the guesser's address");
}

/// Behind a TLS proxy (`--trust-proxy`) every connection is the proxy's: wrong codes
/// count against the address the proxy appends to `X-Forwarded-For` (the last one; what
/// the client put before it is its own claim), so a guesser does not hold up a person's
/// claim there. Without `--trust-proxy` the header is not believed.
#[tokio::test]
async fn behind_a_trusted_proxy_wrong_codes_are_limited_per_forwarded_client() {
    async fn claim_from(b: &TestBridge, forwarded: &str, code: &str) -> reqwest::Response {
        let url = format!("{}/v1/pair", b.url);
        askuser_bridge::client::http_client(None)
            .post(url)
            .header("x-forwarded-for", forwarded)
            .json(&json!({"code": code}))
            .send()
            .await
            .unwrap()
    }
    let proxied = bridge_configured(tempfile::tempdir().unwrap(), |o| o.trust_proxy = true).await;
    let direct = bridge().await;
    for b in [&proxied, &direct] {
        let good = pairing(b, 60).await;
        // The guesser (203.0.113.1 to the proxy) names a new address of its own each time.
        for i in 0..12 {
            let status = claim_from(b, &format!("198.51.100.{i}, 203.0.113.1"), "AAAAAAAAAA").await.status();
            assert!(status == 404 || status == 429, "{status}");
        }
        assert_eq!(claim_from(b, "198.51.100.99, 203.0.113.1", "AAAAAAAAAA").await.status(), 429, "the guesser is slowed");
        let r = claim_from(b, "203.0.113.2", &good).await;
        if std::ptr::eq(b, &proxied) {
            assert_eq!(r.status(), 200, "a right code from another client of the proxy: {}", r.text().await.unwrap());
            assert_eq!(claim_from(b, "203.0.113.1", &pairing(b, 60).await).await.status(), 429, "the guesser's own right code waits");
        } else {
            assert_eq!(r.status(), 429, "without --trust-proxy, X-Forwarded-For names nobody");
        }
    }
}

#[test]
fn askuser_pair_prints_a_link_and_its_qr_code() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(bridge());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
        .env_remove("ASKUSER_URL")
        .env_remove("ASKUSER_TOKEN")
        .args(["pair", "--name", "laptop", "--url", &b.url, "--token", TOKEN])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let link = stdout.lines().last().unwrap();
    let code = link.strip_prefix(&format!("{}/#pair=", b.url)).expect("the link");
    assert!(stdout.lines().filter(|l| l.contains('█')).count() > 10, "a QR code above it: {stdout}");
    assert!(stderr.contains("within 5 minute(s)") && stderr.contains("works once"), "{stderr}");
    let r = rt.block_on(claim(&b, code));
    assert_eq!(r.status(), 200);
    rt.block_on(b.stop());
}

#[tokio::test]
async fn an_agent_token_reaches_only_the_questions_it_asked() {
    use futures_util::SinkExt;
    use reqwest::Method;
    let b = bridge().await;
    let (_, one) = make(&b, "agent", "one").await;
    let (_, two) = make(&b, "agent", "two").await;
    let (_, device) = make(&b, "device", "phone").await;
    assert_eq!(with(&b, Method::POST, "/v1/ask?wait=false", &one).json(&question("o-1")).send().await.unwrap().status(), 202);
    assert_eq!(b.post("/v1/ask?wait=false").json(&question("o-2")).send().await.unwrap().status(), 202);

    // Another agent: as if it did not exist; resuming it is refused.
    assert_eq!(with(&b, Method::GET, "/v1/questions/o-1", &two).send().await.unwrap().status(), 404);
    assert_eq!(with(&b, Method::DELETE, "/v1/questions/o-1", &two).send().await.unwrap().status(), 404);
    let r = with(&b, Method::POST, "/v1/ask?wait=false", &two).json(&question("o-1")).send().await.unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.text().await.unwrap().contains("used by another agent"));
    // The admin token's questions are no agent's.
    assert_eq!(with(&b, Method::GET, "/v1/questions/o-2", &one).send().await.unwrap().status(), 404);
    // Over the agent socket too.
    let mut socket = socket(&b, "/v1/agent", &two).await.unwrap();
    socket.send(Message::Text(json!({"type": "withdraw", "id": "o-1"}).to_string().into())).await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), socket.next()).await.unwrap().unwrap().unwrap();
    let reply: Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!((reply["type"].as_str(), reply["error"]["code"].as_str()), (Some("error"), Some("not_found")), "{reply}");

    // Its own agent, a device and the admin reach it; the owner can resume and withdraw it.
    assert_eq!(with(&b, Method::GET, "/v1/questions/o-1", &one).send().await.unwrap().status(), 200);
    assert_eq!(with(&b, Method::GET, "/v1/questions/o-1", &device).send().await.unwrap().status(), 200);
    assert_eq!(b.get("/v1/questions/o-1").send().await.unwrap().status(), 200);
    assert_eq!(with(&b, Method::POST, "/v1/ask?wait=false", &one).json(&question("o-1")).send().await.unwrap().status(), 200);
    let r = with(&b, Method::DELETE, "/v1/questions/o-1", &one).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "withdrawn");
}
