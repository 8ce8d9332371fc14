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
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod args;
mod file;
mod installed;
mod json;
mod toml;

pub use args::*;
pub use file::*;
pub use installed::*;
pub use json::copilot_offers;
use json::*;
use toml::*;

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
