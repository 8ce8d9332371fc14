//! Drawing the terminal dialog: the core's [`View`] of the active question set, the
//! inbox (beside it on a wide terminal, a count on a narrow one), the connection and
//! what was last said. Agent text is drawn as text: control characters are shown as
//! escapes ([`crate::term::safe`]), never sent to the terminal.

use super::app::{App, Mode};
use super::editor::Editor;
use super::wrap;
use askuser_core::approval::{ApprovalView, Change, Shown};
use askuser_core::client::State;
use askuser_core::dialog::View;
use askuser_core::inbox::{assignee, first_rows, waited, Show};
use askuser_core::markdown::{self, Align, Inline};
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// Terminals at least this wide show the inbox beside the dialog.
const WIDE: u16 = 100;
const INBOX_WIDTH: u16 = 34;
/// Terminals at least this wide show an option's preview beside the options, as the
/// README says: the terminal's width, so the inbox beside it must make the room.
const PREVIEW_BESIDE: u16 = 110;
/// The inbox narrows to this, no less, while a preview is beside the options.
const INBOX_NARROW: u16 = 24;

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
    let keys = header_keys(app);
    frame.render_widget(Paragraph::new(header(app, look, area.width, &keys)), top);
    let beside = area.width >= PREVIEW_BESIDE && app.dialog().is_some_and(|(_, d)| d.state().rows.iter().any(|r| r.preview.is_some()));
    let (main, side) = if area.width >= WIDE {
        // Beside a preview the inbox gives up columns until the dialog has PREVIEW_BESIDE.
        let column = if beside { area.width.saturating_sub(PREVIEW_BESIDE).clamp(INBOX_NARROW, INBOX_WIDTH) } else { INBOX_WIDTH };
        let [main, side] = Layout::horizontal([Constraint::Min(40), Constraint::Length(column)]).areas(body);
        (main, Some(side))
    } else {
        (body, None)
    };
    if let Some(side) = side {
        frame.render_widget(inbox(app, look, side.height as usize, side.width.saturating_sub(1) as usize), side);
    }
    dialog_area(frame, app, look, main, beside);
}

/// The keys for the inbox, as far as they work now: `[` and `]` (Alt+↑/↓ while typing)
/// only with another question set to go to, `f` only for a person and not while typing.
fn header_keys(app: &mut App) -> String {
    let note = matches!(app.mode, Mode::Note(_));
    let editing = app.editing();
    let prompting = app.prompting();
    let mut keys = Vec::new();
    if app.listed() >= 2 && !note {
        keys.push(if editing { "Alt+↑↓ other question" } else { "[ ] other question" });
    }
    if app.inbox.viewer.is_some() && !note && !editing && !prompting {
        keys.push("f Mine/Team/All");
    }
    keys.push("Ctrl+C quit");
    keys.join(" · ")
}

fn header(app: &App, look: Look, width: u16, keys: &str) -> Line<'static> {
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
    if app.inbox.viewer.is_some() {
        spans.push(Span::raw(" · showing "));
        spans.push(Span::styled(app.inbox.show.label(), look.accent()));
    }
    let keys = format!("  {keys}");
    let line = Line::from(spans.clone());
    if line.width() + wrap::width(&keys) <= usize::from(width) {
        spans.push(Span::styled(keys, look.dim()));
        return Line::from(spans);
    }
    wrap::cut(&line, usize::from(width))
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

/// The inbox: each agent session with its question sets (sub-agents under parents), one
/// line each, `width` columns wide: a long one is cut with "…" (its age still shown).
fn inbox(app: &App, look: Look, height: usize, width: usize) -> Paragraph<'static> {
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
            let current = app.inbox.active.as_deref() == Some(id.as_str());
            let marker = if current { "› " } else { "  " };
            let age = format!(" {}", waited(look.now.saturating_sub(item.record.created_at)));
            // Whom it is for comes first, then as much of the question as fits.
            let to = assignee(&item.record).map(|to| format!("@{} ", safe(to))).unwrap_or_default();
            let room = width.saturating_sub(wrap::width(marker) + wrap::width(&to) + wrap::width(&age));
            let first = wrap::cut(&Line::raw(safe(&askuser_core::inbox::headline(&item.record.request))), room.max(2));
            let style = if current { look.style(Style::default().add_modifier(Modifier::REVERSED)) } else { Style::default() };
            let mut spans = vec![Span::styled(marker, style), Span::styled(to, look.accent())];
            spans.extend(first.spans.into_iter().map(|s| s.style(style)));
            spans.push(Span::styled(age, look.dim()));
            lines.push(Line::from(spans));
        }
    }
    if hidden > 0 {
        lines.push(Line::styled(format!("… and {hidden} more (] goes on)"), look.dim()));
    }
    let lines: Vec<Line> = lines.iter().map(|l| wrap::cut(l, width)).collect();
    Paragraph::new(lines).block(Block::default().borders(Borders::LEFT).border_style(look.dim()))
}

/// The dialog in `area`, an option's preview `beside` the options or else below them.
fn dialog_area(frame: &mut Frame, app: &mut App, look: Look, area: Rect, beside: bool) {
    let asker = app.asker();
    let closed = app.inbox.closed.clone();
    let status = app.status().map(str::to_owned);
    // A question set that closed elsewhere, said above the next one.
    let notice = |width: usize| {
        let mut lines: Vec<Line<'static>> = Vec::new();
        if let Some(c) = &closed {
            lines.extend(wrap::wrap_text(&safe(&c.text), look.warn(), width, 0));
            if let Some(t) = &c.typed {
                lines.extend(wrap::wrap_text(&format!("What you had typed here: {}", safe(t)), look.dim(), width, 2));
            }
            lines.push(Line::styled("(any key)", look.dim()));
        }
        lines
    };
    let Some(asker) = asker else {
        let mut lines = notice(area.width as usize);
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
            lines.push(Line::styled(
                "To let an agent ask, run `askuser setup claude-code` (or codex, gemini-cli, cursor) and start it again.",
                look.dim(),
            ));
        }
        if let Some(s) = status {
            lines.push(Line::raw(""));
            lines.push(Line::styled(safe(&s), look.dim()));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
        return;
    };
    let (created, nobody_waits, to, schedule) = {
        let id = app.inbox.active.clone().unwrap_or_default();
        let record = app.inbox.get(&id).map(|i| i.record.clone());
        let waits = record.as_ref().and_then(|r| app.inbox.agent_waiting(r));
        let to = record.as_ref().and_then(assignee).map(|to| format!(" for {}", safe(to))).unwrap_or_default();
        // When its next reminder goes out and its default applies, if it asked for them.
        let schedule = record.as_ref().and_then(|r| askuser_core::remind::schedule_line(&r.request, r.created_at, look.now));
        let schedule = schedule.map(|s| format!(" · {s}")).unwrap_or_default();
        (record.map_or(0, |r| r.created_at), waits == Some(false), to, schedule)
    };
    let Some((_, dialog)) = app.dialog() else { return };
    let view = dialog.state();

    // A preview goes beside the text on a wide terminal, below it on a narrow one.
    let preview = view.rows.iter().find(|r| r.focused && r.preview.is_some()).or_else(|| view.rows.iter().find(|r| r.preview.is_some()));
    let (text_area, preview_area) = match preview {
        Some(_) if beside => {
            let [left, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
            (left, Some(right))
        }
        Some(row) => {
            // Eight rows, or as many as the preview takes while the dialog keeps 16.
            let taken = preview_lines(row.preview.as_deref().unwrap_or_default(), look, area.width.saturating_sub(2) as usize).len();
            let height = (taken.saturating_add(2).min(usize::from(area.height.saturating_sub(16))) as u16).max(8);
            let [top, bottom] = Layout::vertical([Constraint::Min(6), Constraint::Length(height)]).areas(area);
            (top, Some(bottom))
        }
        None => (area, None),
    };
    // The pane keeps its place; it shows the highlighted option's preview, or says it has none.
    let focused = view.rows.iter().find(|r| r.focused);
    let mut preview_cut = false;
    if let (Some(row), Some(at)) = (focused.filter(|r| r.preview.is_some()).or(preview), preview_area) {
        let (inner, rows) = (at.width.saturating_sub(2) as usize, at.height.saturating_sub(2) as usize);
        let own = focused.is_none_or(|f| f.index == row.index);
        let mut text = match own {
            true => preview_lines(row.preview.as_deref().unwrap_or_default(), look, inner),
            false => vec![Line::styled("This option has no preview.", look.dim())],
        };
        // Longer than the pane: a window PgDn/PgUp move, and a line saying where it is.
        let mut top = 0;
        if text.len() > rows && rows > 0 {
            let (total, room) = (text.len(), rows - 1);
            top = app.preview_top(view.active_tab, row.index).min(total - room);
            text = text.drain(top..top + room).collect();
            let more = total - top - room;
            let at = match (top, more) {
                (0, _) => format!("… {more} more lines · PgDn: more"),
                (_, 0) => format!("… lines {}-{total} of {total} · PgUp: back", top + 1),
                _ => format!("… lines {}-{} of {total} · PgDn: more · PgUp: back", top + 1, top + room),
            };
            text.push(wrap::cut(&Line::styled(at, look.dim()), inner));
            preview_cut = true;
        }
        app.preview_shown(view.active_tab, if own { row.index } else { usize::MAX }, top);
        let label = focused.filter(|_| !own).map_or(&row.label, |f| &f.label);
        let title = wrap::cut(&Line::raw(format!(" Preview: {} ", safe(label))), inner);
        let block = Block::default().borders(Borders::ALL).border_style(look.dim()).title(title);
        frame.render_widget(Paragraph::new(text).block(block), at);
    }
    let width = text_area.width as usize;
    let mut lines = notice(width);
    let asks = Line::from(vec![
        Span::styled(safe(&asker), Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(format!(" asks{to} · waiting {}{schedule}", waited(look.now.saturating_sub(created))), look.dim()),
    ]);
    lines.extend(wrap::wrap(&asks, width, 2));
    if nobody_waits {
        let text = "Nobody waits for this answer now (the agent went away); it is kept for the agent if it asks again.";
        lines.extend(wrap::wrap_text(text, look.warn(), width, 0));
    }
    if let Some((top, end_shown)) = dialog_lines(&mut lines, &view, look, width, app.body_top()) {
        app.body_shown(top, end_shown);
    }

    // The typed answer (or the note being written), in a box with the cursor.
    let editing_note = matches!(app.mode, Mode::Note(_));
    let editing = matches!(app.mode, Mode::Dialog) && (view.editing || view.question.as_ref().is_some_and(|q| q.free_text));
    let box_height = match &app.mode {
        Mode::Note(e) => (e.text().lines().count().clamp(1, 4) + 2) as u16,
        Mode::Dialog if editing => (app.editor.text().lines().count().clamp(1, 4) + 2) as u16,
        Mode::Dialog => 0,
    };

    let mut tail: Vec<Line> = Vec::new();
    if !view.notes.is_empty() && !editing_note {
        tail.extend(wrap::wrap_text(&format!("Note: {}", safe(&view.notes)), look.dim(), width, 2));
    }
    if let Some(p) = &view.prompt {
        let keys = if p.default_yes { "[Y/n]" } else { "[y/N]" };
        tail.extend(wrap::wrap_text(&format!("{} {keys}", safe(&p.text)), look.warn().add_modifier(Modifier::BOLD), width, 0));
        for lost in &p.lost {
            tail.extend(wrap::wrap_text(&format!("  {}", safe(lost)), look.dim(), width, 4));
        }
    }
    if let Some(h) = &view.hint {
        tail.extend(wrap::wrap_text(&safe(h), look.warn(), width, 0));
    }
    if let Some(s) = &status {
        tail.extend(wrap::wrap_text(&safe(s), look.dim(), width, 0));
    }
    let mut keys = footer(&view, editing_note);
    if preview_cut && !editing_note && view.prompt.is_none() {
        keys.push_str(" • PgDn/PgUp preview");
    }
    tail.extend(keys_lines(&keys, width).into_iter().map(|l| Line::styled(l, look.dim())));

    // As many options as fit in what is left, each option with all its lines.
    let options = option_lines(&view, look, width);
    let used = lines.len() + box_height as usize + tail.len();
    let room = (text_area.height as usize).saturating_sub(used);
    let all: usize = options.iter().map(Vec::len).sum();
    let viewport = if all <= room { options.len() } else { fit(&options, room.saturating_sub(2)) };
    app.resize(viewport.max(1));
    let Some((_, dialog)) = app.dialog() else { return };
    let view = dialog.state();
    if view.question.as_ref().is_some_and(|q| !q.free_text) {
        let options = option_lines(&view, look, width);
        if view.window.above > 0 {
            lines.push(Line::styled(format!("  ↑ {} more", view.window.above), look.dim()));
        }
        let end = view.window.end.min(options.len());
        for row in &options[view.window.start.min(end)..end] {
            lines.extend(row.iter().cloned());
        }
        if view.window.below > 0 {
            lines.push(Line::styled(format!("  ↓ {} more", view.window.below), look.dim()));
        }
    }

    let editor: Option<(&Editor, &str)> = match &app.mode {
        Mode::Note(e) => Some((e, " Note for the agent ")),
        Mode::Dialog if editing => Some((&app.editor, " Your answer ")),
        Mode::Dialog => None,
    };
    let [above, boxed, below] =
        Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Length(box_height), Constraint::Min(0)]).areas(text_area);
    frame.render_widget(Paragraph::new(lines), above);
    if let Some((e, title)) = editor {
        draw_editor(frame, e, title, boxed, look);
    }
    frame.render_widget(Paragraph::new(tail), below);
}

/// The most rows that fit in `room` lines wherever the list is scrolled to.
fn fit(rows: &[Vec<Line>], room: usize) -> usize {
    let heights: Vec<usize> = rows.iter().map(Vec::len).collect();
    let mut n = heights.len().min(room);
    while n > 1 && heights.windows(n).any(|w| w.iter().sum::<usize>() > room) {
        n -= 1;
    }
    n.max(1)
}

/// The keys that work now, as the footer says them: the core's for the dialog, and the
/// terminal's own (n, c, Tab) only where they are keys and not letters being typed.
fn footer(view: &View, editing_note: bool) -> String {
    if editing_note {
        return "Enter saves the note • Esc closes it".into();
    }
    // The core's footer names Alt+Enter for a new line, as the dialog was made (app.rs).
    let mut keys = view.footer.clone();
    if view.prompt.is_some() || view.done.is_some() {
        return keys;
    }
    if !view.editing {
        if view.question.is_some() {
            keys.push_str(" • n note");
        }
        keys.push_str(" • c chat about this");
    }
    if view.tabs.len() >= 2 {
        keys.push_str(" • Tab next question");
    }
    keys
}

/// Key hints ("a • b c • d") in lines `width` columns wide, broken between hints rather
/// than inside one where it can.
fn keys_lines(keys: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in keys.split(" • ") {
        match lines.last_mut() {
            Some(line) if wrap::width(line) + 3 + wrap::width(part) <= width => {
                line.push_str(" • ");
                line.push_str(part);
            }
            _ => lines.push(part.to_owned()),
        }
    }
    lines.iter().flat_map(|l| wrap::wrap(&Line::raw(l.clone()), width, 2)).map(|l| l.to_string()).collect()
}

/// The tabs, the question (or the review), as lines `width` columns wide.
/// Returns, for an approval, the first line of its body shown and whether its end is.
fn dialog_lines(lines: &mut Vec<Line<'static>>, view: &View, look: Look, width: usize, top: usize) -> Option<(usize, bool)> {
    if view.tabs.len() >= 2 {
        let mut spans = Vec::new();
        for (i, t) in view.tabs.iter().enumerate() {
            // Submit reviews and sends; it is never itself "answered".
            let label = format!(" {}{} ", if t.answered && !t.is_submit { "✓ " } else { "" }, safe(&t.label));
            let style = if i == view.active_tab { look.style(Style::default().add_modifier(Modifier::REVERSED)) } else { look.dim() };
            spans.push(Span::styled(label, style));
            spans.push(Span::raw(" "));
        }
        lines.extend(wrap::wrap(&Line::from(spans), width, 0));
    }
    if view.on_submit_tab {
        lines.push(Line::styled("Review your answers", Style::default().add_modifier(Modifier::BOLD)));
        for item in &view.review {
            let answer = item.answer.as_deref().map_or_else(|| "— not answered".to_owned(), safe);
            let line = Line::from(vec![
                Span::styled(format!("{}: ", safe(&item.label)), look.accent()),
                Span::raw(format!("{} → {answer}", safe(&crate::term::one_line(&item.question)))),
            ]);
            lines.extend(wrap::wrap(&line, width, 2));
        }
        if !view.unanswered.is_empty() {
            lines.extend(wrap::wrap_text(&format!("Not answered yet: {}", safe(&view.unanswered.join("; "))), look.warn(), width, 2));
        }
        lines.push(Line::styled("Enter submits · Esc declines", look.accent()));
        return None;
    }
    let Some(q) = &view.question else { return None };
    if let Some(approval) = &view.approval {
        return Some(approval_lines(lines, approval, look, width, top));
    }
    let mut meta = Vec::new();
    if let Some(h) = &q.header {
        meta.push(Span::styled(format!("[{}] ", safe(h)), look.accent()));
    }
    meta.push(Span::styled(q.kind(), look.dim()));
    lines.extend(wrap::wrap(&Line::from(meta), width, 0));
    lines.extend(wrap::wrap_text(&safe(&q.text), Style::default().add_modifier(Modifier::BOLD), width, 0));
    None
}

/// Each option (and the Other row) as its lines `width` columns wide: the pointer, the
/// number (right-aligned to the widest) or an approval's key, the mark, the label
/// wrapped under itself, and the description beside it when it fits, else below it.
fn option_lines(view: &View, look: Look, width: usize) -> Vec<Vec<Line<'static>>> {
    let Some(q) = &view.question else { return vec![] };
    let digits = view.rows.iter().filter_map(|r| r.number).max().map_or(1, |n| n.to_string().len());
    view.rows
        .iter()
        .map(|row| {
            let pointer = if row.focused { "›" } else { " " };
            let mark = match (q.multi_select, row.selected) {
                (true, true) => "[x]",
                (true, false) => "[ ]",
                (false, true) => "(•)",
                (false, false) => "( )",
            };
            let number = match (&view.approval, &row.key, row.number) {
                (Some(_), Some(key), _) => format!("{key:<digits$} "),
                (None, _, Some(n)) => format!("{n:>digits$}."),
                _ => " ".repeat(digits + 1),
            };
            let prefix = format!("{pointer} {number} {mark} ");
            let indent = wrap::width(&prefix);
            let style = if row.focused { look.accent() } else { Style::default() };
            let label = Span::styled(format!("{prefix}{}", safe(&row.label)), style);
            let description = row.description.as_deref().map(safe).filter(|d| !d.trim().is_empty());
            match description {
                Some(d) if !d.contains('\n') && label.width() + 2 + wrap::width(&d) <= width => {
                    vec![Line::from(vec![label, Span::styled(format!("  {d}"), look.dim())])]
                }
                Some(d) => {
                    let mut lines = wrap::wrap(&Line::from(label), width, indent);
                    for part in d.lines() {
                        let line = Line::from(vec![Span::raw(" ".repeat(indent)), Span::styled(part.to_owned(), look.dim())]);
                        lines.extend(wrap::wrap(&line, width, indent));
                    }
                    lines
                }
                None => wrap::wrap(&Line::from(label), width, indent),
            }
        })
        .collect()
}

/// Lines of a diff, a new file or arguments shown at most; the page shows them all.
const APPROVAL_LINES: usize = 14;

/// An approval: what will happen (a command, a diff, a new file's head, the arguments)
/// rather than the question's text, `width` columns wide.
fn approval_lines(lines: &mut Vec<Line<'static>>, approval: &ApprovalView, look: Look, width: usize, top: usize) -> (usize, bool) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let head = Line::from(vec![Span::styled(format!("[{}] ", safe(&approval.tool)), look.accent()), Span::styled("Approval", look.dim())]);
    lines.extend(wrap::wrap(&head, width, 0));
    lines.extend(wrap::wrap_text(&safe(&approval.title), bold, width, 0));
    let mut body: Vec<Line<'static>> = Vec::new();
    match &approval.shown {
        Shown::Command { command, .. } => {
            for (i, line) in safe(command).lines().enumerate() {
                body.push(Line::styled(format!("{} {line}", if i == 0 { "$" } else { ">" }), bold));
            }
        }
        Shown::Diff { lines: diff, .. } => {
            for line in diff {
                let (style, mark) = match line.change {
                    Change::Added => (look.style(Style::default().fg(Color::Green)), "+ "),
                    Change::Removed => (look.style(Style::default().fg(Color::Red)), "- "),
                    Change::Same => (look.dim(), "  "),
                    Change::Gap => (look.dim(), ""),
                };
                let text = if line.change == Change::Gap { "…".to_owned() } else { safe(&line.text) };
                // A line wider than the terminal goes on under itself with its mark again:
                // a wrapped + or - line never reads as unchanged.
                for piece in wrap::wrap_text(&text, style, width.saturating_sub(2 + mark.len()), 0) {
                    body.push(Line::from([Span::styled(mark, style)].into_iter().chain(piece.spans).collect::<Vec<_>>()));
                }
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
    // Indented, and a long line goes on under itself rather than off the edge: rows on
    // the screen. More rows than the room: a window PgDn/PgUp move, and a line saying
    // where it is. It cannot be allowed until its end has been on screen (App::body_shown).
    let mut rows: Vec<Line<'static>> = body
        .into_iter()
        .flat_map(|mut line| {
            line.spans.insert(0, Span::raw("  "));
            wrap::wrap(&line, width, 4)
        })
        .collect();
    let total = rows.len();
    let room = APPROVAL_LINES - 1;
    let top = if total > APPROVAL_LINES { top.min(total - room) } else { 0 };
    if total > APPROVAL_LINES {
        rows = rows.drain(top..top + room).collect();
        let keys = if top + room < total { "PgDn: more (read it all before allowing)" } else { "PgUp: back" };
        let at = format!("  … lines {}-{} of {total} · {keys}", top + 1, top + room);
        rows.extend(wrap::wrap_text(&at, look.dim(), width, 4));
    }
    lines.extend(rows);
    if let Some(reason) = &approval.reason {
        lines.extend(wrap::wrap_text(&format!("Why: {}", safe(&crate::term::one_line(reason))), look.dim(), width, 5));
    }
    (top, top + room >= total)
}

/// An option's preview read as markdown ([`markdown`]), as lines `width` columns wide:
/// headings bold without their `#`, code indented in a colour of its own, lists with
/// their markers, quotes behind a bar, a link as its text and its URL, tables boxed with
/// their columns aligned by display width. Every string of it goes through [`safe`].
fn preview_lines(text: &str, look: Look, width: usize) -> Vec<Line<'static>> {
    let doc = markdown::parse(text);
    let mut lines = md_blocks(&doc.blocks, look, width.max(1), true);
    if doc.truncated {
        lines.push(Line::styled("… (the rest is too long to show)", look.dim()));
    }
    lines
}

/// Blocks one under the other, with a blank line between them when `spaced` (not
/// inside a list item, where a nested list follows its text).
fn md_blocks(blocks: &[markdown::Block], look: Look, width: usize, spaced: bool) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 && spaced {
            out.push(Line::default());
        }
        out.extend(md_block(block, look, width));
    }
    out
}

/// `lines` with `first` before the first one and `rest` before the others.
fn prefixed(lines: Vec<Line<'static>>, first: Span<'static>, rest: Span<'static>) -> Vec<Line<'static>> {
    let lines = if lines.is_empty() { vec![Line::default()] } else { lines };
    lines
        .into_iter()
        .enumerate()
        .map(|(i, mut line)| {
            line.spans.insert(0, if i == 0 { first.clone() } else { rest.clone() });
            line
        })
        .collect()
}

fn code_style(look: Look) -> Style {
    look.style(Style::default().fg(Color::LightBlue))
}

fn md_block(block: &markdown::Block, look: Look, width: usize) -> Vec<Line<'static>> {
    let wrapped = |lines: Vec<Vec<Span<'static>>>| lines.into_iter().flat_map(|spans| wrap::wrap(&Line::from(spans), width, 0)).collect();
    match block {
        markdown::Block::Heading { level, content } => {
            let mut style = Style::default().add_modifier(Modifier::BOLD);
            if *level == 1 {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            wrapped(md_spans(content, style, look))
        }
        markdown::Block::Paragraph(content) => wrapped(md_spans(content, Style::default(), look)),
        markdown::Block::Code { text, .. } => text
            .split('\n')
            .flat_map(|line| {
                let line = Line::from(vec![Span::raw("  "), Span::styled(safe(line), code_style(look))]);
                wrap::wrap(&line, width, 2)
            })
            .collect(),
        markdown::Block::List { start, items } => {
            let markers: Vec<String> = match start {
                Some(n) => (0..items.len() as u64).map(|i| format!("{}. ", n.saturating_add(i))).collect(),
                None => vec!["• ".to_owned(); items.len()],
            };
            let indent = markers.iter().map(|m| wrap::width(m)).max().unwrap_or(2);
            let mut out = Vec::new();
            for (item, marker) in items.iter().zip(markers) {
                let lines = md_blocks(item, look, width.saturating_sub(indent).max(1), false);
                let first = Span::styled(format!("{marker:>indent$}"), look.dim());
                out.extend(prefixed(lines, first, Span::raw(" ".repeat(indent))));
            }
            out
        }
        markdown::Block::Quote(blocks) => {
            let bar = Span::styled("│ ", look.dim());
            prefixed(md_blocks(blocks, look, width.saturating_sub(2).max(1), true), bar.clone(), bar)
        }
        markdown::Block::Rule => vec![Line::styled("─".repeat(width), look.dim())],
        markdown::Block::Table(table) => md_table(table, look, width),
    }
}

/// Inlines as lines of spans (a break starts a line), each string made safe.
fn md_spans(inlines: &[Inline], style: Style, look: Look) -> Vec<Vec<Span<'static>>> {
    fn walk(inlines: &[Inline], style: Style, look: Look, out: &mut Vec<Vec<Span<'static>>>) {
        for inline in inlines {
            let line = out.last_mut().expect("a line");
            match inline {
                Inline::Text(t) => line.push(Span::styled(safe(t), style)),
                Inline::Code(c) => line.push(Span::styled(safe(c), style.patch(code_style(look)))),
                Inline::Strong(c) => walk(c, style.add_modifier(Modifier::BOLD), look, out),
                Inline::Emphasis(c) => walk(c, style.add_modifier(Modifier::ITALIC), look, out),
                Inline::Strike(c) => walk(c, style.add_modifier(Modifier::CROSSED_OUT), look, out),
                Inline::Link { content, url } => {
                    walk(content, style.add_modifier(Modifier::UNDERLINED), look, out);
                    if !Inline::is_bare_link(content, url) {
                        out.last_mut().expect("a line").push(Span::styled(format!(" ({})", safe(url)), look.dim()));
                    }
                }
                Inline::Break => out.push(Vec::new()),
            }
        }
    }
    let mut out = vec![Vec::new()];
    walk(inlines, style, look, &mut out);
    out
}

/// A table boxed in lines, each column as wide as its widest cell (by display width)
/// while they fit in `width`; the widest give way first, their cells wrapped.
fn md_table(table: &markdown::Table, look: Look, width: usize) -> Vec<Line<'static>> {
    let columns = table.rows.iter().map(Vec::len).chain([table.head.len()]).max().unwrap_or(0);
    let cell = |cells: &[Vec<Inline>], i: usize, style: Style| -> Line<'static> {
        let spans = cells.get(i).map(|c| md_spans(c, style, look).concat()).unwrap_or_default();
        Line::from(spans)
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let head: Vec<Line> = (0..columns).map(|i| cell(&table.head, i, bold)).collect();
    let rows: Vec<Vec<Line>> = table.rows.iter().map(|r| (0..columns).map(|i| cell(r, i, Style::default())).collect()).collect();
    // "│ " before each cell, " " after it, and the last "│".
    let room = width.saturating_sub(3 * columns + 1);
    if columns == 0 || room < columns {
        // No room for a box: each row on its own, its cells apart.
        return std::iter::once(&head)
            .chain(&rows)
            .flat_map(|r| {
                let mut spans = Vec::new();
                for (i, c) in r.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" │ ", look.dim()));
                    }
                    spans.extend(c.spans.iter().cloned());
                }
                wrap::wrap(&Line::from(spans), width, 2)
            })
            .collect();
    }
    let mut widths: Vec<usize> =
        (0..columns).map(|i| std::iter::once(&head).chain(&rows).map(|r| r[i].width()).max().unwrap_or(0).max(1)).collect();
    while widths.iter().sum::<usize>() > room {
        let widest = (0..columns).max_by_key(|&i| widths[i]).expect("a column");
        widths[widest] -= 1;
    }
    let border = |left: &str, middle: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        Line::styled(format!("{left}{}{right}", parts.join(middle)), look.dim())
    };
    let row_lines = |row: &[Line<'static>]| -> Vec<Line<'static>> {
        let cells: Vec<Vec<Line<'static>>> = row.iter().zip(&widths).map(|(c, &w)| wrap::wrap(c, w, 0)).collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|k| {
                let mut spans = Vec::new();
                for (i, lines) in cells.iter().enumerate() {
                    spans.push(Span::styled("│ ", look.dim()));
                    let line = lines.get(k).cloned().unwrap_or_default();
                    let pad = widths[i].saturating_sub(line.width());
                    let before = match table.align.get(i) {
                        Some(Align::Right) => pad,
                        Some(Align::Center) => pad / 2,
                        _ => 0,
                    };
                    spans.push(Span::raw(" ".repeat(before)));
                    spans.extend(line.spans);
                    spans.push(Span::raw(" ".repeat(pad - before + 1)));
                }
                spans.push(Span::styled("│", look.dim()));
                Line::from(spans)
            })
            .collect()
    };
    let mut out = vec![border("┌", "┬", "┐")];
    out.extend(row_lines(&head));
    out.push(border("├", "┼", "┤"));
    for row in &rows {
        out.extend(row_lines(row));
    }
    out.push(border("└", "┴", "┘"));
    out
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
mod tests;
