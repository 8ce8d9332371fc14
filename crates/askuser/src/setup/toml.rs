//! Editing Codex's `config.toml` in place, keeping its comments and layout (toml_edit).

use super::*;
use anyhow::anyhow;
use std::path::Path;

/// A TOML config file's text as an editable document; an error names the file, line and column.
pub fn parse_toml(path: &Path, text: &str) -> anyhow::Result<toml_edit::DocumentMut> {
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let (line, column) = position(text, e.span().map_or(0, |s| s.start));
        anyhow!("{}:{line}:{column}: not valid TOML: {}", path.display(), e.message())
    })
}

/// A TOML value as written, without its comments and spacing.
pub(super) fn bare(v: &toml_edit::Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

/// Whether two TOML values mean the same (`'mcp'` is `"mcp"`).
pub(super) fn same(a: &toml_edit::Value, b: &toml_edit::Value) -> bool {
    use toml_edit::Value as V;
    match (a, b) {
        (V::String(x), V::String(y)) => x.value() == y.value(),
        (V::Integer(x), V::Integer(y)) => x.value() == y.value(),
        (V::Array(x), V::Array(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| same(x, y)),
        _ => false,
    }
}

/// Sets a TOML key to `want` unless it already means that, keeping the old value's comments.
pub(super) fn set_toml(table: &mut dyn toml_edit::TableLike, path: &str, key: &str, mut want: toml_edit::Value, changes: &mut Vec<String>) {
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

pub(super) fn toml_args(args: &[String]) -> toml_edit::Value {
    toml_edit::Value::Array(args.iter().collect())
}

/// A TOML table's `args` as strings.
pub(super) fn toml_strings(t: &dyn toml_edit::TableLike) -> Vec<String> {
    let args = t.get("args").and_then(|a| a.as_array());
    args.map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Codex's `[mcp_servers.NAME]`: command, args (the user's extra ones kept),
/// tool_timeout_sec; comments, the other servers and every other table kept as they are.
pub(super) fn edit_toml_server(path: &Path, old: &str, entry: &Entry) -> anyhow::Result<Edit> {
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
pub(super) fn unedit_toml_server(path: &Path, old: &str, server: &str) -> anyhow::Result<Edit> {
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
