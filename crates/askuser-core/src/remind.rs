//! A wait that never goes silent: a question set may ask to be sent again after
//! `remindAfterSeconds` (once to the places it reached, then, as it escalates, to
//! everyone's), and, only when its caller asked for it, to end without an answer after
//! `defaultAfterSeconds`: an approval is denied, a question returns no answer with the
//! reason ([`reason`]). Never an invented answer. What is due when, as pure functions of
//! the request and the times passed in; the bridge's notifier and hub carry it out, and
//! the inbox shows it.

use crate::model::Request;

/// The longest reminder or default delay: 30 days.
pub const MAX_SECONDS: u64 = 30 * 24 * 3600;

/// Which reminder: the set again to the places it reached, then (at twice the delay) it
/// escalates: everyone's places get it too, and those that had it a last reminder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reminder {
    Again,
    Escalate,
}

impl Reminder {
    /// How the bridge's records of what was sent name it (`remind1:slack:C0123`).
    pub fn key(self) -> &'static str {
        match self {
            Reminder::Again => "remind1",
            Reminder::Escalate => "remind2",
        }
    }

    /// Which one `key` ([`Reminder::key`]) names.
    pub fn from_key(key: &str) -> Option<Reminder> {
        [Reminder::Again, Reminder::Escalate].into_iter().find(|r| r.key() == key)
    }
}

/// What a caller asked of a set's wait: the two fields of a [`Request`], read on their
/// own where the bridge builds the request (an approval's body).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Patience {
    pub remind_after_seconds: Option<u64>,
    pub default_after_seconds: Option<u64>,
}

impl Patience {
    /// `remindAfterSeconds` and `defaultAfterSeconds` of a JSON body, each checked; an
    /// error names the field, what was expected and what came.
    pub fn from_json(body: &serde_json::Value) -> Result<Patience, String> {
        let read = |field: &str| -> Result<Option<u64>, String> {
            match body.get(field) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(n) => check_seconds(field, n).map(Some),
                    None => Err(format!("{field}: expected a whole number of seconds, got {}", crate::error::describe(v))),
                },
            }
        };
        Ok(Patience { remind_after_seconds: read("remindAfterSeconds")?, default_after_seconds: read("defaultAfterSeconds")? })
    }

    /// Sets them on `request`.
    pub fn apply(self, request: &mut Request) {
        request.remind_after_seconds = self.remind_after_seconds;
        request.default_after_seconds = self.default_after_seconds;
    }
}

/// A duration as a person types it (`90`, `90s`, `10m`, `1h30m`, `2d`: a bare number is
/// seconds) in whole seconds, between 1 second and [`MAX_SECONDS`]; the error names
/// `field`, what was expected and what came.
pub fn parse_duration(field: &str, text: &str) -> Result<u64, String> {
    let bad = || format!("{field}: expected a duration such as 90s, 10m, 1h30m or 2d (a bare number is seconds), got {text:?}");
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut units = 0;
    for c in trimmed.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n.checked_mul(unit).and_then(|s| total.checked_add(s)).ok_or_else(bad)?;
        digits.clear();
        units += 1;
    }
    if !digits.is_empty() {
        if units > 0 {
            return Err(bad()); // `1h30`: 30 what?
        }
        total = digits.parse().map_err(|_| bad())?;
    }
    check_seconds(field, total)
}

/// `seconds` if it is a delay a set may ask for (1 s to 30 days).
pub fn check_seconds(field: &str, seconds: u64) -> Result<u64, String> {
    match seconds {
        0 => Err(format!("{field}: expected at least 1 second, got 0")),
        s if s > MAX_SECONDS => Err(format!("{field}: expected at most 30 days ({MAX_SECONDS} seconds), got {s} seconds")),
        s => Ok(s),
    }
}

/// When `request`, asked at `created_at` (ms), ends without a person: its own timeout or
/// its default, whichever is first.
fn ends_at(request: &Request, created_at: u64) -> Option<u64> {
    let at = |secs: Option<u64>| secs.and_then(|s| s.checked_mul(1000)).and_then(|ms| created_at.checked_add(ms));
    match (at(request.timeout_seconds), at(request.default_after_seconds)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// When `request`'s default applies (ms), if its caller asked for one.
pub fn default_at(request: &Request, created_at: u64) -> Option<u64> {
    request.default_after_seconds.and_then(|s| s.checked_mul(1000)).and_then(|ms| created_at.checked_add(ms))
}

/// Every reminder of `request` asked at `created_at`, with when it goes out (ms), in
/// order; none at or after the set ends ([`ends_at`]).
pub fn reminders(request: &Request, created_at: u64) -> Vec<(u64, Reminder)> {
    let Some(every) = request.remind_after_seconds.and_then(|s| s.checked_mul(1000)) else { return vec![] };
    let end = ends_at(request, created_at).unwrap_or(u64::MAX);
    [(1, Reminder::Again), (2, Reminder::Escalate)]
        .into_iter()
        .filter_map(|(n, r)| every.checked_mul(n).and_then(|ms| created_at.checked_add(ms)).map(|at| (at, r)))
        .filter(|(at, _)| *at < end)
        .collect()
}

/// The reminders still to send at `now`: each one due (at or before `now`) or coming,
/// but of those due only the latest (after a bridge was down through two, the person
/// gets one, not both).
pub fn remaining(request: &Request, created_at: u64, now: u64) -> Vec<(u64, Reminder)> {
    let all = reminders(request, created_at);
    let due = all.iter().filter(|(at, _)| *at <= now).count();
    all.into_iter().skip(due.saturating_sub(1)).collect()
}

/// The next reminder after `now`, if any: what the inbox shows.
pub fn next_reminder(request: &Request, created_at: u64, now: u64) -> Option<(u64, Reminder)> {
    reminders(request, created_at).into_iter().find(|(at, _)| *at > now)
}

/// How long after it was asked (ms) `request` escalates to everyone: the bridge's
/// `escalate_after` or its own reminders' escalation, whichever is first (`None`: never).
pub fn escalate_after(request: &Request, escalate_after: Option<u64>) -> Option<u64> {
    let own = request.remind_after_seconds.and_then(|s| s.checked_mul(2000));
    match (escalate_after, own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `seconds` as a person says it: `45 s`, `10 min`, `1 h 30 min`, `2 d`.
pub fn span(seconds: u64) -> String {
    let (d, h, m, s) = (seconds / 86_400, seconds % 86_400 / 3600, seconds % 3600 / 60, seconds % 60);
    let parts: Vec<String> =
        [(d, "d"), (h, "h"), (m, "min"), (s, "s")].into_iter().filter(|(n, _)| *n > 0).map(|(n, unit)| format!("{n} {unit}")).collect();
    match parts.is_empty() {
        true => "0 s".into(),
        false => parts.join(" "),
    }
}

/// Why a set ended with its default: `no answer after 30 min; default applied`.
pub fn reason(default_after_seconds: u64) -> String {
    format!("no answer after {}; default applied", span(default_after_seconds))
}

/// A time of day (`14:05`) of `ms` since the Unix epoch, in a place `utc_offset_minutes`
/// east of UTC.
pub fn time_of_day(ms: u64, utc_offset_minutes: i32) -> String {
    let local = ms as i64 / 60_000 + i64::from(utc_offset_minutes);
    let of_day = local.rem_euclid(24 * 60);
    format!("{:02}:{:02}", of_day / 60, of_day % 60)
}

/// What a reminder says first: `Reminder: still waiting since 14:05 (10 min)`.
pub fn reminder_line(created_at: u64, now: u64, utc_offset_minutes: i32) -> String {
    let waited = now.saturating_sub(created_at) / 1000;
    format!("Reminder: still waiting since {} ({})", time_of_day(created_at, utc_offset_minutes), span(waited))
}

/// `seconds` to come, as the inbox counts down: seconds under a minute, else whole
/// minutes rounded up (`7 min`, `1 h 5 min`, `2 d`).
fn about(seconds: u64) -> String {
    // The inbox's own wording ([`crate::text::waited`]), so the page carries one.
    crate::text::waited(match seconds {
        s if s < 60 => s * 1000,
        s => s.div_ceil(60) * 60_000,
    })
}

/// What the inbox says at `now` of a waiting set's reminders and default: `next
/// reminder in 7 min · no answer (default) in 27 min` (an approval: `denied (default)
/// in …`); `None` when it asked for neither, or both are past.
pub fn schedule_line(request: &Request, created_at: u64, now: u64) -> Option<String> {
    let mut parts = vec![];
    if let Some((at, reminder)) = next_reminder(request, created_at, now) {
        let what = match reminder {
            Reminder::Again => "next reminder",
            Reminder::Escalate => "escalates to everyone",
        };
        parts.push(format!("{what} in {}", about((at - now).div_ceil(1000))));
    }
    if let Some(at) = default_at(request, created_at).filter(|at| *at > now) {
        let what = if request.approval.is_some() { "denied (default)" } else { "no answer (default)" };
        parts.push(format!("{what} in {}", about((at - now).div_ceil(1000))));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1000;
    const MIN: u64 = 60 * S;

    fn request(remind: Option<u64>, default: Option<u64>, timeout: Option<u64>) -> Request {
        Request { remind_after_seconds: remind, default_after_seconds: default, timeout_seconds: timeout, ..Request::default() }
    }

    #[test]
    fn durations_read_as_people_type_them() {
        let ok = |t: &str| parse_duration("--remind-after", t);
        assert_eq!(ok("90"), Ok(90));
        assert_eq!(ok("90s"), Ok(90));
        assert_eq!(ok("10m"), Ok(600));
        assert_eq!(ok(" 1h30m "), Ok(5400));
        assert_eq!(ok("2d"), Ok(172_800));
        assert_eq!(ok("30d"), Ok(MAX_SECONDS));
        let e = ok("10 minutes").unwrap_err();
        assert_eq!(e, "--remind-after: expected a duration such as 90s, 10m, 1h30m or 2d (a bare number is seconds), got \"10 minutes\"");
        for bad in ["", "m", "1h30", "-5m", "1.5h", "99999999999999999999s", "10x"] {
            assert!(ok(bad).unwrap_err().starts_with("--remind-after: expected a duration"), "{bad:?}");
        }
        assert_eq!(ok("0m").unwrap_err(), "--remind-after: expected at least 1 second, got 0");
        assert_eq!(ok("31d").unwrap_err(), "--remind-after: expected at most 30 days (2592000 seconds), got 2678400 seconds");
    }

    #[test]
    fn an_approvals_body_names_the_wrong_field() {
        let read = |v: serde_json::Value| Patience::from_json(&v);
        assert_eq!(
            read(serde_json::json!({"remindAfterSeconds": 600})),
            Ok(Patience { remind_after_seconds: Some(600), default_after_seconds: None })
        );
        assert_eq!(
            read(serde_json::json!({"defaultAfterSeconds": "30m"})).unwrap_err(),
            "defaultAfterSeconds: expected a whole number of seconds, got the string \"30m\""
        );
        assert_eq!(
            read(serde_json::json!({"remindAfterSeconds": 0})).unwrap_err(),
            "remindAfterSeconds: expected at least 1 second, got 0"
        );
    }

    #[test]
    fn a_reminder_then_an_escalation_and_none_after_the_set_ends() {
        let at = 1_000_000;
        let r = request(Some(600), None, None);
        assert_eq!(reminders(&r, at), vec![(at + 10 * MIN, Reminder::Again), (at + 20 * MIN, Reminder::Escalate)]);
        assert_eq!(next_reminder(&r, at, at), Some((at + 10 * MIN, Reminder::Again)));
        assert_eq!(next_reminder(&r, at, at + 10 * MIN), Some((at + 20 * MIN, Reminder::Escalate)));
        assert_eq!(next_reminder(&r, at, at + 20 * MIN), None, "after the escalation, no more: everyone has it");
        // A default at 15 min: the escalation would come after it, so it never does.
        let r = request(Some(600), Some(900), None);
        assert_eq!(reminders(&r, at), vec![(at + 10 * MIN, Reminder::Again)]);
        assert_eq!(default_at(&r, at), Some(at + 15 * MIN));
        // A timeout first ends it too; a reminder at the very end is not sent.
        assert_eq!(reminders(&request(Some(600), None, Some(600)), at), vec![]);
        assert_eq!(reminders(&request(None, Some(60), None), at), vec![], "no reminders unless asked");
        assert_eq!(default_at(&request(Some(60), None, None), at), None, "no default unless asked");
    }

    #[test]
    fn a_bridge_down_through_two_reminders_sends_the_latest_only() {
        let at = 0;
        let r = request(Some(60), None, None);
        assert_eq!(remaining(&r, at, 0), reminders(&r, at));
        assert_eq!(remaining(&r, at, MIN), reminders(&r, at), "the first is due now: both remain");
        assert_eq!(remaining(&r, at, 90 * S), reminders(&r, at), "the first is due, the second coming");
        assert_eq!(remaining(&r, at, 3 * MIN), vec![(2 * MIN, Reminder::Escalate)], "both due: the latest only");
    }

    #[test]
    fn reminders_escalate_a_set_before_the_bridge_would() {
        let r = request(Some(60), None, None);
        assert_eq!(escalate_after(&r, Some(300 * S)), Some(2 * MIN));
        assert_eq!(escalate_after(&r, None), Some(2 * MIN), "even on a bridge that never escalates");
        assert_eq!(escalate_after(&request(Some(600), None, None), Some(300 * S)), Some(300 * S), "the bridge's first");
        assert_eq!(escalate_after(&request(None, None, None), None), None);
    }

    #[test]
    fn the_inbox_counts_down_to_the_next_reminder_and_the_default() {
        let at = 1_000_000;
        let r = request(Some(600), Some(1800), None);
        assert_eq!(schedule_line(&r, at, at).as_deref(), Some("next reminder in 10 min · no answer (default) in 30 min"));
        assert_eq!(schedule_line(&r, at, at + 3 * MIN + 20 * S).as_deref(), Some("next reminder in 7 min · no answer (default) in 27 min"));
        assert_eq!(
            schedule_line(&r, at, at + 10 * MIN).as_deref(),
            Some("escalates to everyone in 10 min · no answer (default) in 20 min")
        );
        assert_eq!(schedule_line(&r, at, at + 29 * MIN + 30 * S).as_deref(), Some("no answer (default) in 30 s"));
        assert_eq!(schedule_line(&r, at, at + 30 * MIN), None, "due: the bridge ends it");
        let mut approval = request(None, Some(3900), None);
        approval.approval =
            Some(crate::model::Approval { tool: "Bash".into(), input: Default::default(), reason: None, cwd: None, tool_use_id: None });
        assert_eq!(schedule_line(&approval, at, at).as_deref(), Some("denied (default) in 1 h 5 min"));
        assert_eq!(schedule_line(&request(None, None, Some(60)), at, at), None, "neither asked for");
    }

    #[test]
    fn what_a_reminder_and_a_default_say() {
        assert_eq!(reason(1800), "no answer after 30 min; default applied");
        assert_eq!(span(5400 + 5), "1 h 30 min 5 s");
        assert_eq!(span(2 * 86_400), "2 d");
        let noon = 20_000 * 86_400 * S + 12 * 3600 * S;
        assert_eq!(reminder_line(noon, noon + 10 * MIN, 0), "Reminder: still waiting since 12:00 (10 min)");
        assert_eq!(reminder_line(noon, noon + 10 * MIN, 90), "Reminder: still waiting since 13:30 (10 min)");
        assert_eq!(time_of_day(noon, -13 * 60), "23:00", "the day before, west of UTC");
        assert_eq!(Reminder::from_key(Reminder::Escalate.key()), Some(Reminder::Escalate));
    }
}
