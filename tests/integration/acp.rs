//! `askuser acp` running a real ACP agent (tests/acp/agent.mjs, on the official ACP
//! TypeScript SDK) that asks what claude-agent-acp asks: its Bash and Edit permission
//! requests and Claude Code's questions as a form reach the inbox, a person answers
//! them over the bridge's API, and the agent reports what it got back.

use crate::support::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

/// The test agent, with its npm packages installed (scripts/setup does).
fn agent() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp");
    let sdk = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    assert!(sdk.exists(), "the ACP TypeScript SDK is not installed in tests/acp/node_modules: run scripts/setup");
    dir.join("agent.mjs").canonicalize().unwrap()
}

/// A project folder for the agent's session: a file to read and one it wants to edit.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "let a = 1;\n").unwrap();
    dir
}

/// Runs `askuser acp` against bridge `url` in folder `cwd`, the prompt on its stdin,
/// in the background.
fn acp(url: &str, cwd: &Path, data: &Path, prompt: &str, agent_args: &[&str]) -> tokio::task::JoinHandle<Output> {
    let mut cmd = askuser();
    cmd.args(["acp", "--url", url, "--token", TOKEN, "--data-dir"])
        .arg(data)
        .args(["--", "node"])
        .arg(agent())
        .args(agent_args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let prompt = prompt.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("askuser runs");
        child.stdin.take().unwrap().write_all(prompt.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
}

/// The next pending question that is not in `seen`, once it is there.
async fn next_question(b: &TestBridge, seen: &mut Vec<String>) -> Value {
    for _ in 0..400 {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.into_iter().find(|q| !seen.contains(&q["id"].as_str().unwrap().to_owned())) {
            seen.push(q["id"].as_str().unwrap().to_owned());
            return q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no new question within 20 s (seen: {seen:?})");
}

/// Answers question `id` as a person in a browser tab does.
async fn answer(b: &TestBridge, id: &str, answers: Value) {
    let r = b
        .post(&format!("/v1/questions/{id}/answer"))
        .header("x-askuser-client", "tab")
        .json(&json!({"answers": answers}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// The agent's `RESULT NAME JSON` lines in askuser's stdout.
fn results(out: &Output) -> HashMap<String, Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (name.to_owned(), serde_json::from_str(value).unwrap_or_else(|e| panic!("{value}: {e}")))
        })
        .collect()
}

#[tokio::test]
async fn an_acp_agents_permissions_and_questions_are_answered_in_the_inbox() {
    needs!(AcpSdk);
    let b = bridge().await;
    let (work, data) = (project(), tempfile::tempdir().unwrap());
    let run = acp(&b.url, work.path(), data.path(), "Make the tests pass", &[]);
    let mut seen = Vec::new();

    // Bash, asked as Claude Code's tool: always allowed (askuser keeps the rule; the
    // agent is allowed once, its own "always" being broader).
    let q = next_question(&b, &mut seen).await;
    let id = q["id"].as_str().unwrap();
    assert!(id.starts_with("approve-acp-sess-"), "{id}");
    assert_eq!(q["request"]["questions"][0]["header"], "Bash");
    assert_eq!(q["request"]["approval"]["input"]["command"], "cargo test --all", "{q:#}");
    let cwd = work.path().canonicalize().unwrap();
    assert_eq!(q["request"]["approval"]["cwd"], cwd.to_str().unwrap());
    let who = &q["request"]["agent"];
    assert_eq!(who["name"], "Scripted Agent", "the agent's own name, from its agentInfo");
    assert_eq!(id, format!("approve-acp-{}-toolu_bash", who["sessionId"].as_str().unwrap()), "the session's call: a retry resumes it");
    answer(&b, id, json!([{"selected": ["Always allow"]}])).await;

    // Edit, shown as its diff: denied with the person's words.
    let q = next_question(&b, &mut seen).await;
    let shown = q["request"]["questions"][0]["question"].as_str().unwrap();
    assert!(shown.starts_with("Edit src/main.rs?") && shown.contains("- let a = 1;\n+ let a = 2;"), "{shown}");
    answer(&b, q["id"].as_str().unwrap(), json!([{"custom": "change lib.rs instead"}])).await;

    // Claude Code's two questions, as they are: an "Other" text, and a pick with more.
    let q = next_question(&b, &mut seen).await;
    let questions = &q["request"]["questions"];
    assert_eq!(questions[0]["question"], "Which database?");
    assert_eq!(questions[0]["options"][1], json!({"label": "SQLite", "description": "Embedded"}));
    assert_eq!((questions[1]["header"].as_str(), questions[1]["multiSelect"].as_bool()), (Some("Checks"), Some(true)));
    answer(&b, q["id"].as_str().unwrap(), json!([{"custom": "DuckDB"}, {"selected": ["Lint"], "custom": "Fuzz, nightly"}])).await;

    let out = tokio::time::timeout(Duration::from_secs(30), run).await.expect("askuser acp ends with the turn").unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let got = results(&out);
    assert_eq!(got["prompt"], json!([{"type": "text", "text": "Make the tests pass"}]));
    let caps = &got["capabilities"];
    assert_eq!((&caps["fs"]["readTextFile"], &caps["fs"]["writeTextFile"]), (&json!(true), &json!(true)), "{caps}");
    assert!(caps["terminal"] != json!(true) && caps["elicitation"]["form"].is_object(), "{caps}");

    assert_eq!(got["bash"], json!({"outcome": {"outcome": "selected", "optionId": "allow-once"}}));
    let edit = &got["edit"];
    assert_eq!(edit["outcome"], json!({"outcome": "selected", "optionId": "reject"}), "{edit}");
    assert_eq!(edit["_meta"]["askuser"]["message"], "The user denied this Edit call and said: change lib.rs instead");
    assert_eq!(
        got["questions"],
        json!({"response": {"action": "accept", "content": {"question_0_custom": "DuckDB", "question_1": ["Lint"], "question_1_custom": "Fuzz, nightly"}},
               "claude": {"answers": {"Which database?": "DuckDB", "Which checks?": "Lint, \"Fuzz, nightly\""}}})
    );

    // Files: read and written in the session's folder, refused outside it.
    assert_eq!(got["read"], json!({"value": {"content": "two\n"}}));
    assert!(got["write"]["value"].is_object(), "{}", got["write"]);
    assert_eq!(std::fs::read_to_string(work.path().join("out/made.txt")).unwrap(), "made by the agent\n");
    assert!(got["outside"]["error"].as_str().unwrap().contains("/etc/hostname is outside the session's folder"), "{}", got["outside"]);
    assert_eq!(std::fs::read_to_string(work.path().join("src/main.rs")).unwrap(), "let a = 1;\n", "the denied edit did not happen");

    // The reply streamed to stdout, the tools named on stderr.
    assert!(stdout.starts_with("RESULT prompt") && stdout.contains("Working on it.\n") && stdout.ends_with("Done.\n"), "{stdout}");
    assert!(stderr.contains("askuser: tool: cargo test --all") && stderr.contains("askuser: tool: Edit src/main.rs"), "{stderr}");

    // The decisions, in the audit log like any other agent's.
    let log: Vec<Value> = b.get("/v1/decisions").send().await.unwrap().json().await.unwrap();
    let decided: Vec<(&str, &str)> = log.iter().map(|d| (d["tool"].as_str().unwrap(), d["decision"].as_str().unwrap())).collect();
    assert_eq!(decided, [("Edit", "deny"), ("Bash", "always")], "{log:#?}");
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules[0]["text"], format!("Bash(cargo test:*) in {}", cwd.display()));
}

#[tokio::test]
async fn an_agent_that_dies_mid_turn_is_an_error_named_clearly() {
    needs!(AcpSdk);
    let b = bridge().await;
    let (work, data) = (project(), tempfile::tempdir().unwrap());
    let out = tokio::time::timeout(Duration::from_secs(30), acp(&b.url, work.path(), data.path(), "hi", &["die"])).await.unwrap().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("askuser: the agent `node`") && stderr.contains("before its turn ended"), "{stderr}");
}

#[tokio::test]
async fn no_bridge_no_agent_and_a_bridge_gone_mid_wait_refuses_the_call() {
    needs!(AcpSdk);
    let (work, data) = (project(), tempfile::tempdir().unwrap());
    let out = acp("http://127.0.0.1:9", work.path(), data.path(), "hi", &[]).await.unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is `askuser serve` running?") && !stderr.contains("askuser: tool:"), "{stderr}");

    // The bridge goes away while the person has not answered: the agent is refused,
    // not left waiting, and its turn goes on.
    let b = bridge().await;
    let run = acp(&b.url, work.path(), data.path(), "hi", &["bash"]);
    next_question(&b, &mut Vec::new()).await;
    b.stop().await;
    let out = tokio::time::timeout(Duration::from_secs(40), run).await.expect("not left waiting").unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let bash = &results(&out)["bash"];
    assert_eq!(bash["outcome"], json!({"outcome": "selected", "optionId": "reject"}), "{bash}");
    assert!(bash["_meta"]["askuser"]["message"].as_str().unwrap().starts_with("askuser could not ask the person"), "{bash}");
    assert!(stderr.contains("refusing the tool call"), "{stderr}");
}
