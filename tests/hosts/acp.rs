//! `askuser acp -- claude-agent-acp`: Claude Code run headless through the ACP adapter
//! users run (`@agentclientprotocol/claude-agent-acp` 0.101.0, from npm into `.tools/hosts`
//! by `scripts/setup hosts`), against the scripted model (`anthropic.rs`), with a bridge
//! whose approvals and questions this suite answers as the person would.
//!
//! How the adapter behaves here, as these tests (and probes on the wire) found it:
//! - It runs on Node 20 (its `engines` asks for 22; npm only warns). Its Claude Agent SDK
//!   (0.3.318) bundles no `cli.js`: it brings Claude Code 2.1.318 as a native binary in the
//!   optional package `@anthropic-ai/claude-agent-sdk-linux-x64`, which the adapter finds on
//!   its own (`CLAUDE_CODE_EXECUTABLE` would override it). That binary reads the same
//!   environment as `claude -p` ([`model_env`]): nothing else is needed to run offline.
//! - It names itself `{"name": "@agentclientprotocol/claude-agent-acp", "title": "Claude
//!   Agent"}`; askuser shows the title in the inbox.
//! - With no `permissions.defaultMode` in the user's settings, a session starts in its mode
//!   `auto` ("Claude handles permission decisions"), where Claude Code runs `touch ready.txt`
//!   in the folder without asking anyone; askuser switches it to `default` ("Manual")
//!   (`session/set_mode`), where every call that is not read-only is a
//!   `session/request_permission` with the options `allow-once` (`allow_once`) and `reject`
//!   (`reject_once`), and names Claude Code's tool (`name: "Bash"`) and its input.
//! - A denial is read by the model as "User refused permission to run tool": ACP carries
//!   no words with it.
//! - Its own AskUserQuestion comes as an `elicitation/create` form (askuser declares
//!   forms), and the model reads the person's answer as the tool's result.
//! - Besides the main loop, Claude Code asks the model for the session's title (no tools)
//!   and, after the turn, for a prompt suggestion (a copy of the conversation whose last
//!   message starts "[SUGGESTION MODE:"); `anthropic.rs` serves both as side requests.

use crate::approvals::{bash, decisions, next_question};
use crate::claude::model_env;
use crate::harness::{askuser_bin, host_bin, Home};
use crate::model::{Model, Turn};
use crate::run::Run;
use crate::scenarios::{database_question, doc_lines, sqlite, STEP};
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The adapter's command (npm links its `dist/index.js` as this bin).
const ADAPTER: &str = "claude-agent-acp";

/// The agent's name in the inbox: the adapter's `agentInfo.title`.
const AGENT: &str = "Claude Agent";

/// `askuser acp --prompt PROMPT -- claude-agent-acp` in the project folder, with the bridge
/// of this HOME, against the scripted `model`.
async fn start(home: &Home, model: &Model, prompt: &str) -> Run {
    let mut cmd = home.host(&askuser_bin());
    cmd.args(["acp", "--prompt", prompt, "--"]).arg(host_bin(ADAPTER));
    spawn(home, model, cmd).await
}

/// Starts `cmd` (an `askuser acp`, or a shell line that runs one) against the scripted `model`.
async fn spawn(home: &Home, model: &Model, mut cmd: tokio::process::Command) -> Run {
    let api = crate::anthropic::start(model.clone()).await;
    cmd.envs(model_env(&api));
    // The adapter's own log (`CLAUDE_AGENT_LOGS`), for failure messages.
    let log = home.path().join(".cache/claude-agent-acp");
    cmd.env("CLAUDE_AGENT_LOGS", &log);
    Run::spawn("askuser acp", cmd, api)
        .with_log("claude-agent-acp's log", move || std::fs::read_to_string(log.join("agent.log")).unwrap_or_default())
}

/// The project folder as askuser names it (canonical).
fn project(home: &Home) -> String {
    home.project().canonicalize().unwrap().display().to_string()
}

/// The person allows the command in the inbox: it runs, the turn ends with exit 0, and the
/// model's last words are on stdout.
#[tokio::test]
async fn acp_claude_agent_runs_a_command_when_the_person_allows_it() {
    let home = Home::new().await;
    let model = Model::new([bash("touch ready.txt"), Turn::Say("Made ready.txt.".into())]);
    let mut run = start(&home, &model, "Make the marker file ready.txt in this folder").await;

    let q = next_question(&home, &run, &mut HashSet::new()).await;
    let approval = &q["request"]["approval"];
    assert_eq!(approval["tool"], "Bash", "Claude Code's own tool, as the adapter names it: {q:#}\n{}", run.report());
    assert_eq!(approval["input"]["command"], "touch ready.txt", "{q:#}");
    assert_eq!(approval["cwd"].as_str(), Some(project(&home).as_str()), "the session's folder: {q:#}");
    assert_eq!(q["request"]["agent"]["name"], AGENT, "the inbox names the adapter by its title: {q:#}");
    let question = q["request"]["questions"][0]["question"].as_str().unwrap();
    assert!(question.contains("touch ready.txt") && question.contains("Make a marker file"), "{question}");
    assert!(!home.project().join("ready.txt").exists(), "nothing runs before the person decides\n{}", run.report());
    home.answer(q["id"].as_str().unwrap(), json!({"answers": [{"selected": ["Allow"]}]})).await;

    assert!(run.exit(STEP).await.success(), "askuser acp exits 0 when the turn ends\n{}", run.report());
    assert!(home.project().join("ready.txt").exists(), "allowed: it ran\n{}", run.report());
    assert_eq!(run.stdout(STEP).await, "Made ready.txt.\n", "the model's reply, alone on stdout\n{}", run.report());
    let log = decisions(&home).await;
    let kinds: Vec<(&str, &str)> = log.iter().map(|d| (d["decision"].as_str().unwrap(), d["summary"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("allow", "touch ready.txt")], "{log:#?}");
}

/// The person denies it: it never runs, the model reads that the user refused, and the
/// turn still ends with exit 0.
#[tokio::test]
async fn acp_claude_agent_does_not_run_a_command_the_person_denies() {
    let home = Home::new().await;
    let model = Model::new([bash("touch denied.txt"), Turn::Say("I left the folder as it was.".into())]);
    let mut run = start(&home, &model, "Make the marker file denied.txt in this folder").await;

    let q = next_question(&home, &run, &mut HashSet::new()).await;
    assert_eq!(q["request"]["approval"]["input"]["command"], "touch denied.txt", "{q:#}");
    home.answer(q["id"].as_str().unwrap(), json!({"answers": [{"custom": "not now, use the build script"}]})).await;

    let results = run.results(1, STEP, "after the denial").await;
    // ACP's answer is an option's id: the person's words stay in askuser's `_meta`, which
    // the adapter does not read.
    assert!(results[0].contains("User refused permission"), "the model reads the refusal: {results:#?}\n{}", run.report());
    assert!(run.exit(STEP).await.success(), "askuser acp exits 0 when the turn ends\n{}", run.report());
    assert!(!home.project().join("denied.txt").exists(), "denied: it never ran\n{}", run.report());
    assert_eq!(run.stdout(STEP).await, "I left the folder as it was.\n", "{}", run.report());
    let log = decisions(&home).await;
    let kinds: Vec<(&str, &str)> = log.iter().map(|d| (d["decision"].as_str().unwrap(), d["summary"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("deny", "touch denied.txt")], "{log:#?}");
}

/// Claude Code's own AskUserQuestion reaches askuser as the adapter's form; the person
/// answers its question in the inbox, and the model reads their answer.
#[tokio::test]
async fn acp_claude_agent_ask_user_question_is_answered_in_the_inbox() {
    let home = Home::new().await;
    let asked = database_question();
    let model = Model::new([Turn::Call("AskUserQuestion", asked.clone()), Turn::Say("done".into())]);
    let mut run = start(&home, &model, "Ask me which database to use, then say done.").await;

    let q = next_question(&home, &run, &mut HashSet::new()).await;
    let shown = &q["request"]["questions"][0];
    assert_eq!(shown["question"], asked["questions"][0]["question"], "{q:#}\n{}", run.report());
    let labels: Vec<&str> = shown["options"].as_array().unwrap().iter().filter_map(|o| o["label"].as_str()).collect();
    assert_eq!(labels, ["PostgreSQL (Recommended)", "SQLite"], "{q:#}");
    assert_eq!(q["request"]["agent"]["name"], AGENT, "{q:#}");
    home.answer(q["id"].as_str().unwrap(), sqlite()).await;

    let results = run.results(1, STEP, "after the answer").await;
    assert!(results[0].contains("SQLite"), "the model reads the person's answer: {results:#?}\n{}", run.report());
    assert!(run.exit(STEP).await.success(), "askuser acp exits 0\n{}", run.report());
    assert_eq!(run.stdout(STEP).await, "done\n", "{}", run.report());
}

/// npm's view of a user who installed the pinned adapter globally
/// (`npm install -g @agentclientprotocol/claude-agent-acp@0.101.0`), offline: its global
/// prefix (`.tools/npx`, linked by `scripts/setup hosts` to the install in `.tools/hosts`)
/// and a cache holding the package's registry entry.
fn npm_env() -> [(&'static str, PathBuf); 3] {
    let npx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/npx");
    assert!(npx.join("bin").join(ADAPTER).exists(), "{} is missing: run scripts/setup hosts", npx.join("bin").join(ADAPTER).display());
    [("npm_config_prefix", npx.clone()), ("npm_config_cache", npx.join("cache")), ("npm_config_offline", "true".into())]
}

/// docs/approvals.md's line for ACP agents works when pasted, exactly as written: the
/// person allows the command, it runs, and `askuser acp` exits 0.
///
/// `npx -y @agentclientprotocol/claude-agent-acp` is run by the real npx, offline
/// ([`npm_env`]): npx looks the name up in npm's cache (the registry entry `scripts/setup`
/// stored), finds the package installed in the global prefix, and runs that install's bin
/// without fetching anything. So what runs is the pinned 0.101.0, not the newest release a
/// user's npx would fetch; an npx that tried to fetch would fail here (`ENOTCACHED`).
#[tokio::test]
async fn acp_docs_line_works_when_pasted() {
    let lines = doc_lines("docs/approvals.md", "## ACP agents");
    assert_eq!(lines.len(), 1, "one `askuser acp` line: {lines:#?}");
    let line = &lines[0];
    assert!(line.starts_with("askuser acp ") && line.ends_with(" -- npx -y @agentclientprotocol/claude-agent-acp"), "{line}");
    let prompt = line.split('"').nth(1).expect("the line's prompt, in double quotes");

    let home = Home::new().await;
    let model = Model::new([bash("touch ready.txt"), Turn::Say("Made ready.txt.".into())]);
    let mut cmd = home.host(Path::new("sh"));
    cmd.arg("-c").arg(line).envs(npm_env());
    let mut run = spawn(&home, &model, cmd).await;

    let q = next_question(&home, &run, &mut HashSet::new()).await;
    assert_eq!(q["request"]["approval"]["input"]["command"], "touch ready.txt", "{q:#}");
    let first = model.seen()[0].body.to_string();
    assert!(first.contains(prompt), "the model gets the prompt {prompt:?} of `{line}`: {first}");
    home.answer(q["id"].as_str().unwrap(), json!({"answers": [{"selected": ["Allow"]}]})).await;
    assert!(run.exit(STEP).await.success(), "`{line}` exits 0\n{}", run.report());
    assert!(home.project().join("ready.txt").exists(), "allowed: it ran\n{}", run.report());
    assert_eq!(run.stdout(STEP).await, "Made ready.txt.\n", "{}", run.report());
}
