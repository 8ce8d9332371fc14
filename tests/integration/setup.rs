//! `askuser setup HOST`, `askuser setup HOST --remove` and `askuser doctor`, run as a
//! person runs them, with HOME set to a temporary directory so a developer's real
//! configuration is never touched. The sample files in `hosts/` are each host's documented
//! format, with other servers, comments and unusual keys that must survive, byte for byte.

use crate::support::text;
use crate::support::{bridge, TOKEN};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary with HOME (and nothing else of the developer's) as its world.
fn askuser(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_askuser"));
    isolate(&mut c, home);
    c
}

/// HOME, and nothing else of the developer's, for `c`.
fn isolate(c: &mut Command, home: &Path) {
    c.env("HOME", home);
    for var in [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "MCP_TOOL_TIMEOUT",
        "COPILOT_HOME",
        "CLINE_DIR",
        "CLINE_DATA_DIR",
        "QWEN_HOME",
    ] {
        c.env_remove(var);
    }
    c.env_remove("ASKUSER_URL").env_remove("ASKUSER_TOKEN").env_remove("ASKUSER_DATA_DIR");
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/integration/hosts").join(name)
}

/// The path `askuser mcp` is written with: the binary itself.
fn exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_askuser")).unwrap().to_str().unwrap().to_owned()
}

fn desktop_file() -> &'static str {
    if cfg!(target_os = "macos") {
        "Library/Application Support/Claude/claude_desktop_config.json"
    } else {
        ".config/Claude/claude_desktop_config.json"
    }
}

/// One host: its command-line name, and each file it edits (under HOME) with its sample.
struct Case {
    host: &'static str,
    files: Vec<(&'static str, &'static str)>,
}

fn cases() -> Vec<Case> {
    vec![
        Case { host: "claude-code", files: vec![(".claude.json", "claude.json"), (".claude/settings.json", "claude-settings.json")] },
        Case { host: "claude-desktop", files: vec![(desktop_file(), "claude_desktop_config.json")] },
        Case { host: "codex", files: vec![(".codex/config.toml", "codex-config.toml")] },
        Case { host: "gemini-cli", files: vec![(".gemini/settings.json", "gemini-settings.json")] },
        Case { host: "cursor", files: vec![(".cursor/mcp.json", "cursor-mcp.json")] },
        Case { host: "opencode", files: vec![(".config/opencode/opencode.jsonc", "opencode.jsonc")] },
        Case { host: "copilot", files: vec![(".copilot/mcp-config.json", "copilot-mcp-config.json")] },
        Case { host: "cline", files: vec![(".cline/data/settings/cline_mcp_settings.json", "cline_mcp_settings.json")] },
        Case { host: "qwen-code", files: vec![(".qwen/settings.json", "qwen-settings.json")] },
        // The generic JSON goes wherever --config says (a project's .mcp.json, say).
        Case { host: "json", files: vec![("project/.mcp.json", "mcp.json")] },
    ]
}

impl Case {
    fn run(&self, home: &Path, extra: &[&str]) -> Output {
        let mut c = askuser(home);
        c.args(["setup", self.host]);
        if self.host == "json" {
            c.arg("--config").arg(home.join(self.files[0].0));
        }
        c.args(extra).output().unwrap()
    }

    /// askuser's entry as this host must have it after a fresh setup.
    fn expected(&self) -> Value {
        match self.host {
            "claude-code" => json!({"type": "stdio", "command": exe(), "args": ["mcp"], "env": {}}),
            "claude-desktop" | "cursor" => json!({"command": exe(), "args": ["mcp", "--max-wait", "50"]}),
            // Headless Gemini hides an untrusted server's tools, and any tool named ask_user.
            "gemini-cli" => json!({"command": exe(), "args": ["mcp", "--tool-name", "ask_human"], "timeout": 86400000, "trust": true}),
            "json" => json!({"command": exe(), "args": ["mcp"]}),
            // Progress restarts OpenCode's and Copilot's timeouts: none needed for OpenCode.
            "opencode" => json!({"type": "local", "command": [exe(), "mcp"], "environment": {}}),
            // Headless Copilot runs the tool unasked because askuser marks it read-only.
            "copilot" => {
                json!({"type": "local", "command": exe(), "args": ["mcp"], "env": {}, "tools": ["*"], "timeout": 86400000})
            }
            // Cline's longest timeout is an hour, and it sends no cancel: askuser returns first.
            "cline" => json!({
                "transport": {"type": "stdio", "command": exe(), "args": ["mcp", "--max-wait", "3540"], "env": {}},
                "timeout": 3600
            }),
            // Headless Qwen refuses an untrusted tool, and hides one not always loaded.
            "qwen-code" => json!({"command": exe(), "args": ["mcp"], "timeout": 86400000, "trust": true, "alwaysLoadTools": true}),
            other => panic!("{other} is not JSON"),
        }
    }

    /// Where the host keeps its servers.
    fn key(&self) -> &'static str {
        if self.host == "opencode" {
            "mcp"
        } else {
            "mcpServers"
        }
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn toml_doc(path: &Path) -> toml_edit::DocumentMut {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// Backups beside `path`.
fn backups(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_str().unwrap().to_owned() + ".askuser-backup";
    let mut b: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&name))
        .collect();
    b.sort();
    b
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn setup_writes_a_fresh_file_for_each_host() {
    for case in cases() {
        let home = tempfile::tempdir().unwrap();
        let out = case.run(home.path(), &[]);
        assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));
        let said = text(&out.stdout);
        assert!(said.contains("created") && said.contains("Next: "), "{}: {said}", case.host);
        let path = home.path().join(case.files[0].0);
        match case.host {
            "codex" => {
                let doc = toml_doc(&path);
                let server = &doc["mcp_servers"]["askuser"];
                assert_eq!(server["command"].as_str(), Some(exe().as_str()));
                let args: Vec<&str> = server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
                assert_eq!(args, ["mcp"]);
                assert_eq!(server["tool_timeout_sec"].as_integer(), Some(86400));
            }
            _ => assert_eq!(read_json(&path), json!({case.key(): {"askuser": case.expected()}}), "{}", case.host),
        }
        if case.host == "claude-code" {
            let settings = read_json(&home.path().join(".claude/settings.json"));
            // `claude -p` may call the tool as is; Claude Code's own dialog is left alone.
            assert_eq!(settings, json!({"env": {"MCP_TOOL_TIMEOUT": "86400000"}, "permissions": {"allow": ["mcp__askuser__ask_user"]}}));
            assert!(said.contains("`claude -p \"…\"` works as is"), "{said}");
        }
        // A new config file is the user's alone (it may hold keys), and nothing else is left behind.
        #[cfg(unix)]
        assert_eq!(mode(&path), 0o600, "{}", case.host);
        let expected: Vec<String> = {
            let mut f: Vec<String> = case.files.iter().map(|(p, _)| p.to_string()).collect();
            f.sort();
            f
        };
        assert_eq!(files(home.path()), expected, "{}: no backup, no temporary file", case.host);
    }
}

/// The new file minus what askuser added is the old one: same values, same key order.
fn assert_only_askuser_added(host: &str, old: &Value, new: &Value) {
    let mut stripped = new.clone();
    let key = if host == "opencode" { "mcp" } else { "mcpServers" };
    if let Some(servers) = stripped.get_mut(key).and_then(Value::as_object_mut) {
        servers.shift_remove("askuser");
    }
    if host == "claude-code" {
        if let Some(env) = stripped.get_mut("env").and_then(Value::as_object_mut) {
            env.shift_remove("MCP_TOOL_TIMEOUT");
        }
        if let Some(allow) = stripped.pointer_mut("/permissions/allow").and_then(Value::as_array_mut) {
            allow.retain(|r| r != "mcp__askuser__ask_user");
        }
    }
    assert_eq!(&stripped, old, "{host}: everything else is kept");
    assert_eq!(serde_json::to_string(&stripped).unwrap(), serde_json::to_string(old).unwrap(), "{host}: in its order");
}

#[test]
fn setup_merges_into_existing_files_keeps_everything_else_and_backs_them_up() {
    for case in cases() {
        let home = tempfile::tempdir().unwrap();
        let mut originals = vec![];
        for (rel, name) in &case.files {
            let path = home.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::copy(sample(name), &path).unwrap();
            #[cfg(unix)]
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
            originals.push((path, std::fs::read(sample(name)).unwrap()));
        }
        let out = case.run(home.path(), &[]);
        assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));
        let said = text(&out.stdout);
        assert!(said.contains("updated") && said.contains("askuser-backup"), "{}: {said}", case.host);

        for (path, old) in &originals {
            // The backup holds the original bytes; the file keeps its permissions.
            assert_eq!(backups(path).len(), 1, "{}", path.display());
            let mut backup = path.as_os_str().to_owned();
            backup.push(".askuser-backup");
            assert_eq!(&std::fs::read(PathBuf::from(backup)).unwrap(), old, "{}: the backup is the original", path.display());
            #[cfg(unix)]
            assert_eq!(mode(path), 0o640, "{}: permissions kept", path.display());
            if case.host == "codex" {
                // Comments, layout and every other table stay byte for byte: askuser's table is inserted.
                let new = std::fs::read_to_string(path).unwrap();
                let block = format!(
                    "[mcp_servers.askuser]\ncommand = {:?}\nargs = [\"mcp\"]\ntool_timeout_sec = 86400  # a person may take hours to answer\n\n",
                    exe()
                );
                assert_eq!(new.replacen(&block, "", 1), text(old), "{new}");
                let doc = toml_doc(path);
                assert_eq!(doc["mcp_servers"]["context7"]["env"]["CONTEXT7_API_KEY"].as_str(), Some("ctx7-xyz"));
                continue;
            }
            let (old, new): (Value, Value) = (serde_json::from_slice(old).unwrap(), read_json(path));
            assert_only_askuser_added(case.host, &old, &new);
            if path.ends_with("settings.json") && case.host == "claude-code" {
                assert_eq!(new["env"]["MCP_TOOL_TIMEOUT"], "86400000");
                assert_eq!(
                    new["permissions"]["allow"],
                    json!(["Bash(npm run test:*)", "mcp__filesystem__read_file", "mcp__askuser__ask_user"])
                );
                assert_eq!(new["permissions"]["deny"], json!(["Read(./.env)", "Bash(curl:*)"]), "AskUserQuestion is not denied");
            } else {
                assert_eq!(new[case.key()]["askuser"], case.expected(), "{}", case.host);
                let names: Vec<&String> = new[case.key()].as_object().unwrap().keys().collect();
                assert_eq!(names.last().map(|n| n.as_str()), Some("askuser"), "{}: added after the others", case.host);
            }
        }

        // Again: already set up, not a byte changed, no second backup.
        let before: Vec<Vec<u8>> = originals.iter().map(|(p, _)| std::fs::read(p).unwrap()).collect();
        let out = case.run(home.path(), &[]);
        assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));
        assert!(text(&out.stdout).contains("already set up"), "{}: {}", case.host, text(&out.stdout));
        for ((path, _), bytes) in originals.iter().zip(&before) {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
            assert_eq!(backups(path).len(), 1, "{}: no second backup", path.display());
        }
    }
}

#[test]
fn setup_updates_a_different_askuser_entry_and_says_what_changed() {
    let home = tempfile::tempdir().unwrap();
    let case = &cases()[1]; // claude-desktop
    let path = home.path().join(case.files[0].0);
    assert!(case.run(home.path(), &[]).status.success());
    // Another --max-wait, a name and a data directory: the args change, and only they.
    let out = case.run(home.path(), &["--max-wait", "20", "--agent-name", "Desk top", "--data-dir", "rel/data"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let data = std::path::absolute("rel/data").unwrap().display().to_string();
    let want = json!(["mcp", "--max-wait", "20", "--agent-name", "Desk top", "--data-dir", data]);
    assert!(said.contains(&format!("mcpServers.askuser.args: [\"mcp\",\"--max-wait\",\"50\"] → {want}")), "{said}");
    assert!(said.contains("'Desk top'"), "the command is shown as a shell reads it: {said}");
    assert_eq!(read_json(&path)["mcpServers"]["askuser"]["args"], want);
    // Each change keeps its own backup: the first one is never overwritten.
    let first = std::fs::read(path.with_extension("json.askuser-backup")).unwrap();
    assert!(case.run(home.path(), &["--max-wait", "30"]).status.success());
    assert_eq!(backups(&path), ["claude_desktop_config.json.askuser-backup", "claude_desktop_config.json.askuser-backup.2"]);
    assert_eq!(std::fs::read(path.with_extension("json.askuser-backup")).unwrap(), first);
    // The name and directory given before stay: setup cannot tell them from the user's own.
    assert_eq!(
        read_json(&path)["mcpServers"]["askuser"]["args"],
        json!(["mcp", "--max-wait", "30", "--agent-name", "Desk top", "--data-dir", data])
    );
}

#[test]
fn setup_refuses_a_file_that_does_not_parse_and_changes_nothing() {
    let broken_json = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\",}\n  }\n}\n";
    let broken_toml = "model = \"o3\"\n[mcp_servers.a]\ncommand = \"a\nargs = []\n";
    for case in cases() {
        let home = tempfile::tempdir().unwrap();
        // For Claude Code the second file is the broken one: the first, fine, stays untouched too.
        let mut written = vec![];
        for (i, (rel, name)) in case.files.iter().enumerate() {
            let path = home.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let last = i + 1 == case.files.len();
            let bytes = match (last, case.host) {
                (true, "codex") => broken_toml.as_bytes().to_vec(),
                // OpenCode reads JSONC, whose trailing commas are fine: a missing comma is not.
                (true, "opencode") => broken_json.replace("\"a\",}", "\"a\" \"b\"}").into_bytes(),
                (true, _) => broken_json.as_bytes().to_vec(),
                (false, _) => std::fs::read(sample(name)).unwrap(),
            };
            std::fs::write(&path, &bytes).unwrap();
            written.push((path, bytes));
        }
        let out = case.run(home.path(), &[]);
        assert_eq!(out.status.code(), Some(1), "{}", case.host);
        let said = text(&out.stderr);
        let broken = &written.last().unwrap().0;
        let at = if case.host == "codex" {
            format!("{}:3:13: not valid TOML: invalid basic string", broken.display())
        } else if case.host == "opencode" {
            format!("{}:3:25: not valid JSON with comments: Expected comma", broken.display())
        } else {
            format!("{}:3:26: not valid JSON: trailing comma", broken.display())
        };
        assert!(said.contains(&at), "{}: expected {at:?} in {said}", case.host);
        if case.host == "gemini-cli" || case.host == "qwen-code" {
            // Gemini reads comments, but JSON.parse after stripping them refuses a trailing comma; Qwen Code too.
            let title = if case.host == "qwen-code" { "Qwen Code" } else { "Gemini CLI" };
            assert!(said.contains(&format!("({title} reads comments in its settings, but not trailing commas: remove it)")), "{said}");
        }
        assert!(said.contains("nothing was changed"), "{said}");
        for (path, bytes) in &written {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{} is untouched", path.display());
        }
        let expected: Vec<String> = {
            let mut f: Vec<String> = case.files.iter().map(|(p, _)| p.to_string()).collect();
            f.sort();
            f
        };
        assert_eq!(files(home.path()), expected, "{}: no backup, no temporary file", case.host);
    }
}

#[test]
fn setup_print_writes_nothing() {
    for case in cases() {
        let home = tempfile::tempdir().unwrap();
        let out = case.run(home.path(), &["--print"]);
        assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));
        let printed = text(&out.stdout);
        match case.host {
            "codex" => {
                let doc: toml_edit::DocumentMut = printed.parse().unwrap();
                assert_eq!(doc["mcp_servers"]["askuser"]["tool_timeout_sec"].as_integer(), Some(86400));
            }
            "claude-code" => {
                let docs: Vec<Value> = serde_json::Deserializer::from_str(&printed).into_iter().map(Result::unwrap).collect();
                assert_eq!(docs[0]["mcpServers"]["askuser"], case.expected());
                assert_eq!(docs[1]["env"]["MCP_TOOL_TIMEOUT"], "86400000");
            }
            _ => assert_eq!(serde_json::from_str::<Value>(&printed).unwrap()[case.key()]["askuser"], case.expected(), "{}", case.host),
        }
        assert!(text(&out.stderr).contains(case.files[0].0), "{}: says where it goes: {}", case.host, text(&out.stderr));
        assert!(files(home.path()).is_empty(), "{}: --print wrote {:?}", case.host, files(home.path()));
    }
    // `json` without --config prints the generic snippet, as --print does.
    let home = tempfile::tempdir().unwrap();
    let out = askuser(home.path()).args(["setup", "json"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({"mcpServers": {"askuser": {"command": exe(), "args": ["mcp"]}}})
    );
    assert!(files(home.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn setup_follows_a_symlinked_config_file() {
    let home = tempfile::tempdir().unwrap();
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::copy(sample("codex-config.toml"), dotfiles.join("codex.toml")).unwrap();
    let link = home.path().join(".codex/config.toml");
    std::os::unix::fs::symlink(dotfiles.join("codex.toml"), &link).unwrap();
    let out = askuser(home.path()).args(["setup", "codex"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert_eq!(toml_doc(&dotfiles.join("codex.toml"))["mcp_servers"]["askuser"]["tool_timeout_sec"].as_integer(), Some(86400));
}

async fn doctor(home: &Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut c = askuser(home);
    c.arg("doctor").args(args);
    let out = tokio::process::Command::from(c).output().await.unwrap();
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    (out.status.code(), text(&out.stdout))
}

#[tokio::test]
async fn doctor_checks_a_running_bridge_and_the_hosts() {
    let b = bridge().await;
    let home = tempfile::tempdir().unwrap();
    assert!(askuser(home.path()).args(["setup", "codex"]).output().unwrap().status.success());
    let dir: OsString = b.dir.path().into();
    let (code, said) = doctor(home.path(), &["--data-dir".as_ref(), &dir]).await;
    assert_eq!(code, Some(0), "{said}");
    for line in [
        format!("ok    data directory {}", b.dir.path().display()),
        format!("ok    the bridge at {} answers with the token", b.url),
        format!("ok    the page at {}/ loads", b.url),
        "ok    codex: askuser is set up in".to_owned(),
        format!("ok    codex: tool_timeout_sec in {} lets Codex wait 24 h", home.path().join(".codex/config.toml").display()),
        "info  cursor: not set up".to_owned(),
        "→ to use it: `askuser setup cursor`".to_owned(),
    ] {
        assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    }
    assert!(!said.contains("fail  "), "{said}");
    assert!(!said.contains(TOKEN), "doctor never prints the token");

    // A token that is not the bridge's: the 401 is a failure, and says what to do.
    let (code, said) = doctor(home.path(), &["--data-dir".as_ref(), &dir, "--token".as_ref(), "wrong-token-0123456789".as_ref()]).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("fail  the bridge at {} refused the token from the --token given (401 Unauthorized)", b.url)), "{said}");
    assert!(said.contains("→ the --token given is not this bridge's token"), "{said}");
    assert!(!said.contains("wrong-token-0123456789"), "nor a wrong one");

    // A host whose timeout is too short, and one whose file does not parse.
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::copy(sample("gemini-settings.json"), home.path().join(".gemini/settings.json")).unwrap();
    let exe = exe();
    let short = json!({"mcpServers": {"askuser": {"command": exe, "args": ["mcp"], "timeout": 15000}}});
    std::fs::write(home.path().join(".gemini/settings.json"), short.to_string()).unwrap();
    std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
    std::fs::write(home.path().join(".cursor/mcp.json"), "{\"mcpServers\": {,}}").unwrap();
    let (code, said) = doctor(home.path(), &["--data-dir".as_ref(), &dir]).await;
    assert_eq!(code, Some(0), "warnings are not failures: {said}");
    let gemini = home.path().join(".gemini/settings.json");
    assert!(said.contains(&format!("warn  gemini-cli: timeout in {} lets Gemini CLI wait only 15 s", gemini.display())), "{said}");
    assert!(said.contains("→ `askuser setup gemini-cli` sets a day"), "{said}");
    assert!(said.contains("warn  cursor: ") && said.contains("mcp.json:1:17: not valid JSON: key must be a string"), "{said}");
    b.stop().await;
}

#[tokio::test]
async fn doctor_without_a_bridge_says_how_to_start_one() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let (code, said) = doctor(home.path(), &["--data-dir".as_ref(), data.path().as_os_str()]).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("fail  no bridge runs for the data directory {}", data.path().display())), "{said}");
    assert!(said.contains("→ start one with `askuser serve`"), "{said}");
    // A data directory that does not exist yet is only a warning: the bridge creates it.
    let (_, said) = doctor(home.path(), &["--data-dir".as_ref(), data.path().join("new").as_os_str()]).await;
    assert!(said.contains("warn  data directory") && said.contains("does not exist yet"), "{said}");
    assert!(!data.path().join("new").exists(), "doctor creates nothing");
}

/// `--remove` with HOME's files as they are; its output.
fn remove(case: &Case, home: &Path) -> Output {
    let out = case.run(home, &["--remove"]);
    assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));
    out
}

/// The sample files of `case` in a new HOME; each path with its bytes.
fn with_samples(case: &Case, home: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    case.files
        .iter()
        .map(|(rel, name)| {
            let path = home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::copy(sample(name), &path).unwrap();
            (path, std::fs::read(sample(name)).unwrap())
        })
        .collect()
}

#[test]
fn setup_then_remove_gives_back_every_file_byte_for_byte() {
    for case in cases() {
        let home = tempfile::tempdir().unwrap();
        let originals = with_samples(&case, home.path());
        let out = case.run(home.path(), &[]);
        assert!(out.status.success(), "{}: {}", case.host, text(&out.stderr));

        let said = text(&remove(&case, home.path()).stdout);
        let table = match case.host {
            "codex" => "[mcp_servers.askuser]",
            "opencode" => "mcp.askuser",
            _ => "mcpServers.askuser",
        };
        assert!(said.contains(&format!("  removed {table}\n")), "{}: says what it removed: {said}", case.host);
        if case.host == "claude-code" {
            for line in ["  removed \"mcp__askuser__ask_user\" from permissions.allow", "  removed env.MCP_TOOL_TIMEOUT (\"86400000\")"] {
                assert!(said.contains(line), "expected {line:?} in {said}");
            }
        }
        assert!(said.contains("askuser is out of "), "{}: {said}", case.host);
        for (path, old) in &originals {
            let now = std::fs::read(path).unwrap();
            assert_eq!(text(&now), text(old), "{}: the file as it was before setup", path.display());
            // Setup's backup and --remove's: each a new one.
            assert_eq!(backups(path).len(), 2, "{}", path.display());
        }

        // Again: nothing to remove, nothing written.
        let said = text(&remove(&case, home.path()).stdout);
        assert!(said.contains("nothing to remove"), "{}: {said}", case.host);
        assert!(!said.contains("updated"), "{}: {said}", case.host);
        for (path, _) in &originals {
            assert_eq!(backups(path).len(), 2, "{}: no third backup", path.display());
        }
    }
}

#[test]
fn remove_where_askuser_never_was_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = askuser(home.path()).args(["setup", "gemini-cli", "--remove"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains(".gemini/settings.json: does not exist"), "{said}");
    assert!(said.contains("askuser is not set up for Gemini CLI: nothing to remove."), "{said}");
    assert!(files(home.path()).is_empty(), "{:?}", files(home.path()));

    // `json` has no file of its own: --remove needs the one it was merged into.
    let out = askuser(home.path()).args(["setup", "json", "--remove"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("askuser: `askuser setup json --remove` needs --config FILE"), "{}", text(&out.stderr));
    let out = askuser(home.path()).args(["setup", "codex", "--remove", "--print"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--remove and --print do not go together");
}

/// Claude Code's settings.json as an earlier askuser left it: AskUserQuestion denied.
const OLD_CLAUDE_SETTINGS: &str = "{\n  \"env\": {\n    \"MCP_TOOL_TIMEOUT\": \"86400000\"\n  },\n  \"permissions\": {\n    \"deny\": [\n      \"AskUserQuestion\"\n    ]\n  }\n}\n";

#[test]
fn setup_leaves_an_earlier_askuserquestion_deny_and_says_how_to_remove_it() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, OLD_CLAUDE_SETTINGS).unwrap();
    let out = askuser(home.path()).args(["setup", "claude-code"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let note = format!("  note: permissions.deny in {} has \"AskUserQuestion\"", settings.display());
    assert!(said.contains(&note), "expected {note:?} in {said}");
    assert!(said.contains("To get the dialog back, delete \"AskUserQuestion\" from permissions.deny there"), "{said}");
    assert!(said.contains("  permissions.allow: added \"mcp__askuser__ask_user\""), "{said}");
    let v = read_json(&settings);
    assert_eq!(v["permissions"], json!({"deny": ["AskUserQuestion"], "allow": ["mcp__askuser__ask_user"]}), "the deny rule stays");
    // --remove takes out what this setup added and askuser's timeout; the rule stays, with the note.
    let said = text(&askuser(home.path()).args(["setup", "claude-code", "--remove"]).output().unwrap().stdout);
    assert!(said.contains(&note), "{said}");
    assert_eq!(read_json(&settings), json!({"permissions": {"deny": ["AskUserQuestion"]}}));
}

#[test]
fn setup_keeps_the_users_own_args_and_updates_its_own() {
    // Gemini: the user's --agent-name and --to stay; --tool-name ask_user (hidden by Gemini) is fixed.
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mine = json!({"mcpServers": {"askuser": {"command": "askuser", "args": ["mcp", "--agent-name", "bob", "--to", "team", "--tool-name", "ask_user"], "cwd": "/work"}}});
    std::fs::write(&path, serde_json::to_string_pretty(&mine).unwrap()).unwrap();
    let out = askuser(home.path()).args(["setup", "gemini-cli"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let server = &read_json(&path)["mcpServers"]["askuser"];
    assert_eq!(server["args"], json!(["mcp", "--agent-name", "bob", "--to", "team", "--tool-name", "ask_human"]), "{}", text(&out.stdout));
    assert_eq!((&server["cwd"], &server["trust"], &server["timeout"]), (&json!("/work"), &json!(true), &json!(86400000)));
    // Runs show the whole command.
    assert!(text(&out.stdout).contains(&format!("Gemini CLI runs: {} mcp --agent-name bob --to team --tool-name ask_human", exe())));

    // Codex: the same in TOML, comments kept.
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        "[mcp_servers.askuser]\ncommand = \"askuser\"\nargs = [\"mcp\", \"--to\", \"team\"] # mine\ntool_timeout_sec = 600\n",
    )
    .unwrap();
    let out = askuser(home.path()).args(["setup", "codex", "--agent-name", "ci"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(new.contains("args = [\"mcp\", \"--to\", \"team\", \"--agent-name\", \"ci\"] # mine\n"), "{new}");

    // Claude Code: the rule follows the server's and the tool's names.
    let home = tempfile::tempdir().unwrap();
    let out = askuser(home.path()).args(["setup", "claude-code", "--name", "human", "--tool-name", "ask"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(read_json(&home.path().join(".claude.json"))["mcpServers"]["human"]["args"], json!(["mcp", "--tool-name", "ask"]));
    assert_eq!(read_json(&home.path().join(".claude/settings.json"))["permissions"]["allow"], json!(["mcp__human__ask"]));
    assert!(text(&out.stdout).contains("permissions.allow lets it call mcp__human__ask without --allowedTools"), "{}", text(&out.stdout));
    let said = text(&askuser(home.path()).args(["setup", "claude-code", "--remove", "--name", "human"]).output().unwrap().stdout);
    assert!(said.contains("removed mcpServers.human") && said.contains("removed \"mcp__human__ask\" from permissions.allow"), "{said}");
    assert_eq!(read_json(&home.path().join(".claude/settings.json")), json!({}));
}

/// Gemini's settings.json with comments, as a person writes it (Gemini reads them).
const GEMINI_JSONC: &str = r#"{
  // Signed in with an API key.
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  /* Servers: mine first. */
  "mcpServers": {
    // My Python tools.
    "pythonTools": {"command": "python", "args": ["-m", "tools"]}
    // (askuser goes here)
  },
  "ui": {"theme": "GitHub"} // dark later
}
"#;

#[test]
fn setup_edits_gemini_settings_with_comments_and_keeps_them() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, GEMINI_JSONC).unwrap();
    let out = askuser(home.path()).args(["setup", "gemini-cli"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let new = std::fs::read_to_string(&path).unwrap();
    for comment in
        ["// Signed in with an API key.", "/* Servers: mine first. */", "// My Python tools.", "// (askuser goes here)", "// dark later"]
    {
        assert!(new.contains(comment), "{comment:?} kept in:\n{new}");
    }
    // Read as Gemini reads it: comments stripped, then plain JSON.
    let stripped: String =
        new.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n").replace("/* Servers: mine first. */", "");
    let v: Value = serde_json::from_str(&stripped).unwrap_or_else(|e| panic!("{e}:\n{new}"));
    assert_eq!(v["mcpServers"]["askuser"], cases()[3].expected());
    assert_eq!(v["mcpServers"]["pythonTools"]["command"], "python");
    // The undo takes out exactly that.
    remove(&cases()[3], home.path());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), GEMINI_JSONC);
}

/// `askuser doctor` with no bridge (its own lines are not looked at here): the lines about `host`.
fn doctor_on(home: &Path, host: &str) -> String {
    let data = home.join("no-bridge");
    let out = askuser(home).arg("doctor").arg("--data-dir").arg(&data).output().unwrap();
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let mut lines = vec![];
    let mut ours = false;
    for line in said.lines() {
        if !line.starts_with("      → ") {
            ours = line.get(6..).is_some_and(|l| l.starts_with(&format!("{host}: ")));
        }
        if ours {
            lines.push(line);
        }
    }
    lines.join("\n")
}

/// Writes `text` to HOME's `rel`.
fn put(home: &Path, rel: &str, text: &str) -> PathBuf {
    let path = home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn doctor_says_each_host_is_ok_after_setup() {
    let home = tempfile::tempdir().unwrap();
    for case in cases().iter().filter(|c| c.host != "json") {
        assert!(case.run(home.path(), &[]).status.success(), "{}", case.host);
        let said = doctor_on(home.path(), case.host);
        assert!(said.starts_with("ok    "), "{}:\n{said}", case.host);
        for bad in ["warn  ", "fail  ", "info  "] {
            assert!(!said.contains(bad), "{}: nothing to look at after setup:\n{said}", case.host);
        }
    }
    let settings = home.path().join(".claude/settings.json");
    let said = doctor_on(home.path(), "claude-code");
    assert!(
        said.contains(&format!("ok    claude-code: {} allows mcp__askuser__ask_user, so `claude -p` may call it", settings.display())),
        "{said}"
    );
    let gemini = home.path().join(".gemini/settings.json");
    let said = doctor_on(home.path(), "gemini-cli");
    assert!(
        said.contains(&format!(
            "ok    gemini-cli: mcpServers.askuser in {} is trusted and its tool is ask_human, so `gemini -p` offers it",
            gemini.display()
        )),
        "{said}"
    );
}

#[test]
fn doctor_finds_claude_code_without_the_allow_rule_or_with_the_old_deny() {
    let home = tempfile::tempdir().unwrap();
    assert!(askuser(home.path()).args(["setup", "claude-code"]).output().unwrap().status.success());
    let settings = put(home.path(), ".claude/settings.json", OLD_CLAUDE_SETTINGS);
    let said = doctor_on(home.path(), "claude-code");
    let path = settings.display();
    for line in [
        format!("warn  claude-code: {path} does not allow mcp__askuser__ask_user: `claude -p` cannot call it (the model reads \"Claude requested permissions to use mcp__askuser__ask_user, but you haven't granted it yet\")"),
        "      → `askuser setup claude-code` adds it to permissions.allow (or pass `--allowedTools mcp__askuser__ask_user` to every `claude -p`)".to_owned(),
        format!("warn  claude-code: {path} denies AskUserQuestion: interactive sessions lose Claude Code's own question dialog"),
        format!("      → delete \"AskUserQuestion\" from permissions.deny in {path}"),
        format!("ok    claude-code: MCP_TOOL_TIMEOUT in {path} lets Claude Code wait 24 h"),
    ] {
        assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    }
    // The fix it names: setup adds the rule; the deny stays until the person deletes it.
    assert!(askuser(home.path()).args(["setup", "claude-code"]).output().unwrap().status.success());
    let said = doctor_on(home.path(), "claude-code");
    assert!(!said.contains("does not allow"), "{said}");
    assert!(said.contains("denies AskUserQuestion"), "{said}");
}

/// Each of the newer hosts' misconfigurations, named with its fix; and setup's fix works.
#[test]
fn doctor_finds_what_keeps_opencode_copilot_cline_and_qwen_from_asking() {
    let home = tempfile::tempdir().unwrap();
    let exe = exe();
    let opencode = put(
        home.path(),
        ".config/opencode/opencode.jsonc",
        &format!("{{\n  // mine\n  \"mcp\": {{\"askuser\": {{\"type\": \"local\", \"command\": [{exe:?}, \"mcp\"], \"enabled\": false, \"timeout\": 5000,}}}}\n}}\n"),
    );
    let copilot = put(
        home.path(),
        ".copilot/mcp-config.json",
        &json!({"mcpServers": {"askuser": {"type": "local", "command": exe, "args": ["mcp"], "tools": ["other"]}}}).to_string(),
    );
    let cline = put(
        home.path(),
        ".cline/data/settings/cline_mcp_settings.json",
        &json!({"mcpServers": {"askuser": {"transport": {"type": "stdio", "command": exe, "args": ["mcp"]}}}}).to_string(),
    );
    let qwen = put(home.path(), ".qwen/settings.json", &json!({"mcpServers": {"askuser": {"command": exe, "args": ["mcp"]}}}).to_string());
    let expect = |host: &str, lines: &[String]| {
        let said = doctor_on(home.path(), host);
        for line in lines {
            assert!(said.contains(line.as_str()), "expected {line:?} in:\n{said}");
        }
    };
    let at = |path: &Path, key: &str| format!("{key}.askuser in {}", path.display());
    expect(
        "opencode",
        &[
            format!("fail  opencode: {} has \"enabled\": false: OpenCode does not start askuser", at(&opencode, "mcp")),
            "      → `askuser setup opencode` switches it on".to_owned(),
            format!("warn  opencode: timeout in {} is 5000 ms, not longer than askuser's progress interval (10 s): OpenCode gives up between two of them", opencode.display()),
            "      → `askuser setup opencode` sets OpenCode's default, 60 s".to_owned(),
        ],
    );
    expect(
        "copilot",
        &[format!(
            "warn  copilot: mcpServers.askuser.tools in {} does not list ask_user (nor \"*\"): Copilot CLI does not offer it to the model",
            copilot.display()
        )],
    );
    expect(
        "cline",
        &[
            format!("warn  cline: no tool-call timeout set for askuser in {}: Cline gives up after 60 s", cline.display()),
            "      → `askuser setup cline` sets the longest timeout Cline takes (3600 s) and --max-wait 3540".to_owned(),
        ],
    );
    expect(
        "qwen-code",
        &[
            format!("warn  qwen-code: {} has no \"trust\": true: `qwen --prompt` refuses an untrusted tool", at(&qwen, "mcpServers")),
            format!(
                "warn  qwen-code: {} has no \"alwaysLoadTools\": true: Qwen Code hides askuser's tool behind its tool search",
                at(&qwen, "mcpServers")
            ),
            format!("warn  qwen-code: no tool-call timeout set for askuser in {}: Qwen Code gives up after 10 min", qwen.display()),
        ],
    );
    // The fixes named: after setup, nothing is left to look at.
    for host in ["opencode", "copilot", "cline", "qwen-code"] {
        let out = askuser(home.path()).args(["setup", host]).output().unwrap();
        assert!(out.status.success(), "{host}: {}", text(&out.stderr));
        let said = doctor_on(home.path(), host);
        assert!(!said.contains("warn  ") && !said.contains("fail  "), "{host} after setup:\n{said}");
    }
    assert!(std::fs::read_to_string(&opencode).unwrap().contains("// mine"), "OpenCode's comments are kept");
}

#[test]
fn doctor_finds_gemini_untrusted_or_with_a_hidden_tool_name() {
    let home = tempfile::tempdir().unwrap();
    let exe = exe();
    let entry = |extra: Value| {
        let mut server = json!({"command": exe, "timeout": 86400000});
        server.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"mcpServers": {"askuser": server}}).to_string()
    };
    let path = put(home.path(), ".gemini/settings.json", &entry(json!({"args": ["mcp", "--tool-name", "ask_user"]})));
    let said = doctor_on(home.path(), "gemini-cli");
    let at = format!("mcpServers.askuser in {}", path.display());
    for line in [
        format!("warn  gemini-cli: {at} has no \"trust\": true: `gemini -p` hides every tool of a server it does not trust"),
        "      → `askuser setup gemini-cli` sets it (or add \"trust\": true to mcpServers.askuser by hand)".to_owned(),
        format!("warn  gemini-cli: {at} names the tool ask_user (--tool-name ask_user): `gemini -p` hides every tool of that name, its own built-in's"),
        "      → `askuser setup gemini-cli` passes --tool-name ask_human".to_owned(),
    ] {
        assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    }
    // No --tool-name: this askuser names it ask_human by itself; another one may not.
    put(home.path(), ".gemini/settings.json", &entry(json!({"args": ["mcp"], "trust": true})));
    let said = doctor_on(home.path(), "gemini-cli");
    assert!(
        said.contains(&format!(
            "info  gemini-cli: {at} gives no --tool-name: this askuser names its tool ask_human when Gemini CLI connects"
        )),
        "{said}"
    );
    let other = home.path().join("bin/askuser");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::copy(&exe, &other).unwrap();
    let with_other = json!({"mcpServers": {"askuser": {"command": other, "args": ["mcp"], "timeout": 86400000, "trust": true}}});
    put(home.path(), ".gemini/settings.json", &with_other.to_string());
    let said = doctor_on(home.path(), "gemini-cli");
    assert!(said.contains(&format!("warn  gemini-cli: {at} gives no --tool-name, and runs another askuser than this one")), "{said}");
    // A server Gemini's own lists keep from starting.
    let blocked = json!({"mcp": {"allowed": ["pythonTools"]}, "mcpServers": {"askuser": {"command": exe, "args": ["mcp", "--tool-name", "ask_human"], "trust": true}}});
    put(home.path(), ".gemini/settings.json", &blocked.to_string());
    let said = doctor_on(home.path(), "gemini-cli");
    let line = format!(
        "fail  gemini-cli: in {}, mcp.allowed does not list \"askuser\", so Gemini CLI does not start it: add \"askuser\" to it",
        path.display()
    );
    assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    // And the fix named: setup makes it right (the allow-list is the person's to change).
    put(home.path(), ".gemini/settings.json", &entry(json!({"args": ["mcp", "--tool-name", "ask_user"]})));
    assert!(askuser(home.path()).args(["setup", "gemini-cli"]).output().unwrap().status.success());
    let said = doctor_on(home.path(), "gemini-cli");
    assert!(!said.contains("warn  ") && !said.contains("fail  "), "{said}");
}

#[test]
fn doctor_finds_a_short_codex_timeout_and_a_command_that_is_gone() {
    let home = tempfile::tempdir().unwrap();
    let exe = exe();
    let path = put(
        home.path(),
        ".codex/config.toml",
        &format!("[mcp_servers.askuser]\ncommand = {exe:?}\nargs = [\"mcp\"]\ntool_timeout_sec = 1800\n"),
    );
    let said = doctor_on(home.path(), "codex");
    for line in [
        format!("warn  codex: tool_timeout_sec in {} lets Codex wait only 30 min: a question open longer fails the call (the model reads \"timed out awaiting tools/call after 1800s\")", path.display()),
        "      → `askuser setup codex` sets a day".to_owned(),
    ] {
        assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    }
    let gone = "/nonexistent/bin/askuser";
    let path = put(
        home.path(),
        ".cursor/mcp.json",
        &json!({"mcpServers": {"askuser": {"command": gone, "args": ["mcp", "--max-wait", "50"]}}}).to_string(),
    );
    let said = doctor_on(home.path(), "cursor");
    for line in [
        format!("fail  cursor: askuser's entry in {} runs \"{gone}\", which does not exist: Cursor cannot start askuser", path.display()),
        "      → `askuser setup cursor` writes the path of this askuser".to_owned(),
    ] {
        assert!(said.contains(&line), "expected {line:?} in:\n{said}");
    }
}

/// `--approvals` adds `--approvals` to Claude Code's `askuser mcp` (once, however often
/// setup runs, after the user's own flags) and says how to use it; other hosts refuse it.
#[test]
fn setup_approvals_offers_the_permission_prompt_tool_to_claude_code_only() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| askuser(home.path()).args(args).output().unwrap();
    let first = run(&["setup", "claude-code", "--agent-name", "ci"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let out = run(&["setup", "claude-code", "--approvals"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("--permission-prompt-tool mcp__askuser__approve"), "it says how to use it: {}", text(&out.stdout));
    let again = run(&["setup", "claude-code", "--approvals"]);
    assert!(again.status.success());
    let config = read_json(&home.path().join(".claude.json"));
    assert_eq!(config["mcpServers"]["askuser"]["args"], json!(["mcp", "--agent-name", "ci", "--approvals"]), "{config:#}");
    let codex = run(&["setup", "codex", "--approvals"]);
    assert!(!codex.status.success());
    assert!(text(&codex.stderr).contains("--approvals is for claude-code only"), "{}", text(&codex.stderr));
}

#[tokio::test]
async fn setup_via_npx_writes_the_runner_and_doctor_accepts_it() {
    let b = bridge().await;
    let home = tempfile::tempdir().unwrap();
    let out = askuser(home.path()).args(["setup", "codex", "--via", "npx"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let server = &toml_doc(&home.path().join(".codex/config.toml"))["mcp_servers"]["askuser"];
    assert_eq!(server["command"].as_str(), Some("npx"));
    let args: Vec<&str> = server["args"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
    assert_eq!(&args[..3], ["-y", "askuser", "mcp"], "{args:?}");
    let dir: OsString = b.dir.path().into();
    let (_, said) = doctor(home.path(), &["--data-dir".as_ref(), &dir]).await;
    assert!(said.contains("ok    codex: askuser is set up in") && said.contains("`npx -y askuser mcp"), "{said}");
    assert!(!said.contains("not `askuser mcp`"), "{said}");
    b.stop().await;
}

/// docs/agents.md's "Set a host up in one command" lines, each as pasted into a shell in a
/// new HOME (askuser on PATH): every setup line succeeds and writes its host's file, the
/// undo line undoes, and doctor then runs (it fails only on what it finds: no bridge here).
#[test]
fn the_docs_one_command_lines_work_as_pasted() {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md")).unwrap();
    let section = docs.split_once("\n## Set a host up in one command\n").expect("the section").1;
    let block = section.split_once("```sh\n").and_then(|(_, rest)| rest.split_once("\n```")).expect("its sh block").0;
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_askuser")).parent().unwrap().to_owned();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap()))).unwrap();
    let mut ran = vec![];
    for line in block.lines() {
        let mut sh = Command::new("sh");
        isolate(&mut sh, home.path());
        let out = sh.arg("-c").arg(line).env("PATH", &path).env("ASKUSER_DATA_DIR", home.path().join("data")).output().unwrap();
        let command = line.split('#').next().unwrap().trim();
        if command == "askuser doctor" {
            assert!(text(&out.stdout).contains("opencode: askuser is set up"), "`{line}`:\n{}", text(&out.stdout));
        } else {
            assert!(out.status.success(), "`{line}` failed:\n{}{}", text(&out.stdout), text(&out.stderr));
        }
        ran.push(command.to_owned());
    }
    assert!(ran.iter().any(|l| l == "askuser setup qwen-code"), "{ran:?}");
    for file in [
        ".config/opencode/opencode.jsonc",
        ".copilot/mcp-config.json",
        ".cline/data/settings/cline_mcp_settings.json",
        ".qwen/settings.json",
    ] {
        assert!(home.path().join(file).exists(), "{file} written");
    }
    assert!(!std::fs::read_to_string(home.path().join(".codex/config.toml")).unwrap().contains("askuser"), "the undo line undid");
}
