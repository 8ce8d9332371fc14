//! The scripted model: what it says on each turn, and what each host sent it.
//!
//! Each vendor's API (anthropic.rs, openai.rs, gemini_api.rs) serves the same [`Model`]:
//! on a request from the host's main loop it takes the next [`Turn`] and answers it in
//! that API's streaming format, and it records what the host showed it ([`Seen`]). The APIs
//! share their server and log of requests ([`FakeApi`], [`Api`]).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the model does on one turn.
#[derive(Debug, Clone)]
pub enum Turn {
    /// Calls the askuser tool (whatever the host named it) with these arguments.
    Ask(Value),
    /// Calls one of the host's own tools (`Bash`, `AskUserQuestion`) with this input
    /// (Claude Code's API only).
    Call(&'static str, Value),
    /// Ends with this text.
    Say(String),
}

/// One request from the host's main loop, as the model read it.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The tools offered, each as the API carries it (name, description, schema).
    pub tools: Vec<Value>,
    /// The text of the last tool result in the conversation, exactly as the model reads it.
    pub tool_result: Option<String>,
    /// The whole request body.
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    turns: VecDeque<Turn>,
    /// The turns of a sub-agent the host runs (Claude Code's Task tool), when scripted.
    sub: Option<VecDeque<Turn>>,
    seen: Vec<Seen>,
}

/// A script shared by the API server and the test.
#[derive(Clone, Default)]
pub struct Model(Arc<Mutex<Inner>>);

impl Model {
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Model {
        let model = Model::default();
        model.0.lock().unwrap().turns.extend(turns);
        model
    }

    /// A model whose sub-agents (requests the host marks as a sub-agent's) take `sub`'s turns.
    pub fn with_subagent(turns: impl IntoIterator<Item = Turn>, sub: impl IntoIterator<Item = Turn>) -> Model {
        let model = Model::new(turns);
        model.0.lock().unwrap().sub = Some(sub.into_iter().collect());
        model
    }

    /// The next turn, recording what the host sent; once the script runs out the model
    /// says "done". `subagent`: the request is a sub-agent's, which takes its own script
    /// when there is one.
    pub fn next_for(&self, seen: Seen, subagent: bool) -> Turn {
        let mut inner = self.0.lock().unwrap();
        inner.seen.push(seen);
        let turns = match (subagent, inner.sub.as_mut()) {
            (true, Some(sub)) => sub,
            _ => &mut inner.turns,
        };
        turns.pop_front().unwrap_or_else(|| Turn::Say("done".into()))
    }

    pub fn next(&self, seen: Seen) -> Turn {
        self.next_for(seen, false)
    }

    /// Every main-loop request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().seen.clone()
    }

    /// The tool results the model has read, in order.
    pub fn results(&self) -> Vec<String> {
        self.seen().into_iter().filter_map(|s| s.tool_result).collect()
    }
}

/// A tool result's content as the model reads it: the string, or the text parts one after
/// the other, a line apart (OpenAI's `output`, Anthropic's `content`).
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

/// The offered tool whose name is askuser's (`mcp__askuser__ask_user`,
/// `mcp_askuser_ask_human`, …): its name as the host spells it.
pub fn askuser_tool(names: impl IntoIterator<Item = String>) -> Option<String> {
    names.into_iter().find(|n| n.contains("askuser") && !n.ends_with("approve"))
}

/// What a fake API's handlers share: the script, and a log of every request served.
pub struct Api {
    pub model: Model,
    /// Every request: method, path and what it was taken for.
    requests: Mutex<Vec<String>>,
    ids: AtomicU64,
}

impl Api {
    /// Logs a request (`POST /v1/messages (turn)`, …).
    pub fn note(&self, line: String) {
        self.requests.lock().unwrap().push(line);
    }

    /// A new number for the ids in a reply (`msg_3`, `call_3`).
    pub fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }
}

/// A vendor's API, faked on 127.0.0.1 around a [`Model`]: its base URL, and what it served.
pub struct FakeApi {
    /// `http://127.0.0.1:PORT` (plus whatever path the vendor's clients expect in it).
    pub base_url: String,
    pub model: Model,
    api: Arc<Api>,
}

impl FakeApi {
    /// Serves `model` with the vendor's `routes` in the background.
    pub async fn start(model: Model, routes: impl FnOnce(Router<Arc<Api>>) -> Router<Arc<Api>>) -> FakeApi {
        let api = Arc::new(Api { model: model.clone(), requests: Mutex::default(), ids: AtomicU64::new(0) });
        let router = routes(Router::new()).with_state(api.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        FakeApi { base_url, model, api }
    }

    /// Every request so far, for failure messages.
    pub fn requests(&self) -> Vec<String> {
        self.api.requests.lock().unwrap().clone()
    }
}

/// A streamed reply: each event as server-sent `data:`, after an `event:` line with its
/// `type` when `named` (OpenAI's and Anthropic's streams; Gemini's has none).
pub fn event_stream(events: impl IntoIterator<Item = Value>, named: bool) -> Response {
    let mut body = String::new();
    for event in events {
        if named {
            body.push_str(&format!("event: {}\n", event["type"].as_str().unwrap_or_default()));
        }
        body.push_str(&format!("data: {event}\n\n"));
    }
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}
