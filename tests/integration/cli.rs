//! The `askuser` binary as a person runs it.

use crate::support::{askuser, text};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

fn run(cmd: &mut Command, stdin: Option<&str>) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

#[test]
fn validate_reads_every_dialect_example() {
    for (name, questions) in [("claude.json", 2), ("pi.json", 2), ("opal.json", 1), ("roo.json", 1)] {
        let out = run(askuser().arg("validate").arg(example(name)), None);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["questions"].as_array().unwrap().len(), questions, "{name}");
    }
    // Opal's "Other" choice is dropped with a warning on stderr.
    let out = run(askuser().arg("validate").arg(example("opal.json")), None);
    assert_eq!(text(&out.stderr), "warning: choices[2]: \"Other\" dropped: askuser always adds its own \"Other\" answer\n");
    // Roo's {answer, mode} suggestion.
    let out = run(askuser().arg("validate").arg(example("roo.json")), None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["questions"][0]["options"][1], json!({"label": "./config/frontend-config.json", "description": "Switches to code mode"}));
}

#[test]
fn validate_lists_every_error_and_exits_2() {
    let out = run(askuser().arg("validate"), Some(&std::fs::read_to_string(example("invalid.json")).unwrap()));
    assert_eq!(out.status.code(), Some(2));
    let lines: Vec<String> = text(&out.stderr).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(lines.contains(&"questions[1].question: expected a string, got the number 42".to_owned()));
    assert!(out.stdout.is_empty());
    // The claude-code profile refuses free-text questions.
    let out = run(askuser().args(["validate", "--limits", "claude-code"]).arg(example("pi.json")), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("questions[1].options: expected 2 to 4 options, got none"));
}

#[test]
fn format_prints_each_format() {
    let path = example("result.json");
    let out = run(askuser().args(["format", "--format", "text"]).arg(&path), None);
    assert_eq!(
        text(&out.stdout),
        "Which database should we use? → PostgreSQL (Recommended)\nWhat should we name this service? → order-processor\n"
    );
    let out = run(askuser().args(["format", "-f", "claude"]).arg(&path), None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answers"]["What should we name this service?"], "order-processor");
    let out = run(askuser().args(["format", "-f", "pi"]).arg(&path), None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answers"][0]["selectedOption"], "PostgreSQL (Recommended)");
    let out = run(askuser().args(["format", "-f", "xml"]).arg(&path), None);
    assert_eq!(out.status.code(), Some(2));
    let out = run(askuser().args(["format"]), Some("{\"id\": 1}"));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("expected a canonical result"));
}

/// A real `askuser serve` process, stopped (SIGTERM) when dropped.
struct Server {
    child: Child,
    url: String,
    token: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        Server::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Server {
        Server::start_at(dir, "127.0.0.1:0", extra)
    }

    fn start_at(dir: &Path, addr: &str, extra: &[&str]) -> Server {
        let mut child = askuser()
            .args(["serve", "--addr", addr, "--data-dir"])
            .arg(dir)
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        // Log lines may come first (say, the integrity check after a crash).
        let line =
            lines.by_ref().take(20).map(Result::unwrap).find(|l| l.starts_with("askuser: open ")).expect("serve prints where to open");
        let open = line.strip_prefix("askuser: open ").unwrap();
        let (url, token) = open.split_once("/#token=").unwrap();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, url: url.to_owned(), token: token.to_owned() }
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_then_curl_a_question_then_answer_it_from_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path());
    assert!(server.token.len() >= 32, "a token of at least 128 bits");
    // The bridge file is user-only and names the bridge.
    let file = dir.path().join("bridge.json");
    let bf: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(bf["url"], server.url.as_str());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(dir.path().join("token")).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // An agent asks with curl.
    let url = server.url.clone();
    let token = server.token.clone();
    let asking = std::thread::spawn(move || {
        Command::new("curl")
            .args(["-sS", "-X", "POST", &format!("{url}/v1/ask?format=text"), "-H", &format!("Authorization: Bearer {token}"), "-d"])
            .arg(std::fs::read_to_string(example("pi.json")).unwrap())
            .output()
            .unwrap()
    });
    // A person sees it with `askuser pending` (found through bridge.json) ...
    let mut id = None;
    for _ in 0..50 {
        let out = run(askuser().args(["pending", "--json", "--data-dir"]).arg(dir.path()), None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(first) = v.as_array().unwrap().first() {
            id = Some(first["id"].as_str().unwrap().to_owned());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let id = id.expect("the question shows up in askuser pending");
    let out = run(askuser().args(["pending", "--data-dir"]).arg(dir.path()), None);
    let listing = text(&out.stdout);
    assert!(listing.contains("Which database should we use?") && listing.contains("- SQLite: Lightweight, file-based"), "{listing}");

    // ... answers it (a label, ignoring case, and free text) ...
    let out = run(askuser().args(["answer", "--data-dir"]).arg(dir.path()).args([&id, "sqlite", "order-processor"]), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // ... and curl returns the answer.
    let curl = asking.join().unwrap();
    assert_eq!(text(&curl.stdout), "Which database should we use? → SQLite\nWhat should we name this service? → order-processor");
    // Answering again is refused.
    let out = run(askuser().args(["answer", "--data-dir"]).arg(dir.path()).args([&id, "MongoDB", "x"]), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("already final"), "{}", text(&out.stderr));
    // A wrong token is named as the command's own option and variable, not as HTTP.
    let out = run(askuser().args(["pending", "--url", &server.url, "--token", "wrong-token-0123456789abcdef"]), None);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(said.contains("wrong token") && said.contains("--token or ASKUSER_TOKEN") && !said.contains("Bearer"), "{said}");

    // A clean shutdown removes bridge.json.
    assert!(server.terminate().success());
    assert!(!file.exists());
    // Without a bridge, client commands say how to start one.
    let out = run(askuser().args(["pending", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Start one with `askuser serve`"));
}

#[test]
fn serve_refuses_a_port_in_use() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = run(askuser().args(["serve", "--addr", &addr, "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is already in use"), "{}", text(&out.stderr));
}

/// Posts to the bridge with curl (a client no one here wrote).
fn curl(server: &Server, method: &str, path: &str, body: Option<&str>) -> String {
    let mut c = Command::new("curl");
    c.args(["-sS", "-X", method, &format!("{}{path}", server.url), "-H", &format!("Authorization: Bearer {}", server.token)]);
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "-d", b]);
    }
    text(&c.output().unwrap().stdout)
}

/// Waits for the first pending question and returns its id.
fn first_pending(server: &Server) -> String {
    for _ in 0..100 {
        let v: Value = serde_json::from_str(&curl(server, "GET", "/v1/questions?status=pending", None)).unwrap();
        if let Some(q) = v.as_array().unwrap().first() {
            return q["id"].as_str().unwrap().to_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no question became pending");
}

fn ask_in_background(dir: &Path, args: &[&str]) -> std::thread::JoinHandle<Output> {
    let mut cmd = askuser();
    cmd.args(["ask", "--data-dir"]).arg(dir).args(args);
    std::thread::spawn(move || run(&mut cmd, None))
}

#[test]
fn ask_round_trips_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    // Answered: 0, the result on stdout in --format.
    let asking = ask_in_background(
        dir.path(),
        &["--question", "Which DB?", "--header", "DB", "--option", "PostgreSQL=Relational", "--option", "SQLite", "--format", "text"],
    );
    let id = first_pending(&server);
    let stored: Value = serde_json::from_str(&curl(&server, "GET", &format!("/v1/questions/{id}"), None)).unwrap();
    assert_eq!(stored["request"]["questions"][0]["options"][0], json!({"label": "PostgreSQL", "description": "Relational"}));
    curl(&server, "POST", &format!("/v1/questions/{id}/answer"), Some(r#"{"answers":["sqlite"]}"#));
    let out = asking.join().unwrap();
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), "Which DB? → SQLite\n".to_owned()));

    // Multi-select from a file in the Claude dialect, canonical JSON out.
    let asking = ask_in_background(dir.path(), &[example("claude.json").to_str().unwrap()]);
    let id = first_pending(&server);
    curl(&server, "POST", &format!("/v1/questions/{id}/answer"), Some(r#"{"answers":["Jest", "auth, ui"]}"#));
    let out = asking.join().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answers"][1]["answer"], json!(["Auth", "UI"]));

    // Cancelled: 3.
    let asking = ask_in_background(dir.path(), &["--question", "Proceed?"]);
    let id = first_pending(&server);
    curl(&server, "POST", &format!("/v1/questions/{id}/cancel"), None);
    assert_eq!(asking.join().unwrap().status.code(), Some(3));

    // Timed out: 4.
    let out =
        run(askuser().args(["ask", "--data-dir"]).arg(dir.path()).args(["--question", "Quick?", "--timeout", "1", "-f", "text"]), None);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stdout).contains("timed out"));

    // Invalid input: 2, every error on stderr, nothing stored.
    let out = run(askuser().args(["ask", "--data-dir"]).arg(dir.path()).arg("-"), Some(r#"{"questions":[{"question":""}]}"#));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "questions[0].question: must not be empty\n");

    // The two-pass headless workflow: store now, pick the answer up later.
    let out =
        run(askuser().args(["ask", "--no-wait", "--id", "ci-run-42", "--data-dir"]).arg(dir.path()).args(["--question", "Ship it?"]), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ci-run-42\n");
    assert!(text(&out.stderr).contains(&server.url));
    let out = run(askuser().args(["result", "ci-run-42", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(5), "still pending");
    let waiting = {
        let mut cmd = askuser();
        cmd.args(["result", "ci-run-42", "--wait", "-f", "text", "--data-dir"]).arg(dir.path());
        std::thread::spawn(move || run(&mut cmd, None))
    };
    std::thread::sleep(Duration::from_millis(300));
    curl(&server, "POST", "/v1/questions/ci-run-42/answer", Some(r#"{"answers":["yes, ship it"]}"#));
    let out = waiting.join().unwrap();
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), "Ship it? → yes, ship it\n".to_owned()));
    let out = run(askuser().args(["result", "ci-run-42", "-f", "text", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(text(&out.stdout), "Ship it? → yes, ship it\n");
}

/// `askuser ask --remind-after --default-after`: kept on the question; the default ends
/// the wait with no answer and says why (exit 4); a bad duration names its flag.
#[test]
fn ask_with_a_reminder_and_a_default() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let args = ["--id", "remind-1", "--question", "Deploy now?", "--remind-after", "10m", "--default-after", "2s", "-f", "text"];
    let out = run(askuser().args(["ask", "--data-dir"]).arg(dir.path()).args(args), None);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("The user did not answer: no answer after 2 s; default applied"), "{}", text(&out.stdout));
    let stored: Value = serde_json::from_str(&curl(&server, "GET", "/v1/questions/remind-1", None)).unwrap();
    assert_eq!((stored["request"]["remindAfterSeconds"].as_u64(), stored["request"]["defaultAfterSeconds"].as_u64()), (Some(600), Some(2)));
    assert_eq!(stored["result"]["reason"], "no answer after 2 s; default applied");
    let out = run(askuser().args(["ask", "--question", "Q?", "--default-after", "0s", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--default-after: expected at least 1 second, got 0"), "{}", text(&out.stderr));
}

/// docs/notify.md's reminder lines, pasted into a shell (with `--no-wait` added to the
/// ask, and no host on the MCP server's stdin): the ask stores what they say, the MCP
/// server takes its flag.
#[test]
fn the_reminder_commands_in_the_docs_work_as_pasted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/notify.md")).unwrap();
    let block = docs.split("## Reminders and a default").nth(1).unwrap();
    let lines: Vec<&str> = block.split("```sh\n").nth(1).unwrap().split("```").next().unwrap().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let bin = Path::new(env!("CARGO_BIN_EXE_askuser")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let paste = |line: String| run(askuser_shell(&line).env("PATH", &path).env("ASKUSER_DATA_DIR", dir.path()), None);
    let out = paste(format!("{} --no-wait --id from-docs", lines[0]));
    assert!(out.status.success(), "{}: {}", lines[0], text(&out.stderr));
    let stored: Value = serde_json::from_str(&curl(&server, "GET", "/v1/questions/from-docs", None)).unwrap();
    assert_eq!(
        (stored["request"]["remindAfterSeconds"].as_u64(), stored["request"]["defaultAfterSeconds"].as_u64()),
        (Some(600), Some(1800))
    );
    let out = paste(lines[1].to_owned());
    assert!(out.status.success(), "{}: {}", lines[1], text(&out.stderr));
}

#[test]
fn ask_without_a_bridge_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(askuser().args(["ask", "--question", "Anyone?", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no bridge found"));
    let out = run(askuser().args(["ask", "--question", "Anyone?", "--url", "http://127.0.0.1:9", "--token", "0123456789abcdef0123"]), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot reach the bridge"), "{}", text(&out.stderr));
}

#[test]
fn a_late_answer_runs_the_configured_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("late.txt");
    let script = format!("{{ echo \"$ASKUSER_ID $ASKUSER_SESSION_ID $ASKUSER_STATUS\"; cat; }} > {}", out.display());
    let server = Server::start_with(dir.path(), &["--on-late-answer", "sh", "-c", &script]);
    // The agent stores its question and goes away (nobody waits for it) ...
    let body = r#"{"id":"late-1","question":"Deploy?","choices":["Yes","No"],"agent":{"name":"claude-code","sessionId":"sess-9"}}"#;
    curl(&server, "POST", "/v1/ask?wait=false", Some(body));
    // ... and the answer comes later: the command restarts it (no shell of askuser's own).
    curl(&server, "POST", "/v1/questions/late-1/answer", Some(r#"{"answers":["yes"]}"#));
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.contains('}') {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (first, json) = text.split_once('\n').expect("the command ran");
    assert_eq!(first, "late-1 sess-9 answered");
    let result: Value = serde_json::from_str(json).unwrap();
    assert_eq!(result["answers"][0]["answer"], "Yes");
    // An answer the agent was waiting for does not run it.
    std::fs::remove_file(&out).unwrap();
    let asking = ask_in_background(dir.path(), &["--question", "Waiting?", "--id", "on-time-1"]);
    let _ = first_pending(&server);
    curl(&server, "POST", "/v1/questions/on-time-1/answer", Some(r#"{"answers":["now"]}"#));
    assert_eq!(asking.join().unwrap().status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!out.exists(), "the late-answer command ran for an answer someone was waiting for");
}

/// Agent text never reaches the terminal raw: cursor moves, hidden text (SGR 8), window
/// titles (OSC 0), the clipboard (OSC 52) and bidi overrides are shown as escapes.
#[test]
fn agent_text_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let request = json!({"id": "esc-1", "question": "Deploy?\x1b[1A\x1b[2K\x1b]0;pwned\x07", "header": "H\u{202e}exe.txt",
        "choices": ["Yes\x1b[8m (prod!)", "No\x1b]52;c;cm0gLXJmIH4=\x07", "Maybe\u{9b}31m"],
        "agent": {"name": "bot", "sessionId": "s"}});
    let out = run(
        askuser().args(["ask", "--no-wait", "--url", &server.url, "--token", &server.token, "--data-dir"]).arg(dir.path()),
        Some(&request.to_string()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains(&server.token), "--no-wait never prints the token (it lands in agent transcripts)");
    for args in [&["pending"][..], &["pending", "--json"], &["result", "esc-1"]] {
        let out = run(askuser().args(args).args(["--data-dir"]).arg(dir.path()), None);
        let shown = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07') && !shown.contains('\u{9b}') && !shown.contains('\u{202e}'),
            "{args:?}: {shown:?}"
        );
        if args == ["pending"] {
            assert!(shown.contains("Yes\\u{1b}[8m (prod!)"), "{shown}");
            assert!(shown.contains("H\\u{202e}exe.txt"), "{shown}");
        }
        if args == ["pending", "--json"] {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v[0]["request"]["questions"][0]["header"], "H\u{202e}exe.txt", "the JSON still carries the exact text");
        }
    }
}

/// Two bridges on one data directory would each keep their own waiting agents: the
/// second refuses and says who holds the directory.
/// A bridge on IPv6 loopback announces an address the terminal commands can reach.
#[test]
fn the_terminal_commands_reach_a_bridge_on_ipv6() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_at(dir.path(), "[::1]:0", &[]);
    assert!(server.url.starts_with("http://[::1]:"), "{}", server.url);
    let asked = run(askuser().args(["ask", "--no-wait", "--id", "v6-1", "--question", "Over IPv6?", "--data-dir"]).arg(dir.path()), None);
    assert!(asked.status.success(), "{}", text(&asked.stderr));
    let out = run(askuser().args(["pending", "--data-dir"]).arg(dir.path()), None);
    assert!(out.status.success() && text(&out.stdout).contains("v6-1"), "{}{}", text(&out.stdout), text(&out.stderr));
    let out = run(askuser().args(["answer", "v6-1", "yes", "--data-dir"]).arg(dir.path()), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_second_bridge_on_the_same_data_directory_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let first = Server::start(dir.path());
    let out = run(askuser().args(["serve", "--addr", "127.0.0.1:0", "--data-dir"]).arg(dir.path()), None);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(said.contains(&format!("another askuser bridge (pid {} at {})", first.child.id(), first.url)), "{said}");
    drop(first); // killed: the OS releases the lock
    let mut second = Server::start(dir.path());
    assert!(second.terminate().success());
}

#[test]
fn version_names_the_git_revision() {
    let out = run(askuser().arg("--version"), None);
    assert!(out.status.success());
    let line = text(&out.stdout);
    let revision = line.trim().strip_prefix(&format!("askuser {} (", env!("CARGO_PKG_VERSION"))).and_then(|r| r.strip_suffix(')'));
    let revision = revision.unwrap_or_else(|| panic!("{line:?}"));
    let hex = revision.strip_suffix("-modified").unwrap_or(revision);
    assert!(hex.len() == 12 && hex.chars().all(|c| c.is_ascii_hexdigit()), "{line:?}");
}

#[test]
fn completions_and_a_man_page_come_from_the_command_definitions() {
    for (shell, needle) in [("bash", "_askuser()"), ("zsh", "#compdef askuser"), ("fish", "complete -c askuser"), ("powershell", "askuser")]
    {
        let out = run(askuser().args(["completions", shell]), None);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(needle) && script.contains("pending") && script.contains("max-wait"), "{shell}");
    }
    let out = run(askuser().arg("man"), None);
    assert!(out.status.success());
    let page = text(&out.stdout);
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "roff: {}", &page[..80.min(page.len())]);
    assert!(page.contains("askuser") && page.contains("completions"), "the man page lists the subcommands");
    let out = run(askuser().args(["completions", "tcsh"]), None);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error naming the choices");
    assert!(text(&out.stderr).contains("possible values"), "{}", text(&out.stderr));
}

/// People from the command line: teams, a device of someone, a question for a team.
#[test]
fn people_teams_and_a_question_for_a_team_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let _server = Server::start(dir.path());
    // (`--data-dir` goes before a subcommand's own arguments, as with `tokens`.)
    let cmd = |args: &[&str]| {
        let out = run(askuser().arg(args[0]).arg("--data-dir").arg(dir.path()).args(&args[1..]), None);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    cmd(&["people", "teams", "bob", "--team", "db", "--team", "oncall"]);
    cmd(&["tokens", "create", "--scope", "device", "--name", "bob's phone", "--person", "bob"]);
    let people: Value = serde_json::from_str(&cmd(&["people", "list", "--json"])).unwrap();
    assert_eq!(people[0]["person"], "bob");
    assert_eq!(people[0]["teams"], json!(["db", "oncall"]));
    assert_eq!(people[0]["devices"].as_array().unwrap().len(), 1);
    assert!(cmd(&["people"]).contains("bob  teams: db, oncall"));
    let id = cmd(&["ask", "--question", "Drop the old index?", "--option", "Yes", "--option", "No", "--to", "db", "--no-wait"]);
    let pending: Value = serde_json::from_str(&cmd(&["pending", "--json"])).unwrap();
    assert_eq!(pending[0]["id"], id.trim());
    assert_eq!(pending[0]["request"]["agent"]["assignee"], "db");
    let bad = run(askuser().args(["ask", "--question", "Q", "--to", "not a name", "--no-wait", "--data-dir"]).arg(dir.path()), None);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("agent.assignee"), "{}", text(&bad.stderr));
}

/// `askuser answer` with text that names no option says it went as the person's own
/// answer (it did so silently).
#[test]
fn an_answer_that_names_no_option_is_said_to_be_the_persons_own() {
    let dir = tempfile::tempdir().unwrap();
    let _server = Server::start(dir.path());
    let cmd = |args: &[&str]| {
        let out = run(askuser().arg(args[0]).arg("--data-dir").arg(dir.path()).args(&args[1..]), None);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    };
    let ask = ["ask", "--question", "Pick?", "--option", "A", "--option", "B", "--no-wait"];
    let id = cmd(&ask).0.trim().to_owned();
    let (_, said) = cmd(&["answer", &id, "Yes"]);
    assert!(said.contains(r#""Yes" is none of the options of "Pick?" (A, B): it was sent as your own answer"#), "{said}");
    let id = cmd(&ask).0.trim().to_owned();
    let (out, said) = cmd(&["answer", &id, "b"]);
    assert!(out.contains("B") && said.is_empty(), "an option's label, in any case: {said}");
}

/// `sh -c LINE` with none of askuser's own variables set.
fn askuser_shell(line: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", line]);
    crate::support::unset(c)
}

/// Approval rules from the command line: one added for this folder answers a matching
/// call at once, the log says so, and removing it asks again.
#[test]
fn rules_are_read_added_and_removed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let project_path = project.path().canonicalize().unwrap();
    let server = Server::start(dir.path());
    let cmd = |args: &[&str]| {
        let out = run(askuser().current_dir(&project_path).arg(args[0]).arg("--data-dir").arg(dir.path()).args(&args[1..]), None);
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, _) = cmd(&["rules"]);
    assert!(code == Some(0) && out.contains("No rules yet"), "{out}");
    // docs/approvals.md's lines, pasted into a shell in the project (the first adds the
    // rule; `--project .` keeps this folder's absolute path).
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/approvals.md")).unwrap();
    let block = docs.split("From a terminal, with the bridge running:").nth(1).unwrap();
    let lines: Vec<&str> = block.split("```sh\n").nth(1).unwrap().split("```").next().unwrap().lines().collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let bin = Path::new(env!("CARGO_BIN_EXE_askuser")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let pasted: Vec<String> = lines
        .iter()
        .map(|line| {
            let out = run(askuser_shell(line).current_dir(&project_path).env("PATH", &path).env("ASKUSER_DATA_DIR", dir.path()), None);
            assert!(out.status.success(), "{line}: {}", text(&out.stderr));
            text(&out.stdout)
        })
        .collect();
    let out = &pasted[0];
    let id = out.split_whitespace().next().unwrap().to_owned();
    assert_eq!(out.trim(), format!("{id}  Bash(cargo test:*) in {}", project_path.display()));
    assert!(cmd(&["rules"]).1.contains(&format!("{id}  Bash(cargo test:*) in {}", project_path.display())));
    let call = |command: &str| {
        json!({"tool_name": "Bash", "input": {"command": command}, "cwd": project_path, "agent": {"name": "ci"}}).to_string()
    };
    let decided: Value = serde_json::from_str(&curl(&server, "POST", "/v1/approve", Some(&call("cargo test --all")))).unwrap();
    assert_eq!((decided["behavior"].as_str(), decided["decidedBy"].as_str()), (Some("allow"), Some("rule")), "{decided}");
    let log = cmd(&["rules", "log"]).1;
    assert!(log.contains("allow  Bash: cargo test --all") && log.contains(&format!("by rule {id}")), "{log}");
    // A wide rule (as an earlier version kept from `rm -rf build`) is listed for review.
    let wide = cmd(&["rules", "add", "Bash(rm:*)"]).1;
    let wide = wide.split_whitespace().next().unwrap().to_owned();
    let listed = cmd(&["rules"]).1;
    let review = "review: wider than \"Always allow\" keeps now: any command that begins `rm`; for every agent everywhere";
    assert!(listed.contains(&format!("{wide}  Bash(rm:*)\n    {review}\n")), "{listed}");
    assert_eq!(listed.matches("review:").count(), 1, "the project's cargo test:* is not: {listed}");
    assert_eq!(cmd(&["rules", "remove", &wide]).0, Some(0));
    // A bad rule is named; nothing is kept.
    let (code, _, err) = cmd(&["rules", "add", "Bash(cargo test:*"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rule") && err.contains("')' is missing"), "{err}");
    assert_eq!(cmd(&["rules", "remove", &id]).0, Some(0));
    assert!(cmd(&["rules"]).1.contains("No rules yet"));
    let (code, _, err) = cmd(&["rules", "remove", &id]);
    assert!(code == Some(1) && err.contains("no rule with id"), "{err}");
    // Without the rule the call waits for a person.
    let asked: Value = serde_json::from_str(&curl(&server, "POST", "/v1/approve?wait=false", Some(&call("cargo test --all")))).unwrap();
    assert_eq!(asked["status"], "pending", "{asked}");
}

/// Runs `cmd` to its end, or kills it after `within`: its exit code, and its stdout
/// and stderr together.
fn run_within(cmd: &mut Command, within: Duration) -> (Option<i32>, String) {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > within {
            let _ = child.kill();
            panic!("{cmd:?} still runs after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.code(), out.join().unwrap() + &err.join().unwrap())
}

/// A store URL's password (in the URL's user part, and as a `password=` parameter)
/// appears nowhere in what `askuser serve` says, while the host does: not when the
/// database cannot be reached, not when clap refuses the value, not in `--help` with
/// ASKUSER_STORE set.
#[test]
fn a_store_password_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("postgres://askuser:hunter2@{closed}/askuser?password=swordfish&connect_timeout=5");
    let serve = |store: &str| {
        let mut cmd = askuser();
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--store", store, "--data-dir"]).arg(dir.path());
        run_within(&mut cmd, Duration::from_secs(30))
    };
    let (code, said) = serve(&url);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&closed.to_string()) && said.contains("askuser:***@"), "the host is named: {said}");
    assert!(!said.contains("hunter2") && !said.contains("swordfish"), "{said}");
    // Refused before anything starts: the problem is named, the password is not.
    for (store, problem) in [
        ("postgres://askuser:hunter2@db.example:port/askuser", "invalid value for option `port`"),
        ("postgres://askuser@db.example/askuser?password=hunter2&colour=blue", "unknown option `colour`"),
        ("mysql://askuser:hunter2@db.example/askuser", "expected a postgres:// or postgresql:// URL"),
        ("postgres://askuser:hunter2@db.example/askuser?sslrootcert=/ca%ff.pem", "sslrootcert: expected a file name"),
    ] {
        let (code, said) = serve(store);
        assert_eq!(code, Some(2), "a usage error: {said}");
        assert!(said.contains("--store") && said.contains(problem) && said.contains("db.example"), "{said}");
        assert!(!said.contains("hunter2"), "{said}");
    }
    let mut help = askuser();
    help.args(["serve", "--help"]).env("ASKUSER_STORE", &url);
    let (code, said) = run_within(&mut help, Duration::from_secs(30));
    assert_eq!(code, Some(0));
    assert!(said.contains("ASKUSER_STORE") && !said.contains("hunter2"), "{said}");
}

/// The webhook URL and the ntfy topic are credentials: `askuser serve` names their
/// hosts, at start and when a send fails, and never their paths or the whole topic.
#[test]
fn serve_shows_the_webhook_and_ntfy_without_their_secrets() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: every send fails, and says so.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut child = askuser()
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .arg(format!("--notify-webhook=http://{closed}/services/T0/hook-s3cret-path"))
        .args(["--notify-webhook-secret", "k"])
        .arg(format!("--notify-ntfy=http://localhost:{}/topic-s3cret", closed.port()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, said) = std::sync::mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).try_for_each(|l| lines.send(l)));
    let mut seen = vec![];
    let mut next = || {
        let line = said.recv_timeout(Duration::from_secs(15)).unwrap_or_else(|_| panic!("serve said no more: {seen:#?}"));
        seen.push(line.clone());
        line
    };
    let open = loop {
        if let Some(open) = next().strip_prefix("askuser: open ").map(str::to_owned) {
            break open;
        }
    };
    let (url, token) = open.split_once("/#token=").unwrap();
    let server = Server { child, url: url.to_owned(), token: token.to_owned() };
    let body = json!({"id": "s-1", "questions": [{"question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
    let asked = curl(&server, "POST", "/v1/ask?wait=false", Some(&body.to_string()));
    assert!(asked.contains("s-1"), "{asked}");
    let (mut webhook, mut ntfy) = (false, false);
    while !(webhook && ntfy) {
        let line = next();
        webhook |= line.contains("webhook failed");
        ntfy |= line.contains("ntfy failed");
    }
    drop(server);
    let all = seen.join("\n");
    assert!(all.contains(&format!("the webhook http://{closed}/…")), "the webhook's host: {all}");
    assert!(all.contains(&format!("ntfy topic http://localhost:{}/top…", closed.port())), "ntfy's server: {all}");
    assert!(all.contains("cannot reach the webhook") && all.contains("cannot reach ntfy"), "{all}");
    assert!(!all.contains("s3cret") && !all.contains("/services/"), "{all}");
}

#[test]
fn each_commands_help_describes_that_command() {
    let first_line = |args: &[&str]| {
        let out = run(askuser().args(args), None);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout).lines().next().unwrap_or_default().to_owned()
    };
    assert!(first_line(&["--help"]).starts_with("Let headless AI agents ask a human"));
    let listing = text(&run(askuser().arg("--help"), None).stdout);
    let row = |name: &str| listing.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_default().to_owned();
    assert!(row("pair").contains("Pair a phone or laptop") && !row("pair").contains("Scoped tokens"), "{listing}");
    assert!(row("tokens").contains("Scoped tokens"), "{listing}");
    assert!(first_line(&["pair", "--help"]).starts_with("Pair a phone or laptop"));
    assert!(first_line(&["tokens", "--help"]).starts_with("Scoped tokens: agent tokens ask, device tokens answer"));
    // Every command's help opens with its own sentence, never the bridge flags' text.
    let commands: Vec<String> = listing
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 15, "{listing}");
    let mut seen = std::collections::HashMap::new();
    for command in &commands {
        let first = first_line(&[command, "--help"]);
        assert!(!first.starts_with("How a client command finds the bridge"), "{command}: {first}");
        assert!(!first.starts_with("Usage:") && !first.is_empty(), "{command} has no description: {first}");
        if let Some(other) = seen.insert(first.clone(), command.clone()) {
            panic!("{command} and {other} open with the same text: {first}");
        }
    }
}
