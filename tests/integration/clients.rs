//! Clients send a token only to the bridge it belongs to (issue 28): never to whoever
//! listens on the port of a bridge that stopped without removing `bridge.json` (F1), and
//! never the data directory's token to another `--url`, nor anything over plain http
//! beyond this machine (F2). A listener the test controls plays the stranger and keeps
//! every byte it is sent.

use crate::support::{askuser, text};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A stranger listening on `addr`: it keeps every byte any client sends and answers each
/// request `200 []`, as a program that took a dead bridge's port would.
struct Squatter {
    addr: SocketAddr,
    heard: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Squatter {
    /// Binds `addr`, retrying for up to 2 s while a killed bridge's socket goes away.
    fn bind(addr: &str) -> Squatter {
        let deadline = Instant::now() + Duration::from_secs(2);
        let listener = loop {
            match TcpListener::bind(addr) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("cannot take {addr}: {e}"),
            }
        };
        listener.set_nonblocking(true).unwrap();
        let (heard, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let addr = listener.local_addr().unwrap();
        let thread = {
            let (heard, stop) = (heard.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => listen(stream, &heard),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(10)),
                        Err(_) => return,
                    }
                }
            })
        };
        Squatter { addr, heard, stop, thread: Some(thread) }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn heard(&self) -> String {
        text(&self.heard.lock().unwrap())
    }
}

/// Reads what one connection sends (until it pauses for 300 ms), answering each request.
fn listen(mut stream: TcpStream, heard: &Mutex<Vec<u8>>) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        heard.lock().unwrap().extend_from_slice(&buf[..n]);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n[]");
    }
}

impl Drop for Squatter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `askuser serve` on 127.0.0.1:0 in `dir`, killed (SIGKILL: no clean stop) when dropped.
struct Serve {
    child: Child,
    url: String,
    token: String,
}

impl Serve {
    fn start(dir: &Path) -> Serve {
        Serve::start_at(dir, "127.0.0.1:0")
    }

    fn start_at(dir: &Path, addr: &str) -> Serve {
        let mut child =
            askuser().args(["serve", "--addr", addr, "--data-dir"]).arg(dir).stderr(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines().map(Result::unwrap);
        let open = lines.by_ref().take(20).find(|l| l.starts_with("askuser: open ")).expect("serve prints where to open");
        let (url, token) = open.strip_prefix("askuser: open ").unwrap().split_once("/#token=").unwrap();
        std::thread::spawn(move || for _ in lines {});
        Serve { child, url: url.to_owned(), token: token.to_owned() }
    }

    /// Kills the bridge as a crash would: `bridge.json` stays behind.
    fn crash(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.url.trim_start_matches("http://").to_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` (bounded: killed after 20 s) and returns what it printed.
fn output(cmd: &mut Command) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

fn assert_heard_nothing(squatter: &Squatter, token: &str) {
    let heard = squatter.heard();
    assert!(!heard.contains(token), "the token reached the stranger: {heard}");
    assert!(!heard.to_ascii_lowercase().contains("authorization"), "an Authorization header reached the stranger: {heard}");
    assert!(heard.is_empty(), "nothing at all goes to a port that is no longer the bridge: {heard}");
}

#[test]
fn a_crashed_bridges_port_gets_no_token_and_no_question() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let (pid, token) = (serve.child.id(), serve.token.clone());
    let addr = serve.crash();
    assert!(dir.path().join("bridge.json").exists(), "a crash leaves bridge.json behind");
    let squatter = Squatter::bind(&addr);

    let stale = format!(
        "the bridge that wrote {} (pid {pid}) is not running: start it with `askuser serve`",
        dir.path().join("bridge.json").display()
    );
    let pending = output(askuser().args(["pending", "--data-dir"]).arg(dir.path()));
    let ask = output(askuser().args(["ask", "--question", "May I drop the production table?", "--data-dir"]).arg(dir.path()));
    // With a token of one's own, the file's address is still the dead bridge's.
    let own = output(askuser().args(["pending", "--token", "a-token-of-my-own-0123", "--data-dir"]).arg(dir.path()));
    assert_heard_nothing(&squatter, &token);
    for out in [pending, ask, own] {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&stale), "{}", text(&out.stderr));
    }
}

/// A pid alone proves nothing: once a bridge is gone, the system may give its pid to any
/// process. A live process under the file's pid, without the bridge's lock, is no bridge.
#[test]
fn a_live_process_under_the_files_pid_is_not_taken_for_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let squatter = Squatter::bind("127.0.0.1:0");
    let mut other = Command::new("sleep").arg("30").spawn().unwrap();
    let token = "the-admin-token-0123456789abcdef";
    let file = serde_json::json!({"url": squatter.url(), "token": token, "pid": other.id()});
    std::fs::write(dir.path().join("bridge.json"), file.to_string()).unwrap();
    std::fs::write(dir.path().join("bridge.lock"), other.id().to_string()).unwrap();
    let out = output(askuser().args(["pending", "--data-dir"]).arg(dir.path()));
    let _ = other.kill();
    let _ = other.wait();
    assert_heard_nothing(&squatter, token);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("(pid {}) is not running", other.id())), "{}", text(&out.stderr));
}

/// An `askuser ask` waiting when its bridge crashes retries, but only to a bridge that
/// runs: never to whoever takes the port meanwhile. Once a bridge runs again, it resumes.
#[test]
fn a_waiting_ask_sends_nothing_to_the_crashed_bridges_port() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let token = serve.token.clone();
    let mut ask = askuser()
        .args(["ask", "--id", "stale-1", "--question", "Rotate the signing key?", "--option", "Yes", "--option", "No"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = output(askuser().args(["pending", "--json", "--data-dir"]).arg(dir.path()));
        if text(&out.stdout).contains("stale-1") {
            break;
        }
        assert!(Instant::now() < deadline, "the question never reached the bridge: {}", text(&out.stderr));
        std::thread::sleep(Duration::from_millis(50));
    }
    let addr = serve.crash();
    let squatter = Squatter::bind(&addr);
    std::thread::sleep(Duration::from_millis(1_500));
    assert_heard_nothing(&squatter, &token);

    // The stranger leaves, a bridge runs again on the same address: the ask resumes.
    drop(squatter);
    let _serve = Serve::start_at(dir.path(), &addr);
    let out = output(askuser().args(["answer", "--data-dir"]).arg(dir.path()).args(["stale-1", "Yes"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(20);
    while ask.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = ask.kill();
    let out = ask.wait_with_output().unwrap();
    assert!(text(&out.stderr).contains("is not running: start it with `askuser serve`"), "{}", text(&out.stderr));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"Yes\""), "{}", text(&out.stdout));
}

/// `--url` (or `$ASKUSER_URL`) without a token: the data directory's token stays home.
#[test]
fn another_url_without_a_token_gets_none_of_bridge_json() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let squatter = Squatter::bind("127.0.0.1:0");
    let needed = format!("a token is needed for the bridge at {}: pass --token or set ASKUSER_TOKEN", squatter.url());
    let by_flag = output(askuser().args(["pending", "--url", &squatter.url(), "--data-dir"]).arg(dir.path()));
    let by_env = output(askuser().args(["pending", "--data-dir"]).arg(dir.path()).env("ASKUSER_URL", squatter.url()));
    let by_ask = output(askuser().args(["ask", "--question", "Ship it?", "--url", &squatter.url(), "--data-dir"]).arg(dir.path()));
    assert_heard_nothing(&squatter, &serve.token);
    for out in [by_flag, by_env, by_ask] {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&needed), "{}", text(&out.stderr));
    }
    // The file's own URL still gets the file's token.
    let out = output(askuser().args(["pending", "--url", &format!("{}/", serve.url), "--data-dir"]).arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn plain_http_beyond_this_machine_is_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let token = "0123456789abcdef0123";
    let runs = [
        ("--url", output(askuser().args(["pending", "--url", "http://192.0.2.1:7823", "--token", token, "--data-dir"]).arg(dir.path()))),
        ("--url", output(askuser().args(["pending", "--url", "http://192.0.2.1:7823", "--data-dir"]).arg(dir.path()))),
        (
            "--url",
            output(
                askuser()
                    .args(["ask", "--question", "Q?", "--url", "http://192.0.2.1:7823", "--token", token])
                    .arg("--data-dir")
                    .arg(dir.path()),
            ),
        ),
        ("--url", output(askuser().args(["mcp", "--url", "http://192.0.2.1:7823", "--token", token, "--data-dir"]).arg(dir.path()))),
        (
            "$ASKUSER_URL",
            output(
                askuser()
                    .args(["pending", "--data-dir"])
                    .arg(dir.path())
                    .env("ASKUSER_URL", "http://192.0.2.1:7823")
                    .env("ASKUSER_TOKEN", token),
            ),
        ),
    ];
    for (field, out) in runs {
        let e = text(&out.stderr);
        assert!(!out.status.success(), "{e}");
        assert!(e.contains(&format!("{field}: http://192.0.2.1:7823 is plain http to another machine")), "{e}");
        assert!(e.contains("over https") && e.contains("--cert-fingerprint"), "{e}");
        assert!(!e.contains("cannot reach"), "refused before any connection: {e}");
    }
    // This machine's loopback, by any of its names, is fine (nothing listens on port 9).
    for url in ["http://127.0.0.2:9", "http://[::1]:9", "http://LOCALHOST:9"] {
        let out = output(askuser().args(["pending", "--url", url, "--token", token, "--data-dir"]).arg(dir.path()));
        assert!(text(&out.stderr).contains("cannot reach the bridge"), "{url}: {}", text(&out.stderr));
    }
}
