//! A fake Gemini API (`generativelanguage.googleapis.com`'s `v1beta`) serving a [`Model`],
//! as Gemini CLI speaks it through @google/genai.
//!
//! What Gemini CLI 0.61.0 sends and expects (read off the wire against this server, and in
//! its bundle):
//! - with `GOOGLE_GEMINI_BASE_URL` and an API key, plain HTTP/1.1 JSON to
//!   `{base}/v1beta/models/{model}:{method}` (user agent `GeminiCLI-tui/0.61.0/…`, client
//!   `google-genai-sdk/1.30.0`); nothing else is fetched (no model list);
//! - the main loop streams: `POST …/gemini-3.1-pro-preview:streamGenerateContent?alt=sse`
//!   with `contents` (the whole conversation), `systemInstruction`, `generationConfig` and
//!   `tools: [{"functionDeclarations": [{name, description, parametersJsonSchema}]}]`; the
//!   reply is server-sent events, each `data: GenerateContentResponse` and a blank line
//!   (`\n\n`), the last with `finishReason` and `usageMetadata`;
//! - before each prompt a routing classifier asks `…/gemini-3.5-flash-lite:generateContent`
//!   (not streamed, no tools) for JSON: `generationConfig.responseMimeType:
//!   "application/json"` and a `responseJsonSchema` (`{complexity_reasoning: STRING,
//!   complexity_score: INTEGER}`, both required, the score 1-100; Gemini prints a ZodError
//!   when the answer falls short, then carries on with the default model). Its other side requests (next-speaker
//!   check `{reasoning, next_speaker: user|model}`, loop detection
//!   `{unproductive_state_analysis, unproductive_state_confidence}`, edit correction,
//!   summaries) take the same path; none of them was seen in these tests;
//! - the model calls a tool with a `functionCall` part (`{name, args}`); the result comes
//!   back as a `functionResponse` part `{name, id, response}` in a `user` turn, where
//!   `response` is `{"output": TEXT}` or, for a failed call, `{"error": TEXT}`.
//!
//! A request whose tools include askuser's is the main loop and takes the next [`Turn`];
//! any other is a side request, answered with a value of the JSON schema it asks for (or
//! "ok") without touching the script. A route not served is printed to stderr.

use crate::model::{askuser_tool, event_stream, Api, FakeApi, Model, Seen, Turn};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Starts serving `model` on 127.0.0.1; its base URL is `GOOGLE_GEMINI_BASE_URL`.
pub async fn start(model: Model) -> FakeApi {
    FakeApi::start(model, |routes| routes.route("/v1beta/models/{call}", post(models)).fallback(other)).await
}

/// The function declarations offered, each as the API carries it (name, description,
/// `parametersJsonSchema`).
pub fn declarations(body: &Value) -> Vec<Value> {
    let tools = body["tools"].as_array().into_iter().flatten();
    tools.filter_map(|t| t["functionDeclarations"].as_array()).flatten().cloned().collect()
}

/// The offered tools' names, as the model calls them.
pub fn tool_names(declarations: &[Value]) -> Vec<String> {
    declarations.iter().filter_map(|d| d["name"].as_str()).map(str::to_owned).collect()
}

/// The last tool result in the conversation as the model reads it: the `functionResponse`'s
/// `output` (a success) or `error` (a failed call), else its whole `response` as JSON.
fn last_tool_result(body: &Value) -> Option<String> {
    let contents = body["contents"].as_array()?;
    let parts = contents.iter().rev().filter_map(|c| c["parts"].as_array()).flatten();
    let response = parts.filter_map(|p| p.get("functionResponse")).next()?.get("response")?;
    Some(match (response["output"].as_str(), response["error"].as_str()) {
        (Some(text), _) | (None, Some(text)) => text.to_owned(),
        _ => response.to_string(),
    })
}

/// `POST /v1beta/models/{model}:{method}`.
async fn models(State(api): State<Arc<Api>>, Path(call): Path<String>, uri: Uri, body: Bytes) -> Response {
    let Some((model, method)) = call.split_once(':') else {
        return not_served(&api, Method::POST, &uri);
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        api.note(format!("POST {uri} (refused: not JSON)"));
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    match method {
        "countTokens" => {
            api.note(format!("POST {uri}"));
            // About four characters a token, as a rough count would have it.
            Json(json!({"totalTokens": body.to_string().len() / 4})).into_response()
        }
        "streamGenerateContent" | "generateContent" => {
            let reply = generate(&api, model, &body);
            api.note(format!("POST {uri} ({})", reply.1));
            if method == "streamGenerateContent" {
                // One event: the whole reply, finished.
                event_stream([reply.0], false)
            } else {
                Json(reply.0).into_response()
            }
        }
        _ => not_served(&api, Method::POST, &uri),
    }
}

/// The reply to a generate request, and what it was taken for (`turn` or `side request`).
fn generate(api: &Api, model: &str, body: &Value) -> (Value, &'static str) {
    let declarations = declarations(body);
    let Some(askuser) = askuser_tool(tool_names(&declarations)) else {
        return (response(model, vec![side_answer(body)]), "side request");
    };
    let seen = Seen { tool_result: last_tool_result(body), tools: declarations, body: body.clone() };
    let part = match api.model.next(seen) {
        Turn::Say(text) => json!({"text": text}),
        Turn::Ask(args) => json!({"functionCall": {"name": askuser, "args": args}}),
        Turn::Call(name, _) => {
            panic!("a scripted call of the host's own {name} is for Claude Code's API only: this script is wrong for this host")
        }
    };
    (response(model, vec![part]), "turn")
}

/// A side request's answer: a value of the schema it asks for when it asks for JSON (a
/// routing classifier, the next-speaker check, loop detection), else a short text.
fn side_answer(body: &Value) -> Value {
    let config = &body["generationConfig"];
    if config["responseMimeType"] != "application/json" {
        return json!({"text": "ok"});
    }
    let schema = config.get("responseJsonSchema").or_else(|| config.get("responseSchema")).unwrap_or(&Value::Null);
    json!({"text": instance(schema).to_string()})
}

/// A value of JSON schema `schema` (upper- or lower-case types, as Gemini writes them):
/// every property, an enum's first value, a number's `minimum` (else 1 for an integer, 0
/// for a number), a string "ok". These are the quiet answers Gemini's side requests expect:
/// the first enum values (`user` speaks next, the `flash` model); an integer from 1 (the
/// classifier's `complexity_score` must be 1-100, which its schema says only in words);
/// a number 0 (no confidence that the conversation loops).
fn instance(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()).and_then(|s| s.first()) {
        return instance(first);
    }
    let kind = schema["type"].as_str().unwrap_or(if schema.get("properties").is_some() { "object" } else { "string" });
    match kind.to_ascii_lowercase().as_str() {
        "object" => {
            let properties = schema["properties"].as_object().into_iter().flatten();
            Value::Object(properties.map(|(name, s)| (name.clone(), instance(s))).collect::<Map<_, _>>())
        }
        "array" => {
            let n = schema["minItems"].as_u64().unwrap_or(0) as usize;
            Value::Array(vec![instance(&schema["items"]); n])
        }
        "integer" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "number" => schema.get("minimum").cloned().unwrap_or(json!(0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!("ok"),
    }
}

/// A `GenerateContentResponse`: one finished candidate with `parts`.
fn response(model: &str, parts: Vec<Value>) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": model
    })
}

fn not_served(api: &Api, method: Method, uri: &Uri) -> Response {
    // Loudly: Gemini may have started to call something this fake should answer.
    eprintln!("gemini_api: {method} {uri} is not served by the scripted model");
    api.note(format!("{method} {uri} (not served)"));
    (StatusCode::NOT_FOUND, "not served by the scripted model").into_response()
}

async fn other(State(api): State<Arc<Api>>, method: Method, uri: Uri) -> Response {
    not_served(&api, method, &uri)
}
