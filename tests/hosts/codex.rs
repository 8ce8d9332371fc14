//! Codex CLI (`codex exec`, headless) with askuser set up by `askuser setup codex`.
//!
//! Each test is a new user: a throwaway HOME whose `~/.codex/config.toml` is what
//! `askuser setup codex` wrote, plus what the user adds to reach a model (here a provider
//! entry for the scripted model in `openai.rs`, with a fake key), and a real `codex exec`
//! in its own process group.
//!
//! How Codex 0.169.0 behaves headless, as these tests (and probes on the wire) found it
//! (0.171.0, pinned now, passes the same tests unchanged):
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

use crate::harness::{askuser_bin, Home};
use crate::model::{Model, Seen};
use crate::openai::{find_tool, tool_names};
use crate::run::Run;
use crate::scenarios::{self, structured, Host, Shown, PROMPT};
use serde_json::Value;
use std::time::Duration;

/// The environment variable the provider entry names for its key.
const KEY_VAR: &str = "SCRIPTED_OPENAI_API_KEY";

/// `codex exec`, as a user who ran `askuser setup codex` runs it.
struct Codex;

impl Host for Codex {
    const NAME: &'static str = "Codex";
    const SETUP: &'static str = "codex";
    const DISMISSES_FORMS: Option<&'static str> = Some("declined");
    const TIMEOUT_REASON: &'static str = "MCP request cancelled by caller";

    /// A user's project is a git repository (else `codex exec` wants --skip-git-repo-check).
    fn before_setup(home: &Home) {
        home.sh("git init -q");
    }

    async fn start(home: &Home, model: &Model, tool_timeout: Option<Duration>, line: Option<&str>) -> Run {
        let api = crate::openai::start(model.clone()).await;
        configure(home, &api.base_url, tool_timeout.map(|t| t.as_secs()));
        // --strict-config: Codex refuses a key it does not know, askuser's entry among them.
        let mut cmd = scenarios::command(home, "codex", &["exec", "--strict-config", "--color", "never", PROMPT], line);
        cmd.env(KEY_VAR, "sk-scripted-not-a-real-key");
        Run::spawn("codex", cmd, api)
    }

    /// The askuser tool as Codex offers it: `ask_user` in the `mcp__askuser` namespace, with
    /// askuser's description, and its input schema as far as Codex passes schemas on.
    fn assert_offered(first: &Seen) {
        let names = tool_names(&first.tools);
        assert!(names.contains(&"mcp__askuser__ask_user".to_owned()), "the tools offered: {names:?}");
        let tool = find_tool(&first.tools, "mcp__askuser", "ask_user").unwrap();
        assert_eq!(tool["description"].as_str(), Some(askuser::mcp::description("ask_user").as_str()), "{tool:#}");
        same_shape("parameters", &tool["parameters"], &askuser::mcp::input_schema());
    }

    fn timed_out(_args: &Value, timeout: Duration) -> String {
        format!(
            "tool call error: tool call failed for `askuser/ask_user`\n\nCaused by:\n    timed out awaiting tools/call after {}s",
            timeout.as_secs()
        )
    }

    /// Codex shows the model every tool's output after "Wall time: … seconds\nOutput:\n".
    fn unframed(read: &str) -> &str {
        let output = read.strip_prefix("Wall time: ").and_then(|rest| rest.split_once(" seconds\nOutput:\n"));
        output.map(|(_, output)| output).unwrap_or_else(|| panic!("Codex frames a tool's output with its wall time: {read:?}"))
    }

    fn result(output: &str) -> Shown {
        structured(output)
    }
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
    scenarios::answered::<Codex>().await;
}

/// A person slower than `tool_timeout_sec`: Codex gives up on the call ("MCP request
/// cancelled by caller"), the question stays open, the model's retry with the same
/// arguments waits on the same question, and the answer given then reaches the model.
#[tokio::test]
async fn codex_retry_after_its_tool_timeout_resumes_the_same_question() {
    scenarios::retried_after_the_timeout::<Codex>().await;
}

/// Codex killed while the person thinks; they answer with nobody waiting; the next
/// `codex exec` that asks the same gets that answer, and the person is not asked twice.
#[tokio::test]
async fn codex_killed_mid_wait_then_restarted_gets_the_answer_given_meanwhile() {
    scenarios::killed_then_restarted::<Codex>().await;
}

#[tokio::test]
async fn codex_decline_in_the_inbox_tells_the_model_the_user_declined() {
    scenarios::declined_in_the_inbox::<Codex>().await;
}

#[tokio::test]
async fn codex_chat_about_this_tells_the_model_the_user_wants_to_talk() {
    scenarios::chat_about_this::<Codex>().await;
}

/// docs/agents.md's lines for Codex work when pasted.
#[tokio::test]
async fn codex_docs_lines_work_when_pasted() {
    scenarios::pasted::<Codex>("docs/agents.md", "### Codex (`codex exec`)").await;
}

/// Codex run interactively (`codex` in a tmux pane, a returning user who trusted the
/// project folder): askuser's question shows as Codex's own form ("Calling
/// askuser.ask_user", "(You can also answer in the askuser inbox: URL)", the options)
/// while it waits in the inbox; answered in the inbox, askuser withdraws the form, the
/// model reads the answer and Codex shows its last words.
#[tokio::test]
async fn codex_interactive_shows_its_form_and_takes_the_answer_given_in_the_inbox() {
    use crate::interactive::Tui;
    use crate::model::Turn;
    let home = Codex::user().await;
    let model = Model::new([Turn::Ask(scenarios::database_question()), Turn::Say("done, SQLite it is".into())]);
    let api = crate::openai::start(model.clone()).await;
    configure(&home, &api.base_url, None);
    // What trusting the folder at Codex's first interactive start leaves in config.toml.
    let path = home.path().join(".codex/config.toml");
    let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let project = std::fs::canonicalize(home.project()).unwrap().display().to_string();
    doc["projects"][&project]["trust_level"] = toml_edit::value("trusted");
    std::fs::write(&path, doc.to_string()).unwrap();
    let env = vec![(KEY_VAR.to_owned(), "sk-scripted-not-a-real-key".to_owned())];
    // Interactive Codex 0.171.0 starts an app-server daemon (from ~/.codex/packages) that
    // outlives it, outside its process group.
    let _daemon = crate::harness::Leftovers(home.path().to_owned(), "app-server");
    let tui = Tui::spawn(&home, "codex", &env, api).await;
    tui.shows("Ask Codex to do anything", scenarios::START).await;
    tui.type_text(PROMPT).await;
    tui.shows(PROMPT, scenarios::STEP).await;
    tui.press("Enter").await;
    let form = tui.shows("(You can also answer in the askuser inbox: http://127.0.0.1:", scenarios::START).await;
    for shown in
        ["Calling askuser.ask_user", "Which database should the service use?", "2. SQLite — A file next to the service; nothing to run."]
    {
        assert!(form.contains(shown), "{shown:?} in Codex's form:\n{form}");
    }
    // Longer than Codex would take to decline the form by itself: it does not, interactive.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let questions = home.questions("pending").await;
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(questions[0]["request"]["agent"]["name"], "Codex");
    let id = questions[0]["id"].as_str().unwrap().to_owned();
    home.answer(&id, scenarios::sqlite()).await;
    let read = tui.result(scenarios::STEP, "after the answer").await;
    let shown = Codex::result(Codex::unframed(&read));
    assert_eq!(shown.status.as_deref(), Some("answered"), "{read}");
    assert!(shown.message.contains("SQLite"), "{read}");
    let last = tui.shows("done, SQLite it is", scenarios::STEP).await;
    assert!(!last.contains("(You can also answer in the askuser inbox"), "askuser withdrew Codex's form:\n{last}");
    assert_eq!(home.statuses().await, [format!("{id}: answered")]);
}
