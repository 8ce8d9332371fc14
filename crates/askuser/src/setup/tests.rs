use super::*;
use serde_json::{json, Value};

fn entry(args: &[&str]) -> Entry {
    Entry { server: SERVER.into(), command: "/opt/askuser".into(), args: args.iter().map(|a| a.to_string()).collect() }
}

fn words(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn a_json_server_is_added_beside_the_others_and_updated_in_place() {
    let p = Path::new("mcp.json");
    let old = "{\n  \"a\": 1,\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\"}\n  },\n  \"z\": [1.5, null]\n}\n";
    let e = edit(Host::Cursor, Part::JsonServer, p, old, &entry(&["mcp", "--max-wait", "50"])).unwrap();
    assert_eq!(e.changes, ["added mcpServers.askuser"]);
    let v: Value = serde_json::from_str(&e.text).unwrap();
    let keys: Vec<&str> = v["mcpServers"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["x", "askuser"]);
    let added = "    \"x\": {\"command\": \"x\"},\n    \"askuser\": {\n      \"command\": \"/opt/askuser\",\n      \"args\": [\"mcp\", \"--max-wait\", \"50\"]\n    }\n";
    assert!(e.text.contains(added), "inserted in the file's own indentation, the rest as it was: {}", e.text);
    assert_eq!(
        e.text.replacen(
            ",\n    \"askuser\": {\n      \"command\": \"/opt/askuser\",\n      \"args\": [\"mcp\", \"--max-wait\", \"50\"]\n    }",
            "",
            1
        ),
        old
    );
    // Again: nothing to do, and the text is the same.
    let again = edit(Host::Cursor, Part::JsonServer, p, &e.text, &entry(&["mcp", "--max-wait", "50"])).unwrap();
    assert!(again.changes.is_empty() && again.text == e.text);
    // Other args: updated, the entry's own extra keys kept.
    let old = r#"{"mcpServers": {"askuser": {"command": "askuser", "args": ["mcp"], "disabled": false}}}"#;
    let e = edit(Host::ClaudeDesktop, Part::JsonServer, p, old, &entry(&["mcp", "--max-wait", "50"])).unwrap();
    assert_eq!(
        e.changes,
        [r#"mcpServers.askuser.command: "askuser" → "/opt/askuser""#, r#"mcpServers.askuser.args: ["mcp"] → ["mcp","--max-wait","50"]"#]
    );
    assert_eq!(
        e.text,
        r#"{"mcpServers": {"askuser": {"command": "/opt/askuser", "args": ["mcp", "--max-wait", "50"], "disabled": false}}}"#
    );
}

/// `askuser setup LINE…` as clap reads it.
fn parse(line: &[&str]) -> Result<SetupArgs, clap::Error> {
    use clap::Parser;
    match crate::cli::Cli::try_parse_from(["askuser", "setup"].iter().chain(line))?.command {
        crate::cli::Command::Setup(args) => Ok(args),
        other => panic!("not setup: {other:?}"),
    }
}

#[test]
fn via_npx_and_uvx_run_the_published_package_with_the_same_args() {
    let exe = Path::new("/opt/askuser");
    let run = |line: &[&str]| {
        let args = parse(line).unwrap();
        let e = super::entry(args.host, &args, exe).unwrap();
        (e.command.clone(), e.args.clone(), e)
    };
    let own = ["mcp", "--agent-name", "bob", "--max-wait", "50"];
    let (command, args, _) = run(&["cursor", "--agent-name", "bob"]);
    assert_eq!((command.as_str(), args), ("/opt/askuser", words(&own)), "the default: this executable's path");
    let (command, args, npx) = run(&["cursor", "--agent-name", "bob", "--via", "npx"]);
    assert_eq!((command.as_str(), args), ("npx", words(&[&["-y", "askuser"][..], &own].concat())));
    let (command, args, uvx) = run(&["cursor", "--agent-name", "bob", "--via", "uvx"]);
    assert_eq!((command.as_str(), args), ("uvx", words(&[&["--from", "askuser-mcp", "askuser"][..], &own].concat())));
    // askuser's flags are read after the runner's words.
    let (_, _, gemini) = run(&["gemini-cli", "--via", "uvx"]);
    assert_eq!(gemini.tool(Host::GeminiCli), GEMINI_TOOL);
    assert_eq!(arg_value(&npx.args, "--max-wait"), Some("50"));

    // In a file: switching the runner keeps the user's own args, and is found again by
    // what it runs under another name.
    let p = Path::new("mcp.json");
    let e = edit(Host::Cursor, Part::JsonServer, p, "", &npx).unwrap();
    let v = parse_json(p, &e.text, false).unwrap();
    assert_eq!(
        v["mcpServers"]["askuser"],
        json!({"command": "npx", "args": ["-y", "askuser", "mcp", "--agent-name", "bob", "--max-wait", "50"]})
    );
    let mine = e.text.replace("\"askuser\": {", "\"human\": {").replace("\"bob\",", "\"bob\", \"--to\", \"team\",");
    let target = Target { host: Host::Cursor, part: Part::JsonServer, path: p.to_path_buf() };
    let found = installed(&target, &mine).unwrap().expect("an npx entry runs askuser mcp");
    assert_eq!((found.name.as_str(), found.max_wait()), ("human", Some(50)));
    let named = |e: &Entry| Entry { server: "human".into(), ..e.clone() };
    let e = edit(Host::Cursor, Part::JsonServer, p, &mine, &named(&uvx)).unwrap();
    let v = parse_json(p, &e.text, false).unwrap();
    assert_eq!(
        v["mcpServers"]["human"],
        json!({"command": "uvx", "args": ["--from", "askuser-mcp", "askuser", "mcp", "--agent-name", "bob", "--to", "team", "--max-wait", "50"]})
    );
    let (_, _, path) = run(&["cursor", "--agent-name", "bob"]);
    let e = edit(Host::Cursor, Part::JsonServer, p, &e.text, &named(&path)).unwrap();
    let v = parse_json(p, &e.text, false).unwrap();
    assert_eq!(
        v["mcpServers"]["human"],
        json!({"command": "/opt/askuser", "args": ["mcp", "--agent-name", "bob", "--to", "team", "--max-wait", "50"]})
    );
    // Codex's TOML the same way.
    let e = edit(Host::Codex, Part::TomlServer, Path::new("config.toml"), "", &npx).unwrap();
    assert!(e.text.contains("command = \"npx\"\nargs = [\"-y\", \"askuser\", \"mcp\","), "{}", e.text);
    // Not askuser: another package that happens to take `mcp`.
    assert!(!runs_askuser(Some("npx"), &words(&["-y", "other", "mcp"])));
    assert!(runs_askuser(Some("npx"), &words(&["-y", "askuser@0.2.0", "mcp"])));
    assert!(runs_askuser(Some("uvx"), &words(&["--from", "askuser-mcp==0.2.0", "askuser", "mcp"])));
}

#[test]
fn an_askuser_in_npxs_or_uvxs_cache_is_told_apart() {
    let cached = |p: &str| Via::cached(Path::new(p));
    assert_eq!(cached("/home/me/.npm/_npx/c27a0d5d09dff5ac/node_modules/@askuser/linux-x64/bin/askuser"), Some(Via::Npx));
    assert_eq!(cached("/home/me/.cache/uv/archive-v0/Xk3p9/bin/askuser"), Some(Via::Uvx));
    assert_eq!(cached("/home/me/.local/bin/askuser"), None);
    assert_eq!(cached("/work/askuser/target/release/askuser"), None);
    assert_eq!(cached("/usr/lib/node_modules/askuser/node_modules/@askuser/linux-x64/bin/askuser"), None, "npm install -g keeps it");
}

#[test]
fn an_unknown_via_is_a_clap_error_naming_the_runners() {
    let e = parse(&["claude-code", "--via", "brew"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue);
    let text = e.to_string();
    assert!(text.contains("invalid value 'brew' for '--via <RUNNER>'") && text.contains("[possible values: npx, uvx]"), "{text}");
    let e = parse(&["claude-code", "--remove", "--via", "npx"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{e}");
}

#[test]
fn the_users_own_args_are_kept_and_askusers_flags_updated() {
    let merge = |old: &[&str], new: &[&str]| merge_args(&words(old), &words(new));
    assert_eq!(
        merge(&["mcp", "--agent-name", "bob", "--to", "team", "--max-wait=20"], &["mcp", "--max-wait", "50", "--tool-name", "ask_human"]),
        words(&["mcp", "--agent-name", "bob", "--to", "team", "--max-wait", "50", "--tool-name", "ask_human"])
    );
    // `--tool-name ask_user` (hidden by Gemini) is askuser's own flag: it is replaced.
    assert_eq!(
        merge(&["mcp", "--tool-name", "ask_user", "--open"], &["mcp", "--tool-name", "ask_human"]),
        words(&["mcp", "--tool-name", "ask_human", "--open"])
    );
    // An entry that does not run `askuser mcp` is replaced whole.
    assert_eq!(merge(&["serve", "--open"], &["mcp"]), words(&["mcp"]));
    assert_eq!(merge(&[], &["mcp"]), words(&["mcp"]));
    assert_eq!(arg_value(&words(&["mcp", "--tool-name=ask"]), "--tool-name"), Some("ask"));
    assert_eq!(arg_value(&words(&["mcp", "--to", "--tool-name"]), "--tool-name"), None, "a flag without its value");
}

#[test]
fn longer_timeouts_are_kept_shorter_ones_raised() {
    let p = Path::new("settings.json");
    let old = r#"{"mcpServers": {"askuser": {"command": "/opt/askuser", "args": ["mcp", "--tool-name", "ask_human"], "timeout": 999999999, "trust": true}}}"#;
    assert!(edit(Host::GeminiCli, Part::JsonServer, p, old, &entry(&["mcp", "--tool-name", "ask_human"])).unwrap().changes.is_empty());
    let old = r#"{"env": {"MCP_TOOL_TIMEOUT": "60000"}, "permissions": {"deny": ["Bash(rm:*)"]}}"#;
    let e = edit(Host::ClaudeCode, Part::ClaudeSettings, p, old, &entry(&["mcp"])).unwrap();
    assert_eq!(e.changes, [r#"env.MCP_TOOL_TIMEOUT: "60000" → "86400000""#, r#"permissions.allow: added "mcp__askuser__ask_user""#]);
    // (An inline object askuser adds a key to is spread over lines: jsonc-parser's way.)
    let v = parse_json(p, &e.text, false).unwrap();
    assert_eq!(
        v,
        json!({"env": {"MCP_TOOL_TIMEOUT": "86400000"}, "permissions": {"deny": ["Bash(rm:*)"], "allow": ["mcp__askuser__ask_user"]}})
    );
    let toml = "[mcp_servers.askuser]\ncommand = \"/opt/askuser\"\nargs = [\"mcp\"]\ntool_timeout_sec = 30 # short\n";
    let e = edit(Host::Codex, Part::TomlServer, p, toml, &entry(&["mcp"])).unwrap();
    assert_eq!(e.changes, ["mcp_servers.askuser.tool_timeout_sec: 30 → 86400"]);
    assert!(e.text.contains("tool_timeout_sec = 86400 # short\n"), "the comment stays: {}", e.text);
}

#[test]
fn claude_code_is_allowed_the_tool_by_its_names_and_askuserquestion_is_left_with_a_note() {
    let p = Path::new("settings.json");
    let named = Entry { server: "human".into(), ..entry(&["mcp", "--to", "team", "--tool-name", "ask"]) };
    let old = r#"{"permissions": {"deny": ["AskUserQuestion"]}}"#;
    let e = edit(Host::ClaudeCode, Part::ClaudeSettings, p, old, &named).unwrap();
    assert_eq!(e.changes, [r#"env.MCP_TOOL_TIMEOUT: set to "86400000""#, r#"permissions.allow: added "mcp__human__ask""#]);
    assert!(e.text.contains(r#""deny": ["AskUserQuestion"]"#), "askuser cannot prove it added the rule: {}", e.text);
    assert!(e.notes.len() == 1 && e.notes[0].contains("delete \"AskUserQuestion\" from permissions.deny"), "{:?}", e.notes);
    // A rule for all of the server's tools already allows it.
    let old = r#"{"env": {"MCP_TOOL_TIMEOUT": 90000000}, "permissions": {"allow": ["mcp__human__*"]}}"#;
    assert!(edit(Host::ClaudeCode, Part::ClaudeSettings, p, old, &named).unwrap().changes.is_empty());
    // --remove takes out the rule and askuser's timeout, nothing else.
    let mine = "{\n  \"model\": \"opus\"\n}\n";
    let set = edit(Host::ClaudeCode, Part::ClaudeSettings, p, mine, &named).unwrap();
    let undone = unedit(Host::ClaudeCode, Part::ClaudeSettings, p, &set.text, &named).unwrap();
    assert_eq!(undone.changes, [r#"removed "mcp__human__ask" from permissions.allow"#, r#"removed env.MCP_TOOL_TIMEOUT ("86400000")"#]);
    assert_eq!(undone.text, mine, "the file as it was, byte for byte");
    let other = r#"{"env": {"MCP_TOOL_TIMEOUT": "5000"}}"#;
    let undone = unedit(Host::ClaudeCode, Part::ClaudeSettings, p, other, &named).unwrap();
    assert!(undone.changes.is_empty() && undone.notes[0].contains("not the 86400000 askuser sets: kept"), "{undone:?}");
}

#[test]
fn gemini_settings_keep_their_comments_and_come_back_byte_for_byte() {
    let p = Path::new("settings.json");
    let old = "{\n  // my theme\n  \"ui\": {\"theme\": \"GitHub\"}, /* auth */\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}\n  // the end\n}\n";
    let gemini = entry(&["mcp", "--tool-name", "ask_human"]);
    let e = edit(Host::GeminiCli, Part::JsonServer, p, old, &gemini).unwrap();
    assert!(e.text.contains("// my theme") && e.text.contains("/* auth */") && e.text.contains("// the end"), "{}", e.text);
    let v = parse_json(p, &e.text, true).unwrap();
    assert_eq!(
        v["mcpServers"]["askuser"],
        json!({"command": "/opt/askuser", "args": ["mcp", "--tool-name", "ask_human"], "timeout": DAY_MS, "trust": true})
    );
    let undone = unedit(Host::GeminiCli, Part::JsonServer, p, &e.text, &gemini).unwrap();
    assert_eq!(undone.changes, ["removed mcpServers.askuser"]);
    assert_eq!(undone.text, old);
    assert_eq!(undone.entry.unwrap().args, gemini.args);
    // Nothing of askuser's: nothing to remove.
    assert!(unedit(Host::GeminiCli, Part::JsonServer, p, old, &gemini).unwrap().changes.is_empty());
}

#[test]
fn comments_are_stripped_as_gemini_strips_them() {
    let text = "{\"a\": \"// not a comment\", /* é */ \"b\": \"\\\"/*\" // end é\n}";
    // `/* é */` and `// end é` are 8 and 9 bytes: as many spaces.
    let want = format!("{{\"a\": \"// not a comment\", {} \"b\": \"\\\"/*\" {}\n}}", " ".repeat(8), " ".repeat(9));
    assert_eq!(strip_comments(text), want);
    assert_eq!(parse_json(Path::new("s.json"), text, true).unwrap(), json!({"a": "// not a comment", "b": "\"/*"}));
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
    let e = edit(Host::ClaudeCode, Part::ClaudeSettings, p, r#"{"permissions": {"allow": "Bash"}}"#, &entry(&["mcp"])).unwrap_err();
    assert!(format!("{e:#}").contains("permissions.allow is a string"), "{e:#}");
    let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers = 3\n", &entry(&["mcp"])).unwrap_err();
    assert!(format!("{e:#}").contains("mcp_servers is not a table"), "{e:#}");
}

#[test]
fn parse_errors_name_the_line_and_column() {
    let e = parse_json(Path::new("/x/s.json"), "{\n  // mine\n  \"a\": 1\n}", false).unwrap_err().to_string();
    assert!(e.starts_with("/x/s.json:2:3: not valid JSON: ") && e.contains("comments are not JSON"), "{e}");
    assert!(parse_json(Path::new("/x/s.json"), "{\n  // mine\n  \"a\": 1\n}", true).is_ok(), "Gemini CLI reads comments");
    let e = parse_json(Path::new("/x/s.json"), "{\n  /* mine */ \"a\": 1,\n}", true).unwrap_err().to_string();
    assert!(e.starts_with("/x/s.json:3:1: not valid JSON: trailing comma (Gemini CLI reads comments"), "{e}");
    let e = parse_toml(Path::new("/x/c.toml"), "a = 1\n[b]\nc = \"é\nd = 2\n").unwrap_err().to_string();
    assert!(e.starts_with("/x/c.toml:3:"), "{e}");
    assert!(parse_json(Path::new("e.json"), " \n", false).unwrap().as_object().unwrap().is_empty(), "an empty file is an empty object");
}

#[test]
fn codex_inline_and_dotted_servers_are_merged_too() {
    let p = Path::new("config.toml");
    let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers = { other = { command = \"o\" } }\n", &entry(&["mcp"])).unwrap();
    let doc: toml_edit::DocumentMut = e.text.parse().unwrap();
    assert_eq!(doc["mcp_servers"]["askuser"]["tool_timeout_sec"].as_integer(), Some(86400), "{}", e.text);
    assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));
    let undone = unedit(Host::Codex, Part::TomlServer, p, &e.text, &entry(&[])).unwrap();
    assert_eq!(undone.text, "mcp_servers = { other = { command = \"o\" } }\n");
    let e = edit(Host::Codex, Part::TomlServer, p, "mcp_servers.other.command = \"o\"\n", &entry(&["mcp"])).unwrap();
    let doc: toml_edit::DocumentMut = e.text.parse().unwrap();
    assert_eq!(doc["mcp_servers"]["askuser"]["command"].as_str(), Some("/opt/askuser"), "{}", e.text);
    assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));
}

#[test]
fn opencode_jsonc_keeps_comments_and_trailing_commas_and_comes_back_byte_for_byte() {
    let p = Path::new("opencode.jsonc");
    let old = "{\n  // my model\n  \"model\": \"local/qwen3\",\n  \"mcp\": {\n    /* docs */ \"docs\": {\"type\": \"remote\", \"url\": \"http://x\"},\n  },\n}\n";
    let e = edit(Host::OpenCode, Part::JsonServer, p, old, &entry(&["mcp"])).unwrap();
    assert_eq!(e.changes, ["added mcp.askuser"]);
    assert!(e.text.contains("// my model") && e.text.contains("/* docs */"), "{}", e.text);
    let v = parse_host_json(p, &e.text, Host::OpenCode).unwrap();
    assert_eq!(v["mcp"]["askuser"], json!({"type": "local", "command": ["/opt/askuser", "mcp"], "environment": {}}));
    assert_eq!(v["mcp"]["docs"]["url"], "http://x");
    let undone = unedit(Host::OpenCode, Part::JsonServer, p, &e.text, &entry(&[])).unwrap();
    assert_eq!(undone.changes, ["removed mcp.askuser"]);
    assert_eq!(undone.text, old);
    assert_eq!(undone.entry.unwrap().args, ["mcp"]);
    // Its command list is read back as command and args: the user's own extra ones kept.
    let mine = r#"{"mcp": {"askuser": {"type": "local", "command": ["askuser", "mcp", "--to", "ops"], "timeout": 3000}}}"#;
    let e = edit(Host::OpenCode, Part::JsonServer, p, mine, &entry(&["mcp"])).unwrap();
    let v = parse_host_json(p, &e.text, Host::OpenCode).unwrap();
    assert_eq!(v["mcp"]["askuser"]["command"], json!(["/opt/askuser", "mcp", "--to", "ops"]));
    // A timeout shorter than askuser's progress interval runs out between two: the default.
    assert_eq!(v["mcp"]["askuser"]["timeout"], OPENCODE_TIMEOUT, "{}", e.text);
}

#[test]
fn cline_entries_in_the_flat_shape_move_into_transport() {
    let p = Path::new("cline_mcp_settings.json");
    let old = r#"{"mcpServers": {"askuser": {"type": "stdio", "command": "askuser", "args": ["mcp", "--to", "ops"], "disabled": true, "timeout": 30}}}"#;
    let e = edit(Host::Cline, Part::JsonServer, p, old, &entry(&["mcp", "--max-wait", "3540"])).unwrap();
    let v = parse_json(p, &e.text, false).unwrap();
    assert_eq!(
        v["mcpServers"]["askuser"],
        json!({"disabled": false, "timeout": 3600, "transport": {"type": "stdio", "command": "/opt/askuser", "args": ["mcp", "--to", "ops", "--max-wait", "3540"]}}),
        "{}",
        e.text
    );
    assert!(edit(Host::Cline, Part::JsonServer, p, &e.text, &entry(&["mcp", "--max-wait", "3540"])).unwrap().changes.is_empty());
}

#[test]
fn via_npx_in_opencode_and_cline_is_one_command_list_or_a_transport_and_found_again() {
    let exe = Path::new("/opt/askuser");
    for (host, line) in [(Host::OpenCode, "opencode"), (Host::Cline, "cline")] {
        let args = parse(&[line, "--via", "npx"]).unwrap();
        let npx = super::entry(args.host, &args, exe).unwrap();
        let p = Path::new("c.json");
        let e = edit(host, Part::JsonServer, p, "", &npx).unwrap();
        let v = parse_host_json(p, &e.text, host).unwrap();
        let target = Target { host, part: Part::JsonServer, path: p.to_path_buf() };
        let found = installed(&target, &e.text).unwrap().expect("found under its name");
        assert_eq!((found.command.as_deref(), found.args.clone()), (Some("npx"), npx.args.clone()), "{v}");
        // Under another name too: found by what it runs.
        let renamed = e.text.replace("\"askuser\": {", "\"human\": {");
        assert_eq!(installed(&target, &renamed).unwrap().map(|f| f.name), Some("human".to_owned()), "{renamed}");
        match host {
            Host::OpenCode => assert_eq!(v["mcp"]["askuser"]["command"], json!(["npx", "-y", "askuser", "mcp"])),
            _ => assert_eq!(v["mcpServers"]["askuser"]["transport"]["args"], json!(["-y", "askuser", "mcp", "--max-wait", "3540"])),
        }
    }
}
