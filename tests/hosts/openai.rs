//! A fake OpenAI Responses API (`POST /v1/responses`, streamed as server-sent events)
//! serving a [`Model`], as Codex speaks it.
//!
//! What Codex 0.169.0 sends and expects (read off the wire against this server):
//! - a custom provider (`[model_providers.NAME]`, `wire_api = "responses"`) gets plain HTTP
//!   (no WebSocket, no compression): `POST {base_url}/responses` with `stream: true`,
//!   `tools`, `input` (the whole conversation) and `store: false`;
//! - MCP tools come as a `{"type": "namespace", "name": "mcp__SERVER", "tools": [{"type":
//!   "function", "name": TOOL, "parameters": …}]}` entry, and the model calls one with a
//!   `function_call` item carrying both `namespace` and `name`;
//! - the reply is `response.created`, then each item in `response.output_item.done`, then
//!   `response.completed` (with `usage`): nothing else is needed;
//! - a tool's result comes back as a `function_call_output` whose `output` is a string or a
//!   list of `input_text` parts ("Wall time: … seconds\nOutput:" and then the result).
//!
//! A request with tools is the main loop and takes the next [`Turn`]; anything else (a
//! request without tools, `/responses/compact`, `/models`) is answered without one.

use crate::model::{askuser_tool, event_stream, text_of, Api, FakeApi, Model, Seen, Turn};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// Starts serving `model` on 127.0.0.1; its base URL (the provider's `base_url`) ends in `/v1`.
pub async fn start(model: Model) -> FakeApi {
    let mut api = FakeApi::start(model, |routes| {
        routes
            .route("/v1/responses", post(responses))
            .route("/v1/responses/compact", post(compact))
            .route("/v1/models", get(models))
            .fallback(other)
    })
    .await;
    api.base_url.push_str("/v1");
    api
}

/// The offered tools' names as the model calls them: a plain function by its name, a tool
/// in a namespace as `NAMESPACE__NAME` (`mcp__askuser__ask_user`).
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    let mut names = Vec::new();
    for tool in tools {
        let Some(name) = tool["name"].as_str() else { continue };
        match tool["tools"].as_array() {
            Some(inner) if tool["type"] == "namespace" => {
                names.extend(inner.iter().filter_map(|t| t["name"].as_str()).map(|t| format!("{name}__{t}")));
            }
            _ => names.push(name.to_owned()),
        }
    }
    names
}

/// The tool `namespace` / `name` as offered (its description and `parameters`).
pub fn find_tool<'a>(tools: &'a [Value], namespace: &str, name: &str) -> Option<&'a Value> {
    tools
        .iter()
        .find(|t| t["type"] == "namespace" && t["name"] == namespace)
        .and_then(|ns| ns["tools"].as_array())
        .and_then(|inner| inner.iter().find(|t| t["name"] == name))
}

/// The last tool result in the conversation.
fn last_tool_result(body: &Value) -> Option<String> {
    body["input"].as_array()?.iter().rev().find(|item| item["type"] == "function_call_output").map(|item| text_of(&item["output"]))
}

async fn responses(State(api): State<Arc<Api>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        api.note(format!("POST /v1/responses (refused: content-encoding {encoding:?})"));
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "this fake reads uncompressed JSON only").into_response();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        api.note("POST /v1/responses (refused: not JSON)".into());
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let n = api.next_id();
    if tools.is_empty() {
        // A side request (a title, a summary): a short answer, the script untouched.
        api.note("POST /v1/responses (side request)".into());
        return stream(n, vec![message(n, "ok")]);
    }
    api.note("POST /v1/responses (turn)".into());
    let seen = Seen { tool_result: last_tool_result(&body), tools: tools.clone(), body };
    let item = match api.model.next(seen) {
        Turn::Say(text) => message(n, &text),
        Turn::Ask(args) => match askuser_tool(tool_names(&tools)) {
            Some(name) => call(n, &tools, &name, &args),
            None => message(n, "(the scripted model found no askuser tool among the tools offered)"),
        },
        Turn::Call(name, _) => {
            panic!("a scripted call of the host's own {name} is for Claude Code's API only: this script is wrong for this host")
        }
    };
    stream(n, vec![item])
}

/// An assistant message item.
fn message(n: u64, text: &str) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_{n}"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    })
}

/// A `function_call` item for the tool the model calls `name` (`NAMESPACE__NAME` for a tool
/// in a namespace, which Codex wants as `namespace` and `name`).
fn call(n: u64, tools: &[Value], name: &str, args: &Value) -> Value {
    let mut item = json!({
        "type": "function_call",
        "id": format!("fc_{n}"),
        "call_id": format!("call_{n}"),
        "name": name,
        "arguments": args.to_string(),
        "status": "completed"
    });
    for ns in tools.iter().filter(|t| t["type"] == "namespace") {
        let Some(prefix) = ns["name"].as_str() else { continue };
        if let Some(inner) = name.strip_prefix(prefix).and_then(|rest| rest.strip_prefix("__")) {
            if find_tool(tools, prefix, inner).is_some() {
                item["namespace"] = prefix.into();
                item["name"] = inner.into();
            }
        }
    }
    item
}

/// The whole streamed reply: created, the items, completed.
fn stream(n: u64, items: Vec<Value>) -> Response {
    let id = format!("resp_{n}");
    let mut events = vec![json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}})];
    for (i, item) in items.iter().enumerate() {
        events.push(json!({"type": "response.output_item.added", "output_index": i, "item": item}));
        if item["type"] == "message" {
            let text = &item["content"][0]["text"];
            events.push(
                json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": i, "content_index": 0, "delta": text}),
            );
        }
        events.push(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    let usage =
        json!({"input_tokens": 0, "input_tokens_details": null, "output_tokens": 0, "output_tokens_details": null, "total_tokens": 0});
    events.push(json!({"type": "response.completed", "response": {"id": id, "status": "completed", "output": items, "usage": usage}}));
    event_stream(events, true)
}

/// Remote compaction: the conversation so far, summed up in one message.
async fn compact(State(api): State<Arc<Api>>) -> Response {
    api.note("POST /v1/responses/compact".into());
    let summary = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "(the conversation so far)"}]});
    Json(json!({"output": [summary]})).into_response()
}

/// The model list: none beyond the configured one.
async fn models(State(api): State<Arc<Api>>) -> Response {
    api.note("GET /v1/models".into());
    Json(json!({"object": "list", "data": [], "models": []})).into_response()
}

async fn other(State(api): State<Arc<Api>>, method: Method, uri: Uri) -> Response {
    api.note(format!("{method} {uri} (not served)"));
    (StatusCode::NOT_FOUND, "not served by the scripted model").into_response()
}
