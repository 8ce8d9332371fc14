//! Codex CLI (`codex exec`, headless) with askuser set up by `askuser setup codex`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.codex/config.toml` is what
//! `askuser setup codex` wrote, plus what the user adds to reach a model (here a provider
//! entry for the scripted model in `openai.rs`, with a fake key), and a real `codex exec`
//! in its own process group.
//!
//! How Codex 0.169.0 behaves headless, as these tests (and probes on the wire) found it:
//! - `codex exec` runs with approval `never` and sandbox `read-only`. An MCP tool runs
//!   unattended only when it says `readOnlyHint: true` (askuser's does); any other fails at
//!   once with "MCP tool call requires approval, but approval policy is never".
//! - It offers the tool as `ask_user` in the namespace `mcp__askuser`, with askuser's
//!   description and input schema cut down to `type`, `description`, `properties`,
//!   `items`, `required` and `minItems` (no `maxLength`, `maxItems`, `minProperties`,
//!   `default`; no output schema).
//! - It declares `elicitation` (form and url) in `initialize` (protocol 2025-06-18, so no
//!   tasks) but, with nobody at a terminal, answers every `elicitation/create` with
//!   `{"action": "decline"}` a few milliseconds after it is sent.
//! - Every `tools/call` carries a progress token, but progress does not extend
//!   `tool_timeout_sec`. When that runs out Codex sends `notifications/cancelled` with the
//!   reason "MCP request cancelled by caller", and the model reads "tool call error: tool
//!   call failed for `askuser/ask_user`\n\nCaused by:\n    timed out awaiting tools/call
//!   after Ns".
//! - The model reads a result as "Wall time: … seconds\nOutput:" and then the result's
//!   `structuredContent` as JSON when it has one (its text content otherwise).
//! - MCP servers run in process groups of their own: killing Codex's group leaves
//!   `askuser mcp` to find its stdin closed.
//! - Root keys (`model`, `model_provider`) must come before the tables in config.toml:
//!   appended after `[mcp_servers.askuser]` they would belong to that table (and Codex
//!   would ignore them with a warning), so the provider entry is added with toml_edit.

use crate::harness::{askuser_bin, host_bin, kill_group, Home};
use crate::model::{Model, Turn};
use crate::openai::{find_tool, tool_names, OpenAi};
use serde_json::{json, Value};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The environment variable the provider entry names for its key.
const KEY_VAR: &str = "SCRIPTED_OPENAI_API_KEY";
/// How long Codex may take to start, list askuser's tool and call it (a loaded machine).
const START: Duration = Duration::from_secs(90);
/// How long one step of a conversation may take.
const STEP: Duration = Duration::from_secs(60);
/// Longer than Codex takes to decline its elicitation form by itself (milliseconds), and
/// than the second within which askuser takes a decline for the host's, not the person's.
const AUTO_DECLINE: Duration = Duration::from_millis(2500);

/// A question the model asks.
fn database_question() -> Value {
    json!({"questions": [{
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "PostgreSQL (Recommended)", "description": "A server; what production runs."},
            {"label": "SQLite", "description": "A file next to the service; nothing to run."}
        ]
    }]})
}

/// The person's answer to [`database_question`].
fn sqlite() -> Value {
    json!({"answers": [{"selected": ["SQLite"]}]})
}

/// A new user who ran `askuser setup codex`.
async fn user() -> Home {
    let home = Home::new().await;
    home.askuser(&["setup", "codex"]);
    home
}

/// What the user adds to the config.toml that `askuser setup codex` wrote: the scripted
/// model as their provider, and no analytics, update checks or telemetry. `tool_timeout`
/// replaces the `tool_timeout_sec` askuser set (a user who lowered it).
fn configure(home: &Home, base_url: &str, tool_timeout: Option<u64>) {
    let path = home.path().join(".codex/config.toml");
    let text = std::fs::read_to_string(&path).expect("askuser setup codex wrote ~/.codex/config.toml");
    let mut doc: toml_edit::DocumentMut = text.parse().expect("config.toml parses");
    let server = &doc["mcp_servers"]["askuser"];
    assert_eq!(server["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!(server["args"].as_array().map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>()), Some(vec!["mcp"]), "{text}");
    assert_eq!(server["tool_timeout_sec"].as_integer(), Some(86400), "askuser asks Codex to wait a day:\n{text}");
    if let Some(secs) = tool_timeout {
        doc["mcp_servers"]["askuser"]["tool_timeout_sec"] = toml_edit::value(secs as i64);
    }
    doc["model"] = toml_edit::value("scripted-model");
    doc["model_provider"] = toml_edit::value("scripted");
    doc["check_for_update_on_startup"] = toml_edit::value(false);
    doc["analytics"]["enabled"] = toml_edit::value(false);
    doc["feedback"]["enabled"] = toml_edit::value(false);
    for exporter in ["exporter", "trace_exporter", "metrics_exporter"] {
        doc["otel"][exporter] = toml_edit::value("none");
    }
    let provider = &mut doc["model_providers"]["scripted"];
    provider["name"] = toml_edit::value("Scripted model");
    provider["base_url"] = toml_edit::value(base_url);
    provider["wire_api"] = toml_edit::value("responses");
    provider["env_key"] = toml_edit::value(KEY_VAR);
    provider["supports_websockets"] = toml_edit::value(false);
    provider["request_max_retries"] = toml_edit::value(0);
    provider["stream_max_retries"] = toml_edit::value(0);
    std::fs::write(&path, doc.to_string()).unwrap();
}

/// A running `codex exec` and the scripted model it talks to.
struct Codex {
    child: tokio::process::Child,
    /// Its process group (its pid), killed when this is dropped.
    group: u32,
    output: Arc<Mutex<String>>,
    api: OpenAi,
}

impl Codex {
    /// `codex exec PROMPT` for this user against `model`.
    async fn start(home: &Home, model: &Model, tool_timeout: Option<u64>) -> Codex {
        let api = OpenAi::start(model.clone()).await;
        configure(home, &api.base_url, tool_timeout);
        let mut cmd = home.host(&host_bin("codex"));
        // --strict-config: Codex refuses a key it does not know, askuser's entry among them.
        cmd.args(["exec", "--skip-git-repo-check", "--strict-config", "--color", "never"])
            .arg("Ask me which database the service should use, then say done.")
            .env(KEY_VAR, "sk-scripted-not-a-real-key")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("codex starts");
        let group = child.id().expect("codex runs");
        let output = Arc::new(Mutex::new(String::new()));
        collect(child.stdout.take().unwrap(), output.clone());
        collect(child.stderr.take().unwrap(), output.clone());
        Codex { child, group, output, api }
    }

    /// What Codex printed, and what the scripted API served, for failure messages.
    fn report(&self) -> String {
        format!(
            "--- codex output ---\n{}\n--- requests to the scripted model ---\n{}\n--- the tool results the model read ---\n{:#?}",
            self.output.lock().unwrap(),
            self.api.requests().join("\n"),
            self.api.model.results()
        )
    }

    /// Waits (at most `limit`) until the model has read `n` tool results; returns them.
    async fn results(&self, n: usize, limit: Duration, what: &str) -> Vec<String> {
        let until = Instant::now() + limit;
        loop {
            let results = self.api.model.results();
            if results.len() >= n {
                return results;
            }
            assert!(
                Instant::now() < until,
                "{what}: the model read {} tool result(s) in {limit:?}, not {n}\n{}",
                results.len(),
                self.report()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (at most `limit`) for Codex to exit.
    async fn exit(&mut self, limit: Duration) -> ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.unwrap(),
            Err(_) => panic!("codex did not exit within {limit:?}\n{}", self.report()),
        }
    }
}

impl Drop for Codex {
    fn drop(&mut self) {
        // Codex and its native binary, whether it exited or not (its MCP servers have
        // process groups of their own and end when their stdin closes).
        kill_group(self.group);
    }
}

fn collect(stream: impl AsyncRead + Unpin + Send + 'static, into: Arc<Mutex<String>>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut out = into.lock().unwrap();
            out.push_str(&line);
            out.push('\n');
        }
    });
}

/// Each question as "ID: STATUS", for assertions and their messages.
async fn statuses(home: &Home) -> Vec<String> {
    home.questions("all")
        .await
        .iter()
        .map(|q| format!("{}: {}", q["id"].as_str().unwrap_or("?"), q["status"].as_str().unwrap_or("?")))
        .collect()
}

/// The first question to reach the bridge (pending or not, the oldest), checked to be the model's; its id.
async fn asked(home: &Home, codex: &Codex) -> String {
    let until = Instant::now() + START;
    let question = loop {
        if let Some(q) = home.questions("all").await.into_iter().min_by_key(|q| q["createdAt"].as_u64()) {
            break q;
        }
        assert!(Instant::now() < until, "no question reached the bridge within {START:?}\n{}", codex.report());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(question["request"]["questions"][0]["question"], database_question()["questions"][0]["question"], "{question:#}");
    question["id"].as_str().expect("the question has an id").to_owned()
}

/// Codex declines askuser's elicitation form by itself within milliseconds, with nobody
/// there: the question must still wait for the person, and Codex still wait for it.
async fn still_pending_after_the_auto_decline(home: &Home, codex: &Codex, id: &str) {
    tokio::time::sleep(AUTO_DECLINE).await;
    assert_eq!(
        statuses(home).await,
        [format!("{id}: pending")],
        "Codex declined the elicitation form on its own (headless, nobody saw it), and askuser took that for \
         the person's \"no\": the question must stay pending in the inbox\n{}",
        codex.report()
    );
    assert_eq!(codex.api.model.results(), Vec::<String>::new(), "the call must still be waiting for the person\n{}", codex.report());
}

/// The askuser tool as Codex offers it: `ask_user` in the `mcp__askuser` namespace, with
/// askuser's description, and its input schema as far as Codex passes schemas on.
fn assert_offered(model: &Model) {
    let seen = model.seen();
    let first = seen.first().expect("Codex asked the model");
    let names = tool_names(&first.tools);
    assert!(names.contains(&"mcp__askuser__ask_user".to_owned()), "the tools offered: {names:?}");
    let tool = find_tool(&first.tools, "mcp__askuser", "ask_user").unwrap();
    assert_eq!(tool["description"].as_str(), Some(askuser::mcp::description("ask_user").as_str()), "{tool:#}");
    same_shape("parameters", &tool["parameters"], &askuser::mcp::input_schema());
}

/// Every property of askuser's schema `ours` is in the `offered` one with the same type,
/// description and required fields. (Codex keeps those and drops other keywords:
/// `maxLength`, `maxItems`, `minProperties`, `default`.)
fn same_shape(at: &str, offered: &Value, ours: &Value) {
    for key in ["type", "description", "required"] {
        assert_eq!(offered.get(key), ours.get(key), "{at}.{key} as Codex offers it: {offered:#}");
    }
    if let Some(items) = ours.get("items") {
        same_shape(&format!("{at}.items"), &offered["items"], items);
    }
    for (name, schema) in ours.get("properties").and_then(Value::as_object).into_iter().flatten() {
        same_shape(&format!("{at}.{name}"), &offered["properties"][name], schema);
    }
}

/// Asked headless, the question waits in the inbox however Codex treats its own form,
/// and the person's answer there is what the model reads; Codex then ends cleanly.
#[tokio::test]
async fn codex_headless_gets_the_answer_given_in_the_inbox() {
    let home = user().await;
    let model = Model::new([Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut codex = Codex::start(&home, &model, None).await;

    let id = asked(&home, &codex).await;
    assert_offered(&model);
    still_pending_after_the_auto_decline(&home, &codex, &id).await;

    home.answer(&id, sqlite()).await;
    let results = codex.results(1, STEP, "after the answer").await;
    assert!(results[0].contains("SQLite") && results[0].contains("answered"), "the model must read the answer: {:?}", results[0]);
    assert!(codex.exit(STEP).await.success(), "codex exits 0\n{}", codex.report());
    assert_eq!(statuses(&home).await, [format!("{id}: answered")]);
}

/// A person slower than `tool_timeout_sec`: Codex gives up on the call ("MCP request
/// cancelled by caller"), the question stays open, the model's retry with the same
/// arguments waits on the same question, and the answer given then reaches the model.
#[tokio::test]
async fn codex_retry_after_its_tool_timeout_resumes_the_same_question() {
    let home = user().await;
    let model = Model::new([Turn::Ask(database_question()), Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut codex = Codex::start(&home, &model, Some(5)).await;

    let id = asked(&home, &codex).await;
    still_pending_after_the_auto_decline(&home, &codex, &id).await;
    let results = codex.results(1, STEP, "Codex's tool timeout").await;
    assert!(results[0].contains("timed out awaiting tools/call after 5s"), "what the model reads when Codex gives up: {:?}", results[0]);
    // The retry is on its way (the model answered the timeout with the same call).
    let until = Instant::now() + STEP;
    while model.seen().len() < 2 {
        assert!(Instant::now() < until, "the model was not asked again after the timeout\n{}", codex.report());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        statuses(&home).await,
        [format!("{id}: pending")],
        "Codex's timeout (\"MCP request cancelled by caller\") is not the person's no: the question stays open, \
         and the retry with the same arguments resumes it instead of asking again\n{}",
        codex.report()
    );

    home.answer(&id, sqlite()).await;
    let results = codex.results(2, STEP, "the answer after the retry").await;
    assert!(results[1].contains("SQLite") && results[1].contains("answered"), "the model must read the answer: {:?}", results[1]);
    assert!(codex.exit(STEP).await.success(), "codex exits 0\n{}", codex.report());
    assert_eq!(statuses(&home).await, [format!("{id}: answered")], "one question, answered");
}

/// Codex killed while the person thinks; they answer with nobody waiting; the next
/// `codex exec` that asks the same gets that answer, and the person is not asked twice.
#[tokio::test]
async fn codex_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    let home = user().await;
    let first = Model::new([Turn::Ask(database_question())]);
    let mut codex = Codex::start(&home, &first, None).await;
    let id = asked(&home, &codex).await;
    still_pending_after_the_auto_decline(&home, &codex, &id).await;

    kill_group(codex.group);
    let status = codex.exit(STEP).await;
    assert!(!status.success(), "killed: {status:?}");
    drop(codex);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(statuses(&home).await, [format!("{id}: pending")], "the host went away: the question stays open");
    home.answer(&id, sqlite()).await;

    let second = Model::new([Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut codex = Codex::start(&home, &second, None).await;
    let until = Instant::now() + START;
    while second.results().is_empty() {
        let now = statuses(&home).await;
        if now.len() > 1 || Instant::now() > until {
            panic!(
                "the restarted Codex asked the same question again and got no answer: the questions are {now:?}; it must \
                 resume {id}, answered meanwhile, and not ask the person a second time\n{}",
                codex.report()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let results = second.results();
    assert!(results[0].contains("SQLite") && results[0].contains("answered"), "the answer given meanwhile: {:?}", results[0]);
    assert_eq!(statuses(&home).await, [format!("{id}: answered")], "no second question");
    assert!(codex.exit(STEP).await.success(), "codex exits 0\n{}", codex.report());
}

/// The person declines in the inbox, or picks "Chat about this": what the model reads says
/// so and tells it not to assume an answer.
async fn declined(chat: bool) -> String {
    let home = user().await;
    let model = Model::new([Turn::Ask(database_question()), Turn::Say("done".into())]);
    let mut codex = Codex::start(&home, &model, None).await;
    let id = asked(&home, &codex).await;
    still_pending_after_the_auto_decline(&home, &codex, &id).await;

    home.decline(&id, chat).await;
    let results = codex.results(1, STEP, "after the decline").await;
    assert!(codex.exit(STEP).await.success(), "codex exits 0\n{}", codex.report());
    assert_eq!(statuses(&home).await, [format!("{id}: cancelled")]);
    let text = results[0].to_lowercase();
    assert!(text.contains("do not assume an answer"), "the model must be told not to assume an answer: {:?}", results[0]);
    text
}

#[tokio::test]
async fn codex_decline_in_the_inbox_tells_the_model_the_user_declined() {
    let text = declined(false).await;
    assert!(text.contains("declined"), "the model must read that the user declined: {text:?}");
}

#[tokio::test]
async fn codex_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    let text = declined(true).await;
    assert!(text.contains("talk") || text.contains("discuss"), "the model must read that the user wants to talk it over: {text:?}");
}
