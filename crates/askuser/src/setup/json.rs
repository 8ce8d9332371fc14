//! Editing a host's JSON settings in place (JSON with comments for Gemini CLI, Qwen Code
//! and OpenCode): askuser's server entry, Claude Code's settings, and what a host's own
//! settings say that keeps askuser's tool from running.

use super::*;
use anyhow::{anyhow, bail};
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstObjectProp, CstRootNode};
use serde_json::{json, Map, Value};
use std::path::Path;

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn position(text: &str, offset: usize) -> (usize, usize) {
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
pub(super) fn strip_comments(text: &str) -> String {
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
pub(super) struct JsonDoc {
    pub(super) root: CstRootNode,
    bom: bool,
    /// A new (or blank) file: it gets a final newline.
    blank: bool,
}

impl JsonDoc {
    /// Checks the text as the host reads it (see [`parse_json`]), then parses it to edit.
    pub(super) fn parse(path: &Path, text: &str, host: Host) -> anyhow::Result<JsonDoc> {
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
    pub(super) fn object(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    pub(super) fn text(&self) -> String {
        let mut text = if self.bom { "\u{feff}".to_owned() } else { String::new() };
        text.push_str(&self.root.to_string());
        if self.blank && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }
}

/// What a JSON value is, for messages.
pub(super) fn kind(v: &Value) -> &'static str {
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
pub(super) fn input(v: &Value) -> CstInputValue {
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
pub(super) fn value_of(prop: &CstObjectProp) -> Option<Value> {
    prop.value()?.to_serde_value()
}

pub(super) fn kind_of(prop: &CstObjectProp) -> &'static str {
    value_of(prop).as_ref().map_or("empty", kind)
}

/// The object at `key`, appended when absent.
pub(super) fn object_in(obj: &CstObject, key: &str, path: &str) -> anyhow::Result<CstObject> {
    match obj.get(key) {
        None => Ok(obj.append(key, CstInputValue::Object(vec![])).object_value().expect("an object was appended")),
        Some(p) => p.object_value().ok_or_else(|| anyhow!("{path} is {}, not an object: fix it by hand", kind_of(&p))),
    }
}

/// The list at `key`, appended when absent.
pub(super) fn array_in(obj: &CstObject, key: &str, path: &str) -> anyhow::Result<CstArray> {
    match obj.get(key) {
        None => Ok(obj.append(key, CstInputValue::Array(vec![])).array_value().expect("a list was appended")),
        Some(p) => p.array_value().ok_or_else(|| anyhow!("{path} is {}, not a list: fix it by hand", kind_of(&p))),
    }
}

/// Sets `key` to `want` unless it already is, and says so.
pub(super) fn set_exact(obj: &CstObject, path: &str, key: &str, want: &Value, changes: &mut Vec<String>) {
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
pub(super) fn as_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// Sets `key` to `want` unless it is at least that already (a longer wait is kept).
pub(super) fn set_at_least(obj: &CstObject, path: &str, key: &str, want: &Value, changes: &mut Vec<String>) {
    let have = obj.get(key).and_then(|p| value_of(&p));
    let enough = have.as_ref().and_then(as_number).zip(as_number(want)).is_some_and(|(have, min)| have >= min);
    if !enough {
        set_exact(obj, path, key, want, changes);
    }
}

/// A list of strings (anything else in it left out).
pub(super) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Removes `key` when its value is an empty object or list with nothing inside, not even
/// a comment: what is left once askuser's part is out of something it may have created.
pub(super) fn remove_if_empty(obj: &CstObject, key: &str) {
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
pub(super) fn fresh_json_server(host: Host, entry: &Entry) -> Value {
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
pub(super) fn opencode_command(entry: &Entry) -> Vec<String> {
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
pub(super) fn edit_json_server(host: Host, root: &CstObject, entry: &Entry) -> anyhow::Result<(Vec<String>, Entry)> {
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
pub(super) fn deny_note(path: &Path, root: &Value) -> Option<String> {
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
pub(super) fn edit_claude_settings(root: &CstObject, entry: &Entry) -> anyhow::Result<Vec<String>> {
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
pub(super) fn unedit_json_server(host: Host, root: &CstObject, server: &str) -> (Vec<String>, Option<Entry>) {
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
pub(super) fn unedit_claude_settings(root: &CstObject, entry: &Entry) -> (Vec<String>, Vec<String>) {
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
