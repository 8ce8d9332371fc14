//! Telling a damaged question store from a fresh one before anything is lost.
//!
//! SQLite is forgiving in ways that lose data silently: an `askuser.db` truncated to zero
//! bytes opens as a new, empty store; a write-ahead log with a damaged frame is read up
//! to that frame and the rest (acknowledged questions and answers) is dropped at the next
//! checkpoint. So before the store opens:
//! - `store.json` records that this data directory holds a store and whether the last
//!   bridge shut down cleanly. A missing or empty `askuser.db` beside it is refused.
//! - The WAL's frames are checked the way SQLite checks them (salts and the running
//!   checksum); a damaged frame is refused, naming it (a last frame cut off by a kill is
//!   the uncommitted tail SQLite ignores, not damage).
//! - A WAL that is gone while the wal-index (`askuser.db-shm`) still counts frames in it
//!   was deleted after a crash: SQLite would start from the older main file alone,
//!   without a word. Refused. So is a WAL gone with its index after a stop that was not
//!   clean: SQLite removes both only when its last connection closes, which `store.json`
//!   records ([`closed`]); a bridge killed before that leaves both.
//!
//! and SQLite's own check runs on a read-only connection before the store opens: `quick_check` always, the full
//! `integrity_check` when the last shutdown was not clean. Every refusal keeps the files
//! as they are and says how to recover (docs/reliability.md#a-damaged-store);
//! `--accept-damaged-store` starts anyway with what SQLite can still read.

use crate::error::{Error, OrFile, Result};
use crate::files;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// The store's file name in the data directory.
pub const DB: &str = "askuser.db";
const STATE: &str = "store.json";
const HOW: &str = "docs/reliability.md#a-damaged-store";

/// What `store.json` says about the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// When this data directory's store was first opened, in ms since the epoch.
    pub created_at: u64,
    /// The last bridge on it stopped cleanly (false while one runs, or after a crash).
    pub clean: bool,
}

fn state_path(dir: &Path) -> PathBuf {
    dir.join(STATE)
}

pub fn read_state(dir: &Path) -> Option<State> {
    serde_json::from_str(&fs::read_to_string(state_path(dir)).ok()?).ok()
}

pub fn write_state(dir: &Path, state: State) -> Result<()> {
    files::write_private(&state_path(dir), serde_json::json!(state).to_string().as_bytes())
}

/// Checks the files before SQLite opens them; returns the state to keep (marked as
/// running: write it once the store is open, when its log exists) and whether the last
/// shutdown was clean. `accept` turns refusals into warnings.
pub fn before_open(dir: &Path, now_ms: u64, accept: bool) -> Result<(State, bool)> {
    let db = dir.join(DB);
    let previous = read_state(dir);
    let size = fs::metadata(&db).map(|m| m.len()).ok();
    if let Some(state) = previous {
        if size.is_none_or(|s| s == 0) {
            let what = if size.is_none() { "missing" } else { "empty (0 bytes)" };
            refuse(
                accept,
                format!(
                    "the question store {} is {what}, but this data directory held a store (created {}): it was truncated, deleted \
                     or replaced, and starting would begin an empty store as if nothing had been asked. The files are left as they \
                     are: restore {DB} from a backup, or, to start with an empty store, move {DB}, {DB}-wal, {DB}-shm and {STATE} \
                     out of {} ({HOW})",
                    db.display(),
                    files::iso8601(state.created_at),
                    dir.display()
                ),
            )?;
        }
    }
    if let Some(problem) = check_wal(&dir.join(format!("{DB}-wal")))? {
        refuse(
            accept,
            format!(
                "the question store's write-ahead log {DB}-wal is damaged: {problem}. SQLite would silently drop it from there on, \
                 with questions and answers that were already acknowledged. The files are left as they are; keep a copy of {}, \
                 then start once with --accept-damaged-store to keep what is before the damage ({HOW})",
                dir.display()
            ),
        )?;
    }
    let shm = dir.join(format!("{DB}-shm"));
    if let Some(frames) = wal_index_frames(&shm)?.filter(|n| *n > 0 && !dir.join(format!("{DB}-wal")).exists()) {
        refuse(
            accept,
            format!(
                "the question store's write-ahead log {DB}-wal is missing, but its index {DB}-shm says it held {frames} frame(s): \
                 it was deleted after the bridge stopped uncleanly, with questions and answers that were already acknowledged, \
                 and SQLite would start from the older {DB} without a word. The files are left as they are: restore {DB}-wal \
                 from a backup, or start once with --accept-damaged-store to go on with what {DB} holds ({HOW})"
            ),
        )?;
    }
    let clean = previous.is_none_or(|s| s.clean);
    if !clean && size.is_some_and(|s| s > 0) && !dir.join(format!("{DB}-wal")).exists() && !shm.exists() {
        refuse(
            accept,
            format!(
                "the last bridge on {} did not stop cleanly, and the question store's write-ahead log {DB}-wal and its index \
                 {DB}-shm are both gone: they were deleted after it stopped, with questions and answers that may have been \
                 acknowledged, and SQLite would start from the older {DB} without a word. The files are left as they are: \
                 restore {DB}-wal and {DB}-shm from a backup, or start once with --accept-damaged-store to go on with what \
                 {DB} holds ({HOW})",
                dir.display()
            ),
        )?;
    }
    let state = State { created_at: previous.map_or(now_ms, |s| s.created_at), clean: false };
    Ok((state, clean))
}

/// The store in `dir` closed and SQLite removed its log: it is whole in its file, and the
/// next start is not after a crash, however this process ends.
pub fn closed(dir: &Path) {
    let Some(state) = read_state(dir).filter(|s| !s.clean) else { return };
    if let Err(e) = write_state(dir, State { clean: true, ..state }) {
        tracing::warn!("cannot record the clean shutdown: {e:#}");
    }
}

fn refuse(accept: bool, message: String) -> Result<()> {
    if accept {
        tracing::warn!("starting anyway (--accept-damaged-store): {message}");
        return Ok(());
    }
    Err(Error::Damaged(message))
}

/// What SQLite's own check found (`integrity_check` after an unclean shutdown, else
/// `quick_check`), as a refusal unless `accept`.
pub fn check(conn_check: Result<Vec<String>, String>, full: bool, dir: &Path, accept: bool) -> Result<()> {
    let pragma = if full { "integrity_check" } else { "quick_check" };
    let problems: Vec<String> = match conn_check {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => return Ok(()),
        // A row may hold several lines, under a "*** in database main ***" heading.
        Ok(rows) => {
            rows.iter().flat_map(|r| r.lines()).filter(|l| !l.starts_with("***") && !l.trim().is_empty()).map(str::to_owned).collect()
        }
        Err(e) => vec![e],
    };
    let shown: Vec<&str> = problems.iter().take(3).map(String::as_str).collect();
    refuse(
        accept,
        format!(
            "the question store {} is damaged (SQLite's {pragma}: {}{}). The files are left as they are; keep a copy of {}, \
             then recover what is readable or start anew ({HOW})",
            dir.join(DB).display(),
            shown.join("; "),
            if problems.len() > 3 { format!("; and {} more", problems.len() - 3) } else { String::new() },
            dir.display()
        ),
    )
}

/// Checks a WAL file as SQLite reads it: the header's magic and checksum, then each
/// frame of the current generation (the header's salts) against the running checksum.
/// A frame of the current generation that fails is damage; frames with other salts
/// are left over from before the last checkpoint and are ignored, as SQLite does.
/// Returns what is wrong, or None for a sound (or absent, or empty) log.
pub fn check_wal(path: &Path) -> Result<Option<String>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).or_file("read", path),
    };
    Ok(wal_problem(&bytes))
}

/// How many frames the wal-index at `path` says the WAL holds (its header's `mxFrame`, in
/// this machine's byte order, as SQLite writes it), or None without an initialized index.
fn wal_index_frames(path: &Path) -> Result<Option<u32>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).or_file("read", path),
    };
    // WalIndexHdr: iVersion, unused, iChange (u32 each), isInit (u8) at 12, …, mxFrame at 16.
    if bytes.len() < 20 || bytes[12] != 1 {
        return Ok(None);
    }
    Ok(Some(u32::from_ne_bytes(bytes[16..20].try_into().expect("four bytes"))))
}

const WAL_HEADER: usize = 32;
const FRAME_HEADER: usize = 24;

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing from `s`.
fn checksum(data: &[u8], big_endian: bool, mut s: (u32, u32)) -> (u32, u32) {
    for pair in data.chunks_exact(8) {
        let word = |i: usize| {
            let w = [pair[i], pair[i + 1], pair[i + 2], pair[i + 3]];
            if big_endian {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        s.0 = s.0.wrapping_add(word(0)).wrapping_add(s.1);
        s.1 = s.1.wrapping_add(word(4)).wrapping_add(s.0);
    }
    s
}

fn wal_problem(b: &[u8]) -> Option<String> {
    if b.is_empty() {
        return None;
    }
    if b.len() < WAL_HEADER {
        return Some(format!("it is {} bytes long, shorter than its own header", b.len()));
    }
    let big_endian = match be32(b, 0) {
        0x377f_0682 => false,
        0x377f_0683 => true,
        other => return Some(format!("its header does not start like a SQLite log (magic {other:#x})")),
    };
    let page = be32(b, 8) as usize;
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Some(format!("its header names an impossible page size ({page})"));
    }
    let salts = (be32(b, 16), be32(b, 20));
    let mut sum = checksum(&b[..24], big_endian, (0, 0));
    if sum != (be32(b, 24), be32(b, 28)) {
        return Some("its header's checksum does not match".into());
    }
    let frame = FRAME_HEADER + page;
    let frames = (b.len() - WAL_HEADER) / frame;
    for i in 0..frames {
        let at = WAL_HEADER + i * frame;
        if (be32(b, at + 8), be32(b, at + 12)) != salts {
            // A frame from before the last checkpoint: SQLite stops reading here, and so
            // would anything after it be stale.
            return None;
        }
        sum = checksum(&b[at..at + 8], big_endian, sum);
        sum = checksum(&b[at + FRAME_HEADER..at + frame], big_endian, sum);
        if sum != (be32(b, at + 16), be32(b, at + 20)) {
            // SQLite writes a frame's header and its page apart: a process killed between
            // the two leaves a last frame that fails, of a transaction that never
            // committed (nothing in it was acknowledged); SQLite ignores it. A failing
            // frame with more of this generation after it is damage.
            let later = (i + 1..frames).any(|j| {
                let at = WAL_HEADER + j * frame;
                (be32(b, at + 8), be32(b, at + 12)) == salts
            });
            return later.then(|| format!("frame {} of {frames} (byte {at}) fails its checksum", i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL of `n` frames written as SQLite writes them.
    fn wal(n: usize, page: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [0x377f_0682u32, 3_007_000, page as u32, 0, 0x1111, 0x2222] {
            b.extend(w.to_be_bytes());
        }
        let mut sum = checksum(&b, false, (0, 0));
        b.extend(sum.0.to_be_bytes());
        b.extend(sum.1.to_be_bytes());
        for i in 0..n {
            let mut header = Vec::new();
            for w in [i as u32 + 1, if i + 1 == n { n as u32 } else { 0 }, 0x1111, 0x2222] {
                header.extend(w.to_be_bytes());
            }
            let body: Vec<u8> = (0..page).map(|j| (i * 7 + j) as u8).collect();
            sum = checksum(&header[..8], false, sum);
            sum = checksum(&body, false, sum);
            header.extend(sum.0.to_be_bytes());
            header.extend(sum.1.to_be_bytes());
            b.extend(header);
            b.extend(body);
        }
        b
    }

    #[test]
    fn a_sound_log_passes_and_a_flipped_byte_is_named() {
        let good = wal(3, 512);
        assert_eq!(wal_problem(&good), None);
        assert_eq!(wal_problem(&[]), None, "an empty log is sound");
        let mut bad = good.clone();
        bad[WAL_HEADER + (FRAME_HEADER + 512) + 100] ^= 0x40;
        assert_eq!(wal_problem(&bad).as_deref(), Some("frame 2 of 3 (byte 568) fails its checksum"));
        let mut header = good.clone();
        header[10] ^= 1;
        assert!(wal_problem(&header).is_some());
        assert!(wal_problem(&good[..20]).unwrap().contains("shorter than its own header"));
    }

    #[test]
    fn a_last_frame_cut_off_by_a_kill_is_the_uncommitted_tail_not_damage() {
        // Its header was written, its page not (still an older page's bytes).
        let mut torn = wal(3, 512);
        let last = WAL_HEADER + 2 * (FRAME_HEADER + 512);
        torn[last + FRAME_HEADER + 7] ^= 0x55;
        assert_eq!(wal_problem(&torn), None);
        // The same in a frame with more of its generation after it is damage.
        let mut middle = wal(4, 512);
        middle[last + FRAME_HEADER + 7] ^= 0x55;
        assert_eq!(wal_problem(&middle).as_deref(), Some("frame 3 of 4 (byte 1104) fails its checksum"));
    }

    #[test]
    fn frames_from_an_older_generation_are_ignored() {
        let mut b = wal(3, 512);
        let third = WAL_HEADER + 2 * (FRAME_HEADER + 512);
        b[third + 8] ^= 0xff; // another salt: left over from before a checkpoint
        b[third + FRAME_HEADER] ^= 0xff;
        assert_eq!(wal_problem(&b), None);
    }

    #[test]
    fn the_checksum_is_sqlites() {
        // Two 8-byte pairs, little-endian words: s0 = 1 + 0, s1 = 2 + 1; then s0 += 3 + 3,
        // s1 += 4 + 7.
        let data = [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0];
        assert_eq!(checksum(&data, false, (0, 0)), (7, 14));
    }
}
