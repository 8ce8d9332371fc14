//! GitHub Copilot CLI (`copilot -p`, headless) with askuser set up by `askuser setup copilot`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.copilot/mcp-config.json` is what
//! `askuser setup copilot` wrote, and a real `copilot -p` in its own process group pointed
//! at the scripted Chat Completions API in `chat.rs` by its offline provider variables
//! (`COPILOT_OFFLINE`, `COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`,
//! `COPILOT_MODEL`).
//!
//! How Copilot CLI 1.0.102 behaves headless, as these tests (and probes on the wire) found it:
//! - It unpacks itself (235 MB) into `$XDG_CACHE_HOME/copilot` at its first start: the
//!   tests share one cache, `.tools/hosts/copilot-cache`, which `scripts/setup hosts` fills.
//! - It speaks 2026-07-28 to askuser (`server/discover`, then each request with its
//!   version, client `copilot-cli` and capabilities; `initialize` 2025-11-25 only to a
//!   server that does not), and declares elicitation, whose form (an `input_required`
//!   result) it declines by itself headless within milliseconds. It offers askuser's tool as `askuser-ask_user`, and runs it in `-p`
//!   without `--allow-tool` only because askuser marks it `readOnlyHint`.
//! - Its timeout (`timeout` per server, ms; 180 s by default) starts again at each
//!   progress notification.

use crate::chat::{find_tool, tool_names, MODEL};
use crate::harness::{askuser_bin, Home};
use crate::model::{Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, structured, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `copilot -p`, as a user who ran `askuser setup copilot` runs it.
struct Copilot;

impl Host for Copilot {
    const NAME: &'static str = "Copilot CLI";
    const SETUP: &'static str = "copilot";
    const DISMISSES_FORMS: Option<&'static str> = Some("declined");
    const TIMEOUT_REASON: &'static str = "McpError: MCP error -32001: Request timed out";

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::chat::start(model.clone()).await;
        configure(home, tool_timeout);
        let mut cmd = scenarios::command(home, "copilot", &["-p", PROMPT], line);
        cmd.env("COPILOT_OFFLINE", "true")
            .env("COPILOT_PROVIDER_BASE_URL", &api.base_url)
            .env("COPILOT_PROVIDER_API_KEY", "sk-scripted-not-a-real-key")
            .env("COPILOT_MODEL", MODEL)
            .env("XDG_CACHE_HOME", cache());
        Run::spawn("copilot", cmd, api)
    }

    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool = find_tool(&first.tools, "askuser-ask_user").unwrap_or_else(|| panic!("askuser-ask_user among {names:?}"));
        assert!(tool["description"].as_str().is_some_and(|d| d.starts_with(&askuser::mcp::description("ask_user"))), "{tool:#}");
        assert_eq!(tool["parameters"]["properties"]["questions"]["type"], "array", "{tool:#}");
    }

    fn timed_out(_args: &Value, _timeout: Duration) -> String {
        "MCP server 'askuser': McpError: MCP error -32001: Request timed out".into()
    }

    /// The text block, a blank line, then `structuredContent` as JSON.
    fn result(output: &str) -> Shown {
        let (text, json) = output.rsplit_once("\n\n").unwrap_or_else(|| panic!("text, then JSON: {output:?}"));
        let shown = structured(json);
        assert_eq!(text, shown.message, "the text block is the message");
        shown
    }
}

/// The cache Copilot CLI unpacks itself into, shared by the tests.
pub fn cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/hosts/copilot-cache")
}

/// `mcpServers.askuser` as setup wrote it; `tool_timeout`: the user lowered its `timeout`.
fn configure(home: &Home, tool_timeout: Option<Duration>) {
    let path = home.path().join(".copilot/mcp-config.json");
    let text = std::fs::read_to_string(&path).expect("askuser setup copilot wrote ~/.copilot/mcp-config.json");
    let mut config: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let server = &config["mcpServers"]["askuser"];
    assert_eq!(server["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!((&server["type"], &server["tools"]), (&json!("local"), &json!(["*"])), "{text}");
    if let Some(t) = tool_timeout {
        config["mcpServers"]["askuser"]["timeout"] = json!(t.as_millis() as u64);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

#[tokio::test]
async fn copilot_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<Copilot>().await;
}

#[tokio::test]
async fn copilot_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Copilot>().await;
}

#[tokio::test]
async fn copilot_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Copilot>().await;
}

#[tokio::test]
async fn copilot_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Copilot>().await;
}

#[tokio::test]
async fn copilot_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Copilot>().await;
}

/// docs/agents.md's lines for Copilot work when pasted.
#[tokio::test]
async fn copilot_docs_lines_work_when_pasted() {
    scenarios::pasted::<Copilot>("docs/agents.md", "### GitHub Copilot CLI (`copilot -p`)").await;
}
