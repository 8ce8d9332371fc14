//! The data directory and the files askuser keeps in it: created private (0600), written
//! whole or not at all; the bearer token (`token`), made once. The directory holds
//! `askuser.db` (the question store), `token`, `tls/` (the certificate a bridge made for
//! itself, if it speaks TLS) and, while a bridge runs, `bridge.json` ([`crate::client`]).

use crate::error::{invalid, OrFile, Result};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const ENV_TOKEN: &str = "ASKUSER_TOKEN";
pub const ENV_DATA_DIR: &str = "ASKUSER_DATA_DIR";

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

pub use crate::process::alive;

/// `2026-11-22T16:14:18.123Z` for milliseconds since the Unix epoch.
pub fn iso8601(ms: u64) -> String {
    let (days, rest) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rest / 3_600_000, rest / 60_000 % 60, rest / 1000 % 60, rest % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_795_305_600_123 + 58_458_000), "2026-11-22T16:14:18.123Z");
    }
}
