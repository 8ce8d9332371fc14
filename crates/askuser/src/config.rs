//! Where askuser keeps its files, and how a client finds a running bridge.
//!
//! The data directory holds `askuser.db` (the question store), `token` (the bearer
//! token, created once, user-only), `tls/` (the certificate a bridge made for itself,
//! if it speaks TLS) and, while a bridge runs, `bridge.json` (its url, token, pid and
//! certificate fingerprint, user-only) so that `askuser pending`, `answer`, `ask` and `mcp`
//! find it without flags.

use crate::tls::Fingerprint;
use anyhow::{bail, Context};
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
pub fn data_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(ENV_DATA_DIR).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    match dirs::data_dir() {
        Some(d) => Ok(d.join("askuser")),
        None => bail!(
            "this user has no home directory, so askuser has no data directory of its own: pass --data-dir DIR or set {ENV_DATA_DIR} \
             (a directory only you can write; never a shared one such as /tmp)"
        ),
    }
}

/// Creates the data directory (user-only on Unix), or checks one that exists: it must
/// belong to this user and be writable by nobody else, since another user who can write
/// there could plant a token, a symlink or a database. An existing directory is never
/// chmod-ed: askuser did not create it.
pub fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    match fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).with_context(|| format!("cannot create the data directory {}", dir.display()))?;
            }
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => ensure_dir(dir),
                r => r.with_context(|| format!("cannot create the data directory {}", dir.display())),
            }
        }
        Err(e) => Err(e).with_context(|| format!("cannot create the data directory {}", dir.display())),
        Ok(meta) if !meta.is_dir() => bail!("the data directory {} is not a directory", dir.display()),
        Ok(meta) => check_owned(dir, &meta),
    }
}

#[cfg(unix)]
fn check_owned(dir: &Path, meta: &fs::Metadata) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "the data directory {} belongs to uid {}, not to you (uid {me}): askuser will not use it, since its owner could plant \
             files there. Pass --data-dir with a directory of your own",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "the data directory {} can be written by other users (mode {:o}): askuser will not use it, since they could plant files \
             there. Use a directory only you can write (askuser creates its own with mode 700), or remove their write access",
            dir.display(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owned(_: &Path, _: &fs::Metadata) -> anyhow::Result<()> {
    Ok(())
}

/// Creates `path` as a new file readable and writable only by the user, never through a
/// symlink and never over an existing file.
pub fn create_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Writes a file readable and writable only by the user, replacing it atomically.
pub fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    // A leftover (or planted) temporary file goes first: removing a symlink removes the
    // link, not what it points to.
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e).with_context(|| format!("cannot write {}", tmp.display())),
        _ => {}
    }
    let mut file = create_private(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(contents).and_then(|()| file.sync_all()).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// A random hex string of `bytes` bytes of entropy.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token: `--token`, else `$ASKUSER_TOKEN`, else the one kept in `DATA/token`,
/// created on first use with 256 random bits.
pub fn token(flag: Option<&str>, dir: &Path) -> anyhow::Result<String> {
    if let Some(t) = flag.map(str::to_owned).or_else(|| std::env::var(ENV_TOKEN).ok()).filter(|t| !t.is_empty()) {
        if t.len() < 16 {
            bail!("the token must be at least 16 characters long, got {}", t.len());
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
}

impl Endpoint {
    pub fn new(url: impl Into<String>, token: impl Into<String>, fingerprint: Option<Fingerprint>) -> Endpoint {
        Endpoint { url: url.into(), token: token.into(), fingerprint }
    }
}

/// `--url`/`--token`/`--cert-fingerprint`, else `$ASKUSER_URL`/`$ASKUSER_TOKEN`/
/// `$ASKUSER_CERT_FINGERPRINT`, else `bridge.json` in the data directory.
pub fn find_bridge(url: Option<&str>, token: Option<&str>, pin: Option<Fingerprint>, dir: &Path) -> anyhow::Result<Endpoint> {
    let url = url.map(str::to_owned).or_else(|| std::env::var(ENV_URL).ok()).filter(|u| !u.is_empty());
    let token = token.map(str::to_owned).or_else(|| std::env::var(ENV_TOKEN).ok()).filter(|t| !t.is_empty());
    let pin = match (pin, std::env::var(ENV_FINGERPRINT).ok().filter(|f| !f.trim().is_empty())) {
        (Some(p), _) => Some(p),
        (None, Some(text)) => Some(text.parse::<Fingerprint>().map_err(|e| anyhow::anyhow!("{ENV_FINGERPRINT}: {e}"))?),
        (None, None) => None,
    };
    if let (Some(url), Some(token)) = (&url, &token) {
        return Ok(Endpoint::new(url.trim_end_matches('/'), token.clone(), pin));
    }
    let path = bridge_file(dir);
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "no bridge found: {} does not exist. Start one with `askuser serve`, or pass --url and --token (or set {ENV_URL} and {ENV_TOKEN})",
            path.display()
        )
    })?;
    let file: BridgeFile = serde_json::from_str(&text).with_context(|| format!("{} is not a bridge file", path.display()))?;
    // The file's pin belongs to the file's bridge only.
    let same = url.as_deref().is_none_or(|u| u.trim_end_matches('/') == file.url.trim_end_matches('/'));
    let pin = pin.or(file.fingerprint.filter(|_| same));
    Ok(Endpoint::new(url.unwrap_or(file.url).trim_end_matches('/'), token.unwrap_or(file.token), pin))
}
