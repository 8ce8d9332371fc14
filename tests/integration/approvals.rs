//! Approvals over the bridge's HTTP API (`POST /v1/approve`, `/v1/rules`,
//! `/v1/decisions`): asked as questions a person answers, decided by rules without
//! asking, every decision logged. The real Claude Code drives the same path through
//! `askuser mcp --approvals` in `tests/hosts/approvals.rs`.

use crate::support::*;
use serde_json::{json, Value};
use std::time::Duration;

/// Claude Code's permission call for `command`, from an agent working in /work/app.
fn bash(command: &str, call: &str) -> Value {
    json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": call,
           "cwd": "/work/app", "agent": {"name": "Claude Code", "sessionId": "s-1"}})
}

/// Starts a blocking approval in the background.
fn approve(b: &TestBridge, body: Value) -> tokio::task::JoinHandle<Value> {
    let req = b.post("/v1/approve").json(&body);
    tokio::spawn(async move {
        let r = req.send().await.expect("the approval reaches the bridge");
        assert_eq!(r.status(), 200);
        r.json().await.unwrap()
    })
}

/// The one pending question, once it is there.
async fn pending(b: &TestBridge) -> Value {
    for _ in 0..100 {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.into_iter().next() {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval was asked");
}

async fn answer(b: &TestBridge, id: &str, selection: Value) {
    let r = b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": [selection]})).send().await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn an_approval_waits_for_the_person_and_always_keeps_a_rule_that_answers_the_next_at_once() {
    let b = bridge().await;
    let waiting = approve(&b, bash("cargo test --all", "toolu_1"));
    let q = pending(&b).await;
    assert_eq!(q["id"], "approve-toolu_1", "the host's id of the call: a retry of it resumes the question");
    assert_eq!(q["request"]["approval"]["input"]["command"], "cargo test --all", "{q:#}");
    assert_eq!(q["request"]["questions"][0]["header"], "Bash");
    answer(&b, q["id"].as_str().unwrap(), json!({"selected": ["Always allow"]})).await;
    let decided = waiting.await.unwrap();
    assert_eq!(decided["behavior"], "allow", "{decided:#}");
    assert_eq!(decided["updatedInput"], json!({"command": "cargo test --all"}));
    assert_eq!((decided["decidedBy"].as_str(), decided["id"].as_str()), (Some("person"), q["id"].as_str()));

    // The rule: the same program and subcommand in this project, at once, without a question.
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["text"], "Bash(cargo test:*) in /work/app");
    let r = b.post("/v1/approve").json(&bash("cargo test -p core", "toolu_2")).send().await.unwrap();
    let by_rule: Value = r.json().await.unwrap();
    assert_eq!((by_rule["behavior"].as_str(), by_rule["decidedBy"].as_str()), (Some("allow"), Some("rule")), "{by_rule:#}");
    assert_eq!(by_rule["rule"], rules[0]["id"]);
    // What the rule does not cover is asked: a chained command, another project.
    for (body, why) in [
        (bash("cargo test && rm -rf ~", "toolu_3"), "a chain"),
        (json!({"tool_name": "Bash", "input": {"command": "cargo test"}, "cwd": "/elsewhere"}), "another project"),
    ] {
        let r = b.post("/v1/approve?wait=false").json(&body).send().await.unwrap();
        assert_eq!(r.status(), 202, "{why}: asked, not allowed");
    }

    // The audit log, newest first: the rule's decision, then the person's.
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    let kinds: Vec<&str> = log.iter().map(|d| d["decision"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow", "always"], "{log:#?}");
    assert_eq!(log[0]["rule"], rules[0]["id"]);
    assert!(log[0]["question"].is_null());
    assert_eq!(log[1]["question"], q["id"]);
    assert_eq!(log[1]["summary"], "cargo test --all");
    assert_eq!(log[1]["agent"], "Claude Code (s-1)");

    // Removed, the rule asks again.
    let id = rules[0]["id"].as_str().unwrap();
    let r = b.http.delete(format!("{}/v1/rules/{id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = b.http.delete(format!("{}/v1/rules/{id}", b.url)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 404, "gone");
    let r = b.post("/v1/approve?wait=false").json(&bash("cargo test -p core", "toolu_4")).send().await.unwrap();
    assert_eq!(r.status(), 202);
}

#[tokio::test]
async fn always_allow_exactly_keeps_the_exact_command_and_asks_again_for_others() {
    // Issue 45: the person "may narrow" the rule "Always allow" names.
    let b = bridge().await;
    let waiting = approve(&b, bash("git status --short", "toolu_1"));
    let q = pending(&b).await;
    let options = q["request"]["questions"][0]["options"].as_array().unwrap().clone();
    let said: Vec<(&str, &str)> =
        options.iter().map(|o| (o["label"].as_str().unwrap(), o["description"].as_str().unwrap_or_default())).collect();
    assert_eq!(said[1], ("Always allow", "Do not ask again for Bash(git status:*) in /work/app"), "{said:?}");
    assert_eq!(said[2], ("Always allow exactly", "Do not ask again for Bash(git status --short) in /work/app"), "{said:?}");
    answer(&b, q["id"].as_str().unwrap(), json!({"selected": ["Always allow exactly"]})).await;
    assert_eq!(waiting.await.unwrap()["behavior"], "allow");
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    let kept: Vec<&str> = rules.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(kept, ["Bash(git status --short) in /work/app"]);
    assert!(rules[0]["wider"].is_null(), "nothing to review: {rules:?}");
    let r = b.post("/v1/approve").json(&bash("git status --short", "toolu_2")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["decidedBy"], "rule", "the exact command runs");
    let r = b.post("/v1/approve?wait=false").json(&bash("git status --porcelain", "toolu_3")).send().await.unwrap();
    assert_eq!(r.status(), 202, "another git status is asked again");
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    assert_eq!(log.last().unwrap()["decision"], "always");
    assert_eq!(log.last().unwrap()["rule"], rules[0]["id"]);

    // An exact command has nothing narrower: no such choice, and naming it keeps nothing.
    let waiting = approve(&b, bash("rm -rf build", "toolu_4"));
    let q = loop {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.into_iter().find(|q| q["id"] == "approve-toolu_4") {
            break q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let labels: Vec<&str> =
        q["request"]["questions"][0]["options"].as_array().unwrap().iter().map(|o| o["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Allow", "Always allow", "Deny"]);
    let r = b
        .post("/v1/questions/approve-toolu_4/answer")
        .json(&json!({"answers": [{"selected": ["Always allow exactly"]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "not one of its options");
    answer(&b, "approve-toolu_4", json!({"selected": ["Deny"]})).await;
    assert_eq!(waiting.await.unwrap()["behavior"], "deny");

    // A wide rule (as an earlier version kept from `rm -rf build`) is listed for review.
    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(rm:*)"})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1]["text"], "Bash(rm:*)");
    assert_eq!(rules[1]["wider"], "any command that begins `rm`; for every agent everywhere");
}

#[tokio::test]
async fn always_on_one_command_keeps_that_command_and_never_its_program() {
    // Issue 45: "Always allow" on `rm -rf build` kept `Bash(rm:*)`; `rm -rf /` then ran unasked.
    let b = bridge().await;
    let waiting = approve(&b, bash("rm -rf build", "toolu_1"));
    let q = pending(&b).await;
    let always = &q["request"]["questions"][0]["options"][1];
    assert_eq!(always["description"], "Do not ask again for Bash(rm -rf build) in /work/app", "the rule, named before");
    answer(&b, q["id"].as_str().unwrap(), json!({"selected": ["Always allow"]})).await;
    assert_eq!(waiting.await.unwrap()["behavior"], "allow");
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules[0]["text"], "Bash(rm -rf build) in /work/app");
    for (i, command) in ["rm -rf /", "rm -rf ~", "rm -rf --no-preserve-root /", "rm -rf build ~"].iter().enumerate() {
        let r = b.post("/v1/approve?wait=false").json(&bash(command, &format!("toolu_r{i}"))).send().await.unwrap();
        assert_eq!(r.status(), 202, "{command}: asked, not allowed");
    }
    let r = b.post("/v1/approve").json(&bash("rm -rf build", "toolu_again")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["decidedBy"], "rule", "the command shown is allowed again");

    // No folder and no session: allowed once, and no rule for every agent everywhere.
    let call = json!({"tool_name": "Bash", "input": {"command": "make"}, "tool_use_id": "toolu_n", "agent": {"name": "Claude Code"}});
    let waiting = approve(&b, call.clone());
    let q = loop {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.into_iter().find(|q| q["id"] == "approve-toolu_n") {
            break q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let said = q["request"]["questions"][0]["options"][1]["description"].as_str().unwrap().to_owned();
    assert!(said.starts_with("Allows it this time only"), "{said}");
    answer(&b, "approve-toolu_n", json!({"selected": ["Always allow"]})).await;
    assert_eq!(waiting.await.unwrap()["behavior"], "allow");
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules.len(), 1, "none kept: {rules:#?}");
    let again = json!({"tool_name": "Bash", "input": {"command": "make"}, "tool_use_id": "toolu_m", "agent": {"name": "Other"}});
    assert_eq!(b.post("/v1/approve?wait=false").json(&again).send().await.unwrap().status(), 202);
}

#[tokio::test]
async fn a_project_rule_is_matched_in_the_real_folder_not_its_spelling() {
    // Issue 45: a cwd of /home/me/app/../other fell under /home/me/app's rules.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (app, other) = (root.join("app"), root.join("other"));
    for d in [app.join("src"), other.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::symlink(&other, app.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(&other, app.join("src/out")).unwrap();
    let b = bridge().await;
    let app_s = app.to_str().unwrap();
    for rule in ["Bash(cargo test:*)", "Edit(src/**)"] {
        let r = b.post("/v1/rules").json(&json!({"rule": rule, "project": app_s})).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    let at = |cwd: String, call: &str| json!({"tool_name": "Bash", "input": {"command": "cargo test"}, "tool_use_id": call, "cwd": cwd});
    let decided = |body: Value| {
        let req = b.post("/v1/approve?wait=false").json(&body);
        async move { req.send().await.unwrap().status() }
    };
    assert_eq!(decided(at(format!("{app_s}/src"), "t1")).await, 200, "below the project: by the rule");
    assert_eq!(decided(at(format!("{app_s}/../other"), "t2")).await, 202, "`..` out of it: asked");
    assert_eq!(decided(at(format!("{app_s}/elsewhere"), "t3")).await, 202, "a symlink out of it: asked");
    let edit = |file: &str, call: &str| json!({"tool_name": "Write", "input": {"file_path": file, "content": "x"}, "tool_use_id": call, "cwd": app_s});
    assert_eq!(decided(edit("src/new.rs", "e1")).await, 200, "a new file under src/: by the rule");
    assert_eq!(decided(edit("src/out/passwd", "e2")).await, 202, "through a symlink out of src/: asked");
    assert_eq!(decided(edit(&format!("{app_s}/src/out/../x"), "e3")).await, 202);
}

#[tokio::test]
async fn a_denial_carries_the_persons_words_and_no_answer_denies() {
    let b = bridge().await;
    let waiting = approve(&b, bash("rm -rf build", "toolu_1"));
    let q = pending(&b).await;
    answer(&b, q["id"].as_str().unwrap(), json!({"custom": "keep build, clean target instead"})).await;
    let denied = waiting.await.unwrap();
    assert_eq!(
        denied,
        json!({"behavior": "deny", "message": "The user denied this Bash call and said: keep build, clean target instead",
               "decidedBy": "person", "id": q["id"]})
    );
    // Declined in the inbox: denied, with no rule kept.
    let waiting = approve(&b, bash("rm -rf dist", "toolu_2"));
    let q = loop {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.into_iter().next() {
            break q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let r = b.post(&format!("/v1/questions/{}/cancel", q["id"].as_str().unwrap())).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let declined = waiting.await.unwrap();
    assert_eq!(declined["behavior"], "deny");
    assert_eq!(declined["message"], "The user did not allow Bash (no answer: cancelled). Do not run it.");
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert!(rules.is_empty());
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    assert_eq!(log.iter().map(|d| d["decision"].as_str().unwrap()).collect::<Vec<_>>(), ["deny", "deny"]);
}

#[tokio::test]
async fn bad_approvals_and_rules_are_refused_naming_the_field_and_scopes_are_kept() {
    let b = bridge().await;
    let r = b.post("/v1/approve").json(&json!({"tool_name": 3, "input": "ls"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    let paths: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["tool_name", "input"], "{body:#}");
    let r = b.post("/v1/approve").json(&json!({"tool_name": "Bash", "input": {}, "cwd": 7})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("cwd: expected a string, got the number 7"));

    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(ls"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("the ')' is missing"));
    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(ls:*)", "project": "/p", "session": "s"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let r = b.post("/v1/rules").json(&json!({"rule": "WebFetch(domain:docs.rs)", "agent": "Claude Code"})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let made: Value = r.json().await.unwrap();
    assert_eq!(made["text"], "WebFetch(domain:docs.rs) for Claude Code");

    // An agent token may ask for approval, not make rules; a device may read them.
    let token = |scope: &str| {
        let req = b.post("/v1/tokens").json(&json!({"scope": scope, "name": scope}));
        async move {
            let v: Value = req.send().await.unwrap().json().await.unwrap();
            v["token"].as_str().unwrap().to_owned()
        }
    };
    let (agent, device) = (token("agent").await, token("device").await);
    let fetch = json!({"tool_name": "WebFetch", "input": {"url": "https://docs.rs/serde"}, "agent": {"name": "Claude Code"}});
    let r = b.http.post(format!("{}/v1/approve", b.url)).bearer_auth(&agent).json(&fetch).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!((v["behavior"].as_str(), v["decidedBy"].as_str()), (Some("allow"), Some("rule")), "{v:#}");
    let r = b.http.post(format!("{}/v1/rules", b.url)).bearer_auth(&agent).json(&json!({"rule": "Bash"})).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = b.http.get(format!("{}/v1/rules", b.url)).bearer_auth(&device).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = b.http.post(format!("{}/v1/rules", b.url)).bearer_auth(&device).json(&json!({"rule": "Bash"})).send().await.unwrap();
    assert_eq!(r.status(), 403);
    // A device may remove a rule (the bridge only asks again), an agent may not.
    let rule = format!("{}/v1/rules/{}", b.url, made["id"].as_str().unwrap());
    assert_eq!(b.http.delete(&rule).bearer_auth(&agent).send().await.unwrap().status(), 403);
    assert_eq!(b.http.delete(&rule).bearer_auth(&device).send().await.unwrap().status(), 200);
    let r = b.http.delete(format!("{}/v1/tokens/x", b.url)).bearer_auth(&device).send().await.unwrap();
    assert_eq!(r.status(), 403, "only rules");
}

/// Claude Code's own question through its permission prompt tool: its questions asked as
/// they are, allowed with the answers in its input.
#[tokio::test]
async fn ask_user_question_is_asked_as_its_questions_and_allowed_with_the_answers() {
    let b = bridge().await;
    let questions = json!([{"question": "Which database?", "header": "DB", "multiSelect": false,
        "options": [{"label": "PostgreSQL", "description": "Shared"}, {"label": "SQLite", "description": "Embedded"}]}]);
    let waiting = approve(&b, json!({"tool_name": "AskUserQuestion", "input": {"questions": questions}, "tool_use_id": "toolu_9"}));
    let q = pending(&b).await;
    assert_eq!(q["request"]["questions"][0]["question"], "Which database?");
    answer(&b, q["id"].as_str().unwrap(), json!({"selected": ["SQLite"]})).await;
    let allowed = waiting.await.unwrap();
    assert_eq!(allowed["updatedInput"], json!({"questions": questions, "answers": {"Which database?": "SQLite"}}));
}

/// The audit log names who decided: the page's client and the token it answered with
/// (a device's name and its person).
#[tokio::test]
async fn the_audit_log_names_the_device_and_the_person_that_decided() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let b = bridge().await;
    let made = b.device_token("alice's phone", Some("alice")).await;
    let url = format!("{}/v1/ui?token={}", b.url.replacen("http", "ws", 1), made["token"].as_str().unwrap());
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("origin", b.url.parse().unwrap());
    let (mut phone, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    next_json(&mut phone).await;
    let waiting = approve(&b, bash("cargo build", "toolu_a"));
    let q = pending(&b).await;
    let answer = json!({"type": "answer", "id": q["id"], "answers": [{"selected": ["Allow"]}]});
    phone.send(tokio_tungstenite::tungstenite::Message::text(answer.to_string())).await.unwrap();
    assert_eq!(waiting.await.unwrap()["behavior"], "allow");
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    let by = log[0]["by"].as_str().unwrap();
    assert!(by.starts_with("c-") && by.ends_with(": alice's phone (alice)"), "{by}");
}

/// An answer over HTTP names its client and the token it came with, as a page's does
/// (issue 45: it was `by: "http"`), and naming a page's connection as the client does
/// not make it that page's.
#[tokio::test]
async fn an_http_decision_names_the_device_and_the_person_too() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let b = bridge().await;
    let laptop = b.device_token("alice's laptop", Some("alice")).await;
    let phone = b.device_token("bob's phone", Some("bob")).await;
    let url = format!("{}/v1/ui?token={}", b.url.replacen("http", "ws", 1), phone["token"].as_str().unwrap());
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("origin", b.url.parse().unwrap());
    let (mut page, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let page_id = next_json(&mut page).await["client"].as_str().unwrap().to_owned();
    for (call, client, bearer, want) in [
        ("toolu_h1", None, laptop["token"].as_str().unwrap(), "http: alice's laptop (alice)".to_owned()),
        ("toolu_h2", Some("cli"), TOKEN, "cli: the admin token".to_owned()),
        ("toolu_h3", Some(page_id.as_str()), TOKEN, format!("{page_id}: the admin token")),
    ] {
        let waiting = approve(&b, bash("cargo build", call));
        let q = pending(&b).await;
        let mut sent = b.http.post(format!("{}/v1/questions/{}/answer", b.url, q["id"].as_str().unwrap())).bearer_auth(bearer);
        if let Some(client) = client {
            sent = sent.header("x-askuser-client", client);
        }
        let r = sent.json(&json!({"answers": [{"selected": ["Allow"]}]})).send().await.unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        assert_eq!(waiting.await.unwrap()["behavior"], "allow");
        let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
        assert_eq!(log[0]["by"], want.as_str(), "{call}: not bob's phone, whose connection it named");
        assert_eq!(b.record(q["id"].as_str().unwrap()).await["answeredBy"], want.as_str(), "{call}");
    }
}
