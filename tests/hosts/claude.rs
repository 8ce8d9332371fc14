//! Claude Code (`claude -p`, headless) with askuser set up by `askuser setup claude-code`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.claude.json` (`mcpServers.askuser`)
//! and `~/.claude/settings.json` are what `askuser setup claude-code` wrote, plus what the
//! user adds to reach a model (here `ANTHROPIC_BASE_URL` pointing at the scripted model in
//! `anthropic.rs`, a fake `ANTHROPIC_API_KEY`, and no telemetry, updates, error reports or
//! other traffic), and a real `claude -p PROMPT` in its own process group.
//!
//! How Claude Code behaves headless (2.1.197, checked again on 2.1.331 and 2.1.332), as these tests (and
//! probes on the wire) found it:
//! - A first run needs no onboarding state in `~/.claude.json` (no `hasCompletedOnboarding`)
//!   and no trust for the folder: `-p` with an API key just runs. It adds its own keys to
//!   `~/.claude.json` (`firstStartTime`, `userID`, migrations) and leaves askuser's entry.
//! - `DISABLE_TELEMETRY`, `DISABLE_AUTOUPDATER`, `DISABLE_ERROR_REPORTING` and
//!   `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` all exist (so does `DISABLE_UPDATES`).
//!   Without them it fetches bootstrap data, fast-mode status and the MCP registry from
//!   api.anthropic.com (failing, and carrying on offline) and asks the model for the
//!   session's title; with them, its only requests are a `HEAD /` and the main loop's, to
//!   `ANTHROPIC_BASE_URL`.
//! - In `-p` it calls an MCP tool only when allowed: `permissions.allow` with
//!   `mcp__askuser__ask_user` (what setup writes) is enough, no `--allowedTools`.
//! - It offers the tool as `mcp__askuser__ask_user` with askuser's description and input
//!   schema exactly as askuser lists them (every keyword kept), and with a base URL that
//!   is not Anthropic's it offers it directly, not behind ToolSearch. askuser's
//!   `instructions` reach the system prompt under "# MCP Server Instructions".
//! - 2.1.331 probes `server/discover` at start and speaks MCP 2026-07-28 to askuser (its
//!   version, name and capabilities in each request); at its tool timeout it cancels the
//!   call's first round, not the retry that waits; with a base URL that is not Anthropic's
//!   it offers MCP tools only behind ToolSearch unless `ENABLE_TOOL_SEARCH=false`.
//! - 2.1.197 spoke MCP 2025-11-25, declares `elicitation` (form) and `roots`, and calls tools
//!   without tasks, with a `progressToken` and `_meta["claudecode/toolUseId"]`. Headless, it
//!   answers every `elicitation/create` with `{"action": "cancel"}` about 10 ms after it is
//!   sent ("Elicitation request received in print mode" in its MCP log).
//! - `env.MCP_TOOL_TIMEOUT` in settings.json (where setup puts a day) wins over the
//!   variable in the environment: a user who lowers it does so in settings.json (with the
//!   entry gone, the variable works). Progress notifications do not extend it. When it runs
//!   out Claude Code sends `notifications/cancelled` with the reason "McpError: MCP error
//!   -32001: Request timed out", and the model reads a `tool_result` with `is_error: true`
//!   and the text `MCP server "askuser" tool "ask_user" timed out after 5s` (at 5000).
//! - The model reads a result's `structuredContent` as JSON text (the `tool_result`'s
//!   `content` is that one string; askuser's text block, the bare message, does not
//!   reach it), e.g.
//!   `{"id":"mcp-…-1","status":"cancelled","answered":false,"answers":[],"answeredAt":…,
//!   "message":"The user declined to answer your questions. Do not assume an answer: …"}`.
//! - Its stdio MCP servers run in its own process group (killing the group kills
//!   `askuser mcp` too), and it keeps their stderr in its MCP log
//!   (`~/.cache/claude-cli-nodejs/<cwd with / as ->/mcp-logs-askuser/*.jsonl`) only until
//!   they are connected; what askuser logs later is not kept.
//! - At the end of `-p` it sends its MCP servers SIGINT.

use crate::anthropic::{find_tool, tool_names};
use crate::harness::{askuser_bin, Home};
use crate::model::{FakeApi, Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, structured, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// The askuser tool as the model calls it: `mcp__SERVER__TOOL`.
const TOOL: &str = "mcp__askuser__ask_user";

/// `claude -p`, as a user who ran `askuser setup claude-code` runs it.
struct Claude;

impl Host for Claude {
    const NAME: &'static str = "Claude Code";
    const SETUP: &'static str = "claude-code";
    const DISMISSES_FORMS: Option<&'static str> = Some("cancelled");
    const TIMEOUT_REASON: &'static str = "McpError: MCP error -32001: Request timed out";

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::anthropic::start(model.clone()).await;
        configure(home, tool_timeout.map(|t| t.as_millis() as u64));
        let mut cmd = scenarios::command(home, "claude", &["-p", PROMPT], line);
        cmd.envs(model_env(&api));
        claude(home, cmd, api)
    }

    /// The askuser tool as Claude Code offers it: `mcp__askuser__ask_user`, with askuser's
    /// description and its whole input schema.
    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool = find_tool(&first.tools, TOOL).unwrap_or_else(|| panic!("{TOOL} must be among the tools offered: {names:?}"));
        assert_eq!(tool["description"].as_str(), Some(askuser::mcp::description("ask_user").as_str()), "{tool:#}");
        assert_eq!(tool["input_schema"], askuser::mcp::input_schema(), "the input schema as Claude Code passes it on: {tool:#}");
    }

    /// Claude Code 2.1.331 probes `server/discover` and, askuser offering it, speaks
    /// 2026-07-28: no `initialize`, its version and name in each request.
    fn assert_protocol(home: &Home) {
        let log = mcp_log(home.path());
        let connected = log.lines().find(|l| l.contains("Connection established")).unwrap_or_default();
        assert!(
            connected.contains(r#"\"protocolEra\":\"modern\",\"negotiatedProtocolVersion\":\"2026-07-28\""#),
            "Claude Code speaks MCP 2026-07-28 to askuser:\n{log}"
        );
    }

    fn timed_out(_args: &Value, timeout: Duration) -> String {
        format!(r#"MCP server "askuser" tool "ask_user" timed out after {}s"#, timeout.as_secs())
    }

    fn result(output: &str) -> Shown {
        structured(output)
    }
}

/// What a user sets in the environment for `claude -p` to reach the scripted model and
/// nothing else: its address, a fake key, and no telemetry, updates, error reports or
/// other traffic.
/// The fake key the user exported (interactive Claude Code remembers it approved by its
/// last 20 characters).
pub(crate) const KEY: &str = "sk-ant-scripted-not-a-real-key";

pub(crate) fn model_env(api: &FakeApi) -> [(&'static str, String); 7] {
    [
        // With a base URL that is not Anthropic's, Claude Code 2.1.331 offers MCP tools only
        // behind its ToolSearch tool, which a scripted model does not search with.
        ("ENABLE_TOOL_SEARCH", "false".into()),
        ("ANTHROPIC_BASE_URL", api.base_url.clone()),
        ("ANTHROPIC_API_KEY", KEY.into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
    ]
}

/// Starts `cmd` (a `claude -p`, or a shell line that runs one), with Claude Code's log of
/// askuser in failure messages.
pub(crate) fn claude(home: &Home, cmd: tokio::process::Command, api: FakeApi) -> Run {
    let home = home.path().to_owned();
    Run::spawn("claude", cmd, api).with_log("Claude Code's log of askuser", move || mcp_log(&home))
}

fn read_json(path: &Path) -> (String, Value) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("askuser setup claude-code wrote {}: {e}", path.display()));
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} parses: {e}\n{text}", path.display()));
    (text, value)
}

/// Checks what `askuser setup claude-code` wrote; `tool_timeout` (ms) then replaces the
/// `MCP_TOOL_TIMEOUT` it set in settings.json (a user who lowered it: there, because the
/// settings' value wins over the environment's). The user adds nothing else to the files:
/// the model, key and quiet switches are in the environment ([`model_env`]).
fn configure(home: &Home, tool_timeout: Option<u64>) {
    let (text, config) = read_json(&home.path().join(".claude.json"));
    let server = &config["mcpServers"]["askuser"];
    assert_eq!(server["type"], "stdio", "{text}");
    assert_eq!(server["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!(server["args"], json!(["mcp"]), "{text}");

    let path = home.path().join(".claude/settings.json");
    let (text, mut settings) = read_json(&path);
    assert_eq!(settings["env"]["MCP_TOOL_TIMEOUT"], "86400000", "askuser asks Claude Code to wait a day:\n{text}");
    let allow = settings["permissions"]["allow"].as_array().cloned().unwrap_or_default();
    assert!(
        allow.contains(&json!(TOOL)),
        "`claude -p` refuses an MCP tool that is not allowed (\"Claude requested permissions to use {TOOL}, but you \
         haven't granted it yet\"): setup must add {TOOL} to permissions.allow\n{text}"
    );
    let deny = settings["permissions"]["deny"].as_array().cloned().unwrap_or_default();
    assert!(!deny.contains(&json!("AskUserQuestion")), "setup must leave Claude Code its own question dialog:\n{text}");
    if let Some(ms) = tool_timeout {
        settings["env"]["MCP_TOOL_TIMEOUT"] = json!(ms.to_string());
        std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();
    }
}

/// Claude Code's log of the askuser server (connection, calls, elicitations), every
/// session's, from `~/.cache/claude-cli-nodejs/*/mcp-logs-askuser/`.
pub(crate) fn mcp_log(home: &Path) -> String {
    let mut text = String::new();
    let Ok(projects) = std::fs::read_dir(home.join(".cache/claude-cli-nodejs")) else { return text };
    for project in projects.flatten() {
        let Ok(logs) = std::fs::read_dir(project.path().join("mcp-logs-askuser")) else { continue };
        let mut logs: Vec<_> = logs.flatten().map(|e| e.path()).collect();
        logs.sort();
        for log in logs {
            text.push_str(&std::fs::read_to_string(log).unwrap_or_default());
        }
    }
    text
}

/// Asked headless, the question waits in the inbox however Claude Code treats its own
/// form, and the person's answer there is what the model reads; Claude Code then ends cleanly.
#[tokio::test]
async fn claude_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<Claude>().await;
}

/// A person slower than `MCP_TOOL_TIMEOUT`: Claude Code gives up on the call ("McpError:
/// MCP error -32001: Request timed out"), the question stays open, the model's retry with
/// the same arguments waits on the same question, and the answer given then reaches the model.
#[tokio::test]
async fn claude_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Claude>().await;
}

/// Claude Code killed while the person thinks; they answer with nobody waiting; the next
/// `claude -p` that asks the same gets that answer, and the person is not asked twice.
#[tokio::test]
async fn claude_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Claude>().await;
}

#[tokio::test]
async fn claude_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Claude>().await;
}

#[tokio::test]
async fn claude_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Claude>().await;
}

/// The README's lines for Claude Code work when pasted: its setup line, then its `claude -p`
/// line exactly as written. (Its first line starts the bridge: this HOME runs one.)
#[tokio::test]
async fn claude_readme_lines_work_when_pasted() {
    scenarios::pasted::<Claude>("README.md", "## Use it with Claude Code").await;
}

/// docs/agents.md's lines for Claude Code work when pasted.
#[tokio::test]
async fn claude_docs_lines_work_when_pasted() {
    scenarios::pasted::<Claude>("docs/agents.md", "### Claude Code (`claude -p`)").await;
}

/// A sub-agent (Claude Code's Task tool; sub-agents have no AskUserQuestion) asks through
/// askuser: its question reaches the inbox, the person's answer there reaches the
/// sub-agent, and `claude -p` ends cleanly. Claude Code 2.1.332 runs the sub-agent in the
/// background and tells askuser nothing of it: its call comes on the parent's connection,
/// with only `claudecode/toolUseId` in `_meta`, so the inbox shows it as the session's own.
#[tokio::test]
async fn claude_subagent_question_is_answered_in_the_inbox() {
    use crate::model::{Model, Turn};
    let task = json!({"description": "Pick a database", "prompt": "Ask the user which database the service should use.", "subagent_type": "general-purpose"});
    let model = Model::with_subagent(
        [Turn::Call("Task", task), Turn::Say("done".into())],
        [Turn::Ask(scenarios::database_question()), Turn::Say("The user chose SQLite.".into())],
    );
    let home = Claude::user().await;
    let mut run = Claude::start(&home, &model, None, None).await;
    let id = scenarios::asked::<Claude>(&home, &run).await;
    home.answer(&id, scenarios::sqlite()).await;
    let until = std::time::Instant::now() + scenarios::STEP;
    let read = loop {
        let sub = model.seen().into_iter().filter(|s| crate::anthropic::is_subagent(&s.body)).find_map(|s| s.tool_result);
        if let Some(read) = sub {
            break read;
        }
        assert!(std::time::Instant::now() < until, "the sub-agent never read the answer\n{}", run.report());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    scenarios::assert_answer::<Claude>(&read, &run);
    assert!(run.exit(scenarios::STEP).await.success(), "claude -p exits 0\n{}", run.report());
    assert_eq!(home.statuses().await, [format!("{id}: answered")]);
}
