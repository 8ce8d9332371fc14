//! Where askuser keeps its files, and how a client finds a running bridge.
//!
//! The data directory holds `askuser.db` (the question store), `token` (the bearer
//! token, created once, user-only), `tls/` (the certificate a bridge made for itself,
//! if it speaks TLS) and, while a bridge runs, `bridge.json` (its url, token, pid and
//! certificate fingerprint, user-only) so that `askuser pending`, `answer`, `ask` and `mcp`
//! find it without flags.

use crate::error::{invalid, Error, OrFile, Result};
use crate::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const ENV_URL: &str = "ASKUSER_URL";
pub const ENV_TOKEN: &str = "ASKUSER_TOKEN";
pub const ENV_DATA_DIR: &str = "ASKUSER_DATA_DIR";
pub const ENV_FINGERPRINT: &str = "ASKUSER_CERT_FINGERPRINT";
pub const DEFAULT_ADDR: &str = "127.0.0.1:7823";

/// `--data-dir`, else `$ASKUSER_DATA_DIR`, else the platform's data directory
/// (`~/.local/share/askuser` on Linux). Never a shared folder such as /tmp: a user
/// without a home directory must name one.
pub fn data_dir(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(ENV_DATA_DIR).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    match dirs::data_dir() {
        Some(d) => Ok(d.join("askuser")),
        None => invalid!(
            "this user has no home directory, so askuser has no data directory of its own: pass --data-dir DIR or set {ENV_DATA_DIR} \
             (a directory only you can write; never a shared one such as /tmp)"
        ),
    }
}

/// Creates the data directory (user-only on Unix), or checks one that exists: it must
/// belong to this user and be writable by nobody else, since another user who can write
/// there could plant a token, a symlink or a database. An existing directory is never
/// chmod-ed: askuser did not create it.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).or_file("create the data directory", dir)?;
            }
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => ensure_dir(dir),
                r => r.or_file("create the data directory", dir),
            }
        }
        Err(e) => Err(e).or_file("create the data directory", dir),
        Ok(meta) if !meta.is_dir() => invalid!("the data directory {} is not a directory", dir.display()),
        Ok(meta) => check_owned(dir, &meta),
    }
}

#[cfg(unix)]
fn check_owned(dir: &Path, meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        invalid!(
            "the data directory {} belongs to uid {}, not to you (uid {me}): askuser will not use it, since its owner could plant \
             files there. Pass --data-dir with a directory of your own",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        invalid!(
            "the data directory {} can be written by other users (mode {:o}): askuser will not use it, since they could plant files \
             there. Use a directory only you can write (askuser creates its own with mode 700), or remove their write access",
            dir.display(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owned(_: &Path, _: &fs::Metadata) -> Result<()> {
    Ok(())
}

/// Creates `path` as a new file readable and writable only by the user, never through a
/// symlink and never over an existing file.
pub fn create_private(path: &Path) -> std::io::Result<fs::File> {
    private().write(true).create_new(true).open(path)
}

/// Options for a file only the user may read and write, never through a symlink.
fn private() -> fs::OpenOptions {
    let mut options = fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// Writes a file readable and writable only by the user, replacing it atomically, and
/// synced to disk: it survives a power cut.
pub fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    replace(path, contents, true)
}

/// As [`write_private`], but not synced: a process killed at any point leaves the old
/// file or the new one (the kernel keeps what was written), and only a power cut may
/// lose the change. For what is cheap to lose and written on a hot path (`fsync` takes
/// milliseconds on a busy disk: issue 51).
pub fn replace_private(path: &Path, contents: &[u8]) -> Result<()> {
    replace(path, contents, false)
}

fn replace(path: &Path, contents: &[u8], sync: bool) -> Result<()> {
    let tmp = path.with_extension("tmp");
    // A leftover (or planted) temporary file goes first: removing a symlink removes the
    // link, not what it points to.
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e).or_file("write", &tmp),
        _ => {}
    }
    let mut file = create_private(&tmp).or_file("write", &tmp)?;
    file.write_all(contents).and_then(|()| if sync { file.sync_all() } else { Ok(()) }).or_file("write", &tmp)?;
    fs::rename(&tmp, path).or_file("write", path)
}

/// Opens a file readable and writable only by the user for appending, creating it if
/// need be; a symlink in its place is refused.
pub fn append_private(path: &Path) -> std::io::Result<fs::File> {
    private().append(true).create(true).open(path)
}

/// A random hex string of `bytes` bytes of entropy.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token: `--token`, else `$ASKUSER_TOKEN`, else the one kept in `DATA/token`,
/// created on first use with 256 random bits.
pub fn token(flag: Option<&str>, dir: &Path) -> Result<String> {
    if let Some(t) = flag.map(str::to_owned).or_else(|| std::env::var(ENV_TOKEN).ok()).filter(|t| !t.is_empty()) {
        if t.len() < 16 {
            invalid!("the token must be at least 16 characters long, got {}", t.len());
        }
        return Ok(t);
    }
    let path = dir.join("token");
    match fs::read_to_string(&path) {
        Ok(t) if t.trim().len() >= 16 => Ok(t.trim().to_owned()),
        _ => {
            let t = random_hex(32);
            write_private(&path, t.as_bytes())?;
            Ok(t)
        }
    }
}

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

/// A value that lets whoever reads it in: shown only through [`redact`], in every log
/// line, message and error (logs are collected and shared; errors are pasted into
/// issues).
#[derive(Debug, Clone, Copy)]
pub enum Secret<'a> {
    /// A PostgreSQL URL or libpq `key=value` string (`--store`): its password.
    Store(&'a str),
    /// The webhook's URL: its path is the credential (Slack's, Discord's ...).
    Webhook(&'a str),
    /// An ntfy `URL/TOPIC`: anyone who knows the topic reads and posts to it.
    Ntfy(&'a str),
}

/// `secret` as safe to show: a store's passwords as `***`; a webhook's scheme and host
/// with its path as `/…`; ntfy's server and the first 3 characters of its topic + `…`.
pub fn redact(secret: Secret<'_>) -> String {
    match secret {
        Secret::Store(text) => match text.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", redact_store_url(rest)),
            None => redact_key_values(text),
        },
        Secret::Webhook(text) => match reqwest::Url::parse(text) {
            Ok(url) if url.path() == "/" && url.query().is_none() && url.fragment().is_none() => format!("{}/", origin(&url)),
            Ok(url) => format!("{}/…", origin(&url)),
            Err(_) => unparsed(text),
        },
        Secret::Ntfy(text) => match reqwest::Url::parse(text) {
            Ok(url) => {
                let topic = url.path_segments().and_then(|mut s| s.rfind(|s| !s.is_empty())).unwrap_or_default();
                // A topic too short to keep 3 characters back shows half of them.
                let shown: String = topic.chars().take(3.min(topic.chars().count() / 2)).collect();
                format!("{}/{shown}…", origin(&url))
            }
            Err(_) => unparsed(text),
        },
    }
}

/// `scheme://host[:port]`, without any user or password.
fn origin(url: &reqwest::Url) -> String {
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}", url.scheme(), url.host_str().unwrap_or_default())
}

/// A value that is not a URL: its scheme at most.
fn unparsed(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, _)) if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) => {
            format!("{scheme}://…")
        }
        _ => "…".to_owned(),
    }
}

/// What follows `postgres://`, read as tokio-postgres reads it: the credentials run to
/// the first `@` and the password follows their first `:`; a `password` parameter (its
/// name percent-decoded) may follow `?`.
fn redact_store_url(rest: &str) -> String {
    let (credentials, rest) = match rest.find('@') {
        Some(at) => (Some(&rest[..at]), &rest[at..]),
        None => (None, rest),
    };
    let mut shown = match credentials.map(|c| c.split_once(':')) {
        Some(Some((user, _))) => format!("{user}:***"),
        Some(None) => credentials.unwrap_or_default().to_owned(),
        None => String::new(),
    };
    let Some((before, query)) = rest.split_once('?') else {
        shown.push_str(rest);
        return shown;
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if percent_encoding::percent_decode_str(key).decode_utf8_lossy() == "password" => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{shown}{before}?{}", pairs.join("&"))
}

/// A libpq `key=value` string (`host=db password='a b'`): values may be quoted, with
/// backslash escapes, and spaces may surround `=`. What cannot be read is hidden.
fn redact_key_values(text: &str) -> String {
    let mut shown = vec![];
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(rest.len());
        let key = &rest[..key_end];
        let Some(after) = rest[key_end..].trim_start().strip_prefix('=') else {
            shown.push("…".to_owned());
            break;
        };
        let after = after.trim_start();
        let Some(value_len) = libpq_value_len(after) else {
            shown.push(format!("{key}=…"));
            break;
        };
        let value = if key == "password" { "***" } else { &after[..value_len] };
        shown.push(format!("{key}={value}"));
        rest = after[value_len..].trim_start();
    }
    shown.join(" ")
}

/// The length of the value at the start of `text`: quoted to its closing `'`, else to
/// the next space; `None` when a quote is not closed.
fn libpq_value_len(text: &str) -> Option<usize> {
    let quoted = text.starts_with('\'');
    let mut chars = text.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return Some(i + 1),
            c if !quoted && c.is_whitespace() => return Some(i),
            _ => {}
        }
    }
    (!quoted).then_some(text.len())
}

#[cfg(test)]
mod redact_tests {
    use super::{redact, Secret};

    #[test]
    fn store_passwords_are_hidden_wherever_tokio_postgres_reads_them() {
        let store = |s| redact(Secret::Store(s));
        assert_eq!(
            store("postgres://askuser:s3cret@db:5432/askuser?sslmode=require"),
            "postgres://askuser:***@db:5432/askuser?sslmode=require"
        );
        assert_eq!(store("postgresql://askuser@/askuser?host=/tmp/x"), "postgresql://askuser@/askuser?host=/tmp/x");
        assert_eq!(store("postgres://u@db/a?sslmode=require&password=s3cret"), "postgres://u@db/a?sslmode=require&password=***");
        assert_eq!(store("postgres://db/a?pass%77ord=s3cret"), "postgres://db/a?pass%77ord=***");
        // An `@` or `/` in the password: the credentials run to the first `@`.
        assert_eq!(store("postgres://u:s3/c?r@et@db/a"), "postgres://u:***@et@db/a");
        assert_eq!(store("postgres://u:p@db/a?password=s3cret&x=1"), "postgres://u:***@db/a?password=***&x=1");
        assert_eq!(store("host=db user=askuser password=s3cret"), "host=db user=askuser password=***");
        assert_eq!(store("host=db password = 's3 c\\'ret' dbname=a"), "host=db password=*** dbname=a");
        assert_eq!(store("host=db password='s3cret"), "host=db password=…");
        assert_eq!(store("mysql: s3cret"), "…");
    }

    #[test]
    fn a_webhook_shows_its_host_and_ntfy_a_topic_prefix() {
        let hook = |s| redact(Secret::Webhook(s));
        assert_eq!(hook("https://hooks.slack.com/services/T0/B0/s3cret"), "https://hooks.slack.com/…");
        assert_eq!(hook("https://me:pw@hooks.example:8443/?key=s3cret"), "https://hooks.example:8443/…");
        assert_eq!(hook("http://[::1]:9/"), "http://[::1]:9/");
        assert_eq!(hook("https//hooks.example/s3cret"), "…");
        assert_eq!(hook("hxxps://hooks example/s3cret"), "hxxps://…");
        let ntfy = |s| redact(Secret::Ntfy(s));
        assert_eq!(ntfy("https://ntfy.sh/askuser-s3cret"), "https://ntfy.sh/ask…");
        assert_eq!(ntfy("https://ntfy.example:8080/push/s3cret-topic/"), "https://ntfy.example:8080/s3c…");
        assert_eq!(ntfy("https://ntfy.sh/ab"), "https://ntfy.sh/a…");
    }
}
