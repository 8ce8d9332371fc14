//! The calls `askuser mcp` processes have open, on disk, so that a host that restarts
//! (killed, crashed, or a new `claude -p` / `codex exec` run) and asks the same again
//! gets the question it asked before, and the answer given meanwhile, instead of a
//! duplicate the person must answer twice.
//!
//! A call is matched by its *key*: the agent's name (`--agent-name`, else the MCP
//! client's name), the working directory of `askuser mcp` (the host's project), and the
//! questions exactly as normalized (texts, headers, options, multiSelect). An entry is
//! written when a call starts waiting and removed when its result goes back to the host;
//! only an entry whose process is gone (and is younger than [`KEEP_MS`]) is taken up
//! again, so two live sessions asking the same never share a question.
//!
//! One small JSON file in the data directory, `mcp-calls.json`, changed under an
//! advisory lock (`mcp-calls.lock`) and replaced atomically.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How long an open call may be taken up again: a day, as long as askuser asks hosts
/// to wait.
pub const KEEP_MS: u64 = 86_400_000;
/// At most this many entries are kept (the oldest go first).
const MAX_ENTRIES: usize = 1_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    id: String,
    pid: u32,
    at: u64,
}

/// The open calls of this user's `askuser mcp` processes.
#[derive(Debug, Clone)]
pub struct Journal {
    file: PathBuf,
}

/// The key of a call: a digest of who asks, where, and what.
pub fn key(agent: &str, cwd: &Path, questions: &str) -> String {
    let mut input = Vec::new();
    for part in [agent.as_bytes(), cwd.as_os_str().as_encoded_bytes(), questions.as_bytes()] {
        input.extend_from_slice(&(part.len() as u64).to_le_bytes());
        input.extend_from_slice(part);
    }
    ring::digest::digest(&ring::digest::SHA256, &input).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

impl Journal {
    pub fn new(dir: &Path) -> Journal {
        Journal { file: dir.join("mcp-calls.json") }
    }

    /// Notes that this process waits on question `id` for the call `key`.
    pub fn open(&self, key: &str, id: &str, now: u64) {
        self.change(now, |entries| {
            entries.insert(key.to_owned(), Entry { id: id.to_owned(), pid: std::process::id(), at: now });
        });
    }

    /// Question `id`'s result reached a host (or it was withdrawn): nobody needs it again,
    /// whichever call asked it.
    pub fn close(&self, id: &str, now: u64) {
        self.change(now, |entries| entries.retain(|_, e| e.id != id));
    }

    /// The question an `askuser mcp` process that is gone was waiting on for `key`.
    pub fn orphan(&self, key: &str, now: u64) -> Option<String> {
        let entries = self.read();
        let entry = entries.get(key)?;
        let fresh = now.saturating_sub(entry.at) < KEEP_MS;
        (fresh && entry.pid != std::process::id() && !askuser_bridge::process::alive(entry.pid)).then(|| entry.id.clone())
    }

    fn read(&self) -> BTreeMap<String, Entry> {
        std::fs::read(&self.file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
    }

    /// Reads, changes and writes the file under the lock; a failure only loses the
    /// chance to resume, so it is logged, never returned.
    fn change(&self, now: u64, f: impl FnOnce(&mut BTreeMap<String, Entry>)) {
        let _lock = Lock::take(&self.file.with_extension("lock"));
        let before = self.read();
        let mut entries = before.clone();
        f(&mut entries);
        entries.retain(|_, e| now.saturating_sub(e.at) < KEEP_MS);
        if entries == before {
            return;
        }
        while entries.len() > MAX_ENTRIES {
            let oldest = entries.iter().min_by_key(|(_, e)| e.at).map(|(k, _)| k.clone()).expect("not empty");
            entries.remove(&oldest);
        }
        let bytes = serde_json::to_vec(&entries).expect("entries serialize");
        if let Err(e) = askuser_bridge::config::write_private(&self.file, &bytes) {
            tracing::debug!("cannot note the open call for a restarted host to resume: {e:#}");
        }
    }
}

/// An exclusive advisory lock on a file, released when dropped (or when the process ends).
struct Lock(#[allow(dead_code)] Option<std::fs::File>);

impl Lock {
    fn take(path: &Path) -> Lock {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).ok();
        #[cfg(unix)]
        if let Some(f) = &file {
            let _ = rustix::fs::flock(f, rustix::fs::FlockOperation::LockExclusive);
        }
        Lock(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_of_a_process_that_is_gone_is_found_again_until_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let k = key("codex-mcp-client", Path::new("/work/project"), r#"[{"question":"Which?"}]"#);
        journal.open(&k, "q-1", 1_000);
        assert_eq!(journal.orphan(&k, 2_000), None, "this process still waits on it");

        // As a process that is gone left it (no process has this pid).
        let mut entries = journal.read();
        entries.get_mut(&k).unwrap().pid = u32::MAX;
        std::fs::write(&journal.file, serde_json::to_vec(&entries).unwrap()).unwrap();
        assert_eq!(journal.orphan(&k, 2_000).as_deref(), Some("q-1"));
        assert_eq!(journal.orphan(&k, 1_000 + KEEP_MS), None, "too old");
        let other = key("codex-mcp-client", Path::new("/work/other"), r#"[{"question":"Which?"}]"#);
        assert_eq!(journal.orphan(&other, 2_000), None, "another folder is another call");

        journal.close("q-2", 3_000);
        assert_eq!(journal.orphan(&k, 3_000).as_deref(), Some("q-1"), "closing another question changes nothing");
        journal.close("q-1", 3_000);
        assert_eq!(journal.orphan(&k, 3_000), None);
    }

    #[test]
    fn keys_tell_apart_who_where_and_what() {
        let a = key("a", Path::new("/p"), "q");
        assert_eq!(a, key("a", Path::new("/p"), "q"));
        assert_ne!(a, key("ab", Path::new("/p"), ""));
        assert_ne!(a, key("a", Path::new("/p2"), "q"));
        assert_eq!(a.len(), 64);
    }
}
