//! MCP tasks (protocol revision 2025-11-25) for `tools/call`: a host that asks for a
//! task gets a handle at once and polls `tasks/get` (each poll answers at once, so no
//! timeout of the host's ever runs out on a person), then fetches the tool result with
//! `tasks/result`. A task's id is its question's id, so the durable store behind the
//! bridge is the task's state: a task this process does not know (after a restart of
//! the host's `askuser mcp`) is found again in the bridge.

use crate::lock;
use serde_json::{json, Value};
use std::sync::Mutex;
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// How often a host should poll, in milliseconds.
pub const POLL_MS: u64 = 1000;
/// Tasks kept in memory; beyond this the oldest finished ones are forgotten (the
/// bridge still has their questions).
const KEEP: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

struct Entry {
    id: String,
    created: u64,
    updated: u64,
    status: Status,
    message: Option<String>,
    ttl: Option<u64>,
    /// The `tools/call` result, once final.
    result: Option<Value>,
    done: watch::Sender<bool>,
    abort: Option<AbortHandle>,
}

impl Entry {
    fn json(&self) -> Value {
        let mut task = json!({
            "taskId": self.id,
            "status": self.status.as_str(),
            "ttl": self.ttl,
            "createdAt": iso8601(self.created),
            "lastUpdatedAt": iso8601(self.updated),
            "pollInterval": POLL_MS,
        });
        if let Some(m) = &self.message {
            task["statusMessage"] = m.clone().into();
        }
        task
    }
}

#[derive(Default)]
pub struct Tasks {
    entries: Mutex<Vec<Entry>>,
}

/// Why `tasks/cancel` was refused.
pub enum CancelRefused {
    Unknown,
    Final(&'static str),
}

impl Tasks {
    /// Starts tracking a working task, or returns the one with this id.
    pub fn create(&self, id: &str, ttl: Option<u64>, message: String, now: u64) -> (Value, bool) {
        let mut entries = lock(&self.entries);
        if let Some(e) = entries.iter().find(|e| e.id == id) {
            return (e.json(), false);
        }
        if entries.len() >= KEEP {
            if let Some(i) = entries.iter().position(|e| e.status != Status::Working) {
                entries.remove(i);
            }
        }
        let (done, _) = watch::channel(false);
        let e = Entry {
            id: id.to_owned(),
            created: now,
            updated: now,
            status: Status::Working,
            message: Some(message),
            ttl,
            result: None,
            done,
            abort: None,
        };
        let task = e.json();
        entries.push(e);
        (task, true)
    }

    pub fn set_abort(&self, id: &str, abort: AbortHandle) {
        if let Some(e) = lock(&self.entries).iter_mut().find(|e| e.id == id) {
            e.abort = Some(abort);
        }
    }

    /// Makes a working task final; the task's new state, or None if it already was.
    pub fn finish(&self, id: &str, status: Status, result: Value, message: Option<String>, now: u64) -> Option<Value> {
        let mut entries = lock(&self.entries);
        let e = entries.iter_mut().find(|e| e.id == id && e.status == Status::Working)?;
        e.status = status;
        e.result = Some(result);
        e.message = message;
        e.updated = now;
        e.abort = None;
        e.done.send_replace(true);
        Some(e.json())
    }

    pub fn get(&self, id: &str) -> Option<Value> {
        lock(&self.entries).iter().find(|e| e.id == id).map(Entry::json)
    }

    pub fn list(&self) -> Vec<Value> {
        lock(&self.entries).iter().map(Entry::json).collect()
    }

    /// Waits until task `id` is final and returns its result (None: unknown task).
    pub async fn result(&self, id: &str) -> Option<Value> {
        let mut done = lock(&self.entries).iter().find(|e| e.id == id)?.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
        lock(&self.entries).iter().find(|e| e.id == id).and_then(|e| e.result.clone())
    }

    /// Cancels a working task: stops its wait and returns its new state.
    pub fn cancel(&self, id: &str, result: Value, now: u64) -> Result<Value, CancelRefused> {
        let abort = {
            let entries = lock(&self.entries);
            let e = entries.iter().find(|e| e.id == id).ok_or(CancelRefused::Unknown)?;
            if e.status != Status::Working {
                return Err(CancelRefused::Final(e.status.as_str()));
            }
            e.abort.clone()
        };
        if let Some(a) = abort {
            a.abort();
        }
        self.finish(id, Status::Cancelled, result, Some("cancelled by the client; the question was withdrawn".into()), now)
            .ok_or(CancelRefused::Final("completed"))
    }
}

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

    #[tokio::test]
    async fn a_task_goes_from_working_to_its_result_once() {
        let tasks = Tasks::default();
        let (task, new) = tasks.create("q1", Some(60_000), "waiting".into(), 1);
        assert!(new);
        assert_eq!((task["status"].as_str(), task["ttl"].as_u64()), (Some("working"), Some(60_000)));
        assert!(!tasks.create("q1", None, "again".into(), 2).1, "the same id is the same task");
        let done = tasks.finish("q1", Status::Completed, json!({"content": []}), None, 3).unwrap();
        assert_eq!(done["status"], "completed");
        assert!(tasks.finish("q1", Status::Failed, json!({}), None, 4).is_none(), "a final task stays final");
        assert_eq!(tasks.result("q1").await, Some(json!({"content": []})));
        assert!(matches!(tasks.cancel("q1", json!({}), 5), Err(CancelRefused::Final("completed"))));
        assert!(matches!(tasks.cancel("nope", json!({}), 5), Err(CancelRefused::Unknown)));
        assert_eq!(tasks.list().len(), 1);
    }
}
