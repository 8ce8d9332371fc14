//! Approvals with the real Claude Code: `claude -p … --permission-prompt-tool
//! mcp__askuser__approve`, set up by `askuser setup claude-code --approvals`. The scripted
//! model calls Claude Code's own tools (`Bash`, `AskUserQuestion`); each call Claude Code
//! may not make on its own reaches askuser's `approve` tool, waits in the inbox, and runs
//! only as the person decides there.
//!
//! How Claude Code 2.1.331 behaves here, as these tests found it:
//! - headless, a `Bash` call that is not read-only is sent to the permission prompt tool as
//!   `{tool_name, input, tool_use_id}`; the tool's single text block is read as
//!   `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`, and the
//!   model reads a denial's message as the call's (error) result;
//! - its own `AskUserQuestion` is offered in `-p` and reaches the permission prompt tool
//!   the same way; allowing it with `answers` in `updatedInput` is how the person's
//!   answer reaches the model.

use crate::claude::{claude, model_env};
use crate::harness::{host_bin, Home};
use crate::model::{Model, Turn};
use crate::run::Run;
use crate::scenarios::{START, STEP};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The tool Claude Code is told to ask: `mcp__SERVER__TOOL`.
const APPROVE: &str = "mcp__askuser__approve";

/// A user who ran `askuser setup claude-code --approvals`: `askuser mcp --approvals`.
async fn user() -> Home {
    let home = Home::new().await;
    home.askuser(&["setup", "claude-code", "--approvals"]);
    let config: Value = serde_json::from_str(&std::fs::read_to_string(home.path().join(".claude.json")).unwrap()).unwrap();
    assert_eq!(config["mcpServers"]["askuser"]["args"], json!(["mcp", "--approvals"]), "{config:#}");
    home
}

/// `claude -p PROMPT --permission-prompt-tool mcp__askuser__approve` against `model`.
async fn start(home: &Home, model: &Model, prompt: &str) -> Run {
    let api = crate::anthropic::start(model.clone()).await;
    let mut cmd = home.host(&host_bin("claude"));
    cmd.args(["-p", prompt, "--permission-prompt-tool", APPROVE]);
    cmd.envs(model_env(&api));
    claude(home, cmd, api)
}

/// The next question to reach the bridge that is not in `seen` (it is added).
pub(crate) async fn next_question(home: &Home, run: &Run, seen: &mut HashSet<String>) -> Value {
    let until = Instant::now() + START;
    loop {
        let fresh = home.questions("all").await.into_iter().find(|q| !seen.contains(q["id"].as_str().unwrap_or_default()));
        if let Some(q) = fresh {
            seen.insert(q["id"].as_str().unwrap().to_owned());
            return q;
        }
        assert!(Instant::now() < until, "no new question reached the bridge within {START:?}\n{}", run.report());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn bash(command: &str) -> Turn {
    Turn::Call("Bash", json!({"command": command, "description": "Make a marker file"}))
}

/// The audit log, newest first.
pub(crate) async fn decisions(home: &Home) -> Vec<Value> {
    let bridge = home.bridge.as_ref().unwrap();
    let r = home.http.get(format!("{}/v1/decisions", bridge.url)).bearer_auth(&bridge.token).send().await.unwrap();
    r.json().await.unwrap()
}

/// A command the person allows runs; one they deny does not, and the model reads what
/// they said instead. Both decisions are in the audit log.
#[tokio::test]
async fn claude_runs_a_command_only_when_the_person_allows_it_in_the_inbox() {
    let home = user().await;
    let model = Model::new([bash("touch allowed.txt"), bash("touch denied.txt"), Turn::Say("done".into())]);
    let mut run = start(&home, &model, "Make the two marker files, then say done.").await;
    let mut seen = HashSet::new();

    let first = next_question(&home, &run, &mut seen).await;
    let approval = &first["request"]["approval"];
    assert_eq!(approval["tool"], "Bash", "{first:#}");
    assert_eq!(approval["input"]["command"], "touch allowed.txt", "{first:#}");
    assert_eq!(approval["cwd"].as_str(), home.project().to_str(), "the folder the agent works in: {first:#}");
    let question = first["request"]["questions"][0]["question"].as_str().unwrap();
    assert!(question.contains("```\ntouch allowed.txt\n```") && question.contains("Why: Make a marker file"), "{question}");
    assert_eq!(first["request"]["agent"]["name"], "Claude Code", "{first:#}");
    assert!(!home.project().join("allowed.txt").exists(), "nothing runs before the person decides");
    home.answer(first["id"].as_str().unwrap(), json!({"answers": [{"selected": ["Allow"]}]})).await;

    let second = next_question(&home, &run, &mut seen).await;
    assert_eq!(second["request"]["approval"]["input"]["command"], "touch denied.txt", "{second:#}");
    assert!(home.project().join("allowed.txt").exists(), "allowed: it ran\n{}", run.report());
    home.answer(second["id"].as_str().unwrap(), json!({"answers": [{"custom": "not now, use the build script"}]})).await;

    let results = run.results(2, STEP, "after both decisions").await;
    assert!(results[1].contains("not now, use the build script"), "the model reads what the person said: {results:#?}");
    assert!(run.exit(STEP).await.success(), "claude -p exits 0\n{}", run.report());
    assert!(!home.project().join("denied.txt").exists(), "denied: it never ran\n{}", run.report());
    let log = decisions(&home).await;
    let kinds: Vec<(&str, &str)> = log.iter().map(|d| (d["decision"].as_str().unwrap(), d["summary"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("deny", "touch denied.txt"), ("allow", "touch allowed.txt")], "{log:#?}");
}

/// "Always allow" keeps a rule for exactly the command shown (`Bash(touch one.txt)` in
/// the project, never `touch:*`): the same call again runs without a question, and the
/// log says the rule allowed it.
#[tokio::test]
async fn always_allow_keeps_a_rule_and_the_next_matching_call_is_not_asked() {
    let home = user().await;
    let model = Model::new([bash("touch one.txt"), bash("touch one.txt"), Turn::Say("done".into())]);
    let mut run = start(&home, &model, "Make the marker files, then say done.").await;
    let mut seen = HashSet::new();
    let first = next_question(&home, &run, &mut seen).await;
    let always = &first["request"]["questions"][0]["options"][1];
    let project = home.project().display().to_string();
    assert_eq!(always["description"], format!("Do not ask again for Bash(touch one.txt) in {project}"), "{first:#}");
    home.answer(first["id"].as_str().unwrap(), json!({"answers": [{"selected": ["Always allow"]}]})).await;

    assert!(run.exit(STEP).await.success(), "claude -p exits 0\n{}", run.report());
    assert!(home.project().join("one.txt").exists(), "{}", run.report());
    assert_eq!(home.questions("all").await.len(), 1, "the second call was not asked\n{}", run.report());
    let log = decisions(&home).await;
    assert_eq!(log[0]["decision"], "allow", "{log:#?}");
    assert!(log[0]["question"].is_null() && log[0]["rule"].is_string(), "a rule's decision: {log:#?}");
    assert_eq!(log[1]["decision"], "always", "{log:#?}");
    let bridge = home.bridge.as_ref().unwrap();
    let rules: Value =
        home.http.get(format!("{}/v1/rules", bridge.url)).bearer_auth(&bridge.token).send().await.unwrap().json().await.unwrap();
    assert_eq!(rules[0]["text"], format!("Bash(touch one.txt) in {project}"), "{rules:#}");
}

/// Claude Code's own question tool, headless: it reaches the permission prompt tool, the
/// person answers its questions in the inbox, and the model reads their answer.
#[tokio::test]
async fn claude_codes_own_ask_user_question_is_answered_in_the_inbox() {
    let home = user().await;
    let questions = crate::scenarios::database_question();
    let model = Model::new([Turn::Call("AskUserQuestion", questions.clone()), Turn::Say("done".into())]);
    let mut run = start(&home, &model, "Ask me which database to use, then say done.").await;
    let offered: Vec<String> = {
        run.turns(1, START, "the first turn").await;
        crate::anthropic::tool_names(&model.seen()[0].tools)
    };
    assert!(offered.iter().any(|t| t == "AskUserQuestion"), "Claude Code offers its own question tool in -p: {offered:?}");
    let mut seen = HashSet::new();
    let q = next_question(&home, &run, &mut seen).await;
    assert_eq!(q["request"]["questions"][0]["question"], questions["questions"][0]["question"], "{q:#}");
    assert_eq!(q["request"]["approval"]["tool"], "AskUserQuestion", "{q:#}");
    home.answer(q["id"].as_str().unwrap(), crate::scenarios::sqlite()).await;
    let results = run.results(1, STEP, "after the answer").await;
    assert!(results[0].contains("SQLite"), "the model reads the person's answer: {results:#?}");
    assert!(run.exit(STEP).await.success(), "claude -p exits 0\n{}", run.report());
}

/// docs/approvals.md's lines for Claude Code work when pasted: its setup line, then its
/// `claude -p` line exactly as written; the person allows the command, and it runs.
#[tokio::test]
async fn the_docs_approval_lines_work_when_pasted() {
    let lines = crate::scenarios::doc_lines("docs/approvals.md", "## With Claude Code");
    assert_eq!(lines.len(), 2, "a setup line and a claude line: {lines:#?}");
    assert_eq!(lines[0], "askuser setup claude-code --approvals");
    let home = Home::new().await;
    home.sh(&lines[0]);
    let model = Model::new([bash("touch ready.txt"), Turn::Say("done".into())]);
    let api = crate::anthropic::start(model.clone()).await;
    let mut cmd = crate::scenarios::command(&home, "claude", &[], Some(&lines[1]));
    cmd.envs(model_env(&api));
    let mut run = claude(&home, cmd, api);
    let q = next_question(&home, &run, &mut HashSet::new()).await;
    home.answer(q["id"].as_str().unwrap(), json!({"answers": [{"selected": ["Allow"]}]})).await;
    assert!(run.exit(STEP).await.success(), "`{}` exits 0\n{}", lines[1], run.report());
    assert!(home.project().join("ready.txt").exists(), "allowed: it ran\n{}", run.report());
}
