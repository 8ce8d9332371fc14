//! The calls `askuser mcp` processes have open, on disk, so that a host that restarts
//! (killed, crashed, or a new `claude -p` / `codex exec` run) and asks the same again
//! gets the question it asked before, and the answer given meanwhile, instead of a
//! duplicate the person must answer twice.
//!
//! A call is matched by its *key*: the agent's name (`--agent-name`, else the MCP
//! client's name), the working directory of `askuser mcp` (the host's project), and the
//! questions exactly as normalized (texts, headers, options, multiSelect). An entry is
//! written when a call starts waiting and removed before its result goes back to the
//! host (so an entry still there means no host got that result); only an entry whose
//! process is gone (and is younger than [`KEEP_MS`]) is taken up again, so two live
//! sessions asking the same never share a question. A process that ends on its own notes
//! when (`left`), so that an answer given before then (while it could still have been
//! read) is never handed to another run; an answer is handed over once ([`Journal::take`]).
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
    /// When its process ended, if it ended on its own (host gone, a signal); a process
    /// killed outright leaves none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    left: Option<u64>,
}

/// A call that a process that is gone left open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// The question it waited on.
    pub id: String,
    /// When that process ended, if it said.
    pub left: Option<u64>,
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
            entries.insert(key.to_owned(), Entry { id: id.to_owned(), pid: std::process::id(), at: now, left: None });
        });
    }

    /// Question `id`'s result reached a host (or it was withdrawn): nobody needs it again,
    /// whichever call asked it.
    pub fn close(&self, id: &str, now: u64) {
        self.change(now, |entries| entries.retain(|_, e| e.id != id));
    }

    /// This process ends: its calls still open are left at `now`.
    pub fn leave(&self, now: u64) {
        let me = std::process::id();
        self.change(now, |entries| {
            for entry in entries.values_mut().filter(|e| e.pid == me && e.left.is_none()) {
                entry.left = Some(now);
            }
        });
    }

    /// The question an `askuser mcp` process that is gone was waiting on for `key`.
    pub fn orphan(&self, key: &str, now: u64) -> Option<Orphan> {
        let entries = self.read();
        let entry = entries.get(key)?;
        is_orphan(entry, now).then(|| Orphan { id: entry.id.clone(), left: entry.left })
    }

    /// Takes the orphan `id` of `key` out, so that its answer goes to one run only: false
    /// when another run took it first (or a live process waits on it again).
    pub fn take(&self, key: &str, id: &str, now: u64) -> bool {
        self.change(now, |entries| {
            let taken = entries.get(key).is_some_and(|e| e.id == id && is_orphan(e, now));
            if taken {
                entries.remove(key);
            }
            taken
        })
    }

    fn read(&self) -> BTreeMap<String, Entry> {
        std::fs::read(&self.file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
    }

    /// Reads, changes and writes the file under the lock; a failure only loses the
    /// chance to resume, so it is logged, never returned.
    fn change<R>(&self, now: u64, f: impl FnOnce(&mut BTreeMap<String, Entry>) -> R) -> R {
        let _lock = Lock::take(&self.file.with_extension("lock"));
        let before = self.read();
        let mut entries = before.clone();
        let r = f(&mut entries);
        entries.retain(|_, e| now.saturating_sub(e.at) < KEEP_MS);
        if entries == before {
            return r;
        }
        while entries.len() > MAX_ENTRIES {
            let oldest = entries.iter().min_by_key(|(_, e)| e.at).map(|(k, _)| k.clone()).expect("not empty");
            entries.remove(&oldest);
        }
        let bytes = serde_json::to_vec(&entries).expect("entries serialize");
        if let Err(e) = askuser_bridge::config::write_private(&self.file, &bytes) {
            tracing::debug!("cannot note the open call for a restarted host to resume: {e:#}");
        }
        r
    }
}

/// An entry of a process that is gone, young enough to be taken up.
fn is_orphan(entry: &Entry, now: u64) -> bool {
    let fresh = now.saturating_sub(entry.at) < KEEP_MS;
    fresh && entry.pid != std::process::id() && !askuser_bridge::process::alive(entry.pid)
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
        let orphan = |at| journal.orphan(&k, at).map(|o| o.id);
        assert_eq!(orphan(2_000).as_deref(), Some("q-1"));
        assert_eq!(orphan(1_000 + KEEP_MS), None, "too old");
        let other = key("codex-mcp-client", Path::new("/work/other"), r#"[{"question":"Which?"}]"#);
        assert_eq!(journal.orphan(&other, 2_000), None, "another folder is another call");

        journal.close("q-2", 3_000);
        assert_eq!(orphan(3_000).as_deref(), Some("q-1"), "closing another question changes nothing");
        journal.close("q-1", 3_000);
        assert_eq!(orphan(3_000), None);
    }

    /// As a process that is gone left `id` open for `k`.
    fn left_by_the_dead(journal: &Journal, k: &str, id: &str, left: Option<u64>) {
        journal.open(k, id, 1_000);
        let mut entries = journal.read();
        let entry = entries.get_mut(k).unwrap();
        (entry.pid, entry.left) = (u32::MAX, left);
        std::fs::write(&journal.file, serde_json::to_vec(&entries).unwrap()).unwrap();
    }

    #[test]
    fn a_process_that_ends_notes_when_and_an_orphan_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let (k, other) = (key("a", Path::new("/p"), "q"), key("a", Path::new("/p"), "r"));
        journal.open(&k, "q-1", 1_000);
        left_by_the_dead(&journal, &other, "q-2", None);
        journal.leave(5_000);
        let entries = journal.read();
        assert_eq!(entries[&k].left, Some(5_000), "this process's open call is left now");
        assert_eq!(entries[&other].left, None, "another process's is not");
        assert_eq!(journal.orphan(&other, 6_000), Some(Orphan { id: "q-2".into(), left: None }));

        left_by_the_dead(&journal, &k, "q-1", Some(5_000));
        assert_eq!(journal.orphan(&k, 6_000), Some(Orphan { id: "q-1".into(), left: Some(5_000) }));
        assert!(!journal.take(&k, "q-9", 6_000), "not the question it left");
        assert!(journal.take(&k, "q-1", 6_000));
        assert!(!journal.take(&k, "q-1", 6_000), "once");
        assert_eq!(journal.orphan(&k, 6_000), None);
        journal.open(&k, "q-1", 7_000);
        assert!(!journal.take(&k, "q-1", 7_000), "a live process waits on it");
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
