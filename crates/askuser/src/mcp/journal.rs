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
//! One file in the data directory, `mcp-calls.jsonl`: each change is a line appended
//! under an advisory lock (`mcp-calls.lock`), and the entries are what the lines add up
//! to. Every call changes it twice on the way between host and person, so a change is
//! cheap: no `fsync` (what it guards against is a host or `askuser mcp` killed, and the
//! kernel keeps what a killed process wrote; a power cut may lose a line, which costs
//! only a resume), and no file replaced (a rename over a file waits for the new one's
//! data on ext4: 1.5-4 ms a change, issue 51), except when the lines outgrow
//! [`COMPACT_BYTES`] and are rewritten as the entries they add up to.

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

/// A line of the journal: one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Change {
    /// A call starts waiting on a question.
    Open { key: String, id: String, pid: u32, at: u64 },
    /// A question's result reached a host (or it was withdrawn).
    Close { id: String },
    /// A process ended on its own, at `at`.
    Leave { pid: u32, at: u64 },
    /// A run took an orphan up.
    Take { key: String, id: String },
    /// What the lines before added up to (the first line after a compaction).
    All { entries: BTreeMap<String, Entry> },
}

/// Past this size the lines are rewritten as the entries they add up to (a few hundred
/// calls' worth; reading them stays well under a millisecond).
const COMPACT_BYTES: u64 = 32 * 1024;

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
        Journal { file: dir.join("mcp-calls.jsonl") }
    }

    /// Notes that this process waits on question `id` for the call `key`.
    pub fn open(&self, key: &str, id: &str, now: u64) {
        let _lock = self.lock();
        self.append(&Change::Open { key: key.to_owned(), id: id.to_owned(), pid: std::process::id(), at: now }, now);
    }

    /// Question `id`'s result reached a host (or it was withdrawn): nobody needs it again,
    /// whichever call asked it.
    pub fn close(&self, id: &str, now: u64) {
        let _lock = self.lock();
        self.append(&Change::Close { id: id.to_owned() }, now);
    }

    /// This process ends: its calls still open are left at `now`.
    pub fn leave(&self, now: u64) {
        let _lock = self.lock();
        self.append(&Change::Leave { pid: std::process::id(), at: now }, now);
    }

    /// The question an `askuser mcp` process that is gone was waiting on for `key`.
    pub fn orphan(&self, key: &str, now: u64) -> Option<Orphan> {
        let entries = self.read(now);
        let entry = entries.get(key)?;
        is_orphan(entry, now).then(|| Orphan { id: entry.id.clone(), left: entry.left })
    }

    /// Takes the orphan `id` of `key` out, so that its answer goes to one run only: false
    /// when another run took it first (or a live process waits on it again).
    pub fn take(&self, key: &str, id: &str, now: u64) -> bool {
        let _lock = self.lock();
        let taken = self.read(now).get(key).is_some_and(|e| e.id == id && is_orphan(e, now));
        if taken {
            self.append(&Change::Take { key: key.to_owned(), id: id.to_owned() }, now);
        }
        taken
    }

    /// The journal's advisory lock, held until dropped: changes are made one at a time.
    fn lock(&self) -> Lock {
        Lock::take(&self.file.with_extension("lock"))
    }

    /// The entries the lines add up to, younger than [`KEEP_MS`] at `now`. A line that
    /// does not parse (a power cut mid-write) is skipped.
    fn read(&self, now: u64) -> BTreeMap<String, Entry> {
        let bytes = std::fs::read(&self.file).unwrap_or_default();
        let mut entries = BTreeMap::new();
        for line in bytes.split(|&b| b == b'\n') {
            match serde_json::from_slice(line) {
                Ok(Change::Open { key, id, pid, at }) => _ = entries.insert(key, Entry { id, pid, at, left: None }),
                Ok(Change::Close { id }) => entries.retain(|_, e: &mut Entry| e.id != id),
                Ok(Change::Leave { pid, at }) => {
                    for e in entries.values_mut().filter(|e| e.pid == pid && e.left.is_none()) {
                        e.left = Some(at);
                    }
                }
                Ok(Change::Take { key, id }) => {
                    if entries.get(&key).is_some_and(|e| e.id == id) {
                        entries.remove(&key);
                    }
                }
                Ok(Change::All { entries: all }) => entries = all,
                Err(_) => {}
            }
        }
        entries.retain(|_, e| now.saturating_sub(e.at) < KEEP_MS);
        entries
    }

    /// Appends `change` (the caller holds the lock), then compacts the lines if they
    /// outgrew [`COMPACT_BYTES`]. A failure only loses the chance to resume, so it is
    /// logged, never returned.
    fn append(&self, change: &Change, now: u64) {
        use std::io::Write;
        // The newline first: a line torn by a power cut ends there, not in this one.
        let mut line = vec![b'\n'];
        serde_json::to_writer(&mut line, change).expect("a change serializes");
        let written = askuser_bridge::files::append_private(&self.file).and_then(|mut f| {
            f.write_all(&line)?;
            f.metadata()
        });
        match written {
            Ok(meta) if meta.len() > COMPACT_BYTES => self.compact(now),
            Ok(_) => {}
            Err(e) => tracing::debug!("cannot note the open call for a restarted host to resume: {e:#}"),
        }
    }

    /// Rewrites the lines as one, the entries they add up to (the newest [`MAX_ENTRIES`]).
    fn compact(&self, now: u64) {
        let mut entries = self.read(now);
        while entries.len() > MAX_ENTRIES {
            let oldest = entries.iter().min_by_key(|(_, e)| e.at).map(|(k, _)| k.clone()).expect("not empty");
            entries.remove(&oldest);
        }
        let line = serde_json::to_vec(&Change::All { entries }).expect("entries serialize");
        if let Err(e) = askuser_bridge::files::replace_private(&self.file, &line) {
            tracing::debug!("cannot compact the journal of open calls: {e:#}");
        }
    }
}

/// An entry of a process that is gone, young enough to be taken up.
fn is_orphan(entry: &Entry, now: u64) -> bool {
    let fresh = now.saturating_sub(entry.at) < KEEP_MS;
    fresh && entry.pid != std::process::id() && !askuser_bridge::files::alive(entry.pid)
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

    /// As a process that is gone (no process has this pid) left `id` open for `k`, and
    /// said when it ended (`left`) or not (killed).
    fn left_by_the_dead(journal: &Journal, k: &str, id: &str, left: Option<u64>) {
        let dead = u32::MAX;
        journal.append(&Change::Open { key: k.to_owned(), id: id.to_owned(), pid: dead, at: 1_000 }, 1_000);
        if let Some(at) = left {
            journal.append(&Change::Leave { pid: dead, at }, at);
        }
    }

    #[test]
    fn a_call_of_a_process_that_is_gone_is_found_again_until_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let k = key("codex-mcp-client", Path::new("/work/project"), r#"[{"question":"Which?"}]"#);
        journal.open(&k, "q-1", 1_000);
        assert_eq!(journal.orphan(&k, 2_000), None, "this process still waits on it");

        left_by_the_dead(&journal, &k, "q-1", None);
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

    #[test]
    fn a_process_that_ends_notes_when_and_an_orphan_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let (k, other) = (key("a", Path::new("/p"), "q"), key("a", Path::new("/p"), "r"));
        journal.open(&k, "q-1", 1_000);
        left_by_the_dead(&journal, &other, "q-2", None);
        journal.leave(5_000);
        let entries = journal.read(5_000);
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

    /// A change appends a line and replaces no file, until the lines outgrow
    /// [`COMPACT_BYTES`]: then they are rewritten as what they add up to, which is kept.
    #[test]
    fn changes_are_appended_and_compacted_to_what_they_add_up_to() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path());
        let inode = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&journal.file).unwrap());
        let k = key("a", Path::new("/p"), "kept");
        left_by_the_dead(&journal, &k, "q-kept", None);
        let first = inode();
        journal.open("other", "q-0", 1_000);
        journal.close("q-0", 1_000);
        assert_eq!(inode(), first, "appended, not replaced");
        assert_eq!(std::fs::read_to_string(&journal.file).unwrap().lines().filter(|l| !l.is_empty()).count(), 3);

        let mut n = 0;
        while inode() == first {
            n += 1;
            assert!(n < 1_000, "never compacted");
            journal.open(&format!("k-{n}"), &format!("q-{n}"), 2_000);
            journal.close(&format!("q-{n}"), 2_000);
        }
        let lines = std::fs::read_to_string(&journal.file).unwrap();
        assert!(lines.lines().filter(|l| !l.is_empty()).count() <= 2, "compacted: {lines}");
        assert_eq!(journal.orphan(&k, 3_000).map(|o| o.id).as_deref(), Some("q-kept"), "what was open is kept");
        assert_eq!(journal.read(3_000).len(), 1, "what was closed is gone");

        // An append cut short (a power cut): its newline, then part of its line.
        std::fs::write(&journal.file, [lines.as_bytes(), b"\n{\"open\":{\"key\":\"torn"].concat()).unwrap();
        journal.close("q-none", 3_000);
        assert_eq!(journal.orphan(&k, 3_000).map(|o| o.id).as_deref(), Some("q-kept"), "a torn line is skipped");
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
