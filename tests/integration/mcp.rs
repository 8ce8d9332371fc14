//! `askuser mcp` driven as a host drives it, over its stdin and stdout: what happens to a
//! waiting question when the host goes away (EOF, SIGTERM, SIGKILL), and how a later
//! call picks the answer up. The official SDKs' view is in tests/mcp (Python, TypeScript).

use crate::support::{bridge, next_asked, next_event, TestBridge, TOKEN};
use askuser_core::protocol::BrowserEvent;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// An `askuser mcp` process and the host's ends of its pipes.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Its stderr, shown when a test fails on it.
    log: tempfile::NamedTempFile,
}

impl Host {
    async fn start(b: &TestBridge, extra: &[&str]) -> Host {
        Host::with(b, extra, json!({})).await
    }

    async fn with(b: &TestBridge, extra: &[&str], capabilities: Value) -> Host {
        Host::connect(b, extra, capabilities, "2025-11-25", "test-host").await
    }

    /// An `askuser mcp` that the client `client` initialized at protocol `version`.
    async fn connect(b: &TestBridge, extra: &[&str], capabilities: Value, version: &str, client: &str) -> Host {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_askuser"))
            .args(["mcp", "--url", &b.url, "--token", TOKEN, "--data-dir"])
            .arg(b.dir.path())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log.reopen().unwrap())
            .env("RUST_LOG", "askuser=debug")
            .kill_on_drop(true)
            .spawn()
            .expect("askuser mcp starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut host = Host { child, stdin, stdout, log };
        let init = json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": client, "version": "1"}});
        host.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})).await;
        assert_eq!(host.reply(0).await["result"]["protocolVersion"], version);
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        host
    }

    async fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn call(&mut self, id: u64, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ask_user", "arguments": arguments}}))
            .await;
    }

    /// The reply to request `id` (notifications skipped), within 10 seconds.
    async fn reply(&mut self, id: u64) -> Value {
        self.next(|m| m["id"] == id).await
    }

    /// The next message `wanted` picks (others skipped), within 10 seconds.
    async fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let mut skipped = Vec::new();
        let read = async {
            loop {
                let Some(line) = self.stdout.next_line().await.unwrap() else {
                    panic!("askuser mcp closed its stdout; its log:\n{}", std::fs::read_to_string(self.log.path()).unwrap_or_default())
                };
                let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
                if wanted(&message) {
                    return message;
                }
                skipped.push(message);
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), read).await {
            Ok(message) => message,
            Err(_) => panic!(
                "no such message within 10 s; it sent {skipped:?} meanwhile; its log:\n{}",
                std::fs::read_to_string(self.log.path()).unwrap_or_default()
            ),
        }
    }

    async fn signal(&mut self, name: &str) {
        let pid = self.child.id().unwrap().to_string();
        assert!(Command::new("kill").args([name, &pid]).status().await.unwrap().success());
    }
}

#[derive(Clone, Copy, Debug)]
enum Leave {
    Eof,
    Sigterm,
    Sigkill,
}

/// The inbox must show at once that nobody waits; the question stays answerable, and a
/// later `ask_user` call with its id returns the answer given meanwhile.
async fn the_host_leaves(how: Leave) {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &[]).await;
    host.call(1, json!({"question": "Deploy now?", "choices": ["Yes", "No"]})).await;
    let id = next_asked(&mut inbox).await;
    let session = loop {
        if let BrowserEvent::Agent { agent } = next_event(&mut inbox).await {
            assert!(agent.connected, "{how:?}: the asking agent is shown as waiting first");
            break agent.session_id;
        }
    };

    match how {
        Leave::Eof => drop(host.stdin.take()),
        Leave::Sigterm => host.signal("-TERM").await,
        Leave::Sigkill => host.signal("-KILL").await,
    }
    let status = tokio::time::timeout(Duration::from_secs(10), host.child.wait()).await.expect("askuser mcp exits").unwrap();
    if !matches!(how, Leave::Sigkill) {
        assert!(status.success(), "{how:?}: a host leaving is a normal exit, got {status}");
    }
    loop {
        if let BrowserEvent::Agent { agent } = next_event(&mut inbox).await {
            assert_eq!(agent.session_id, session);
            assert!(!agent.connected, "{how:?}: the inbox shows at once that nobody waits");
            break;
        }
    }
    let record: Value = b.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(record["status"], "pending", "{how:?}: leaving is not withdrawing");

    let answered = b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    // A restarted host: by the id, or (Codex, Claude Code) with the same arguments again.
    let mut again = Host::start(&b, &[]).await;
    let call = if matches!(how, Leave::Sigterm) { json!({"id": id}) } else { json!({"question": "Deploy now?", "choices": ["Yes", "No"]}) };
    again.call(1, call.clone()).await;
    let result = &again.reply(1).await["result"];
    assert_eq!(result["structuredContent"]["status"], "answered", "{how:?}: {result}");
    assert_eq!(result["structuredContent"]["id"], id, "{how:?}: the same question, not a new one: {result}");
    assert_eq!(result["structuredContent"]["answers"][0]["answer"], "Yes");
    // Taken up by its questions, the result says whose question it was.
    let earlier = !matches!(how, Leave::Sigterm);
    assert_eq!(result["structuredContent"]["earlierSession"].as_bool().unwrap_or(false), earlier, "{how:?}: {result}");
    let words = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(words.contains("the same question an earlier session asked from this folder"), earlier, "{how:?}: {words}");

    // Its result reached a host: the same question asked again now is a new one.
    again.call(2, json!({"question": "Deploy now?", "choices": ["Yes", "No"]})).await;
    assert_ne!(next_asked(&mut inbox).await, id, "{how:?}: asked again after the answer was read, it is asked anew");
}

/// An answer given while the session that asked could still have read it (it had stopped
/// waiting, `--max-wait`, but ran on) is not handed to a later session asking the same:
/// that one asks anew.
#[tokio::test]
async fn an_answer_given_before_the_asking_session_ended_is_not_handed_to_the_next() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &["--max-wait", "1"]).await;
    let ask = json!({"question": "Deploy now?", "choices": ["Yes", "No"]});
    host.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    assert_eq!(host.reply(1).await["result"]["structuredContent"]["status"], "pending");
    let answered = b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    drop(host.stdin.take());
    tokio::time::timeout(Duration::from_secs(10), host.child.wait()).await.expect("askuser mcp exits").unwrap();

    let mut again = Host::start(&b, &[]).await;
    again.call(1, ask).await;
    assert_ne!(next_asked(&mut inbox).await, id, "asked anew, not answered with the earlier session's answer");
}

/// An earlier session's answer older than `--resume-window` is not handed over: the
/// person is asked again.
#[tokio::test]
async fn an_earlier_sessions_answer_older_than_the_resume_window_is_asked_again() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &[]).await;
    let ask = json!({"question": "Deploy now?", "choices": ["Yes", "No"]});
    host.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    host.signal("-KILL").await;
    tokio::time::timeout(Duration::from_secs(10), host.child.wait()).await.expect("askuser mcp exits").unwrap();
    let answered = b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    tokio::time::sleep(Duration::from_millis(2_100)).await;

    let mut again = Host::start(&b, &["--resume-window", "2"]).await;
    again.call(1, ask).await;
    assert_ne!(next_asked(&mut inbox).await, id, "asked anew: the answer is older than the window");
}

/// Two live sessions asking the same in the same folder each get their own question: only
/// a session that is gone is resumed.
#[tokio::test]
async fn the_same_questions_from_two_live_sessions_are_two_questions() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut one = Host::start(&b, &[]).await;
    let mut two = Host::start(&b, &[]).await;
    let ask = json!({"question": "Deploy now?", "choices": ["Yes", "No"]});
    one.call(1, ask.clone()).await;
    let first = next_asked(&mut inbox).await;
    two.call(1, ask).await;
    let second = next_asked(&mut inbox).await;
    assert_ne!(first, second);
}

/// A host that asks the same again on the same connection while its first call still
/// waits has given up on that call, whether its cancel comes first, later or never (Claude
/// Code 2.1.331 cancels a call's first round, after the retry): one question, not two.
#[tokio::test]
async fn the_same_questions_again_while_the_first_call_waits_resume_it() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &[]).await;
    let ask = json!({"question": "Deploy now?", "choices": ["Yes", "No"]});
    host.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    host.call(2, ask).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all: Vec<Value> = b.get("/v1/questions?status=all").send().await.unwrap().json().await.unwrap();
    assert_eq!(all.len(), 1, "asked once: {all:?}");
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    for _ in 0..2 {
        let reply = host.next(|m| m["id"] == 1 || m["id"] == 2).await;
        assert_eq!(reply["result"]["structuredContent"]["id"], id.as_str(), "{reply}");
        assert_eq!(reply["result"]["structuredContent"]["answers"][0]["answer"], "Yes", "{reply}");
    }
}

/// The journal's close of a call is written after its result went out (issue 51); a host
/// that reads the result and leaves at once must still find that question closed, not
/// resume it (answered, with the old answer) when it asks the same again.
#[tokio::test]
async fn a_result_read_just_before_the_host_leaves_is_never_resumed() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let ask = json!({"question": "Ship it?", "choices": ["Yes", "No"]});
    let mut first = Host::start(&b, &[]).await;
    first.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(first.reply(1).await["result"]["structuredContent"]["status"], "answered");
    drop(first.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(10), first.child.wait()).await.expect("askuser mcp exits").unwrap();
    assert!(status.success(), "{status}");

    let mut again = Host::start(&b, &[]).await;
    again.call(1, ask).await;
    assert_ne!(next_asked(&mut inbox).await, id, "the same questions, asked after the answer was read, are asked anew");
}

/// The threads of an `askuser mcp` process (Linux).
#[cfg(target_os = "linux")]
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().count()
}

/// stdin and stdout are read and written by the runtime's one thread, with no blocking
/// thread between (each a hand-off that waits for a core on a busy machine: issue 51):
/// pipes, as most hosts give them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdio_pipes_are_served_on_one_thread() {
    let b = bridge().await;
    let mut host = Host::start(&b, &[]).await;
    host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(host.reply(1).await["result"]["tools"][0]["name"], "ask_user");
    assert_eq!(threads(host.child.id().unwrap()), 1);
}

/// … and a socket pair, as Node.js hosts (Claude Code, Gemini CLI) give them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdio_sockets_are_served_on_one_thread() {
    use std::os::fd::OwnedFd;
    let b = bridge().await;
    let (host_in, child_in) = std::os::unix::net::UnixStream::pair().unwrap();
    let (host_out, child_out) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_askuser"))
        .args(["mcp", "--url", &b.url, "--token", TOKEN, "--data-dir"])
        .arg(b.dir.path())
        .stdin(Stdio::from(OwnedFd::from(child_in)))
        .stdout(Stdio::from(OwnedFd::from(child_out)))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("askuser mcp starts");
    host_in.set_nonblocking(true).unwrap();
    host_out.set_nonblocking(true).unwrap();
    let mut to = tokio::net::UnixStream::from_std(host_in).unwrap();
    let mut from = BufReader::new(tokio::net::UnixStream::from_std(host_out).unwrap()).lines();
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "node-host", "version": "1"}});
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ] {
        to.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }
    for id in [0, 1] {
        let line = tokio::time::timeout(Duration::from_secs(10), from.next_line()).await.expect("a reply").unwrap().expect("a line");
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], id, "{line}");
    }
    assert_eq!(threads(child.id().unwrap()), 1);
    drop(to);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("askuser mcp exits at EOF").unwrap();
    assert!(status.success(), "{status}");
}

/// A line that is not UTF-8 gets a parse error (-32700), and the server reads on.
#[tokio::test]
async fn a_line_of_invalid_utf8_is_a_parse_error_and_the_server_goes_on() {
    let b = bridge().await;
    let mut host = Host::start(&b, &[]).await;
    let stdin = host.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"ping\xff\"}\n").await.unwrap();
    stdin.flush().await.unwrap();
    let error = host.next(|m| m.get("error").is_some()).await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("UTF-8"), "{error}");
    host.send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})).await;
    assert_eq!(host.reply(6).await["result"], json!({}));
}

/// `--tool-name`, and Gemini CLI's own default: every text the model reads says the name.
#[tokio::test]
async fn the_tool_takes_the_name_it_is_given_and_gemini_cli_gets_ask_human() {
    let b = bridge().await;
    for (extra, client, name) in
        [(&["--tool-name", "ask_person"][..], "test-host", "ask_person"), (&[][..], "gemini-cli-mcp-client", "ask_human")]
    {
        let mut host = Host::connect(&b, extra, json!({}), "2025-06-18", client).await;
        host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
        let tool = host.reply(1).await["result"]["tools"][0].clone();
        assert_eq!(tool["name"], name, "{tool}");
        let description = tool["description"].as_str().unwrap();
        assert!(description.contains(&format!("call {name} again")) && !description.contains("ask_user"), "{description}");
        let call = json!({"name": name, "arguments": {"questions": []}});
        host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})).await;
        let refused = host.reply(2).await["result"]["content"][0]["text"].as_str().unwrap().to_owned();
        assert!(refused.starts_with(&format!("The {name} input is invalid")), "{refused}");
        let call = json!({"name": "ask_user", "arguments": {"question": "?"}});
        host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})).await;
        assert_eq!(host.reply(3).await["error"]["code"], -32602, "ask_user is not this server's tool now");
    }
}

/// A host at 2025-06-18 gets a form of that revision (enums with enumNames, a boolean per
/// option of a multi-select), and what the model reads carries the message in
/// structuredContent too (Claude Code and Codex show the model only that).
#[tokio::test]
async fn a_2025_06_18_host_gets_a_form_of_its_revision_and_the_message_in_structured_content() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::connect(&b, &[], json!({"elicitation": {}}), "2025-06-18", "test-host").await;
    host.call(
        1,
        json!({"questions": [
            {"question": "Which database?", "options": [{"label": "PostgreSQL", "description": "a server"}, {"label": "SQLite"}]},
            {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "Search"}]}
        ]}),
    )
    .await;
    next_asked(&mut inbox).await;
    let form = host.next(|m| m["method"] == "elicitation/create").await;
    assert!(form["params"].get("mode").is_none(), "no mode before 2025-11-25: {form}");
    let props = &form["params"]["requestedSchema"]["properties"];
    assert_eq!(props["q1"]["enum"], json!(["PostgreSQL", "SQLite"]), "{form}");
    assert_eq!(props["q1"]["enumNames"], json!(["PostgreSQL — a server", "SQLite"]), "{form}");
    assert_eq!(props["q2_2"]["type"], "boolean", "{form}");
    let content = json!({"q1": "SQLite", "q2_1": false, "q2_2": true});
    host.send(json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "accept", "content": content}})).await;
    let result = host.reply(1).await["result"].clone();
    let structured = &result["structuredContent"];
    assert_eq!(structured["answers"][1]["selectedOptions"], json!(["Search"]), "{result}");
    assert_eq!(structured["message"], result["content"][0]["text"], "{result}");
    assert!(structured["message"].as_str().unwrap().contains("SQLite"), "{result}");
}

#[tokio::test]
async fn the_host_closing_stdin_leaves_the_question_answerable() {
    the_host_leaves(Leave::Eof).await;
}

#[tokio::test]
async fn the_host_sending_sigterm_leaves_the_question_answerable() {
    the_host_leaves(Leave::Sigterm).await;
}

#[tokio::test]
async fn the_host_being_killed_leaves_the_question_answerable() {
    the_host_leaves(Leave::Sigkill).await;
}

/// A host's `notifications/cancelled` for call `request`, saying `reason`.
fn cancel(request: u64, reason: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request, "reason": reason}})
}

/// A host that timed out is not a person saying no: the question stays, and the same
/// questions asked again resume it. A cancel for any other reason withdraws.
#[tokio::test]
async fn a_timeout_keeps_the_question_and_an_abort_withdraws_it() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &[]).await;
    let ask = json!({"question": "Which region?", "choices": ["eu", "us"]});
    host.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    host.send(cancel(1, "McpError: MCP error -32001: Request timed out")).await;
    host.call(2, ask.clone()).await;
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["eu"]})).send().await.unwrap();
    let result = &host.reply(2).await["result"]["structuredContent"];
    assert_eq!((result["id"].as_str(), result["status"].as_str()), (Some(id.as_str()), Some("answered")), "{result}");

    host.call(3, json!({"question": "Really?", "choices": ["Yes", "No"]})).await;
    let second = next_asked(&mut inbox).await;
    host.send(cancel(3, "AbortError: This operation was aborted")).await;
    let withdrawn = async {
        loop {
            if let BrowserEvent::Withdrawn { id, status } = next_event(&mut inbox).await {
                return (id, status);
            }
        }
    };
    let (gone, status) = withdrawn.await;
    assert_eq!((gone, status.as_str()), (second, "withdrawn"));
}

/// OpenCode (opencode-ai 1.18.33) at its tool timeout cancels the call twice in the same
/// millisecond: "Request timed out", then "AbortError". The first says why; the second must
/// not turn the host's impatience into a withdrawal, or the retry reads "withdrawn" while the
/// person is about to answer. The AbortError it sends after every finished call does nothing.
#[tokio::test]
async fn a_timeout_then_an_abort_of_the_same_call_keeps_the_question() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::start(&b, &[]).await;
    let ask = json!({"question": "Which region?", "choices": ["eu", "us"]});
    host.call(1, ask.clone()).await;
    let id = next_asked(&mut inbox).await;
    // Both in one write, as OpenCode's two lines arrive: the server reads them back to back.
    let both = format!(
        "{}\n{}\n",
        cancel(1, "McpError: MCP error -32001: Request timed out"),
        cancel(1, "AbortError: The operation was aborted.")
    );
    let stdin = host.stdin.as_mut().unwrap();
    stdin.write_all(both.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    host.call(2, ask.clone()).await;
    // The retry is read after both cancels: had one withdrawn the question, that is done by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["eu"]})).send().await.unwrap();
    let result = &host.reply(2).await["result"]["structuredContent"];
    assert_eq!((result["id"].as_str(), result["status"].as_str()), (Some(id.as_str()), Some("answered")), "{result}");

    // The AbortError after a finished call: the next question is asked and answered as usual.
    host.send(cancel(2, "AbortError: The operation was aborted.")).await;
    host.call(3, json!({"question": "Really?", "choices": ["Yes", "No"]})).await;
    let second = loop {
        match next_event(&mut inbox).await {
            BrowserEvent::Asked { question } => break question.id,
            BrowserEvent::Withdrawn { id: gone, status } => panic!("{gone} was {status:?}: no cancel here withdraws"),
            _ => {}
        }
    };
    b.post(&format!("/v1/questions/{second}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(host.reply(3).await["result"]["structuredContent"]["status"], "answered");
}

/// `--max-wait`: "not answered yet, call again with this id" before a host's hard limit.
#[tokio::test]
async fn max_wait_returns_still_waiting_with_the_id_to_resume() {
    let b = bridge().await;
    let mut host = Host::start(&b, &["--max-wait", "1"]).await;
    host.call(1, json!({"question": "Name the service?"})).await;
    let result = &host.reply(1).await["result"];
    let id = result["structuredContent"]["id"].as_str().unwrap().to_owned();
    assert_eq!(result["structuredContent"]["status"], "pending");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("{{\"id\": \"{id}\"}}")) && text.contains("Do not assume an answer"), "{text}");
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["billing"]})).send().await.unwrap();
    host.call(2, json!({"id": id})).await;
    assert_eq!(host.reply(2).await["result"]["structuredContent"]["answers"][0]["answer"], "billing");
}

/// A host with its own dialog (elicitation) is asked there and in the inbox at once;
/// the first answer wins and the other side is withdrawn.
#[tokio::test]
async fn elicitation_races_the_inbox_and_the_first_answer_wins() {
    let b = bridge().await;
    let mut inbox = b.browser().await;
    let mut host = Host::with(&b, &[], json!({"elicitation": {"form": {}}})).await;
    let is_elicitation = |m: &Value| m["method"] == "elicitation/create";

    // Answered in the host's dialog: the inbox hears where.
    host.call(
        1,
        json!({"questions": [
            {"question": "Which database?", "header": "Database", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
            {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "Search"}]}
        ]}),
    )
    .await;
    let id = next_asked(&mut inbox).await;
    let form = host.next(is_elicitation).await;
    // Not 0, the SDK's first id: the TypeScript SDK (Claude Code) ignores a cancel of request 0.
    assert_eq!(form["id"], 1, "{form}");
    assert_eq!(form["params"]["mode"], "form");
    assert_eq!(form["params"]["requestedSchema"]["properties"]["q1"]["oneOf"][1]["const"], "SQLite");
    let content = json!({"q1": "SQLite", "q2": ["Search"], "q2_other": "Audit"});
    host.send(json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "accept", "content": content}})).await;
    let result = &host.reply(1).await["result"]["structuredContent"];
    assert_eq!(result["answers"][0]["answer"], "SQLite", "{result}");
    assert_eq!(result["answers"][1]["selectedOptions"], json!(["Search"]));
    assert_eq!(result["answers"][1]["custom"], "Audit");
    let by = loop {
        if let BrowserEvent::Answered { id: answered, by, .. } = next_event(&mut inbox).await {
            assert_eq!(answered, id);
            break by;
        }
    };
    // The host's dialog, and the credential `askuser mcp` answered it with.
    assert_eq!(by.as_deref(), Some(format!("{}: the admin token", askuser::mcp::ELICITATION_CLIENT).as_str()));

    // Answered in the inbox first: the host's dialog is withdrawn.
    host.call(2, json!({"question": "Deploy now?", "choices": ["Yes", "No"]})).await;
    let id = next_asked(&mut inbox).await;
    let form = host.next(is_elicitation).await;
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["No"]})).send().await.unwrap();
    let withdrawn = host.next(|m| m["method"] == "notifications/cancelled").await;
    assert_eq!(withdrawn["params"]["requestId"], form["id"]);
    assert_eq!(host.reply(2).await["result"]["structuredContent"]["answers"][0]["answer"], "No");

    // Declined in the host's dialog by a person (who takes more than a second to read it): their no.
    host.call(3, json!({"question": "Drop the table?", "choices": ["Yes", "No"]})).await;
    next_asked(&mut inbox).await;
    let form = host.next(is_elicitation).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    host.send(json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "decline"}})).await;
    assert_eq!(host.reply(3).await["result"]["structuredContent"]["status"], "cancelled");

    // Declined by the host itself, at once (Codex headless does it to every form): not the
    // person's no. The question waits in the inbox, and this host gets no more forms.
    let mut headless = Host::with(&b, &[], json!({"elicitation": {"form": {}}})).await;
    headless.call(1, json!({"question": "Rotate the keys?", "choices": ["Yes", "No"]})).await;
    let id = next_asked(&mut inbox).await;
    let form = headless.next(is_elicitation).await;
    headless.send(json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "decline"}})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let record: Value = b.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(record["status"], "pending", "a decline within a second is the host's, not the person's: {record}");
    headless.call(2, json!({"question": "Rotate the certificates?", "choices": ["Yes", "No"]})).await;
    let second = next_asked(&mut inbox).await;
    b.post(&format!("/v1/questions/{second}/answer")).json(&json!({"answers": ["No"]})).send().await.unwrap();
    let first = headless.next(|m| m.get("method").is_some() || m["id"] == 2).await;
    assert_eq!(first["id"], 2, "no second form for a host that declines forms by itself: {first}");
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    assert_eq!(headless.reply(1).await["result"]["structuredContent"]["answers"][0]["answer"], "Yes");

    // --no-elicitation: only the inbox asks.
    let mut plain = Host::with(&b, &["--no-elicitation"], json!({"elicitation": {}})).await;
    plain.call(1, json!({"question": "Tabs or spaces?", "choices": ["Tabs", "Spaces"]})).await;
    let id = next_asked(&mut inbox).await;
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["Spaces"]})).send().await.unwrap();
    let first = plain.next(|m| m.get("method").is_some() || m["id"] == 1).await;
    assert_eq!(first["id"], 1, "no elicitation/create before the answer: {first}");
}

/// Reminders and a default, per agent (`askuser mcp --remind-after --default-after`) and
/// per call (the model's `remindAfterSeconds`, `defaultAfterSeconds`, which win): stored
/// on the question, and a default ends the call with no answer and the reason.
#[tokio::test]
async fn reminders_and_a_default_per_agent_and_per_call() {
    let b = bridge().await;
    let mut host = Host::start(&b, &["--remind-after", "10m", "--default-after", "1s", "--no-elicitation"]).await;
    host.call(1, json!({"question": "Name the service?"})).await;
    let result = &host.reply(1).await["result"];
    let content = &result["structuredContent"];
    assert_eq!(
        (content["status"].as_str(), content["reason"].as_str()),
        (Some("timed_out"), Some("no answer after 1 s; default applied")),
        "{result:#}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("no answer after 1 s; default applied") && text.contains("Do not assume an answer"), "{text}");
    let record = b.record(content["id"].as_str().unwrap()).await;
    assert_eq!((record["request"]["remindAfterSeconds"].as_u64(), record["request"]["defaultAfterSeconds"].as_u64()), (Some(600), Some(1)));

    // The model's own: kept over the agent's.
    host.call(2, json!({"question": "Name the queue?", "remindAfterSeconds": 120, "defaultAfterSeconds": 3600})).await;
    let id = loop {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if let Some(q) = list.first() {
            break q["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let record = b.record(&id).await;
    assert_eq!(
        (record["request"]["remindAfterSeconds"].as_u64(), record["request"]["defaultAfterSeconds"].as_u64()),
        (Some(120), Some(3600))
    );
    b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["jobs"]})).send().await.unwrap();
    assert_eq!(host.reply(2).await["result"]["structuredContent"]["answers"][0]["answer"], "jobs");

    // A bad one is the model's to fix, named.
    host.call(3, json!({"question": "Name the topic?", "defaultAfterSeconds": "30m"})).await;
    let result = &host.reply(3).await["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        result["isError"] == true && text.contains("defaultAfterSeconds: expected a whole number of seconds, got the string \"30m\""),
        "{result:#}"
    );

    // A bad flag names itself.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_askuser")).args(["mcp", "--remind-after", "10 minutes"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("--remind-after: expected a duration such as 90s, 10m, 1h30m or 2d"), "{said}");
}
