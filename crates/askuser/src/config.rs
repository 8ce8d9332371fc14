//! Where askuser keeps its files, and how a client finds a running bridge.
//!
//! The data directory holds `askuser.db` (the question store), `token` (the bearer
//! token, created once, user-only) and, while a bridge runs, `bridge.json` (its url,
//! token and pid, user-only) so that `askuser pending`, `answer`, `ask` and `mcp`
//! find it without flags.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const ENV_URL: &str = "ASKUSER_URL";
pub const ENV_TOKEN: &str = "ASKUSER_TOKEN";
pub const ENV_DATA_DIR: &str = "ASKUSER_DATA_DIR";
pub const DEFAULT_ADDR: &str = "127.0.0.1:7823";

/// `--data-dir`, else `$ASKUSER_DATA_DIR`, else the platform's data directory
/// (`~/.local/share/askuser` on Linux).
pub fn data_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os(ENV_DATA_DIR).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("askuser")
}

/// Creates the data directory (user-only on Unix) with a clear error.
pub fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

/// Writes a file readable and writable only by the user, replacing it atomically.
pub fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
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
}

pub fn bridge_file(dir: &Path) -> PathBuf {
    dir.join("bridge.json")
}

/// How a client reaches a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub token: String,
}

/// `--url`/`--token`, else `$ASKUSER_URL`/`$ASKUSER_TOKEN`, else `bridge.json` in the data directory.
pub fn find_bridge(url: Option<&str>, token: Option<&str>, dir: &Path) -> anyhow::Result<Endpoint> {
    let url = url.map(str::to_owned).or_else(|| std::env::var(ENV_URL).ok()).filter(|u| !u.is_empty());
    let token = token.map(str::to_owned).or_else(|| std::env::var(ENV_TOKEN).ok()).filter(|t| !t.is_empty());
    if let (Some(url), Some(token)) = (&url, &token) {
        return Ok(Endpoint { url: url.trim_end_matches('/').to_owned(), token: token.clone() });
    }
    let path = bridge_file(dir);
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "no bridge found: {} does not exist. Start one with `askuser serve`, or pass --url and --token (or set {ENV_URL} and {ENV_TOKEN})",
            path.display()
        )
    })?;
    let file: BridgeFile = serde_json::from_str(&text).with_context(|| format!("{} is not a bridge file", path.display()))?;
    Ok(Endpoint { url: url.unwrap_or(file.url).trim_end_matches('/').to_owned(), token: token.unwrap_or(file.token) })
}
