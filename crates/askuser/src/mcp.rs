//! `askuser mcp`: an MCP server over stdio (the official Rust SDK, rmcp) with one
//! tool, `ask_user`. stdout carries only the protocol; every log goes to stderr.
//!
//! A call is validated here first (every error comes back as a tool error), then
//! asked through a bridge by id, resumably: if the bridge restarts, the call re-attaches
//! and still completes with the answer. While waiting it sends progress notifications
//! (when the client gave a progress token), so clients that reset their timeout on
//! progress keep waiting; a `notifications/cancelled` withdraws the question.

use crate::agent::{AskError, Asker};
use askuser_core::dialect::normalize;
use askuser_core::{AskResult, Format, Limits};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const TOOL: &str = "ask_user";

/// What the model reads about the tool.
pub const DESCRIPTION: &str = "Ask the user one or more questions and wait for the answers. Use it when you need \
a decision between valid approaches, a preference, a missing requirement, or confirmation before a significant \
change; the user answers in a browser tab, however long that takes.

How to ask well:
- Put the recommended option first and add \"(Recommended)\" to its label.
- Batch related questions into one call (up to 4 is kind to the user) instead of asking one at a time.
- Give each option a short label and a one-line description of its consequence.
- Set multiSelect when several options can apply together.
- Leave out options for a free-text question (a name, a path, a number).
- Do not add an \"Other\" option: the user can always type their own answer.
- Do not ask what the conversation, the code or earlier answers already tell you.

If the result says the user declined, the question timed out or was withdrawn, do not assume an answer.";

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are objects"),
    }
}

/// Claude Code's AskUserQuestion shape plus `metadata`, and Opal's `{question, choices}`.
pub fn input_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10,
                "description": "The questions, answered together.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The complete question, e.g. \"Which database should we use?\""},
                        "header": {"type": "string", "description": "A very short label shown as a chip (at most 12 characters), e.g. \"Database\"."},
                        "options": {
                            "type": "array",
                            "description": "The choices (2-4 is best). Leave out for a free-text question. Never include an \"Other\" option.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string", "description": "A short label (1-5 words)."},
                                    "description": {"type": "string", "description": "What choosing this means."}
                                },
                                "required": ["label"]
                            }
                        },
                        "multiSelect": {"type": "boolean", "default": false, "description": "Allow several options to be chosen."}
                    },
                    "required": ["question"]
                }
            },
            "metadata": {"type": "object", "description": "Optional data for tracking (e.g. {\"source\": \"setup\"}); echoed back."},
            "question": {"type": "string", "description": "Short form: one question (instead of `questions`)."},
            "choices": {"type": "array", "items": {"type": "string"}, "description": "Short form: the choices for `question`."}
        }
    }))
}

/// The canonical result, as `structuredContent`.
pub fn output_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": ["answered", "cancelled", "timed_out", "withdrawn"]},
            "answered": {"type": "boolean"},
            "answers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "header": {"type": "string"},
                        "answer": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                        "selectedOptions": {"type": "array", "items": {"type": "string"}},
                        "custom": {"type": ["string", "null"]},
                        "wasCustom": {"type": "boolean"}
                    },
                    "required": ["question", "answer", "selectedOptions", "custom", "wasCustom"]
                }
            },
            "metadata": {"type": "object"},
            "answeredAt": {"type": "integer", "description": "Milliseconds since the Unix epoch."}
        },
        "required": ["id", "status", "answered", "answers", "answeredAt"]
    }))
}

#[derive(Debug, Clone)]
pub struct McpOptions {
    pub agent_name: Option<String>,
    pub parent_session: Option<String>,
    pub result_format: Format,
    /// How often progress is reported while waiting.
    pub progress_every: Duration,
    /// Where a person answers (shown in progress messages).
    pub open_url: String,
}

#[derive(Clone)]
pub struct AskServer {
    asker: Arc<Asker>,
    opts: Arc<McpOptions>,
    /// This MCP connection's session id.
    session: Arc<String>,
    calls: Arc<AtomicU64>,
    tool: Tool,
}

impl AskServer {
    pub fn new(asker: Arc<Asker>, opts: McpOptions) -> AskServer {
        let tool = Tool::new(TOOL, DESCRIPTION, input_schema())
            .with_raw_output_schema(output_schema())
            .with_title("Ask the user")
            .with_annotations(ToolAnnotations::new().read_only(true).open_world(false));
        AskServer {
            asker,
            opts: Arc::new(opts),
            session: Arc::new(format!("mcp-{}", crate::config::random_hex(6))),
            calls: Arc::new(AtomicU64::new(0)),
            tool,
        }
    }

    /// The request as the bridge gets it: the model's arguments, who asks, and an id.
    fn request(&self, mut args: serde_json::Map<String, Value>, client: Option<String>) -> (String, Value) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{}-{n}", self.session);
        let name = self.opts.agent_name.clone().or(client).unwrap_or_else(|| "MCP agent".into());
        let mut agent = json!({"name": name, "sessionId": *self.session});
        if let Some(parent) = &self.opts.parent_session {
            agent["parentSessionId"] = parent.clone().into();
        }
        args.insert("id".into(), id.clone().into());
        args.insert("agent".into(), agent);
        (id, Value::Object(args))
    }

    fn result(&self, result: &AskResult) -> CallToolResult {
        let mut r = CallToolResult::success(vec![ContentBlock::text(result.to_text(self.opts.result_format))]);
        r.structured_content = Some(result.to_json(Format::Canonical));
        r
    }
}

fn tool_error(text: impl Into<String>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::error(vec![ContentBlock::text(text.into())]).into())
}

impl ServerHandler for AskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("askuser", env!("CARGO_PKG_VERSION")))
            .with_instructions("Use ask_user to ask the human a question and wait for the answer, even in a headless run.")
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL {
            return Err(McpError::invalid_params(format!("unknown tool {:?}; this server has only {TOOL:?}", request.name), None));
        }
        let client = context.client_info().map(|i| i.name.clone());
        let (id, body) = self.request(request.arguments.unwrap_or_default(), client);
        // Check here first: the model gets every problem at once, even without a bridge.
        if let Err(invalid) = normalize(&body, &Limits::default()) {
            return tool_error(format!("The ask_user input is invalid; fix these and call again:\n{invalid}"));
        }
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let opts = self.opts.clone();
        let progress = async move {
            let Some(token) = token else { return std::future::pending::<()>().await };
            let started = tokio::time::Instant::now();
            let mut tick = tokio::time::interval(opts.progress_every);
            loop {
                tick.tick().await;
                let waited = started.elapsed().as_secs();
                let message = format!("Waiting for the user's answer ({waited} s so far; answer at {})", opts.open_url);
                let note = ProgressNotificationParam::new(token.clone(), waited as f64).with_message(message);
                if peer.notify_progress(note).await.is_err() {
                    return std::future::pending::<()>().await;
                }
            }
        };
        let ask = self.asker.ask(&body, true, |problem| tracing::warn!(%id, "{problem}; retrying"));
        tokio::select! {
            outcome = ask => match outcome {
                Ok(result) => Ok(self.result(&result).into()),
                Err(AskError::Refused(r)) => {
                    let lines: Vec<String> = r.body.errors.iter().map(ToString::to_string).collect();
                    tool_error(if lines.is_empty() { r.body.message } else { lines.join("\n") })
                }
                Err(e) => tool_error(e.to_string()),
            },
            _ = progress => unreachable!("progress never ends"),
            _ = context.ct.cancelled() => {
                tracing::info!(%id, "the client cancelled the call; withdrawing the question");
                self.asker.withdraw(&id).await;
                tool_error("cancelled by the client")
            }
        }
    }
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve_stdio(server: AskServer) -> anyhow::Result<()> {
    let running = server.serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::debug!(?reason, "MCP client went away");
    Ok(())
}
