//! OpenCode (`opencode run`, headless) with askuser set up by `askuser setup opencode`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.config/opencode/opencode.jsonc` is
//! what `askuser setup opencode` wrote, plus what the user adds to reach a model (an
//! OpenAI-compatible provider at the scripted Chat Completions API in `chat.rs`, with a fake
//! key), and a real `opencode run` in its own process group.
//!
//! How OpenCode 1.18.33 behaves headless, as these tests (and probes on the wire) found it:
//! - `initialize` says protocol 2025-11-25, client `opencode`, capabilities `roots` only (no
//!   elicitation). It offers askuser's tool as `askuser_ask_user`; permissions default to
//!   allow, so `opencode run` calls it unasked.
//! - The model reads the result's text block alone.
//! - Its MCP timeout (`timeout` per server, ms; 60 s by default) starts again at each
//!   progress notification. When it runs out it cancels the call twice in the same
//!   millisecond ("McpError: MCP error -32001: Request timed out", then "AbortError: The
//!   operation was aborted."), and it sends an AbortError after every finished call too.

use crate::chat::{find_tool, tool_names, MODEL};
use crate::harness::{askuser_bin, Home};
use crate::model::{Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// `opencode run`, as a user who ran `askuser setup opencode` runs it.
struct OpenCode;

impl Host for OpenCode {
    const NAME: &'static str = "OpenCode";
    const SETUP: &'static str = "opencode";
    const DISMISSES_FORMS: Option<&'static str> = None;
    const TIMEOUT_REASON: &'static str = "McpError: MCP error -32001: Request timed out";

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::chat::start(model.clone()).await;
        configure(home, &api.base_url, tool_timeout);
        let mut cmd = scenarios::command(home, "opencode", &["run", PROMPT], line);
        for (k, v) in ENV {
            cmd.env(k, v);
        }
        Run::spawn("opencode", cmd, api)
    }

    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool = find_tool(&first.tools, "askuser_ask_user").unwrap_or_else(|| panic!("askuser_ask_user among {names:?}"));
        assert_eq!(tool["description"].as_str(), Some(askuser::mcp::description("ask_user").as_str()), "{tool:#}");
        assert_eq!(tool["parameters"]["properties"]["questions"]["type"], "array", "{tool:#}");
    }

    fn timed_out(_args: &Value, _timeout: Duration) -> String {
        "MCP error -32001: Request timed out".into()
    }

    fn result(output: &str) -> Shown {
        Shown { status: None, message: output.to_owned() }
    }
}

/// OpenCode's background work that would reach the network, off.
const ENV: [(&str, &str); 6] = [
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
    ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
    ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
];

fn config_path(home: &Home) -> PathBuf {
    home.path().join(".config/opencode/opencode.jsonc")
}

/// What the user adds to the opencode.jsonc that `askuser setup opencode` wrote: the
/// scripted model as an OpenAI-compatible provider. `tool_timeout`: the user set
/// askuser's `timeout` to that.
fn configure(home: &Home, base_url: &str, tool_timeout: Option<Duration>) {
    let path = config_path(home);
    let text = std::fs::read_to_string(&path).expect("askuser setup opencode wrote ~/.config/opencode/opencode.jsonc");
    let mut config: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let server = &config["mcp"]["askuser"];
    assert_eq!(server["type"], "local", "{text}");
    assert_eq!(server["command"], json!([askuser_bin().to_str().unwrap(), "mcp"]), "the askuser that ran setup:\n{text}");
    assert!(server.get("timeout").is_none(), "progress restarts OpenCode's timeout: setup writes none:\n{text}");
    if let Some(t) = tool_timeout {
        config["mcp"]["askuser"]["timeout"] = json!(t.as_millis() as u64);
    }
    config["provider"] = json!({"scripted": {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": base_url, "apiKey": "sk-scripted-not-a-real-key"},
        "models": {MODEL: {"name": "Scripted model"}}
    }});
    config["model"] = json!(format!("scripted/{MODEL}"));
    config["small_model"] = json!(format!("scripted/{MODEL}"));
    config["autoupdate"] = json!(false);
    config["share"] = json!("disabled");
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

#[tokio::test]
async fn opencode_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<OpenCode>().await;
}

/// A person slower than OpenCode's `timeout`: it cancels the call twice ("Request timed
/// out", then "AbortError"), the question stays open, the model's retry with the same
/// arguments waits on the same question, and the answer given then reaches the model.
#[tokio::test]
async fn opencode_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<OpenCode>().await;
}

#[tokio::test]
async fn opencode_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<OpenCode>().await;
}

#[tokio::test]
async fn opencode_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<OpenCode>().await;
}

#[tokio::test]
async fn opencode_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<OpenCode>().await;
}

/// docs/agents.md's lines for OpenCode work when pasted.
#[tokio::test]
async fn opencode_docs_lines_work_when_pasted() {
    scenarios::pasted::<OpenCode>("docs/agents.md", "### OpenCode (`opencode run`)").await;
}
