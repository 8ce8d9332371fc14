//! Gemini CLI (`gemini -p`, headless) with askuser set up by `askuser setup gemini-cli`.
//!
//! Each test is a new user who has used Gemini CLI before: a throwaway HOME with what an
//! interactive session left behind (`~/.gemini/settings.json` with the API-key sign-in
//! chosen and no usage statistics, telemetry or updates; `~/.gemini/trustedFolders.json`
//! trusting the project), then `askuser setup gemini-cli`, then a real `gemini -p` in its
//! own process group with a fake key and `GOOGLE_GEMINI_BASE_URL` at the scripted model in
//! `gemini_api.rs`.
//!
//! How Gemini CLI 0.61.0 behaves headless, as these tests (and probes on the wire) found it:
//! - It signs in with `GEMINI_API_KEY` alone, or with `security.auth.selectedType:
//!   "gemini-api-key"` in settings (what choosing the key interactively leaves) and the key
//!   in the environment; `GOOGLE_GEMINI_BASE_URL` moves every API call. Folder trust is on:
//!   `-p` in an untrusted folder exits 55 ("Gemini CLI is not running in a trusted
//!   directory. To proceed, either use `--skip-trust`, set the
//!   `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in
//!   interactive mode."); `~/.gemini/trustedFolders.json` (`{PATH: "TRUST_FOLDER"}`, moved
//!   by `GEMINI_CLI_TRUSTED_FOLDERS_PATH`) is what trusting it interactively leaves.
//! - It hides its own `ask_user` by the unqualified name (which hides an MCP tool named
//!   `ask_user` too) and every tool of a server without `"trust": true` (both checked: the
//!   tool is missing from the request, with no word to the user). With both fixed it
//!   offers askuser's tool as `mcp_askuser_ask_human` (`mcp_` + server + `_` + tool), with
//!   askuser's description verbatim and its input schema whole (`maxLength`, `maxItems`,
//!   `minProperties`, `pattern`, `default` kept) plus a property of Gemini's own,
//!   `wait_for_previous` (boolean). askuser's `instructions` reach the model in the first
//!   user turn: "The following are instructions provided by the tool server 'askuser':
//!   ---[start of server instructions]---…".
//! - `initialize` says protocol 2025-06-18, client `gemini-cli-mcp-client` 0.61.0, and
//!   capabilities `{"roots": {"listChanged": true}}` only: no elicitation, no tasks. Every
//!   `tools/call` carries a progress token; progress does not extend the server's
//!   `timeout` (ms).
//! - The model reads a result's text blocks, each as `<untrusted_context>\nTEXT\n</untrusted_context>`,
//!   in the `functionResponse` `{"output": …}`; `structuredContent` does not reach it. A
//!   result with `isError: true` (read in its source, not exercised here) reaches the model
//!   as `{"error": …}`, the whole result as JSON (structuredContent too) inside the sentence
//!   quoted below for a timeout, not wrapped.
//! - At the server's `timeout` it sends `notifications/cancelled` with the reason
//!   "McpError: MCP error -32001: Request timed out", and the model reads (as
//!   `{"error": …}`) "MCP tool 'ask_human' reported tool error for function call:
//!   {\"name\":\"ask_human\",\"args\":{…the call's arguments…}} with response:
//!   [{\"functionResponse\":{\"name\":\"ask_human\",\"response\":{\"error\":{\"message\":\"MCP
//!   error -32001: Request timed out\",\"isError\":true}}}}]". Its loop detection stops a
//!   turn at the fifth identical tool call in a row (not exercised here).
//! - `gemini` re-launches itself as a child node process, and its MCP servers run in the
//!   same process group: killing the group ends `askuser mcp` too (SIGKILL, not EOF).
//! - Besides the main loop (`…:streamGenerateContent?alt=sse`, on `gemini-3.1-pro-preview`,
//!   or `gemini-3.8-flash` when the classifier rates the prompt simple), each prompt first
//!   asks a routing classifier (`gemini-3.5-flash-lite:generateContent`) for JSON; see
//!   `gemini_api.rs`.
//! - It leaves settings.json as it found it when no key needs renaming.

use crate::gemini_api::tool_names;
use crate::harness::{askuser_bin, Home};
use crate::model::{Model, Seen};
use crate::run::Run;
use crate::scenarios::{self, Host, Shown, PROMPT};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The tool's name on the server (`askuser setup gemini-cli` passes `--tool-name`).
const TOOL: &str = "ask_human";
/// The tool as Gemini offers it to the model.
const OFFERED: &str = "mcp_askuser_ask_human";

/// `gemini -p`, as a user of Gemini CLI who ran `askuser setup gemini-cli` runs it.
struct Gemini;

impl Host for Gemini {
    const NAME: &'static str = "Gemini CLI";
    const SETUP: &'static str = "gemini-cli";
    const DISMISSES_FORMS: Option<&'static str> = None;
    const TIMEOUT_REASON: &'static str = "McpError: MCP error -32001: Request timed out";

    /// What an interactive Gemini session leaves a user who chose the API-key sign-in, turned
    /// usage statistics, telemetry and updates off, and trusted the project folder once.
    fn before_setup(home: &Home) {
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
        });
        std::fs::write(settings_path(home), serde_json::to_string_pretty(&settings).unwrap()).unwrap();
        let trusted = json!({home.project().display().to_string(): "TRUST_FOLDER"});
        std::fs::write(home.path().join(".gemini/trustedFolders.json"), trusted.to_string()).unwrap();
    }

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        assert_setup(home);
        if let Some(timeout) = tool_timeout {
            lower_timeout(home, timeout.as_millis() as u64);
        }
        let api = crate::gemini_api::start(model.clone()).await;
        let mut cmd = scenarios::command(home, "gemini", &["-p", PROMPT], line);
        cmd.env("GEMINI_API_KEY", "fake-not-a-real-key").env("GOOGLE_GEMINI_BASE_URL", &api.base_url);
        Run::spawn("gemini", cmd, api)
    }

    /// The askuser tool as Gemini offers it: `mcp_askuser_ask_human`, askuser's description,
    /// askuser's input schema whole plus Gemini's own `wait_for_previous`; and askuser's
    /// instructions in the model's context.
    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        let tool =
            first.tools.iter().find(|t| t["name"] == OFFERED).unwrap_or_else(|| panic!("{OFFERED} among the tools offered: {names:?}"));
        assert_eq!(tool["description"].as_str(), Some(askuser::mcp::description(TOOL).as_str()), "{tool:#}");
        let mut schema = tool["parametersJsonSchema"].clone();
        let added = schema["properties"].as_object_mut().and_then(|p| p.remove("wait_for_previous"));
        assert_eq!(added.as_ref().map(|p| &p["type"]), Some(&json!("boolean")), "Gemini adds wait_for_previous: {tool:#}");
        assert_eq!(schema, askuser::mcp::input_schema(), "askuser's input schema, as Gemini offers it");
        let context = first.body["contents"][0].to_string();
        assert!(context.contains("instructions provided by the tool server 'askuser'"), "askuser's instructions: {context}");
        assert!(context.contains(&format!("Use {TOOL} to ask the human")), "the instructions name the tool as offered: {context}");
    }

    /// The error Gemini makes of the timeout, quoting the call back to the model.
    fn timed_out(args: &Value, _timeout: Duration) -> String {
        let call = format!(r#"{{"name":"{TOOL}","args":{args}}}"#);
        let response = format!(
            r#"[{{"functionResponse":{{"name":"{TOOL}","response":{{"error":{{"message":"MCP error -32001: Request timed out","isError":true}}}}}}}}]"#
        );
        format!("MCP tool '{TOOL}' reported tool error for function call: {call} with response: {response}")
    }

    /// The result's text, which Gemini wraps to be read as data.
    fn result(output: &str) -> Shown {
        let text = output.strip_prefix("<untrusted_context>\n").and_then(|rest| rest.strip_suffix("\n</untrusted_context>"));
        let text = text.unwrap_or_else(|| panic!("Gemini wraps a result's text for the model: {output:?}"));
        Shown { status: None, message: text.to_owned() }
    }
}

fn settings_path(home: &Home) -> PathBuf {
    home.path().join(".gemini/settings.json")
}

fn read_settings(home: &Home) -> (String, Value) {
    let text = std::fs::read_to_string(settings_path(home)).expect("~/.gemini/settings.json");
    let settings = serde_json::from_str(&text).unwrap_or_else(|e| panic!("settings.json parses: {e}\n{text}"));
    (text, settings)
}

/// `mcpServers.askuser` as `askuser setup gemini-cli` must write it for a headless Gemini
/// to offer the tool at all: this askuser, `mcp --tool-name ask_human` (not `ask_user`,
/// which Gemini hides), a day's `timeout`, and `trust` (Gemini hides an untrusted server's
/// tools). The user's own settings stay.
fn assert_setup(home: &Home) {
    let (text, settings) = read_settings(home);
    let server = &settings["mcpServers"]["askuser"];
    assert_eq!(server["command"].as_str(), Some(askuser_bin().to_str().unwrap()), "the askuser that ran setup:\n{text}");
    assert_eq!(server["args"], json!(["mcp", "--tool-name", TOOL]), "Gemini hides a tool named ask_user headless:\n{text}");
    assert_eq!(server["timeout"].as_u64(), Some(86_400_000), "askuser asks Gemini to wait a day:\n{text}");
    assert_eq!(server["trust"], json!(true), "Gemini hides every tool of an untrusted server headless:\n{text}");
    assert_eq!(settings["security"]["auth"]["selectedType"], "gemini-api-key", "setup keeps the user's settings:\n{text}");
    assert_eq!(settings["privacy"]["usageStatisticsEnabled"], false, "setup keeps the user's settings:\n{text}");
}

/// A user who lowered askuser's `timeout` (ms) after setup.
fn lower_timeout(home: &Home, ms: u64) {
    let (_, mut settings) = read_settings(home);
    settings["mcpServers"]["askuser"]["timeout"] = json!(ms);
    std::fs::write(settings_path(home), serde_json::to_string_pretty(&settings).unwrap()).unwrap();
}

/// Asked headless, the question waits in the inbox, and the person's answer there is what
/// the model reads; Gemini then ends cleanly.
#[tokio::test]
async fn gemini_headless_gets_the_answer_given_in_the_inbox() {
    scenarios::answered::<Gemini>().await;
}

/// A person slower than the server's `timeout`: Gemini gives up on the call ("McpError: MCP
/// error -32001: Request timed out"), the question stays open, the model's retry with the
/// same arguments waits on the same question, and the answer given then reaches the model.
#[tokio::test]
async fn gemini_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Gemini>().await;
}

/// Gemini killed while the person thinks; they answer with nobody waiting; the next
/// `gemini -p` that asks the same gets that answer, and the person is not asked twice.
#[tokio::test]
async fn gemini_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Gemini>().await;
}

#[tokio::test]
async fn gemini_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Gemini>().await;
}

#[tokio::test]
async fn gemini_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Gemini>().await;
}

/// docs/agents.md's lines for Gemini CLI work when pasted (in a folder Gemini trusts).
#[tokio::test]
async fn gemini_docs_lines_work_when_pasted() {
    scenarios::pasted::<Gemini>("docs/agents.md", "### Gemini CLI (`gemini -p`)").await;
}

/// Gemini CLI run interactively (`gemini` in a tmux pane, a person at the terminal): the
/// call shows askuser's progress ("Waiting for the user's answer (… answer at URL)") under
/// the tool's line while the question waits in the inbox, and the person's answer there
/// reaches the model, whose last words Gemini then shows. (0.61.0 declares no elicitation:
/// the inbox is the only place to answer.)
#[tokio::test]
async fn gemini_interactive_shows_the_wait_and_gets_the_answer_given_in_the_inbox() {
    use crate::interactive::Tui;
    use crate::model::Turn;
    let home = Gemini::user().await;
    let model = Model::new([Turn::Ask(scenarios::database_question()), Turn::Say("done, SQLite it is".into())]);
    let api = crate::gemini_api::start(model.clone()).await;
    let env = [("GEMINI_API_KEY", "fake-not-a-real-key"), ("GOOGLE_GEMINI_BASE_URL", api.base_url.as_str())];
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let tui = Tui::spawn(&home, "gemini", &env, api).await;
    tui.shows("Type your message", scenarios::START).await;
    tui.shows("1 MCP server", scenarios::STEP).await;
    tui.type_text(PROMPT).await;
    tui.shows(PROMPT, scenarios::STEP).await;
    tui.press("Enter").await;
    let waiting = tui.shows("Waiting for the user's answer", scenarios::START).await;
    assert!(waiting.contains(&format!("{TOOL} (askuser MCP Server)")), "the tool's line names askuser:\n{waiting}");
    let questions = home.questions("pending").await;
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(questions[0]["request"]["agent"]["name"], "Gemini CLI");
    let id = questions[0]["id"].as_str().unwrap().to_owned();
    home.answer(&id, scenarios::sqlite()).await;
    let read = tui.result(scenarios::STEP, "after the answer").await;
    let shown = Gemini::result(&read);
    assert!(shown.message.contains("SQLite"), "the model reads the answer: {read}");
    tui.shows("done, SQLite it is", scenarios::STEP).await;
    assert_eq!(home.statuses().await, [format!("{id}: answered")]);
}
