//! `askuser acp -- AGENT…`: runs an Agent Client Protocol agent headless, as its ACP
//! client over the agent's stdio, and asks the person in the inbox what the agent would
//! ask its editor: a `session/request_permission` as an approval (`POST /v1/approve`),
//! an `elicitation/create` form (how claude-agent-acp asks Claude Code's
//! `AskUserQuestion`) as questions (`POST /v1/ask`).
//!
//! One prompt (`--prompt`, else standard input) goes to one new session in the current
//! folder; the agent's reply streams to stdout, the tools it runs are named on stderr,
//! and the command ends with the turn. The agent may read and write files in that
//! folder only (`fs/*`); it gets no terminal. A session that the agent starts in its mode
//! `auto`, where it decides on its tool calls itself (claude-agent-acp's, by default), is
//! switched to its `default`, where it asks.
//!
//! The person's answer is mapped onto what the agent offered, by kind: an allow is the
//! agent's `allow_once` even when askuser kept an "always" rule, because an agent's
//! "always" is its own and usually broader (claude-agent-acp's allows every edit for
//! the session); askuser's rule answers the next such call at once anyway. A bridge
//! that stays unreachable refuses the call rather than leave the agent waiting.

use crate::agent::{AskError, Asker};
use crate::client::BridgeArgs;
use crate::term::{err, fail};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, CreateElicitationRequest, CreateElicitationResponse, ElicitationAcceptAction, ElicitationAction,
    ElicitationCapabilities, ElicitationContentValue, ElicitationFormCapabilities, ElicitationMode, ElicitationScope,
    FileSystemCapabilities, Implementation, InitializeRequest, NewSessionRequest, PermissionOption, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionModeId, SessionModeState, SessionNotification, SessionUpdate, SetSessionModeRequest, StopReason,
    TextContent, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error as FsError, ErrorCode, Lines, RequestCancellation};
use anyhow::{anyhow, Context};
use askuser_bridge::files;
use askuser_bridge::runtime;
use askuser_core::{AskResult, Status};
use clap::Args;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

#[derive(Debug, Clone, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub bridge: BridgeArgs,
    /// The prompt (default: standard input, read to its end).
    #[arg(long)]
    pub prompt: Option<String>,
    /// The agent's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT")]
    pub command: Vec<String>,
}

/// How long the bridge may stay unreachable while the agent waits on it before the
/// call is refused: a restarting bridge is back well within it (the ask resumes by its
/// id), and a bridge that is gone costs the agent no more.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long a connection that ended is still read after the agent exited: its last
/// lines (the turn's end) may come after the exit is seen.
const LAST_WORDS: Duration = Duration::from_secs(2);

/// How long an agent whose connection failed is given to be seen exiting.
const GONE: Duration = Duration::from_millis(500);

pub fn run(args: AcpArgs) -> ExitCode {
    let prompt = match read_prompt(args.prompt.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(format!("{e:#}")),
    };
    let asker = match files::data_dir(args.bridge.data_dir.as_deref())
        .map_err(anyhow::Error::from)
        .and_then(|dir| Ok((args.bridge.endpoint(&dir)?, dir)))
    {
        Ok((endpoint, dir)) => Asker::new(endpoint, Some(dir)),
        Err(e) => return fail(format!("{e:#}")),
    };
    let rt = runtime();
    let outcome = rt.block_on(async {
        // Unreachable at the start is an error: the agent is not started for nothing.
        crate::ask::reachable(&asker.endpoint()).await.map_err(|e| anyhow!(e))?;
        converse(&args.command, asker, prompt).await
    });
    rt.shutdown_background();
    match outcome {
        Ok(StopReason::EndTurn) => ExitCode::SUCCESS,
        Ok(reason) => {
            err!("askuser: the agent ended its turn: {}", json!(reason).as_str().unwrap_or("?"));
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("{e:#}")),
    }
}

/// The prompt: `--prompt`, else all of standard input (not a terminal's).
fn read_prompt(flag: Option<&str>) -> anyhow::Result<String> {
    let text = match flag {
        Some(text) => text.to_owned(),
        None if std::io::IsTerminal::is_terminal(&std::io::stdin()) => {
            anyhow::bail!("expected a prompt: give it with --prompt TEXT or on standard input")
        }
        // `echo … |` ends it with a newline the agent need not read.
        None => std::io::read_to_string(std::io::stdin())
            .context("cannot read the prompt from standard input")?
            .trim_end_matches(['\r', '\n'])
            .to_owned(),
    };
    anyhow::ensure!(!text.trim().is_empty(), "the prompt is empty: give it with --prompt TEXT or on standard input");
    Ok(text)
}

/// What the handlers share.
struct Shared {
    asker: Asker,
    /// The session's folder, canonical.
    cwd: PathBuf,
    /// The same, the only place `fs/*` reaches.
    folder: Folder,
    /// The agent's name in the inbox: its `agentInfo`, else its program's name.
    agent: Mutex<String>,
    /// The session's id, once `session/new` answered.
    session: Mutex<String>,
    /// The tool names of the tool calls seen so far, for a permission request that
    /// does not repeat its tool's name.
    tools: Mutex<HashMap<String, String>>,
    /// The reply printed so far does not end its line.
    open_line: AtomicBool,
}

impl Shared {
    fn who(&self) -> Value {
        json!({"name": *crate::lock(&self.agent), "sessionId": *crate::lock(&self.session)})
    }

    /// An id for the ask about the agent's `call` (its tool call id): the same call
    /// resumes the same question, another session's never does.
    fn id(&self, kind: &str, call: Option<&str>) -> String {
        let call = call.map_or_else(|| files::random_hex(8), str::to_owned);
        let id = format!("{kind}-acp-{}-{call}", crate::lock(&self.session));
        id.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.:".contains(*c)).take(128).collect()
    }
}

/// Starts the agent, speaks ACP with it until the prompt's turn ends, and stops it.
async fn converse(command: &[String], asker: Asker, prompt: String) -> anyhow::Result<StopReason> {
    let program = &command[0];
    let mut child = tokio::process::Command::new(program)
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start the agent `{program}`"))?;
    let (stdin, stdout) = (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"));
    // ACP's stdio transport: one JSON-RPC message a line, each way.
    let incoming = futures_util::stream::unfold(tokio::io::BufReader::new(stdout).lines(), |mut lines| async move {
        lines.next_line().await.transpose().map(|line| (line, lines))
    });
    let outgoing = futures_util::sink::unfold(stdin, |mut stdin, line: String| async move {
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize()).context("cannot read the current folder")?;
    let folder = Folder::open(cwd.clone()).with_context(|| format!("cannot open the current folder {}", cwd.display()))?;
    let name = Path::new(program).file_name().map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let shared = Arc::new(Shared {
        asker,
        cwd,
        folder,
        agent: Mutex::new(name),
        session: Mutex::new(String::new()),
        tools: Mutex::new(HashMap::new()),
        open_line: AtomicBool::new(false),
    });

    let turn = Client
        .v1()
        .name("askuser")
        .on_receive_notification(
            {
                let shared = shared.clone();
                async move |n: SessionNotification, _cx| {
                    show(&shared, n.update);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: RequestPermissionRequest, responder: Responder<RequestPermissionResponse>, cx: ConnectionTo<Agent>| {
                    // The person may take hours: the wait runs beside the connection.
                    let shared = shared.clone();
                    cx.spawn(async move {
                        match permission(&shared, request, responder.cancellation()).await {
                            Some(response) => responder.respond(response),
                            None => Ok(()),
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: CreateElicitationRequest, responder: Responder<CreateElicitationResponse>, cx: ConnectionTo<Agent>| {
                    let shared = shared.clone();
                    cx.spawn(async move {
                        match elicit(&shared, request, responder.cancellation()).await {
                            Some(action) => responder.respond(CreateElicitationResponse::new(action)),
                            None => Ok(()),
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: ReadTextFileRequest, responder: Responder<ReadTextFileResponse>, _cx| {
                    responder.respond_with_result(shared.folder.read(&request).map(ReadTextFileResponse::new))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: WriteTextFileRequest, responder: Responder<WriteTextFileResponse>, _cx| {
                    responder.respond_with_result(shared.folder.write(&request).map(|()| WriteTextFileResponse::new()))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(Lines::new(outgoing, incoming), {
            let shared = shared.clone();
            async move |cx: ConnectionTo<Agent>| {
                let init = InitializeRequest::new(ProtocolVersion::V1)
                    .client_capabilities(capabilities())
                    .client_info(Implementation::new("askuser", env!("CARGO_PKG_VERSION")));
                let init = cx.send_request(init).block_task().await?;
                if let Some(info) = init.agent_info {
                    *crate::lock(&shared.agent) = info.title.unwrap_or(info.name);
                }
                let session = cx.send_request(NewSessionRequest::new(shared.cwd.clone())).block_task().await?;
                *crate::lock(&shared.session) = session.session_id.to_string();
                if let Some(mode) = session.modes.as_ref().and_then(asking_mode) {
                    err!("askuser: the agent started in its mode `auto`, where it decides on its tool calls itself; switched to `{mode}`, where it asks");
                    cx.send_request(SetSessionModeRequest::new(session.session_id.clone(), mode)).block_task().await?;
                }
                let prompt = PromptRequest::new(session.session_id, vec![ContentBlock::Text(TextContent::new(prompt))]);
                Ok(cx.send_request(prompt).block_task().await?.stop_reason)
            }
        });
    tokio::pin!(turn);
    let ended = tokio::select! {
        ended = &mut turn => ended,
        status = child.wait() => match tokio::time::timeout(LAST_WORDS, &mut turn).await {
            Ok(ended) => ended,
            Err(_) => return Err(anyhow!("the agent `{program}` exited ({}) before its turn ended", describe(status))),
        },
    };
    // The reply ends its line (claude-agent-acp's last words do not), so that what the
    // terminal shows next starts on a line of its own.
    if shared.open_line.load(Ordering::Relaxed) {
        let _ = writeln!(std::io::stdout());
    }
    let _ = std::io::stdout().flush();
    let reason = match ended {
        Ok(reason) => reason,
        Err(e) if agent_client_protocol::is_incoming_transport_closed(&e) => {
            return Err(match tokio::time::timeout(LAST_WORDS, child.wait()).await {
                Ok(status) => anyhow!("the agent `{program}` exited ({}) before its turn ended", describe(status)),
                Err(_) => anyhow!("the agent `{program}` closed its output before its turn ended"),
            });
        }
        Err(e) => {
            // An agent that died as its prompt was sent fails the write first (a broken
            // pipe, not the end of its output): its exit is the news, if it has exited.
            if let Ok(status) = tokio::time::timeout(GONE, child.wait()).await {
                return Err(anyhow!("the agent `{program}` exited ({}) before its turn ended", describe(status)));
            }
            let data = e.data.as_ref().map(|d| format!(": {d}")).unwrap_or_default();
            return Err(anyhow!("the agent `{program}` failed: {}{data}", e.message));
        }
    };
    // Its stdin closed, the agent may finish on its own; then it is stopped.
    if tokio::time::timeout(LAST_WORDS, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
    Ok(reason)
}

fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("cannot tell how: {e}"),
    }
}

/// What askuser offers the agent: files in the session's folder and forms; no terminal.
fn capabilities() -> ClientCapabilities {
    ClientCapabilities::new()
        .fs(FileSystemCapabilities::new().read_text_file(true).write_text_file(true))
        .elicitation(ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()))
}

/// The mode to switch a new session to, so that the person decides on the agent's tool
/// calls: `default` when the agent started it in `auto` and offers `default`; none else.
///
/// claude-agent-acp (0.101.0) starts a session in `auto` ("Claude handles permission
/// decisions") unless the user's Claude Code settings name a `permissions.defaultMode`:
/// there Claude Code allows or refuses each call itself (`touch ready.txt` in the folder
/// runs unasked) and nothing reaches askuser. Its `default` ("Manual") asks for every call
/// that is not read-only. ACP does not say whether `auto` was the user's own choice, so a
/// user's `auto` is switched too: askuser acp is for the person to decide. Any other mode
/// (`acceptEdits`, `plan`, another agent's `auto` beside no `default`) is kept.
fn asking_mode(modes: &SessionModeState) -> Option<SessionModeId> {
    let offered = modes.available_modes.iter().any(|m| &*m.id.0 == "default");
    (&*modes.current_mode_id.0 == "auto" && offered).then(|| SessionModeId::new("default"))
}

/// The agent's reply on stdout as it streams; the tools it starts, named on stderr.
fn show(shared: &Shared, update: SessionUpdate) {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => {
            if let ContentBlock::Text(text) = chunk.content {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(crate::term::safe(&text.text).as_bytes());
                if !text.text.is_empty() {
                    shared.open_line.store(!text.text.ends_with('\n'), Ordering::Relaxed);
                }
                let _ = out.flush();
            }
        }
        SessionUpdate::ToolCall(call) => {
            let meta = call.meta.as_ref().and_then(|m| m.get("claudeCode")).and_then(|c| c.get("toolName")).and_then(Value::as_str);
            if let Some(tool) = call.name.as_deref().or(meta) {
                crate::lock(&shared.tools).insert(call.tool_call_id.to_string(), tool.to_owned());
            }
            err!("askuser: tool: {}", crate::term::one_line(&call.title));
        }
        _ => {}
    }
}

/// Asks the person whether the agent may make its tool call, and picks the agent's
/// option that says so; None when the agent took the request back.
async fn permission(shared: &Shared, request: RequestPermissionRequest, cancel: RequestCancellation) -> Option<RequestPermissionResponse> {
    let call = serde_json::to_value(&request.tool_call).unwrap_or_default();
    let seen = call["toolCallId"].as_str().and_then(|id| crate::lock(&shared.tools).get(id).cloned());
    let mut body = approval(&call, seen.as_deref(), &shared.cwd.to_string_lossy());
    body["agent"] = shared.who();
    body["id"] = shared.id("approve", call["toolCallId"].as_str()).into();
    let id = body["id"].as_str().unwrap_or_default().to_owned();
    err!("askuser: waiting for the person to allow {} (question {id})", body["tool_name"].as_str().unwrap_or_default());
    let decided = tokio::select! {
        decided = patiently(&shared.asker, || shared.asker.approve_once(&body)) => decided,
        () = cancel.cancelled() => {
            shared.asker.withdraw(&id).await;
            return None;
        }
    };
    let (allow, message) = match decided {
        Ok(reply) => (reply["behavior"] == "allow", reply["message"].as_str().map(str::to_owned)),
        Err(e) => {
            err!("askuser: cannot ask the person ({e}); refusing the tool call");
            (false, Some(format!("askuser could not ask the person: {e}")))
        }
    };
    if let Some(m) = &message {
        err!("askuser: {m}");
    }
    let mut response = RequestPermissionResponse::new(choose(&request.options, allow));
    // ACP's outcome is an option's id only; the person's words ride along for agents
    // that read them.
    if let Some(m) = message {
        response = response.meta(Map::from_iter([("askuser".to_owned(), json!({"message": m}))]));
    }
    Some(response)
}

/// The agent's option for an allow (`allow_once`, else `allow_always`) or a denial
/// (`reject_once`, else `reject_always`); `cancelled` when it offered none.
fn choose(options: &[PermissionOption], allow: bool) -> RequestPermissionOutcome {
    let kinds = if allow {
        [PermissionOptionKind::AllowOnce, PermissionOptionKind::AllowAlways]
    } else {
        [PermissionOptionKind::RejectOnce, PermissionOptionKind::RejectAlways]
    };
    kinds.iter().find_map(|kind| options.iter().find(|o| o.kind == *kind)).map_or(RequestPermissionOutcome::Cancelled, |o| {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone()))
    })
}

/// `POST /v1/approve`'s body for an ACP tool call (`toolCallId`, `name`, `title`,
/// `kind`, `rawInput`, `content`): Claude Code's tool and input when the agent names
/// one of its tools (claude-agent-acp does), else the nearest askuser shows well:
/// a command for `execute`, an edit from the diff for `edit`, a fetch for `fetch`,
/// the tool's arguments for anything else.
fn approval(call: &Value, seen: Option<&str>, cwd: &str) -> Value {
    let raw = call.get("rawInput").cloned().unwrap_or(Value::Null);
    let mut input = match &raw {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => Map::from_iter([("input".to_owned(), other.clone())]),
    };
    let named = call["name"].as_str().or(call["_meta"]["claudeCode"]["toolName"].as_str()).or(seen);
    let title = call["title"].as_str().filter(|t| !t.trim().is_empty());
    let text = |key: &str| input.get(key).and_then(Value::as_str).is_some();
    let claudes = match named {
        Some("Bash") => text("command"),
        Some("Edit" | "MultiEdit" | "Write") => text("file_path"),
        Some("WebFetch") => text("url"),
        _ => false,
    };
    let diffs: Vec<&Value> = call["content"].as_array().into_iter().flatten().filter(|c| c["type"] == "diff").collect();
    let tool = match (claudes, call["kind"].as_str(), diffs.as_slice()) {
        (true, ..) => named.unwrap_or_default().to_owned(),
        (false, Some("execute"), _) => {
            let command = match &raw["command"] {
                Value::String(c) => Some(c.clone()),
                Value::Array(words) => {
                    Some(words.iter().map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned)).collect::<Vec<_>>().join(" "))
                }
                _ => title.map(str::to_owned),
            };
            input = Map::from_iter([("command".to_owned(), command.unwrap_or_default().into())]);
            if let Some(t) = title.filter(|t| Some(*t) != input["command"].as_str()) {
                input.insert("description".into(), t.into());
            }
            "Bash".to_owned()
        }
        (false, Some("edit" | "delete" | "move"), [diff]) => {
            let path = diff["path"].clone();
            match diff["oldText"].as_str() {
                Some(old) => {
                    input = Map::from_iter([
                        ("file_path".to_owned(), path),
                        ("old_string".to_owned(), old.into()),
                        ("new_string".to_owned(), diff["newText"].clone()),
                    ]);
                    "Edit".to_owned()
                }
                None => {
                    input = Map::from_iter([("file_path".to_owned(), path), ("content".to_owned(), diff["newText"].clone())]);
                    "Write".to_owned()
                }
            }
        }
        (false, Some("fetch"), _) if raw["url"].is_string() => {
            input = Map::from_iter([("url".to_owned(), raw["url"].clone())]);
            "WebFetch".to_owned()
        }
        _ => named.or(title).unwrap_or("tool").to_owned(),
    };
    json!({"tool_name": tool, "input": input, "tool_use_id": call["toolCallId"], "cwd": cwd})
}

/// Runs `attempt` (an ask by id: a retry waits on the same question) again while the
/// bridge cannot be reached, until it has been unreachable for [`PATIENCE`].
async fn patiently<T, F>(asker: &Asker, mut attempt: impl FnMut() -> F) -> Result<T, AskError>
where
    F: std::future::Future<Output = Result<T, AskError>>,
{
    let mut failing_since = None;
    loop {
        let started = tokio::time::Instant::now();
        match attempt().await {
            Err(AskError::Unreachable { url, message }) => {
                // An attempt that waited a while had reached the bridge: a new outage.
                if started.elapsed() > Duration::from_secs(2) {
                    failing_since = None;
                }
                if failing_since.get_or_insert_with(tokio::time::Instant::now).elapsed() >= PATIENCE {
                    return Err(AskError::Unreachable { url, message });
                }
                err!("askuser: {message}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                asker.refresh();
            }
            other => return other,
        }
    }
}

/// Asks a form's fields as questions and gives back the person's answers as the
/// form's content; None when the agent took the request back.
async fn elicit(shared: &Shared, request: CreateElicitationRequest, cancel: RequestCancellation) -> Option<ElicitationAction> {
    let ElicitationMode::Form(form) = request.mode else {
        err!("askuser: the agent asked to open a page (a URL elicitation), which askuser does not do; cancelled");
        return Some(ElicitationAction::Cancel);
    };
    let call = match &form.scope {
        ElicitationScope::Session(s) => s.tool_call_id.as_ref().map(ToString::to_string),
        _ => None,
    };
    let schema = serde_json::to_value(&form.requested_schema).unwrap_or_default();
    let fields = Fields::read(&request.message, &schema);
    let id = shared.id("ask", call.as_deref());
    let ask = json!({"id": id, "questions": fields.questions, "agent": shared.who()});
    err!("askuser: waiting for the person to answer (question {id})");
    let asked = tokio::select! {
        asked = patiently(&shared.asker, || shared.asker.ask(&ask, false, |_| {})) => asked,
        () = cancel.cancelled() => {
            shared.asker.withdraw(&id).await;
            return None;
        }
    };
    Some(match asked {
        Ok(result) if result.status == Status::Answered => {
            let content = serde_json::from_value(Value::Object(fields.content(&result))).unwrap_or_default();
            ElicitationAction::Accept(ElicitationAcceptAction::new().content(Some::<BTreeMap<String, ElicitationContentValue>>(content)))
        }
        // The person's own "no", in the inbox.
        Ok(result) if result.status == Status::Cancelled => ElicitationAction::Decline,
        Ok(_) => ElicitationAction::Cancel,
        Err(e) => {
            err!("askuser: cannot ask the person ({e}); cancelled");
            ElicitationAction::Cancel
        }
    })
}

/// A form's fields as askuser questions, and how each answer goes back.
struct Fields {
    questions: Vec<Value>,
    fields: Vec<Field>,
}

struct Field {
    key: String,
    kind: Kind,
    /// Each option's label and the value the form wants for it.
    values: Vec<(String, Value)>,
    /// The field beside it for the person's own text (claude-agent-acp's
    /// `question_N_custom`, its "Other" box), if the form has one.
    other: Option<String>,
}

#[derive(PartialEq)]
enum Kind {
    One,
    Many,
    Flag,
    Text,
    Number,
    Integer,
}

impl Fields {
    /// One question per field, in the order of their names with numbers by value
    /// (`question_2` before `question_10`; the SDK keeps the fields in a map):
    /// a pick from `oneOf`/`enum`, several from an array's `anyOf`/`oneOf`/`enum`, Yes or
    /// No for a boolean, the person's text for anything else. A text field named after
    /// a pick field plus `_custom` is that pick's "Other" row, not a question.
    fn read(message: &str, schema: &Value) -> Fields {
        let empty = Map::new();
        let properties = schema["properties"].as_object().unwrap_or(&empty);
        let mut keys: Vec<&String> = properties.keys().collect();
        keys.sort_by_key(|k| natural(k));
        let picks = |key: &str| properties.get(key).is_some_and(|p| p["oneOf"].is_array() || p["enum"].is_array() || p["type"] == "array");
        let companion = |key: &String| {
            key.strip_suffix("_custom").is_some_and(|base| properties.contains_key(base) && picks(base))
                && properties.get(key.as_str()).is_some_and(|p| p["type"] == "string")
        };
        let asked: Vec<&String> = keys.into_iter().filter(|k| !companion(k)).collect();
        let mut fields = Fields { questions: Vec::new(), fields: Vec::new() };
        for key in &asked {
            let p = &properties[key.as_str()];
            let choices = if p["type"] == "array" { &p["items"] } else { p };
            let listed = choices["oneOf"].as_array().or(choices["anyOf"].as_array());
            let mut values: Vec<(String, Value, Option<String>)> = match (listed, choices["enum"].as_array()) {
                (Some(options), _) => options
                    .iter()
                    .map(|o| {
                        let label = o["title"].as_str().map_or_else(|| plain(&o["const"]), str::to_owned);
                        (label, o["const"].clone(), o["description"].as_str().map(str::to_owned))
                    })
                    .collect(),
                (None, Some(values)) => values.iter().map(|v| (plain(v), v.clone(), None)).collect(),
                (None, None) => Vec::new(),
            };
            // Titles that repeat cannot tell their options apart: the values can.
            let labels: Vec<&String> = values.iter().map(|(l, ..)| l).collect();
            if labels.iter().enumerate().any(|(i, l)| labels[..i].contains(l)) {
                values.iter_mut().for_each(|(label, value, _)| *label = plain(value));
            }
            let kind = match p["type"].as_str() {
                Some("array") => Kind::Many,
                Some("boolean") => {
                    values = vec![("Yes".into(), true.into(), None), ("No".into(), false.into(), None)];
                    Kind::Flag
                }
                _ if !values.is_empty() => Kind::One,
                Some("number") => Kind::Number,
                Some("integer") => Kind::Integer,
                _ => Kind::Text,
            };
            let text = p["description"].as_str().filter(|d| !d.trim().is_empty());
            let title = p["title"].as_str().filter(|t| !t.trim().is_empty());
            let question = text.or((asked.len() == 1).then_some(message)).or(title).unwrap_or(key).to_owned();
            let options: Vec<Value> = values
                .iter()
                .map(|(label, _, description)| match description {
                    Some(d) => json!({"label": label, "description": d}),
                    None => json!({"label": label}),
                })
                .collect();
            let mut q = json!({"question": question, "options": options, "multiSelect": kind == Kind::Many});
            if let Some(t) = title {
                q["header"] = t.into();
            }
            fields.questions.push(q);
            let other = Some(format!("{key}_custom")).filter(|c| companion(c));
            let values = values.into_iter().map(|(label, value, _)| (label, value)).collect();
            fields.fields.push(Field { key: (*key).clone(), kind, values, other });
        }
        fields
    }

    /// The form's content for the person's answers (one per question, in order).
    /// A pick gives its option's value; the "Other" text goes to the pick's "Other"
    /// field when the form has one (with notes on a pick there too, as Claude Code
    /// reads them), else it is the field's value.
    fn content(&self, result: &AskResult) -> Map<String, Value> {
        let mut content = Map::new();
        for (field, answer) in self.fields.iter().zip(&result.answers) {
            let value = |label: &String| field.values.iter().find(|(l, _)| l == label).map(|(_, v)| v.clone());
            let picked: Vec<Value> = answer.selected_options.iter().filter_map(value).collect();
            let own = answer.custom.clone().filter(|c| !c.trim().is_empty());
            let beside = own.clone().or_else(|| answer.notes.clone().filter(|_| field.kind == Kind::One));
            if let (Some(other), Some(text)) = (&field.other, &beside) {
                content.insert(other.clone(), text.clone().into());
            }
            let own = own.filter(|_| field.other.is_none());
            let v = match field.kind {
                Kind::Many => Some(Value::Array(picked.into_iter().chain(own.map(Value::from)).collect())),
                Kind::One | Kind::Flag => picked.into_iter().next().or(own.map(Value::from)),
                Kind::Number => own.and_then(|t| t.trim().parse::<f64>().ok()).map(Value::from),
                Kind::Integer => own.and_then(|t| t.trim().parse::<i64>().ok()).map(Value::from),
                Kind::Text => own.map(Value::from),
            };
            if let Some(v) = v.filter(|v| v.as_array().is_none_or(|a| !a.is_empty())) {
                content.insert(field.key.clone(), v);
            }
        }
        content
    }
}

/// A JSON value as a label: a string as it is, anything else as JSON.
fn plain(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// A key that sorts `question_2` before `question_10`.
fn natural(key: &str) -> Vec<(String, u64)> {
    let mut parts = Vec::new();
    let mut rest = key;
    while !rest.is_empty() {
        let text_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let digits_end = rest[text_end..].find(|c: char| !c.is_ascii_digit()).map_or(rest.len(), |i| text_end + i);
        parts.push((rest[..text_end].to_owned(), rest[text_end..digits_end].parse().unwrap_or(0)));
        rest = &rest[digits_end..];
    }
    parts
}

/// The session's folder, as the agent's `fs/*` requests reach it: every file is opened
/// beneath the folder's handle, the kernel refusing any way out (a symlink leading
/// outside, even one swapped in while the request runs; `..`); nothing is checked by name
/// and then opened. A symlink inside that leads elsewhere inside is followed.
struct Folder {
    /// Its canonical path, as the agent was told it.
    root: PathBuf,
    dir: cap_std::fs::Dir,
}

impl Folder {
    fn open(root: PathBuf) -> std::io::Result<Folder> {
        let dir = cap_std::fs::Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Folder { root, dir })
    }

    /// `path` (absolute, as the agent names files) relative to the folder, if it is written
    /// as one of its files; a refusal named on stderr too, else.
    fn relative<'a>(&self, path: &'a Path) -> Result<&'a Path, FsError> {
        if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(refuse(format!("expected an absolute path without `..`, got {}", path.display())));
        }
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => Ok(rel),
            _ => Err(self.outside(path)),
        }
    }

    fn outside(&self, path: &Path) -> FsError {
        refuse(format!("{} is outside the session's folder {}", path.display(), self.root.display()))
    }

    /// A file operation's failure, as the agent reads it: a way out the kernel refused
    /// is named as such.
    fn failed(&self, path: &Path, doing: &str, e: std::io::Error) -> FsError {
        // cap-std's "a path led outside of the filesystem" (openat2's EXDEV, or its own
        // walk's refusal) carries no OS error; a plain EACCES does.
        if e.kind() == std::io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
            return self.outside(path);
        }
        io(path, doing, e)
    }

    fn options(write: bool) -> cap_std::fs::OpenOptions {
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(!write).write(write).create(write);
        // A FIFO does not hold the handler up at its open (it is refused just after).
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::custom_flags(&mut options, rustix::fs::OFlags::NONBLOCK.bits() as i32);
        options
    }

    /// A regular file, opened beneath the folder.
    fn file(&self, path: &Path, rel: &Path, write: bool) -> Result<std::fs::File, FsError> {
        let doing = if write { "write" } else { "read" };
        let file = self.dir.open_with(rel, &Folder::options(write)).map_err(|e| self.failed(path, doing, e))?.into_std();
        let meta = file.metadata().map_err(|e| io(path, doing, e))?;
        if !meta.is_file() {
            return Err(refuse(format!("{} is not a regular file", path.display())));
        }
        Ok(file)
    }

    /// `fs/read_text_file`: the file's text, from line `line` (1-based), at most `limit` lines.
    fn read(&self, request: &ReadTextFileRequest) -> Result<String, FsError> {
        let rel = self.relative(&request.path)?;
        let text = std::io::read_to_string(self.file(&request.path, rel, false)?).map_err(|e| io(&request.path, "read", e))?;
        let skip = request.line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = request.limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// `fs/write_text_file`: the file made or replaced with `content` (its folders made
    /// too). A file with another name (a hard link, which may be outside the folder) is
    /// refused: writing it would change the file under that name too.
    fn write(&self, request: &WriteTextFileRequest) -> Result<(), FsError> {
        let path = &request.path;
        let rel = self.relative(path)?;
        // Opened without truncating: the links are counted on the file opened, before
        // anything in it changes. Its folders are made only when they are missing.
        let mut file = match self.file(path, rel, true) {
            Err(e) if e.code == ErrorCode::RESOURCE_NOT_FOUND => {
                if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                    self.dir.create_dir_all(parent).map_err(|e| self.failed(path, "write", e))?;
                }
                self.file(path, rel, true)?
            }
            opened => opened?,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let links = file.metadata().map_err(|e| io(path, "write", e))?.nlink();
            if links > 1 {
                return Err(refuse(format!(
                    "{} has {links} names (hard links), which may be outside the session's folder: writing it would change the file under each",
                    path.display()
                )));
            }
        }
        let failed = |e| io(path, "write", e);
        file.set_len(0).map_err(failed)?;
        file.write_all(request.content.as_bytes()).map_err(failed)
    }
}

/// A file request refused, named on stderr too.
fn refuse(why: String) -> FsError {
    err!("askuser: refused the agent's file request: {why}");
    FsError::new(ErrorCode::INVALID_PARAMS, why)
}

/// A file operation's failure, as the agent reads it.
fn io(path: &Path, doing: &str, e: std::io::Error) -> FsError {
    let code = if e.kind() == std::io::ErrorKind::NotFound { ErrorCode::RESOURCE_NOT_FOUND } else { ErrorCode::INTERNAL_ERROR };
    FsError::new(code, format!("cannot {doing} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use askuser_core::{resolve, Request, Selection};

    /// What claude-agent-acp 0.101.0 sends for a Bash and an Edit call (its own
    /// `buildClaudePermissionPresentation`, run on these inputs).
    fn bash() -> Value {
        json!({"toolCallId": "toolu_B", "name": "Bash", "status": "pending",
               "rawInput": {"command": "cargo test --all", "description": "Run the tests"},
               "title": "cargo test --all", "kind": "execute",
               "content": [{"type": "content", "content": {"type": "text", "text": "Run the tests"}}]})
    }

    #[test]
    fn claude_agent_acps_calls_are_asked_as_claude_codes_tools() {
        let a = approval(&bash(), None, "/work/app");
        assert_eq!(
            a,
            json!({"tool_name": "Bash", "input": {"command": "cargo test --all", "description": "Run the tests"},
                   "tool_use_id": "toolu_B", "cwd": "/work/app"})
        );
        let edit = json!({"toolCallId": "toolu_E", "name": "Edit", "rawInput": {"file_path": "/work/app/src/main.rs", "old_string": "a", "new_string": "b"},
                          "title": "Edit src/main.rs", "kind": "edit",
                          "content": [{"type": "diff", "path": "/work/app/src/main.rs", "oldText": "a", "newText": "b"}]});
        assert_eq!(approval(&edit, None, "/w")["input"]["old_string"], "a");
        // The name from the tool call seen before, when the request leaves it out.
        let mut bare = bash();
        bare.as_object_mut().unwrap().remove("name");
        assert_eq!(approval(&bare, Some("Bash"), "/w")["tool_name"], "Bash");
    }

    #[test]
    fn other_agents_calls_are_asked_as_the_nearest_tool_by_kind() {
        let codex = json!({"toolCallId": "c1", "title": "ls -la", "kind": "execute", "rawInput": {"command": ["ls", "-la"], "cwd": "/w"}});
        assert_eq!(approval(&codex, None, "/w")["input"], json!({"command": "ls -la"}));
        let gemini = json!({"toolCallId": "g1", "title": "Writing to notes.txt", "kind": "edit",
                            "content": [{"type": "diff", "path": "/w/notes.txt", "oldText": null, "newText": "hi"}]});
        let a = approval(&gemini, None, "/w");
        assert_eq!((a["tool_name"].as_str(), &a["input"]), (Some("Write"), &json!({"file_path": "/w/notes.txt", "content": "hi"})));
        let mcp = json!({"toolCallId": "m1", "title": "Create an issue", "kind": "other", "name": "mcp__github__create_issue", "rawInput": {"title": "x"}});
        assert_eq!(approval(&mcp, None, "/w")["tool_name"], "mcp__github__create_issue");
        let nameless = json!({"toolCallId": "n1", "title": "Think hard", "kind": "think", "rawInput": "why"});
        let a = approval(&nameless, None, "/w");
        assert_eq!((a["tool_name"].as_str(), &a["input"]), (Some("Think hard"), &json!({"input": "why"})));
    }

    #[test]
    fn a_session_claude_agent_acp_starts_in_auto_is_switched_to_the_mode_that_asks() {
        // What claude-agent-acp 0.101.0's `session/new` reports with no `defaultMode` in the
        // user's settings.
        let claude = |current: &str| -> SessionModeState {
            serde_json::from_value(json!({"currentModeId": current, "availableModes": [
                {"id": "default", "name": "Manual", "description": "Always ask before making changes"},
                {"id": "acceptEdits", "name": "Accept edits", "description": "Automatically accept all file edits"},
                {"id": "plan", "name": "Plan", "description": "Create a plan before making changes"},
                {"id": "auto", "name": "Auto", "description": "Claude handles permission decisions"}]}))
            .unwrap()
        };
        assert_eq!(asking_mode(&claude("auto")), Some(SessionModeId::new("default")));
        assert_eq!(asking_mode(&claude("default")), None);
        assert_eq!(asking_mode(&claude("acceptEdits")), None, "a mode the user chose is kept");
        // An agent whose `auto` is its usual mode, with no `default` beside it, is left as it is.
        let codex: SessionModeState = serde_json::from_value(json!({"currentModeId": "auto", "availableModes": [
            {"id": "read-only", "name": "Read Only"}, {"id": "auto", "name": "Default"}, {"id": "full-access", "name": "Full Access"}]}))
        .unwrap();
        assert_eq!(asking_mode(&codex), None);
    }

    #[test]
    fn the_decision_picks_the_agents_option_of_that_kind() {
        let options: Vec<PermissionOption> = serde_json::from_value(json!([
            {"optionId": "allow-once", "name": "Yes", "kind": "allow_once"},
            {"optionId": "allow-with-updates", "name": "Yes, allow all edits during this session", "kind": "allow_always"},
            {"optionId": "reject", "name": "No", "kind": "reject_once"}]))
        .unwrap();
        let picked = |allow| serde_json::to_value(choose(&options, allow)).unwrap();
        assert_eq!(picked(true), json!({"outcome": "selected", "optionId": "allow-once"}));
        assert_eq!(picked(false), json!({"outcome": "selected", "optionId": "reject"}));
        assert_eq!(serde_json::to_value(choose(&options[1..2], true)).unwrap()["optionId"], "allow-with-updates");
        assert_eq!(serde_json::to_value(choose(&options[..2], false)).unwrap(), json!({"outcome": "cancelled"}));
    }

    /// claude-agent-acp 0.101.0's form for two of Claude Code's questions (its own
    /// `askUserQuestionsToCreateRequest`).
    fn claude_form() -> Value {
        let option = |label: &str, description: &str| json!({"const": label, "title": label, "description": description});
        json!({"type": "object", "properties": {
            "question_0": {"type": "string", "title": "DB", "description": "Which database?",
                           "oneOf": [option("PostgreSQL", "Shared"), option("SQLite", "Embedded")]},
            "question_0_custom": {"type": "string", "title": "Other", "description": "Type your own answer, or add a note to the option you chose above (optional)."},
            "question_1": {"type": "array", "title": "Checks", "description": "Which checks?",
                           "items": {"anyOf": [option("Lint", "clippy"), option("Tests", "cargo test")]}},
            "question_1_custom": {"type": "string", "title": "Other", "description": "Type your own answer to add to your selection above (optional)."}}})
    }

    fn answered(fields: &Fields, selections: &[Selection]) -> Map<String, Value> {
        let request: Request = serde_json::from_value(json!({"questions": fields.questions})).unwrap();
        let answers = resolve(&request.questions, selections).unwrap();
        fields.content(&AskResult::answered("q", &request, answers, 1))
    }

    #[test]
    fn claude_codes_questions_are_asked_as_they_are_and_answered_in_their_fields() {
        let fields = Fields::read("Please answer the following questions.", &claude_form());
        assert_eq!(
            json!(fields.questions),
            json!([
                {"question": "Which database?", "header": "DB", "multiSelect": false,
                 "options": [{"label": "PostgreSQL", "description": "Shared"}, {"label": "SQLite", "description": "Embedded"}]},
                {"question": "Which checks?", "header": "Checks", "multiSelect": true,
                 "options": [{"label": "Lint", "description": "clippy"}, {"label": "Tests", "description": "cargo test"}]}
            ])
        );
        let content = answered(
            &fields,
            &[Selection::custom("DuckDB"), Selection { selected: vec!["Lint".into()], custom: Some("Fuzz".into()), notes: None }],
        );
        assert_eq!(Value::Object(content), json!({"question_0_custom": "DuckDB", "question_1": ["Lint"], "question_1_custom": "Fuzz"}));
        let content = answered(&fields, &[Selection::option("SQLite").with_notes("for now"), Selection::option("Tests")]);
        assert_eq!(Value::Object(content), json!({"question_0": "SQLite", "question_0_custom": "for now", "question_1": ["Tests"]}));
    }

    #[test]
    fn a_plain_form_is_asked_field_by_field_with_its_values_back() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name"},
            "size": {"type": "string", "enum": ["s", "m"]},
            "ok": {"type": "boolean", "description": "Ship it?"},
            "count": {"type": "integer", "description": "How many?"},
            "level10": {"type": "string"}, "level2": {"type": "string"}}});
        let fields = Fields::read("Tell me", &schema);
        let asked: Vec<&str> = fields.questions.iter().map(|q| q["question"].as_str().unwrap()).collect();
        assert_eq!(asked, ["How many?", "level2", "level10", "Name", "Ship it?", "size"]);
        let content = answered(
            &fields,
            &[
                Selection::custom("3"),
                Selection::custom("b"),
                Selection::custom("c"),
                Selection::custom("Ann"),
                Selection::option("No"),
                Selection::option("m"),
            ],
        );
        assert_eq!(Value::Object(content), json!({"count": 3, "level2": "b", "level10": "c", "name": "Ann", "ok": false, "size": "m"}));
        let one = Fields::read("Your name?", &json!({"properties": {"name": {"type": "string"}}}));
        assert_eq!(one.questions[0]["question"], "Your name?", "a lone field is the message's question");
    }

    /// A session folder `root` (canonical) beside a folder `out` that it must not reach,
    /// holding `secret.txt`.
    fn folders() -> (tempfile::TempDir, Folder, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, out) = (base.join("root"), base.join("out"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("secret.txt"), "SECRET\n").unwrap();
        (dir, Folder::open(root).unwrap(), out)
    }

    fn read(folder: &Folder, path: PathBuf) -> Result<String, FsError> {
        folder.read(&ReadTextFileRequest::new("s", path))
    }

    fn write(folder: &Folder, path: PathBuf, content: &str) -> Result<(), FsError> {
        folder.write(&WriteTextFileRequest::new("s", path, content))
    }

    fn refused_as_outside(result: Result<impl std::fmt::Debug, FsError>) {
        let e = result.unwrap_err();
        assert!(e.message.contains("outside the session's folder") && e.code == ErrorCode::INVALID_PARAMS, "{e:?}");
    }

    #[test]
    fn files_are_read_and_written_inside_the_sessions_folder() {
        let (_dir, folder, _out) = folders();
        let root = folder.root.clone();
        std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let mut r = ReadTextFileRequest::new("s", root.join("a.txt"));
        (r.line, r.limit) = (Some(2), Some(1));
        assert_eq!(folder.read(&r).unwrap(), "two\n");
        assert_eq!(read(&folder, root.join("a.txt")).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(read(&folder, root.join("gone.txt")).unwrap_err().code, ErrorCode::RESOURCE_NOT_FOUND);
        write(&folder, root.join("new/b.txt"), "hi").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("new/b.txt")).unwrap(), "hi");
        write(&folder, root.join("a.txt"), "shorter").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "shorter", "replaced, not overwritten in part");
        assert!(read(&folder, root.join("new")).unwrap_err().message.contains("not a regular file"));
        #[cfg(unix)]
        {
            // A link to a file elsewhere inside is followed.
            std::os::unix::fs::symlink("new/b.txt", root.join("b-link")).unwrap();
            assert_eq!(read(&folder, root.join("b-link")).unwrap(), "hi");
        }
    }

    #[test]
    fn no_path_leads_out_of_the_sessions_folder() {
        let (_dir, folder, out) = folders();
        let root = folder.root.clone();
        let e = read(&folder, root.join("../out/secret.txt")).unwrap_err();
        assert!(e.message.contains("without `..`"), "{e:?}");
        assert!(write(&folder, root.join("../out/x.txt"), "x").unwrap_err().message.contains("without `..`"));
        refused_as_outside(read(&folder, out.join("secret.txt")));
        refused_as_outside(write(&folder, out.join("x.txt"), "x"));
        refused_as_outside(read(&folder, PathBuf::from("/etc/hostname")));
        refused_as_outside(read(&folder, root.clone()));
        assert!(read(&folder, PathBuf::from("relative.txt")).unwrap_err().message.contains("expected an absolute path"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            // A link to a folder outside, by absolute and by relative target.
            symlink(&out, root.join("abs")).unwrap();
            symlink("../out", root.join("rel")).unwrap();
            for link in ["abs", "rel"] {
                refused_as_outside(read(&folder, root.join(link).join("secret.txt")));
                refused_as_outside(write(&folder, root.join(link).join("made.txt"), "x"));
                refused_as_outside(write(&folder, root.join(link).join("sub/made.txt"), "x"));
            }
            // A link to a file outside.
            symlink(out.join("secret.txt"), root.join("secret-link")).unwrap();
            refused_as_outside(read(&folder, root.join("secret-link")));
            refused_as_outside(write(&folder, root.join("secret-link"), "overwritten"));
            // A dangling link whose target is outside: writing it would create that file.
            symlink(out.join("made.txt"), root.join("dangling")).unwrap();
            symlink("../out/made-too.txt", root.join("dangling-rel")).unwrap();
            refused_as_outside(write(&folder, root.join("dangling"), "x"));
            refused_as_outside(write(&folder, root.join("dangling-rel"), "x"));
            let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(left, ["secret.txt"], "nothing was made outside");
            assert_eq!(std::fs::read_to_string(out.join("secret.txt")).unwrap(), "SECRET\n");
        }
    }

    /// A hard link is the same file under two names, one of which may be outside: writing
    /// it is refused. Reading it is not: the kernel lets a user link only a file it owns or
    /// may read and write (`fs.protected_hardlinks`), so the link shows nothing its maker
    /// could not read, and package managers link files into projects (pnpm's store).
    #[cfg(unix)]
    #[test]
    fn a_file_with_another_name_is_not_written() {
        let (_dir, folder, out) = folders();
        let root = folder.root.clone();
        std::fs::hard_link(out.join("secret.txt"), root.join("hard.txt")).unwrap();
        let e = write(&folder, root.join("hard.txt"), "overwritten").unwrap_err();
        assert!(e.message.contains("2 names (hard links)") && e.code == ErrorCode::INVALID_PARAMS, "{e:?}");
        assert_eq!(std::fs::read_to_string(out.join("secret.txt")).unwrap(), "SECRET\n", "the file outside is unchanged");
        assert_eq!(read(&folder, root.join("hard.txt")).unwrap(), "SECRET\n");
        // With its other name gone it is the folder's own file again.
        std::fs::remove_file(out.join("secret.txt")).unwrap();
        write(&folder, root.join("hard.txt"), "mine").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("hard.txt")).unwrap(), "mine");
    }

    /// A folder inside swapped for a link to outside and back (atomically, as fast as a
    /// thread can) while requests run: none reads or writes outside. Reaching a file by
    /// name after checking it let 625 of 5,000 reads and 375 of 3,000 writes out.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_folder_swapped_for_a_link_mid_request_leads_nowhere_outside() {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        const READS: usize = 5_000;
        const WRITES: usize = 3_000;
        let (_dir, folder, out) = folders();
        let root = folder.root.clone();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/secret.txt"), "inside\n").unwrap();
        std::os::unix::fs::symlink(&out, root.join("link")).unwrap();
        let stop = AtomicBool::new(false);
        let done = |a: &[usize; 2], b: &[usize; 2], c: &[usize; 2]| [a[0] + b[0] + c[0], a[1] + b[1] + c[1]];
        let (mut escapes, mut inside, mut refused) = ([0usize; 2], [0usize; 2], [0usize; 2]);
        let swaps = std::thread::scope(|s| {
            let swapper = s.spawn(|| {
                let mut swaps = 0u64;
                // Bounded: the requests end it long before.
                while !stop.load(Ordering::Relaxed) && swaps < 50_000_000 {
                    renameat_with(CWD, root.join("d"), CWD, root.join("link"), RenameFlags::EXCHANGE).unwrap();
                    swaps += 1;
                }
                swaps
            });
            // Reads and writes interleaved, in proportion.
            while done(&escapes, &inside, &refused) != [READS, WRITES] {
                let [reads, writes] = done(&escapes, &inside, &refused);
                let kind = usize::from(writes < WRITES && (reads == READS || writes * READS < reads * WRITES));
                let outcome = if kind == 0 {
                    match read(&folder, root.join("d/secret.txt")) {
                        Ok(text) if text == "SECRET\n" => 0,
                        Ok(_) => 1,
                        Err(_) => 2,
                    }
                } else {
                    let made = write(&folder, root.join("d/made.txt"), "x");
                    if std::fs::remove_file(out.join("made.txt")).is_ok() {
                        0
                    } else if made.is_ok() {
                        1
                    } else {
                        2
                    }
                };
                [&mut escapes, &mut inside, &mut refused][outcome][kind] += 1;
            }
            stop.store(true, Ordering::Relaxed);
            swapper.join().unwrap()
        });
        eprintln!(
            "{swaps} swaps; {READS} reads: {} escaped, {} inside, {} refused; {WRITES} writes: {} escaped, {} inside, {} refused",
            escapes[0], inside[0], refused[0], escapes[1], inside[1], refused[1]
        );
        assert_eq!(escapes, [0, 0], "no request reached outside the folder");
        assert!(inside.iter().all(|&n| n > 0) && refused.iter().all(|&n| n > 0), "the swaps raced the requests both ways");
    }
}
