//! `askuser setup HOST`: writes a host's MCP configuration so that it runs `askuser mcp`,
//! with that host's tool-call timeout (docs/agents.md has the table, host by host).
//!
//! Someone else's config file is edited with care. It is parsed first, and left alone
//! when it does not parse (the error names the file, line and column). Only askuser's
//! own entry (and, for Claude Code, two settings) change: every other server and key is
//! kept, in its order. The original goes to a backup beside it that never replaces an
//! earlier backup. The new file replaces the old one atomically, with the old one's
//! permissions. A second run finds nothing to change, says "already set up" and
//! writes nothing.
//!
//! What each host reads, as checked (search, not by running the hosts):
//! - Claude Code: `claude mcp add --scope user` writes `mcpServers.NAME` at the top of
//!   `~/.claude.json` as `{"type": "stdio", "command", "args", "env": {}}` (Claude Code's MCP
//!   docs and guides quoting them); `~/.claude/settings.json` holds `env` ("environment
//!   variables applied to every session", where `MCP_TOOL_TIMEOUT` goes, as in
//!   anthropics/claude-code#20335) and `permissions.deny`, a list of rules where a bare tool
//!   name denies every use of that tool (Claude Code's settings docs). `CLAUDE_CONFIG_DIR`
//!   moves Claude Code's files (its env-vars docs); that `.claude.json` then sits in it
//!   beside `settings.json` is from tools that honour it, not checked against Claude Code.
//! - Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude`
//!   (macOS), `%APPDATA%\Claude` (Windows), `~/.config/Claude` (Linux): exactly
//!   `dirs::config_dir()/Claude`; `mcpServers.NAME = {command, args, env}`, no timeout field.
//! - Cursor: `~/.cursor/mcp.json`, the same `mcpServers` shape (cursor.com/docs/mcp).
//! - Codex: `[mcp_servers.NAME]` with `command`, `args`, `tool_timeout_sec` (default 60)
//!   in `$CODEX_HOME/config.toml`, `CODEX_HOME` defaulting to `~/.codex` (Codex's config
//!   and environment-variable docs).
//! - Gemini CLI: `mcpServers.NAME = {command, args, env, cwd, timeout (ms), trust, ...}` in
//!   `~/.gemini/settings.json` (its `docs/tools/mcp-server.md`).

use crate::config;
use crate::term::{err, out};
use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The server's name in every host's configuration.
pub const SERVER: &str = "askuser";
/// Claude Code's `MCP_TOOL_TIMEOUT` and Gemini CLI's `timeout`: a day, in milliseconds.
pub const DAY_MS: u64 = 86_400_000;
/// Codex's `tool_timeout_sec`: a day.
pub const DAY_SECS: u64 = 86_400;
/// `--max-wait` for hosts that fail a tool call after a fixed ~60 s (Claude Desktop, Cursor).
pub const SHORT_WAIT: u64 = 50;
/// The rule that turns Claude Code's own AskUserQuestion off.
pub const DENY_RULE: &str = "AskUserQuestion";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Code: ~/.claude.json and ~/.claude/settings.json.
    ClaudeCode,
    /// Claude Desktop: claude_desktop_config.json.
    ClaudeDesktop,
    /// Codex: ~/.codex/config.toml.
    Codex,
    /// Gemini CLI: ~/.gemini/settings.json.
    GeminiCli,
    /// Cursor: ~/.cursor/mcp.json.
    Cursor,
    /// Any MCP client: prints `{"mcpServers": {...}}` (or merges it into --config FILE).
    Json,
}

impl Host {
    /// The hosts with a config file of their own.
    pub const ALL: [Host; 5] = [Host::ClaudeCode, Host::ClaudeDesktop, Host::Codex, Host::GeminiCli, Host::Cursor];

    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Codex => "codex",
            Host::GeminiCli => "gemini-cli",
            Host::Cursor => "cursor",
            Host::Json => "json",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Host::ClaudeCode => "Claude Code",
            Host::ClaudeDesktop => "Claude Desktop",
            Host::Codex => "Codex",
            Host::GeminiCli => "Gemini CLI",
            Host::Cursor => "Cursor",
            Host::Json => "your MCP client",
        }
    }

    /// Hosts without a tool-call timeout setting fail a call after ~60 s: askuser returns
    /// "not answered yet, call again" before that.
    pub fn default_max_wait(self) -> Option<u64> {
        matches!(self, Host::ClaudeDesktop | Host::Cursor).then_some(SHORT_WAIT)
    }

    fn next_step(self) -> &'static str {
        match self {
            Host::ClaudeCode => "restart Claude Code (running sessions keep the servers they started with); `/mcp` lists askuser",
            Host::ClaudeDesktop => "quit Claude Desktop completely and start it again",
            Host::Codex => "start a new Codex session; `codex mcp list` lists askuser",
            Host::GeminiCli => "restart Gemini CLI; `/mcp` lists askuser",
            Host::Cursor => "restart Cursor (or switch askuser on under Settings → MCP)",
            Host::Json => "restart your MCP client",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// The host to set up.
    #[arg(value_enum)]
    pub host: Host,
    /// Print the configuration instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// The config file to edit, instead of the host's own under your home directory.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Claude Code only: its settings.json, instead of ~/.claude/settings.json.
    #[arg(long, value_name = "PATH")]
    pub settings: Option<PathBuf>,
    /// Passed on to `askuser mcp`: the agent's name in the inbox.
    #[arg(long, value_name = "NAME")]
    pub agent_name: Option<String>,
    /// Passed on to `askuser mcp`: return "call again" after this many seconds (default: 50
    /// for Claude Desktop and Cursor, which fail a tool call after ~60 s; none for the others).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_wait: Option<u64>,
    /// Passed on to `askuser mcp`: its data directory (made absolute).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// What a config file must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `mcpServers.askuser` in a JSON file.
    JsonServer,
    /// `env.MCP_TOOL_TIMEOUT` and `permissions.deny` in Claude Code's settings.json.
    ClaudeSettings,
    /// `[mcp_servers.askuser]` in Codex's config.toml.
    TomlServer,
}

/// One file `setup` edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub part: Part,
    pub path: PathBuf,
}

/// The command a host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub command: String,
    pub args: Vec<String>,
}

/// A file's new text and what changed in it; no changes means already set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub text: String,
    pub changes: Vec<String>,
}

fn home() -> anyhow::Result<PathBuf> {
    dirs::home_dir().ok_or_else(|| anyhow!("this user has no home directory: pass --config PATH"))
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Claude Code's two files: `~/.claude.json` and `~/.claude/settings.json`, or both in
/// `$CLAUDE_CONFIG_DIR`.
fn claude_files() -> anyhow::Result<(PathBuf, PathBuf)> {
    Ok(match env_dir("CLAUDE_CONFIG_DIR") {
        Some(dir) => (dir.join(".claude.json"), dir.join("settings.json")),
        None => {
            let home = home()?;
            (home.join(".claude.json"), home.join(".claude").join("settings.json"))
        }
    })
}

/// Where a host keeps its MCP servers.
fn default_file(host: Host) -> anyhow::Result<PathBuf> {
    Ok(match host {
        Host::ClaudeCode => claude_files()?.0,
        Host::ClaudeDesktop => {
            let dir = dirs::config_dir().ok_or_else(|| anyhow!("this user has no configuration directory: pass --config PATH"))?;
            dir.join("Claude").join("claude_desktop_config.json")
        }
        Host::Codex => match env_dir("CODEX_HOME") {
            Some(dir) => dir.join("config.toml"),
            None => home()?.join(".codex").join("config.toml"),
        },
        Host::GeminiCli => home()?.join(".gemini").join("settings.json"),
        Host::Cursor => home()?.join(".cursor").join("mcp.json"),
        Host::Json => bail!("json has no file of its own: pass --config FILE"),
    })
}

/// The files a host's setup edits: `config` (and, for Claude Code, `settings`) replace
/// the host's own locations. `json` without `config` has none: it is printed.
pub fn targets(host: Host, config: Option<&Path>, settings: Option<&Path>) -> anyhow::Result<Vec<Target>> {
    if settings.is_some() && host != Host::ClaudeCode {
        bail!("--settings is for claude-code only");
    }
    if host == Host::Json && config.is_none() {
        return Ok(vec![]);
    }
    let path = match config {
        Some(p) => p.to_path_buf(),
        None => default_file(host)?,
    };
    let part = if host == Host::Codex { Part::TomlServer } else { Part::JsonServer };
    let mut targets = vec![Target { part, path }];
    if host == Host::ClaudeCode {
        let path = match settings {
            Some(p) => p.to_path_buf(),
            None => claude_files()?.1,
        };
        targets.push(Target { part: Part::ClaudeSettings, path });
    }
    Ok(targets)
}

/// `askuser mcp` with the flags passed through, run by this very executable (so no PATH
/// lookup is needed).
pub fn entry(host: Host, args: &SetupArgs, exe: &Path) -> anyhow::Result<Entry> {
    let command = exe.to_str().ok_or_else(|| anyhow!("the path of this executable is not UTF-8: {}", exe.display()))?.to_owned();
    let mut a = vec!["mcp".to_owned()];
    if let Some(name) = &args.agent_name {
        a.extend(["--agent-name".to_owned(), name.clone()]);
    }
    if let Some(seconds) = args.max_wait.or(host.default_max_wait()) {
        a.extend(["--max-wait".to_owned(), seconds.to_string()]);
    }
    if let Some(dir) = &args.data_dir {
        // The host starts askuser in a directory of its own choosing.
        let dir = std::path::absolute(dir).with_context(|| format!("cannot make {} absolute", dir.display()))?;
        let dir = dir.to_str().ok_or_else(|| anyhow!("the data directory's path is not UTF-8: {}", dir.display()))?;
        a.extend(["--data-dir".to_owned(), dir.to_owned()]);
    }
    Ok(Entry { command, args: a })
}

/// 1-based line and column (in characters) of a byte offset.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// A JSON config file's text as a value (an empty file is an empty object); an error
/// names the file, line and column.
pub fn parse_json(path: &Path, text: &str) -> anyhow::Result<Value> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(body).map_err(|e| {
        let full = e.to_string();
        let message = full.rsplit_once(" at line ").map_or(full.as_str(), |(m, _)| m);
        let at = body.lines().nth(e.line().saturating_sub(1)).and_then(|l| l.get(e.column().saturating_sub(1)..)).unwrap_or("");
        let hint = if at.starts_with('/') { " (comments are not JSON: remove them, or add askuser's entry by hand)" } else { "" };
        anyhow!("{}:{}:{}: not valid JSON: {message}{hint}", path.display(), e.line(), e.column())
    })
}

/// A TOML config file's text as an editable document; an error names the file, line and column.
pub fn parse_toml(path: &Path, text: &str) -> anyhow::Result<toml_edit::DocumentMut> {
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let (line, column) = position(text, e.span().map_or(0, |s| s.start));
        anyhow!("{}:{line}:{column}: not valid TOML: {}", path.display(), e.message())
    })
}

/// What a JSON value is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The object at `key`, created when absent.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str, path: &str) -> anyhow::Result<&'a mut Map<String, Value>> {
    match map.entry(key).or_insert_with(|| Value::Object(Map::new())) {
        Value::Object(o) => Ok(o),
        other => bail!("{path} is {}, not an object: fix it by hand", kind(other)),
    }
}

/// Sets `key` to `want` unless it already is, and says so.
fn set_exact(map: &mut Map<String, Value>, path: &str, key: &str, want: Value, changes: &mut Vec<String>) {
    match map.get(key) {
        Some(v) if *v == want => {}
        Some(v) => changes.push(format!("{path}.{key}: {v} → {want}")),
        None => changes.push(format!("{path}.{key}: set to {want}")),
    }
    map.insert(key.to_owned(), want);
}

/// A timeout as a number or a string of digits (environment variables are strings).
fn as_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// Sets `key` to `want` unless it is at least that already (a longer wait is kept).
fn set_at_least(map: &mut Map<String, Value>, path: &str, key: &str, want: Value, changes: &mut Vec<String>) {
    let enough = map.get(key).and_then(as_number).zip(as_number(&want)).is_some_and(|(have, min)| have >= min);
    if !enough {
        set_exact(map, path, key, want, changes);
    }
}

fn json_args(entry: &Entry) -> Value {
    Value::Array(entry.args.iter().cloned().map(Value::String).collect())
}

/// `mcpServers.askuser`: the keys askuser needs, every other key of the entry kept.
fn edit_json_server(host: Host, root: &mut Map<String, Value>, entry: &Entry) -> anyhow::Result<Vec<String>> {
    let servers = object_at(root, "mcpServers", "mcpServers")?;
    let path = format!("mcpServers.{SERVER}");
    let mut changes = vec![];
    let server = match servers.entry(SERVER).or_insert_with(|| {
        changes.push(format!("added {path}"));
        Value::Object(Map::new())
    }) {
        Value::Object(o) => o,
        other => bail!("{path} is {}, not an object: fix or remove it by hand", kind(other)),
    };
    let added = !changes.is_empty();
    let mut quiet = vec![];
    let log = if added { &mut quiet } else { &mut changes };
    if host == Host::ClaudeCode {
        set_exact(server, &path, "type", Value::from("stdio"), log);
    }
    set_exact(server, &path, "command", Value::from(entry.command.as_str()), log);
    set_exact(server, &path, "args", json_args(entry), log);
    match host {
        Host::ClaudeCode if !server.contains_key("env") => {
            server.insert("env".to_owned(), Value::Object(Map::new()));
        }
        Host::GeminiCli => set_at_least(server, &path, "timeout", Value::from(DAY_MS), log),
        _ => {}
    }
    Ok(changes)
}

/// Claude Code's settings.json: the tool-call timeout, and AskUserQuestion denied.
fn edit_claude_settings(root: &mut Map<String, Value>) -> anyhow::Result<Vec<String>> {
    let mut changes = vec![];
    let env = object_at(root, "env", "env")?;
    set_at_least(env, "env", "MCP_TOOL_TIMEOUT", Value::from(DAY_MS.to_string()), &mut changes);
    let permissions = object_at(root, "permissions", "permissions")?;
    match permissions.entry("deny").or_insert_with(|| Value::Array(vec![])) {
        Value::Array(rules) => {
            if !rules.iter().any(|r| r.as_str() == Some(DENY_RULE)) {
                rules.push(Value::from(DENY_RULE));
                changes.push(format!("permissions.deny: added \"{DENY_RULE}\""));
            }
        }
        other => bail!("permissions.deny is {}, not a list: fix it by hand", kind(other)),
    }
    Ok(changes)
}

/// A TOML value as written, without its comments and spacing.
fn bare(v: &toml_edit::Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

/// Whether two TOML values mean the same (`'mcp'` is `"mcp"`).
fn same(a: &toml_edit::Value, b: &toml_edit::Value) -> bool {
    use toml_edit::Value as V;
    match (a, b) {
        (V::String(x), V::String(y)) => x.value() == y.value(),
        (V::Integer(x), V::Integer(y)) => x.value() == y.value(),
        (V::Array(x), V::Array(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| same(x, y)),
        _ => false,
    }
}

/// Sets a TOML key to `want` unless it already means that, keeping the old value's comments.
fn set_toml(table: &mut dyn toml_edit::TableLike, path: &str, key: &str, mut want: toml_edit::Value, changes: &mut Vec<String>) {
    match table.get(key).and_then(|i| i.as_value()) {
        Some(v) if same(v, &want) => return,
        Some(v) => {
            changes.push(format!("{path}.{key}: {} → {}", bare(v), bare(&want)));
            *want.decor_mut() = v.decor().clone();
        }
        None => changes.push(format!("{path}.{key}: set to {}", bare(&want))),
    }
    table.insert(key, toml_edit::Item::Value(want));
}

fn toml_args(entry: &Entry) -> toml_edit::Value {
    toml_edit::Value::Array(entry.args.iter().collect())
}

/// Codex's `[mcp_servers.askuser]`: command, args, tool_timeout_sec; comments, the other
/// servers and every other table kept as they are.
fn edit_toml_server(path: &Path, old: &str, entry: &Entry) -> anyhow::Result<Edit> {
    let mut doc = parse_toml(path, old)?;
    let root = doc.as_table_mut();
    if !root.contains_key("mcp_servers") {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        root.insert("mcp_servers", toml_edit::Item::Table(t));
    }
    let servers = root.get_mut("mcp_servers").expect("inserted above");
    let inline = servers.is_inline_table();
    let servers = servers.as_table_like_mut().ok_or_else(|| anyhow!("mcp_servers is not a table: fix it by hand"))?;
    let name = format!("mcp_servers.{SERVER}");
    let mut changes = vec![];
    match servers.get_mut(SERVER) {
        None => {
            let mut t = toml_edit::Table::new();
            t.insert("command", toml_edit::value(entry.command.as_str()));
            t.insert("args", toml_edit::Item::Value(toml_args(entry)));
            let item = if inline {
                t.insert("tool_timeout_sec", toml_edit::value(DAY_SECS as i64));
                toml_edit::Item::Value(toml_edit::Value::InlineTable(t.into_inline_table()))
            } else {
                // TOML 1.0 has no comments inside an inline table: only a table gets one.
                let timeout = toml_edit::Value::from(DAY_SECS as i64).decorated(" ", "  # a person may take hours to answer");
                t.insert("tool_timeout_sec", toml_edit::Item::Value(timeout));
                toml_edit::Item::Table(t)
            };
            servers.insert(SERVER, item);
            changes.push(format!("added [{name}]"));
        }
        Some(item) => {
            let t = item.as_table_like_mut().ok_or_else(|| anyhow!("{name} is not a table: fix or remove it by hand"))?;
            set_toml(t, &name, "command", entry.command.as_str().into(), &mut changes);
            set_toml(t, &name, "args", toml_args(entry), &mut changes);
            let have = t.get("tool_timeout_sec").and_then(|i| i.as_integer());
            if have.is_none_or(|s| s < DAY_SECS as i64) {
                set_toml(t, &name, "tool_timeout_sec", (DAY_SECS as i64).into(), &mut changes);
            }
        }
    }
    Ok(Edit { text: doc.to_string(), changes })
}

/// The edit `part` needs in a file whose text is `old` (`""` for a new file).
pub fn edit(host: Host, part: Part, path: &Path, old: &str, entry: &Entry) -> anyhow::Result<Edit> {
    if part == Part::TomlServer {
        return edit_toml_server(path, old, entry);
    }
    let mut value = parse_json(path, old)?;
    let root = match &mut value {
        Value::Object(o) => o,
        other => bail!("{} holds {} at the top, not an object: fix it by hand", path.display(), kind(other)),
    };
    let changes = match part {
        Part::ClaudeSettings => edit_claude_settings(root),
        _ => edit_json_server(host, root, entry),
    }
    .with_context(|| path.display().to_string())?;
    let text = serde_json::to_string_pretty(&value).expect("JSON values always serialize") + "\n";
    Ok(Edit { text, changes })
}

/// askuser's entry as a host's config file has it (for `askuser doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Gemini CLI's `timeout` (ms), Codex's `tool_timeout_sec` (in ms here).
    pub timeout_ms: Option<u64>,
    /// Claude Code: the project it is set up for, when not for every project.
    pub project: Option<String>,
}

impl Installed {
    /// `--max-wait SECONDS` among the args.
    pub fn max_wait(&self) -> Option<u64> {
        self.args.iter().position(|a| a == "--max-wait").and_then(|i| self.args.get(i + 1)).and_then(|s| s.parse().ok())
    }
}

fn installed_json(server: &Value, project: Option<String>) -> Installed {
    Installed {
        command: server["command"].as_str().map(str::to_owned),
        args: server["args"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default(),
        timeout_ms: server.get("timeout").and_then(as_number),
        project,
    }
}

/// Finds askuser's entry in a server file (`JsonServer` or `TomlServer`); `None` when absent.
pub fn installed(target: &Target, text: &str) -> anyhow::Result<Option<Installed>> {
    if target.part == Part::TomlServer {
        let doc = parse_toml(&target.path, text)?;
        let Some(t) = doc.get("mcp_servers").and_then(|s| s.get(SERVER)).and_then(|s| s.as_table_like()) else {
            return Ok(None);
        };
        let args = t.get("args").and_then(|a| a.as_array()).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
        return Ok(Some(Installed {
            command: t.get("command").and_then(|c| c.as_str()).map(str::to_owned),
            args: args.unwrap_or_default(),
            timeout_ms: t.get("tool_timeout_sec").and_then(|s| s.as_integer()).map(|s| (s.max(0) as u64).saturating_mul(1000)),
            project: None,
        }));
    }
    let root = parse_json(&target.path, text)?;
    if let Some(server) = root.get("mcpServers").and_then(|s| s.get(SERVER)) {
        return Ok(Some(installed_json(server, None)));
    }
    // Claude Code's local scope: `projects.<dir>.mcpServers`.
    let projects = root.get("projects").and_then(Value::as_object);
    let local = projects.into_iter().flatten().find_map(|(dir, p)| p.get("mcpServers").and_then(|s| s.get(SERVER)).map(|s| (dir, s)));
    Ok(local.map(|(dir, server)| installed_json(server, Some(dir.clone()))))
}

/// Claude Code's settings.json: `env.MCP_TOOL_TIMEOUT` and whether AskUserQuestion is denied.
pub fn claude_settings(path: &Path, text: &str) -> anyhow::Result<(Option<u64>, bool)> {
    let root = parse_json(path, text)?;
    let timeout = root.get("env").and_then(|e| e.get("MCP_TOOL_TIMEOUT")).and_then(as_number);
    let denied =
        root.pointer("/permissions/deny").and_then(Value::as_array).is_some_and(|d| d.iter().any(|r| r.as_str() == Some(DENY_RULE)));
    Ok((timeout, denied))
}

/// Reads a file's bytes; `None` when it does not exist.
pub fn read(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// A file's bytes as text.
pub fn text<'a>(path: &Path, bytes: &'a [u8]) -> anyhow::Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = position(&String::from_utf8_lossy(bytes), e.valid_up_to());
        anyhow!("{}:{line}:{column}: not UTF-8 text", path.display())
    })
}

/// Copies `bytes` to `<path>.askuser-backup`, or `.askuser-backup.2`, `.3`, ... : a new
/// file each time (created exclusively, never through a symlink), user-only.
fn backup(path: &Path, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    for n in 1..=1000 {
        let suffix = if n == 1 { ".askuser-backup".to_owned() } else { format!(".askuser-backup.{n}") };
        let mut name = path.as_os_str().to_owned();
        name.push(&suffix);
        let candidate = PathBuf::from(name);
        match config::create_private(&candidate) {
            Ok(mut f) => {
                f.write_all(bytes)
                    .and_then(|()| f.sync_all())
                    .with_context(|| format!("cannot write the backup {}", candidate.display()))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot write the backup {}", candidate.display())),
        }
    }
    bail!("{} already has 1000 askuser backups: remove some", path.display())
}

/// Replaces `path` with `text` atomically (a temporary file beside it, then a rename),
/// keeping its permissions; a symlink is followed, so a dotfiles link stays a link. The
/// original is backed up first; if the file changed since it was read (the host wrote it
/// meanwhile), nothing is written. Returns the backup's path.
fn write(path: &Path, original: Option<&[u8]>, text: &str) -> anyhow::Result<Option<PathBuf>> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let real = if is_link {
        fs::canonicalize(path).with_context(|| format!("cannot follow the symlink {}", path.display()))?
    } else {
        path.to_path_buf()
    };
    let dir = real.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file_name = real.file_name().ok_or_else(|| anyhow!("{} is not a file name", real.display()))?;
    let tmp = dir.join(format!(".{}.askuser-{}.tmp", file_name.to_string_lossy(), std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut f = config::create_private(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).with_context(|| format!("cannot write {}", tmp.display()))?;
        if original.is_some() {
            let perms = fs::metadata(&real).with_context(|| format!("cannot read {}", real.display()))?.permissions();
            fs::set_permissions(&tmp, perms).with_context(|| format!("cannot set the permissions of {}", tmp.display()))?;
        }
        if read(&real)?.as_deref() != original {
            bail!(
                "{} changed while askuser was editing it (is the host running and writing it?); nothing was changed: run again",
                path.display()
            );
        }
        let saved = original.map(|bytes| backup(path, bytes)).transpose()?;
        fs::rename(&tmp, &real).with_context(|| format!("cannot replace {}", real.display()))?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(saved)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// One file's plan: its edit, and the bytes it had.
struct Plan {
    target: Target,
    original: Option<Vec<u8>>,
    edit: Edit,
}

fn plan(host: Host, target: Target, entry: &Entry) -> anyhow::Result<Plan> {
    let original = read(&target.path)?;
    let old = match &original {
        Some(bytes) => text(&target.path, bytes)?,
        None => "",
    };
    let edit = edit(host, target.part, &target.path, old, entry)?;
    Ok(Plan { target, original, edit })
}

/// `askuser setup`.
pub fn run(args: &SetupArgs) -> ExitCode {
    match setup(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            for line in format!("{e:#}").lines() {
                err!("askuser: {line}");
            }
            ExitCode::FAILURE
        }
    }
}

fn setup(args: &SetupArgs) -> anyhow::Result<()> {
    let host = args.host;
    let exe = std::env::current_exe().context("cannot find the path of this executable")?;
    let entry = entry(host, args, &exe)?;
    if args.print || (host == Host::Json && args.config.is_none()) {
        return print(host, args, &entry);
    }
    let targets = targets(host, args.config.as_deref(), args.settings.as_deref())?;
    // Every file is planned before any is written: one that does not parse leaves all as they are.
    let plans = targets
        .into_iter()
        .map(|t| plan(host, t, &entry))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(|e| anyhow!("{e:#}\nnothing was changed: fix the file (or move it away) and run `askuser setup {0}` again, or add askuser's entry by hand (`askuser setup {0} --print` shows it)", host.id()))?;
    let mut changed = false;
    for p in &plans {
        let path = p.target.path.display();
        if p.edit.changes.is_empty() {
            out!("{path}: already set up");
            continue;
        }
        let saved = write(&p.target.path, p.original.as_deref(), &p.edit.text)?;
        changed = true;
        out!("{path}: {}", if p.original.is_some() { "updated" } else { "created" });
        for c in &p.edit.changes {
            out!("  {c}");
        }
        if let Some(b) = saved {
            out!("  the previous version is in {}", b.display());
        }
    }
    if !changed {
        out!("askuser is already set up for {}: nothing changed.", host.title());
        return Ok(());
    }
    out!("{} runs: {}", host.title(), shell_words(std::iter::once(&entry.command).chain(&entry.args)));
    if host == Host::ClaudeCode {
        out!("AskUserQuestion is denied, so headless runs ask through askuser; remove it from permissions.deny to get Claude Code's own dialog back.");
    }
    out!("Next: {}.", host.next_step());
    out!("Then start the bridge with `askuser serve` and open the address it prints (or let `askuser mcp` start one); `askuser doctor` checks everything.");
    Ok(())
}

/// A command line as a shell would read it back: words with spaces or quotes single-quoted.
pub fn shell_words<'a>(words: impl IntoIterator<Item = &'a String>) -> String {
    let quote = |w: &str| {
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)) {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', "'\\''"))
        }
    };
    words.into_iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// `--print`: what a new file would hold, on stdout; where it goes, on stderr.
fn print(host: Host, args: &SetupArgs, entry: &Entry) -> anyhow::Result<()> {
    let parts: Vec<(Part, Option<PathBuf>)> = match targets(host, args.config.as_deref(), args.settings.as_deref()) {
        Ok(ts) if !ts.is_empty() => ts.into_iter().map(|t| (t.part, Some(t.path))).collect(),
        Ok(_) | Err(_) => match host {
            Host::ClaudeCode => vec![(Part::JsonServer, None), (Part::ClaudeSettings, None)],
            Host::Codex => vec![(Part::TomlServer, None)],
            _ => vec![(Part::JsonServer, None)],
        },
    };
    for (part, path) in parts {
        let shown = path.as_deref().unwrap_or(Path::new("-"));
        match &path {
            Some(p) => err!("# merge into {}:", p.display()),
            None => err!("# add to your MCP client's configuration (or merge it into a file with --config FILE):"),
        }
        print!("{}", crate::term::safe_json(&edit(host, part, shown, "", entry)?.text));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(args: &[&str]) -> Entry {
        Entry { command: "/opt/askuser".into(), args: args.iter().map(|a| a.to_string()).collect() }
    }

    #[test]
    fn a_json_server_is_added_beside_the_others_and_updated_in_place() {
        let p = Path::new("mcp.json");
        let old = "{\"a\": 1, \"mcpServers\": {\"x\": {\"command\": \"x\"}}, \"z\": [1.5, null]}";
        let e = edit(Host::Cursor, Part::JsonServer, p, old, &entry(&["mcp", "--max-wait", "50"])).unwrap();
        assert_eq!(e.changes, ["added mcpServers.askuser"]);
        let v: Value = serde_json::from_str(&e.text).unwrap();
        let keys: Vec<&str> = v["mcpServers"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["x", "askuser"]);
        assert_eq!(v["z"], serde_json::json!([1.5, null]));
        assert!(e.text.starts_with("{\n  \"a\": 1,\n"), "two-space indent, order kept: {}", e.text);
        // Again: nothing to do.
        assert!(edit(Host::Cursor, Part::JsonServer, p, &e.text, &entry(&["mcp", "--max-wait", "50"])).unwrap().changes.is_empty());
        // Other args: updated, the entry's own extra keys kept.
        let old = r#"{"mcpServers": {"askuser": {"command": "askuser", "args": ["mcp"], "disabled": false}}}"#;
        let e = edit(Host::ClaudeDesktop, Part::JsonServer, p, old, &entry(&["mcp", "--max-wait", "50"])).unwrap();
        assert_eq!(
            e.changes,
            [
                r#"mcpServers.askuser.command: "askuser" → "/opt/askuser""#,
                r#"mcpServers.askuser.args: ["mcp"] → ["mcp","--max-wait","50"]"#
            ]
        );
        assert_eq!(serde_json::from_str::<Value>(&e.text).unwrap()["mcpServers"]["askuser"]["disabled"], false);
    }

    #[test]
    fn longer_timeouts_are_kept_shorter_ones_raised() {
        let p = Path::new("settings.json");
        let old = r#"{"mcpServers": {"askuser": {"command": "/opt/askuser", "args": ["mcp"], "timeout": 999999999}}}"#;
        assert!(edit(Host::GeminiCli, Part::JsonServer, p, old, &entry(&["mcp"])).unwrap().changes.is_empty());
        let old = r#"{"env": {"MCP_TOOL_TIMEOUT": "60000"}, "permissions": {"deny": ["Bash(rm:*)"]}}"#;
        let e = edit(Host::ClaudeCode, Part::ClaudeSettings, p, old, &entry(&["mcp"])).unwrap();
        assert_eq!(e.changes, [r#"env.MCP_TOOL_TIMEOUT: "60000" → "86400000""#, r#"permissions.deny: added "AskUserQuestion""#]);
        let toml = "[mcp_servers.askuser]\ncommand = \"/opt/askuser\"\nargs = [\"mcp\"]\ntool_timeout_sec = 30 # short\n";
        let e = edit(Host::Codex, Part::TomlServer, p, toml, &entry(&["mcp"])).unwrap();
        assert_eq!(e.changes, ["mcp_servers.askuser.tool_timeout_sec: 30 → 86400"]);
        assert!(e.text.contains("tool_timeout_sec = 86400 # short\n"), "the comment stays: {}", e.text);
    }

    #[test]
    fn shapes_askuser_cannot_merge_into_are_refused() {
        let p = Path::new("c.json");
        for (old, says) in [
            ("[]", "holds a list at the top"),
            (r#"{"mcpServers": []}"#, "mcpServers is a list"),
            (r#"{"mcpServers": {"askuser": "x"}}"#, "mcpServers.askuser is a string"),
        ] {
            let e = edit(Host::Cursor, Part::JsonServer, p, old, &entry(&["mcp"])).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{old}: {e:#}");
        }
        let e = edit(Host::ClaudeCode, Part::ClaudeSettings, p, r#"{"permissions": {"deny": "Bash"}}"#, &entry(&["mcp"])).unwrap_err();
        assert!(format!("{e:#}").contains("permissions.deny is a string"), "{e:#}");
        let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers = 3\n", &entry(&["mcp"])).unwrap_err();
        assert!(format!("{e:#}").contains("mcp_servers is not a table"), "{e:#}");
    }

    #[test]
    fn parse_errors_name_the_line_and_column() {
        let e = parse_json(Path::new("/x/s.json"), "{\n  // mine\n  \"a\": 1\n}").unwrap_err().to_string();
        assert!(e.starts_with("/x/s.json:2:3: not valid JSON: ") && e.contains("comments are not JSON"), "{e}");
        let e = parse_toml(Path::new("/x/c.toml"), "a = 1\n[b]\nc = \"é\nd = 2\n").unwrap_err().to_string();
        assert!(e.starts_with("/x/c.toml:3:"), "{e}");
        assert!(parse_json(Path::new("e.json"), " \n").unwrap().as_object().unwrap().is_empty(), "an empty file is an empty object");
    }

    #[test]
    fn codex_inline_and_dotted_servers_are_merged_too() {
        let p = Path::new("config.toml");
        let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers = { other = { command = \"o\" } }\n", &entry(&["mcp"])).unwrap();
        let doc: toml_edit::DocumentMut = e.text.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["askuser"]["tool_timeout_sec"].as_integer(), Some(86400), "{}", e.text);
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));
        let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers.other.command = \"o\"\n", &entry(&["mcp"])).unwrap();
        let doc: toml_edit::DocumentMut = e.text.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["askuser"]["command"].as_str(), Some("/opt/askuser"), "{}", e.text);
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));
    }
}
