//! What a host's config file has of askuser (for `askuser doctor`).

use super::*;
use serde_json::Value;
use std::path::Path;

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
pub(super) fn runs_askuser(command: Option<&str>, args: &[String]) -> bool {
    let stem = command.and_then(|c| Path::new(c).file_stem()).and_then(|s| s.to_str());
    let (runner, own) = split_runner(args);
    let by = match stem {
        Some("askuser") => runner.is_empty(),
        Some("npx" | "uvx") => !runner.is_empty(),
        _ => false,
    };
    by && own.first().map(String::as_str) == Some("mcp")
}

pub(super) fn installed_json(host: Host, name: &str, server: &Value, project: Option<String>) -> Installed {
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
pub(super) fn find_json(host: Host, servers: Option<&Value>) -> Option<(&String, &Value)> {
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
