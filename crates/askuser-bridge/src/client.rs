//! Reaching a running bridge: `bridge.json` (its url, token, pid and certificate
//! fingerprint, user-only, written while it runs) lets `askuser pending`, `answer`, `ask`
//! and `mcp` find it without flags; the environment or flags name another. With its HTTP
//! and WebSocket clients (`tls.rs`: pinned to the bridge's own certificate when it has
//! one) and what its credentials API returns.

use crate::error::{invalid, Error, Result};
pub use crate::files::ENV_TOKEN;
pub use crate::fingerprint::Fingerprint;
pub use crate::tls::{explain, http, http_client, notify_client, websocket, Socket};
pub use crate::tokens::{Credential, Scope, StoredSession};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

pub const ENV_URL: &str = "ASKUSER_URL";
pub const ENV_FINGERPRINT: &str = "ASKUSER_CERT_FINGERPRINT";
pub const DEFAULT_ADDR: &str = "127.0.0.1:7823";

/// What `bridge.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BridgeFile {
    pub url: String,
    pub token: String,
    pub pid: u32,
    /// The SHA-256 fingerprint of the bridge's certificate, when it speaks TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
}

pub fn bridge_file(dir: &Path) -> PathBuf {
    dir.join("bridge.json")
}

/// How a client reaches a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub token: String,
    /// The certificate an https bridge must present (else the system's authorities decide).
    pub fingerprint: Option<Fingerprint>,
    /// For an address read from `bridge.json`: the bridge that wrote it, checked again
    /// before every request ([`Endpoint::check`]), since it may stop while a client runs.
    pub written_by: Option<Writer>,
}

/// The bridge that wrote a `bridge.json`: its data directory and pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    pub dir: PathBuf,
    pub pid: u32,
}

impl Endpoint {
    pub fn new(url: impl Into<String>, token: impl Into<String>, fingerprint: Option<Fingerprint>) -> Endpoint {
        Endpoint { url: url.into(), token: token.into(), fingerprint, written_by: None }
    }

    /// Whether a request may go to this endpoint now: for one read from `bridge.json`,
    /// only while the bridge that wrote it runs (see [`bridge_running`]).
    pub fn check(&self) -> Result<(), NotRunning> {
        match &self.written_by {
            Some(w) => bridge_running(&w.dir, w.pid),
            None => Ok(()),
        }
    }
}

/// `bridge.json` names a bridge that is gone: its port may be anyone's now.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the bridge that wrote {} (pid {pid}) is not running: start it with `askuser serve`", path.display())]
pub struct NotRunning {
    pub path: PathBuf,
    pub pid: u32,
}

/// Whether the bridge with `pid` that wrote `bridge.json` in `dir` still serves it.
///
/// A bridge that stops uncleanly leaves `bridge.json` behind, and its port is then free
/// for any local user to listen on: a client that trusted the file would hand that user
/// the admin token and the questions. So the token goes to the file's address only while
/// its writer runs, which three things show together:
/// - `bridge.lock` is locked: every bridge holds an exclusive OS lock on it while it runs
///   (`serve::lock_dir`), and the system releases it however the process ends, so unlike
///   a pid it cannot outlive the bridge or be reused by an unrelated process;
/// - `bridge.lock` names `pid`: the lock holder is the bridge that wrote this file, not a
///   newer one still starting (which may listen elsewhere) that has not rewritten it yet;
/// - process `pid` runs (and is no zombie): a child forked at the moment the bridge died
///   can hold the lock a little longer.
///
/// `bridge.json` is written only by a bridge into its own data directory, so its writer
/// is always a process of this machine (a bridge elsewhere is reached by `--url`, `--token`
/// and its pin, never through this file). What is left is a bridge that dies between
/// this check and the connection, and a stranger binding its port within that instant;
/// a bridge that proves knowledge of the token first would close that too, but needs the
/// proof on the very connection the token then travels on.
pub fn bridge_running(dir: &Path, pid: u32) -> Result<(), NotRunning> {
    let lock = dir.join("bridge.lock");
    let running =
        lock_held(&lock) && fs::read_to_string(&lock).is_ok_and(|holder| holder.trim() == pid.to_string()) && crate::process::alive(pid);
    if running {
        Ok(())
    } else {
        Err(NotRunning { path: bridge_file(dir), pid })
    }
}

/// Whether another process holds the lock on `path` (a shared lock cannot be had). A
/// shared lock taken here is released at once; a bridge starting meanwhile waits for it.
fn lock_held(path: &Path) -> bool {
    let Ok(file) = fs::File::open(path) else { return false };
    matches!(file.try_lock_shared(), Err(fs::TryLockError::WouldBlock))
}

/// Refuses plain `http://` to anything but this machine (127.0.0.0/8, ::1, localhost):
/// the token and the questions would cross the network readable and changeable by
/// anyone on the path. `field` names where the URL came from.
pub fn check_url(url: &str, field: &str) -> Result<()> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        Error::invalid(format!(
            "{field}: expected a bridge's URL such as http://127.0.0.1:7823 or https://devbox.lan:7823, got {url:?}: {e}"
        ))
    })?;
    // The parser has made the host canonical (lower case, IPv4 as four decimals, IPv6 in brackets).
    let host = parsed.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    let loopback = host == "localhost" || ip.is_ok_and(|ip| ip.to_canonical().is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => invalid!(
            "{field}: {url} is plain http to another machine, which would send the token and the questions unencrypted; \
             plain http is only for this machine (127.0.0.1, ::1, localhost). Reach a bridge elsewhere over https: \
             `askuser serve --tls` there, then --url https://… --cert-fingerprint … (docs/security.md, remote mode)"
        ),
        other => invalid!("{field}: expected an http:// or https:// URL, got {other}:// in {url}"),
    }
}

/// Whether two bridge URLs name the same place (`/` at the end, case and default ports aside).
fn same_url(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.trim_end_matches('/') == b.trim_end_matches('/'),
    }
}

/// `--url`/`--token`/`--cert-fingerprint`, else `$ASKUSER_URL`/`$ASKUSER_TOKEN`/
/// `$ASKUSER_CERT_FINGERPRINT`, else `bridge.json` in the data directory.
///
/// The file's token and pin belong to the file's bridge: they go only to the file's own
/// URL, and only while that bridge runs ([`bridge_running`]). Another URL needs its own
/// token.
pub fn find_bridge(url: Option<&str>, token: Option<&str>, pin: Option<Fingerprint>, dir: &Path) -> Result<Endpoint> {
    let (url, url_field) = match url.filter(|u| !u.is_empty()) {
        Some(u) => (Some(u.to_owned()), "--url"),
        None => (std::env::var(ENV_URL).ok().filter(|u| !u.is_empty()), "$ASKUSER_URL"),
    };
    let token = token.map(str::to_owned).or_else(|| std::env::var(ENV_TOKEN).ok()).filter(|t| !t.is_empty());
    let pin = match (pin, std::env::var(ENV_FINGERPRINT).ok().filter(|f| !f.trim().is_empty())) {
        (Some(p), _) => Some(p),
        (None, Some(text)) => Some(text.parse::<Fingerprint>().map_err(|e| Error::invalid(format!("{ENV_FINGERPRINT}: {e}")))?),
        (None, None) => None,
    };
    if let Some(url) = &url {
        check_url(url, url_field)?;
        if let Some(token) = &token {
            return Ok(Endpoint::new(url.trim_end_matches('/'), token.clone(), pin));
        }
    }
    let path = bridge_file(dir);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) if url.is_some() => invalid!("{}", token_needed(url.as_deref().unwrap_or_default(), None)),
        Err(_) => invalid!(
            "no bridge found: {} does not exist. Start one with `askuser serve`, or pass --url and --token (or set {ENV_URL} and {ENV_TOKEN})",
            path.display()
        ),
    };
    let file: BridgeFile =
        serde_json::from_str(&text).map_err(|e| Error::invalid(format!("{} is not a bridge file: {e}", path.display())))?;
    if let Some(url) = url.as_deref().filter(|u| !same_url(u, &file.url)) {
        invalid!("{}", token_needed(url, Some(&file.url)));
    }
    // No `check_url` for the file's own address: its writer runs on this machine (checked
    // next), so even a bridge behind a TLS proxy on a LAN address (`--trust-proxy`) is
    // reached without leaving it.
    bridge_running(dir, file.pid).map_err(|e| Error::Invalid(e.to_string()))?;
    let mut endpoint = Endpoint::new(file.url.trim_end_matches('/'), token.unwrap_or(file.token), pin.or(file.fingerprint));
    endpoint.written_by = Some(Writer { dir: dir.to_path_buf(), pid: file.pid });
    Ok(endpoint)
}

/// The message for a URL given without a token: `bridge.json`'s token (of the bridge at
/// `file_url`) is never sent anywhere else.
fn token_needed(url: &str, file_url: Option<&str>) -> String {
    let why = match file_url {
        Some(f) => format!(" (the token in bridge.json is sent only to the bridge that wrote it, at {f})"),
        None => String::new(),
    };
    format!("a token is needed for the bridge at {url}: pass --token or set {ENV_TOKEN}{why}")
}

#[cfg(test)]
mod bridge_tests {
    use super::*;

    #[test]
    fn plain_http_goes_only_to_this_machine() {
        for url in ["http://127.0.0.1:7823", "http://127.9.8.7:1", "http://[::1]:7823/", "http://LocalHost:9", "https://192.0.2.1:7823"] {
            assert!(check_url(url, "--url").is_ok(), "{url}");
        }
        for url in
            ["http://192.0.2.1:7823", "http://10.0.0.1", "http://localhost.evil.example:7823", "http://[::2]:1", "http://0.0.0.0:7823"]
        {
            let e = check_url(url, "--url").unwrap_err().to_string();
            assert!(e.starts_with(&format!("--url: {url} is plain http to another machine")) && e.contains("https"), "{e}");
        }
        let e = check_url("ftp://127.0.0.1", "$ASKUSER_URL").unwrap_err().to_string();
        assert_eq!(e, "$ASKUSER_URL: expected an http:// or https:// URL, got ftp:// in ftp://127.0.0.1");
        assert!(check_url("127.0.0.1:7823", "--url").is_err(), "a URL needs its scheme");
    }

    #[test]
    fn urls_are_the_same_up_to_a_slash_case_and_the_default_port() {
        assert!(same_url("http://127.0.0.1:7823", "http://127.0.0.1:7823/"));
        assert!(same_url("HTTPS://Devbox.lan:443", "https://devbox.lan"));
        assert!(!same_url("http://127.0.0.1:7823", "http://localhost:7823"));
        assert!(!same_url("http://127.0.0.1:7823", "http://127.0.0.1:7824"));
    }

    /// The lock the bridge holds, the pid it wrote there, and a live process: all three.
    #[test]
    fn a_bridge_runs_only_while_it_holds_the_lock_under_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let lock_path = dir.path().join("bridge.lock");
        assert!(bridge_running(dir.path(), me).is_err(), "no lock file");
        fs::write(&lock_path, me.to_string()).unwrap();
        assert!(bridge_running(dir.path(), me).is_err(), "nobody holds the lock");
        let held = fs::OpenOptions::new().read(true).write(true).open(&lock_path).unwrap();
        held.try_lock().unwrap();
        assert!(bridge_running(dir.path(), me).is_ok());
        let e = bridge_running(dir.path(), me + 1).unwrap_err();
        assert_eq!(e.pid, me + 1, "the lock holder is another bridge than the file's");
        assert_eq!(
            e.to_string(),
            format!(
                "the bridge that wrote {} (pid {}) is not running: start it with `askuser serve`",
                bridge_file(dir.path()).display(),
                me + 1
            )
        );
        drop(held);
        assert!(bridge_running(dir.path(), me).is_err(), "the lock is released");
    }
}
