//! `askuser setup HOST`: writes a host's MCP configuration so that it runs `askuser mcp`
//! and offers its tool headless as written (`claude -p`, `codex exec`, `gemini -p` need
//! nothing more on their command line); `askuser setup HOST --remove` takes out exactly
//! what setup adds. docs/agents.md has the table, host by host.
//!
//! The entry runs this very executable by its path, or with `--via npx` / `--via uvx` the
//! published package through its runner, as MCP servers are usually added:
//! `npx -y askuser mcp …` (the npm package) or `uvx --from askuser-mcp askuser mcp …` (the
//! Python wheel: "askuser" on PyPI is an unrelated project, so the wheel is askuser-mcp;
//! packaging/ and scripts/package build both).
//!
//! Someone else's config file is edited with care. It is parsed first, and left alone
//! when it does not parse (the error names the file, line and column). It is edited in
//! place, as text: only askuser's own entry (and, for Claude Code, two settings) change;
//! every other byte, comments and spacing included, stays where it was, so a setup
//! followed by `--remove` gives back the very bytes of a file whose only change was
//! askuser's. The user's own extra arguments in askuser's entry (`--to team`, say) are
//! kept; only the flags setup writes are updated. The original goes to a backup beside
//! it that never replaces an earlier backup. The new file replaces the old one
//! atomically, with the old one's permissions. A second run finds nothing to change,
//! says "already set up" and writes nothing.
//!
//! What each host reads. Claude Code 2.1.197, Codex 0.169.0 and Gemini CLI 0.61.0 were
//! run headless here with what setup writes (tests/hosts; "seen" below); the file
//! locations and the other two hosts are from their docs (search), not run here.
//! - Claude Code: `mcpServers.NAME = {"type": "stdio", "command", "args", "env": {}}` at
//!   the top of `~/.claude.json` (what `claude mcp add --scope user` writes), and in
//!   `~/.claude/settings.json`: `env.MCP_TOOL_TIMEOUT` (ms; at the limit Claude Code
//!   cancels the call, seen) and `permissions.allow` with `mcp__NAME__TOOL`: in `claude -p`
//!   an MCP tool that is not allowed is refused ("Claude requested permissions to use …,
//!   but you haven't granted it yet", seen). Setup no longer denies AskUserQuestion, as
//!   askuser once did: the rule took Claude Code's own question dialog away from
//!   interactive sessions, while in `-p` that dialog is offered only with
//!   `--permission-prompt-tool` (reported by users, not seen here). `CLAUDE_CONFIG_DIR` moves
//!   both files (its env-vars docs; that `.claude.json` then sits beside `settings.json`
//!   is from tools that honour it).
//! - Codex: `[mcp_servers.NAME]` with `command`, `args`, `tool_timeout_sec` (default 60;
//!   at the limit the model reads "timed out awaiting tools/call after Ns", seen) in
//!   `$CODEX_HOME/config.toml`, `CODEX_HOME` defaulting to `~/.codex`.
//! - Gemini CLI: `mcpServers.NAME = {command, args, timeout (ms), trust, ...}` in
//!   `~/.gemini/settings.json`, which it reads as JSON with comments (strip-json-comments,
//!   then JSON.parse: comments yes, trailing commas no; its bundled source). Headless it
//!   hides every tool of a server without `"trust": true`, and every tool named
//!   `ask_user` (its own built-in's name), so setup writes both `"trust": true` and
//!   `--tool-name ask_human` (seen). A non-empty `mcp.allowed` without the server, or
//!   `mcp.excluded` with it, keeps it from starting (its source): setup says so, and
//!   leaves the user's lists alone. Gemini rewrites settings.json at start (renaming old
//!   keys), so `--remove` takes out what setup added rather than restoring a backup.
//! - Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude`
//!   (macOS), `%APPDATA%\Claude` (Windows), `~/.config/Claude` (Linux): exactly
//!   `dirs::config_dir()/Claude`; `mcpServers.NAME = {command, args, env}`, no timeout field.
//! - Cursor: `~/.cursor/mcp.json`, the same `mcpServers` shape (cursor.com/docs/mcp).
//! - OpenCode 1.18.33 (seen): `mcp.NAME = {"type": "local", "command": [program, args…],
//!   "environment": {}}` in `$XDG_CONFIG_HOME/opencode/opencode.jsonc` (or `opencode.json`
//!   when that is the one there), JSONC: comments and trailing commas. Setup writes it
//!   itself: `opencode mcp add` stores `--max-wait 50` with 50 as a number, and the
//!   config then fails to load. Its timeout (60 s) starts again at each progress
//!   notification, so none is written; one shorter than the progress interval is raised.
//! - Copilot CLI 1.0.102 (seen): `mcpServers.NAME = {"type": "local", command, args, env,
//!   "tools": ["*"], "timeout" (ms)}` in `$COPILOT_HOME/mcp-config.json` (`~/.copilot`).
//!   `copilot -p` runs the tool without `--allow-tool` because askuser marks it `readOnlyHint`.
//! - Cline 3.0.65 (seen): `mcpServers.NAME = {"transport": {"type": "stdio", command, args,
//!   env}, "timeout" (seconds)}` in `~/.cline/data/settings/cline_mcp_settings.json`
//!   (`$CLINE_DIR`, `$CLINE_DATA_DIR`). The timeout is clamped to an hour and sends no
//!   cancel, so setup writes 3600 and `--max-wait 3540`. `cline mcp add` has no `--env`.
//! - Qwen Code 0.24.4 (seen): `mcpServers.NAME = {command, args, timeout (ms), trust,
//!   alwaysLoadTools}` in `$QWEN_HOME/settings.json` (`~/.qwen`), read as Gemini CLI reads
//!   its own. Headless it refuses an untrusted tool and hides one not always loaded behind
//!   its tool search; its 600 s timeout ignores progress, so setup writes a day.
//!
//! JSON is edited with jsonc-parser's syntax tree (dprint's parser, also Deno's): it keeps
//! every comment and space, infers the file's indentation for what it inserts, and
//! removes a property with its comma, which editing spans by hand would have to redo. It
//! spreads over lines an object written on one line that it adds a key to, so there a
//! setup and `--remove` give back the same values, not the same bytes.

use crate::mcp::{GEMINI_TOOL, TOOL};
use crate::term::{err, out};
use anyhow::{anyhow, bail, Context};
use askuser_bridge::files;
use clap::{Args, ValueEnum};
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstObjectProp, CstRootNode};
use serde_json::{json, Map, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The server's name in every host's configuration, unless `--name` says otherwise.
pub const SERVER: &str = "askuser";
/// Claude Code's `MCP_TOOL_TIMEOUT` and Gemini CLI's `timeout`: a day, in milliseconds.
pub const DAY_MS: u64 = 86_400_000;
/// Codex's `tool_timeout_sec`: a day.
pub const DAY_SECS: u64 = 86_400;
/// `--max-wait` for hosts that fail a tool call after a fixed ~60 s (Claude Desktop, Cursor).
pub const SHORT_WAIT: u64 = 50;
/// How often `askuser mcp` sends progress while it waits (its `--progress-seconds`), in ms.
pub const PROGRESS_MS: u64 = 10_000;
/// OpenCode's own default timeout (ms), which each progress notification starts again.
pub const OPENCODE_TIMEOUT: u64 = 60_000;
/// Cline's `timeout` (seconds): the most it takes (it clamps to 1-3600).
pub const CLINE_TIMEOUT: u64 = 3600;
/// `--max-wait` for Cline: a minute before its longest timeout, which sends no cancel.
pub const CLINE_WAIT: u64 = 3540;
/// Claude Code's own question tool, which askuser once denied in `permissions.deny`.
pub const DENY_RULE: &str = "AskUserQuestion";
/// askuser's npm package (packaging/npm): `npx -y askuser`.
pub const NPM_PACKAGE: &str = "askuser";
/// askuser's Python wheel (packaging/pypi), whose command is `askuser`: `uvx --from askuser-mcp askuser`.
pub const PYPI_PACKAGE: &str = "askuser-mcp";

/// How a host starts askuser, when not by this executable's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// `npx -y askuser mcp …`: the npm package (Node.js and npm on the host's PATH).
    Npx,
    /// `uvx --from askuser-mcp askuser mcp …`: the Python wheel (uv on the host's PATH).
    Uvx,
}

impl Via {
    /// The runner and its words before askuser's own arguments.
    pub fn runner(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Via::Npx => ("npx", &["-y", NPM_PACKAGE]),
            Via::Uvx => ("uvx", &["--from", PYPI_PACKAGE, "askuser"]),
        }
    }

    /// The runner whose cache `exe` is in: npx unpacks packages under `_npx/`, uvx under
    /// `archive-v0/` in uv's cache. A host given such a path loses askuser when the cache
    /// is cleared.
    pub fn cached(exe: &Path) -> Option<Via> {
        let dirs: Vec<&std::ffi::OsStr> = exe.iter().collect();
        if dirs.iter().any(|d| *d == "_npx") {
            Some(Via::Npx)
        } else if dirs.iter().any(|d| d.to_string_lossy().starts_with("archive-v")) {
            Some(Via::Uvx)
        } else {
            None
        }
    }

    fn id(self) -> &'static str {
        match self {
            Via::Npx => "npx",
            Via::Uvx => "uvx",
        }
    }

    /// The command line that runs askuser this way, before its own arguments.
    fn words(self) -> Vec<String> {
        let (command, words) = self.runner();
        std::iter::once(command).chain(words.iter().copied()).map(str::to_owned).collect()
    }
}

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
    /// OpenCode: ~/.config/opencode/opencode.jsonc.
    #[value(name = "opencode")]
    OpenCode,
    /// GitHub Copilot CLI: ~/.copilot/mcp-config.json.
    Copilot,
    /// Cline CLI: ~/.cline/data/settings/cline_mcp_settings.json.
    Cline,
    /// Qwen Code: ~/.qwen/settings.json.
    QwenCode,
    /// Any MCP client: prints `{"mcpServers": {...}}` (or merges it into --config FILE).
    Json,
}

impl Host {
    /// The hosts with a config file of their own.
    pub const ALL: [Host; 9] = [
        Host::ClaudeCode,
        Host::ClaudeDesktop,
        Host::Codex,
        Host::GeminiCli,
        Host::Cursor,
        Host::OpenCode,
        Host::Copilot,
        Host::Cline,
        Host::QwenCode,
    ];

    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Codex => "codex",
            Host::GeminiCli => "gemini-cli",
            Host::Cursor => "cursor",
            Host::OpenCode => "opencode",
            Host::Copilot => "copilot",
            Host::Cline => "cline",
            Host::QwenCode => "qwen-code",
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
            Host::OpenCode => "OpenCode",
            Host::Copilot => "Copilot CLI",
            Host::Cline => "Cline",
            Host::QwenCode => "Qwen Code",
            Host::Json => "your MCP client",
        }
    }

    /// Hosts without a tool-call timeout setting fail a call after ~60 s: askuser returns
    /// "not answered yet, call again" before that.
    /// Cline's timeout tops out at an hour: askuser returns a minute before it.
    pub fn default_max_wait(self) -> Option<u64> {
        match self {
            Host::ClaudeDesktop | Host::Cursor => Some(SHORT_WAIT),
            Host::Cline => Some(CLINE_WAIT),
            _ => None,
        }
    }

    /// Whether the host reads comments in its JSON file (Gemini CLI and Qwen Code strip
    /// them before JSON.parse; OpenCode reads JSONC, trailing commas too).
    pub fn comments(self) -> bool {
        matches!(self, Host::GeminiCli | Host::QwenCode | Host::OpenCode)
    }

    /// Where the host keeps its MCP servers in its JSON file: `mcp` (OpenCode) or `mcpServers`.
    pub fn servers_key(self) -> &'static str {
        if self == Host::OpenCode {
            "mcp"
        } else {
            "mcpServers"
        }
    }

    /// The tool's name when the entry gives no `--tool-name`: what `askuser mcp` calls it
    /// for this host.
    pub fn default_tool(self) -> &'static str {
        if self == Host::GeminiCli {
            GEMINI_TOOL
        } else {
            TOOL
        }
    }

    /// What to do after a setup that wrote `entry`.
    fn next_step(self, entry: &Entry) -> String {
        let tool = entry.tool(self);
        match self {
            Host::ClaudeCode if entry.args.iter().any(|a| a == "--approvals") => format!(
                "restart Claude Code; `/mcp` lists {}. To have the person allow or deny each tool call of a headless run: \
                 `claude -p \"…\" --permission-prompt-tool {}` (a flag only: there is no setting for it)",
                entry.server,
                allow_rule(&entry.server, crate::mcp::APPROVE_TOOL)
            ),
            Host::ClaudeCode => format!(
                "restart Claude Code (running sessions keep the servers they started with); `/mcp` lists {}. \
                 `claude -p \"…\"` works as is: permissions.allow lets it call {} without --allowedTools",
                entry.server,
                allow_rule(&entry.server, tool)
            ),
            Host::ClaudeDesktop => "quit Claude Desktop completely and start it again".to_owned(),
            Host::Codex => format!("start a new Codex session; `codex mcp list` lists {}", entry.server),
            Host::GeminiCli => format!(
                "restart Gemini CLI; `/mcp` lists {}. `gemini -p \"…\"` (in a folder Gemini trusts) offers {tool} as is: \
                 the server is trusted, and the name does not collide with Gemini's own ask_user",
                entry.server
            ),
            Host::Cursor => format!("restart Cursor (or switch {} on under Settings → MCP)", entry.server),
            Host::OpenCode => format!(
                "start a new OpenCode session; `opencode mcp list` lists {}. `opencode run \"…\"` offers {}_{tool} as is",
                entry.server, entry.server
            ),
            Host::Copilot => format!(
                "start a new Copilot CLI session; `/mcp` lists {}. `copilot -p \"…\"` runs {}-{tool} without --allow-tool \
                 (askuser marks it read-only); its -p prompt tells the model not to ask: say in your prompt that it may",
                entry.server, entry.server
            ),
            Host::Cline => format!(
                "start a new Cline task; `cline mcp list` lists {}. `cline \"…\"` offers {}__{tool} as is (auto-approve is on)",
                entry.server, entry.server
            ),
            Host::QwenCode => format!(
                "start a new Qwen Code session; `/mcp` lists {}. `qwen --prompt \"…\"` offers mcp__{}__{tool} as is: the server \
                 is trusted and its tools always loaded; its headless prompt says never to ask: say in your prompt that it may",
                entry.server, entry.server
            ),
            Host::Json => "restart your MCP client".to_owned(),
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
    /// Undo: take out what setup adds (the server entry; for Claude Code also its
    /// permissions.allow rule, and MCP_TOOL_TIMEOUT if it still has askuser's value),
    /// keeping everything else as it is. The file is backed up first.
    #[arg(long, conflicts_with_all = ["print", "agent_name", "max_wait", "data_dir", "tool_name", "via"])]
    pub remove: bool,
    /// The config file to edit, instead of the host's own under your home directory.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Claude Code only: its settings.json, instead of ~/.claude/settings.json.
    #[arg(long, value_name = "PATH")]
    pub settings: Option<PathBuf>,
    /// The server's name in the host's configuration (Claude Code's rule is then
    /// mcp__NAME__TOOL).
    #[arg(long, value_name = "NAME", default_value = SERVER, value_parser = crate::mcp::tool_name_arg)]
    pub name: String,
    /// Passed on to `askuser mcp`: the agent's name in the inbox.
    #[arg(long, value_name = "NAME")]
    pub agent_name: Option<String>,
    /// Passed on to `askuser mcp`: return "call again" after this many seconds (default: 50
    /// for Claude Desktop and Cursor, which fail a tool call after ~60 s; 3540 for Cline,
    /// whose longest timeout is an hour; none for the others).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_wait: Option<u64>,
    /// Passed on to `askuser mcp`: its data directory (made absolute).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Passed on to `askuser mcp`: the tool's name (default: ask_user; for Gemini CLI,
    /// which run headless hides every tool named ask_user, setup writes ask_human).
    #[arg(long, value_name = "NAME", value_parser = crate::mcp::tool_name_arg)]
    pub tool_name: Option<String>,
    /// Claude Code only: also offer the `approve` tool, so that `claude -p … \
    /// --permission-prompt-tool mcp__askuser__approve` asks the person before each tool
    /// call it is not allowed to make on its own.
    #[arg(long)]
    pub approvals: bool,
    /// Run askuser through a package runner instead of this executable's path: `npx` writes
    /// `npx -y askuser mcp …` (the npm package), `uvx` writes `uvx --from askuser-mcp askuser
    /// mcp …` (the Python wheel). The runner fetches the published package when the host
    /// first starts it.
    #[arg(long, value_enum, value_name = "RUNNER")]
    pub via: Option<Via>,
}

/// What a config file must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `mcpServers.askuser` in a JSON file.
    JsonServer,
    /// `env.MCP_TOOL_TIMEOUT` and `permissions.allow` in Claude Code's settings.json.
    ClaudeSettings,
    /// `[mcp_servers.askuser]` in Codex's config.toml.
    TomlServer,
}

/// One file `setup` edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub part: Part,
    pub path: PathBuf,
}

/// The server entry a host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the host's configuration.
    pub server: String,
    pub command: String,
    pub args: Vec<String>,
}

impl Entry {
    /// The tool's name the host sees: `--tool-name`'s, or askuser mcp's default for `host`.
    pub fn tool(&self, host: Host) -> &str {
        arg_value(&self.args, "--tool-name").unwrap_or(host.default_tool())
    }
}

/// Claude Code's permission rule for one MCP tool.
pub fn allow_rule(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// Whether Claude Code's `permissions.allow` rules let it call `tool` of `server`: the
/// tool's own rule, or one for all of the server's tools (`mcp__SERVER`, `mcp__SERVER__*`).
pub fn allows(rules: &[String], server: &str, tool: &str) -> bool {
    let whole = format!("mcp__{server}");
    let any = format!("mcp__{server}__*");
    let one = allow_rule(server, tool);
    rules.iter().any(|r| *r == one || *r == whole || *r == any)
}

/// A file's new text and what changed in it; no changes means already set up (or, for
/// `--remove`, nothing to remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub text: String,
    pub changes: Vec<String>,
    /// What the user should know and askuser did not change.
    pub notes: Vec<String>,
    /// The server entry as the file now has it (setup), or as it had it (`--remove`).
    pub entry: Option<Entry>,
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
        Host::OpenCode => {
            // `~/.config` on every system (OpenCode uses xdg-basedir); of its two file names
            // the one there is, else the one with comments.
            let dir = env_dir("XDG_CONFIG_HOME").map_or_else(|| home().map(|h| h.join(".config")), Ok)?.join("opencode");
            let json = dir.join("opencode.json");
            if !dir.join("opencode.jsonc").exists() && json.exists() {
                json
            } else {
                dir.join("opencode.jsonc")
            }
        }
        Host::Copilot => env_dir("COPILOT_HOME").map_or_else(|| home().map(|h| h.join(".copilot")), Ok)?.join("mcp-config.json"),
        Host::Cline => {
            let data = match env_dir("CLINE_DATA_DIR") {
                Some(dir) => dir,
                None => env_dir("CLINE_DIR").map_or_else(|| home().map(|h| h.join(".cline")), Ok)?.join("data"),
            };
            data.join("settings").join("cline_mcp_settings.json")
        }
        Host::QwenCode => env_dir("QWEN_HOME").map_or_else(|| home().map(|h| h.join(".qwen")), Ok)?.join("settings.json"),
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
    let mut targets = vec![Target { host, part, path }];
    if host == Host::ClaudeCode {
        let path = match settings {
            Some(p) => p.to_path_buf(),
            None => claude_files()?.1,
        };
        targets.push(Target { host, part: Part::ClaudeSettings, path });
    }
    Ok(targets)
}

/// `askuser mcp` with the flags passed through, run by this very executable (so no PATH
/// lookup is needed), or by `--via`'s package runner.
pub fn entry(host: Host, args: &SetupArgs, exe: &Path) -> anyhow::Result<Entry> {
    let (command, mut a) = match args.via {
        Some(via) => {
            let mut words = via.words();
            (words.remove(0), words)
        }
        None => (exe.to_str().ok_or_else(|| anyhow!("the path of this executable is not UTF-8: {}", exe.display()))?.to_owned(), vec![]),
    };
    a.push("mcp".to_owned());
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
    // Gemini gets its name written out: it does not depend on askuser recognising the client.
    let tool = args.tool_name.clone().or_else(|| (host == Host::GeminiCli).then(|| GEMINI_TOOL.to_owned()));
    if let Some(tool) = tool {
        if host == Host::GeminiCli && tool == TOOL {
            bail!("Gemini CLI run headless hides every tool named {TOOL} (its own built-in's name): choose another --tool-name");
        }
        a.extend(["--tool-name".to_owned(), tool]);
    }
    if args.approvals {
        if host != Host::ClaudeCode {
            bail!("--approvals is for claude-code only (its --permission-prompt-tool)");
        }
        a.push("--approvals".to_owned());
    }
    Ok(Entry { server: args.name.clone(), command, args: a })
}

/// An entry's args split into a package runner's words and askuser's own, from `mcp` on:
/// `["-y", "askuser", "mcp", …]` (npx) or `["--from", "askuser-mcp", "askuser", "mcp", …]`
/// (uvx) → the words before `mcp`, and `["mcp", …]`. Args that name no askuser package
/// before `mcp` are all askuser's own.
pub fn split_runner(args: &[String]) -> (&[String], &[String]) {
    // `askuser`, `askuser@0.2.0`, `askuser-mcp==0.2.0`: a package name with or without a version.
    let names_askuser = |w: &String| {
        let name = w.split(['@', '=']).next().unwrap_or("");
        !w.starts_with('-') && (name == NPM_PACKAGE || name == PYPI_PACKAGE)
    };
    match args.iter().position(|a| a == "mcp") {
        Some(i) if i > 0 && args[..i].iter().any(names_askuser) => args.split_at(i),
        _ => (&[], args),
    }
}

/// Where `--flag VALUE` or `--flag=VALUE` is among an `askuser mcp` command's args (after
/// the `mcp`, and the package runner's words before it), and how many words it takes.
fn find_flag(args: &[String], flag: &str) -> Option<(usize, usize)> {
    let joined = format!("{flag}=");
    let start = split_runner(args).0.len() + 1;
    let i = args.iter().skip(start).position(|a| a == flag || a.starts_with(&joined))? + start;
    Some((i, if args[i] == flag { 2 } else { 1 }))
}

/// The value of `--flag` among an `askuser mcp` command's args.
pub fn arg_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let (i, words) = find_flag(args, flag)?;
    if words == 2 {
        args.get(i + 1).map(String::as_str)
    } else {
        args[i].split_once('=').map(|(_, v)| v)
    }
}

/// `askuser mcp` flags setup writes that take no value.
const BARE_FLAGS: [&str; 1] = ["--approvals"];

/// The args for an entry that had `old`: `new` (setup's `mcp` and its own flags, each
/// `--flag VALUE`, after the package runner's words if any) set in place, every other
/// argument of the user's kept where it was; the runner's words are `new`'s. An entry
/// that does not run `askuser mcp` gets `new` whole.
fn merge_args(old: &[String], new: &[String]) -> Vec<String> {
    let ((_, old), (runner, new)) = (split_runner(old), split_runner(new));
    let mut args = runner.to_vec();
    args.extend(merge_own(old, new));
    args
}

/// [`merge_args`] for askuser's own args, each starting with `mcp`.
fn merge_own(old: &[String], new: &[String]) -> Vec<String> {
    if old.first().map(String::as_str) != Some("mcp") || new.first().map(String::as_str) != Some("mcp") {
        return new.to_vec();
    }
    let mut args = old.to_vec();
    let (bare, pairs): (Vec<&String>, Vec<&String>) = {
        let rest = &new[1..];
        let bare: Vec<&String> = rest.iter().filter(|a| BARE_FLAGS.contains(&a.as_str())).collect();
        (bare, rest.iter().filter(|a| !BARE_FLAGS.contains(&a.as_str())).collect())
    };
    for flag in bare {
        if !args.contains(flag) {
            args.push(flag.clone());
        }
    }
    let pairs: Vec<String> = pairs.into_iter().cloned().collect();
    for pair in pairs.chunks(2) {
        match find_flag(&args, &pair[0]) {
            Some((i, words)) => {
                let end = (i + words).min(args.len());
                args.splice(i..end, pair.iter().cloned());
            }
            None => args.extend(pair.iter().cloned()),
        }
    }
    args
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

/// JSON with comments as Gemini CLI reads it: each comment's bytes replaced with spaces
/// (line breaks kept, so lines and columns stay), what its strip-json-comments does
/// before JSON.parse.
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' && *c != b'\r' {
                *c = b' ';
            }
        }
    };
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        match (in_string, b[i], b.get(i + 1)) {
            (true, b'\\', _) => i += 2,
            (_, b'"', _) => {
                in_string = !in_string;
                i += 1;
            }
            (false, b'/', Some(b'/')) => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            (false, b'/', Some(b'*')) => {
                let end = b[i + 2..].windows(2).position(|w| w == b"*/").map_or(b.len(), |n| i + 2 + n + 2);
                blank(&mut out, i, end);
                i = end;
            }
            _ => i += 1,
        }
    }
    // Only whole comments, made of whole characters, became ASCII spaces.
    String::from_utf8(out).expect("still UTF-8")
}

/// A JSON config file's text as a value (an empty file is an empty object); with
/// `comments`, `//` and `/* */` comments are allowed, as Gemini CLI allows them. An
/// error names the file, line and column.
pub fn parse_json(path: &Path, text: &str, comments: bool) -> anyhow::Result<Value> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let stripped;
    let body = if comments {
        stripped = strip_comments(body);
        stripped.as_str()
    } else {
        body
    };
    if body.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(body).map_err(|e| {
        let full = e.to_string();
        let message = full.rsplit_once(" at line ").map_or(full.as_str(), |(m, _)| m);
        let at = body.lines().nth(e.line().saturating_sub(1)).and_then(|l| l.get(e.column().saturating_sub(1)..)).unwrap_or("");
        let hint = if !comments && at.starts_with('/') {
            " (comments are not JSON: remove them, or add askuser's entry by hand)"
        } else if comments && message == "trailing comma" {
            " (Gemini CLI reads comments in its settings, but not trailing commas: remove it)"
        } else {
            ""
        };
        anyhow!("{}:{}:{}: not valid JSON: {message}{hint}", path.display(), e.line(), e.column())
    })
}

/// A host's JSON file as the host reads it: OpenCode's JSONC (comments and trailing
/// commas, as its jsonc-parser allows them), else [`parse_json`].
pub fn parse_host_json(path: &Path, text: &str, host: Host) -> anyhow::Result<Value> {
    if host != Host::OpenCode {
        // Qwen Code reads its settings as Gemini CLI does, whose name the hints give.
        return parse_json(path, text, host.comments()).map_err(|e| anyhow!("{}", format!("{e:#}").replace("Gemini CLI", host.title())));
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        ..Default::default()
    };
    let root = CstRootNode::parse(body, &options).map_err(|e| {
        anyhow!("{}:{}:{}: not valid JSON with comments: {}", path.display(), e.line_display(), e.column_display(), e.kind())
    })?;
    Ok(root.value().and_then(|v| v.to_serde_value()).unwrap_or_else(|| Value::Object(Map::new())))
}

/// A JSON file to edit in place: its syntax tree, which gives back every byte askuser
/// does not change.
struct JsonDoc {
    root: CstRootNode,
    bom: bool,
    /// A new (or blank) file: it gets a final newline.
    blank: bool,
}

impl JsonDoc {
    /// Checks the text as the host reads it (see [`parse_json`]), then parses it to edit.
    fn parse(path: &Path, text: &str, host: Host) -> anyhow::Result<JsonDoc> {
        let value = parse_host_json(path, text, host)?;
        if !value.is_object() {
            bail!("{} holds {} at the top, not an object: fix it by hand", path.display(), kind(&value));
        }
        let bom = text.starts_with('\u{feff}');
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        let blank = body.trim().is_empty();
        let root = CstRootNode::parse(if blank { "" } else { body }, &jsonc_parser::ParseOptions::default())
            .map_err(|e| anyhow!("{}: cannot edit it: {e}", path.display()))?;
        Ok(JsonDoc { root, bom, blank })
    }

    /// The top-level object (created in a blank file).
    fn object(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    fn text(&self) -> String {
        let mut text = if self.bom { "\u{feff}".to_owned() } else { String::new() };
        text.push_str(&self.root.to_string());
        if self.blank && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }
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

/// A value as the syntax tree takes it.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// A property's value.
fn value_of(prop: &CstObjectProp) -> Option<Value> {
    prop.value()?.to_serde_value()
}

fn kind_of(prop: &CstObjectProp) -> &'static str {
    value_of(prop).as_ref().map_or("empty", kind)
}

/// The object at `key`, appended when absent.
fn object_in(obj: &CstObject, key: &str, path: &str) -> anyhow::Result<CstObject> {
    match obj.get(key) {
        None => Ok(obj.append(key, CstInputValue::Object(vec![])).object_value().expect("an object was appended")),
        Some(p) => p.object_value().ok_or_else(|| anyhow!("{path} is {}, not an object: fix it by hand", kind_of(&p))),
    }
}

/// The list at `key`, appended when absent.
fn array_in(obj: &CstObject, key: &str, path: &str) -> anyhow::Result<CstArray> {
    match obj.get(key) {
        None => Ok(obj.append(key, CstInputValue::Array(vec![])).array_value().expect("a list was appended")),
        Some(p) => p.array_value().ok_or_else(|| anyhow!("{path} is {}, not a list: fix it by hand", kind_of(&p))),
    }
}

/// Sets `key` to `want` unless it already is, and says so.
fn set_exact(obj: &CstObject, path: &str, key: &str, want: &Value, changes: &mut Vec<String>) {
    match obj.get(key) {
        Some(p) => match value_of(&p) {
            Some(v) if v == *want => {}
            have => {
                let have = have.map_or_else(|| "nothing".to_owned(), |v| v.to_string());
                changes.push(format!("{path}.{key}: {have} → {want}"));
                p.set_value(input(want));
            }
        },
        None => {
            changes.push(format!("{path}.{key}: set to {want}"));
            obj.append(key, input(want));
        }
    }
}

/// A timeout as a number or a string of digits (environment variables are strings).
fn as_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// Sets `key` to `want` unless it is at least that already (a longer wait is kept).
fn set_at_least(obj: &CstObject, path: &str, key: &str, want: &Value, changes: &mut Vec<String>) {
    let have = obj.get(key).and_then(|p| value_of(&p));
    let enough = have.as_ref().and_then(as_number).zip(as_number(want)).is_some_and(|(have, min)| have >= min);
    if !enough {
        set_exact(obj, path, key, want, changes);
    }
}

/// A list of strings (anything else in it left out).
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Removes `key` when its value is an empty object or list with nothing inside, not even
/// a comment: what is left once askuser's part is out of something it may have created.
fn remove_if_empty(obj: &CstObject, key: &str) {
    let Some(p) = obj.get(key) else { return };
    let bare = p.value().is_some_and(|v| {
        let t: String = v.to_string().chars().filter(|c| !c.is_whitespace()).collect();
        t == "{}" || t == "[]"
    });
    if bare {
        p.remove();
    }
}

/// askuser's entry as setup writes it new, keys in the order the host's own docs show.
fn fresh_json_server(host: Host, entry: &Entry) -> Value {
    let (command, args) = (entry.command.as_str(), &entry.args);
    match host {
        Host::ClaudeCode => json!({"type": "stdio", "command": command, "args": args, "env": {}}),
        Host::GeminiCli => json!({"command": command, "args": args, "timeout": DAY_MS, "trust": true}),
        Host::OpenCode => json!({"type": "local", "command": opencode_command(entry), "environment": {}}),
        Host::Copilot => json!({"type": "local", "command": command, "args": args, "env": {}, "tools": ["*"], "timeout": DAY_MS}),
        Host::Cline => json!({"transport": {"type": "stdio", "command": command, "args": args, "env": {}}, "timeout": CLINE_TIMEOUT}),
        Host::QwenCode => {
            json!({"command": command, "args": args, "timeout": DAY_MS, "trust": true, "alwaysLoadTools": true})
        }
        _ => json!({"command": command, "args": args}),
    }
}

/// OpenCode's `command`: the program and its arguments in one list.
fn opencode_command(entry: &Entry) -> Vec<String> {
    std::iter::once(entry.command.clone()).chain(entry.args.iter().cloned()).collect()
}

/// A server entry's command and args as `host` writes them: OpenCode's one list, Cline's
/// `transport` (or the older flat shape it still reads), else `command` and `args`.
pub fn command_of(host: Host, server: &Value) -> (Option<String>, Vec<String>) {
    match host {
        Host::OpenCode => {
            let words = strings(server.get("command"));
            match words.split_first() {
                Some((command, args)) => (Some(command.clone()), args.to_vec()),
                None => (server["command"].as_str().map(str::to_owned), vec![]),
            }
        }
        Host::Cline if server["transport"].is_object() => {
            let t = &server["transport"];
            (t["command"].as_str().map(str::to_owned), strings(t.get("args")))
        }
        _ => (server["command"].as_str().map(str::to_owned), strings(server.get("args"))),
    }
}

/// The `servers_key().NAME` entry: the keys askuser needs, the user's other keys and
/// extra args kept. Returns the changes and the entry as written.
fn edit_json_server(host: Host, root: &CstObject, entry: &Entry) -> anyhow::Result<(Vec<String>, Entry)> {
    let key = host.servers_key();
    let servers = object_in(root, key, key)?;
    let path = format!("{key}.{}", entry.server);
    let Some(prop) = servers.get(&entry.server) else {
        servers.append(&entry.server, input(&fresh_json_server(host, entry)));
        return Ok((vec![format!("added {path}")], entry.clone()));
    };
    let server = prop.object_value().ok_or_else(|| anyhow!("{path} is {}, not an object: fix or remove it by hand", kind_of(&prop)))?;
    let (_, old) = command_of(host, &value_of(&prop).unwrap_or_default());
    let written = Entry { args: merge_args(&old, &entry.args), ..entry.clone() };
    let mut changes = vec![];
    let (command, args) = (Value::from(written.command.as_str()), json!(written.args));
    match host {
        Host::OpenCode => {
            set_exact(&server, &path, "type", &Value::from("local"), &mut changes);
            set_exact(&server, &path, "command", &json!(opencode_command(&written)), &mut changes);
            if server.get("enabled").and_then(|p| value_of(&p)) == Some(Value::Bool(false)) {
                set_exact(&server, &path, "enabled", &Value::Bool(true), &mut changes);
            }
            // Progress restarts its timeout: one shorter than the progress interval runs out
            // between two notifications. Its default then.
            let timeout = server.get("timeout").and_then(|p| value_of(&p)).as_ref().and_then(as_number);
            if timeout.is_some_and(|ms| ms <= PROGRESS_MS) {
                set_exact(&server, &path, "timeout", &Value::from(OPENCODE_TIMEOUT), &mut changes);
            }
        }
        Host::Cline => {
            if server.get("transport").is_none() {
                // The flat shape Cline also reads: moved into `transport`, as `cline mcp add` writes it.
                for flat in ["type", "command", "args", "env", "cwd"] {
                    if let Some(p) = server.get(flat) {
                        p.remove();
                    }
                }
            }
            let transport = object_in(&server, "transport", &format!("{path}.transport"))?;
            let at = format!("{path}.transport");
            set_exact(&transport, &at, "type", &Value::from("stdio"), &mut changes);
            set_exact(&transport, &at, "command", &command, &mut changes);
            set_exact(&transport, &at, "args", &args, &mut changes);
            set_at_least(&server, &path, "timeout", &Value::from(CLINE_TIMEOUT), &mut changes);
            if server.get("disabled").and_then(|p| value_of(&p)) == Some(Value::Bool(true)) {
                set_exact(&server, &path, "disabled", &Value::Bool(false), &mut changes);
            }
        }
        _ => {
            if host == Host::ClaudeCode {
                set_exact(&server, &path, "type", &Value::from("stdio"), &mut changes);
            }
            if host == Host::Copilot {
                set_exact(&server, &path, "type", &Value::from("local"), &mut changes);
            }
            set_exact(&server, &path, "command", &command, &mut changes);
            set_exact(&server, &path, "args", &args, &mut changes);
        }
    }
    match host {
        Host::ClaudeCode if server.get("env").is_none() => {
            server.append("env", CstInputValue::Object(vec![]));
        }
        Host::GeminiCli => {
            set_at_least(&server, &path, "timeout", &Value::from(DAY_MS), &mut changes);
            set_exact(&server, &path, "trust", &Value::Bool(true), &mut changes);
        }
        Host::QwenCode => {
            set_at_least(&server, &path, "timeout", &Value::from(DAY_MS), &mut changes);
            set_exact(&server, &path, "trust", &Value::Bool(true), &mut changes);
            set_exact(&server, &path, "alwaysLoadTools", &Value::Bool(true), &mut changes);
        }
        Host::Copilot => {
            let tools = strings(server.get("tools").and_then(|p| value_of(&p)).as_ref());
            if !copilot_offers(&tools, entry.tool(host)) {
                set_exact(&server, &path, "tools", &json!(["*"]), &mut changes);
            }
            set_at_least(&server, &path, "timeout", &Value::from(DAY_MS), &mut changes);
        }
        _ => {}
    }
    Ok((changes, written))
}

/// Whether Copilot CLI's `tools` list for a server lets its model see `tool`.
pub fn copilot_offers(tools: &[String], tool: &str) -> bool {
    tools.iter().any(|t| t == "*" || t == tool)
}

/// Gemini CLI's `mcp.allowed` and `mcp.excluded`: why it would not start `server`.
pub fn gemini_blocked(root: &Value, server: &str) -> Option<String> {
    let allowed = strings(root.pointer("/mcp/allowed"));
    let excluded = strings(root.pointer("/mcp/excluded"));
    if !allowed.is_empty() && !allowed.iter().any(|s| s == server) {
        Some(format!("mcp.allowed does not list \"{server}\", so Gemini CLI does not start it: add \"{server}\" to it"))
    } else if excluded.iter().any(|s| s == server) {
        Some(format!("mcp.excluded lists \"{server}\", so Gemini CLI does not start it: take it out of that list"))
    } else {
        None
    }
}

/// The note for a settings.json that denies AskUserQuestion, as askuser once made it.
/// askuser cannot prove it added the rule (it left no mark, and the user may have
/// written it too), so it never removes it: it says how.
fn deny_note(path: &Path, root: &Value) -> Option<String> {
    let denied = strings(root.pointer("/permissions/deny")).iter().any(|r| r == DENY_RULE);
    denied.then(|| {
        format!(
            "permissions.deny in {} has \"{DENY_RULE}\" (earlier versions of askuser setup added it; askuser cannot tell whether you did): \
             it takes Claude Code's own question dialog away from interactive sessions, and `claude -p` does not need it. \
             To get the dialog back, delete \"{DENY_RULE}\" from permissions.deny there",
            path.display()
        )
    })
}

/// Claude Code's settings.json: a day's `MCP_TOOL_TIMEOUT`, and `permissions.allow` for
/// the entry's tool (unless a rule already allows it). Returns the changes.
fn edit_claude_settings(root: &CstObject, entry: &Entry) -> anyhow::Result<Vec<String>> {
    let mut changes = vec![];
    let env = object_in(root, "env", "env")?;
    set_at_least(&env, "env", "MCP_TOOL_TIMEOUT", &Value::from(DAY_MS.to_string()), &mut changes);
    let tool = entry.tool(Host::ClaudeCode);
    let permissions = object_in(root, "permissions", "permissions")?;
    let allow = array_in(&permissions, "allow", "permissions.allow")?;
    let rules: Vec<String> = allow.elements().iter().filter_map(|r| r.to_serde_value()?.as_str().map(str::to_owned)).collect();
    if !allows(&rules, &entry.server, tool) {
        let rule = allow_rule(&entry.server, tool);
        changes.push(format!("permissions.allow: added \"{rule}\""));
        allow.append(CstInputValue::String(rule));
    }
    Ok(changes)
}

/// Takes `mcpServers.NAME` (OpenCode: `mcp.NAME`) out; the servers' key too when nothing
/// else is left in it.
fn unedit_json_server(host: Host, root: &CstObject, server: &str) -> (Vec<String>, Option<Entry>) {
    let key = host.servers_key();
    let Some(servers) = root.object_value(key) else { return (vec![], None) };
    let Some(prop) = servers.get(server) else { return (vec![], None) };
    let (command, args) = command_of(host, &value_of(&prop).unwrap_or_default());
    let entry = Entry { server: server.to_owned(), command: command.unwrap_or_default(), args };
    prop.remove();
    remove_if_empty(root, key);
    (vec![format!("removed {key}.{server}")], Some(entry))
}

/// Takes out of Claude Code's settings.json what setup adds: the tool's allow rule, and
/// `MCP_TOOL_TIMEOUT` if it still has askuser's value. Returns the changes and notes.
fn unedit_claude_settings(root: &CstObject, entry: &Entry) -> (Vec<String>, Vec<String>) {
    let (mut changes, mut notes) = (vec![], vec![]);
    let rule = allow_rule(&entry.server, entry.tool(Host::ClaudeCode));
    if let Some(permissions) = root.object_value("permissions") {
        if let Some(allow) = permissions.array_value("allow") {
            for r in allow.elements() {
                if r.to_serde_value().as_ref().and_then(Value::as_str) == Some(rule.as_str()) {
                    r.remove();
                    changes.push(format!("removed \"{rule}\" from permissions.allow"));
                }
            }
            remove_if_empty(&permissions, "allow");
        }
        remove_if_empty(root, "permissions");
    }
    if let Some(env) = root.object_value("env") {
        if let Some(p) = env.get("MCP_TOOL_TIMEOUT") {
            let v = value_of(&p).unwrap_or_default();
            if as_number(&v) == Some(DAY_MS) {
                p.remove();
                changes.push(format!("removed env.MCP_TOOL_TIMEOUT ({v})"));
            } else {
                notes.push(format!("env.MCP_TOOL_TIMEOUT is {v}, not the {DAY_MS} askuser sets: kept"));
            }
        }
        remove_if_empty(root, "env");
    }
    (changes, notes)
}

/// A TOML config file's text as an editable document; an error names the file, line and column.
pub fn parse_toml(path: &Path, text: &str) -> anyhow::Result<toml_edit::DocumentMut> {
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let (line, column) = position(text, e.span().map_or(0, |s| s.start));
        anyhow!("{}:{line}:{column}: not valid TOML: {}", path.display(), e.message())
    })
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

fn toml_args(args: &[String]) -> toml_edit::Value {
    toml_edit::Value::Array(args.iter().collect())
}

/// A TOML table's `args` as strings.
fn toml_strings(t: &dyn toml_edit::TableLike) -> Vec<String> {
    let args = t.get("args").and_then(|a| a.as_array());
    args.map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Codex's `[mcp_servers.NAME]`: command, args (the user's extra ones kept),
/// tool_timeout_sec; comments, the other servers and every other table kept as they are.
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
    let name = format!("mcp_servers.{}", entry.server);
    let mut changes = vec![];
    let written = match servers.get_mut(&entry.server) {
        None => {
            let mut t = toml_edit::Table::new();
            t.insert("command", toml_edit::value(entry.command.as_str()));
            t.insert("args", toml_edit::Item::Value(toml_args(&entry.args)));
            let item = if inline {
                t.insert("tool_timeout_sec", toml_edit::value(DAY_SECS as i64));
                toml_edit::Item::Value(toml_edit::Value::InlineTable(t.into_inline_table()))
            } else {
                // TOML 1.0 has no comments inside an inline table: only a table gets one.
                let timeout = toml_edit::Value::from(DAY_SECS as i64).decorated(" ", "  # a person may take hours to answer");
                t.insert("tool_timeout_sec", toml_edit::Item::Value(timeout));
                toml_edit::Item::Table(t)
            };
            servers.insert(&entry.server, item);
            changes.push(format!("added [{name}]"));
            entry.clone()
        }
        Some(item) => {
            let t = item.as_table_like_mut().ok_or_else(|| anyhow!("{name} is not a table: fix or remove it by hand"))?;
            let written = Entry { args: merge_args(&toml_strings(t), &entry.args), ..entry.clone() };
            set_toml(t, &name, "command", written.command.as_str().into(), &mut changes);
            set_toml(t, &name, "args", toml_args(&written.args), &mut changes);
            let have = t.get("tool_timeout_sec").and_then(|i| i.as_integer());
            if have.is_none_or(|s| s < DAY_SECS as i64) {
                set_toml(t, &name, "tool_timeout_sec", (DAY_SECS as i64).into(), &mut changes);
            }
            written
        }
    };
    Ok(Edit { text: doc.to_string(), changes, notes: vec![], entry: Some(written) })
}

/// Takes `[mcp_servers.NAME]` out; `mcp_servers` too when it was only the header of the
/// servers' tables (or an inline table) and nothing is left in it.
fn unedit_toml_server(path: &Path, old: &str, server: &str) -> anyhow::Result<Edit> {
    let mut doc = parse_toml(path, old)?;
    let root = doc.as_table_mut();
    let Some(servers) = root.get_mut("mcp_servers") else { return Ok(unchanged(old)) };
    let implicit = servers.as_table().is_none_or(|t| t.is_implicit());
    let Some(servers) = servers.as_table_like_mut() else { return Ok(unchanged(old)) };
    let Some(item) = servers.remove(server) else { return Ok(unchanged(old)) };
    let entry = item.as_table_like().map(|t| Entry {
        server: server.to_owned(),
        command: t.get("command").and_then(|c| c.as_str()).unwrap_or_default().to_owned(),
        args: toml_strings(t),
    });
    if servers.is_empty() && implicit {
        root.remove("mcp_servers");
    }
    Ok(Edit { text: doc.to_string(), changes: vec![format!("removed [mcp_servers.{server}]")], notes: vec![], entry })
}

fn unchanged(old: &str) -> Edit {
    Edit { text: old.to_owned(), changes: vec![], notes: vec![], entry: None }
}

/// The edit `part` needs in a file whose text is `old` (`""` for a new file). For Claude
/// Code's settings, `entry` is the server entry as its own file has it after setup.
pub fn edit(host: Host, part: Part, path: &Path, old: &str, entry: &Entry) -> anyhow::Result<Edit> {
    if part == Part::TomlServer {
        return edit_toml_server(path, old, entry);
    }
    let doc = JsonDoc::parse(path, old, host)?;
    let root = doc.object();
    let (changes, written) = match part {
        Part::ClaudeSettings => (edit_claude_settings(&root, entry), entry.clone()),
        _ => match edit_json_server(host, &root, entry) {
            Ok((changes, written)) => (Ok(changes), written),
            Err(e) => (Err(e), entry.clone()),
        },
    };
    let changes = changes.with_context(|| path.display().to_string())?;
    let notes = notes(host, part, path, old, &written.server)?;
    let text = if changes.is_empty() { old.to_owned() } else { doc.text() };
    Ok(Edit { text, changes, notes, entry: Some(written) })
}

/// What the user should know about a file askuser leaves as it is in that respect.
fn notes(host: Host, part: Part, path: &Path, text: &str, server: &str) -> anyhow::Result<Vec<String>> {
    let root = parse_host_json(path, text, host)?;
    Ok(match (host, part) {
        (Host::ClaudeCode, Part::ClaudeSettings) => deny_note(path, &root).into_iter().collect(),
        (Host::GeminiCli, _) => gemini_blocked(&root, server).map(|b| format!("{b} in {}", path.display())).into_iter().collect(),
        _ => vec![],
    })
}

/// The edit that takes out of a file what setup adds (see [`SetupArgs::remove`]); for
/// Claude Code's settings, `entry` is the server entry its own file had.
pub fn unedit(host: Host, part: Part, path: &Path, old: &str, entry: &Entry) -> anyhow::Result<Edit> {
    if part == Part::TomlServer {
        return unedit_toml_server(path, old, &entry.server);
    }
    let doc = JsonDoc::parse(path, old, host)?;
    let Some(root) = doc.root.object_value() else { return Ok(unchanged(old)) };
    let (changes, mut notes, found) = match part {
        Part::ClaudeSettings => {
            let (changes, notes) = unedit_claude_settings(&root, entry);
            (changes, notes, None)
        }
        _ => {
            let (changes, found) = unedit_json_server(host, &root, &entry.server);
            (changes, vec![], found)
        }
    };
    if part == Part::ClaudeSettings {
        notes.extend(deny_note(path, &parse_host_json(path, old, host)?));
    }
    let text = if changes.is_empty() { old.to_owned() } else { doc.text() };
    Ok(Edit { text, changes, notes, entry: found })
}

/// askuser's entry as a host's config file has it (for `askuser doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The server's name.
    pub name: String,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Gemini CLI's `timeout` (ms), Codex's `tool_timeout_sec` (in ms here).
    pub timeout_ms: Option<u64>,
    /// Gemini CLI's `trust`.
    pub trust: Option<bool>,
    /// Claude Code: the project it is set up for, when not for every project.
    pub project: Option<String>,
    /// Gemini CLI: why it would not start the server at all.
    pub blocked: Option<String>,
    /// The whole entry as the JSON file has it (null in TOML), for each host's own keys.
    pub entry: Value,
}

impl Installed {
    /// `--max-wait SECONDS` among the args.
    pub fn max_wait(&self) -> Option<u64> {
        arg_value(&self.args, "--max-wait").and_then(|s| s.parse().ok())
    }
}

/// Whether a server entry runs askuser's MCP server: `askuser mcp`, by whatever path, or
/// through npx or uvx.
fn runs_askuser(command: Option<&str>, args: &[String]) -> bool {
    let stem = command.and_then(|c| Path::new(c).file_stem()).and_then(|s| s.to_str());
    let (runner, own) = split_runner(args);
    let by = match stem {
        Some("askuser") => runner.is_empty(),
        Some("npx" | "uvx") => !runner.is_empty(),
        _ => false,
    };
    by && own.first().map(String::as_str) == Some("mcp")
}

fn installed_json(host: Host, name: &str, server: &Value, project: Option<String>) -> Installed {
    let (command, args) = command_of(host, server);
    let timeout = server.get("timeout").and_then(as_number);
    Installed {
        name: name.to_owned(),
        command,
        args,
        // Cline's is in seconds.
        timeout_ms: if host == Host::Cline { timeout.map(|s| s.saturating_mul(1000)) } else { timeout },
        trust: server.get("trust").and_then(Value::as_bool),
        project,
        blocked: None,
        entry: server.clone(),
    }
}

/// askuser's entry among `servers`: the one named askuser, or else one that runs `askuser mcp`.
fn find_json(host: Host, servers: Option<&Value>) -> Option<(&String, &Value)> {
    let servers = servers?.as_object()?;
    let runs = |s: &Value| {
        let (command, args) = command_of(host, s);
        runs_askuser(command.as_deref(), &args)
    };
    servers.get_key_value(SERVER).or_else(|| servers.iter().find(|(_, s)| runs(s)))
}

/// Finds askuser's entry in a server file (`JsonServer` or `TomlServer`); `None` when absent.
pub fn installed(target: &Target, text: &str) -> anyhow::Result<Option<Installed>> {
    if target.part == Part::TomlServer {
        let doc = parse_toml(&target.path, text)?;
        let Some(servers) = doc.get("mcp_servers").and_then(|s| s.as_table_like()) else { return Ok(None) };
        let mut tables = servers.iter().filter_map(|(k, v)| Some((k, v.as_table_like()?)));
        let found = servers
            .get(SERVER)
            .and_then(|s| s.as_table_like())
            .map(|t| (SERVER, t))
            .or_else(|| tables.find(|(_, t)| runs_askuser(t.get("command").and_then(|c| c.as_str()), &toml_strings(*t))));
        let Some((name, t)) = found else { return Ok(None) };
        return Ok(Some(Installed {
            name: name.to_owned(),
            command: t.get("command").and_then(|c| c.as_str()).map(str::to_owned),
            args: toml_strings(t),
            timeout_ms: t.get("tool_timeout_sec").and_then(|s| s.as_integer()).map(|s| (s.max(0) as u64).saturating_mul(1000)),
            trust: None,
            project: None,
            blocked: None,
            entry: Value::Null,
        }));
    }
    let root = parse_host_json(&target.path, text, target.host)?;
    let host = target.host;
    if let Some((name, server)) = find_json(host, root.get(host.servers_key())) {
        let mut found = installed_json(host, name, server, None);
        if target.host == Host::GeminiCli {
            found.blocked = gemini_blocked(&root, name);
        }
        return Ok(Some(found));
    }
    // Claude Code's local scope: `projects.<dir>.mcpServers`.
    let projects = root.get("projects").and_then(Value::as_object);
    let local = projects.into_iter().flatten().find_map(|(dir, p)| find_json(host, p.get("mcpServers")).map(|s| (dir, s)));
    Ok(local.map(|(dir, (name, server))| installed_json(host, name, server, Some(dir.clone()))))
}

/// What `askuser doctor` reads in Claude Code's settings.json.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeSettings {
    /// `env.MCP_TOOL_TIMEOUT`.
    pub timeout: Option<u64>,
    /// `permissions.allow`.
    pub allow: Vec<String>,
    /// Whether `permissions.deny` has AskUserQuestion.
    pub denied: bool,
}

/// Claude Code's settings.json, for `askuser doctor`.
pub fn claude_settings(path: &Path, text: &str) -> anyhow::Result<ClaudeSettings> {
    let root = parse_json(path, text, false)?;
    Ok(ClaudeSettings {
        timeout: root.get("env").and_then(|e| e.get("MCP_TOOL_TIMEOUT")).and_then(as_number),
        allow: strings(root.pointer("/permissions/allow")),
        denied: strings(root.pointer("/permissions/deny")).iter().any(|r| r == DENY_RULE),
    })
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
        match files::create_private(&candidate) {
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
        let mut f = files::create_private(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
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

/// Plans every file before any is written: one that does not parse leaves all as they
/// are. `change` makes a file's edit from its text and the entry so far; the server
/// file comes first, and the entry it has is what Claude Code's settings are edited for.
fn plan_all(
    targets: Vec<Target>,
    mut entry: Entry,
    change: impl Fn(&Target, &str, &Entry) -> anyhow::Result<Edit>,
) -> anyhow::Result<Vec<Plan>> {
    let mut plans = vec![];
    for target in targets {
        let original = read(&target.path)?;
        let old = match &original {
            Some(bytes) => text(&target.path, bytes)?,
            None => "",
        };
        let edit = change(&target, old, &entry)?;
        if let Some(e) = &edit.entry {
            entry = e.clone();
        }
        plans.push(Plan { target, original, edit });
    }
    Ok(plans)
}

/// Writes the files that change and says what changed in each (or `unchanged` for the
/// others), with the notes. Returns whether any was written.
fn apply(plans: &[Plan], unchanged: &str) -> anyhow::Result<bool> {
    let mut changed = false;
    for p in plans {
        let path = p.target.path.display();
        if p.edit.changes.is_empty() {
            out!("{path}: {unchanged}");
        } else {
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
        for n in &p.edit.notes {
            out!("  note: {n}");
        }
    }
    Ok(changed)
}

/// `askuser setup`.
pub fn run(args: &SetupArgs) -> ExitCode {
    let result = if args.remove { remove(args) } else { setup(args) };
    match result {
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
    if let (None, Some(via)) = (args.via, Via::cached(&exe)) {
        err!(
            "askuser: note: this askuser runs from {0}'s cache ({1}), which may be cleared: `askuser setup {2} --via {0}` has {3} start `{4} mcp` instead",
            via.id(),
            exe.display(),
            host.id(),
            host.title(),
            shell_words(&via.words())
        );
    }
    if args.print || (host == Host::Json && args.config.is_none()) {
        return print(host, args, &entry);
    }
    let targets = targets(host, args.config.as_deref(), args.settings.as_deref())?;
    let plans = plan_all(targets, entry.clone(), |t, old, entry| edit(host, t.part, &t.path, old, entry))
        .map_err(|e| anyhow!("{e:#}\nnothing was changed: fix the file (or move it away) and run `askuser setup {0}` again, or add askuser's entry by hand (`askuser setup {0} --print` shows it)", host.id()))?;
    if !apply(&plans, "already set up")? {
        out!("askuser is already set up for {}: nothing changed.", host.title());
        return Ok(());
    }
    let written = plans.iter().find_map(|p| p.edit.entry.clone()).unwrap_or(entry);
    out!("{} runs: {}", host.title(), shell_words(std::iter::once(&written.command).chain(&written.args)));
    out!("Next: {}.", host.next_step(&written));
    let askuser = args.via.map_or("askuser".to_owned(), |via| shell_words(&via.words()));
    out!("Then start the bridge with `{askuser} serve` and open the address it prints (or let `askuser mcp` start one); `{askuser} doctor` checks everything.");
    Ok(())
}

/// `askuser setup HOST --remove`.
fn remove(args: &SetupArgs) -> anyhow::Result<()> {
    let host = args.host;
    if host == Host::Json && args.config.is_none() {
        bail!("`askuser setup json --remove` needs --config FILE, the file to take askuser's entry out of: without it, `askuser setup json` only prints a snippet, so it wrote nothing to remove");
    }
    let targets = targets(host, args.config.as_deref(), args.settings.as_deref())?;
    let entry = Entry { server: args.name.clone(), command: String::new(), args: vec![] };
    let plans = plan_all(targets, entry, |t, old, entry| unedit(host, t.part, &t.path, old, entry))
        .map_err(|e| anyhow!("{e:#}\nnothing was changed: fix the file (or move it away) and run `askuser setup {} --remove` again, or take askuser's entry out by hand", host.id()))?;
    let absent: Vec<&Plan> = plans.iter().filter(|p| p.original.is_none()).collect();
    for p in &absent {
        out!("{}: does not exist", p.target.path.display());
    }
    let existing: Vec<Plan> = plans.into_iter().filter(|p| p.original.is_some()).collect();
    if !apply(&existing, "nothing to remove")? {
        out!("askuser is not set up for {}: nothing to remove.", host.title());
        return Ok(());
    }
    out!("askuser is out of {0}'s configuration: restart {0} (running sessions keep the servers they started with).", host.title());
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
mod tests;
