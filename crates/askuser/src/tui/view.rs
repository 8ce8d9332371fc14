//! Drawing the terminal dialog: the core's [`View`] of the active question set, the
//! inbox (beside it on a wide terminal, a count on a narrow one), the connection and
//! what was last said. Agent text is drawn as text: control characters are shown as
//! escapes ([`crate::term::safe`]), never sent to the terminal.

use super::app::{App, Mode};
use super::editor::Editor;
use askuser_core::approval::{ApprovalView, Change, Shown};
use askuser_core::client::State;
use askuser_core::dialog::View;
use askuser_core::inbox::{assignee, first_rows, waited, Show};
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// Terminals at least this wide show the inbox beside the dialog.
const WIDE: u16 = 100;
const INBOX_WIDTH: u16 = 34;

/// How to draw: colours or not (`NO_COLOR`), and the time for "waiting N s".
#[derive(Debug, Clone, Copy)]
pub struct Look {
    pub color: bool,
    pub now: u64,
}

impl Look {
    fn style(self, s: Style) -> Style {
        if self.color {
            s
        } else {
            Style::default().add_modifier(s.add_modifier & (Modifier::BOLD | Modifier::REVERSED | Modifier::UNDERLINED))
        }
    }

    fn dim(self) -> Style {
        self.style(Style::default().fg(Color::DarkGray))
    }

    fn accent(self) -> Style {
        self.style(Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD))
    }

    fn warn(self) -> Style {
        self.style(Style::default().fg(Color::Yellow))
    }
}

/// Agent text as terminal-safe text.
fn safe(text: &str) -> String {
    crate::term::safe(text).into_owned()
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App, look: Look) {
    let area = frame.area();
    let [top, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    frame.render_widget(Paragraph::new(header(app, look, area.width)), top);
    let (main, side) = if area.width >= WIDE {
        let [main, side] = Layout::horizontal([Constraint::Min(40), Constraint::Length(INBOX_WIDTH)]).areas(body);
        (main, Some(side))
    } else {
        (body, None)
    };
    if let Some(side) = side {
        frame.render_widget(inbox(app, look, side.height as usize), side);
    }
    dialog_area(frame, app, look, main);
}

fn header(app: &App, look: Look, width: u16) -> Line<'static> {
    let (state, attempt) = app.connection;
    let connection = match state {
        State::Open => "connected".to_owned(),
        State::Connecting => "connecting…".to_owned(),
        State::Reconnecting => format!("reconnecting… (attempt {attempt}; answers are kept)"),
        State::Unauthorized => "the bridge refused the token".to_owned(),
        State::Closed => "closed".to_owned(),
    };
    let waiting = app.inbox.pending_count();
    let mut spans = vec![
        Span::styled("askuser", look.accent()),
        Span::raw(" · "),
        Span::styled(connection, if state == State::Open { look.dim() } else { look.warn() }),
        Span::raw(format!(" · {waiting} waiting")),
    ];
    let person = app.inbox.viewer.is_some();
    if person {
        spans.push(Span::raw(" · showing "));
        spans.push(Span::styled(app.inbox.show.label(), look.accent()));
    }
    let keys = if person { "  [ ] other question · f Mine/Team/All · Ctrl+C quit" } else { "  [ ] other question · Ctrl+C quit" };
    if usize::from(width) >= spans.iter().map(|s| s.content.chars().count()).sum::<usize>() + keys.chars().count() {
        spans.push(Span::styled(keys, look.dim()));
    }
    Line::from(spans)
}

/// "Mine 1 · Team 2 · All 4", the one shown marked (a person's terminal).
fn shows(app: &App, look: Look) -> Option<Line<'static>> {
    app.inbox.viewer.as_ref()?;
    let counts = app.inbox.show_counts();
    let mut spans = Vec::new();
    for (n, show) in Show::ALL.into_iter().enumerate() {
        if n > 0 {
            spans.push(Span::styled(" · ", look.dim()));
        }
        let style = if show == app.inbox.show { look.style(Style::default().add_modifier(Modifier::REVERSED)) } else { Style::default() };
        spans.push(Span::styled(format!("{} {}", show.label(), counts[n]), style));
    }
    Some(Line::from(spans))
}

/// The inbox: each agent session with its question sets (sub-agents under parents).
fn inbox(app: &App, look: Look, height: usize) -> Paragraph<'static> {
    let (groups, hidden) = first_rows(app.inbox.groups(), height.saturating_sub(3).max(1));
    let mut lines = vec![Line::styled(format!("Waiting {}", app.inbox.pending_count()), look.accent())];
    lines.extend(shows(app, look));
    for g in groups {
        let indent = if g.depth > 0 { "↳ " } else { "" };
        let mut head = vec![Span::styled(format!("{indent}{}", safe(&g.name)), Style::default().add_modifier(Modifier::BOLD))];
        if let Some(c) = g.connected {
            head.push(Span::styled(if c { " ● connected" } else { " ○ gone" }, if c { look.dim() } else { look.warn() }));
        }
        lines.push(Line::from(head));
        for id in g.items {
            let Some(item) = app.inbox.get(&id) else { continue };
            let first = safe(&askuser_core::inbox::headline(&item.record.request));
            let current = app.inbox.active.as_deref() == Some(id.as_str());
            let marker = if current { "› " } else { "  " };
            let age = waited(look.now.saturating_sub(item.record.created_at));
            // Whom it is for comes first: a long question is cut at the panel's edge.
            let to = assignee(&item.record).map(|to| format!("@{} ", safe(to))).unwrap_or_default();
            let style = if current { look.style(Style::default().add_modifier(Modifier::REVERSED)) } else { Style::default() };
            lines.push(Line::from(vec![
                Span::styled(marker, style),
                Span::styled(to, look.accent()),
                Span::styled(first, style),
                Span::styled(format!(" {age}"), look.dim()),
            ]));
        }
    }
    if hidden > 0 {
        lines.push(Line::styled(format!("… and {hidden} more (] goes on)"), look.dim()));
    }
    Paragraph::new(lines).block(Block::default().borders(Borders::LEFT).border_style(look.dim()))
}

fn dialog_area(frame: &mut Frame, app: &mut App, look: Look, area: Rect) {
    let asker = app.asker();
    let closed = app.inbox.closed.clone();
    let status = app.status.clone();
    let mut lines: Vec<Line> = Vec::new();
    if let Some(c) = &closed {
        lines.push(Line::styled(safe(&c.text), look.warn()));
        if let Some(t) = &c.typed {
            lines.push(Line::styled(format!("What you had typed here: {}", safe(t)), look.dim()));
        }
        lines.push(Line::styled("(any key)", look.dim()));
    }
    let Some(asker) = asker else {
        let waiting = app.inbox.pending_count();
        if app.connection.0 != State::Open {
            lines.push(Line::raw("Waiting for the bridge…"));
        } else if waiting > 0 && app.inbox.viewer.is_some() {
            lines.push(Line::raw(format!("None of the {waiting} waiting is listed under {}.", app.inbox.show.label())));
            lines.extend(shows(app, look));
            lines.push(Line::styled("f shows Mine, Team or All.", look.dim()));
        } else {
            lines.push(Line::raw("No questions waiting."));
            lines.push(Line::styled("When an agent asks, its question appears here.", look.dim()));
        }
        if let Some(s) = status {
            lines.push(Line::raw(""));
            lines.push(Line::styled(safe(&s), look.dim()));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
        return;
    };
    let (created, nobody_waits, to) = {
        let id = app.inbox.active.clone().unwrap_or_default();
        let record = app.inbox.get(&id).map(|i| i.record.clone());
        let waits = record.as_ref().and_then(|r| app.inbox.agent_waiting(r));
        let to = record.as_ref().and_then(assignee).map(|to| format!(" for {}", safe(to))).unwrap_or_default();
        (record.map_or(0, |r| r.created_at), waits == Some(false), to)
    };
    lines.push(Line::from(vec![
        Span::styled(safe(&asker), Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(format!(" asks{to} · waiting {}", waited(look.now.saturating_sub(created))), look.dim()),
    ]));
    if nobody_waits {
        lines.push(Line::styled(
            "Nobody waits for this answer now (the agent went away); it is kept for the agent if it asks again.",
            look.warn(),
        ));
    }

    // Rows left for the option list once everything else has its lines.
    let wide_preview = area.width >= 110;
    let reserved = lines.len() as u16 + 9;
    app.resize(area.height.saturating_sub(reserved).clamp(3, 30) as usize);
    let Some((_, dialog)) = app.dialog() else { return };
    let view = dialog.state();
    dialog_lines(&mut lines, &view, look);

    let preview = view.rows.iter().find(|r| r.focused && r.preview.is_some()).or_else(|| view.rows.iter().find(|r| r.preview.is_some()));
    let (text_area, preview_area) = match preview {
        Some(_) if wide_preview => {
            let [left, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
            (left, Some(right))
        }
        Some(_) => {
            let [top, bottom] = Layout::vertical([Constraint::Min(6), Constraint::Length(8)]).areas(area);
            (top, Some(bottom))
        }
        None => (area, None),
    };
    if let (Some(row), Some(at)) = (preview, preview_area) {
        let text = Text::from(safe(row.preview.as_deref().unwrap_or_default()));
        let block = Block::default().borders(Borders::ALL).border_style(look.dim()).title(format!(" Preview: {} ", safe(&row.label)));
        frame.render_widget(Paragraph::new(text).block(block), at);
    }

    // The typed answer (or the note being written), in a box with the cursor.
    let editing_note = matches!(app.mode, Mode::Note(_));
    let editor: Option<(&Editor, &str)> = match &app.mode {
        Mode::Note(e) => Some((e, " Note for the agent (Enter saves, Esc closes) ")),
        Mode::Dialog if view.editing || view.question.as_ref().is_some_and(|q| q.free_text) => {
            Some((&app.editor, " Your answer (Enter sends, Alt+Enter new line) "))
        }
        Mode::Dialog => None,
    };
    let box_height = editor.map_or(0, |(e, _)| (e.text().lines().count().clamp(1, 4) + 2) as u16);
    let [above, boxed, below] =
        Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Length(box_height), Constraint::Min(0)]).areas(text_area);
    frame.render_widget(Paragraph::new(lines), above);
    if let Some((e, title)) = editor {
        draw_editor(frame, e, title, boxed, look);
    }

    let mut tail: Vec<Line> = Vec::new();
    if !view.notes.is_empty() && !editing_note {
        tail.push(Line::styled(format!("Note: {}", safe(&view.notes)), look.dim()));
    }
    if let Some(p) = &view.prompt {
        let keys = if p.default_yes { "[Y/n]" } else { "[y/N]" };
        tail.push(Line::styled(format!("{} {keys}", safe(&p.text)), look.warn().add_modifier(Modifier::BOLD)));
    }
    if let Some(h) = &view.hint {
        tail.push(Line::styled(safe(h), look.warn()));
    }
    if let Some(s) = &status {
        tail.push(Line::styled(safe(s), look.dim()));
    }
    let keys = if view.question.is_some() { " • n note • c chat about this" } else { "" };
    tail.push(Line::styled(format!("{}{keys} • Tab next question", view.footer), look.dim()));
    frame.render_widget(Paragraph::new(tail).wrap(Wrap { trim: false }), below);
}

/// The tabs, the question and its options (or the review), as lines.
fn dialog_lines(lines: &mut Vec<Line<'static>>, view: &View, look: Look) {
    if view.tabs.len() >= 2 {
        let mut spans = Vec::new();
        for (i, t) in view.tabs.iter().enumerate() {
            let label = format!(" {}{} ", if t.answered { "✓ " } else { "" }, safe(&t.label));
            let style = if i == view.active_tab { look.style(Style::default().add_modifier(Modifier::REVERSED)) } else { look.dim() };
            spans.push(Span::styled(label, style));
            spans.push(Span::raw(" "));
        }
        lines.push(Line::from(spans));
    }
    if view.on_submit_tab {
        lines.push(Line::styled("Review your answers", Style::default().add_modifier(Modifier::BOLD)));
        for item in &view.review {
            let answer = item.answer.as_deref().map_or_else(|| "— not answered".to_owned(), safe);
            lines.push(Line::from(vec![
                Span::styled(format!("{}: ", safe(&item.label)), look.accent()),
                Span::raw(format!("{} → {answer}", safe(&crate::term::one_line(&item.question)))),
            ]));
        }
        if !view.unanswered.is_empty() {
            lines.push(Line::styled(format!("Not answered yet: {}", safe(&view.unanswered.join("; "))), look.warn()));
        }
        lines.push(Line::styled("Enter submits · Esc declines", look.accent()));
        return;
    }
    let Some(q) = &view.question else { return };
    if let Some(approval) = &view.approval {
        approval_lines(lines, approval, look);
    } else {
        let mut meta = Vec::new();
        if let Some(h) = &q.header {
            meta.push(Span::styled(format!("[{}] ", safe(h)), look.accent()));
        }
        meta.push(Span::styled(q.kind(), look.dim()));
        lines.push(Line::from(meta));
        for text_line in safe(&q.text).lines() {
            lines.push(Line::styled(text_line.to_owned(), Style::default().add_modifier(Modifier::BOLD)));
        }
    }
    if q.free_text {
        return;
    }
    if view.window.above > 0 {
        lines.push(Line::styled(format!("  ↑ {} more", view.window.above), look.dim()));
    }
    let end = view.window.end.min(view.rows.len());
    for row in &view.rows[view.window.start.min(end)..end] {
        let pointer = if row.focused { "›" } else { " " };
        let mark = match (q.multi_select, row.selected) {
            (true, true) => "[x]",
            (true, false) => "[ ]",
            (false, true) => "(•)",
            (false, false) => "( )",
        };
        let number = match (&view.approval, &row.key, row.number) {
            (Some(_), Some(key), _) => format!("{key} "),
            (None, _, Some(n)) => format!("{n}."),
            _ => "  ".to_owned(),
        };
        let mut spans = vec![Span::styled(
            format!("{pointer} {number} {mark} {}", safe(&row.label)),
            if row.focused { look.accent() } else { Style::default() },
        )];
        if let Some(d) = &row.description {
            spans.push(Span::styled(format!("  {}", safe(&crate::term::one_line(d))), look.dim()));
        }
        lines.push(Line::from(spans));
    }
    if view.window.below > 0 {
        lines.push(Line::styled(format!("  ↓ {} more", view.window.below), look.dim()));
    }
}

/// Lines of a diff, a new file or arguments shown at most; the page shows them all.
const APPROVAL_LINES: usize = 14;

/// An approval: what will happen (a command, a diff, a new file's head, the arguments)
/// rather than the question's text.
fn approval_lines(lines: &mut Vec<Line<'static>>, approval: &ApprovalView, look: Look) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    lines.push(Line::from(vec![Span::styled(format!("[{}] ", safe(&approval.tool)), look.accent()), Span::styled("Approval", look.dim())]));
    lines.push(Line::styled(safe(&approval.title), bold));
    let mut body: Vec<Line<'static>> = Vec::new();
    match &approval.shown {
        Shown::Command { command, .. } => {
            for (i, line) in safe(command).lines().enumerate() {
                body.push(Line::styled(format!("{} {line}", if i == 0 { "$" } else { ">" }), bold));
            }
        }
        Shown::Diff { lines: diff, .. } => {
            for line in diff {
                let style = match line.change {
                    Change::Added => look.style(Style::default().fg(Color::Green)),
                    Change::Removed => look.style(Style::default().fg(Color::Red)),
                    Change::Same | Change::Gap => look.dim(),
                };
                body.push(Line::styled(safe(&line.marked()), style));
            }
        }
        Shown::Write { head, total, .. } => {
            body.extend(head.iter().map(|l| Line::raw(safe(l))));
            if *total > head.len() {
                body.push(Line::styled(format!("… {} more lines", total - head.len()), look.dim()));
            }
        }
        Shown::Fetch { .. } => {}
        Shown::Call { args } => {
            for (name, value) in args {
                body.push(Line::from(vec![Span::styled(format!("{}: ", safe(name)), look.dim()), Span::raw(safe(value))]));
            }
        }
    }
    if body.len() > APPROVAL_LINES {
        let more = body.len() - (APPROVAL_LINES - 1);
        body.truncate(APPROVAL_LINES - 1);
        body.push(Line::styled(format!("… {more} more lines (the page shows them all)"), look.dim()));
    }
    lines.extend(body.into_iter().map(|mut l| {
        l.spans.insert(0, Span::raw("  "));
        l
    }));
    if let Some(reason) = &approval.reason {
        lines.push(Line::styled(format!("Why: {}", safe(&crate::term::one_line(reason))), look.dim()));
    }
}

/// A text box with the cursor where the editor's is (the last four lines around it).
fn draw_editor(frame: &mut Frame, editor: &Editor, title: &str, area: Rect, look: Look) {
    if area.height < 3 {
        return;
    }
    let text = editor.text();
    let all: Vec<&str> = if text.is_empty() { vec![""] } else { text.split('\n').collect() };
    let (line, column) = editor.line_and_column();
    let rows = (area.height - 2) as usize;
    let first = line.saturating_sub(rows - 1);
    let shown: Vec<Line> = all.iter().skip(first).take(rows).map(|l| Line::raw(safe(l))).collect();
    let inner_width = area.width.saturating_sub(2) as usize;
    let before: String = all.get(line).map(|l| l.chars().take(column).collect()).unwrap_or_default();
    let x = Line::raw(safe(&before)).width();
    // A line longer than the box scrolls so the cursor stays in view.
    let scroll = x.saturating_sub(inner_width.saturating_sub(1));
    let block = Block::default().borders(Borders::ALL).border_style(look.accent()).title(title.to_owned());
    frame.render_widget(Paragraph::new(shown).block(block).scroll((0, scroll as u16)), area);
    frame.set_cursor_position(Position::new(area.x + 1 + (x - scroll) as u16, area.y + 1 + (line - first) as u16));
}

#[cfg(test)]
mod tests {
    use super::super::app::Action;
    use super::*;
    use askuser_core::Selection;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use serde_json::json;

    fn screen(app: &mut App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, app, Look { color: false, now: 60_000 })).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..height {
            let mut x = 0;
            while x < width {
                // A wide character's second cell is not a character of its own.
                let symbol = buffer[(x, y)].symbol();
                out.push_str(symbol);
                x += Line::raw(symbol).width().max(1) as u16;
            }
            out.push('\n');
        }
        out
    }

    fn app(questions: serde_json::Value) -> App {
        let mut app = App::new(false);
        app.connection = (State::Open, 0);
        let records: Vec<serde_json::Value> = questions
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"id": format!("q{i}"), "status": "pending", "createdAt": 1, "request": r}))
            .collect();
        let agents = json!([{"sessionId": "s-1", "name": "claude-code", "connected": true}]);
        app.on_event(serde_json::from_value(json!({"type": "snapshot", "client": "c", "agents": agents, "questions": records})).unwrap());
        app
    }

    #[test]
    fn an_80_by_24_terminal_shows_the_question_its_options_and_the_keys() {
        let options: Vec<serde_json::Value> = (1..=30).map(|i| json!({"label": format!("Option {i}")})).collect();
        let mut a = app(json!([{"questions": [{"question": "Which one?", "header": "Pick", "options": options}],
            "agent": {"name": "claude-code", "sessionId": "s-1"}}]));
        let s = screen(&mut a, 80, 24);
        assert!(s.contains("claude-code asks"), "{s}");
        assert!(s.contains("[Pick] Choose one") && s.contains("Which one?"), "{s}");
        assert!(s.contains("› 1. ( ) Option 1"), "{s}");
        assert!(s.contains("↓ ") && s.contains(" more"), "a long list says how many more: {s}");
        assert!(s.contains("Enter select"), "the footer: {s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80));
    }

    #[test]
    fn an_approval_shows_the_command_or_the_diff_and_a_allows_it() {
        use askuser_core::approval::Approval;
        let request = |call: serde_json::Value| {
            let mut a = Approval::from_claude(&call).unwrap();
            a.cwd = Some("/srv/app".into());
            serde_json::to_value(a.request(&a.suggest(None), &Default::default()).unwrap()).unwrap()
        };
        let bash = request(json!({"tool_name": "Bash", "input": {"command": "cargo test --all", "description": "Run the tests"}}));
        let mut a = app(json!([bash]));
        let s = screen(&mut a, 80, 24);
        assert!(s.contains("[Bash] Approval") && s.contains("Run this command in /srv/app?"), "{s}");
        assert!(s.contains("  $ cargo test --all") && s.contains("Why: Run the tests"), "{s}");
        assert!(s.contains("› a  ( ) Allow") && s.contains("A  ( ) Always allow") && s.contains("d  ( ) Deny"), "{s}");
        assert!(s.contains("a allow • A always allow • d deny"), "{s}");
        assert!(!s.contains("```"), "not markdown: {s}");
        let actions = a.on_key(KeyEvent::new(KeyCode::Char('A'), KeyModifiers::SHIFT));
        assert_eq!(actions, [Action::Answer { id: "q0".into(), answers: vec![Selection::option("Always allow")] }]);

        let edit = request(json!({"tool_name": "Edit", "input": {"file_path": "/srv/app/src/lib.rs",
            "old_string": "fn a() {}\nfn b() {}", "new_string": "fn a() {}\nfn c() {}"}}));
        let mut a = app(json!([edit]));
        let s = screen(&mut a, 80, 24);
        assert!(s.contains("Edit src/lib.rs?"), "{s}");
        assert!(s.contains("    fn a() {}") && s.contains("  - fn b() {}") && s.contains("  + fn c() {}"), "{s}");
        // d, the message, Enter: denied with it.
        for key in [KeyCode::Char('d'), KeyCode::Char('n'), KeyCode::Char('o')] {
            assert_eq!(a.on_key(KeyEvent::new(key, KeyModifiers::NONE)), []);
        }
        let actions = a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        assert_eq!(actions, [Action::Answer { id: "q0".into(), answers: vec![Selection::custom("no")] }]);
    }

    #[test]
    fn wide_text_and_control_characters_are_drawn_safely() {
        let mut a =
            app(json!([{"questions": [{"question": "名前は？ 🦀 \u{1b}[2Jhidden", "options": [{"label": "はい"}, {"label": "いいえ"}]}]}]));
        let s = screen(&mut a, 80, 24);
        assert!(s.contains("名") && s.contains("はい"), "{s}");
        assert!(s.contains("\\u{1b}[2J"), "the escape is shown, not obeyed: {s}");
    }

    #[test]
    fn a_wide_terminal_lists_the_inbox_beside_and_a_preview_beside_the_options() {
        let mut a = app(json!([
            {"questions": [{"question": "Layout?", "options": [{"label": "Sidebar", "preview": "+--+\n|  |\n+--+"}, {"label": "Tabs"}]}],
             "agent": {"name": "claude-code", "sessionId": "s-1"}},
            {"questions": [{"question": "Second question?"}], "agent": {"name": "claude-code", "sessionId": "s-1"}}
        ]));
        let s = screen(&mut a, 120, 30);
        assert!(s.contains("Waiting 2") && s.contains("Second question?"), "{s}");
        assert!(s.contains("Preview: Sidebar") && s.contains("|  |"), "{s}");
    }

    #[test]
    fn a_persons_terminal_shows_mine_team_and_all_and_f_changes_it() {
        let mut a = App::new(false);
        a.connection = (State::Open, 0);
        let q = |id: &str, text: &str, to: &str| {
            json!({"id": id, "status": "pending", "createdAt": 1,
                   "request": {"questions": [{"question": text, "options": [{"label": "Yes"}]}], "agent": {"name": "claude-code", "assignee": to}}})
        };
        let snapshot = json!({"type": "snapshot", "client": "c", "agents": [], "viewer": {"person": "alice", "teams": ["db"]},
            "questions": [q("t", "For the db team?", "db"), q("b", "For bob?", "bob")]});
        a.on_event(serde_json::from_value(snapshot).unwrap());
        let s = screen(&mut a, 120, 24);
        assert!(s.contains("showing All") && s.contains("f Mine/Team/All"), "{s}");
        assert!(s.contains("Mine 0 · Team 1 · All 2") && s.contains("For bob?"), "{s}");
        assert!(s.contains("claude-code asks for bob") && s.contains("@db For the db team?"), "whom each is for: {s}");
        let f = KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE);
        a.on_key(f);
        let s = screen(&mut a, 120, 24);
        assert!(s.contains("showing Mine") && s.contains("None of the 2 waiting is listed under Mine"), "{s}");
        assert!(!s.contains("For bob?"), "bob's question is not listed under Mine: {s}");
        a.on_key(f);
        let s = screen(&mut a, 120, 24);
        assert!(s.contains("showing Team") && s.contains("For the db team?") && !s.contains("For bob?"), "{s}");
        assert_eq!(a.inbox.active.as_deref(), Some("t"), "the team's question came up");
    }

    #[test]
    fn the_typed_answer_has_a_box_and_the_cursor() {
        let mut a = app(json!([{"questions": [{"question": "Name?"}]}]));
        for c in "billing".chars() {
            a.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal.draw(|f| draw(f, &mut a, Look { color: false, now: 0 })).unwrap();
        let s = screen(&mut a, 80, 24);
        assert!(s.contains("Your answer") && s.contains("billing"), "{s}");
        let cursor = terminal.get_cursor_position().unwrap();
        assert_eq!(cursor.x, 1 + 7, "after the last letter");
    }
}
