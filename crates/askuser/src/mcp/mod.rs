//! `askuser mcp`: an MCP server over stdio with one tool, `ask_user`, on the official Rust
//! SDK (rmcp). stdout carries only the protocol (JSON-RPC, a message per line); every log
//! goes to stderr. Both eras of MCP are served on one connection: a client that probes
//! `server/discover` and sends its version, name and capabilities with each request
//! (2026-07-28), and one that opens with `initialize` (2024-11-05 to 2025-11-25).
//!
//! A call is validated here first (every error comes back as a tool error), then asked
//! through a bridge by id, resumably: if the bridge restarts, the call re-attaches and
//! still completes. Nothing happens before the first tool call: a probe, `initialize` or
//! `tools/list` starts no bridge. A person is slower than most hosts' timeouts, so nothing
//! here treats a host's impatience as the person's "no":
//! - progress notifications keep hosts that reset their timeout on progress waiting;
//! - a call the host cancels because *it timed out* leaves the question open, and the
//!   same questions asked again (or `{"id": …}`) resume it; any other cancel withdraws;
//! - `--max-wait` answers "still waiting, call again with this id" before a host's limit;
//! - when the host goes away (EOF, SIGTERM, SIGKILL) the questions stay in the inbox,
//!   which shows that nobody waits for them, until a resumed call picks them up.
//!
//! A host with a dialog of its own is asked there too, racing the inbox: by
//! `elicitation/create` in the handshake era, by an `input_required` result (a multi
//! round-trip request) in 2026-07-28. A host that declines its dialog faster than anyone
//! can read it (a headless one) is not taken for the person. A 2026-07-28 host that
//! declares the tasks extension gets a task instead of a waiting call ([`tasks`]).
//!
//! Hand-written beside rmcp: the line transport ([`rpc`]: parse errors get a reply, and a
//! cancel's reason is read before the next line), and the tool's JSON schemas.

mod elicit;
mod journal;
mod rpc;
pub mod stdio;
mod tasks;

pub use journal::Journal;

use crate::agent::{AskError, Asker};
use crate::lock;
use askuser_core::dialect::normalize;
use askuser_core::{AskResult, Format, Limits, Question, Status};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CustomRequest, CustomResult, DiscoverResult, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, InputRequiredResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerRequest, Tool, UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use rpc::{INVALID_PARAMS, METHOD_NOT_FOUND};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::OnceCell;

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
            "remindAfterSeconds": {
                "type": "integer", "minimum": 1, "maximum": askuser_core::remind::MAX_SECONDS,
                "description": "Optional: if the user has not answered after this many seconds, remind them (again after twice as long, to everyone)."
            },
            "defaultAfterSeconds": {
                "type": "integer", "minimum": 1, "maximum": askuser_core::remind::MAX_SECONDS,
                "description": "Optional, only if you can go on without an answer: after this many seconds the call returns no answer (status timed_out, with the reason), so continue without one."
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
            "reason": {"type": "string", "description": "Why it ended without an answer, when the call asked for a default: \"no answer after 30 min; default applied\"."},
            "message": {"type": "string", "description": "What the result means and what to do next, in words (the same as the text content: hosts that show the model only structuredContent drop that)."},
            "answeredAt": {"type": "integer", "description": "Milliseconds since the Unix epoch."},
            "earlierSession": {"type": "boolean", "description": "The answer is to the same question an earlier session asked from this folder, which ended before it got it."}
        },
        "required": ["id", "status", "answered", "answers", "message"]
    })
}

const METHODS: &str = "server/discover, initialize, ping, tools/list, tools/call, and tasks/get, tasks/update and tasks/cancel";

/// Reaches (or starts) the bridge, at the first tool call.
pub type Connect = Box<dyn Fn() -> Pin<Box<dyn Future<Output = anyhow::Result<Asker>> + Send>> + Send + Sync>;

#[derive(Debug, Clone)]
pub struct McpOptions {
    pub agent_name: Option<String>,
    pub parent_session: Option<String>,
    /// Who questions are for unless the model says (`to`).
    pub to: Option<String>,
    pub result_format: Format,
    /// How often progress is reported while waiting.
    pub progress_every: Duration,
    /// Answer "still waiting, call again" after this long without an answer.
    pub max_wait: Option<Duration>,
    /// Also ask through the host's own dialog when it declares `elicitation`.
    pub elicitation: bool,
    /// The tool's name (`--tool-name`); none: [`default_tool`] for the client.
    pub tool_name: Option<String>,
    /// Where open calls are noted for a restarted host to resume (none: not at all).
    pub journal: Option<Journal>,
    /// How recent an answer to an earlier run's same question must be for a new call
    /// to get it (`--resume-window`).
    pub resume_window: Duration,
    /// Also offer [`APPROVE_TOOL`].
    pub approvals: bool,
    /// This agent's reminders and default (`--remind-after`, `--default-after`), for
    /// every call that sets none of its own.
    pub patience: askuser_core::remind::Patience,
}

impl McpOptions {
    /// Sets this agent's reminders and default on a call's body, where it has none.
    fn patient(&self, body: &mut Map<String, Value>) {
        let own =
            [("remindAfterSeconds", self.patience.remind_after_seconds), ("defaultAfterSeconds", self.patience.default_after_seconds)];
        for (field, seconds) in own {
            if let (Some(seconds), false) = (seconds, body.contains_key(field)) {
                body.insert(field.into(), seconds.into());
            }
        }
    }
}

/// How the bridge names an answer given in the host's own dialog.
pub const ELICITATION_CLIENT: &str = "the agent host's own dialog (MCP elicitation)";

/// Why the server stopped.
#[derive(Debug, Clone)]
pub enum Left {
    Eof,
    Signal(&'static str),
    Error(String),
}

struct Server {
    connect: Connect,
    /// The bridge, once the first tool call needed it.
    bridge: OnceCell<Arc<Asker>>,
    opts: McpOptions,
    /// This MCP connection's session id.
    session: String,
    calls: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The host declined its dialog before anyone could read it: it shows none.
    no_dialog: bool,
    /// Why the host cancelled each request it cancelled, by JSON id (from the transport).
    reasons: HashMap<String, String>,
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
    ended: VecDeque<(String, (String, Option<String>))>,
    /// Questions shown in a 2026-07-28 host's own dialog, by the `requestState` its
    /// retry brings back with the dialog's result.
    rounds: HashMap<String, Round>,
    /// Calls a 2026-07-28 host took as tasks (the tasks extension).
    tasks: tasks::Tasks,
}

/// A question in a modern host's dialog, waiting for the host to retry the call.
struct Round {
    call: Call,
    sent: tokio::time::Instant,
    /// The JSON id of the call that showed the dialog: the host may cancel that one
    /// when it times out, not its retry.
    origin: String,
}

impl State {
    /// Notes that the call with JSON id `request` ended (see [`State::ended`]).
    fn end(&mut self, request: String, call: (String, Option<String>)) {
        if self.ended.len() == ENDED {
            self.ended.pop_front();
        }
        self.ended.push_back((request, call));
    }
}

/// How many ended calls [`State::ended`] remembers.
const ENDED: usize = 64;

/// A decline (or cancel) of the host's dialog sooner than this after it was sent came from
/// the host, not a person: nobody reads a question and answers it in under a second.
const HOST_REFUSAL: Duration = Duration::from_secs(1);
/// A dialog's answer for a question not stored yet is sent again after [`STORED_PAUSE`],
/// up to this many times in all (2 s).
const STORED_TRIES: u32 = 40;
const STORED_PAUSE: Duration = Duration::from_millis(50);

/// `send` (a dialog's answer or decline) until the bridge has the question: the dialog went
/// to the host as the question went to the bridge, and a host that answers at once (a
/// scripted one) can be back before it is stored, which the bridge calls "not found".
async fn once_stored<F: std::future::Future<Output = Result<AskResult, AskError>>>(send: impl Fn() -> F) -> Result<AskResult, AskError> {
    let mut tries = 1;
    loop {
        match send().await {
            Err(AskError::Refused(e)) if e.status == 404 && tries < STORED_TRIES => tries += 1,
            taken => return taken,
        }
        tokio::time::sleep(STORED_PAUSE).await;
    }
}

/// What a `tools/call` waits for: a new question (`body`) or one asked before.
#[derive(Clone)]
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
    /// It waits on the question an earlier run (an `askuser mcp` that is gone) asked.
    earlier: bool,
}

impl Call {
    fn by_id(id: &str) -> Call {
        Call { id: id.to_owned(), body: None, key: None, questions: vec![], journal: None, fresh: false, earlier: false }
    }
}

/// Who calls: the client's name and what it can do, from `initialize` or from the request.
struct Caller {
    client: Option<String>,
    tool: String,
    /// The request's protocol revision (2026-07-28 and later: no requests to the client).
    version: ProtocolVersion,
    /// The host shows an elicitation form.
    elicits: bool,
    /// The request declares the tasks extension: a call may return a task.
    tasks: bool,
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

fn invalid(message: String) -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode(INVALID_PARAMS as i32), message, None)
}

/// A `tools/call` result from its JSON (`resultType` is dropped for handshake-era peers).
fn result(value: Value) -> CallToolResult {
    let mut result: CallToolResult = serde_json::from_value(value).expect("tool results are CallToolResults");
    result.result_type = Some(rmcp::model::ResultType::COMPLETE);
    result
}

fn modern(version: &ProtocolVersion) -> bool {
    version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
}

/// The JSON text of a request id, as the transport reports cancels by it.
fn key_of(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).expect("ids serialize")
}

/// Serves MCP on `input`/`output` until the host goes away; says how it went.
pub async fn serve(
    connect: Connect,
    opts: McpOptions,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Left {
    let server = Arc::new(Server {
        connect,
        bridge: OnceCell::new(),
        opts,
        session: format!("mcp-{}", askuser_bridge::files::random_hex(6)),
        calls: AtomicU64::new(0),
        state: Mutex::default(),
    });
    let me = server.clone();
    let lines = rpc::Lines::new(input, output, Box::new(move |request, reason| me.cancelled_by_host(request, reason)));
    let mut gone = lines.gone();
    let handler = Handler(server.clone());
    let mut service = tokio::spawn(async move {
        match handler.serve(lines).await {
            Ok(running) => running.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    });
    let stop = terminated();
    tokio::pin!(stop);
    let left = tokio::select! {
        biased;
        Ok(ended) = gone.wait_for(Option::is_some) => match ended.clone() {
            Some(rpc::Ended::Error(e)) => Left::Error(e),
            _ => Left::Eof,
        },
        signal = &mut stop => Left::Signal(signal),
        ended = &mut service => match ended {
            Ok(Err(e)) => Left::Error(e),
            _ => Left::Eof,
        },
    };
    service.abort();
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

/// The SDK's view of the server.
#[derive(Clone)]
struct Handler(Arc<Server>);

impl ServerHandler for Handler {
    fn get_info(&self) -> InitializeResult {
        self.0.info(None)
    }

    async fn initialize(&self, request: InitializeRequestParams, cx: RequestContext<RoleServer>) -> Result<InitializeResult, ErrorData> {
        cx.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.instructions = self.0.info(Some(&request.client_info.name)).instructions;
        Ok(result)
    }

    async fn discover(&self, cx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let info = self.0.info(cx.client_info().map(|c| c.name).as_deref());
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), info))
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, cx: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let caller = self.0.caller(&cx);
        let mut tools = vec![tool(&caller.tool)];
        if self.0.opts.approvals {
            tools.push(approve_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, request: CallToolRequestParams, cx: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        self.0.tools_call(request, cx).await
    }

    async fn get_task(&self, request: GetTaskParams, _: RequestContext<RoleServer>) -> Result<GetTaskResult, ErrorData> {
        self.0.get_task(&request.task_id)
    }

    async fn update_task(&self, request: UpdateTaskParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.0.update_task(&request.task_id, request.input_responses).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.0.cancel_task(&request.task_id).await
    }

    async fn on_custom_request(&self, request: CustomRequest, cx: RequestContext<RoleServer>) -> Result<CustomResult, ErrorData> {
        // A known method whose params the SDK could not read comes here too.
        let params = request.params.unwrap_or(Value::Null);
        if request.method == "tools/call" {
            let tool = self.0.caller(&cx).tool;
            return Err(match params.as_object() {
                None => invalid(format!(
                    "tools/call: expected params {{\"name\": \"{tool}\", \"arguments\": {{…}}}}, got {}",
                    rpc::kind(&params)
                )),
                Some(p) => match (p.get("name"), p.get("arguments")) {
                    (Some(Value::String(_)), Some(args)) if !args.is_object() => {
                        invalid(format!("tools/call: \"arguments\" must be an object, got {}", rpc::kind(args)))
                    }
                    (name, _) => invalid(format!("tools/call: \"name\" must be a string, got {}", name.map_or("nothing", rpc::kind))),
                },
            });
        }
        let method = request.method;
        Err(ErrorData::new(
            rmcp::model::ErrorCode(METHOD_NOT_FOUND as i32),
            format!("Method not found: askuser's MCP server has no method {method:?}; it offers {METHODS}"),
            None,
        ))
    }
}

/// The permission prompt tool (`askuser mcp --approvals`).
pub const APPROVE_TOOL: &str = "approve";

/// [`APPROVE_TOOL`], as `tools/list` shows it: what Claude Code's `--permission-prompt-tool`
/// calls, `{tool_name, input, tool_use_id}`, answered with the JSON text of its decision.
pub fn approve_tool() -> Tool {
    serde_json::from_value(json!({
        "name": APPROVE_TOOL,
        "title": "Ask the user to allow a tool call",
        "description": "Claude Code's permission prompt tool (--permission-prompt-tool mcp__askuser__approve): asks the \
    person whether a tool call may run, and waits. Not for the model to call: to ask the user something, use ask_user.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "The tool that would run (Bash, Edit, …)."},
                "input": {"type": "object", "description": "Its arguments."},
                "tool_use_id": {"type": "string", "description": "The host's id of the call."}
            },
            "required": ["tool_name", "input"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
    .expect("the tool is a Tool")
}

/// The tool named `name`, as `tools/list` shows it.
fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "title": "Ask the user",
        "description": description(name),
        "inputSchema": input_schema(),
        "outputSchema": output_schema(),
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
    .expect("the tool is a Tool")
}

impl Server {
    /// The server's name, capabilities and instructions for the client named `client`.
    fn info(&self, client: Option<&str>) -> InitializeResult {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tasks().build());
        info.server_info = Implementation::new("askuser", env!("CARGO_PKG_VERSION")).with_title("askuser");
        info.instructions =
            Some(format!("Use {} to ask the human a question and wait for the answer, even in a headless run.", self.tool_name(client)));
        info
    }

    /// The tool's name for the client named `client`.
    fn tool_name(&self, client: Option<&str>) -> String {
        self.opts.tool_name.clone().unwrap_or_else(|| default_tool(client).to_owned())
    }

    fn caller(&self, cx: &RequestContext<RoleServer>) -> Caller {
        let client = cx.client_info().map(|c| c.name);
        // Form mode: `elicitation: {}` (before 2025-11-25 the only mode) or with `form`.
        let elicits = cx
            .client_capabilities()
            .and_then(|c| serde_json::to_value(c).ok())
            .is_some_and(|c| c.get("elicitation").and_then(Value::as_object).is_some_and(|e| e.is_empty() || e.contains_key("form")));
        Caller {
            tool: self.tool_name(client.as_deref()),
            client,
            version: cx.protocol_version().unwrap_or(ProtocolVersion::V_2025_03_26),
            elicits: elicits && self.opts.elicitation && !lock(&self.state).no_dialog,
            tasks: cx.client_capabilities().is_some_and(|c| c.supports_tasks()),
        }
    }

    /// The bridge, reached (or started) at the first call that needs it.
    async fn asker(&self) -> Result<&Asker, String> {
        self.bridge
            .get_or_try_init(|| async { (self.connect)().await.map(Arc::new) })
            .await
            .map(|a| a.as_ref())
            .map_err(|e| format!("askuser could not reach or start its bridge: {e:#}"))
    }

    /// The bridge of a call that [`Self::asker`] connected.
    fn connected(&self) -> &Asker {
        self.bridge.get().expect("the call reached the bridge first")
    }

    fn open_url(&self) -> String {
        self.bridge.get().map(|a| a.endpoint().url).unwrap_or_default()
    }

    /// The transport read a `notifications/cancelled`: noted before the next line is read,
    /// since a host that timed out often asks again at once, and that next call must
    /// already find the question to resume. Cancels count in the order they came: the
    /// first one's reason is the call's, so OpenCode's "AbortError", sent in the same
    /// millisecond after its "Request timed out", does not make a timeout a withdrawal; and
    /// a cancel of a call that already ended (OpenCode sends one after every call) is only
    /// a timeout's note for the retry, if it is one.
    fn cancelled_by_host(&self, request: String, reason: String) {
        let mut state = lock(&self.state);
        let ended = state.ended.iter().find(|(r, _)| *r == request).map(|(_, c)| c.clone());
        if is_timeout(&reason) && !state.reasons.contains_key(&request) {
            if let Some((id, Some(key))) = state.calls.get(&request).cloned().or(ended.clone()) {
                state.given_up.insert(key, id);
            }
        }
        if ended.is_none() {
            state.reasons.entry(request).or_insert(reason);
        }
    }

    async fn tools_call(
        self: &Arc<Self>,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&cx);
        let tool = &caller.tool;
        if self.opts.approvals && request.name == APPROVE_TOOL {
            return Ok(self.approve(request.arguments.unwrap_or_default(), &caller).await);
        }
        if request.name != *tool {
            return Err(invalid(format!("tools/call: unknown tool {:?}; this server has only {tool:?}", request.name)));
        }
        let args = request.arguments.unwrap_or_default();
        // A modern host's retry with what its own dialog gave: the round it answers.
        let round = request.request_state.as_ref().and_then(|state| lock(&self.state).rounds.remove(state));
        // The JSON ids this call is known by: its own, and the first round's.
        let mut requests = vec![key_of(&cx.id)];
        let mut call = match round {
            Some(round) => {
                if let Err(e) = self.asker().await {
                    return Ok(result(tool_error(e)).into());
                }
                self.dialog_result(&round.call, round.sent, request.input_responses.and_then(|mut r| r.remove(DIALOG))).await;
                requests.push(round.origin);
                round.call
            }
            None => match self.prepare(args, &caller) {
                Ok(call) => call,
                Err(message) => return Ok(result(tool_error(message)).into()),
            },
        };
        if let Err(e) = self.asker().await {
            return Ok(result(tool_error(e)).into());
        }
        if request.request_state.is_none() {
            self.adopt_orphan(&mut call).await;
            self.journal(&call, true);
            if caller.tasks && modern(&caller.version) {
                let dialog = caller.elicits && !call.questions.is_empty();
                return Ok(self.start_task(call, dialog).await);
            }
            if caller.elicits && modern(&caller.version) && !call.questions.is_empty() {
                return Ok(self.ask_in_dialog(call, requests.remove(0)).await);
            }
        }
        let token = cx.meta.get_progress_token();
        let max_wait = async {
            match self.opts.max_wait {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        {
            let mut state = lock(&self.state);
            state.waiting.insert(call.id.clone());
            for request in &requests {
                state.calls.insert(request.clone(), (call.id.clone(), call.key.clone()));
            }
        }
        let elicit = caller.elicits && !modern(&caller.version);
        let dialog = Mutex::new(None);
        let reply = tokio::select! {
            outcome = self.wait(&call) => {
                if outcome.as_ref().is_ok_and(|r| r.status != Status::Pending) {
                    self.journal(&call, false);
                }
                Some(self.outcome_of(&call, outcome))
            }
            _ = self.progress(&cx.peer, token) => unreachable!("progress never ends"),
            _ = self.elicit(&call, &cx.peer, &caller, elicit, &dialog) => unreachable!("the host's dialog only answers through the bridge"),
            _ = max_wait => Some(self.still_waiting(&call.id, tool)),
            _ = cx.ct.cancelled() => {
                // Left in place until the call has ended: a later cancel of it keeps this reason.
                let reason = lock(&self.state).reasons.get(&requests[0]).cloned();
                self.cancelled(&call, reason.as_deref(), tool).await;
                None
            }
        };
        {
            let mut state = lock(&self.state);
            state.waiting.remove(&call.id);
            for request in requests {
                state.reasons.remove(&request);
                if let Some(c) = state.calls.remove(&request) {
                    state.end(request, c);
                }
            }
        }
        // The answer came from elsewhere (or the call ended): the host's dialog goes first.
        let open = lock(&dialog).take();
        if let Some(request) = open {
            let reason = "askuser no longer needs this answer: it was given in the inbox, or the call ended";
            let _ = cx.peer.notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(request), Some(reason.into()))).await;
        }
        // A cancelled request gets no reply: the SDK drops what is returned.
        Ok(result(reply.unwrap_or_else(|| tool_error("cancelled".into()))).into())
    }

    /// A 2026-07-28 host with a dialog: the question goes to the inbox now, and to the
    /// host's dialog as an `input_required` result; the host's retry brings the dialog's
    /// result (or the inbox's answer, whichever came first, is returned then).
    async fn ask_in_dialog(&self, mut call: Call, origin: String) -> CallToolResponse {
        if let Some(body) = call.body.take() {
            if let Err(e) = self.connected().store(&body).await {
                return result(self.outcome(Err(e))).into();
            }
        }
        let requests = self.dialog_request(&call);
        let state = format!("{}:{}", call.id, askuser_bridge::files::random_hex(8));
        {
            let mut rounds = lock(&self.state);
            rounds.end(origin.clone(), (call.id.clone(), call.key.clone()));
            rounds.rounds.insert(state.clone(), Round { call, sent: tokio::time::Instant::now(), origin });
        }
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    /// A permission prompt: the decision as the single text block Claude Code reads
    /// (`{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`).
    /// Whatever goes wrong denies, saying why: nothing runs that the person did not allow.
    async fn approve(&self, args: Map<String, Value>, caller: &Caller) -> CallToolResponse {
        let deny = |message: String| json!({"behavior": "deny", "message": message});
        let mut body = args;
        let name = self.opts.agent_name.clone().or_else(|| caller.client.as_deref().map(host_name)).unwrap_or_else(|| "MCP agent".into());
        let mut agent = json!({"name": name, "sessionId": self.session});
        if let Some(parent) = &self.opts.parent_session {
            agent["parentSessionId"] = parent.clone().into();
        }
        body.insert("agent".into(), agent);
        self.opts.patient(&mut body);
        if let Some(cwd) = std::env::current_dir().ok().and_then(|c| c.to_str().map(str::to_owned)) {
            body.insert("cwd".into(), cwd.into());
        }
        let decision = match self.asker().await {
            Err(e) => deny(format!("{e}; nothing was run")),
            Ok(asker) => match asker.approve(&Value::Object(body), |problem| tracing::warn!("{problem}; retrying")).await {
                Ok(mut reply) => {
                    if let Some(reply) = reply.as_object_mut() {
                        reply.retain(|k, _| matches!(k.as_str(), "behavior" | "updatedInput" | "message"));
                    }
                    reply
                }
                Err(e) => deny(format!("askuser could not ask the user: {e}; nothing was run")),
            },
        };
        result(json!({"content": text(decision.to_string())})).into()
    }

    /// Reads the model's arguments into the question to ask (or the one to wait on again).
    fn prepare(&self, mut args: Map<String, Value>, caller: &Caller) -> Result<Call, String> {
        let invalid_input = format!("The {} input is invalid; fix these and call again:", caller.tool);
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
        // The same questions again on this connection while a call still waits on them: the
        // host gave up on that call (its cancel may come after this retry, or not at all).
        let resumed = {
            let mut state = lock(&self.state);
            let waiting = state.calls.values().find(|(_, k)| k.as_deref() == Some(key.as_str())).map(|(id, _)| id.clone());
            state.given_up.remove(&key).or(waiting)
        };
        let fresh = explicit.is_none() && resumed.is_none();
        let id = explicit.or(resumed).unwrap_or_else(|| format!("{}-{}", self.session, self.calls.fetch_add(1, Ordering::Relaxed) + 1));
        let name = self.opts.agent_name.clone().or_else(|| caller.client.as_deref().map(host_name)).unwrap_or_else(|| "MCP agent".into());
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
        self.opts.patient(&mut args);
        Ok(Call {
            id,
            body: Some(Value::Object(args)),
            key: Some(key),
            questions: normalized.request.questions,
            journal,
            fresh,
            earlier: false,
        })
    }

    /// A new call whose questions a host that went away asked before, from the same folder,
    /// without getting the result: waits on that question instead, while nobody has
    /// answered it. An answer is handed over only when it was given after that run ended,
    /// within `--resume-window`, and to one run: else the person is asked again, as when
    /// the bridge ended it without the person (timed out, withdrawn). Either way the result
    /// says whose question it was.
    async fn adopt_orphan(&self, call: &mut Call) {
        let (Some(journal), Some(key), true) = (&self.opts.journal, &call.journal, call.fresh) else { return };
        let now = now_ms();
        let Some(orphan) = journal.orphan(key, now) else { return };
        let id = orphan.id;
        let record = match self.connected().get(&id).await {
            Ok(record) => record,
            Err(e) => {
                tracing::debug!(%id, "an earlier session's same questions are not in this bridge ({e}): asking again");
                return;
            }
        };
        let refused = match record.status {
            Status::Pending => None,
            Status::Answered | Status::Cancelled => {
                let answered = record.answered_at.unwrap_or(record.created_at);
                let (age, window) = (now.saturating_sub(answered), self.opts.resume_window.as_millis() as u64);
                if orphan.left.is_some_and(|left| answered < left) {
                    Some("were answered before that session ended".to_owned())
                } else if age > window {
                    Some(format!("were answered {} s ago, longer ago than --resume-window ({} s)", age / 1000, window / 1000))
                } else if !journal.take(key, &id, now) {
                    Some("were answered, and another session took the answer first".to_owned())
                } else {
                    None
                }
            }
            status => Some(format!("ended {}", status.as_str())),
        };
        if let Some(why) = refused {
            tracing::info!(%id, "an earlier session's same questions from this folder {why}: asking again");
            return;
        }
        tracing::info!(
            %id,
            "an earlier session asked the same questions from this folder and went away before it got the result: \
             resuming that question ({}) instead of asking the person again",
            record.status.as_str()
        );
        call.id = id;
        call.body = None;
        call.earlier = true;
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
            Some(body) => self.connected().ask(body, true, log).await,
            None => self.connected().resume(&call.id, log).await,
        }
    }

    /// The `tools/call` result for how `call`'s ask ended, saying so when it was an earlier
    /// run's question.
    fn outcome_of(&self, call: &Call, outcome: Result<AskResult, AskError>) -> Value {
        let mut value = self.outcome(outcome);
        if call.earlier && value["structuredContent"]["status"] != "pending" {
            let note = format!(
                "This answers question {}, the same question an earlier session asked from this folder: that session ended \
                 before it got the result, so this session's call was not shown to the user.",
                call.id
            );
            if let Some(words) = value["content"][0]["text"].as_str() {
                value["content"][0]["text"] = format!("{note}\n\n{words}").into();
            }
            if let Some(structured) = value["structuredContent"].as_object_mut() {
                structured.insert("earlierSession".into(), true.into());
                if let Some(message) = structured.get("message").and_then(Value::as_str) {
                    structured["message"] = format!("{note}\n\n{message}").into();
                }
            }
        }
        value
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

    fn still_waiting(&self, id: &str, tool: &str) -> Value {
        let waited = self.opts.max_wait.unwrap_or_default().as_secs();
        let message = format!(
            "The user has not answered yet (waited {waited} s); the question is still open in their inbox at {}. \
             To keep waiting, call {tool} again with {{\"id\": \"{id}\"}} and nothing else: the answer comes back \
             at once if it arrived meanwhile. Do not assume an answer.",
            self.open_url(),
        );
        json!({
            "content": text(message.clone()),
            "structuredContent": {"id": id, "status": "pending", "answered": false, "answers": [], "message": message},
            "isError": false
        })
    }

    /// The host cancelled a waiting call: a timeout keeps the question, anything else withdraws it.
    /// No reason: the connection is closing (the host went away), which keeps it too.
    async fn cancelled(&self, call: &Call, reason: Option<&str>, tool: &str) {
        let id = &call.id;
        let Some(reason) = reason else { return };
        if is_timeout(reason) {
            tracing::info!(
                %id,
                "the host gave up waiting ({reason}); the question stays open: {tool} with the same questions, or with {{\"id\": \"{id}\"}}, picks up the answer",
            );
        } else {
            tracing::info!(%id, "the host cancelled the call ({reason}); withdrawing the question");
            self.connected().withdraw(id).await;
            self.journal(call, false);
        }
    }

    /// Asks the same questions in a handshake-era host's own dialog (`elicitation/create`),
    /// if it has one; an answer there goes to the bridge like any other, so the call ends
    /// through [`Self::wait`] either way and the inbox says where the answer came from.
    /// Never returns; while the host's dialog is open, `open` holds its request, for the
    /// caller to withdraw when the call ends first (answered in the browser).
    async fn elicit(
        &self,
        call: &Call,
        peer: &Peer<RoleServer>,
        caller: &Caller,
        elicits: bool,
        open: &Mutex<Option<rmcp::model::RequestId>>,
    ) {
        if !elicits || call.questions.is_empty() {
            return std::future::pending().await;
        }
        let titled = caller.version.as_str() >= ProtocolVersion::V_2025_11_25.as_str();
        let form = if titled { elicit::Form::Titled } else { elicit::Form::Enum };
        let mut params = elicit::request(&call.questions, &self.open_url(), form);
        if form == elicit::Form::Titled {
            params["mode"] = "form".into();
        }
        // As JSON: the SDK's typed request would add `mode`, which revisions before
        // 2025-11-25 do not have.
        let request = ServerRequest::CustomRequest(CustomRequest::new("elicitation/create", Some(params)));
        let sent = tokio::time::Instant::now();
        let Ok(handle) = peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await else {
            return std::future::pending().await;
        };
        *lock(open) = Some(handle.id.clone());
        let reply = handle.rx.await;
        *lock(open) = None;
        let reply = match reply {
            Ok(Ok(reply)) => Ok(serde_json::to_value(reply).unwrap_or_default()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => return std::future::pending().await,
        };
        match reply {
            Ok(result) => self.dialog_result(call, sent, Some(result)).await,
            Err(error) => {
                tracing::info!(id = %call.id, "the host could not show its dialog ({error}); the question stays open in the inbox")
            }
        }
        std::future::pending().await
    }

    /// What the host's own dialog (either era) gave for `call`, sent at `sent`.
    async fn dialog_result(&self, call: &Call, sent: tokio::time::Instant, result: Option<Value>) {
        let id = &call.id;
        let result = result.unwrap_or_default();
        let action = result["action"].as_str();
        if matches!(action, Some("decline" | "cancel")) && sent.elapsed() < HOST_REFUSAL {
            // Faster than anyone reads a form: the host answers for nobody (Codex headless
            // declines every form within milliseconds). Not the person's "no"; and this
            // host will not show a form, so none is sent again on this connection.
            lock(&self.state).no_dialog = true;
            tracing::info!(
                %id,
                "the host declined its dialog within {} ms, before anyone could have read it: it shows none (headless?); \
                 the question waits in the inbox",
                sent.elapsed().as_millis()
            );
            return;
        }
        let Ok(asker) = self.asker().await else { return };
        match action {
            Some("accept") => {
                let content = result.get("content").and_then(Value::as_object).cloned().unwrap_or_default();
                match elicit::selections(&call.questions, &content) {
                    Ok(answers) => {
                        let body = json!({"answers": answers});
                        if let Err(e) = once_stored(|| asker.answer(id, &body, ELICITATION_CLIENT)).await {
                            tracing::warn!(%id, "the answer from the host's dialog was not taken ({e}); the question stays open in the inbox");
                        }
                    }
                    Err(e) => tracing::warn!(%id, "the host's dialog came back incomplete ({e}); the question stays open in the inbox"),
                }
            }
            Some("decline") => {
                if let Err(e) = once_stored(|| asker.decline(id, ELICITATION_CLIENT)).await {
                    tracing::warn!(%id, "declining in the host's dialog was not taken ({e})");
                }
            }
            _ => tracing::info!(%id, "the host's dialog was dismissed; the question stays open in the inbox"),
        }
    }

    async fn progress(&self, peer: &Peer<RoleServer>, token: Option<rmcp::model::ProgressToken>) {
        let Some(token) = token else { return std::future::pending().await };
        let started = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(self.opts.progress_every);
        loop {
            tick.tick().await;
            let waited = started.elapsed().as_secs();
            let message = format!("Waiting for the user's answer ({waited} s so far; answer at {})", self.open_url());
            let _ = peer.notify_progress(ProgressNotificationParam::new(token.clone(), waited as f64).with_message(message)).await;
        }
    }

    /// Says honestly what happens to the questions still waiting when the host goes away.
    fn leave(&self, left: &Left) {
        if let Some(journal) = &self.opts.journal {
            journal.leave(now_ms());
        }
        let how = match left {
            Left::Eof => "its end of stdin closed".to_owned(),
            Left::Signal(name) => (*name).to_owned(),
            Left::Error(e) => format!("reading stdin failed: {e}"),
        };
        let state = lock(&self.state);
        let mut ids: Vec<&String> =
            state.waiting.iter().chain(state.rounds.values().map(|r| &r.call.id)).chain(state.tasks.waiting()).collect();
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
            ids.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            self.tool_name(None)
        );
    }
}

/// The key of the host's dialog among an `input_required` result's requests.
const DIALOG: &str = "askuser";

/// The inbox's name for an MCP client: the host's own name for the hosts whose clients
/// report a technical one (`codex-mcp-client`), else the client's name as reported.
fn host_name(client: &str) -> String {
    match client {
        "codex-mcp-client" => "Codex".into(),
        "gemini-cli-mcp-client" => "Gemini CLI".into(),
        "claude-code" => "Claude Code".into(),
        "opencode" => "OpenCode".into(),
        "copilot-cli" => "Copilot CLI".into(),
        "@cline/core" => "Cline".into(),
        // Qwen Code names its client after the server: qwen-cli-mcp-client-askuser.
        other if other.starts_with("qwen-cli-mcp-client") => "Qwen Code".into(),
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
    fn the_inbox_names_each_host_as_people_know_it() {
        let names: Vec<String> = [
            "codex-mcp-client",
            "gemini-cli-mcp-client",
            "claude-code",
            "opencode",
            "copilot-cli",
            "@cline/core",
            "qwen-cli-mcp-client-askuser",
            "my-agent",
        ]
        .into_iter()
        .map(host_name)
        .collect();
        assert_eq!(names, ["Codex", "Gemini CLI", "Claude Code", "OpenCode", "Copilot CLI", "Cline", "Qwen Code", "my-agent"]);
    }

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
