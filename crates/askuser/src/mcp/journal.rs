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
//! [`COMPACT_BYTES`] and are rewritten as the entries they add up to. Since the file is
//! only appended to or replaced, a process keeps what it read of it and reads on from
//! there (the same file, no shorter), not the whole file per call; and keeps the file and
//! its lock open (issue 51).

use crate::lock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    /// What this process knows of the file; also held while it changes it, so that this
    /// process's changes are made one at a time as well.
    known: Arc<Mutex<Known>>,
}

/// The file as this process last read it, and its handles on it.
#[derive(Debug, Default)]
struct Known {
    /// The file read (device and inode) and how much of it: the lines before `read`
    /// add up to `entries` (of every age).
    file: Option<(File, Option<(u64, u64)>)>,
    read: u64,
    entries: BTreeMap<String, Entry>,
    /// Where changes are appended, with its device and inode: opened again when the
    /// file was replaced.
    append: Option<(File, Option<(u64, u64)>)>,
    /// The advisory lock's file.
    lock: Option<File>,
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
        Journal { file: dir.join("mcp-calls.jsonl"), known: Arc::default() }
    }

    /// Notes that this process waits on question `id` for the call `key`.
    pub fn open(&self, key: &str, id: &str, now: u64) {
        self.change(&Change::Open { key: key.to_owned(), id: id.to_owned(), pid: std::process::id(), at: now }, now);
    }

    /// Question `id`'s result reached a host (or it was withdrawn): nobody needs it again,
    /// whichever call asked it.
    pub fn close(&self, id: &str, now: u64) {
        self.change(&Change::Close { id: id.to_owned() }, now);
    }

    /// This process ends: its calls still open are left at `now`.
    pub fn leave(&self, now: u64) {
        self.change(&Change::Leave { pid: std::process::id(), at: now }, now);
    }

    /// The question an `askuser mcp` process that is gone was waiting on for `key`.
    pub fn orphan(&self, key: &str, now: u64) -> Option<Orphan> {
        let mut known = lock(&self.known);
        let entry = self.entry(&mut known, key, now)?;
        is_orphan(entry, now).then(|| Orphan { id: entry.id.clone(), left: entry.left })
    }

    /// Takes the orphan `id` of `key` out, so that its answer goes to one run only: false
    /// when another run took it first (or a live process waits on it again).
    pub fn take(&self, key: &str, id: &str, now: u64) -> bool {
        self.locked(|known| {
            let taken = self.entry(known, key, now).is_some_and(|e| e.id == id && is_orphan(e, now));
            if taken {
                self.append(known, &Change::Take { key: key.to_owned(), id: id.to_owned() }, now);
            }
            taken
        })
    }

    /// Appends `change` under the lock.
    fn change(&self, change: &Change, now: u64) {
        self.locked(|known| self.append(known, change, now));
    }

    /// Runs `f` holding the journal's advisory lock (on `mcp-calls.lock`, opened once):
    /// changes are made one at a time, among processes and in this one.
    fn locked<T>(&self, f: impl FnOnce(&mut Known) -> T) -> T {
        let mut known = lock(&self.known);
        if known.lock.is_none() {
            let path = self.file.with_extension("lock");
            known.lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).ok();
        }
        #[cfg(unix)]
        if let Some(file) = &known.lock {
            let _ = rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive);
        }
        let out = f(&mut known);
        #[cfg(unix)]
        if let Some(file) = &known.lock {
            let _ = rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock);
        }
        out
    }

    /// `key`'s entry, if younger than [`KEEP_MS`] at `now`.
    fn entry<'a>(&self, known: &'a mut Known, key: &str, now: u64) -> Option<&'a Entry> {
        self.catch_up(known);
        known.entries.get(key).filter(|e| now.saturating_sub(e.at) < KEEP_MS)
    }

    /// The entries the lines add up to, younger than [`KEEP_MS`] at `now`.
    #[cfg(test)]
    fn read(&self, now: u64) -> BTreeMap<String, Entry> {
        let mut known = lock(&self.known);
        self.catch_up(&mut known);
        known.entries.iter().filter(|(_, e)| now.saturating_sub(e.at) < KEEP_MS).map(|(k, e)| (k.clone(), e.clone())).collect()
    }

    /// Reads what was appended since this process last read the file, or all of it when
    /// it is another file (replaced: compacted) or shorter than what was read. A line that
    /// does not parse (a power cut mid-write) is skipped; at the end, it is read again
    /// next time, in case it was still being written.
    fn catch_up(&self, known: &mut Known) {
        let Ok(meta) = std::fs::metadata(&self.file) else {
            (known.file, known.read, known.entries) = (None, 0, BTreeMap::new());
            return;
        };
        let same = known.file.as_ref().is_some_and(|(_, id)| id.is_some() && *id == identity(&meta));
        if !same || meta.len() < known.read {
            (known.file, known.read, known.entries) = (None, 0, BTreeMap::new());
        }
        if meta.len() == known.read {
            return;
        }
        let mut len = meta.len();
        if known.file.is_none() {
            let Ok(file) = File::open(&self.file) else { return };
            // Its own length: a compaction may have put another file there since.
            let Ok(meta) = file.metadata() else { return };
            len = meta.len();
            known.file = Some((file, identity(&meta)));
        }
        let Some((file, _)) = &known.file else { return };
        let mut file: &File = file;
        let mut bytes = Vec::new();
        let new = len.saturating_sub(known.read);
        if file.seek(std::io::SeekFrom::Start(known.read)).and_then(|_| file.take(new).read_to_end(&mut bytes)).is_err() {
            (known.file, known.read, known.entries) = (None, 0, BTreeMap::new());
            return;
        }
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        let mut consumed = bytes.len();
        for (n, line) in lines.iter().enumerate() {
            match serde_json::from_slice(line) {
                Ok(change) => apply(&mut known.entries, change),
                // The last line, not whole: from its newline on, read again next time.
                Err(_) if n + 1 == lines.len() && n > 0 && !line.is_empty() => consumed = bytes.len() - line.len() - 1,
                Err(_) => {}
            }
        }
        known.read += consumed as u64;
    }

    /// Appends `change` (the caller holds the lock), then compacts the lines if they
    /// outgrew [`COMPACT_BYTES`]. A failure only loses the chance to resume, so it is
    /// logged, never returned.
    fn append(&self, known: &mut Known, change: &Change, now: u64) {
        // The newline first: a line torn by a power cut ends there, not in this one.
        let mut line = vec![b'\n'];
        serde_json::to_writer(&mut line, change).expect("a change serializes");
        let written = self.appending(known).and_then(|f| {
            // Under the lock, so nobody else appends meanwhile: the length before, plus this line.
            let before = f.metadata()?.len();
            f.write_all(&line)?;
            Ok(before + line.len() as u64)
        });
        match written {
            Ok(len) if len > COMPACT_BYTES => self.compact(known, now),
            Ok(_) => {}
            Err(e) => {
                known.append = None;
                tracing::debug!("cannot note the open call for a restarted host to resume: {e:#}")
            }
        }
    }

    /// The file to append to: the one open, unless the file at the path is another
    /// (replaced by a compaction, or removed).
    fn appending<'a>(&self, known: &'a mut Known) -> std::io::Result<&'a mut File> {
        let at_path = std::fs::symlink_metadata(&self.file).ok().and_then(|m| identity(&m));
        let current = known.append.as_ref().is_some_and(|(_, id)| id.is_some() && *id == at_path);
        if !current {
            let file = askuser_bridge::files::append_private(&self.file)?;
            let meta = file.metadata()?;
            known.append = Some((file, identity(&meta)));
        }
        Ok(&mut known.append.as_mut().expect("opened").0)
    }

    /// Rewrites the lines as one, the entries they add up to (the newest [`MAX_ENTRIES`]).
    fn compact(&self, known: &mut Known, now: u64) {
        self.catch_up(known);
        let mut entries: BTreeMap<String, Entry> =
            known.entries.iter().filter(|(_, e)| now.saturating_sub(e.at) < KEEP_MS).map(|(k, e)| (k.clone(), e.clone())).collect();
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

/// A file's device and inode: which file a path names now (none where that is not known:
/// the whole file is read each time).
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    return Some((std::os::unix::fs::MetadataExt::dev(meta), std::os::unix::fs::MetadataExt::ino(meta)));
    #[cfg(not(unix))]
    None
}

/// What one line changes.
fn apply(entries: &mut BTreeMap<String, Entry>, change: Change) {
    match change {
        Change::Open { key, id, pid, at } => _ = entries.insert(key, Entry { id, pid, at, left: None }),
        Change::Close { id } => entries.retain(|_, e| e.id != id),
        Change::Leave { pid, at } => {
            for e in entries.values_mut().filter(|e| e.pid == pid && e.left.is_none()) {
                e.left = Some(at);
            }
        }
        Change::Take { key, id } => {
            if entries.get(&key).is_some_and(|e| e.id == id) {
                entries.remove(&key);
            }
        }
        Change::All { entries: all } => *entries = all,
    }
}

/// An entry of a process that is gone, young enough to be taken up.
fn is_orphan(entry: &Entry, now: u64) -> bool {
    let fresh = now.saturating_sub(entry.at) < KEEP_MS;
    fresh && entry.pid != std::process::id() && !askuser_bridge::files::alive(entry.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As a process that is gone (no process has this pid) left `id` open for `k`, and
    /// said when it ended (`left`) or not (killed).
    fn left_by_the_dead(journal: &Journal, k: &str, id: &str, left: Option<u64>) {
        let dead = u32::MAX;
        journal.change(&Change::Open { key: k.to_owned(), id: id.to_owned(), pid: dead, at: 1_000 }, 1_000);
        if let Some(at) = left {
            journal.change(&Change::Leave { pid: dead, at }, at);
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

    /// Each process keeps what it read and reads on from there (issue 51): another
    /// process's changes are seen, its compaction (a new file) too, and a last line read
    /// while half written is read again whole.
    #[test]
    fn what_was_read_is_kept_and_what_others_add_is_read_on() {
        let dir = tempfile::tempdir().unwrap();
        let (mine, theirs) = (Journal::new(dir.path()), Journal::new(dir.path()));
        let k = key("a", Path::new("/p"), "q");
        left_by_the_dead(&theirs, &k, "q-1", None);
        assert_eq!(mine.orphan(&k, 2_000).map(|o| o.id).as_deref(), Some("q-1"));
        let read = lock(&mine.known).read;
        assert_eq!(read, std::fs::metadata(&mine.file).unwrap().len());

        // Bytes already read are not read again: a line changed in place goes unseen.
        let bytes = std::fs::read(&mine.file).unwrap();
        std::fs::write(&mine.file, String::from_utf8(bytes.clone()).unwrap().replace("q-1", "q-2")).unwrap();
        assert_eq!(mine.orphan(&k, 2_000).map(|o| o.id).as_deref(), Some("q-1"), "read once");
        assert_eq!(Journal::new(dir.path()).orphan(&k, 2_000).map(|o| o.id).as_deref(), Some("q-2"));
        std::fs::write(&mine.file, bytes).unwrap();

        theirs.close("q-1", 2_000);
        assert_eq!(mine.orphan(&k, 2_000), None, "another process's change is read on from where it stopped");

        // Half a line, then the rest: read whole once written.
        let other = key("a", Path::new("/p"), "r");
        let line = serde_json::to_string(&Change::Open { key: other.clone(), id: "q-3".into(), pid: u32::MAX, at: 1_000 }).unwrap();
        let (head, tail) = line.split_at(20);
        let mut file = askuser_bridge::files::append_private(&mine.file).unwrap();
        file.write_all(format!("\n{head}").as_bytes()).unwrap();
        assert_eq!(mine.orphan(&other, 2_000), None, "half a line is no change");
        file.write_all(tail.as_bytes()).unwrap();
        assert_eq!(mine.orphan(&other, 2_000).map(|o| o.id).as_deref(), Some("q-3"), "the whole line, once written");

        // Another process compacts: a new file, read from its start.
        let first = lock(&mine.known).file.as_ref().unwrap().1;
        let mut n = 0;
        while std::fs::metadata(&theirs.file).ok().and_then(|m| identity(&m)) == first {
            n += 1;
            assert!(n < 1_000, "never compacted");
            theirs.open(&format!("k-{n}"), &format!("c-{n}"), 2_000);
            theirs.close(&format!("c-{n}"), 2_000);
        }
        assert_eq!(mine.orphan(&other, 2_000).map(|o| o.id).as_deref(), Some("q-3"), "kept through the other's compaction");
        mine.close("q-3", 2_000);
        assert_eq!(theirs.orphan(&other, 2_000), None, "appended to the compacted file, not the old one");
        assert_eq!(mine.read(2_000).len(), 0);
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
