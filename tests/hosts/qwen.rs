//! Qwen Code (`qwen --prompt`, headless) with askuser set up by `askuser setup qwen-code`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.qwen/settings.json` is what
//! `askuser setup qwen-code` wrote (and the OpenAI-compatible sign-in chosen), and a real
//! `qwen "…"` (one-shot) in its own process group pointed at the scripted Chat Completions
//! API in `chat.rs` (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`).
//!
//! How Qwen Code 0.24.4 behaves headless, as these tests (and probes on the wire) found it:
//! - `initialize` says protocol 2025-11-25, client `qwen-cli-mcp-client-askuser`,
//!   capabilities `roots` (and the MCP-apps `ui` extension): no elicitation. It offers
//!   askuser's tool as `mcp__askuser__ask_user`, only with `"trust": true` (else it refuses
//!   it headless) and `"alwaysLoadTools": true` (else it hides it behind its tool search).
//! - Its `timeout` (per server, ms; 600 s by default) is not extended by progress.
//! - Its headless system prompt says "Never ask the user a question, even if the user
//!   explicitly requests one": docs/agents.md's line says otherwise with
//!   `--append-system-prompt`.

use crate::chat::{find_tool, tool_names, MODEL};
use crate::harness::{askuser_bin, Home};
use crate::model::{Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, structured, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::time::Duration;

/// `qwen "…"`, as a user who ran `askuser setup qwen-code` runs it.
struct Qwen;

impl Host for Qwen {
    const NAME: &'static str = "Qwen Code";
    const SETUP: &'static str = "qwen-code";
    const DISMISSES_FORMS: Option<&'static str> = None;
    const TIMEOUT_REASON: &'static str = "McpError: MCP error -32001: Request timed out";

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::chat::start(model.clone()).await;
        configure(home, tool_timeout);
        let mut cmd = scenarios::command(home, "qwen", &[PROMPT], line);
        cmd.env("OPENAI_BASE_URL", &api.base_url).env("OPENAI_API_KEY", "sk-scripted-not-a-real-key").env("OPENAI_MODEL", MODEL);
        Run::spawn("qwen", cmd, api)
    }

    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool = find_tool(&first.tools, "mcp__askuser__ask_user").unwrap_or_else(|| panic!("mcp__askuser__ask_user among {names:?}"));
        assert!(tool["description"].as_str().is_some_and(|d| d.contains(&askuser::mcp::description("ask_user"))), "{tool:#}");
        assert_eq!(tool["parameters"]["properties"]["questions"]["type"], "array", "{tool:#}");
    }

    fn timed_out(_args: &Value, _timeout: Duration) -> String {
        "Request timed out".into()
    }

    /// `structuredContent` as JSON on one line, then the text block.
    fn result(output: &str) -> Shown {
        let (json, text) = output.split_once('\n').unwrap_or_else(|| panic!("JSON, then text: {output:?}"));
        let shown = structured(json);
        assert_eq!(text, shown.message, "the text block is the message");
        shown
    }
}

/// `mcpServers.askuser` as setup wrote it, and the user's telemetry off; `tool_timeout`:
/// the user lowered its `timeout`.
fn configure(home: &Home, tool_timeout: Option<Duration>) {
    let path = home.path().join(".qwen/settings.json");
    let text = std::fs::read_to_string(&path).expect("askuser setup qwen-code wrote ~/.qwen/settings.json");
    let mut settings: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let server = &settings["mcpServers"]["askuser"];
    assert_eq!(server["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!((&server["trust"], &server["alwaysLoadTools"]), (&json!(true), &json!(true)), "{text}");
    assert_eq!(server["timeout"], 86_400_000, "{text}");
    if let Some(t) = tool_timeout {
        settings["mcpServers"]["askuser"]["timeout"] = json!(t.as_millis() as u64);
    }
    // The sign-in a user who chose an OpenAI-compatible key once has.
    settings["security"] = json!({"auth": {"selectedType": "openai"}});
    settings["privacy"] = json!({"usageStatisticsEnabled": false});
    settings["telemetry"] = json!({"enabled": false});
    settings["general"] = json!({"disableAutoUpdate": true, "disableUpdateNag": true});
    std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();
}

#[tokio::test]
async fn qwen_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<Qwen>().await;
}

#[tokio::test]
async fn qwen_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Qwen>().await;
}

#[tokio::test]
async fn qwen_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Qwen>().await;
}

#[tokio::test]
async fn qwen_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Qwen>().await;
}

#[tokio::test]
async fn qwen_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Qwen>().await;
}

/// docs/agents.md's lines for Qwen work when pasted.
#[tokio::test]
async fn qwen_docs_lines_work_when_pasted() {
    scenarios::pasted::<Qwen>("docs/agents.md", "### Qwen Code (`qwen`)").await;
}
