//! Cline CLI (`cline "…"`, headless) with askuser set up by `askuser setup cline`.
//!
//! Each test is a new user: a throwaway HOME whose
//! `~/.cline/data/settings/cline_mcp_settings.json` is what `askuser setup cline` wrote,
//! signed in to the scripted Chat Completions API in `chat.rs` as its docs say (`cline auth
//! --provider openai --baseurl … --apikey … --modelid …`), and a real `cline` in its own
//! process group.
//!
//! How Cline 3.0.65 behaves headless, as these tests (and probes on the wire) found it:
//! - `initialize` says protocol 2024-11-05, client `@cline/core`, capabilities `{}`: it
//!   never answers an elicitation request, and askuser sends it none. It offers askuser's
//!   tool as `askuser__ask_user`, auto-approved.
//! - Its `timeout` (per server, seconds, clamped to 1-3600; 60 by default) sends no cancel
//!   when it runs out.
//! - It leaves a `--cline-hub-daemon` process running after it exits, in a process group
//!   of its own: each run here ends the ones this HOME started.

use crate::chat::{find_tool, tool_names, MODEL};
use crate::harness::{askuser_bin, end_leftovers, Home};
use crate::model::{Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, structured, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::time::Duration;

/// `cline`, as a user who ran `askuser setup cline` runs it.
struct Cline;

impl Host for Cline {
    const NAME: &'static str = "Cline";
    const SETUP: &'static str = "cline";
    const DISMISSES_FORMS: Option<&'static str> = None;
    const TIMEOUT_REASON: &'static str = "(no cancel: Cline sends none)";

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::chat::start(model.clone()).await;
        configure(home, tool_timeout);
        home.sh(&format!("cline auth --provider openai --baseurl {} --apikey sk-scripted-not-a-real-key --modelid {MODEL}", api.base_url));
        let cmd = scenarios::command(home, "cline", &[PROMPT], line);
        let dir = home.path().to_owned();
        Run::spawn("cline", cmd, api).with_cleanup(move || end_leftovers(&dir, "--cline-hub-daemon"))
    }

    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool = find_tool(&first.tools, "askuser__ask_user").unwrap_or_else(|| panic!("askuser__ask_user among {names:?}"));
        assert!(tool["description"].as_str().is_some_and(|d| d.contains(&askuser::mcp::description("ask_user"))), "{tool:#}");
        assert_eq!(tool["parameters"]["properties"]["questions"]["type"], "array", "{tool:#}");
    }

    fn timed_out(_args: &Value, timeout: Duration) -> String {
        let error = format!(
            "MCP request to \"askuser\" (tools/call) timed out after {}s. Increase the \"timeout\" field (in seconds) for this server in cline_mcp_settings.json.",
            timeout.as_secs()
        );
        json!({"error": error}).to_string()
    }

    /// The whole `tools/call` result as JSON.
    fn result(output: &str) -> Shown {
        let read: Value = serde_json::from_str(output).unwrap_or_else(|e| panic!("the model reads the result as JSON ({e}): {output:?}"));
        assert_eq!(read["isError"], false, "{read:#}");
        let shown = structured(&read["structuredContent"].to_string());
        assert_eq!(read["content"][0]["text"].as_str(), Some(shown.message.as_str()), "{read:#}");
        shown
    }
}

/// `mcpServers.askuser` as setup wrote it; `tool_timeout`: the user lowered its `timeout`.
fn configure(home: &Home, tool_timeout: Option<Duration>) {
    let path = home.path().join(".cline/data/settings/cline_mcp_settings.json");
    let text = std::fs::read_to_string(&path).expect("askuser setup cline wrote cline_mcp_settings.json");
    let mut config: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let server = &config["mcpServers"]["askuser"];
    assert_eq!(server["transport"]["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!(server["transport"]["args"], json!(["mcp", "--max-wait", "3540"]), "{text}");
    assert_eq!(server["timeout"], 3600, "{text}");
    if let Some(t) = tool_timeout {
        config["mcpServers"]["askuser"]["timeout"] = json!(t.as_secs());
    }
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

#[tokio::test]
async fn cline_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<Cline>().await;
}

#[tokio::test]
async fn cline_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Cline>().await;
}

#[tokio::test]
async fn cline_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Cline>().await;
}

#[tokio::test]
async fn cline_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Cline>().await;
}

#[tokio::test]
async fn cline_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Cline>().await;
}

/// docs/agents.md's lines for Cline work when pasted.
#[tokio::test]
async fn cline_docs_lines_work_when_pasted() {
    scenarios::pasted::<Cline>("docs/agents.md", "### Cline CLI (`cline`)").await;
}
