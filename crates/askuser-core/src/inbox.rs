//! The inbox: every pending question set the bridge announced, which one is active,
//! and agent presence. Plain data updated by
//! [`Inbox::apply`] from [`BrowserEvent`]s; no DOM, no clock (the time is passed in).

use crate::protocol::{AgentPresence, BrowserEvent, QuestionRecord, Refused, Viewer};
use crate::Status;
use std::collections::{BTreeMap, BTreeSet};

/// Where a question set stands, as far as this window knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Pending,
    /// Answered (or declined) here; waiting for the bridge to confirm.
    Sent,
}

/// The active question set closed elsewhere: what the page says about it, beside the
/// next question (it never blocks it).
#[derive(Debug, Clone, PartialEq)]
pub struct Closed {
    pub id: String,
    /// What happened, with the answer given.
    pub text: String,
    /// What the person had typed here, kept so it is not lost without a word.
    pub typed: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub record: QuestionRecord,
    pub fate: Fate,
}

/// A heading in the inbox: one agent session, and its sub-agents' sessions after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub session: String,
    pub name: String,
    /// `None` when the bridge has not said.
    pub connected: Option<bool>,
    /// 0 for a session, 1 for a sub-agent's session under its parent.
    pub depth: usize,
    /// Question set ids, oldest first.
    pub items: Vec<String>,
}

/// Which question sets the inbox lists, for a viewer who is a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Show {
    /// Those for this person.
    Mine,
    /// Those for this person or one of their teams.
    Team,
    /// Everything this connection may see.
    #[default]
    All,
}

impl Show {
    pub const ALL: [Show; 3] = [Show::Mine, Show::Team, Show::All];

    pub fn label(self) -> &'static str {
        match self {
            Show::Mine => "Mine",
            Show::Team => "Team",
            Show::All => "All",
        }
    }
}

/// Something the page should tell the person.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    NewQuestion { agent: String, text: String },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inbox {
    /// This connection's id, as the bridge names it in `answered.by`.
    pub client: Option<String>,
    /// By id; [`Inbox::groups`] gives the order shown.
    items: BTreeMap<String, Item>,
    pub agents: BTreeMap<String, AgentPresence>,
    pub active: Option<String>,
    /// Ids answered here; kept so a snapshot does not offer them again.
    sent: BTreeSet<String>,
    /// The last active question set that closed elsewhere, until [`Inbox::dismiss`].
    pub closed: Option<Closed>,
    /// Who this connection is, as the bridge said (none: not a person, show all).
    pub viewer: Option<Viewer>,
    /// Which question sets [`Inbox::groups`] lists.
    pub show: Show,
}

/// The person or team `record` is for, if any.
pub fn assignee(record: &QuestionRecord) -> Option<&str> {
    record.request.agent.as_ref()?.assignee.as_deref()
}

/// Whether `viewer` is who `record` is for: everyone, for a question for no one; the
/// person, or a member of the team, it names.
pub fn is_for(record: &QuestionRecord, viewer: &Viewer) -> bool {
    assignee(record).is_none_or(|to| to == viewer.person || viewer.teams.iter().any(|t| t == to))
}

/// From when (ms) `viewer` sees pending question set `record`, or never (`None`). The
/// bridge's one rule of who sees what, so every route, socket and notice applies the
/// same: a viewer who is no one (the admin token, a device of no one) sees everything
/// from its start; a person sees a question set for no one, for them or for a team of
/// theirs from its start, and anyone else's once it escalates (`escalate_after` ms after
/// it was asked, or sooner when its reminders escalate it ([`crate::remind::escalate_after`]);
/// never without either). A closed set is history, which everyone sees.
pub fn seen_from(record: &QuestionRecord, viewer: Option<&Viewer>, escalate_after: Option<u64>) -> Option<u64> {
    match record.status {
        Status::Pending => waiting_from(record, viewer, escalate_after),
        _ => Some(record.created_at),
    }
}

/// From when `viewer` sees `record` while it waits, whether it still does or not.
fn waiting_from(record: &QuestionRecord, viewer: Option<&Viewer>, escalate_after: Option<u64>) -> Option<u64> {
    match viewer {
        Some(viewer) if !is_for(record, viewer) => {
            crate::remind::escalate_after(&record.request, escalate_after).map(|after| record.created_at.saturating_add(after))
        }
        _ => Some(record.created_at),
    }
}

/// Whether `viewer` sees `record` at `now` (ms): see [`seen_from`].
pub fn sees(record: &QuestionRecord, viewer: Option<&Viewer>, escalate_after: Option<u64>, now: u64) -> bool {
    seen_from(record, viewer, escalate_after).is_some_and(|at| at <= now)
}

/// Whether `record` is `viewer`'s own at `now`: waiting, it sees it ([`sees`]); closed,
/// it saw it while it waited (from [`seen_from`]'s start until it closed). What a page
/// session may read and answer (the first-paint page, http/first.rs): history aside,
/// anyone else's closed set is as if it did not exist.
pub fn own(record: &QuestionRecord, viewer: Option<&Viewer>, escalate_after: Option<u64>, now: u64) -> bool {
    let until = match record.status {
        Status::Pending => now,
        _ => record.answered_at.unwrap_or(now).min(now),
    };
    waiting_from(record, viewer, escalate_after).is_some_and(|at| at <= until)
}

/// A question set in one line, for lists and notices: its first question's first
/// line, or an approval's tool and what it would do ("Bash: rm -rf build").
pub fn headline(request: &crate::Request) -> String {
    match &request.approval {
        Some(a) if a.is_permission() => format!("{}: {}", a.tool, a.summary()),
        _ => request.questions.first().map(|q| crate::text::summary(&q.question)).unwrap_or_default(),
    }
}

pub fn agent_name(record: &QuestionRecord) -> String {
    record.request.agent.as_ref().map(|a| a.name.clone()).filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "An agent".into())
}

fn session_of(record: &QuestionRecord) -> String {
    match &record.request.agent {
        Some(a) => a.session_id.clone().unwrap_or_else(|| format!("agent:{}", a.name)),
        None => "unknown".into(),
    }
}

impl Inbox {
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.get(id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Item> {
        self.items.get_mut(id)
    }

    fn insert(&mut self, record: QuestionRecord, fate: Fate) {
        self.items.insert(record.id.clone(), Item { record, fate });
    }

    /// Whether the agent that asked `record` is still waiting for the answer (None: the
    /// bridge has not said).
    pub fn agent_waiting(&self, record: &QuestionRecord) -> Option<bool> {
        let session = record.request.agent.as_ref()?.session_id.as_ref()?;
        self.agents.get(session).map(|a| a.connected)
    }

    /// Question sets still waiting for someone.
    pub fn pending_count(&self) -> usize {
        self.items.values().filter(|i| i.fate == Fate::Pending).count()
    }

    /// Question sets answered here that the bridge has not confirmed yet.
    pub fn sent_count(&self) -> usize {
        self.items.values().filter(|i| i.fate == Fate::Sent).count()
    }

    /// Takes in one event. By reference: a front end hands the same event to every
    /// part of it, and only what is kept here is copied.
    pub fn apply(&mut self, event: &BrowserEvent) -> Vec<Notice> {
        let mut notices = Vec::new();
        match event {
            BrowserEvent::Snapshot { client, questions, agents, viewer, .. } => {
                self.client = Some(client.clone());
                self.viewer = viewer.clone();
                self.agents = agents.iter().map(|a| (a.session_id.clone(), a.clone())).collect();
                let known: BTreeSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
                // Drop the vanished ones; if the active one vanished, say so.
                let vanished: Vec<String> = self.items.keys().filter(|id| !known.contains(id.as_str())).cloned().collect();
                for id in vanished {
                    let fate = self.get(&id).map(|i| i.fate);
                    let what =
                        (fate == Some(Fate::Pending)).then(|| format!("{} was closed while this window was offline.", self.title(&id)));
                    self.close(&id, what);
                }
                for q in questions {
                    if q.status != Status::Pending {
                        continue;
                    }
                    let fate = if self.sent.contains(&q.id) { Fate::Sent } else { Fate::Pending };
                    match self.get_mut(&q.id) {
                        Some(item) => {
                            item.record = q.clone();
                            item.fate = fate;
                        }
                        None => self.insert(q.clone(), fate),
                    }
                }
            }
            BrowserEvent::Asked { question } => {
                if question.status == Status::Pending && self.get(&question.id).is_none() {
                    notices.push(Notice::NewQuestion { agent: agent_name(question), text: headline(&question.request) });
                    self.insert(question.clone(), Fate::Pending);
                }
            }
            BrowserEvent::Answered { id, by, result } => {
                let by_me = self.sent.remove(id) || (by.is_some() && *by == self.client);
                let what = (!by_me).then(|| {
                    let place = match by.as_deref() {
                        Some(b) if !b.starts_with("c-") => format!("via {b}"),
                        _ => "in another window".to_owned(),
                    };
                    if result.status == Status::Cancelled {
                        format!("{} was declined {place}.", self.title(id))
                    } else {
                        let given: Vec<String> = result.answers.iter().map(|a| a.answer.joined()).collect();
                        format!("{} was answered {place}: {}.", self.title(id), given.join("; "))
                    }
                });
                self.close(id, what);
            }
            BrowserEvent::Withdrawn { id, status } => {
                self.sent.remove(id);
                let what = if *status == Status::TimedOut {
                    format!("{} timed out.", self.title(id))
                } else {
                    format!("The agent withdrew {}.", self.title(id))
                };
                self.close(id, Some(what));
            }
            BrowserEvent::Agent { agent } => {
                self.agents.insert(agent.session_id.clone(), agent.clone());
            }
            BrowserEvent::Error(Refused { id: Some(id), .. }) => {
                // The bridge refused our answer: offer the question again if it is still open.
                if self.sent.remove(id) {
                    if let Some(item) = self.get_mut(id) {
                        if item.fate == Fate::Sent {
                            item.fate = Fate::Pending;
                        }
                    }
                }
            }
            BrowserEvent::Error(_) | BrowserEvent::Ack { .. } | BrowserEvent::History { .. } => {}
        }
        self.ensure_active();
        notices
    }

    /// A final question set leaves the list. If it was the active one, `what` (what
    /// happened) stays as [`Inbox::closed`] and the next question becomes active.
    fn close(&mut self, id: &str, what: Option<String>) {
        if self.active.as_deref() == Some(id) {
            if let Some(text) = what {
                self.closed = Some(Closed { id: id.to_owned(), text, typed: None });
            }
            self.active = None;
        }
        self.items.remove(id);
    }

    /// "“First question”" (and how many more) of question set `id`.
    fn title(&self, id: &str) -> String {
        let Some(item) = self.get(id) else { return "A question".into() };
        let qs = &item.record.request.questions;
        let first = headline(&item.record.request);
        match qs.len() {
            0 | 1 => format!("“{first}”"),
            n => format!("“{first}” (and {} more)", n - 1),
        }
    }

    /// This window answered `id`: it is no longer offered; the next one becomes active.
    pub fn mark_sent(&mut self, id: &str) {
        self.sent.insert(id.to_owned());
        if let Some(item) = self.get_mut(id) {
            item.fate = Fate::Sent;
        }
        if self.active.as_deref() == Some(id) {
            self.active = None;
        }
        self.ensure_active();
    }

    /// The question sets shown, as a snapshot in JSON, for a front end to keep and show
    /// again while the bridge cannot be reached (applied like any snapshot; the next real
    /// one replaces it). In inbox order, as many as fit in `budget` bytes; agents as last
    /// seen (their presence may be stale by then).
    pub fn keep(&self, budget: usize) -> String {
        let mut questions = Vec::new();
        let mut used = 0;
        for id in self.order() {
            let Some(item) = self.get(&id) else { continue };
            used += serde_json::to_string(&item.record).map_or(usize::MAX, |t| t.len());
            if used > budget {
                break;
            }
            questions.push(item.record.clone());
        }
        let snapshot = BrowserEvent::Snapshot {
            client: "kept".into(),
            questions,
            agents: self.agents.values().cloned().collect(),
            more: false,
            viewer: self.viewer.clone(),
        };
        serde_json::to_string(&snapshot).unwrap_or_default()
    }

    /// Forgets the closed notice.
    pub fn dismiss(&mut self) {
        self.closed = None;
    }

    /// Keeps the active question set if it is still shown, else picks the first pending one.
    pub fn ensure_active(&mut self) {
        if let Some(id) = &self.active {
            if self.get(id).is_some_and(|i| i.fate != Fate::Sent) {
                return;
            }
        }
        self.active = self.order().into_iter().find(|id| self.get(id).is_some_and(|i| i.fate == Fate::Pending));
    }

    /// Activates `id` if it can be answered.
    pub fn select(&mut self, id: &str) {
        if self.get(id).is_some_and(|i| i.fate == Fate::Pending) {
            self.active = Some(id.to_owned());
        }
    }

    /// Moves to the next (`forward`) or previous pending question set, in inbox order, wrapping.
    pub fn step(&mut self, forward: bool) {
        let order: Vec<String> = self.order().into_iter().filter(|id| self.get(id).is_some_and(|i| i.fate == Fate::Pending)).collect();
        if order.is_empty() {
            return;
        }
        let n = order.len();
        let next = match self.active.as_ref().and_then(|a| order.iter().position(|id| id == a)) {
            Some(p) if forward => (p + 1) % n,
            Some(p) => (p + n - 1) % n,
            None => 0,
        };
        let id = order[next].clone();
        self.select(&id);
    }

    /// Every shown question set id in inbox order (groups flattened).
    pub fn order(&self) -> Vec<String> {
        self.groups().into_iter().flat_map(|g| g.items).collect()
    }

    fn parent_of(&self, session: &str, record: Option<&QuestionRecord>) -> Option<String> {
        self.agents
            .get(session)
            .and_then(|a| a.parent_session_id.clone())
            .or_else(|| record.and_then(|r| r.request.agent.as_ref()?.parent_session_id.clone()))
            .filter(|p| p != session)
    }

    /// The top-most ancestor of `session` (bounded, so a cycle cannot hang).
    fn root_of(&self, session: &str, record: Option<&QuestionRecord>) -> String {
        let mut current = session.to_owned();
        let mut rec = record;
        for _ in 0..8 {
            match self.parent_of(&current, rec) {
                Some(p) if p != session => {
                    current = p;
                    rec = None;
                }
                _ => break,
            }
        }
        current
    }

    /// Whether `record` is listed under `show` (everything, for a viewer who is no one).
    pub fn shows(&self, record: &QuestionRecord, show: Show) -> bool {
        let Some(viewer) = &self.viewer else { return true };
        let to = assignee(record);
        match show {
            Show::All => true,
            Show::Mine => to == Some(viewer.person.as_str()),
            Show::Team => to.is_some() && is_for(record, viewer),
        }
    }

    /// How many pending question sets each of [`Show::ALL`] lists.
    pub fn show_counts(&self) -> [usize; 3] {
        Show::ALL.map(|show| self.items.values().filter(|i| i.fate == Fate::Pending && self.shows(&i.record, show)).count())
    }

    /// The inbox as shown: sessions ordered by their oldest question, each followed by
    /// its sub-agents' sessions; question sets oldest first; only those [`Inbox::show`]
    /// lists (the active one always).
    pub fn groups(&self) -> Vec<Group> {
        struct Session {
            root: String,
            oldest: u64,
            ids: Vec<String>,
            name: String,
        }
        let mut oldest_first: Vec<&Item> = self
            .items
            .values()
            .filter(|i| self.shows(&i.record, self.show) || self.active.as_deref() == Some(i.record.id.as_str()))
            .collect();
        oldest_first.sort_by(|a, b| a.record.created_at.cmp(&b.record.created_at).then_with(|| a.record.id.cmp(&b.record.id)));
        let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
        for item in oldest_first {
            let s = session_of(&item.record);
            let root = self.root_of(&s, Some(&item.record));
            let e = sessions.entry(s).or_insert_with(|| Session {
                root,
                oldest: item.record.created_at,
                ids: vec![],
                name: agent_name(&item.record),
            });
            e.oldest = e.oldest.min(item.record.created_at);
            e.ids.push(item.record.id.clone());
        }
        let mut roots: BTreeMap<String, u64> = BTreeMap::new();
        for s in sessions.values() {
            let r = roots.entry(s.root.clone()).or_insert(s.oldest);
            *r = (*r).min(s.oldest);
        }
        let mut roots: Vec<(String, u64)> = roots.into_iter().collect();
        roots.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        let mut out = Vec::new();
        for (root, _) in roots {
            let own = sessions.get(&root);
            let presence = self.agents.get(&root);
            out.push(Group {
                session: root.clone(),
                name: presence.map(|a| a.name.clone()).or_else(|| own.map(|o| o.name.clone())).unwrap_or_else(|| "Parent session".into()),
                connected: presence.map(|a| a.connected),
                depth: 0,
                items: own.map(|o| o.ids.clone()).unwrap_or_default(),
            });
            let mut children: Vec<(&String, &Session)> = sessions.iter().filter(|(s, v)| v.root == root && **s != root).collect();
            children.sort_by(|a, b| a.1.oldest.cmp(&b.1.oldest).then_with(|| a.0.cmp(b.0)));
            for (s, v) in children {
                let presence = self.agents.get(s);
                out.push(Group {
                    session: s.clone(),
                    name: presence.map(|a| a.name.clone()).unwrap_or_else(|| v.name.clone()),
                    connected: presence.map(|a| a.connected),
                    depth: 1,
                    items: v.ids.clone(),
                });
            }
        }
        out
    }
}

/// The first `rows` question sets of `groups` in order, with the groups they are in, and
/// how many were left out: the list a page shows stays the same size however many wait.
pub fn first_rows(groups: Vec<Group>, rows: usize) -> (Vec<Group>, usize) {
    let mut left = rows;
    let mut hidden = 0;
    let mut shown = Vec::new();
    for mut g in groups {
        let n = g.items.len();
        if left == 0 && n > 0 {
            hidden += n;
            continue;
        }
        if n > left {
            hidden += n - left;
            g.items.truncate(left);
        }
        left -= g.items.len();
        shown.push(g);
    }
    (shown, hidden)
}

/// How long something has waited ([`crate::text::waited`]).
pub use crate::text::waited;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(v: serde_json::Value) -> BrowserEvent {
        serde_json::from_value(v).unwrap()
    }

    fn record(id: &str, agent: &str, session: &str, created: u64) -> serde_json::Value {
        json!({"id": id, "status": "pending", "createdAt": created, "request": {
            "agent": {"name": agent, "sessionId": session}, "questions": [{"question": format!("{id}?")}]
        }})
    }

    fn answered(id: &str, by: &str) -> serde_json::Value {
        json!({"type": "answered", "id": id, "by": by, "result": {"id": id, "status": "answered", "answered": true, "answeredAt": 9,
            "answers": [{"question": format!("{id}?"), "answer": "yes", "selectedOptions": [], "custom": "yes", "wasCustom": true}]}})
    }

    #[test]
    fn who_sees_a_question_set_and_from_when() {
        let for_ = |to: Option<&str>, status: &str| -> QuestionRecord {
            let mut r = record("q", "a", "s", 1_000);
            r["status"] = json!(status);
            if let Some(to) = to {
                r["request"]["agent"]["assignee"] = json!(to);
            }
            serde_json::from_value(r).unwrap()
        };
        let alice = Viewer { person: "alice".into(), teams: vec!["db".into()] };
        let hour = Some(3_600_000);
        // No one's, hers, her team's: from the start.
        for to in [None, Some("alice"), Some("db")] {
            assert_eq!(seen_from(&for_(to, "pending"), Some(&alice), None), Some(1_000), "{to:?}");
        }
        // Bob's: once it escalates, never without escalation; a viewer who is no one sees it.
        let bobs = for_(Some("bob"), "pending");
        assert_eq!(seen_from(&bobs, Some(&alice), hour), Some(3_601_000));
        assert_eq!(seen_from(&bobs, Some(&alice), None), None);
        assert_eq!(seen_from(&bobs, None, None), Some(1_000));
        assert!(!sees(&bobs, Some(&alice), hour, 3_600_999));
        assert!(sees(&bobs, Some(&alice), hour, 3_601_000));
        // Closed, it is history: everyone sees it.
        assert!(sees(&for_(Some("bob"), "answered"), Some(&alice), None, 1_000));
        // But it is hers only if she saw it while it waited.
        let closed = |to: Option<&str>, at: u64| {
            let mut r = for_(to, "answered");
            r.answered_at = Some(at);
            r
        };
        assert!(own(&closed(None, 2_000), Some(&alice), None, 5_000));
        assert!(own(&closed(Some("db"), 2_000), Some(&alice), None, 5_000));
        assert!(!own(&closed(Some("bob"), 2_000), Some(&alice), None, 5_000), "bob's, never escalated");
        assert!(!own(&closed(Some("bob"), 2_000), Some(&alice), hour, 4_000_000), "closed before it escalated to her");
        assert!(own(&closed(Some("bob"), 3_700_000), Some(&alice), hour, 4_000_000), "closed after it escalated");
        assert!(own(&closed(Some("bob"), 2_000), None, None, 5_000), "a viewer who is no one saw it");
        assert!(own(&bobs, Some(&alice), hour, 3_601_000) && !own(&bobs, Some(&alice), hour, 3_600_999), "waiting: as `sees`");
    }

    #[test]
    fn reminders_escalate_a_set_to_everyone_sooner() {
        let mut r: QuestionRecord = serde_json::from_value(record("q", "a", "s", 1_000)).unwrap();
        r.request.agent.as_mut().unwrap().assignee = Some("bob".into());
        r.request.remind_after_seconds = Some(60);
        let alice = Viewer { person: "alice".into(), teams: vec![] };
        assert_eq!(seen_from(&r, Some(&alice), Some(3_600_000)), Some(121_000), "at twice the reminder's delay");
        assert_eq!(seen_from(&r, Some(&alice), None), Some(121_000), "also where the bridge never escalates");
        let bob = Viewer { person: "bob".into(), teams: vec![] };
        assert_eq!(seen_from(&r, Some(&bob), None), Some(1_000), "his from the start");
    }

    fn snapshot() -> Inbox {
        let mut inbox = Inbox::default();
        inbox.apply(&ev(json!({"type": "snapshot", "client": "me", "agents": [
            {"sessionId": "child", "name": "helper", "parentSessionId": "root", "connected": true}
        ], "questions": [record("a", "other", "lone", 5), record("b", "helper", "child", 1), record("c", "main", "root", 3)]})));
        inbox
    }

    #[test]
    fn mine_team_and_all_list_what_is_for_this_person_their_teams_and_everyone() {
        let to = |id: &str, assignee: Option<&str>| {
            let mut r = record(id, "bot", id, 1);
            if let Some(a) = assignee {
                r["request"]["agent"]["assignee"] = a.into();
            }
            r
        };
        let mut inbox = Inbox::default();
        inbox.apply(&ev(json!({"type": "snapshot", "client": "me", "agents": [],
            "viewer": {"person": "alice", "teams": ["db"]},
            "questions": [to("mine", Some("alice")), to("team", Some("db")), to("bob", Some("bob")), to("anyone", None)]})));
        assert_eq!(inbox.viewer.as_ref().map(|v| v.person.as_str()), Some("alice"));
        let listed = |inbox: &Inbox| {
            let mut ids = inbox.order();
            ids.sort();
            ids
        };
        assert_eq!(listed(&inbox), ["anyone", "bob", "mine", "team"], "all by default");
        inbox.select("mine");
        inbox.show = Show::Team;
        assert_eq!(listed(&inbox), ["mine", "team"]);
        inbox.show = Show::Mine;
        assert_eq!(listed(&inbox), ["mine"]);
        assert_eq!(inbox.show_counts(), [1, 2, 4]);
        // The active question set stays listed whatever the filter.
        inbox.select("anyone");
        assert_eq!(listed(&inbox), ["anyone", "mine"]);
        // A connection that is no one (the admin token) lists everything.
        let mut nobody = Inbox { show: Show::Mine, ..Inbox::default() };
        nobody.apply(&ev(json!({"type": "snapshot", "client": "me", "agents": [], "questions": [to("bob", Some("bob"))]})));
        assert_eq!(nobody.order(), ["bob"]);
    }

    #[test]
    fn a_kept_inbox_shows_the_same_questions_again() {
        let mut inbox = snapshot();
        inbox.mark_sent("b");
        let kept = inbox.keep(1 << 20);
        let mut again = Inbox::default();
        again.apply(&serde_json::from_str(&kept).unwrap());
        assert_eq!(again.order(), inbox.order());
        // What was sent is marked again from the front end's outbox.
        assert_eq!((again.pending_count(), again.sent_count()), (3, 0));
        again.mark_sent("b");
        assert_eq!((again.pending_count(), again.sent_count()), (2, 1));
        assert_eq!(again.groups(), inbox.groups(), "sub-agents stay under their parents");
        // Only what fits, in inbox order.
        let first = inbox.order()[0].clone();
        let one = serde_json::to_string(&inbox.get(&first).unwrap().record).unwrap().len();
        let mut fewer = Inbox::default();
        fewer.apply(&serde_json::from_str(&inbox.keep(one + 1)).unwrap());
        assert_eq!(fewer.order(), [first]);
        let mut none = Inbox::default();
        none.apply(&serde_json::from_str(&inbox.keep(0)).unwrap());
        assert_eq!(none.pending_count(), 0);
    }

    #[test]
    fn the_inbox_knows_when_nobody_waits_for_an_answer() {
        let mut inbox = snapshot();
        let of = |inbox: &Inbox, id: &str| inbox.agent_waiting(&inbox.get(id).unwrap().record);
        assert_eq!((of(&inbox, "b"), of(&inbox, "a")), (Some(true), None));
        inbox.apply(&ev(json!({"type": "agent", "agent": {"sessionId": "child", "name": "helper", "connected": false}})));
        assert_eq!(of(&inbox, "b"), Some(false));
        inbox.select("b");
        inbox.apply(&ev(answered("b", "the agent host's own dialog (MCP elicitation)")));
        let said = inbox.closed.as_ref().map(|c| c.text.clone()).unwrap_or_default();
        assert_eq!(said, "“b?” was answered via the agent host's own dialog (MCP elicitation): yes.");
    }

    #[test]
    fn sub_agents_sit_under_their_parent_oldest_first() {
        let inbox = snapshot();
        let groups: Vec<(String, usize, Vec<String>, Option<bool>)> =
            inbox.groups().into_iter().map(|g| (g.name, g.depth, g.items, g.connected)).collect();
        assert_eq!(
            groups,
            [
                ("main".to_owned(), 0, vec!["c".to_owned()], None),
                ("helper".to_owned(), 1, vec!["b".to_owned()], Some(true)),
                ("other".to_owned(), 0, vec!["a".to_owned()], None),
            ]
        );
        assert_eq!(inbox.active.as_deref(), Some("c"), "the first in inbox order is active");
        assert_eq!(inbox.order(), ["c", "b", "a"]);
    }

    #[test]
    fn the_list_shows_the_first_rows_and_counts_the_rest() {
        let groups = snapshot().groups();
        let names = |gs: &[Group]| gs.iter().map(|g| (g.name.clone(), g.items.len())).collect::<Vec<_>>();
        let (all, hidden) = first_rows(groups.clone(), 10);
        assert_eq!((all, hidden), (groups.clone(), 0));
        let (two, hidden) = first_rows(groups.clone(), 2);
        assert_eq!(names(&two), [("main".to_owned(), 1), ("helper".to_owned(), 1)]);
        assert_eq!(hidden, 1);
        let (none, hidden) = first_rows(groups, 0);
        assert!(none.is_empty());
        assert_eq!(hidden, 3);
    }

    #[test]
    fn stepping_wraps_and_skips_what_was_sent() {
        let mut inbox = snapshot();
        inbox.step(true);
        assert_eq!(inbox.active.as_deref(), Some("b"));
        inbox.step(false);
        inbox.step(false);
        assert_eq!(inbox.active.as_deref(), Some("a"), "wraps backwards");
        inbox.mark_sent("a");
        assert_eq!(inbox.active.as_deref(), Some("c"));
        inbox.step(true);
        inbox.step(true);
        assert_eq!(inbox.active.as_deref(), Some("c"), "a is no longer offered");
    }

    #[test]
    fn a_reconnect_does_not_offer_a_queued_answer_again() {
        let mut inbox = snapshot();
        inbox.mark_sent("c");
        inbox.apply(&ev(json!({"type": "snapshot", "client": "me2", "agents": [], "questions": [record("c", "main", "root", 3)]})));
        assert_eq!(inbox.get("c").map(|i| i.fate), Some(Fate::Sent));
        assert!(inbox.get("b").is_none());
        assert_eq!(
            inbox.closed.as_ref().map(|c| c.text.as_str()),
            Some("“b?” was closed while this window was offline."),
            "the active one vanished: say so"
        );
        assert!(inbox.get("a").is_none());
        inbox.apply(&ev(answered("c", "me2")));
        assert!(inbox.get("c").is_none());
        assert!(inbox.closed.is_none() || inbox.closed.as_ref().is_some_and(|c| c.id != "c"), "answered here: nothing to say");
    }

    #[test]
    fn closed_elsewhere_steps_aside_and_says_what_was_answered() {
        let mut inbox = snapshot();
        assert_eq!(inbox.active.as_deref(), Some("c"));
        inbox.apply(&ev(answered("c", "c-9")));
        assert!(inbox.get("c").is_none());
        assert_eq!(inbox.active.as_deref(), Some("b"), "the next question at once");
        assert_eq!(inbox.closed.as_ref().map(|c| c.text.as_str()), Some("“c?” was answered in another window: yes."));
        inbox.apply(&ev(json!({"type": "withdrawn", "id": "a", "status": "timed_out"})));
        assert!(inbox.get("a").is_none(), "an inactive one just leaves");
        assert_eq!(inbox.closed.as_ref().map(|c| c.id.as_str()), Some("c"), "and says nothing");
        inbox.apply(&ev(json!({"type": "withdrawn", "id": "b", "status": "withdrawn"})));
        assert_eq!(inbox.closed.as_ref().map(|c| c.text.as_str()), Some("The agent withdrew “b?”."));
        inbox.dismiss();
        assert!(inbox.closed.is_none());
        assert_eq!(inbox.pending_count(), 0);
    }

    #[test]
    fn a_refused_answer_is_offered_again() {
        let mut inbox = snapshot();
        inbox.mark_sent("c");
        inbox.apply(&ev(json!({"type": "error", "ref": "r1", "id": "c", "error": {"code": "invalid", "message": "no"}})));
        assert_eq!(inbox.get("c").map(|i| i.fate), Some(Fate::Pending));
    }

    #[test]
    fn new_questions_are_announced_once() {
        let mut inbox = snapshot();
        let asked = ev(json!({"type": "asked", "question": record("d", "main", "root", 7)}));
        assert_eq!(inbox.apply(&asked), [Notice::NewQuestion { agent: "main".into(), text: "d?".into() }]);
        assert_eq!(inbox.apply(&asked), []);
        assert_eq!(inbox.order(), ["c", "d", "b", "a"], "joins its session's group");
    }

    #[test]
    fn waiting_times_read_well() {
        assert_eq!(waited(4_000), "4 s");
        assert_eq!(waited(150_000), "2 min");
        assert_eq!(waited(3_900_000), "1 h 5 min");
        assert_eq!(waited(3 * 86_400_000), "3 d");
    }
}
