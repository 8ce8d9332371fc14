//! The terminal dialog's state: the core's inbox and one core [`Dialog`] per question
//! set (so what was chosen or typed survives reconnects and switching), the line
//! editor for typed answers and notes, and what to tell the person. Keys and bridge
//! updates go in; what to send to the bridge comes out. No terminal, no socket here.

use super::editor::{Edit, Editor};
use askuser_core::client::State;
use askuser_core::dialog::{Dialog, DialogOptions, Effect, Event};
use askuser_core::inbox::{agent_name, Fate, Inbox, Notice, Show};
use askuser_core::protocol::{BrowserEvent, Refused};
use askuser_core::Selection;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::HashMap;

/// What the terminal dialog asks of its driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Answer {
        id: String,
        answers: Vec<Selection>,
    },
    Decline {
        id: String,
        chat: bool,
    },
    /// Ring the terminal's bell (a new question).
    Bell,
    Quit,
}

/// Something said to the person ("Sent.", "The bridge refused: …"), and the question set
/// it is about: it is shown with that question set, or while none is shown, never under
/// another one.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub text: String,
    pub about: Option<String>,
}

/// Where the keys go besides the dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The dialog (and, while it edits, the typed answer).
    Dialog,
    /// A note for the agent about the current question, being written.
    Note(Editor),
}

pub struct App {
    pub inbox: Inbox,
    pub connection: (State, u32),
    dialogs: HashMap<String, Dialog>,
    /// The typed answer of the active dialog, with its cursor.
    pub editor: Editor,
    pub mode: Mode,
    /// The last thing said ("Sent.", "The bridge refused: …"); see [`App::status`].
    pub status: Option<Said>,
    pub bell: bool,
    /// Rows the option list may show (from the terminal's height).
    viewport: usize,
    /// How far an approval's command or diff is scrolled (PgUp/PgDn), and whether its
    /// end has been on screen: only then may it be allowed.
    pub body: BodyScroll,
    /// How far the shown option's preview is scrolled (PgUp/PgDn, outside an approval).
    pub preview: PreviewScroll,
}

/// Lines PgDn moves an approval's body.
pub const BODY_PAGE: usize = 10;
/// Lines PgDn moves an option's preview.
pub const PREVIEW_PAGE: usize = 10;

/// The scroll of the active approval's body, reset for each question set.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BodyScroll {
    pub id: Option<String>,
    pub top: usize,
    pub seen_end: bool,
}

/// The scroll of the preview shown: which one (question set, question, option) and its
/// first line shown; another preview starts at its top.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PreviewScroll {
    pub of: Option<(String, usize, usize)>,
    pub top: usize,
}

impl App {
    pub fn new(bell: bool) -> App {
        App {
            inbox: Inbox::default(),
            connection: (State::Connecting, 0),
            dialogs: HashMap::new(),
            editor: Editor::default(),
            mode: Mode::Dialog,
            status: None,
            bell,
            viewport: 7,
            body: BodyScroll::default(),
            preview: PreviewScroll::default(),
        }
    }

    /// The active question set's dialog, made on first use.
    pub fn dialog(&mut self) -> Option<(String, &mut Dialog)> {
        let id = self.inbox.active.clone()?;
        let record = &self.inbox.get(&id)?.record;
        let viewport = self.viewport;
        if !self.dialogs.contains_key(&id) {
            // The footer says Alt+Enter for a new line: most terminals send Shift+Enter as
            // a plain Enter (Shift+Enter and Ctrl+J work too where the terminal tells them apart).
            let opts = DialogOptions { viewport, newline_key: "Alt+Enter".into(), ..DialogOptions::default() };
            let mut dialog = Dialog::new(&record.request, opts);
            dialog.apply(Event::Resize { viewport });
            self.dialogs.insert(id.clone(), dialog);
        }
        let dialog = self.dialogs.get_mut(&id)?;
        Some((id, dialog))
    }

    /// The terminal's size changed: the option list shows `rows` rows.
    pub fn resize(&mut self, rows: usize) {
        let rows = rows.max(1);
        if rows != self.viewport {
            self.viewport = rows;
            for d in self.dialogs.values_mut() {
                d.apply(Event::Resize { viewport: rows });
            }
        }
    }

    /// An update from the bridge client.
    pub fn on_event(&mut self, event: BrowserEvent) -> Vec<Action> {
        if let BrowserEvent::Error(Refused { error, id, .. }) = &event {
            let about = id.clone().or_else(|| self.inbox.active.clone());
            self.tell(about, format!("The bridge refused: {}", error.message));
        }
        let before = self.inbox.active.clone();
        // What was typed here for a question that closes elsewhere is shown, not lost.
        let closing = match &event {
            BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => Some(id.clone()),
            _ => None,
        };
        let typed = closing.as_ref().and_then(|id| self.dialogs.get(id)).and_then(|d| d.draft().typed());
        let notices = self.inbox.apply(&event);
        if let Some(closed) = self.inbox.closed.as_mut().filter(|c| Some(&c.id) == closing.as_ref()) {
            closed.typed = typed;
        }
        // Forget the dialogs of question sets that are gone.
        let inbox = &self.inbox;
        self.dialogs.retain(|id, _| inbox.get(id).is_some());
        if self.inbox.active != before {
            self.sync_editor();
        }
        let new = notices.iter().any(|n| matches!(n, Notice::NewQuestion { .. }));
        if new && self.bell {
            vec![Action::Bell]
        } else {
            vec![]
        }
    }

    /// Says `text` about question set `about`.
    pub fn tell(&mut self, about: Option<String>, text: impl Into<String>) {
        self.status = Some(Said { text: text.into(), about });
    }

    /// What was last said, if it is about the question set shown or none is shown.
    pub fn status(&self) -> Option<&str> {
        let said = self.status.as_ref()?;
        (self.inbox.active.is_none() || said.about == self.inbox.active).then_some(said.text.as_str())
    }

    /// Brings the editor to the active dialog's typed text. Another question set shown:
    /// what was said about the one before goes.
    fn sync_editor(&mut self) {
        let text = self.dialog().map(|(_, d)| d.state().other_text).unwrap_or_default();
        self.editor = Editor::new(&text);
        self.mode = Mode::Dialog;
        if self.inbox.active.is_some() && self.status.as_ref().is_some_and(|s| s.about != self.inbox.active) {
            self.status = None;
        }
    }

    /// A text field has the keys: letters are typed, not commands.
    pub fn editing(&mut self) -> bool {
        self.dialog().is_some_and(|(_, d)| d.is_editing())
    }

    /// The first line of the active approval's body to show.
    pub fn body_top(&self) -> usize {
        if self.body.id == self.inbox.active {
            self.body.top
        } else {
            0
        }
    }

    /// What the screen shows of the active approval's body, as drawn: the first line
    /// shown (clamped) and whether its end is on screen. Tells the dialog whether the
    /// whole has been seen (Allow is refused until it has).
    pub fn body_shown(&mut self, top: usize, end_shown: bool) {
        let id = self.inbox.active.clone();
        if self.body.id != id {
            self.body = BodyScroll { id, ..BodyScroll::default() };
        }
        self.body.top = top;
        self.body.seen_end |= end_shown;
        let whole = self.body.seen_end;
        if let Some((_, dialog)) = self.dialog() {
            dialog.apply(Event::Shown { whole });
        }
    }

    /// The first line to show of the preview of option `row` of question `tab` in the
    /// active question set.
    pub fn preview_top(&self, tab: usize, row: usize) -> usize {
        let of = self.inbox.active.clone().map(|id| (id, tab, row));
        if of.is_some() && self.preview.of == of {
            self.preview.top
        } else {
            0
        }
    }

    /// What the screen shows of that preview: its first line shown (clamped), which
    /// PgUp/PgDn then move.
    pub fn preview_shown(&mut self, tab: usize, row: usize, top: usize) {
        self.preview = PreviewScroll { of: self.inbox.active.clone().map(|id| (id, tab, row)), top };
    }

    /// The Other row has the focus, its field closed: typed letters start the answer.
    pub fn on_other_row(&mut self) -> bool {
        self.dialog().is_some_and(|(_, d)| d.on_other_row())
    }

    /// A yes/no prompt is open over the dialog.
    pub fn prompting(&mut self) -> bool {
        self.dialog().is_some_and(|(_, d)| d.state().prompt.is_some())
    }

    /// The question sets listed that still wait (what `[` and `]` step through).
    pub fn listed(&self) -> usize {
        self.inbox.order().iter().filter(|id| self.inbox.get(id).is_some_and(|i| i.fate == Fate::Pending)).count()
    }

    /// Text pasted into the terminal.
    pub fn on_paste(&mut self, text: &str) -> Vec<Action> {
        if let Mode::Note(editor) = &mut self.mode {
            editor.insert(text);
        } else if self.editing() {
            self.editor.insert(text);
            self.push_text();
        }
        vec![]
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return vec![];
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('q')) {
            return vec![Action::Quit];
        }
        // A notice about a question that closed elsewhere goes with the next key.
        self.inbox.closed = None;
        if let Mode::Note(editor) = &mut self.mode {
            return match key.code {
                KeyCode::Enter if !alt => {
                    let text = editor.text();
                    self.mode = Mode::Dialog;
                    self.apply(Event::Notes { text })
                }
                KeyCode::Esc => {
                    self.mode = Mode::Dialog;
                    vec![]
                }
                _ => {
                    edit(editor, key);
                    vec![]
                }
            };
        }
        // Other question sets: [ and ] (not while typing), Alt+↑/↓ always.
        let step = match key.code {
            KeyCode::Up | KeyCode::Down if alt => Some(key.code == KeyCode::Down),
            KeyCode::Char(c @ ('[' | ']')) if !self.editing() && !self.on_other_row() => Some(c == ']'),
            _ => None,
        };
        if let Some(forward) = step {
            self.inbox.step(forward);
            self.sync_editor();
            return vec![];
        }
        // A person's terminal lists what is for them, their teams, or everything: f.
        let plain = !ctrl && !alt;
        if plain
            && key.code == KeyCode::Char('f')
            && self.inbox.viewer.is_some()
            && !self.editing()
            && !self.prompting()
            && !self.on_other_row()
        {
            self.next_show();
            return vec![];
        }
        if self.dialog().is_none() {
            return vec![];
        }
        // PgDn/PgUp scroll an approval's command or diff longer than the screen shows,
        // and otherwise the option's preview (its pane says "… N more lines" until then).
        if matches!(key.code, KeyCode::PageDown | KeyCode::PageUp) {
            let approval = self.dialog().is_some_and(|(_, d)| d.state().approval.is_some());
            let (top, page) = if approval { (&mut self.body.top, BODY_PAGE) } else { (&mut self.preview.top, PREVIEW_PAGE) };
            *top = if key.code == KeyCode::PageDown { top.saturating_add(page) } else { top.saturating_sub(page) };
            return vec![];
        }
        // Tab and Shift+Tab switch questions, as in Claude Code's terminal dialog.
        match key.code {
            KeyCode::Tab => return self.apply(Event::NextTab),
            KeyCode::BackTab => return self.apply(Event::PrevTab),
            _ => {}
        }
        if self.editing() {
            return self.on_editing_key(key, alt);
        }
        match key.code {
            // A note is about a question (not the Submit tab).
            // On the Other row every letter is the person's answer (the dialog's).
            _ if self.on_other_row() => match key_name(key) {
                Some(name) => self.key(&name),
                None => vec![],
            },
            KeyCode::Char('n') if !ctrl && !self.prompting() && self.dialog().is_some_and(|(_, d)| d.state().question.is_some()) => {
                let notes = self.dialog().map(|(_, d)| d.state().notes).unwrap_or_default();
                self.mode = Mode::Note(Editor::new(&notes));
                vec![]
            }
            _ => match key_name(key) {
                Some(name) => self.key(&name),
                None => vec![],
            },
        }
    }

    /// Mine, then Team, then All, then Mine again. The dialog moves to the first question
    /// set the new choice lists if the one shown is not among them, or to none (what was
    /// chosen or typed in it is kept).
    fn next_show(&mut self) {
        let at = Show::ALL.iter().position(|s| *s == self.inbox.show).unwrap_or(0);
        self.inbox.show = Show::ALL[(at + 1) % Show::ALL.len()];
        let before = self.inbox.active.clone();
        let shown = before.as_ref().and_then(|id| self.inbox.get(id)).is_some_and(|i| self.inbox.shows(&i.record, self.inbox.show));
        if !shown {
            self.inbox.active = None;
            self.inbox.ensure_active();
        }
        if self.inbox.active != before {
            self.sync_editor();
        }
    }

    fn on_editing_key(&mut self, key: KeyEvent, alt: bool) -> Vec<Action> {
        let newline = matches!(key.code, KeyCode::Enter) && (alt || key.modifiers.contains(KeyModifiers::SHIFT))
            || (key.code == KeyCode::Char('j') && key.modifiers.contains(KeyModifiers::CONTROL));
        if newline {
            self.editor.insert("\n");
            self.push_text();
            return vec![];
        }
        match key.code {
            KeyCode::Enter => self.key("Enter"),
            KeyCode::Esc => {
                let actions = self.key("Escape");
                self.sync_editor();
                actions
            }
            _ => {
                if edit(&mut self.editor, key) == Edit::Changed {
                    self.push_text();
                }
                vec![]
            }
        }
    }

    /// Hands the editor's text to the dialog.
    fn push_text(&mut self) {
        let text = self.editor.text();
        self.apply(Event::SetText { text });
    }

    fn key(&mut self, name: &str) -> Vec<Action> {
        let Some((id, dialog)) = self.dialog() else { return vec![] };
        let was_editing = dialog.is_editing();
        let effects = dialog.key(name).effects;
        let now_editing = dialog.is_editing();
        if now_editing && !was_editing {
            self.sync_editor();
        }
        self.finish(id, effects)
    }

    fn apply(&mut self, event: Event) -> Vec<Action> {
        let Some((id, dialog)) = self.dialog() else { return vec![] };
        let switching = matches!(event, Event::NextTab | Event::PrevTab | Event::GoTab { .. });
        let effects = dialog.apply(event);
        if switching {
            self.editor = Editor::new(&self.dialog().map(|(_, d)| d.state().other_text).unwrap_or_default());
        }
        self.finish(id, effects)
    }

    /// Turns the dialog's effects into actions; a finished dialog leaves the inbox.
    fn finish(&mut self, id: String, effects: Vec<Effect>) -> Vec<Action> {
        let mut actions = Vec::new();
        for effect in effects {
            actions.push(match effect {
                Effect::Submitted { answers } => Action::Answer { id: id.clone(), answers },
                Effect::Cancelled { chat } => Action::Decline { id: id.clone(), chat },
            });
        }
        if !actions.is_empty() {
            self.inbox.mark_sent(&id);
            self.dialogs.remove(&id);
            self.sync_editor();
        }
        actions
    }

    /// Who asks the active question set.
    pub fn asker(&self) -> Option<String> {
        let id = self.inbox.active.as_ref()?;
        Some(agent_name(&self.inbox.get(id)?.record))
    }
}

/// The DOM key name the core's [`Dialog::key`] expects, for a key outside text editing.
pub fn key_name(key: KeyEvent) -> Option<String> {
    if key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
        return None;
    }
    Some(match key.code {
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Escape".into(),
        KeyCode::Up => "ArrowUp".into(),
        KeyCode::Down => "ArrowDown".into(),
        KeyCode::Left => "ArrowLeft".into(),
        KeyCode::Right => "ArrowRight".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::Char(c) => c.to_string(),
        _ => return None,
    })
}

/// A key in a text field: typing, moving and deleting.
pub fn edit(editor: &mut Editor, key: KeyEvent) -> Edit {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('w') if ctrl => editor.delete_word_back(),
        KeyCode::Char('u') if ctrl => editor.delete_to_start(),
        KeyCode::Char('k') if ctrl => editor.delete_to_end(),
        KeyCode::Char('a') if ctrl => editor.home(),
        KeyCode::Char('e') if ctrl => editor.end(),
        KeyCode::Char('b') if alt => editor.word_left(),
        KeyCode::Char('f') if alt => editor.word_right(),
        KeyCode::Char(_) if ctrl || alt => Edit::Ignored,
        KeyCode::Char(c) => editor.insert(c.encode_utf8(&mut [0; 4])),
        KeyCode::Backspace if ctrl || alt => editor.delete_word_back(),
        KeyCode::Backspace => editor.backspace(),
        KeyCode::Delete => editor.delete(),
        KeyCode::Left if ctrl || alt => editor.word_left(),
        KeyCode::Right if ctrl || alt => editor.word_right(),
        KeyCode::Left => editor.left(),
        KeyCode::Right => editor.right(),
        KeyCode::Home => editor.home(),
        KeyCode::End => editor.end(),
        _ => Edit::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> KeyEvent {
        key(KeyCode::Char(c))
    }

    fn snapshot(questions: serde_json::Value) -> BrowserEvent {
        serde_json::from_value(json!({"type": "snapshot", "client": "c-1", "agents": [], "questions": questions})).unwrap()
    }

    fn record(id: &str, request: serde_json::Value) -> serde_json::Value {
        json!({"id": id, "status": "pending", "createdAt": 1, "request": request})
    }

    fn app_with(questions: serde_json::Value) -> App {
        let mut app = App::new(true);
        app.on_event(snapshot(questions));
        app
    }

    #[test]
    fn pick_by_arrows_and_enter_answers_the_active_question() {
        let db = json!({"questions": [{"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]});
        let mut app = app_with(json!([record("q1", db)]));
        assert!(app.on_key(key(KeyCode::Down)).is_empty());
        let actions = app.on_key(key(KeyCode::Enter));
        assert_eq!(actions, [Action::Answer { id: "q1".into(), answers: vec![Selection::option("SQLite")] }]);
        assert_eq!(app.inbox.pending_count(), 0, "sent: it leaves the inbox's count");
    }

    #[test]
    fn other_text_is_edited_with_a_cursor_and_sent() {
        let name = json!({"questions": [{"question": "Name?"}]});
        let mut app = app_with(json!([record("q1", name)]));
        for c in "order procesor".chars() {
            app.on_key(ch(c));
        }
        for _ in 0..3 {
            app.on_key(key(KeyCode::Left));
        }
        app.on_key(ch('s'));
        app.on_key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(app.editor.text(), "order sor", "Ctrl+W deleted the word before the cursor");
        app.on_paste("proces");
        assert_eq!(app.editor.text(), "order processor");
        let actions = app.on_key(key(KeyCode::Enter));
        assert_eq!(actions, [Action::Answer { id: "q1".into(), answers: vec![Selection::custom("order processor")] }]);
    }

    #[test]
    fn tab_switches_questions_and_notes_and_chat_have_keys() {
        let two = json!({"questions": [
            {"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
            {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "Search"}]}
        ]});
        let mut app = app_with(json!([record("q1", two.clone()), record("q2", two)]));
        app.on_key(ch('n'));
        assert!(matches!(app.mode, Mode::Note(_)));
        for c in "for now".chars() {
            app.on_key(ch(c));
        }
        app.on_key(key(KeyCode::Enter));
        app.on_key(ch('2')); // picks SQLite and moves on to Features
        app.on_key(key(KeyCode::BackTab));
        assert_eq!(app.dialog().unwrap().1.state().active_tab, 0, "Shift+Tab: back to Database");
        app.on_key(key(KeyCode::Tab));
        app.on_key(ch(' '));
        app.on_key(key(KeyCode::Enter)); // to Submit
        let actions = app.on_key(key(KeyCode::Enter));
        let [Action::Answer { id, answers }] = &actions[..] else { panic!("{actions:?}") };
        assert_eq!(id, "q1");
        assert_eq!(answers[0].notes.as_deref(), Some("for now"));
        assert_eq!(answers[1].selected, ["Auth"]);
        // The next question set comes up; 'c' is "Chat about this", after asking.
        assert_eq!(app.inbox.active.as_deref(), Some("q2"));
        assert_eq!(app.on_key(ch('c')), []);
        assert!(app.prompting());
        assert_eq!(app.on_key(ch('y')), [Action::Decline { id: "q2".into(), chat: true }]);
    }

    #[test]
    fn on_the_other_row_letters_type_the_answer_and_are_no_shortcut() {
        let one = json!({"questions": [{"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]});
        let mut app = app_with(json!([record("q1", one.clone()), record("q2", one)]));
        app.on_key(key(KeyCode::End));
        // c (chat), n (note), f, [ and 1 would all be shortcuts on another row.
        for c in "cnf[1 db".chars() {
            assert_eq!(app.on_key(ch(c)), [], "{c:?}");
        }
        assert!(matches!(app.mode, Mode::Dialog) && app.editing());
        assert_eq!(app.inbox.active.as_deref(), Some("q1"));
        assert_eq!(app.editor.text(), "cnf[1 db");
        let actions = app.on_key(key(KeyCode::Enter));
        assert_eq!(actions, [Action::Answer { id: "q1".into(), answers: vec![Selection::custom("cnf[1 db")] }]);
    }

    #[test]
    fn f_cycles_mine_team_all_for_a_person_and_is_typed_otherwise() {
        let to = |id: &str, whom: &str| {
            json!({"id": id, "status": "pending", "createdAt": 1,
                   "request": {"questions": [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}], "agent": {"name": "pi", "assignee": whom}}})
        };
        let questions = json!([to("bobs", "bob"), to("mine", "alice")]);
        let mut app = app_with(questions.clone());
        app.on_key(ch('f'));
        assert_eq!(app.inbox.show, Show::All, "no viewer (an admin token): f does nothing to the filter");
        let mut app = App::new(false);
        let mut snap = json!({"type": "snapshot", "client": "c", "agents": [], "viewer": {"person": "alice", "teams": []}});
        snap["questions"] = questions;
        app.on_event(serde_json::from_value(snap).unwrap());
        assert_eq!(app.inbox.active.as_deref(), Some("bobs"), "All lists the oldest first");
        app.on_key(key(KeyCode::Down)); // a choice made in bob's question is kept
        app.on_key(ch('f'));
        assert_eq!((app.inbox.show, app.inbox.active.as_deref()), (Show::Mine, Some("mine")));
        app.on_key(ch(']'));
        assert_eq!(app.inbox.active.as_deref(), Some("mine"), "] steps among the listed only");
        for _ in 0..3 {
            app.on_key(ch('f'));
        }
        assert_eq!(app.inbox.show, Show::Mine, "Mine, Team, All, Mine");
        app.inbox.show = Show::All;
        app.on_key(ch('['));
        assert_eq!(app.inbox.active.as_deref(), Some("bobs"));
        assert!(
            app.dialog().unwrap().1.state().rows.iter().position(|r| r.focused) != Some(0),
            "kept: {:?}",
            app.dialog().unwrap().1.state().rows
        );
        // While typing an answer, f is a letter.
        let mut typing = App::new(false);
        let mut snap = json!({"type": "snapshot", "client": "c", "agents": [], "viewer": {"person": "alice", "teams": []}});
        snap["questions"] = json!([{"id": "n", "status": "pending", "createdAt": 1, "request": {"questions": [{"question": "Name?"}]}}]);
        typing.on_event(serde_json::from_value(snap).unwrap());
        typing.on_key(ch('f'));
        assert_eq!((typing.inbox.show, typing.editor.text()), (Show::All, "f".to_owned()));
    }

    #[test]
    fn a_new_question_rings_the_bell_unless_turned_off() {
        let ask = |id: &str| -> BrowserEvent {
            serde_json::from_value(json!({"type": "asked", "question": record(id, json!({"questions": [{"question": "Go?"}]}))})).unwrap()
        };
        let mut app = app_with(json!([]));
        assert_eq!(app.on_event(ask("q1")), [Action::Bell]);
        let mut quiet = App::new(false);
        quiet.on_event(snapshot(json!([])));
        assert!(quiet.on_event(ask("q1")).is_empty());
    }

    #[test]
    fn a_dialog_keeps_its_state_while_another_is_shown_and_across_a_new_snapshot() {
        let q = |t: &str| json!({"questions": [{"question": t, "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]});
        let questions = json!([record("q1", q("One?")), record("q2", q("Two?"))]);
        let mut app = app_with(questions.clone());
        app.on_key(key(KeyCode::Down));
        app.on_key(key(KeyCode::Down));
        app.on_key(ch(']'));
        assert_eq!(app.inbox.active.as_deref(), Some("q2"));
        app.on_key(ch('['));
        app.on_event(snapshot(questions)); // a reconnect
        let focus = app.dialog().unwrap().1.state().rows.iter().position(|r| r.focused);
        assert_eq!(focus, Some(2), "the cursor is where the person left it");
    }
}
