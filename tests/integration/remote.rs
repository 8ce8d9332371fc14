//! A bridge that speaks TLS (`askuser serve --tls`), on 127.0.0.1 with the certificate
//! it makes for itself, and the clients that pin its fingerprint: `askuser ask`,
//! `pending`, `answer` and `tui`.

use crate::support::{askuser, text};
use crate::terminal::Tmux;
use askuser_bridge::client::{http_client, Fingerprint};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// `askuser serve --tls`, stopped (SIGKILL) when dropped.
struct TlsServer {
    child: Child,
    url: String,
    token: String,
    fingerprint: Fingerprint,
}

impl TlsServer {
    fn start(dir: &Path, addr: &str) -> TlsServer {
        let mut child = askuser()
            .args(["serve", "--tls", "--addr", addr, "--data-dir"])
            .arg(dir)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines().map(Result::unwrap);
        let open = lines.by_ref().take(20).find(|l| l.starts_with("askuser: open ")).expect("serve prints where to open");
        let (url, token) = open.strip_prefix("askuser: open ").unwrap().split_once("/#token=").unwrap();
        let fp = lines.next().expect("then the fingerprint");
        let fingerprint = fp.strip_prefix("askuser: certificate SHA-256 fingerprint ").expect("the fingerprint line").parse().unwrap();
        std::thread::spawn(move || for _ in lines {});
        TlsServer { child, url: url.to_owned(), token: token.to_owned(), fingerprint }
    }

    fn terminate(&mut self) {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pending(dir: &Path) -> Output {
    askuser().args(["pending", "--json", "--data-dir"]).arg(dir).output().unwrap()
}

#[test]
fn a_pinned_agent_asks_over_tls_and_resumes_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TlsServer::start(dir.path(), "127.0.0.1:0");
    assert!(server.url.starts_with("https://127.0.0.1:"), "{}", server.url);
    // On this machine, bridge.json carries the pin: no flags needed.
    let file: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("bridge.json")).unwrap()).unwrap();
    assert_eq!(file["fingerprint"], server.fingerprint.to_string());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(dir.path().join("tls/key.pem")).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // An agent elsewhere: only the address, the token and the pin.
    let elsewhere = tempfile::tempdir().unwrap();
    let pin = server.fingerprint.to_string();
    let agent = askuser()
        .args(["ask", "--id", "tls-1", "--question", "Deploy now?", "--option", "Yes", "--option", "No"])
        .args(["--url", &server.url, "--token", &server.token, "--cert-fingerprint", &pin, "--data-dir"])
        .arg(elsewhere.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = false;
    for _ in 0..100 {
        let out = pending(dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        if text(&out.stdout).contains("tls-1") {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen, "the question reached the bridge over TLS");

    // The bridge restarts on the same address with the same certificate; the agent
    // keeps waiting and resumes by id.
    let addr = server.url.trim_start_matches("https://").to_owned();
    let before = server.fingerprint;
    server.terminate();
    std::thread::sleep(Duration::from_millis(300));
    let server = TlsServer::start(dir.path(), &addr);
    assert_eq!(server.fingerprint, before, "the certificate is kept, so the pin holds");
    let out = askuser().args(["answer", "--data-dir"]).arg(dir.path()).args(["tls-1", "No"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = agent.wait_with_output().unwrap();
    assert!(out.status.success(), "{} {}", text(&out.stdout), text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answers"][0]["answer"], "No", "{v}");
}

#[test]
fn tls_mistakes_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let server = TlsServer::start(dir.path(), "127.0.0.1:0");
    let elsewhere = tempfile::tempdir().unwrap();
    // Exit 1: the bridge cannot be reached; 2: it refused the request as given.
    let try_pending_as = |url: &str, pin: Option<&str>, code: i32| -> String {
        let mut cmd = askuser();
        cmd.args(["pending", "--url", url, "--token", &server.token, "--data-dir"]).arg(elsewhere.path());
        if let Some(p) = pin {
            cmd.args(["--cert-fingerprint", p]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(code), "refused: {} {}", text(&out.stdout), text(&out.stderr));
        text(&out.stderr)
    };
    let try_pending = |url: &str, pin: Option<&str>| try_pending_as(url, pin, 1);
    // No pin: the system does not trust a bridge's own certificate.
    let e = try_pending(&server.url, None);
    assert!(e.contains("not one this system trusts") && e.contains("--cert-fingerprint"), "{e}");
    // Another certificate than the pinned one.
    let other = Fingerprint([7; 32]).to_string();
    let e = try_pending(&server.url, Some(&other));
    assert!(e.contains(&format!("not the pinned {other}")) && e.contains(&server.fingerprint.to_string()), "{e}");
    // `ask` says the same (it said "error sending request").
    let out = askuser()
        .args(["ask", "--question", "Q?", "--no-wait", "--url", &server.url, "--token", &server.token, "--cert-fingerprint", &other])
        .arg("--data-dir")
        .arg(elsewhere.path())
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains(&format!("not the pinned {other}")) && e.contains(&server.fingerprint.to_string()), "{e}");
    // Not a fingerprint at all.
    let out = askuser().args(["pending", "--url", &server.url, "--token", "t", "--cert-fingerprint", "12:34"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("64 hex digits"), "{}", text(&out.stderr));
    // Plain HTTP to the TLS port.
    let plain = server.url.replacen("https", "http", 1);
    let e = try_pending_as(&plain, Some(&server.fingerprint.to_string()), 2);
    assert!(e.contains("speaks HTTPS only"), "{e}");
    // The token is still required over TLS.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        http_client(Some(server.fingerprint)).get(format!("{}/v1/questions", server.url)).send().await.unwrap().status()
    });
    assert_eq!(status, 401);

    // TLS to a bridge that does not speak it.
    let plain_dir = tempfile::tempdir().unwrap();
    let mut plain_bridge = askuser()
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(plain_dir.path())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(plain_bridge.stderr.take().unwrap()).lines().map(Result::unwrap);
    let open = lines.by_ref().take(20).find(|l| l.starts_with("askuser: open ")).unwrap();
    let (url, _) = open.strip_prefix("askuser: open ").unwrap().split_once("/#token=").unwrap();
    let e = try_pending(&url.replacen("http", "https", 1), None);
    assert!(e.contains("does not speak TLS"), "{e}");
    let _ = plain_bridge.kill();
    let _ = plain_bridge.wait();
}

#[test]
fn serve_refuses_plain_http_beyond_loopback_and_a_broken_certificate() {
    let dir = tempfile::tempdir().unwrap();
    // Refused before it binds anything.
    let out = askuser().args(["serve", "--addr", "0.0.0.0:0", "--data-dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.contains("refusing to listen on 0.0.0.0:0 without TLS") && e.contains("--tls"), "{e}");
    // A certificate file that is not one.
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let out = askuser()
        .args(["serve", "--addr", "127.0.0.1:0", "--tls-cert"])
        .arg(&junk)
        .arg("--tls-key")
        .arg(&junk)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.contains("junk.pem") && e.contains("expected a PEM certificate"), "{e}");
}

#[tokio::test]
async fn the_terminal_dialog_connects_over_tls() {
    needs!(Tmux);
    let dir = tempfile::tempdir().unwrap();
    let server = TlsServer::start(dir.path(), "127.0.0.1:0");
    let t = Tmux::start(100, 30, &format!("{} tui --data-dir {}", env!("CARGO_BIN_EXE_askuser"), dir.path().display()));
    t.wait_for(&["connected", "No questions waiting."]).await;
    let http = http_client(Some(server.fingerprint));
    let body =
        serde_json::json!({"id": "tls-tui", "questions": [{"question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
    let asking = http.post(format!("{}/v1/ask", server.url)).bearer_auth(&server.token).json(&body).send();
    let asking = tokio::spawn(asking);
    t.wait_for(&["Ship it?"]).await;
    t.keys(&["2"]);
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "No", "{result}");
}

#[tokio::test]
async fn a_silent_connection_to_the_tls_port_is_closed_after_the_header_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.tls = Some(askuser_bridge::Tls::SelfSigned);
    opts.limits.header_timeout = Duration::from_millis(300);
    let running = askuser_bridge::start(opts).await.unwrap();
    // Says nothing: closed once the timeout passes, without a handshake.
    let mut silent = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await.expect("closed within 5 s").unwrap_or(0);
    assert_eq!(n, 0, "closed, nothing sent");
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    // Starts a TLS record and stops: the handshake is bounded too.
    let mut stalled = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), stalled.read(&mut buf)).await.expect("closed within 5 s").unwrap_or(0);
    assert_eq!(n, 0);
    running.stop().await;
}

/// `askuser mcp` with only a remote bridge's address, token and pin: a host's tool
/// call reaches it over TLS, waits through the bridge's restart, and returns the answer.
#[test]
fn askuser_mcp_asks_a_remote_bridge_over_tls() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut server = TlsServer::start(dir.path(), "127.0.0.1:0");
    let elsewhere = tempfile::tempdir().unwrap();
    let pin = server.fingerprint.to_string();
    let mut mcp = askuser()
        .args(["mcp", "--url", &server.url, "--token", &server.token, "--cert-fingerprint", &pin, "--data-dir"])
        .arg(elsewhere.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = mcp.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = mcp.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let reply = |id: u64| loop {
        let v = rx.recv_timeout(Duration::from_secs(30)).expect("a reply within 30 s");
        if v["id"] == id {
            return v;
        }
    };
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "remote-host", "version": "1"}}}));
    assert!(reply(1)["result"].is_object());
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user",
        "arguments": {"questions": [{"question": "Which region?", "options": [{"label": "eu"}, {"label": "us"}]}]}}}));
    let mut id = None;
    for _ in 0..100 {
        let out = pending(dir.path());
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(q) = listed.as_array().and_then(|a| a.first()) {
            id = q["id"].as_str().map(str::to_owned);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let id = id.expect("the question reached the remote bridge");
    let addr = server.url.trim_start_matches("https://").to_owned();
    server.terminate();
    let _server = TlsServer::start(dir.path(), &addr);
    let out = askuser().args(["answer", "--data-dir"]).arg(dir.path()).args([&id, "us"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = reply(2);
    assert_eq!(result["result"]["structuredContent"]["answers"][0]["answer"], "us", "{result}");
    // No bridge of its own was started on this machine for it.
    assert!(!elsewhere.path().join("bridge.json").exists());
    let _ = mcp.kill();
    let _ = mcp.wait();
}

/// Standard base64 (Chromium's SPKI pin list wants it).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// A browser on another machine: it trusts the bridge's own certificate by its public
/// key (as a person who compared the fingerprint would), opens the page over https,
/// and answers over wss.
#[tokio::test]
async fn a_browser_answers_over_tls_trusting_the_pinned_key() {
    needs!(Chromium);
    let dir = tempfile::tempdir().unwrap();
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.tls = Some(askuser_bridge::Tls::SelfSigned);
    let running = askuser_bridge::start(opts).await.unwrap();
    let key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.path().join("tls/key.pem")).unwrap()).unwrap();
    let spki = base64(ring::digest::digest(&ring::digest::SHA256, &rcgen::PublicKeyData::subject_public_key_info(&key)).as_ref());
    let browser = crate::support::browser_with(1000, 700, &[&format!("--ignore-certificate-errors-spki-list={spki}")]).await;
    browser.goto(&running.open_url()).await.unwrap();
    browser.wait_css(".askuser-empty").await;
    let http = http_client(running.fingerprint);
    let body = serde_json::json!({"questions": [{"question": "Over TLS?", "options": [{"label": "Yes"}, {"label": "No"}]}]});
    let asking = tokio::spawn(http.post(format!("{}/v1/ask", running.url)).bearer_auth(&running.token).json(&body).send());
    browser.row("radio", "Yes").await;
    browser.keys(&fantoccini::key::Key::Enter.to_string()).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "Yes");
    assert!(browser.current_url().await.unwrap().as_str().starts_with("https://127.0.0.1:"));
    browser.close().await;
    running.stop().await;
}

/// Behind a TLS proxy (`--public-url https://… --trust-proxy`): the public name passes the
/// Host and Origin checks and is the address printed; other names still do not.
#[tokio::test]
async fn behind_a_tls_proxy_the_public_name_is_accepted_and_printed() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = "127.0.0.1:0".into();
    opts.public_url = Some(askuser_bridge::public_url("https://askuser.example.test").unwrap());
    opts.trust_proxy = true;
    let running = askuser_bridge::start(opts).await.unwrap();
    assert!(running.open_url().starts_with("https://askuser.example.test/#token="), "{}", running.open_url());
    let http = http_client(None);
    let get = |host: &str, origin: Option<&str>| {
        let mut r = http.get(format!("{}/v1/questions", running.url)).bearer_auth(&running.token).header("host", host);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    assert_eq!(get("askuser.example.test", Some("https://askuser.example.test")).await.unwrap().status(), 200);
    assert_eq!(get("evil.example", None).await.unwrap().status(), 403);
    assert_eq!(get("askuser.example.test", Some("https://evil.example")).await.unwrap().status(), 403);
    assert_eq!(get("askuser.example.test", Some("http://askuser.example.test")).await.unwrap().status(), 403, "only the https origin");
    running.stop().await;
}

#[test]
fn public_url_and_trust_proxy_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let serve = |args: &[&str]| {
        let out = askuser().args(["serve", "--addr", "127.0.0.1:0", "--data-dir"]).arg(dir.path()).args(args).output().unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let (code, e) = serve(&["--public-url", "http://askuser.example.test"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("--public-url: expected an https:// address"), "{e}");
    let (code, e) = serve(&["--public-url", "https://askuser.example.test/inbox"]);
    assert_eq!(code, Some(1));
    assert!(e.contains("only a host and port"), "{e}");
    let (code, e) = serve(&["--trust-proxy"]);
    assert_eq!(code, Some(2));
    assert!(e.contains("--public-url"), "{e}");
}
