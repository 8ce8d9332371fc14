//! A throwaway HOME with a bridge in it, the hosts' binaries, and the person who answers.

use askuser_bridge::{start, Running, ServeOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The askuser binary under test.
pub fn askuser_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_askuser"))
}

/// A host's command from `.tools/hosts` (`claude`, `codex`, `gemini`).
pub fn host_bin(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/hosts/node_modules/.bin");
    let bin = root.join(name);
    assert!(bin.exists(), "{} is missing: run scripts/setup hosts (scripts/test does)", bin.display());
    bin
}

fn dir(bin: &Path) -> String {
    bin.parent().expect("a binary is in a folder").display().to_string()
}

/// A user's machine in a temp folder: HOME, a project folder to work in, and a bridge
/// running as `askuser serve` would (its `bridge.json` where `askuser mcp` looks).
pub struct Home {
    pub dir: tempfile::TempDir,
    pub bridge: Option<Running>,
    pub http: reqwest::Client,
}

impl Home {
    pub async fn new() -> Home {
        let dir = tempfile::Builder::new().prefix("askuser-host-").tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let mut opts = ServeOptions::new(dir.path().join(".local/share/askuser"));
        opts.addr = "127.0.0.1:0".into();
        let bridge = start(opts).await.expect("the bridge starts");
        // askuser's own client: reqwest is built without a crypto provider of its own.
        Home { dir, bridge: Some(bridge), http: askuser_bridge::client::http_client(None) }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where the host runs (its working directory).
    pub fn project(&self) -> PathBuf {
        self.path().join("project")
    }

    fn bridge(&self) -> &Running {
        self.bridge.as_ref().expect("the bridge runs")
    }

    /// The environment of this user: HOME here, nothing of the test machine's own
    /// configuration, telemetry and updates off.
    pub fn env(&self) -> Vec<(String, String)> {
        let home = self.path().display().to_string();
        vec![
            ("HOME".into(), home.clone()),
            ("USER".into(), "tester".into()),
            // askuser and the hosts installed, as a user who pastes the docs' lines has them.
            ("PATH".into(), format!("{}:{}:{}", dir(&askuser_bin()), dir(&host_bin("claude")), std::env::var("PATH").unwrap_or_default())),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "dumb".into()),
            ("XDG_CONFIG_HOME".into(), format!("{home}/.config")),
            ("XDG_DATA_HOME".into(), format!("{home}/.local/share")),
            ("XDG_CACHE_HOME".into(), format!("{home}/.cache")),
            ("TMPDIR".into(), std::env::temp_dir().display().to_string()),
            ("NO_COLOR".into(), "1".into()),
            ("CI".into(), "true".into()),
            ("DO_NOT_TRACK".into(), "1".into()),
        ]
    }

    /// `askuser ARGS` as this user (e.g. `setup claude-code`); panics with its output
    /// unless it succeeds.
    pub fn askuser(&self, args: &[&str]) -> Output {
        self.succeeds(&format!("askuser {args:?}"), std::process::Command::new(askuser_bin()).args(args))
    }

    /// `LINE` through `sh -c` as this user, in the project folder (a line from the README);
    /// panics with its output unless it succeeds.
    pub fn sh(&self, line: &str) -> Output {
        self.succeeds(&format!("`{line}`"), std::process::Command::new("sh").arg("-c").arg(line))
    }

    /// `cmd` run to its end as this user in the project folder; panics with its output
    /// unless it succeeds.
    fn succeeds(&self, what: &str, cmd: &mut std::process::Command) -> Output {
        let out = cmd.env_clear().envs(self.env()).current_dir(self.project()).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what} failed: {}\n{stdout}\n{stderr}", out.status);
        out
    }

    /// A host command in this HOME, in its own process group (a host's children, its
    /// MCP servers among them, end with it), killed when dropped.
    pub fn host(&self, program: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.env_clear().envs(self.env()).current_dir(self.project()).kill_on_drop(true).process_group(0);
        cmd.stdin(std::process::Stdio::null());
        cmd
    }

    /// The bridge's questions with `status` (`pending`, `all`, …), oldest first.
    pub async fn questions(&self, status: &str) -> Vec<Value> {
        let url = format!("{}/v1/questions?status={status}", self.bridge().url);
        let r = self.http.get(url).bearer_auth(&self.bridge().token).send().await.unwrap();
        r.json().await.unwrap()
    }

    /// Each question as "ID: STATUS", oldest first, for assertions and their messages.
    pub async fn statuses(&self) -> Vec<String> {
        let questions = self.questions("all").await;
        questions.iter().map(|q| format!("{}: {}", q["id"].as_str().unwrap_or("?"), q["status"].as_str().unwrap_or("?"))).collect()
    }

    /// Answers question `id` as the person (`{"answers": …}`, the body of
    /// `POST /v1/questions/ID/answer`); returns the bridge's reply.
    pub async fn answer(&self, id: &str, body: Value) -> Value {
        let url = format!("{}/v1/questions/{id}/answer", self.bridge().url);
        let r = self.http.post(url).bearer_auth(&self.bridge().token).json(&body).send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "answering {id} failed: {status} {body}");
        body
    }

    /// Declines question `id` as the person (`chat`: "Chat about this" instead).
    pub async fn decline(&self, id: &str, chat: bool) -> Value {
        let url = format!("{}/v1/questions/{id}/cancel", self.bridge().url);
        let r = self.http.post(url).bearer_auth(&self.bridge().token).json(&serde_json::json!({"chat": chat})).send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "declining {id} failed: {status} {body}");
        body
    }
}

/// SIGKILL to a host's whole process group (its leader's pid, as `Home::host` starts
/// it): a host re-launches itself or wraps a native binary, so killing the first process
/// alone leaves the rest running. (Not `kill -KILL -PID`: procps-ng 4.0.2's `kill` takes
/// "-PID" for an option, signals nothing and still exits 0.)
pub fn kill_group(group: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(group as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Ends (SIGKILL) what a host left running outside its process group for the user at
/// `home`: each process started with that HOME whose command line has `marker` (Cline's
/// `--cline-hub-daemon`, interactive Codex's `app-server`).
pub fn end_leftovers(home: &Path, marker: &str) {
    let want = format!("HOME={}", home.display());
    let Ok(procs) = std::fs::read_dir("/proc") else { return };
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Runs [`end_leftovers`] when dropped (a test that panics too).
pub struct Leftovers(pub PathBuf, pub &'static str);

impl Drop for Leftovers {
    fn drop(&mut self) {
        end_leftovers(&self.0, self.1);
    }
}
