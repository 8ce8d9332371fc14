//! A fake OpenAI Chat Completions API (`POST /v1/chat/completions`, streamed as server-sent
//! events or not) serving a [`Model`], as OpenCode, Copilot CLI, Cline and Qwen Code speak
//! it to a custom base URL.
//!
//! What they send and expect (read off the wire against this server):
//! - `tools` as `[{"type": "function", "function": {"name", "description", "parameters"}}]`,
//!   the whole conversation in `messages`, a tool's result as a `{"role": "tool",
//!   "tool_call_id", "content"}` message whose content is a string or a list of text parts;
//! - a streamed reply is `chat.completion.chunk` objects, the assistant's text or
//!   `tool_calls` in each `delta`, a `finish_reason` in the last, then `data: [DONE]`; a
//!   reply not streamed is one `chat.completion` object.
//!
//! A request with tools is the main loop and takes the next [`Turn`]; anything else (a
//! title, a summary, a check without tools, `/models`) is answered without one.

use crate::model::{askuser_tool, text_of, Api, FakeApi, Model, Seen, Turn};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// The model's id, as each host is told to ask for it.
pub const MODEL: &str = "scripted-model";

/// Starts serving `model` on 127.0.0.1; its base URL ends in `/v1`.
pub async fn start(model: Model) -> FakeApi {
    let mut api = FakeApi::start(model, |routes| {
        routes
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", get(models))
            .route("/v1/models/{id}", get(one_model))
            .fallback(other)
    })
    .await;
    api.base_url.push_str("/v1");
    api
}

/// The offered tools' names.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

/// The offered tool named `name` (its `function`: description and parameters).
pub fn find_tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().map(|t| &t["function"]).find(|f| f["name"] == name)
}

/// The tool result answering the model's last turn (after it, a host may add a note of its own).
fn last_tool_result(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let tail = messages.iter().rev().take_while(|m| m["role"] != "assistant");
    tail.into_iter().find(|m| m["role"] == "tool").map(|m| text_of(&m["content"]))
}

async fn completions(State(api): State<Arc<Api>>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        api.note("POST /v1/chat/completions (refused: not JSON)".into());
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let stream = body["stream"] == true;
    let n = api.next_id();
    if tools.is_empty() {
        // A side request (a title, a summary): a short answer, the script untouched.
        api.note("POST /v1/chat/completions (side request)".into());
        return reply(n, stream, Reply::Text("ok".into()));
    }
    api.note("POST /v1/chat/completions (turn)".into());
    let seen = Seen { tool_result: last_tool_result(&body), tools: tools.clone(), body };
    let answer = match api.model.next(seen) {
        Turn::Say(text) => Reply::Text(text),
        Turn::Ask(args) => match askuser_tool(tool_names(&tools)) {
            Some(name) => Reply::Call(name, args),
            None => Reply::Text("(the scripted model found no askuser tool among the tools offered)".into()),
        },
        Turn::Call(name, _) => {
            panic!("a scripted call of the host's own {name} is for Claude Code's API only: this script is wrong for this host")
        }
    };
    reply(n, stream, answer)
}

enum Reply {
    Text(String),
    Call(String, Value),
}

/// The reply, streamed or whole.
fn reply(n: u64, stream: bool, reply: Reply) -> Response {
    let id = format!("chatcmpl-{n}");
    let (message, finish) = match &reply {
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::Call(name, args) => {
            let call = json!({"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}});
            (json!({"role": "assistant", "content": null, "tool_calls": [call]}), "tool_calls")
        }
    };
    let usage = json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2});
    if !stream {
        let mut message = message;
        if let Some(calls) = message["tool_calls"].as_array_mut() {
            for call in calls {
                call.as_object_mut().unwrap().remove("index");
            }
        }
        return Json(json!({
            "id": id, "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage
        }))
        .into_response();
    }
    let chunk = |delta: Value, finish: Value| json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    match reply {
        Reply::Text(text) => chunks.push(chunk(json!({"content": text}), Value::Null)),
        Reply::Call(..) => chunks.push(chunk(json!({"tool_calls": message["tool_calls"]}), Value::Null)),
    }
    chunks.push(chunk(json!({}), finish.into()));
    chunks.push(json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": MODEL, "choices": [], "usage": usage}));
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

fn model_entry() -> Value {
    json!({"id": MODEL, "object": "model", "created": 0, "owned_by": "scripted"})
}

async fn models(State(api): State<Arc<Api>>) -> Response {
    api.note("GET /v1/models".into());
    Json(json!({"object": "list", "data": [model_entry()]})).into_response()
}

async fn one_model(State(api): State<Arc<Api>>, uri: Uri) -> Response {
    api.note(format!("GET {uri}"));
    Json(model_entry()).into_response()
}

async fn other(State(api): State<Arc<Api>>, method: Method, uri: Uri) -> Response {
    api.note(format!("{method} {uri} (not served)"));
    (StatusCode::NOT_FOUND, "not served by the scripted model").into_response()
}
