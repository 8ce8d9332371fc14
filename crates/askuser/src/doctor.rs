//! `askuser doctor`: checks what askuser needs, one line each (ok, warn, fail, or info
//! for a host that is simply not set up), with what to do for each that is not ok. Exit
//! code 1 when anything failed.
//!
//! It only looks: it creates, changes and starts nothing, and never prints the token.
//! Everything it prints from files or the bridge goes through [`crate::term`].

use crate::client::BridgeArgs;
use crate::setup::{self, ClaudeSettings, Host, Installed, Part, DAY_MS, DENY_RULE};
use crate::term::out;
use askuser_bridge::client::{self, BridgeFile};
use askuser_bridge::files;
use clap::Args;
use reqwest::StatusCode;
use std::fmt::Display;
use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub bridge: BridgeArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Info,
    Warn,
    Fail,
}

/// The lines printed so far, counted.
#[derive(Debug, Default)]
struct Report {
    ok: usize,
    warn: usize,
    fail: usize,
}

impl Report {
    fn line(&mut self, level: Level, what: impl Display, todo: Option<String>) {
        let tag = match level {
            Level::Ok => {
                self.ok += 1;
                "ok  "
            }
            Level::Info => "info",
            Level::Warn => {
                self.warn += 1;
                "warn"
            }
            Level::Fail => {
                self.fail += 1;
                "fail"
            }
        };
        out!("{tag}  {what}");
        if let Some(t) = todo.filter(|_| level != Level::Ok) {
            out!("      → {t}");
        }
    }

    fn ok(&mut self, what: impl Display) {
        self.line(Level::Ok, what, None);
    }

    fn warn(&mut self, what: impl Display, todo: impl Into<String>) {
        self.line(Level::Warn, what, Some(todo.into()));
    }

    fn fail(&mut self, what: impl Display, todo: impl Into<String>) {
        self.line(Level::Fail, what, Some(todo.into()));
    }
}

const START: &str = "start one with `askuser serve` (it prints the address to open), or let `askuser mcp` start one";

/// `askuser doctor`.
pub fn run(args: &DoctorArgs) -> ExitCode {
    let mut r = Report::default();
    askuser_bridge::runtime().block_on(check(&args.bridge, &mut r));
    out!("{} ok, {} to look at, {} failing", r.ok, r.warn, r.fail);
    if r.fail == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn check(args: &BridgeArgs, r: &mut Report) {
    match files::data_dir(args.data_dir.as_deref()) {
        Ok(dir) => {
            data_dir(r, &dir);
            token_file(r, &dir);
            bridge(r, args, &dir).await;
        }
        Err(e) => r.fail(format!("{e:#}"), "pass --data-dir DIR"),
    }
    for host in Host::ALL {
        host_config(r, host);
    }
}

#[cfg(unix)]
fn mode(meta: &fs::Metadata) -> Option<u32> {
    Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777)
}

#[cfg(not(unix))]
fn mode(_: &fs::Metadata) -> Option<u32> {
    None
}

fn data_dir(r: &mut Report, dir: &Path) {
    match fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            r.warn(format!("data directory {} does not exist yet", dir.display()), format!("a bridge creates it when it starts: {START}"))
        }
        Err(e) => {
            r.fail(format!("cannot read the data directory {}: {e}", dir.display()), "check the permissions of the directories above it")
        }
        Ok(meta) if !meta.is_dir() => r.fail(
            format!("the data directory {} is not a directory", dir.display()),
            "move it away, or pass --data-dir with a directory of your own",
        ),
        // It exists, so ensure_dir only checks owner and mode: it creates and changes nothing.
        Ok(meta) => match files::ensure_dir(dir) {
            Ok(()) => {
                let mode = mode(&meta).map(|m| format!(" (mode {m:o})")).unwrap_or_default();
                r.ok(format!("data directory {} is yours and nobody else can write it{mode}", dir.display()))
            }
            Err(e) => r.line(Level::Fail, format!("{e:#}"), None),
        },
    }
}

fn token_file(r: &mut Report, dir: &Path) {
    let path = dir.join("token");
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return r.warn(
                format!("no token file {}", path.display()),
                "a bridge creates it when it first starts without --token or $ASKUSER_TOKEN: `askuser serve`",
            );
        }
        Err(e) => return r.fail(format!("cannot read {}: {e}", path.display()), "check the data directory's permissions"),
    };
    if !meta.is_file() {
        return r.fail(format!("{} is not a plain file", path.display()), "remove it: the bridge creates a private one");
    }
    match mode(&meta) {
        Some(m) if m & 0o077 != 0 => {
            r.fail(format!("the token file {} can be read by others (mode {m:o})", path.display()), format!("chmod 600 {}", path.display()))
        }
        m => match fs::read_to_string(&path) {
            Ok(t) if t.trim().len() >= 16 => {
                r.ok(format!("token file {} is private{}", path.display(), m.map(|m| format!(" (mode {m:o})")).unwrap_or_default()))
            }
            Ok(_) => r.warn(format!("the token in {} is too short", path.display()), "remove it: the next bridge writes a new one"),
            Err(e) => r.fail(format!("cannot read {}: {e}", path.display()), "check its permissions"),
        },
    }
}

/// Where the token `find_bridge` picked came from, for the message when it is refused.
fn token_source(args: &BridgeArgs) -> &'static str {
    if args.token.as_deref().is_some_and(|t| !t.is_empty()) {
        "the --token given"
    } else if std::env::var(client::ENV_TOKEN).is_ok_and(|t| !t.is_empty()) {
        "$ASKUSER_TOKEN"
    } else {
        "bridge.json"
    }
}

async fn bridge(r: &mut Report, args: &BridgeArgs, dir: &Path) {
    let endpoint = match args.endpoint(dir) {
        Ok(e) => e,
        Err(e) => {
            let file = client::bridge_file(dir);
            let named = args.url.as_deref().is_some_and(|u| !u.is_empty()) || std::env::var(client::ENV_URL).is_ok_and(|u| !u.is_empty());
            if named {
                r.fail(
                    format!("{e:#}"),
                    "pass --url with the bridge's https address (or one on this machine) and --token with its own token",
                );
            } else if file.exists() {
                r.fail(format!("{e:#}"), format!("remove {} and {START}", file.display()));
            } else {
                r.fail(format!("no bridge runs for the data directory {} (it has no bridge.json)", dir.display()), START);
            }
            return default_port(r);
        }
    };
    let file: Option<BridgeFile> = fs::read_to_string(client::bridge_file(dir)).ok().and_then(|t| serde_json::from_str(&t).ok());
    let url = endpoint.url.as_str();
    let http = match askuser_bridge::client::http(endpoint.fingerprint).timeout(Duration::from_secs(5)).build() {
        Ok(c) => c,
        Err(e) => return r.fail(format!("cannot make an HTTP client: {e}"), "report this"),
    };
    let health = http.get(format!("{url}/v1/health")).bearer_auth(&endpoint.token).header("x-askuser-client", "cli").send().await;
    let response = match health {
        Ok(resp) => resp,
        Err(e) => {
            let why = if e.is_timeout() { "does not answer within 5 s" } else { "does not answer" };
            let stale = file
                .filter(|f| f.url.trim_end_matches('/') == url)
                .map(|f| format!(" (bridge.json names it, from pid {}, which has stopped?)", f.pid));
            return r.fail(format!("the bridge at {url} {why}{}", stale.unwrap_or_default()), START);
        }
    };
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    match status {
        StatusCode::OK => {
            let version = body["version"].as_str().unwrap_or("?");
            r.ok(format!("the bridge at {url} answers with the token (askuser {version}, {} pending)", body["pending"]));
            if version != env!("CARGO_PKG_VERSION") {
                r.warn(
                    format!("the bridge runs askuser {version}, this is {}", env!("CARGO_PKG_VERSION")),
                    "restart the bridge to run this version",
                );
            }
        }
        StatusCode::UNAUTHORIZED => {
            let source = token_source(args);
            let todo = match source {
                "bridge.json" => "another bridge took the port; stop it, or pass --url and --token for it".to_owned(),
                _ => format!(
                    "{source} is not this bridge's token: use the one `askuser serve` printed, or unset it so bridge.json's is used"
                ),
            };
            r.fail(format!("the bridge at {url} refused the token from {source} (401 Unauthorized)"), todo);
        }
        other => {
            let message = body["message"].as_str().unwrap_or("");
            return r.fail(format!("the bridge at {url} answered {other} {message}"), "check --url: is it an askuser bridge?");
        }
    }
    port(r, url);
    page(r, &http, url).await;
}

/// The port the bridge listens on.
fn port(r: &mut Report, url: &str) {
    let Ok(u) = reqwest::Url::parse(url) else {
        return r.warn(format!("cannot read the bridge's address {url}"), "check --url or bridge.json");
    };
    let host = u.host_str().unwrap_or("");
    let port = u.port_or_known_default().unwrap_or(0);
    let loopback = host == "localhost" || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let default = client::DEFAULT_ADDR.rsplit(':').next().unwrap_or("");
    if !loopback {
        r.warn(
            format!("the bridge listens on {host}:{port}, not on this machine's loopback"),
            "serve on 127.0.0.1 (the default) unless others on the network are meant to reach it",
        );
    } else if port.to_string() == default {
        r.ok(format!("port {port} on {host} (the default)"));
    } else {
        r.ok(format!("port {port} on {host} (not the default {default}: clients find it through bridge.json)"));
    }
}

/// No bridge: can one start on the default address?
fn default_port(r: &mut Report) {
    let Ok(addr) = client::DEFAULT_ADDR.parse::<std::net::SocketAddr>() else { return };
    if std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
        r.warn(
            format!("something listens on {addr}, but this data directory has no bridge.json"),
            "if it is an askuser bridge with another data directory, pass that --data-dir; otherwise serve on another port: `askuser serve --addr 127.0.0.1:7824`",
        );
    } else {
        r.ok(format!("port {} is free for a bridge", addr.port()));
    }
}

/// The web UI: GET / returns the page.
async fn page(r: &mut Report, http: &reqwest::Client, url: &str) {
    let response = match http.get(format!("{url}/")).send().await {
        Ok(resp) => resp,
        Err(e) => return r.fail(format!("the page at {url}/ does not load: {e}"), "restart the bridge"),
    };
    let status = response.status();
    let html =
        response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("text/html"));
    let body = response.text().await.unwrap_or_default().to_ascii_lowercase();
    if status != StatusCode::OK || !html {
        r.fail(format!("the page at {url}/ answered {status} without HTML"), "restart the bridge; check --url")
    } else if body.contains("built without the web ui") {
        r.warn(
            format!("the page at {url}/ loads, but this askuser was built without the web UI"),
            "answer with `askuser pending` and `askuser answer`, or build with `scripts/run`",
        )
    } else if body.contains("<html") {
        r.ok(format!("the page at {url}/ loads"))
    } else {
        r.warn(format!("the page at {url}/ is HTML but not askuser's"), "check --url")
    }
}

/// Whether `command` names a file this user can run, directly or through PATH.
fn runnable(command: &str) -> bool {
    let executable = |p: &Path| fs::metadata(p).is_ok_and(|m| m.is_file() && mode(&m).is_none_or(|m| m & 0o111 != 0));
    let path = Path::new(command);
    if path.is_absolute() || path.components().count() > 1 {
        return executable(path);
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(command))))
}

/// Whether `command` is this very askuser (which names the tool for Gemini CLI itself).
fn is_this_askuser(command: &str) -> bool {
    let this = std::env::current_exe().and_then(fs::canonicalize);
    this.is_ok_and(|this| fs::canonicalize(command).is_ok_and(|c| c == this))
}

/// A host's config file: is askuser set up there, and does the host offer its tool
/// headless and wait for a person?
fn host_config(r: &mut Report, host: Host) {
    let name = host.id();
    let setup = format!("`askuser setup {name}`");
    let targets = match setup::targets(host, None, None) {
        Ok(t) => t,
        Err(e) => return r.line(Level::Info, format!("{name}: {e:#}"), None),
    };
    let Some(main) = targets.iter().find(|t| t.part != Part::ClaudeSettings) else { return };
    let path = main.path.display();
    let bytes = match setup::read(&main.path) {
        Ok(Some(b)) => b,
        Ok(None) => return r.line(Level::Info, format!("{name}: not set up ({path} does not exist)"), Some(format!("to use it: {setup}"))),
        Err(e) => return r.warn(format!("{name}: {e:#}"), "check the file's permissions"),
    };
    let found = setup::text(&main.path, &bytes).and_then(|t| setup::installed(main, t));
    let found = match found {
        Ok(Some(f)) => f,
        Ok(None) => return r.line(Level::Info, format!("{name}: askuser is not set up in {path}"), Some(format!("to use it: {setup}"))),
        Err(e) => {
            return r.warn(
                format!("{name}: {e:#}"),
                format!("fix it, or add askuser's entry by hand (`askuser setup {name} --print` shows it)"),
            )
        }
    };
    let command = found.command.clone().unwrap_or_default();
    let runs = setup::shell_words(std::iter::once(&command).chain(&found.args));
    let scope = found.project.as_deref().map(|p| format!(" (for the project {p} only)")).unwrap_or_default();
    let entry = format!("{}.{}", host.servers_key(), found.name);
    if !runnable(&command) {
        let why = if Path::new(&command).is_absolute() && !Path::new(&command).exists() { "does not exist" } else { "cannot be run" };
        r.fail(
            format!("{name}: askuser's entry in {path}{scope} runs {command:?}, which {why}: {} cannot start askuser", host.title()),
            format!("{setup} writes the path of this askuser"),
        );
    } else if setup::split_runner(&found.args).1.first().map(String::as_str) != Some("mcp") {
        r.warn(format!("{name}: askuser in {path} runs `{runs}`, not `askuser mcp`"), setup.clone());
    } else {
        r.ok(format!("{name}: askuser is set up in {path}{scope}: `{runs}`"));
    }
    let mut settings_timeout = None;
    match host {
        Host::ClaudeCode => settings_timeout = claude_settings(r, &targets, &found),
        Host::GeminiCli => gemini(r, &main.path, &entry, &command, &found),
        Host::OpenCode | Host::Copilot | Host::Cline | Host::QwenCode => headless(r, host, &main.path, &entry, &found),
        _ => {}
    }
    timeout(r, host, &main.path, &found, settings_timeout);
}

/// Claude Code's settings.json: the tool allowed for `claude -p`, AskUserQuestion left to
/// interactive sessions, and `MCP_TOOL_TIMEOUT` (there or in the environment).
fn claude_settings(r: &mut Report, targets: &[setup::Target], found: &Installed) -> Option<(u64, String)> {
    let settings = targets.iter().find(|t| t.part == Part::ClaudeSettings)?;
    let path = settings.path.display();
    let read = setup::read(&settings.path).and_then(|b| match b {
        Some(b) => setup::text(&settings.path, &b).and_then(|t| setup::claude_settings(&settings.path, t)),
        None => Ok(ClaudeSettings::default()),
    });
    let s = match read {
        Ok(v) => v,
        Err(e) => {
            r.warn(format!("claude-code: {e:#}"), "fix it, or add the settings by hand (`askuser setup claude-code --print` shows them)");
            ClaudeSettings::default()
        }
    };
    let tool = setup::arg_value(&found.args, "--tool-name").unwrap_or(Host::ClaudeCode.default_tool());
    let rule = setup::allow_rule(&found.name, tool);
    if setup::allows(&s.allow, &found.name, tool) {
        r.ok(format!("claude-code: {path} allows {rule}, so `claude -p` may call it"));
    } else {
        r.warn(
            format!(
                "claude-code: {path} does not allow {rule}: `claude -p` cannot call it (the model reads \"Claude requested permissions to use {rule}, but you haven't granted it yet\")"
            ),
            format!("`askuser setup claude-code` adds it to permissions.allow (or pass `--allowedTools {rule}` to every `claude -p`)"),
        );
    }
    if s.denied {
        r.warn(
            format!(
                "claude-code: {path} denies {DENY_RULE}: interactive sessions lose Claude Code's own question dialog (and `claude -p` does not need the rule)"
            ),
            format!(
                "delete \"{DENY_RULE}\" from permissions.deny in {path} (earlier versions of askuser setup added it; setup leaves it, not knowing whether you did)"
            ),
        );
    }
    let from_env = std::env::var("MCP_TOOL_TIMEOUT").ok().and_then(|v| v.trim().parse().ok()).map(|v| (v, "$MCP_TOOL_TIMEOUT".to_owned()));
    from_env.or(s.timeout.map(|v| (v, format!("MCP_TOOL_TIMEOUT in {path}"))))
}

/// Gemini CLI run headless offers askuser's tool only from a trusted server, under a name
/// that is not its own `ask_user`, and only if its `mcp.allowed`/`mcp.excluded` let the
/// server start.
fn gemini(r: &mut Report, path: &Path, entry: &str, command: &str, found: &Installed) {
    let (path, todo) = (path.display(), "`askuser setup gemini-cli`");
    if let Some(why) = &found.blocked {
        r.fail(format!("gemini-cli: in {path}, {why}"), format!("edit {path} so Gemini CLI starts {}", found.name));
    }
    let trusted = found.trust == Some(true);
    if !trusted {
        r.warn(
            format!("gemini-cli: {entry} in {path} has no \"trust\": true: `gemini -p` hides every tool of a server it does not trust"),
            format!("{todo} sets it (or add \"trust\": true to {entry} by hand)"),
        );
    }
    let tool = setup::arg_value(&found.args, "--tool-name");
    match tool {
        Some(crate::mcp::TOOL) => r.warn(
            format!("gemini-cli: {entry} in {path} names the tool {0} (--tool-name {0}): `gemini -p` hides every tool of that name, its own built-in's", crate::mcp::TOOL),
            format!("{todo} passes --tool-name {}", crate::mcp::GEMINI_TOOL),
        ),
        None if !is_this_askuser(command) => r.warn(
            format!(
                "gemini-cli: {entry} in {path} gives no --tool-name, and runs another askuser than this one: one that does not name its tool {} for Gemini CLI by itself offers {}, which `gemini -p` hides",
                crate::mcp::GEMINI_TOOL,
                crate::mcp::TOOL
            ),
            format!("{todo} passes --tool-name {}", crate::mcp::GEMINI_TOOL),
        ),
        None => r.line(
            Level::Info,
            format!(
                "gemini-cli: {entry} in {path} gives no --tool-name: this askuser names its tool {} when Gemini CLI connects",
                crate::mcp::GEMINI_TOOL
            ),
            Some(format!("{todo} writes the name out (--tool-name {})", crate::mcp::GEMINI_TOOL)),
        ),
        Some(name) if trusted => r.ok(format!("gemini-cli: {entry} in {path} is trusted and its tool is {name}, so `gemini -p` offers it")),
        Some(_) => {}
    }
}

/// What OpenCode, Copilot CLI, Cline and Qwen Code need of askuser's entry to start it and
/// offer its tool headless (each as `askuser setup HOST` writes it).
fn headless(r: &mut Report, host: Host, path: &Path, entry: &str, found: &Installed) {
    let (name, path, todo) = (host.id(), path.display(), format!("`askuser setup {}`", host.id()));
    let server = &found.entry;
    let title = host.title();
    let off = match host {
        Host::OpenCode => server["enabled"] == false,
        _ => server["disabled"] == true,
    };
    if off {
        let key = if host == Host::OpenCode { "\"enabled\": false" } else { "\"disabled\": true" };
        r.fail(format!("{name}: {entry} in {path} has {key}: {title} does not start askuser"), format!("{todo} switches it on"));
    }
    match host {
        Host::OpenCode if server["type"] != "local" => r.warn(
            format!("{name}: {entry} in {path} is not of \"type\": \"local\": OpenCode runs a command only for a local server"),
            todo.clone(),
        ),
        Host::Copilot => {
            let tool = setup::arg_value(&found.args, "--tool-name").unwrap_or(host.default_tool());
            let tools: Vec<String> =
                server["tools"].as_array().map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect()).unwrap_or_default();
            if !setup::copilot_offers(&tools, tool) {
                r.warn(
                    format!("{name}: {entry}.tools in {path} does not list {tool} (nor \"*\"): Copilot CLI does not offer it to the model"),
                    format!("{todo} sets \"tools\": [\"*\"]"),
                );
            }
        }
        Host::QwenCode => {
            if found.trust != Some(true) {
                r.warn(
                    format!("{name}: {entry} in {path} has no \"trust\": true: `qwen --prompt` refuses an untrusted tool (\"non-interactive mode cannot prompt\")"),
                    format!("{todo} sets it (or pass --allowed-tools mcp__{}__{}, and the prompt with --prompt)", found.name, host.default_tool()),
                );
            }
            if server["alwaysLoadTools"] != true {
                r.warn(
                    format!("{name}: {entry} in {path} has no \"alwaysLoadTools\": true: Qwen Code hides askuser's tool behind its tool search, where a model rarely looks"),
                    format!("{todo} sets it"),
                );
            }
        }
        _ => {}
    }
}

/// Whether the host waits long enough for a person, or askuser returns before it gives up.
/// `path` is the file with askuser's entry.
fn timeout(r: &mut Report, host: Host, path: &Path, found: &Installed, settings: Option<(u64, String)>) {
    let name = host.id();
    let title = host.title();
    let path = path.display();
    // (the setting and where it is, how long the host waits without it)
    let (setting, default_ms) = match host {
        Host::ClaudeCode => (settings, 60_000),
        Host::Codex => (found.timeout_ms.map(|ms| (ms, format!("tool_timeout_sec in {path}"))), 60_000),
        Host::GeminiCli => (found.timeout_ms.map(|ms| (ms, format!("timeout in {path}"))), 600_000),
        Host::QwenCode => (found.timeout_ms.map(|ms| (ms, format!("timeout in {path}"))), 600_000),
        Host::Cline => (found.timeout_ms.map(|ms| (ms, format!("timeout in {path}"))), 60_000),
        Host::OpenCode | Host::Copilot => {
            // Their timeout starts again at each progress notification, which askuser sends
            // every 10 s while it waits: any timeout longer than that waits for the person.
            let default_ms = if host == Host::OpenCode { setup::OPENCODE_TIMEOUT } else { 180_000 };
            match found.timeout_ms {
                Some(ms) if ms <= setup::PROGRESS_MS => r.warn(
                    format!("{name}: timeout in {path} is {ms} ms, not longer than askuser's progress interval (10 s): {title} gives up between two of them"),
                    match host {
                        Host::OpenCode => format!("`askuser setup {name}` sets {title}'s default, {}", human(default_ms)),
                        _ => format!("`askuser setup {name}` sets a day"),
                    },
                ),
                ms => r.ok(format!(
                    "{name}: {title} waits {} between askuser's progress notifications (every 10 s), so as long as the person takes",
                    human(ms.unwrap_or(default_ms))
                )),
            }
            return;
        }
        _ => (None, 60_000),
    };
    let waits = setting.as_ref().map_or(default_ms, |(ms, _)| *ms);
    let todo = format!("`askuser setup {name}`");
    // What setup does about it: a day's wait, or (Cline, whose longest is an hour) --max-wait.
    let fix = match host {
        Host::Cline => {
            format!("{todo} sets the longest timeout Cline takes ({} s) and --max-wait {}", setup::CLINE_TIMEOUT, setup::CLINE_WAIT)
        }
        _ => format!("{todo} sets a day"),
    };
    // What the model is told when the host stops waiting, where it was seen.
    let told = |ms: u64| match host {
        Host::Codex => format!(" (the model reads \"timed out awaiting tools/call after {}s\")", ms / 1000),
        _ => String::new(),
    };
    match (setting, found.max_wait()) {
        (Some((ms, what)), _) if ms >= DAY_MS => r.ok(format!("{name}: {what} lets {title} wait {}", human(ms))),
        (_, Some(s)) if s.saturating_mul(1000) < waits => {
            r.ok(format!("{name}: askuser mcp in {path} returns after --max-wait {s} s, before {title} gives up (after {})", human(waits)))
        }
        (Some((ms, what)), _) => r.warn(
            format!("{name}: {what} lets {title} wait only {}: a question open longer fails the call{}", human(ms), told(ms)),
            fix.clone(),
        ),
        (None, _) if matches!(host, Host::ClaudeDesktop | Host::Cursor) => r.warn(
            format!("{name}: {title} gives up on a tool call after about a minute, and askuser mcp in {path} has no --max-wait"),
            format!("{todo} adds --max-wait {}", setup::SHORT_WAIT),
        ),
        (None, _) => r.warn(
            format!(
                "{name}: no tool-call timeout set for askuser in {path}: {title} gives up after {}{}",
                human(default_ms),
                told(default_ms)
            ),
            fix.clone(),
        ),
    }
}

/// "60 s", "10 min", "24 h".
fn human(ms: u64) -> String {
    match ms / 1000 {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!([human(60_000), human(600_000), human(DAY_MS)], ["60 s", "10 min", "24 h"]);
    }

    #[test]
    fn commands_are_found_by_path_or_through_path() {
        assert!(runnable(std::env::current_exe().unwrap().to_str().unwrap()));
        assert!(!runnable("/nonexistent/askuser"));
        assert!(!runnable("askuser-surely-not-on-path"));
    }
}
