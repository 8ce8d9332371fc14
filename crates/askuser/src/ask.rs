//! The agent-side commands: `askuser ask`, `askuser result` and `askuser mcp`.

use crate::agent::Host;
use crate::agent::{AskError, Asker};
use crate::client::BridgeArgs;
use crate::input::read_text;
use crate::mcp::McpOptions;
use crate::term::{err, fail, out, print_json};
use crate::tui::inline::Here;
use askuser_bridge::client::Endpoint;
use askuser_bridge::runtime;
use askuser_bridge::{client, files};
use askuser_core::dialect::normalize;
use askuser_core::{AskResult, Format, Limits, Status};
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Exit code for input that is not valid.
pub const EXIT_INVALID: u8 = 2;
pub const EXIT_CANCELLED: u8 = 3;
pub const EXIT_NOT_ANSWERED: u8 = 4;
pub const EXIT_PENDING: u8 = 5;
/// Ctrl+C in `ask --here`: 128 + SIGINT, what a shell reports for an interrupted command.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    #[command(flatten)]
    pub bridge: BridgeArgs,
    /// A request in any dialect (a JSON file, or `-` for standard input). Or use --question.
    pub file: Option<PathBuf>,
    /// The question text (instead of a file).
    #[arg(long, conflicts_with = "file")]
    pub question: Option<String>,
    /// A short header chip for --question.
    #[arg(long, requires = "question")]
    pub header: Option<String>,
    /// An option for --question, as LABEL or LABEL=DESCRIPTION; repeatable.
    #[arg(long = "option", value_name = "LABEL[=DESCRIPTION]", requires = "question")]
    pub options: Vec<String>,
    /// Let the person choose several options.
    #[arg(long, requires = "question")]
    pub multi: bool,
    /// An id makes the ask resumable: asking again with it waits on the same question.
    #[arg(long)]
    pub id: Option<String>,
    /// Give up after this many seconds (the result is then `timed_out`).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Without an answer after this long (`90s`, `10m`, `1h`), send the question again
    /// where it was notified; after twice as long, to everyone's (it escalates).
    #[arg(long, value_name = "DURATION", value_parser = remind_after)]
    pub remind_after: Option<u64>,
    /// Without an answer after this long, end the wait with no answer (`timed_out`, with
    /// the reason "no answer after …; default applied"; exit 4). Never an invented answer.
    #[arg(long, value_name = "DURATION", value_parser = default_after)]
    pub default_after: Option<u64>,
    /// Who is asking, as shown in the inbox.
    #[arg(long, default_value = "askuser ask")]
    pub agent_name: String,
    /// The person or team the question is for: their devices see it first, everyone
    /// else after the bridge's --escalate-after.
    #[arg(long, value_name = "NAME")]
    pub to: Option<String>,
    /// Store the question, print its id, and exit; get the answer later with `askuser result ID`.
    #[arg(long)]
    pub no_wait: bool,
    /// On a terminal, also show the question here (inline, on stderr) while it waits in
    /// the inbox; the first answer, here or there, wins.
    #[arg(long, conflicts_with = "no_wait")]
    pub here: bool,
    #[arg(long, short, default_value = "canonical")]
    pub format: Format,
}

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub bridge: BridgeArgs,
    /// The agent's name in the inbox (default: the MCP client's name).
    #[arg(long)]
    pub agent_name: Option<String>,
    /// This server runs for a sub-agent of this session, so the inbox shows whose helper asks.
    #[arg(long, value_name = "ID")]
    pub parent_session: Option<String>,
    /// Every question this server asks is for this person or team, unless the model
    /// names another (`to`).
    #[arg(long, value_name = "NAME")]
    pub to: Option<String>,
    /// The tool result's text: the Claude Code sentence, a one-line summary, or JSON.
    #[arg(long, default_value = "claude")]
    pub result_format: Format,
    /// Seconds between progress notifications while waiting.
    #[arg(long, default_value_t = 10)]
    pub progress_seconds: u64,
    /// Open the page in the default browser when this process starts the bridge.
    #[arg(long)]
    pub open: bool,
    /// Every question and approval of this agent is sent again after this long without an
    /// answer (`90s`, `10m`, `1h`), then escalates after twice as long, unless the model
    /// sets its own `remindAfterSeconds`.
    #[arg(long, value_name = "DURATION", value_parser = remind_after)]
    pub remind_after: Option<u64>,
    /// Every question and approval of this agent ends with no answer after this long (an
    /// approval is denied; the result says why), unless the model sets its own
    /// `defaultAfterSeconds`.
    #[arg(long, value_name = "DURATION", value_parser = default_after)]
    pub default_after: Option<u64>,
    /// After this many seconds without an answer, return "not answered yet, call again with
    /// this id" instead of waiting on (for hosts that fail a tool call after a fixed time).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_wait: Option<u64>,
    /// Ask only in the browser inbox, never also in the host's own dialog (MCP elicitation).
    #[arg(long)]
    pub no_elicitation: bool,
    /// The tool's name (default: ask_user; ask_human for Gemini CLI, which hides every
    /// tool named ask_user when run headless).
    #[arg(long, value_name = "NAME", value_parser = crate::mcp::tool_name_arg)]
    pub tool_name: Option<String>,
    /// Also offer the tool `approve`: Claude Code's `--permission-prompt-tool
    /// mcp__askuser__approve`, which asks the person to allow or deny each tool call
    /// (`askuser setup claude-code --approvals` sets it up).
    #[arg(long)]
    pub approvals: bool,
    /// A call whose questions an earlier session asked from the same folder, and which
    /// ended before it got the result, gets the answer given since only if it is at most
    /// this many seconds old (once; the result says so); older, the person is asked again.
    #[arg(long, value_name = "SECONDS", env = "ASKUSER_RESUME_WINDOW", default_value_t = 600)]
    pub resume_window: u64,
}

/// `--remind-after`: a duration ([`askuser_core::remind::parse_duration`]) in seconds.
pub fn remind_after(text: &str) -> Result<u64, String> {
    askuser_core::remind::parse_duration("--remind-after", text)
}

/// `--default-after`: a duration in seconds.
pub fn default_after(text: &str) -> Result<u64, String> {
    askuser_core::remind::parse_duration("--default-after", text)
}

/// The exit code that tells a script how the ask ended.
pub fn exit_code(status: Status) -> ExitCode {
    match status {
        Status::Answered => ExitCode::SUCCESS,
        Status::Cancelled => ExitCode::from(EXIT_CANCELLED),
        Status::TimedOut | Status::Withdrawn => ExitCode::from(EXIT_NOT_ANSWERED),
        Status::Pending => ExitCode::from(EXIT_PENDING),
    }
}

fn print_result(result: &AskResult, format: Format) {
    match format {
        Format::Text => out!("{}", result.summary()),
        f => print_json(&result.to_json(f)),
    }
}

/// The request `askuser ask` sends: the file's (any dialect) or one built from flags.
fn build_request(args: &AskArgs) -> anyhow::Result<Value> {
    let mut request: Value = match &args.question {
        Some(q) => {
            let options: Vec<Value> = args
                .options
                .iter()
                .map(|o| match o.split_once('=') {
                    Some((label, description)) => json!({"label": label, "description": description}),
                    None => json!({"label": o}),
                })
                .collect();
            let mut question = json!({"question": q, "options": options, "multiSelect": args.multi});
            if let Some(h) = &args.header {
                question["header"] = h.clone().into();
            }
            json!({"questions": [question]})
        }
        None => {
            let text = read_text(args.file.as_deref())?;
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("expected a JSON request: {e}"))?
        }
    };
    if let Value::Object(map) = &mut request {
        let id = args.id.clone().or_else(|| map.get("id").and_then(Value::as_str).map(str::to_owned));
        map.insert("id".into(), id.unwrap_or_else(|| format!("ask-{}", files::random_hex(8))).into());
        if let Some(t) = args.timeout {
            map.insert("timeoutSeconds".into(), t.into());
        }
        if let Some(s) = args.remind_after {
            map.insert("remindAfterSeconds".into(), s.into());
        }
        if let Some(s) = args.default_after {
            map.insert("defaultAfterSeconds".into(), s.into());
        }
        let agent = map.entry("agent").or_insert_with(|| json!({"name": args.agent_name}));
        if let (Some(to), Value::Object(agent)) = (&args.to, agent) {
            agent.insert("assignee".into(), to.clone().into());
        }
    }
    Ok(request)
}

pub fn ask(args: AskArgs) -> ExitCode {
    let request = match build_request(&args) {
        Ok(r) => r,
        Err(e) => {
            err!("askuser: {e:#}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let normalized = match normalize(&request, &Limits::default()) {
        Ok(n) => n,
        Err(invalid) => {
            for e in &invalid.errors {
                err!("{e}");
            }
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let dir = match files::data_dir(args.bridge.data_dir.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(format!("{e:#}")),
    };
    let endpoint = match args.bridge.endpoint(&dir) {
        Ok(e) => e,
        Err(e) => return fail(format!("{e:#}")),
    };
    // Never the token: this line lands in agent transcripts.
    let open = endpoint.url.clone();
    let asker = Asker::new(endpoint, Some(dir));
    runtime().block_on(async {
        if args.no_wait {
            return match asker.store(&request).await {
                Ok(record) => {
                    out!("{}", record.id);
                    err!("askuser: stored; answer in the browser tab of {open} or with `askuser answer`\naskuser: get the answer with `askuser result {} --wait`", record.id);
                    ExitCode::SUCCESS
                }
                Err(e) => ask_failed(e),
            };
        }
        // Unreachable at the start is an error; once asked, a lost connection is
        // retried and resumed by id.
        let endpoint = asker.endpoint();
        if let Err(e) = reachable(&endpoint).await {
            return fail(e);
        }
        let asking = asker.ask(&request, true, |p| err!("askuser: {p}; retrying"));
        let outcome = if args.here && on_a_terminal() {
            let id = request["id"].as_str().unwrap_or_default().to_owned();
            let here = crate::tui::inline::dialog(id, normalized.request, endpoint);
            tokio::pin!(asking);
            let mut here = Box::pin(here);
            tokio::select! {
                outcome = &mut asking => {
                    // The answer given here may reach the agent before its own reply
                    // reaches the dialog: only a dialog that sent nothing says "inbox",
                    // once it is gone (dropping it clears its lines).
                    let sent_here = tokio::time::timeout(Duration::from_millis(300), &mut here).await;
                    drop(here);
                    if !matches!(sent_here, Ok(Ok(Here::Sent))) {
                        err!("askuser: answered in the inbox");
                    }
                    outcome
                }
                shown = &mut here => {
                    match shown {
                        // Ctrl+C quits at once (the dialog said so in its place), as it
                        // would interrupt an ask without --here.
                        Ok(Here::Quit) => return ExitCode::from(EXIT_INTERRUPTED),
                        Ok(_) => {}
                        Err(e) => err!("askuser: the dialog here failed ({e:#}); the question still waits in the inbox"),
                    }
                    asking.await
                }
            }
        } else {
            asking.await
        };
        match outcome {
            Ok(result) => {
                print_result(&result, args.format);
                exit_code(result.status)
            }
            Err(e) => ask_failed(e),
        }
    })
}

/// Whether a dialog can be shown here: keys come from stdin, the dialog goes to stderr.
fn on_a_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

fn ask_failed(e: AskError) -> ExitCode {
    match e {
        AskError::Refused(r) if r.status == 400 => {
            for err in &r.body.errors {
                err!("{err}");
            }
            if r.body.errors.is_empty() {
                err!("askuser: {}", r.body.message);
            }
            ExitCode::from(EXIT_INVALID)
        }
        e => fail(e),
    }
}

pub fn result(bridge: &BridgeArgs, id: &str, wait: bool, format: Format) -> ExitCode {
    let client = match bridge.client() {
        Ok(c) => c,
        Err(e) => return fail(format!("{e:#}")),
    };
    runtime().block_on(async {
        let record = match client.get(id).await {
            Ok(r) => r,
            Err(e) => return fail(format!("{e:#}")),
        };
        if let Some(result) = record.result {
            print_result(&result, format);
            return exit_code(result.status);
        }
        if !wait {
            err!("askuser: {id} is still pending; add --wait to wait for the answer");
            return ExitCode::from(EXIT_PENDING);
        }
        // Waiting is a resume: ask again with the stored request and its id.
        let request = serde_json::to_value(&record.request).expect("requests serialize");
        let dir = match files::data_dir(bridge.data_dir.as_deref()) {
            Ok(d) => d,
            Err(e) => return fail(format!("{e:#}")),
        };
        let asker = Asker::new(client.endpoint.clone(), Some(dir));
        match asker.ask(&request, true, |p| err!("askuser: {p}; retrying")).await {
            Ok(result) => {
                print_result(&result, format);
                exit_code(result.status)
            }
            Err(e) => ask_failed(e),
        }
    })
}

/// Whether a bridge answers at `endpoint` (within 2 s), and if not, why.
pub(crate) async fn reachable(endpoint: &Endpoint) -> Result<(), String> {
    let client = crate::client::Client::new(endpoint.clone());
    match tokio::time::timeout(Duration::from_secs(2), client.health()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.downcast_ref::<crate::client::Refused>().is_some() => Err(format!("{e:#}")),
        Ok(Err(e)) => Err(format!("{e:#}; is `askuser serve` running?")),
        Err(_) => Err(format!("the bridge at {} did not answer within 2 s; is `askuser serve` running?", endpoint.url)),
    }
}

/// Whether the bridge is named by address (`--url` or `ASKUSER_URL`).
fn named(bridge: &BridgeArgs) -> bool {
    bridge.url.is_some() || std::env::var(client::ENV_URL).is_ok_and(|u| !u.is_empty())
}

/// The bridge `askuser mcp` asks through. A bridge named by address (--url or
/// ASKUSER_URL: perhaps on another machine) is the one to use, down or not: calls wait for
/// it. Only without one does this process start a bridge of its own.
async fn mcp_bridge(bridge: &BridgeArgs, dir: &std::path::Path, host: &Host) -> anyhow::Result<Endpoint> {
    let named = named(bridge);
    Ok(match bridge.endpoint(dir) {
        Ok(ep) if named => {
            if let Err(e) = reachable(&ep).await {
                tracing::warn!("{e}; calls will wait for it");
            }
            ep
        }
        Ok(ep) if reachable(&ep).await.is_ok() => ep,
        Err(e) if named => return Err(e),
        Err(e) if e.is::<client::NotRunning>() => {
            tracing::warn!("{e}; this process runs one meanwhile");
            host.start(client::DEFAULT_ADDR, bridge.token.clone()).await?
        }
        _ => host.start(client::DEFAULT_ADDR, bridge.token.clone()).await?,
    })
}

pub async fn mcp(args: McpArgs) -> anyhow::Result<()> {
    let dir = files::data_dir(args.bridge.data_dir.as_deref())?;
    let host = Arc::new(Host::new(dir.clone(), args.open));
    let journal = crate::mcp::Journal::new(&dir);
    let opts = McpOptions {
        agent_name: args.agent_name,
        parent_session: args.parent_session,
        to: args.to,
        result_format: args.result_format,
        progress_every: Duration::from_secs(args.progress_seconds.max(1)),
        max_wait: args.max_wait.map(Duration::from_secs),
        elicitation: !args.no_elicitation,
        tool_name: args.tool_name,
        journal: Some(journal),
        resume_window: Duration::from_secs(args.resume_window),
        approvals: args.approvals,
        patience: askuser_core::remind::Patience { remind_after_seconds: args.remind_after, default_after_seconds: args.default_after },
    };
    // The bridge is found (or started) at the first tool call, not before: a host that only
    // probes this server, or lists its tools, starts nothing and opens no browser.
    // A bridge named by address is checked now (plain http to another machine, say), with
    // no connection made: a wrong flag is an error at start, not at the first call.
    if named(&args.bridge) {
        args.bridge.endpoint(&dir)?;
    }
    let bridge = Arc::new(args.bridge);
    let (runs, dir) = (host.clone(), dir.clone());
    let connect: crate::mcp::Connect = Box::new(move || {
        let (bridge, host, dir) = (bridge.clone(), runs.clone(), dir.clone());
        Box::pin(async move {
            let endpoint = mcp_bridge(&bridge, &dir, &host).await?;
            Ok(Asker::new(endpoint, Some(dir)).with_host(host))
        })
    });
    let left = crate::mcp::serve(connect, opts, crate::mcp::stdio::input(), crate::mcp::stdio::output()).await;
    tracing::debug!(?left, "MCP host went away");
    let outcome = match left {
        crate::mcp::Left::Error(e) => Err(anyhow::anyhow!("reading the MCP messages on stdin failed: {e}")),
        _ => Ok(()),
    };
    host.stop().await;
    outcome
}
