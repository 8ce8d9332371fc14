//! Reading someone else's config file, and replacing it whole: the original to a backup
//! that never replaces an earlier one, the new text in atomically with the old permissions.

use super::*;
use anyhow::{anyhow, bail, Context};
use askuser_bridge::files;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Reads a file's bytes; `None` when it does not exist.
pub fn read(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// A file's bytes as text.
pub fn text<'a>(path: &Path, bytes: &'a [u8]) -> anyhow::Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = position(&String::from_utf8_lossy(bytes), e.valid_up_to());
        anyhow!("{}:{line}:{column}: not UTF-8 text", path.display())
    })
}

/// Copies `bytes` to `<path>.askuser-backup`, or `.askuser-backup.2`, `.3`, ... : a new
/// file each time (created exclusively, never through a symlink), user-only.
pub(super) fn backup(path: &Path, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    for n in 1..=1000 {
        let suffix = if n == 1 { ".askuser-backup".to_owned() } else { format!(".askuser-backup.{n}") };
        let mut name = path.as_os_str().to_owned();
        name.push(&suffix);
        let candidate = PathBuf::from(name);
        match files::create_private(&candidate) {
            Ok(mut f) => {
                f.write_all(bytes)
                    .and_then(|()| f.sync_all())
                    .with_context(|| format!("cannot write the backup {}", candidate.display()))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot write the backup {}", candidate.display())),
        }
    }
    bail!("{} already has 1000 askuser backups: remove some", path.display())
}

/// Replaces `path` with `text` atomically (a temporary file beside it, then a rename),
/// keeping its permissions; a symlink is followed, so a dotfiles link stays a link. The
/// original is backed up first; if the file changed since it was read (the host wrote it
/// meanwhile), nothing is written. Returns the backup's path.
pub(super) fn write(path: &Path, original: Option<&[u8]>, text: &str) -> anyhow::Result<Option<PathBuf>> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let real = if is_link {
        fs::canonicalize(path).with_context(|| format!("cannot follow the symlink {}", path.display()))?
    } else {
        path.to_path_buf()
    };
    let dir = real.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file_name = real.file_name().ok_or_else(|| anyhow!("{} is not a file name", real.display()))?;
    let tmp = dir.join(format!(".{}.askuser-{}.tmp", file_name.to_string_lossy(), std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut f = files::create_private(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).with_context(|| format!("cannot write {}", tmp.display()))?;
        if original.is_some() {
            let perms = fs::metadata(&real).with_context(|| format!("cannot read {}", real.display()))?.permissions();
            fs::set_permissions(&tmp, perms).with_context(|| format!("cannot set the permissions of {}", tmp.display()))?;
        }
        if read(&real)?.as_deref() != original {
            bail!(
                "{} changed while askuser was editing it (is the host running and writing it?); nothing was changed: run again",
                path.display()
            );
        }
        let saved = original.map(|bytes| backup(path, bytes)).transpose()?;
        fs::rename(&tmp, &real).with_context(|| format!("cannot replace {}", real.display()))?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(saved)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
