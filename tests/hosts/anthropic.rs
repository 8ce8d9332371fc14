//! A fake Anthropic Messages API (`POST /v1/messages`, streamed as server-sent events or
//! not) serving a [`Model`], as Claude Code speaks it.
//!
//! What Claude Code 2.1.197 sends and expects (read off the wire against this server):
//! - with `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`, plain HTTP/1.1 JSON, no compression:
//!   first a `HEAD /` (warming the connection), then `POST /v1/messages?beta=true` (user
//!   agent `claude-cli/2.1.197 (external, sdk-cli)`) with `model` (`claude-opus-4-8`),
//!   `system`, `messages` (the whole conversation), `tools` (each `{name, description,
//!   input_schema}`), `thinking`, `max_tokens` and `stream: true`;
//! - MCP tools come as `mcp__SERVER__TOOL`, among Claude Code's own (`Agent`, `Bash`, …);
//! - the reply is `message_start`, then per content block `content_block_start`,
//!   `content_block_delta` (`text_delta`, or `input_json_delta` pieces of a `tool_use`'s
//!   input) and `content_block_stop`, then `message_delta` with the `stop_reason`
//!   (`tool_use`, `end_turn`) and `message_stop`;
//! - a tool's result comes back in the next `user` message as a `tool_result` block whose
//!   `content` is a string (or a list of `text` blocks), with `is_error: true` for a failed
//!   call;
//! - a side request has no tools: without `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` it
//!   asks for the session's title (`output_config.format` a JSON schema `{title: string}`).
//!   Nothing else was seen (no `/v1/messages/count_tokens`, no model list); both are
//!   served all the same.
//!
//! A request whose tools include askuser's is the main loop and takes the next [`Turn`], and
//! so is one offering Claude Code's own `Bash` when askuser's tool is not there (Claude Code
//! run by claude-agent-acp, `acp.rs`), except the prompt suggestion that claude-agent-acp
//! has Claude Code make after each turn: a copy of the conversation, tools and all, whose
//! last message starts "[SUGGESTION MODE:". Any other is a side request, answered (streamed
//! or not, as asked) with a value of the JSON schema it asks for, or "ok", without touching
//! the script.

use crate::model::{askuser_tool, event_stream, text_of, Api, FakeApi, Model, Seen, Turn};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Starts serving `model` on 127.0.0.1; its base URL is `ANTHROPIC_BASE_URL`.
pub async fn start(model: Model) -> FakeApi {
    FakeApi::start(model, |routes| {
        routes
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/", any(root))
            .fallback(other)
    })
    .await
}

/// The offered tools' names, as the model calls them.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools.iter().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect()
}

/// The tool offered as `name` (its description and `input_schema`).
pub fn find_tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

/// Whether Claude Code sent `body` for a sub-agent: it says so in the billing line at the
/// head of the system prompt (`cc_is_subagent=true`, 2.1.332).
pub fn is_subagent(body: &Value) -> bool {
    body["system"].to_string().contains("cc_is_subagent=true")
}

/// The tool result that this request brings the model: the last `tool_result` block of
/// the conversation's last message, when that is the user's (the host answering a call).
/// Messages of the `system` role after it (a sub-agent's environment, 2.1.332) are skipped.
fn new_tool_result(body: &Value) -> Option<String> {
    let last = body["messages"].as_array()?.iter().rev().find(|m| m["role"] != "system")?;
    if last["role"] != "user" {
        return None;
    }
    last["content"].as_array()?.iter().rev().find(|b| b["type"] == "tool_result").map(|block| text_of(&block["content"]))
}

async fn messages(State(api): State<Arc<Api>>, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        api.note(format!("POST {uri} (refused: content-encoding {encoding:?})"));
        return error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "this fake reads uncompressed JSON only");
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        api.note(format!("POST {uri} (refused: not JSON)"));
        return error(StatusCode::BAD_REQUEST, "not JSON");
    };
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let n = api.next_id();
    let streamed = body["stream"] == true;
    let model = body["model"].as_str().unwrap_or("scripted-model").to_owned();
    let askuser = askuser_tool(tool_names(&tools));
    if askuser.is_none() && (find_tool(&tools, "Bash").is_none() || suggestion(&body)) {
        // A side request (the session's title, a prompt suggestion): answered, the script untouched.
        api.note(format!("POST {uri} (side request{})", if streamed { ", streamed" } else { "" }));
        let blocks = vec![json!({"type": "text", "text": side_answer(&body)})];
        return reply(n, &model, blocks, "end_turn", streamed);
    }
    api.note(format!("POST {uri} (turn{})", if streamed { ", streamed" } else { "" }));
    let subagent = is_subagent(&body);
    let seen = Seen { tool_result: new_tool_result(&body), tools, body };
    let (block, stop) = match api.model.next_for(seen, subagent) {
        Turn::Say(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Turn::Ask(args) => {
            let askuser = askuser.expect("the script asks through askuser's tool, which is not offered");
            (tool_use(n, &askuser, args), "tool_use")
        }
        Turn::Call(name, input) => (tool_use(n, name, input), "tool_use"),
    };
    reply(n, &model, vec![block], stop, streamed)
}

/// Whether `body` is claude-agent-acp's prompt suggestion: the conversation so far, then a
/// user message "[SUGGESTION MODE: Suggest what the user might naturally type next …]".
fn suggestion(body: &Value) -> bool {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else { return false };
    last["role"] == "user" && text_of(&last["content"]).starts_with("[SUGGESTION MODE:")
}

fn tool_use(n: u64, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": input})
}

/// The text of a side request's answer: a value of the JSON schema it asks for
/// (`output_config.format`), or "ok".
fn side_answer(body: &Value) -> String {
    let format = &body["output_config"]["format"];
    if format["type"] != "json_schema" {
        return "ok".into();
    }
    let mut value = Map::new();
    for (name, schema) in format["schema"]["properties"].as_object().into_iter().flatten() {
        let v = match schema["type"].as_str() {
            Some("boolean") => json!(false),
            Some("integer" | "number") => json!(1),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("Scripted session"),
        };
        value.insert(name.clone(), v);
    }
    Value::Object(value).to_string()
}

/// The reply: one message with `blocks`, as events or as one JSON body.
fn reply(n: u64, model: &str, blocks: Vec<Value>, stop: &str, streamed: bool) -> Response {
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    let message = json!({
        "id": format!("msg_{n}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage
    });
    if !streamed {
        return Json(message).into_response();
    }
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut events = vec![json!({"type": "message_start", "message": start})];
    for (index, block) in blocks.iter().enumerate() {
        events.extend(block_events(index, block));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 1}}));
    events.push(json!({"type": "message_stop"}));
    event_stream(events, true)
}

/// A content block as the stream carries it: started empty, filled by deltas (a tool's
/// input in two pieces of JSON text, as a real stream splits it), stopped.
fn block_events(index: usize, block: &Value) -> Vec<Value> {
    let delta = |delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    let mut events = Vec::new();
    if block["type"] == "tool_use" {
        let mut empty = block.clone();
        empty["input"] = json!({});
        events.push(json!({"type": "content_block_start", "index": index, "content_block": empty}));
        let input = block["input"].to_string();
        let mut half = input.len() / 2;
        while !input.is_char_boundary(half) {
            half += 1;
        }
        for piece in [&input[..half], &input[half..]] {
            events.push(delta(json!({"type": "input_json_delta", "partial_json": piece})));
        }
    } else {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        events.push(delta(json!({"type": "text_delta", "text": block["text"]})));
    }
    events.push(json!({"type": "content_block_stop", "index": index}));
    events
}

/// An error as the API words one.
fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}))).into_response()
}

/// Token counting: a small number, whatever was sent.
async fn count_tokens(State(api): State<Arc<Api>>, uri: Uri) -> Response {
    api.note(format!("POST {uri}"));
    Json(json!({"input_tokens": 1})).into_response()
}

/// `HEAD /` (Claude Code warming its connection) and any other request for the root.
async fn root(State(api): State<Arc<Api>>, method: Method) -> Response {
    api.note(format!("{method} /"));
    StatusCode::OK.into_response()
}

async fn other(State(api): State<Arc<Api>>, method: Method, uri: Uri) -> Response {
    api.note(format!("{method} {uri} (not served)"));
    error(StatusCode::NOT_FOUND, "not served by the scripted model")
}
