//! The scripted model: what it says on each turn, and what each host sent it.
//!
//! Each vendor's API (anthropic.rs, openai.rs, gemini_api.rs) serves the same [`Model`]:
//! on a request from the host's main loop it takes the next [`Turn`] and answers it in
//! that API's streaming format, and it records what the host showed it ([`Seen`]).

use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What the model does on one turn.
#[derive(Debug, Clone)]
pub enum Turn {
    /// Calls the askuser tool (whatever the host named it) with these arguments.
    Ask(Value),
    /// Calls a tool by its exact name as the host offers it.
    Call(String, Value),
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

    /// The next turn, recording what the host sent; once the script runs out the model
    /// says "done".
    pub fn next(&self, seen: Seen) -> Turn {
        let mut inner = self.0.lock().unwrap();
        inner.seen.push(seen);
        inner.turns.pop_front().unwrap_or_else(|| Turn::Say("done".into()))
    }

    /// Appends turns (a test that reacts to what the model read).
    pub fn push(&self, turn: Turn) {
        self.0.lock().unwrap().turns.push_back(turn);
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

/// The offered tool whose name is askuser's (`mcp__askuser__ask_user`,
/// `mcp_askuser_ask_human`, …): its name as the host spells it.
pub fn askuser_tool(names: impl IntoIterator<Item = String>) -> Option<String> {
    names.into_iter().find(|n| n.contains("askuser"))
}

/// Serves `router` on 127.0.0.1:0 in the background; returns its base URL.
pub async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}
