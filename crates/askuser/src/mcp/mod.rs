//! `askuser mcp`: an MCP server over stdio with one tool, `ask_user`. stdout carries
//! only the protocol (JSON-RPC, a message per line); every log goes to stderr.
//!
//! A call is validated here first (every error comes back as a tool error), then asked
//! through a bridge by id, resumably: if the bridge restarts, the call re-attaches and
//! still completes. A person is slower than most hosts' timeouts, so nothing here
//! treats a host's impatience as the person's "no":
//! - a host that speaks tasks (revision 2025-11-25) gets a task at once and polls it;
//! - progress notifications keep hosts that reset their timeout on progress waiting;
//! - a call the host cancels because *it timed out* leaves the question open, and the
//!   same questions asked again (or `{"id": …}`) resume it; any other cancel withdraws;
//! - `--max-wait` answers "still waiting, call again with this id" before a host's limit;
//! - when the host goes away (EOF, SIGTERM, SIGKILL) the questions stay in the inbox,
//!   which shows that nobody waits for them, until a resumed call picks them up.
//!
//! The server is written against the protocol rather than an SDK: rmcp 3.9 implements
//! the draft tasks extension (SEP-2663), not the 2025-11-25 tasks that the TypeScript
//! SDK speaks, and its stdio transport dropped malformed lines silently.

mod elicit;
mod journal;
mod rpc;
mod tasks;

pub use journal::Journal;

pub use tasks::iso8601;

use crate::agent::{AskError, Asker};
use crate::lock;
use askuser_core::dialect::normalize;
use askuser_core::{AskResult, Format, Limits, Question, Status};
use rpc::{Incoming, INVALID_PARAMS, METHOD_NOT_FOUND};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tasks::{CancelRefused, Tasks};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// The tool's name unless `--tool-name` says otherwise.
pub const TOOL: &str = "ask_user";
/// The name for Gemini CLI, which run headless hides every tool named `ask_user` (its own
/// built-in's name) and so would never offer askuser's.
pub const GEMINI_TOOL: &str = "ask_human";

/// The tool's name for the MCP client `client` when `--tool-name` was not given.
pub fn default_tool(client: Option<&str>) -> &'static str {
    match client {
        Some(c) if c.starts_with("gemini-cli") => GEMINI_TOOL,
        _ => TOOL,
    }
}

/// Whether `name` can name the tool in every host (letters, digits, `_` and `-`, at most
/// 64; hosts join it to the server's name, e.g. `mcp__askuser__ask_user`).
pub fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// [`is_tool_name`] for a command-line flag (`--tool-name`, setup's `--name`).
pub fn tool_name_arg(name: &str) -> Result<String, String> {
    if is_tool_name(name) {
        Ok(name.to_owned())
    } else {
        Err(format!("expected 1 to 64 letters, digits, _ or - (hosts join the names, as in mcp__askuser__ask_user), got {name:?}"))
    }
}

/// What the model reads about the tool named `tool`.
pub fn description(tool: &str) -> String {
    DESCRIPTION.replace("ask_user", tool)
}

const DESCRIPTION: &str = "Ask the user one or more questions and wait for the answers. Use it when you need \
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

If the result says the user declined, the question timed out or was withdrawn, do not assume an answer.
If the call failed because it timed out, or the result says the user has not answered yet, the question is still \
open: call ask_user again with the same arguments (or with only the `id` the result gave) to keep waiting.";

/// Claude Code's AskUserQuestion shape plus `metadata` and `id`, and Opal's `{question, choices}`,
/// with every limit the server enforces ([`Limits::default`]) stated where a schema can say it
/// (sizes of `metadata` in its description), so a host or model that reads schemas never
/// sends what is refused.
pub fn input_schema() -> Value {
    let l = Limits::default();
    let text = |max: usize, description: &str| json!({"type": "string", "maxLength": max, "description": description});
    json!({
        "type": "object",
        "minProperties": 1,
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": l.max_questions,
                "description": "The questions, answered together. Each question's text must be different.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": text(l.max_question_chars, "The complete question, e.g. \"Which database should we use?\""),
                        // Not a refusal limit (a longer header is cut for display, with a warning):
                        // the 12 of Claude Code's own AskUserQuestion, as guidance.
                        "header": text(Limits::claude_code().max_header_chars, "A very short label shown as a chip (at most 12 characters), e.g. \"Database\"."),
                        "options": {
                            "type": "array",
                            "maxItems": l.max_options,
                            "description": "The choices (2-4 is best), each label different. Leave out for a free-text question. Never include an \"Other\" option.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": text(l.max_label_chars, "A short label (1-5 words)."),
                                    "description": text(l.max_description_chars, "What choosing this means."),
                                    "preview": text(l.max_preview_chars, "Optional: what this option would look like (code, a layout), shown when it is focused.")
                                },
                                "required": ["label"]
                            }
                        },
                        "multiSelect": {"type": "boolean", "default": false, "description": "Allow several options to be chosen."}
                    },
                    "required": ["question"]
                }
            },
            "metadata": {"type": "object", "description": format!(
                "Optional data for tracking (e.g. {{\"source\": \"setup\"}}); echoed back. At most {} KiB as JSON, nested at most {} deep.",
                l.max_metadata_bytes / 1024, l.max_metadata_depth
            )},
            "id": text(l.max_id_chars, "Only to keep waiting on an earlier question: the id a \"not answered yet\" result gave. Alone, it waits for that question's answer again."),
            "to": {
                "type": "string",
                "maxLength": askuser_core::validate::MAX_NAME_CHARS,
                "pattern": "^[A-Za-z0-9._@-]+$",
                "description": "Optional: the person or team who should answer (e.g. \"db-team\"), when you were told who; others see the question later."
            },
            "question": text(l.max_question_chars, "Short form: one question (instead of `questions`)."),
            "choices": {"type": "array", "maxItems": l.max_options, "items": {"type": "string", "maxLength": l.max_label_chars}, "description": "Short form: the choices for `question`."}
        }
    })
}

/// The canonical result, as `structuredContent`.
pub fn output_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": ["answered", "cancelled", "timed_out", "withdrawn", "pending"]},
            "answered": {"type": "boolean"},
            "answers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "header": {"type": "string"},
                        "answer": {"anyOf": [{"type": "string"}, strings]},
                        "selectedOptions": strings,
                        "custom": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        "wasCustom": {"type": "boolean"},
                        "notes": {"type": "string"},
                        "preview": {"type": "string"}
                    },
                    "required": ["question", "answer", "selectedOptions", "custom", "wasCustom"]
                }
            },
            "metadata": {"type": "object"},
            "chat": {"type": "boolean", "description": "The user chose to talk the questions over instead of answering."},
            "message": {"type": "string", "description": "What the result means and what to do next, in words (the same as the text content: hosts that show the model only structuredContent drop that)."},
            "answeredAt": {"type": "integer", "description": "Milliseconds since the Unix epoch."}
        },
        "required": ["id", "status", "answered", "answers", "message"]
    })
}

/// Protocol revisions this server speaks, newest first.
const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The first revision with tasks.
const TASKS_SINCE: &str = "2025-11-25";
const METHODS: &str = "initialize, ping, tools/list, tools/call, tasks/get, tasks/result, tasks/list and tasks/cancel";

#[derive(Debug, Clone)]
pub struct McpOptions {
    pub agent_name: Option<String>,
    pub parent_session: Option<String>,
    /// Who questions are for unless the model says (`to`).
    pub to: Option<String>,
    pub result_format: Format,
    /// How often progress is reported while waiting.
    pub progress_every: Duration,
    /// Where a person answers (shown in progress messages).
    pub open_url: String,
    /// Answer "still waiting, call again" after this long without an answer.
    pub max_wait: Option<Duration>,
    /// Also ask through the host's own dialog when it declares `elicitation`.
    pub elicitation: bool,
    /// The tool's name (`--tool-name`); none: [`default_tool`] for the client.
    pub tool_name: Option<String>,
    /// Where open calls are noted for a restarted host to resume (none: not at all).
    pub journal: Option<Journal>,
}

/// How the bridge names an answer given in the host's own dialog.
pub const ELICITATION_CLIENT: &str = "the agent host's own dialog (MCP elicitation)";

/// Why the server stopped.
#[derive(Debug)]
pub enum Left {
    Eof,
    Signal(&'static str),
    Error(String),
}

/// A JSON-RPC reply: a result, nothing (the request was cancelled), or an error.
type Reply = Result<Option<Value>, (i64, String)>;

struct Server {
    asker: Arc<Asker>,
    opts: McpOptions,
    /// This MCP connection's session id.
    session: String,
    calls: AtomicU64,
    out: mpsc::UnboundedSender<Value>,
    state: Mutex<State>,
    tasks: Tasks,
}

#[derive(Default)]
struct State {
    client: Option<String>,
    /// The negotiated protocol revision.
    version: &'static str,
    /// The tool's name, fixed at `initialize`.
    tool: Option<String>,
    tasks: bool,
    /// The host can show an elicitation form.
    elicits: bool,
    /// Requests sent to the host, by JSON id: where its reply goes.
    replies: HashMap<String, oneshot::Sender<Result<Value, Value>>>,
    sent: u64,
    /// Requests still running, by JSON id: where a `notifications/cancelled` goes.
    running: HashMap<String, oneshot::Sender<String>>,
    /// Questions that `tools/call`s are waiting on now.
    waiting: HashSet<String>,
    /// Questions whose call the host gave up on (it timed out), by the questions' JSON:
    /// the next call with the same questions resumes them (once; later ones ask anew).
    given_up: HashMap<String, String>,
    /// What each waiting `tools/call` (by JSON id) waits on: the question's id and its
    /// questions' JSON, so a timeout can be noted before the host's retry is read.
    calls: HashMap<String, (String, Option<String>)>,
    /// The same for the last calls that ended: an answer can end a call just as the host
    /// gives up on it, and the host then never sees that reply; its retry must still find
    /// the answered question instead of asking the person again.
    ended: std::collections::VecDeque<(String, (String, Option<String>))>,
}

/// How many ended calls [`State::ended`] remembers.
const ENDED: usize = 64;

/// A decline (or cancel) of the host's dialog sooner than this after it was sent came from
/// the host, not a person: nobody reads a question and answers it in under a second.
const HOST_REFUSAL: Duration = Duration::from_secs(1);

/// What a `tools/call` waits for: a new question (`body`) or one asked before.
struct Call {
    id: String,
    body: Option<Value>,
    key: Option<String>,
    /// The questions, for the host's own dialog (none when resuming by id).
    questions: Vec<Question>,
    /// The call's key in the [`Journal`] (who asks, where, what).
    journal: Option<String>,
    /// Its id is new: no earlier call of the same questions was found in this process.
    fresh: bool,
}

impl Call {
    fn by_id(id: &str) -> Call {
        Call { id: id.to_owned(), body: None, key: None, questions: vec![], journal: None, fresh: false }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn text(t: String) -> Value {
    json!([{"type": "text", "text": t}])
}

fn tool_error(t: String) -> Value {
    json!({"content": text(t), "isError": true})
}

fn invalid(message: String) -> (i64, String) {
    (INVALID_PARAMS, message)
}

/// Serves MCP on `input`/`output` until the host goes away; says how it went.
pub async fn serve(
    asker: Arc<Asker>,
    opts: McpOptions,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Left {
    let (out, mut outbox) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let mut output = output;
        while let Some(message) = outbox.recv().await {
            let mut line = serde_json::to_vec(&message).expect("messages serialize");
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let server = Arc::new(Server {
        asker,
        opts,
        session: format!("mcp-{}", crate::config::random_hex(6)),
        calls: AtomicU64::new(0),
        out,
        state: Mutex::default(),
        tasks: Tasks::default(),
    });
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let stop = terminated();
    tokio::pin!(stop);
    let left = loop {
        line.clear();
        tokio::select! {
            read = input.read_until(b'\n', &mut line) => match read {
                Ok(0) => break Left::Eof,
                Ok(_) => match std::str::from_utf8(&line) {
                    Ok(text) if text.trim().is_empty() => {}
                    Ok(text) => server.receive(text),
                    Err(e) => server.send(rpc::error(
                        Value::Null,
                        rpc::PARSE_ERROR,
                        format!("Parse error: each line must be one JSON-RPC message in UTF-8, and this one is not UTF-8 ({e})"),
                    )),
                },
                Err(e) => break Left::Error(e.to_string()),
            },
            signal = &mut stop => break Left::Signal(signal),
        }
    };
    server.leave(&left);
    left
}

/// Resolves on SIGTERM, SIGINT or SIGHUP with the signal's name.
async fn terminated() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

impl Server {
    fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    fn receive(self: &Arc<Self>, line: &str) {
        match rpc::parse(line) {
            Err(reply) => self.send(reply),
            Ok(Incoming::Response { id, outcome }) => {
                if let Some(tx) = lock(&self.state).replies.remove(&id.to_string()) {
                    let _ = tx.send(outcome);
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                tracing::debug!(%method, "notification");
                self.notified(&method, &params)
            }
            Ok(Incoming::Request { id, method, params }) => {
                tracing::debug!(%id, %method, "request");
                self.request(id, method, params)
            }
        }
    }

    fn notified(&self, method: &str, params: &Value) {
        if method != "notifications/cancelled" {
            return;
        }
        let Some(request) = params.get("requestId") else { return };
        let reason = params.get("reason").and_then(Value::as_str).unwrap_or("no reason given").to_owned();
        let mut state = lock(&self.state);
        // Noted here, not in the call's own task: a host that timed out often asks again at
        // once, and that next line must already find the question to resume.
        let request = request.to_string();
        if is_timeout(&reason) {
            let call = state.calls.get(&request).or_else(|| state.ended.iter().find(|(r, _)| *r == request).map(|(_, c)| c)).cloned();
            if let Some((id, Some(key))) = call {
                state.given_up.insert(key, id);
            }
        }
        if let Some(tx) = state.running.remove(&request) {
            let _ = tx.send(reason);
        }
    }

    fn request(self: &Arc<Self>, id: Value, method: String, params: Value) {
        let reply = match method.as_str() {
            "initialize" => Ok(Some(self.initialize(&params))),
            "ping" => Ok(Some(json!({}))),
            "tools/list" => Ok(Some(json!({"tools": [self.tool()]}))),
            "tasks/list" => Ok(Some(json!({"tasks": self.tasks.list()}))),
            "tools/call" | "tasks/get" | "tasks/result" | "tasks/cancel" => return self.spawn(id, method, params),
            other => {
                Err((METHOD_NOT_FOUND, format!("Method not found: askuser's MCP server has no method {other:?}; it offers {METHODS}")))
            }
        };
        self.reply(id, reply);
    }

    fn reply(&self, id: Value, reply: Reply) {
        match reply {
            Ok(Some(result)) => self.send(rpc::response(id, result)),
            Ok(None) => {}
            Err((code, message)) => self.send(rpc::error(id, code, message)),
        }
    }

    /// Runs a request that may wait; a `notifications/cancelled` for it ends the wait.
    fn spawn(self: &Arc<Self>, id: Value, method: String, params: Value) {
        let (cancel, cancelled) = oneshot::channel();
        let key = id.to_string();
        lock(&self.state).running.insert(key.clone(), cancel);
        let me = self.clone();
        tokio::spawn(async move {
            let reply = match method.as_str() {
                "tools/call" => me.tools_call(&key, &params, cancelled).await,
                "tasks/get" => me.task(&params).await.map(|task| me.tasks.get(&task)),
                "tasks/cancel" => me.cancel_task(&params).await,
                _ => tokio::select! {
                    reply = me.task_result(&params) => reply,
                    Ok(_) = cancelled => Ok(None),
                },
            };
            lock(&me.state).running.remove(&key);
            me.reply(id, reply);
        });
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        let version = VERSIONS.into_iter().find(|v| Some(*v) == asked).unwrap_or(VERSIONS[0]);
        let tasks = version >= TASKS_SINCE;
        // Form mode: `elicitation: {}` (before 2025-11-25 the only mode) or with `form`.
        let elicits =
            params.pointer("/capabilities/elicitation").and_then(Value::as_object).is_some_and(|e| e.is_empty() || e.contains_key("form"));
        {
            let mut state = lock(&self.state);
            state.client = params.pointer("/clientInfo/name").and_then(Value::as_str).map(str::to_owned);
            state.tool = Some(self.opts.tool_name.clone().unwrap_or_else(|| default_tool(state.client.as_deref()).to_owned()));
            state.version = version;
            state.tasks = tasks;
            state.elicits = elicits && self.opts.elicitation;
        }
        let mut capabilities = json!({"tools": {"listChanged": false}});
        if tasks {
            capabilities["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        }
        json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "askuser", "title": "askuser", "version": env!("CARGO_PKG_VERSION")},
            "instructions": format!("Use {} to ask the human a question and wait for the answer, even in a headless run.", self.tool_name())
        })
    }

    /// The tool's name on this connection.
    fn tool_name(&self) -> String {
        let state = lock(&self.state);
        state.tool.clone().or_else(|| self.opts.tool_name.clone()).unwrap_or_else(|| TOOL.to_owned())
    }

    fn tool(&self) -> Value {
        let name = self.tool_name();
        let mut tool = json!({
            "name": name,
            "title": "Ask the user",
            "description": description(&name),
            "inputSchema": input_schema(),
            "outputSchema": output_schema(),
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        });
        if lock(&self.state).tasks {
            tool["execution"] = json!({"taskSupport": "optional"});
        }
        tool
    }

    async fn tools_call(self: &Arc<Self>, request: &str, params: &Value, cancelled: oneshot::Receiver<String>) -> Reply {
        let tool = self.tool_name();
        let Some(p) = params.as_object() else {
            return Err(invalid(format!(
                "tools/call: expected params {{\"name\": \"{tool}\", \"arguments\": {{…}}}}, got {}",
                rpc::kind(params)
            )));
        };
        match p.get("name") {
            Some(Value::String(name)) if *name == tool => {}
            Some(Value::String(name)) => return Err(invalid(format!("tools/call: unknown tool {name:?}; this server has only {tool:?}"))),
            other => return Err(invalid(format!("tools/call: \"name\" must be a string, got {}", other.map_or("nothing", rpc::kind)))),
        }
        let args = match p.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => return Err(invalid(format!("tools/call: \"arguments\" must be an object, got {}", rpc::kind(other)))),
        };
        if let Some(task) = p.get("task").filter(|t| t.is_object()) {
            return Ok(Some(self.start_task(args, task)));
        }
        let mut call = match self.prepare(args) {
            Ok(call) => call,
            Err(message) => return Ok(Some(tool_error(message))),
        };
        self.adopt_orphan(&mut call).await;
        self.journal(&call, true);
        let token = p.get("_meta").and_then(|m| m.get("progressToken")).cloned();
        let max_wait = async {
            match self.opts.max_wait {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        {
            let mut state = lock(&self.state);
            state.waiting.insert(call.id.clone());
            state.calls.insert(request.to_owned(), (call.id.clone(), call.key.clone()));
        }
        let reply = tokio::select! {
            outcome = self.wait(&call) => {
                if outcome.as_ref().is_ok_and(|r| r.status != Status::Pending) {
                    self.journal(&call, false);
                }
                Some(self.outcome(outcome))
            }
            _ = self.progress(token) => unreachable!("progress never ends"),
            _ = self.elicit(&call) => unreachable!("the host's dialog only answers through the bridge"),
            _ = max_wait => Some(self.still_waiting(&call.id)),
            Ok(reason) = cancelled => {
                self.cancelled(&call, &reason).await;
                None
            }
        };
        {
            let mut state = lock(&self.state);
            state.waiting.remove(&call.id);
            if let Some(c) = state.calls.remove(request) {
                if state.ended.len() == ENDED {
                    state.ended.pop_front();
                }
                state.ended.push_back((request.to_owned(), c));
            }
        }
        Ok(reply)
    }

    /// Reads the model's arguments into the question to ask (or the one to wait on again).
    fn prepare(&self, mut args: Map<String, Value>) -> Result<Call, String> {
        let invalid_input = format!("The {} input is invalid; fix these and call again:", self.tool_name());
        let invalid_input = invalid_input.as_str();
        let explicit = match args.get("id") {
            None => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(other) => {
                return Err(format!("{invalid_input}\nid: expected the string id of an earlier question, got {}", rpc::kind(other)))
            }
        };
        if let Some(id) = &explicit {
            if !args.contains_key("questions") && !args.contains_key("question") {
                return Ok(Call::by_id(id));
            }
        }
        let to = match args.remove("to") {
            None => self.opts.to.clone(),
            Some(Value::String(to)) if askuser_core::validate::is_name(&to) => Some(to),
            Some(other) => {
                return Err(format!(
                    "{invalid_input}\nto: expected a person or team name (1 to {} characters from a-z A-Z 0-9 - _ . @), got {other}",
                    askuser_core::validate::MAX_NAME_CHARS
                ))
            }
        };
        // Exactly what the model sent, so errors name only its own keys.
        let normalized = normalize(&Value::Object(args.clone()), &Limits::default()).map_err(|e| format!("{invalid_input}\n{e}"))?;
        let key = serde_json::to_string(&normalized.request.questions).expect("questions serialize");
        let resumed = lock(&self.state).given_up.remove(&key);
        let fresh = explicit.is_none() && resumed.is_none();
        let id = explicit.or(resumed).unwrap_or_else(|| format!("{}-{}", self.session, self.calls.fetch_add(1, Ordering::Relaxed) + 1));
        let client = lock(&self.state).client.clone();
        let name = self.opts.agent_name.clone().or_else(|| client.map(|c| host_name(&c))).unwrap_or_else(|| "MCP agent".into());
        let journal = std::env::current_dir().ok().map(|cwd| journal::key(&name, &cwd, &key));
        let mut agent = json!({"name": name, "sessionId": self.session});
        if let Some(parent) = &self.opts.parent_session {
            agent["parentSessionId"] = parent.clone().into();
        }
        if let Some(to) = to {
            agent["assignee"] = to.into();
        }
        args.insert("id".into(), id.clone().into());
        args.insert("agent".into(), agent);
        Ok(Call { id, body: Some(Value::Object(args)), key: Some(key), questions: normalized.request.questions, journal, fresh })
    }

    /// A new call whose questions a host that went away asked before, from the same folder,
    /// without getting the result: waits on that question instead (its answer, if given
    /// meanwhile, comes back at once). Not when the bridge ended it without the person
    /// (timed out, withdrawn): then the person is asked again.
    async fn adopt_orphan(&self, call: &mut Call) {
        let (Some(journal), Some(key), true) = (&self.opts.journal, &call.journal, call.fresh) else { return };
        let Some(id) = journal.orphan(key, now_ms()) else { return };
        match self.asker.get(&id).await {
            Ok(record) if matches!(record.status, Status::Pending | Status::Answered | Status::Cancelled) => {
                tracing::info!(
                    %id,
                    "an earlier session asked the same questions from this folder and went away before it got the result: \
                     resuming that question ({}) instead of asking the person again",
                    record.status.as_str()
                );
                call.id = id;
                call.body = None;
            }
            Ok(record) => tracing::debug!(%id, "an earlier session's same questions ended {}: asking again", record.status.as_str()),
            Err(e) => tracing::debug!(%id, "an earlier session's same questions are not in this bridge ({e}): asking again"),
        }
    }

    /// Notes in the [`Journal`] that `call` waits (`open`) or is done with its question.
    fn journal(&self, call: &Call, open: bool) {
        let Some(journal) = &self.opts.journal else { return };
        match (open, &call.journal) {
            (true, Some(key)) => journal.open(key, &call.id, now_ms()),
            (true, None) => {}
            (false, _) => journal.close(&call.id, now_ms()),
        }
    }

    async fn wait(&self, call: &Call) -> Result<AskResult, AskError> {
        let log = |problem: &str| tracing::warn!(id = %call.id, "{problem}; retrying");
        match &call.body {
            Some(body) => self.asker.ask(body, true, log).await,
            None => self.asker.resume(&call.id, log).await,
        }
    }

    /// The `tools/call` result for how an ask ended.
    fn outcome(&self, outcome: Result<AskResult, AskError>) -> Value {
        match outcome {
            Ok(result) => {
                let words = result.to_text(self.opts.result_format);
                let mut structured = result.to_json(Format::Canonical);
                structured["message"] = words.clone().into();
                json!({"content": text(words), "structuredContent": structured, "isError": false})
            }
            Err(AskError::Refused(r)) => {
                let lines: Vec<String> = r.body.errors.iter().map(ToString::to_string).collect();
                tool_error(if lines.is_empty() { r.body.message } else { lines.join("\n") })
            }
            Err(e) => tool_error(e.to_string()),
        }
    }

    fn still_waiting(&self, id: &str) -> Value {
        let waited = self.opts.max_wait.unwrap_or_default().as_secs();
        let message = format!(
            "The user has not answered yet (waited {waited} s); the question is still open in their inbox at {}. \
             To keep waiting, call {} again with {{\"id\": \"{id}\"}} and nothing else: the answer comes back \
             at once if it arrived meanwhile. Do not assume an answer.",
            self.opts.open_url,
            self.tool_name()
        );
        json!({
            "content": text(message.clone()),
            "structuredContent": {"id": id, "status": "pending", "answered": false, "answers": [], "message": message},
            "isError": false
        })
    }

    /// The host cancelled a waiting call: a timeout keeps the question, anything else withdraws it.
    async fn cancelled(&self, call: &Call, reason: &str) {
        let id = &call.id;
        if is_timeout(reason) {
            tracing::info!(
                %id,
                "the host gave up waiting ({reason}); the question stays open: {} with the same questions, or with {{\"id\": \"{id}\"}}, picks up the answer",
                self.tool_name()
            );
        } else {
            tracing::info!(%id, "the host cancelled the call ({reason}); withdrawing the question");
            self.asker.withdraw(id).await;
            self.journal(call, false);
        }
    }

    /// Sends a request to the host; its reply comes through the returned channel.
    fn ask_host(&self, method: &str, params: Value) -> (Value, oneshot::Receiver<Result<Value, Value>>) {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = lock(&self.state);
            state.sent += 1;
            let id = Value::from(format!("askuser-{}", state.sent));
            state.replies.insert(id.to_string(), tx);
            id
        };
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, rx)
    }

    /// Asks the same questions in the host's own dialog, if it has one; an answer there goes
    /// to the bridge like any other, so the call ends through [`Self::wait`] either way and
    /// the inbox says where the answer came from. Never returns; when the call ends first
    /// (answered in the browser), dropping this withdraws the host's dialog.
    async fn elicit(&self, call: &Call) {
        let (version, elicits) = {
            let state = lock(&self.state);
            (state.version, state.elicits)
        };
        if !elicits || call.questions.is_empty() {
            return std::future::pending().await;
        }
        let form = if version >= TASKS_SINCE { elicit::Form::Titled } else { elicit::Form::Enum };
        let mut params = elicit::request(&call.questions, &self.opts.open_url, form);
        if form == elicit::Form::Titled {
            params["mode"] = "form".into();
        }
        let (request, reply) = self.ask_host("elicitation/create", params);
        let mut open = Withdraw { server: self, request: Some(request) };
        let sent = tokio::time::Instant::now();
        let reply = reply.await;
        open.request = None;
        let id = &call.id;
        let refused = reply.as_ref().is_ok_and(|r| r.as_ref().is_ok_and(|r| matches!(r["action"].as_str(), Some("decline" | "cancel"))));
        if refused && sent.elapsed() < HOST_REFUSAL {
            // Faster than anyone reads a form: the host answers for nobody (Codex headless
            // declines every form within milliseconds). Not the person's "no"; and this
            // host will not show a form, so none is sent again on this connection.
            lock(&self.state).elicits = false;
            tracing::info!(
                %id,
                "the host declined its dialog within {} ms, before anyone could have read it: it shows none (headless?); \
                 the question waits in the inbox",
                sent.elapsed().as_millis()
            );
            return std::future::pending().await;
        }
        match reply {
            Ok(Ok(result)) => match result["action"].as_str() {
                Some("accept") => {
                    let content = result.get("content").and_then(Value::as_object).cloned().unwrap_or_default();
                    match elicit::selections(&call.questions, &content) {
                        Ok(answers) => {
                            if let Err(e) = self.asker.answer(id, &json!({"answers": answers}), ELICITATION_CLIENT).await {
                                tracing::warn!(%id, "the answer from the host's dialog was not taken ({e}); the question stays open in the inbox");
                            }
                        }
                        Err(e) => tracing::warn!(%id, "the host's dialog came back incomplete ({e}); the question stays open in the inbox"),
                    }
                }
                Some("decline") => {
                    if let Err(e) = self.asker.decline(id, ELICITATION_CLIENT).await {
                        tracing::warn!(%id, "declining in the host's dialog was not taken ({e})");
                    }
                }
                _ => tracing::info!(%id, "the host's dialog was dismissed; the question stays open in the inbox"),
            },
            Ok(Err(error)) => tracing::info!(%id, "the host could not show its dialog ({error}); the question stays open in the inbox"),
            Err(_) => {}
        }
        std::future::pending().await
    }

    async fn progress(&self, token: Option<Value>) {
        let Some(token) = token else { return std::future::pending().await };
        let started = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(self.opts.progress_every);
        loop {
            tick.tick().await;
            let waited = started.elapsed().as_secs();
            let message = format!("Waiting for the user's answer ({waited} s so far; answer at {})", self.opts.open_url);
            self.send(rpc::notification("notifications/progress", json!({"progressToken": token, "progress": waited, "message": message})));
        }
    }

    fn waiting_message(&self) -> String {
        format!("Waiting for the user's answer at {}", self.opts.open_url)
    }

    /// A task-augmented `tools/call`: the task at once, the ask in the background.
    fn start_task(self: &Arc<Self>, args: Map<String, Value>, task: &Value) -> Value {
        let ttl = task.get("ttl").and_then(Value::as_u64);
        let now = now_ms();
        match self.prepare(args) {
            Err(message) => {
                let id = format!("{}-{}", self.session, self.calls.fetch_add(1, Ordering::Relaxed) + 1);
                self.tasks.create(&id, ttl, String::new(), now);
                let task = self.tasks.finish(&id, tasks::Status::Failed, tool_error(message.clone()), Some(message), now);
                json!({"task": task})
            }
            Ok(call) => {
                let (task, new) = self.tasks.create(&call.id, ttl, self.waiting_message(), now);
                if new {
                    self.run_task(call);
                }
                json!({"task": task})
            }
        }
    }

    fn run_task(self: &Arc<Self>, call: Call) {
        let me = self.clone();
        let id = call.id.clone();
        let handle = tokio::spawn(async move {
            let result = me.outcome(me.wait(&call).await);
            let failed = result["isError"] == true;
            let message = failed.then(|| result["content"][0]["text"].as_str().unwrap_or_default().to_owned());
            let status = if failed { tasks::Status::Failed } else { tasks::Status::Completed };
            if let Some(task) = me.tasks.finish(&call.id, status, result, message, now_ms()) {
                me.send(rpc::notification("notifications/tasks/status", task));
            }
        });
        self.tasks.set_abort(&id, handle.abort_handle());
    }

    /// The task a `tasks/*` request names. One this process does not know may still be
    /// a question in the bridge (asked before `askuser mcp` restarted): it is taken up again.
    async fn task(self: &Arc<Self>, params: &Value) -> Result<String, (i64, String)> {
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(invalid(format!("\"taskId\" must be a string, got {}", params.get("taskId").map_or("nothing", rpc::kind))));
        };
        if self.tasks.get(id).is_some() {
            return Ok(id.to_owned());
        }
        let record = self.asker.get(id).await.map_err(|_| invalid(format!("unknown task {id:?}")))?;
        let (_, new) = self.tasks.create(id, None, self.waiting_message(), record.created_at);
        if new {
            match record.result {
                Some(result) => {
                    self.tasks.finish(id, tasks::Status::Completed, self.outcome(Ok(result)), None, now_ms());
                }
                None => self.run_task(Call::by_id(id)),
            }
        }
        Ok(id.to_owned())
    }

    async fn task_result(self: &Arc<Self>, params: &Value) -> Reply {
        let id = self.task(params).await?;
        let mut result = self.tasks.result(&id).await.ok_or_else(|| invalid(format!("unknown task {id:?}")))?;
        result["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
        Ok(Some(result))
    }

    async fn cancel_task(self: &Arc<Self>, params: &Value) -> Reply {
        let id = self.task(params).await?;
        let result = tool_error("The task was cancelled and its question withdrawn; do not assume an answer.".into());
        match self.tasks.cancel(&id, result, now_ms()) {
            Ok(task) => {
                tracing::info!(%id, "the host cancelled the task; withdrawing the question");
                self.asker.withdraw(&id).await;
                self.send(rpc::notification("notifications/tasks/status", task.clone()));
                Ok(Some(task))
            }
            Err(CancelRefused::Unknown) => Err(invalid(format!("unknown task {id:?}"))),
            Err(CancelRefused::Final(status)) => {
                Err(invalid(format!("task {id:?} is already {status}; only a working task can be cancelled")))
            }
        }
    }

    /// Says honestly what happens to the questions still waiting when the host goes away.
    fn leave(&self, left: &Left) {
        let how = match left {
            Left::Eof => "its end of stdin closed".to_owned(),
            Left::Signal(name) => (*name).to_owned(),
            Left::Error(e) => format!("reading stdin failed: {e}"),
        };
        let mut ids: Vec<String> = lock(&self.state).waiting.iter().cloned().collect();
        ids.extend(
            self.tasks.list().into_iter().filter(|t| t["status"] == "working").filter_map(|t| t["taskId"].as_str().map(str::to_owned)),
        );
        if ids.is_empty() {
            tracing::debug!("the host went away ({how})");
            return;
        }
        ids.sort();
        ids.dedup();
        tracing::info!(
            "the host went away ({how}) while {} question(s) waited: {}. They stay open in the inbox, which shows that \
             nobody is waiting for them now. An answer given there is kept: a {} call with {{\"id\": …}} (or the same questions from this folder) picks it up, \
             the bridge's --on-late-answer hook (if set) runs with it, and the bridge withdraws the questions after its grace period.",
            ids.len(),
            ids.join(", "),
            self.tool_name()
        );
    }
}

/// Withdraws a request sent to the host that is still open when dropped.
struct Withdraw<'a> {
    server: &'a Server,
    request: Option<Value>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(request) = self.request.take() else { return };
        lock(&self.server.state).replies.remove(&request.to_string());
        let params =
            json!({"requestId": request, "reason": "askuser no longer needs this answer: it was given in the inbox, or the call ended"});
        self.server.send(rpc::notification("notifications/cancelled", params));
    }
}

/// The inbox's name for an MCP client: the host's own name for the hosts whose clients
/// report a technical one (`codex-mcp-client`), else the client's name as reported.
fn host_name(client: &str) -> String {
    match client {
        "codex-mcp-client" => "Codex".into(),
        "gemini-cli-mcp-client" => "Gemini CLI".into(),
        "claude-code" => "Claude Code".into(),
        other => other.into(),
    }
}

/// Whether a host's cancel reason says it stopped waiting because its own timeout ran out
/// (the TypeScript SDK sends "McpError: MCP error -32001: Request timed out"). Codex
/// 0.169.0 says only "MCP request cancelled by caller" when its `tool_timeout_sec` runs out
/// (and when its turn is interrupted): kept open too, since a question kept open costs
/// the person nothing (the inbox shows nobody waits) and a withdrawn one loses their answer.
fn is_timeout(reason: &str) -> bool {
    let reason = reason.to_ascii_lowercase();
    ["timed out", "timeout", "time out", "-32001", "cancelled by caller"].iter().any(|w| reason.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_told_apart_from_a_deliberate_cancel() {
        assert!(is_timeout("McpError: MCP error -32001: Request timed out"));
        assert!(is_timeout("Timeout waiting for response"));
        assert!(is_timeout("MCP request cancelled by caller"), "Codex 0.169.0 at its tool_timeout_sec");
        assert!(!is_timeout("AbortError: This operation was aborted"));
        assert!(!is_timeout("User cancelled"));
        assert!(!is_timeout("no reason given"));
    }

    /// Every limit the server refuses a call for is in the schema a host and model read.
    #[test]
    fn the_input_schema_states_every_limit_that_is_enforced() {
        let Limits {
            max_questions,
            min_options: _, // 1: an empty list means a free-text question, so no minItems
            max_options,
            require_options: _, // false by default
            max_question_chars,
            max_header_chars: _, // not refused: cut for display (the schema says 12, as Claude Code)
            max_label_chars,
            max_description_chars,
            max_preview_chars,
            max_id_chars,
            max_metadata_depth,
            max_metadata_bytes,
        } = Limits::default();
        let schema = input_schema();
        let p = &schema["properties"];
        let q = &p["questions"]["items"]["properties"];
        let o = &q["options"]["items"]["properties"];
        assert_eq!(schema["minProperties"], 1);
        assert_eq!(p["questions"]["maxItems"], max_questions);
        assert_eq!(q["question"]["maxLength"], max_question_chars);
        assert_eq!(p["question"]["maxLength"], max_question_chars);
        assert_eq!(q["header"]["maxLength"], 12);
        assert_eq!(q["options"]["maxItems"], max_options);
        assert_eq!(p["choices"]["maxItems"], max_options);
        assert_eq!(o["label"]["maxLength"], max_label_chars);
        assert_eq!(p["choices"]["items"]["maxLength"], max_label_chars);
        assert_eq!(o["description"]["maxLength"], max_description_chars);
        assert_eq!(o["preview"]["maxLength"], max_preview_chars);
        assert_eq!(p["id"]["maxLength"], max_id_chars);
        assert_eq!(p["to"]["maxLength"], askuser_core::validate::MAX_NAME_CHARS);
        let metadata = p["metadata"]["description"].as_str().unwrap();
        assert!(metadata.contains(&format!("{} KiB", max_metadata_bytes / 1024)), "{metadata}");
        assert!(metadata.contains(&format!("nested at most {max_metadata_depth} deep")), "{metadata}");
        assert!(!output_schema().to_string().contains("\"type\":["), "no type arrays in the output schema");
    }

    #[test]
    fn the_tool_is_named_for_the_host_and_its_texts_say_that_name() {
        assert_eq!(default_tool(Some("gemini-cli-mcp-client")), "ask_human");
        assert_eq!(default_tool(Some("claude-code")), "ask_user");
        assert_eq!(default_tool(None), "ask_user");
        assert!(is_tool_name("ask_human") && is_tool_name("ask-me-2"));
        assert!(!is_tool_name("") && !is_tool_name("ask user") && !is_tool_name(&"a".repeat(65)));
        let text = description("ask_human");
        assert!(text.contains("call ask_human again") && !text.contains("ask_user"), "{text}");
    }
}
