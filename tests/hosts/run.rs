//! A host command running in a [`Home`](crate::harness::Home): its output, the fake API
//! its model is served from, and what a failure message needs to show of both.

use crate::harness::kill_group;
use crate::model::FakeApi;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// A running host (`codex exec`, `claude -p`, `gemini -p`, or a shell line that runs one)
/// and the scripted model it talks to. Its process group is killed when this is dropped.
pub struct Run {
    /// The command's name in failure messages (`codex`).
    name: &'static str,
    child: tokio::process::Child,
    /// Its process group (its pid): the host, whatever it re-launched itself as, and the
    /// MCP servers it started in that group.
    group: u32,
    output: Arc<Mutex<String>>,
    /// What it printed on stdout alone, and the task reading it (done at its end).
    stdout: Arc<Mutex<String>>,
    reading: tokio::task::JoinHandle<()>,
    pub api: FakeApi,
    /// Something more a failure message shows (Claude Code's log of askuser), read then.
    log: Option<Box<dyn Fn() -> String>>,
    /// What ends what the host left running outside its process group (Cline's daemon).
    cleanup: Option<Box<dyn Fn()>>,
}

impl Run {
    /// Starts `cmd` (made by `Home::host`, so in a process group of its own), collecting
    /// what it prints.
    pub fn spawn(name: &'static str, mut cmd: tokio::process::Command, api: FakeApi) -> Run {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{name} starts: {e}"));
        let group = child.id().unwrap_or_else(|| panic!("{name} runs"));
        let (output, stdout): (Arc<Mutex<String>>, Arc<Mutex<String>>) = Default::default();
        let reading = collect(child.stdout.take().unwrap(), vec![output.clone(), stdout.clone()]);
        collect(child.stderr.take().unwrap(), vec![output.clone()]);
        Run { name, child, group, output, stdout, reading, api, log: None, cleanup: None }
    }

    /// Shows `read()` under `title` in failure messages too.
    pub fn with_log(mut self, title: &'static str, read: impl Fn() -> String + 'static) -> Run {
        self.log = Some(Box::new(move || format!("--- {title} ---\n{}\n", read())));
        self
    }

    /// Runs `cleanup` when the host is killed or this is dropped.
    pub fn with_cleanup(mut self, cleanup: impl Fn() + 'static) -> Run {
        self.cleanup = Some(Box::new(cleanup));
        self
    }

    /// What the host printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// All the host printed on stdout (its reply, where stderr is its log), once it closed
    /// its stdout (waiting at most `limit`): its last line is read after it exits.
    pub async fn stdout(&mut self, limit: Duration) -> String {
        if tokio::time::timeout(limit, &mut self.reading).await.is_err() {
            panic!("{} did not close its stdout within {limit:?}\n{}", self.name, self.report());
        }
        self.stdout.lock().unwrap().clone()
    }

    /// What the host printed (and logged), and what the scripted API served and the model
    /// read, for failure messages.
    pub fn report(&self) -> String {
        let log = self.log.as_ref().map(|read| read()).unwrap_or_default();
        format!(
            "--- {} output ---\n{}\n{log}--- requests to the scripted model ---\n{}\n--- the tool results the model read ---\n{:#?}",
            self.name,
            self.output(),
            self.api.requests().join("\n"),
            self.api.model.results()
        )
    }

    /// Waits (at most `limit`) until the model has read `n` tool results; returns them.
    pub async fn results(&self, n: usize, limit: Duration, what: &str) -> Vec<String> {
        let until = Instant::now() + limit;
        loop {
            let results = self.api.model.results();
            if results.len() >= n {
                return results;
            }
            assert!(
                Instant::now() < until,
                "{what}: the model read {} tool result(s) in {limit:?}, not {n}\n{}",
                results.len(),
                self.report()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (at most `limit`) until the host's main loop has asked the model `n` times.
    pub async fn turns(&self, n: usize, limit: Duration, what: &str) {
        let until = Instant::now() + limit;
        while self.api.model.seen().len() < n {
            assert!(Instant::now() < until, "{what}: the model was asked fewer than {n} times\n{}", self.report());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (at most `limit`) for the host to exit.
    pub async fn exit(&mut self, limit: Duration) -> ExitStatus {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.unwrap(),
            Err(_) => panic!("{} did not exit within {limit:?}\n{}", self.name, self.report()),
        }
    }

    /// Kills the host's process group, as a user who closes the terminal would.
    pub fn kill(&self) {
        kill_group(self.group);
        if let Some(cleanup) = &self.cleanup {
            cleanup();
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Whether it exited or not: what it left running in its group ends too (MCP
        // servers in groups of their own end when their stdin closes).
        self.kill();
    }
}

/// Each line of `stream` appended to each of `into`.
fn collect(stream: impl AsyncRead + Unpin + Send + 'static, into: Vec<Arc<Mutex<String>>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            for out in &into {
                let mut out = out.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
        }
    })
}
