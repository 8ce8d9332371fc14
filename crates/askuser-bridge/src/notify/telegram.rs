//! Telegram as a channel that answers: a pending question set as a bot message with an
//! inline keyboard ([`message`]), the same message once the set closed ([`answered`]),
//! the updates a bot receives ([`Update`]), what a button press or a reply chose
//! ([`pressed`], [`replied`]). When each of several bridges sharing a store may poll is
//! [`super::channel::Lease`]'s. Pure: no IO, no clock (`now_ms` is passed in); `telegram_bot.rs` sends,
//! edits and polls.
//!
//! # Why the JSON is written here, not with frankenstein
//! `frankenstein` 0.52 with `default-features = false, features = ["trait-async"]` brings
//! no HTTP client and no TLS (`hyper`, `rustls` and `reqwest` stay out; its async trait
//! could run over the bridge's own client). But its types come with 14 more crates the
//! bridge has no other use for (`bon` and `bon-macros`, `darling` 0.24, `serde_with` and
//! its macros, `prettyplease`, `paste`, `pastey`, `macro_rules_attribute`, …), measured on
//! the 2-core machine at +101 s wall (+106 s CPU) on top of a build that already had
//! reqwest, serde and tokio (`darling_core` 40 s, `bon-macros` 36 s, `frankenstein` itself
//! 29 s, `serde_with_macros` 11 s). And its `Update` is an enum of every update kind with no
//! catch-all: one update of a kind newer than the crate (or a new variant deep in its
//! 130-field `Message`) fails the whole `getUpdates` answer, and a poller that cannot read
//! an `update_id` cannot step past it. The bot uses five methods and reads a handful of
//! fields; they are written here with serde, and an update is read field by field
//! ([`Update::parse`]) so anything unknown in it is skipped, never fatal.
//!
//! # Agent text
//! Messages are sent without `parse_mode`: no agent text is ever read as Markdown or HTML,
//! so `*bold*`, `[label](url)` or `<a href>` show as typed. Telegram still finds links,
//! mentions, hashtags and bot commands in plain text by itself; in agent prose each place
//! where it would ("evil.example", "@channel", "#tag", "$TAG", "/start", "tg://") gets a
//! zero-width space after its `.`, `@`, `#`, `$`, `/` or `:` ([`defuse`]), which Telegram's
//! finders (tdlib's `find_entities`, which the Bot API runs on every text) do not take as
//! part of a domain, a name or a command, so nothing an agent writes becomes a link or a
//! ping; code (an approval's command or diff, fenced blocks, code spans) goes in `pre` and
//! `code` entities, over which tdlib drops whatever it finds, and so is shown and copied
//! exactly as the agent wrote it. Link previews are off. Control characters become spaces and the
//! characters that reorder text (bidi overrides and isolates) are dropped. The whole text
//! is at most [`MAX_TEXT`] UTF-16 code units (what Telegram counts), the question cut by
//! characters with "…" when needed; the options and what to do stay whole.
//!
//! # Mapping a press or a reply back
//! The bridge keeps each message's chat and `message_id` as it sent it
//! ([`crate::store::Deliveries::add_notified`]), and finds the question set from them: a
//! button's `callback_data` never carries the set's id (which may not fit Telegram's
//! [`MAX_CALLBACK_DATA`] bytes). It is `MARK:ACTION`, `MARK` being 16 hex digits of the
//! set's id's SHA-256, checked against the record found ([`pressed`]), so a press is taken
//! only for the set its message shows; `ACTION` is `o{j}` (option `j`, checked against the
//! question's options) or `no` (Decline).

use super::channel::permission;
use askuser_core::approval::{self, ALLOW, DENY};
use askuser_core::protocol::QuestionRecord;
use askuser_core::text::{segments, summary, Segment};
use askuser_core::{resolve, Question, Selection, Status};
use serde::Deserialize;
use serde_json::{json, Value};

/// A message's text, in UTF-16 code units.
pub const MAX_TEXT: usize = 4096;
/// A button's `callback_data`, in bytes.
#[cfg(test)]
pub const MAX_CALLBACK_DATA: usize = 64;
/// The text `answerCallbackQuery` shows, in characters.
pub const MAX_CALLBACK_TEXT: usize = 200;
/// Formatting entities in one message.
#[cfg(test)]
pub const MAX_ENTITIES: usize = 100;

/// Code entities at most; later code is shown as prose.
const MAX_CODE: usize = 20;
/// A button's text (Telegram takes more; clients cut it anyway).
const MAX_BUTTON_TEXT: usize = 60;
/// Options shown as one labelled button a row; a question with more gets numbered
/// buttons, [`NUMBERS_A_ROW`] a row (the labels are in the text).
const LABELLED_BUTTONS: usize = 10;
const NUMBERS_A_ROW: usize = 8;
/// What the options and what-to-do may take of the text at most.
const MAX_TAIL: usize = 2600;

/// What a press on a Decline button carries after the mark.
const DECLINE: &str = "no";

/// A message as `sendMessage` and `editMessageText` take it (without the chat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub text: String,
    /// `pre` and `code` entities over agent code.
    pub entities: Vec<Entity>,
    /// Rows of buttons; none: no keyboard (an edit without one removes it).
    pub keyboard: Vec<Vec<Button>>,
}

/// A formatting entity: `kind` over `length` UTF-16 code units from `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub kind: &'static str,
    pub offset: usize,
    pub length: usize,
}

/// An inline keyboard button that sends `data` back when pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub text: String,
    pub data: String,
}

impl Outgoing {
    /// The JSON fields of `sendMessage` / `editMessageText` besides the chat (and the
    /// message): no `parse_mode`, link previews off, the keyboard if any.
    pub fn fields(&self) -> Value {
        let entities: Vec<Value> = self.entities.iter().map(|e| json!({"type": e.kind, "offset": e.offset, "length": e.length})).collect();
        let mut fields = json!({"text": self.text, "entities": entities, "link_preview_options": {"is_disabled": true}});
        if !self.keyboard.is_empty() {
            let rows: Vec<Vec<Value>> =
                self.keyboard.iter().map(|row| row.iter().map(|b| json!({"text": b.text, "callback_data": b.data})).collect()).collect();
            fields["reply_markup"] = json!({ "inline_keyboard": rows });
        }
        fields
    }
}

/// The length Telegram counts: UTF-16 code units.
pub fn len16(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `text` cut to at most `max` UTF-16 code units, ending with "…" when cut; never
/// inside a character.
pub fn cut(text: &str, max: usize) -> String {
    if len16(text) <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        if used + c.len_utf16() > max.saturating_sub(1) {
            break;
        }
        used += c.len_utf16();
        out.push(c);
    }
    out.push('…');
    out
}

/// Agent text made safe to show: `\r` dropped, other control characters but `\n` as
/// spaces, and the characters that reorder how text is drawn (bidi embeddings, overrides,
/// isolates, line and paragraph separators) dropped.
fn clean(text: &str) -> String {
    text.chars()
        .filter(|&c| c != '\r' && !matches!(c, '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect()
}

/// The character [`defuse`] puts in: Telegram's link, mention and command finders stop at it.
const BREAK: char = '\u{200B}';

/// Agent prose that Telegram cannot make a link, mention, hashtag or bot command of: a
/// zero-width space after every `.`, `@`, `#` and `$` that something follows, after a `:`
/// before a `/` (`tg://`), and after a `/` that begins a word (`/start`). Cleaned as
/// [`clean`] does first.
pub fn defuse(text: &str) -> String {
    let text = clean(text);
    let mut out = String::with_capacity(text.len() + 16);
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let next = chars.peek().copied();
        let followed = next.is_some_and(|n| !n.is_whitespace());
        let trigger = match c {
            '.' | '@' | '#' | '$' => followed,
            ':' => next == Some('/'),
            '/' => {
                next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '_')
                    && !previous.is_some_and(|p| p.is_alphanumeric() || "_/<>".contains(p))
            }
            _ => false,
        };
        if trigger {
            out.push(BREAK);
        }
        previous = Some(c);
    }
    out
}

/// One piece of a message's text, as it is shown, and the entity over it if any.
#[derive(Debug, Clone)]
struct Piece {
    text: String,
    entity: Option<&'static str>,
}

impl Piece {
    /// askuser's own words, as they are.
    fn own(text: impl Into<String>) -> Piece {
        Piece { text: text.into(), entity: None }
    }

    /// Agent prose, defused.
    fn agent(text: &str) -> Piece {
        Piece { text: defuse(text), entity: None }
    }

    /// Agent prose cut to `max` first.
    fn agent_cut(text: &str, max: usize) -> Piece {
        Piece { text: cut(&defuse(text), max), entity: None }
    }
}

/// Builds pieces, keeping the code entities within [`MAX_CODE`].
#[derive(Default)]
struct Pieces {
    pieces: Vec<Piece>,
    code: usize,
}

impl Pieces {
    fn own(&mut self, text: impl Into<String>) {
        self.pieces.push(Piece::own(text));
    }

    fn agent(&mut self, text: &str) {
        self.pieces.push(Piece::agent(text));
    }

    /// Agent code as `kind` (`pre` or `code`): shown as written, found nothing in.
    fn code(&mut self, text: &str, kind: &'static str) {
        let text = clean(text);
        if text.trim().is_empty() {
            return;
        }
        if self.code >= MAX_CODE {
            return self.agent(&text);
        }
        self.code += 1;
        self.pieces.push(Piece { text, entity: Some(kind) });
    }

    /// Question text: prose, code spans and fenced blocks.
    fn text(&mut self, text: &str) {
        for segment in segments(text) {
            match segment {
                Segment::Text(t) => self.agent(&t),
                Segment::Code(c) => self.code(&c, "code"),
                Segment::Block(b) => {
                    self.own("\n");
                    self.code(&b, "pre");
                    self.own("\n");
                }
            }
        }
    }
}

/// `head`, `body` and `tail` as one text of at most [`MAX_TEXT`]: `body` is cut (its
/// first piece that does not fit ends with "…", the rest is left out) so that `head` and
/// `tail` stay whole. `true` when `body` was cut.
fn compose(head: Vec<Piece>, body: Vec<Piece>, tail: Vec<Piece>) -> (String, Vec<Entity>, bool) {
    let fixed: usize = head.iter().chain(&tail).map(|p| len16(&p.text)).sum();
    let mut room = MAX_TEXT.saturating_sub(fixed);
    let mut kept = Vec::new();
    let mut was_cut = false;
    for piece in body {
        let n = len16(&piece.text);
        if n <= room {
            room -= n;
            kept.push(piece);
            continue;
        }
        was_cut = true;
        if room >= 2 {
            kept.push(Piece { text: cut(&piece.text, room), entity: piece.entity });
        }
        break;
    }
    let mut text = String::new();
    let mut entities = Vec::new();
    let mut at = 0;
    for piece in head.into_iter().chain(kept).chain(tail) {
        let n = len16(&piece.text);
        if let Some(kind) = piece.entity {
            entities.push(Entity { kind, offset: at, length: n });
        }
        text.push_str(&piece.text);
        at += n;
    }
    (text, entities, was_cut)
}

/// The first line: who asks (and the chip of a lone question).
fn header(record: &QuestionRecord) -> Vec<Piece> {
    let line = super::Headline::of(record).line(100, 60, |text, max| cut(&defuse(text), max));
    vec![Piece::own(line), Piece::own("\n\n")]
}

/// What a question set for the message's buttons is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An approval: Allow and Deny (option `allow`, option `deny`).
    Approval { allow: usize, deny: usize },
    /// One question with one answer: a button per option.
    One,
    /// One question with several answers: a reply with their numbers.
    Many,
    /// One question answered in words.
    Words,
    /// Several questions: answered in askuser.
    Several,
}

fn kind(record: &QuestionRecord) -> Kind {
    let questions = &record.request.questions;
    let [q] = questions.as_slice() else { return Kind::Several };
    if permission(record).is_some() {
        let at = |label: &str| q.options.iter().position(|o| o.label == label);
        if let (Some(allow), Some(deny)) = (at(ALLOW), at(DENY)) {
            return Kind::Approval { allow, deny };
        }
    }
    match (q.options.is_empty(), q.multi_select) {
        (true, _) => Kind::Words,
        (false, true) => Kind::Many,
        (false, false) => Kind::One,
    }
}

/// A question set's mark in its buttons: 16 hex digits of its id's SHA-256.
pub fn mark(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    digest.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn button(text: &str, mark: &str, action: &str) -> Button {
    Button { text: cut(&clean(text), MAX_BUTTON_TEXT), data: format!("{mark}:{action}") }
}

/// The body of an approval: what it asks, what it would do (as code) and why.
fn approval_body(view: &approval::ApprovalView, pieces: &mut Pieces) {
    pieces.agent(&view.title);
    let code = view.shown.as_text();
    if let Some(code) = code.filter(|c| !c.trim().is_empty()) {
        pieces.own("\n");
        pieces.code(code.trim_end_matches('\n'), "pre");
    }
    if let Some(reason) = &view.reason {
        pieces.own("\nWhy: ");
        pieces.agent(reason);
    }
}

/// Question `q`'s options, numbered, one a line (descriptions too when they fit).
fn option_lines(q: &Question) -> Vec<Piece> {
    let lines = |label_max: usize, description_max: Option<usize>| -> Vec<Piece> {
        let mut out = vec![];
        for (j, o) in q.options.iter().enumerate() {
            out.push(Piece::own(format!("\n{}. ", j + 1)));
            out.push(Piece::agent_cut(o.label.trim(), label_max));
            if let (Some(max), Some(d)) = (description_max, o.description.as_deref().filter(|d| !d.trim().is_empty())) {
                out.push(Piece::own(" — "));
                out.push(Piece::agent_cut(&summary(d), max));
            }
        }
        out
    };
    let size = |pieces: &[Piece]| pieces.iter().map(|p| len16(&p.text)).sum::<usize>();
    for (label_max, description_max) in [(100, Some(120)), (100, None), (40, None)] {
        let out = lines(label_max, description_max);
        if size(&out) <= MAX_TAIL - 400 {
            return out;
        }
    }
    lines(20, None)
}

/// Room kept for the line that links the set in askuser when [`whole`] measures.
const OPEN_LINE: usize = 600;

/// Whether an approval's message shows what it would do whole (its title, command or
/// diff and reason within [`MAX_TEXT`], with room for the link to askuser): only then
/// does it offer Allow. Not an approval: `true`.
fn whole(record: &QuestionRecord) -> bool {
    let Some(view) = permission(record).filter(|_| matches!(kind(record), Kind::Approval { .. })) else { return true };
    let mut body = Pieces::default();
    approval_body(&view, &mut body);
    let size = |pieces: &[Piece]| pieces.iter().map(|p| len16(&p.text)).sum::<usize>();
    let tail = len16(&format!("\n\n{}", instructions(kind(record), 1, true)));
    size(&header(record)) + size(&body.pieces) + tail + OPEN_LINE <= MAX_TEXT
}

/// What the person can do, in askuser's words; `whole`: the approval is shown whole.
fn instructions(kind: Kind, n: usize, whole: bool) -> String {
    match kind {
        Kind::Approval { .. } if !whole => {
            "Too long to show here whole: open askuser to see all of it and allow it. Deny it here, or reply to this message to deny it and say what to do instead.".into()
        }
        Kind::Approval { .. } => "Allow or Deny it, or reply to this message to deny it and say what to do instead.".into(),
        Kind::One => "Press an option, or reply to this message with its number or your own answer.".into(),
        Kind::Many => "Reply to this message with the numbers of your choices (like 1,3), or with your own answer.".into(),
        Kind::Words => "Reply to this message with your answer.".into(),
        Kind::Several => format!("{n} questions: answer them in askuser."),
    }
}

/// `open` as the last line, when given (askuser's own link: Telegram may link it).
fn open_line(open: Option<&str>) -> Option<Piece> {
    open.map(|url| Piece::own(format!("\nOpen askuser: {url}")))
}

/// The message for a pending question set: who asks, the question (an approval's command
/// or diff as code), the options numbered, what to do, and `open` (the set in askuser);
/// buttons: an option each for one question with one answer (Allow and Deny for an
/// approval), and Decline. Within [`MAX_TEXT`] and [`MAX_CALLBACK_DATA`].
pub fn message(record: &QuestionRecord, open: Option<&str>) -> Outgoing {
    reminder(record, open, None)
}

/// [`message`], with a reminder's `line` (`Reminder: still waiting since …`) first.
pub fn reminder(record: &QuestionRecord, open: Option<&str>, line: Option<&str>) -> Outgoing {
    let questions = &record.request.questions;
    let kind = kind(record);
    let mark = mark(&record.id);
    let mut body = Pieces::default();
    let mut tail = Vec::new();
    match (kind, questions.first()) {
        (Kind::Approval { .. }, _) => {
            if let Some(view) = permission(record) {
                approval_body(&view, &mut body);
            }
        }
        (Kind::Several, _) => {
            for (i, q) in questions.iter().enumerate() {
                body.own(if i == 0 { format!("{}. ", i + 1) } else { format!("\n{}. ", i + 1) });
                if let Some(chip) = q.header.as_deref().filter(|h| !h.trim().is_empty()) {
                    body.pieces.push(Piece::agent_cut(chip, 60));
                    body.own(": ");
                }
                body.pieces.push(Piece::agent_cut(&summary(&q.question), 300));
            }
        }
        (_, Some(q)) => {
            body.text(q.question.trim());
            tail.extend(option_lines(q));
        }
        (_, None) => {}
    }
    let compose_with = |whole: bool| {
        let mut tail = tail.clone();
        tail.push(Piece::own(format!("\n\n{}", instructions(kind, questions.len(), whole))));
        tail.extend(open_line(open));
        let head = line.map(|l| Piece::own(format!("{l}\n"))).into_iter().chain(header(record)).collect();
        compose(head, body.pieces.clone(), tail)
    };
    // An approval cut to fit offers no Allow: the person allows what they saw whole.
    let (mut text, mut entities, was_cut) = compose_with(whole(record));
    let shown_whole = whole(record) && !(matches!(kind, Kind::Approval { .. }) && was_cut);
    if !shown_whole {
        (text, entities, _) = compose_with(false);
    }
    let mut keyboard: Vec<Vec<Button>> = Vec::new();
    match (kind, questions.first()) {
        (Kind::Approval { allow, deny }, _) => match shown_whole {
            true => keyboard.push(vec![button(ALLOW, &mark, &format!("o{allow}")), button(DENY, &mark, &format!("o{deny}"))]),
            false => keyboard.push(vec![button(DENY, &mark, &format!("o{deny}"))]),
        },
        (Kind::One, Some(q)) if q.options.len() <= LABELLED_BUTTONS => {
            for (j, o) in q.options.iter().enumerate() {
                keyboard.push(vec![button(&format!("{}. {}", j + 1, o.label.trim()), &mark, &format!("o{j}"))]);
            }
        }
        (Kind::One, Some(q)) => {
            let numbers: Vec<Button> = (0..q.options.len()).map(|j| button(&(j + 1).to_string(), &mark, &format!("o{j}"))).collect();
            keyboard.extend(numbers.chunks(NUMBERS_A_ROW).map(<[Button]>::to_vec));
        }
        _ => {}
    }
    if !matches!(kind, Kind::Approval { .. }) {
        keyboard.push(vec![button("Decline", &mark, DECLINE)]);
    }
    Outgoing { text, entities, keyboard }
}

/// Who answered, as [`answered`] says it: a Telegram user by their @username (a mention)
/// or name (defused), else where.
fn by_whom(answered_by: Option<&str>) -> Vec<Piece> {
    let Some(by) = answered_by else { return vec![] };
    let Some(rest) = by.strip_prefix("telegram:") else {
        return vec![Piece::own(if by.starts_with("slack:") { " in Slack" } else { " in askuser" })];
    };
    match rest.split_once(' ').map(|(_, name)| name.trim()) {
        Some(name) if is_username(name) => vec![Piece::own(format!(" by {name}"))],
        Some(name) if !name.is_empty() => vec![Piece::own(" by "), Piece::agent_cut(name, 64)],
        _ => vec![Piece::own(" in Telegram")],
    }
}

/// `@` and a Telegram username (5 to 32 letters, digits and `_`).
fn is_username(name: &str) -> bool {
    name.strip_prefix('@').is_some_and(|u| (1..=32).contains(&u.len()) && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The message once the set closed: each question with its answer, and how it ended
/// ("Answered by @alice", "Declined by Bob", "Withdrawn by the agent", "Expired"); no
/// buttons.
pub fn answered(record: &QuestionRecord) -> Outgoing {
    let questions = &record.request.questions;
    let said = super::channel::said(record);
    let view = permission(record);
    let mut body = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        if i > 0 {
            body.push(Piece::own("\n\n"));
        }
        match (i, &view) {
            (0, Some(view)) => body.push(Piece::agent_cut(&view.title, 300)),
            _ => {
                if questions.len() > 1 {
                    body.push(Piece::own(format!("{}. ", i + 1)));
                }
                body.push(Piece::agent_cut(&summary(&q.question), 300));
            }
        }
        if let Some(said) = said.get(i) {
            body.push(Piece::own("\n→ "));
            body.push(Piece::agent_cut(said, 300));
        }
    }
    let chat = record.result.as_ref().is_some_and(|r| r.chat);
    let by = by_whom(record.answered_by.as_deref());
    let mut tail = vec![Piece::own("\n\n")];
    match record.status {
        Status::Answered => {
            tail.push(Piece::own("Answered"));
            tail.extend(by);
        }
        Status::Cancelled => {
            tail.push(Piece::own("Declined"));
            tail.extend(by);
            if chat {
                tail.push(Piece::own(": they would rather talk it over"));
            }
        }
        Status::Withdrawn => tail.push(Piece::own("Withdrawn by the agent")),
        Status::TimedOut => tail.push(Piece::own("Expired")),
        Status::Pending => tail.push(Piece::own("Not answered yet")),
    }
    let (text, entities, _) = compose(header(record), body, tail);
    Outgoing { text, entities, keyboard: vec![] }
}

/// What a press or a reply does to its question set.
pub use super::channel::Outcome;

/// What a button press with `data` chose on `record`'s message. A button of another set's
/// message, an option the record does not have, or anything not askuser's is an error that
/// says so (short enough for [`MAX_CALLBACK_TEXT`], naming no agent text).
pub fn pressed(record: &QuestionRecord, data: &str) -> Result<Outcome, String> {
    let Some((their_mark, action)) = data.split_once(':') else {
        return Err("That button is not one of askuser's.".into());
    };
    if their_mark != mark(&record.id) {
        return Err("That button belongs to another question set's message.".into());
    }
    if action == DECLINE {
        return Ok(Outcome::Decline);
    }
    let questions = &record.request.questions;
    let j =
        action.strip_prefix('o').filter(|j| !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit())).and_then(|j| j.parse::<usize>().ok());
    let (Some(j), [q]) = (j, questions.as_slice()) else {
        return Err("That button does not answer this question set; open it in askuser.".into());
    };
    let Some(choice) = q.options.get(j) else {
        return Err(format!("This question has no option {} (its message may be older than it).", j + 1));
    };
    if q.multi_select {
        return Err("This question takes several answers: reply to the message with their numbers (like 1,3).".into());
    }
    allowable(record, &choice.label)?;
    let selections = vec![Selection::option(choice.label.clone())];
    resolve(questions, &selections).map_err(|e| defuse(&e.to_string()))?;
    Ok(Outcome::Answer(selections))
}

/// What a reply with `text` to `record`'s message answers, as every chat reads a reply
/// ([`super::command::reply`]), with Telegram's Allow rule and agent text defused.
pub fn replied(record: &QuestionRecord, text: &str, open: Option<&str>) -> Result<Vec<Selection>, String> {
    super::command::reply(record, text, open, allowable, defuse)
}

/// Whether option `label` may be chosen from Telegram: on an approval, Deny, and Allow
/// only when the message shows it whole ([`whole`]); "Always allow" needs askuser,
/// which names its rule.
pub fn allowable(record: &QuestionRecord, label: &str) -> Result<(), String> {
    let approval = matches!(kind(record), Kind::Approval { .. });
    super::channel::allowable(approval, || whole(record), label)
}

/// `id` as it may follow `#q=` in a link: characters other than letters, digits and
/// `-_.~` %-escaped, so a link in a message ends where the id does.
pub fn fragment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The link to set `id` in askuser at `base` (the bridge's public origin).
pub fn open_link(base: &str, id: &str) -> String {
    format!("{base}/#q={}", fragment(id))
}

/// A Telegram user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct User {
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub username: Option<String>,
}

impl User {
    /// Who answered, as a record's `answered_by` keeps it: `telegram:ID @username`, or
    /// `telegram:ID First name` for a user without a username ([`answered`] shows the name).
    pub fn answered_by(&self) -> String {
        let username = self.username.as_deref().filter(|u| !u.is_empty() && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        match username {
            Some(u) => format!("telegram:{} @{}", self.id, cut(u, 32)),
            None => {
                let name = cut(clean(&self.first_name).trim(), 40);
                if name.is_empty() {
                    format!("telegram:{}", self.id)
                } else {
                    format!("telegram:{} {name}", self.id)
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ChatJson {
    #[serde(default)]
    id: i64,
    #[serde(default, rename = "type")]
    kind: String,
}

/// A message as far as the bot reads it (a reply's original too).
#[derive(Debug, Clone, Default, Deserialize)]
struct MessageJson {
    #[serde(default)]
    message_id: i64,
    #[serde(default)]
    chat: Option<ChatJson>,
    #[serde(default)]
    from: Option<User>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    reply_to_message: Option<Box<MessageJson>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct CallbackJson {
    #[serde(default)]
    id: String,
    #[serde(default)]
    from: User,
    #[serde(default)]
    message: Option<MessageJson>,
    #[serde(default)]
    data: Option<String>,
}

/// A button pressed in one of the bot's messages (a `callback_query`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The query's id, which `answerCallbackQuery` answers.
    pub id: String,
    pub from: User,
    /// The chat and the message the button is in (none for an inline message).
    pub chat: Option<i64>,
    pub message_id: Option<i64>,
    pub data: Option<String>,
}

/// A message in a chat the bot is in (its own, or a group that lets it read it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub chat: i64,
    /// A one-to-one chat with the bot.
    pub private: bool,
    pub message_id: i64,
    pub from: Option<User>,
    pub text: Option<String>,
    /// The message it replies to, and who wrote that.
    pub reply_to: Option<(i64, Option<User>)>,
}

/// What an update is about, as far as askuser cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Press(Press),
    Said(Said),
    /// Any other kind, or one whose fields are not as documented: skipped.
    Other,
}

/// One update from `getUpdates`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub id: i64,
    pub event: Event,
}

impl Update {
    /// Reads one element of `getUpdates`' result: `None` when it has no `update_id`
    /// (nothing to confirm it by); any kind of update but a message or a callback query,
    /// and one whose fields are not as documented, is [`Event::Other`].
    pub fn parse(value: &Value) -> Option<Update> {
        let id = value.get("update_id")?.as_i64()?;
        let event = if let Some(m) = value.get("message") {
            match MessageJson::deserialize(m) {
                Ok(m) => match &m.chat {
                    Some(chat) => Event::Said(Said {
                        chat: chat.id,
                        private: chat.kind == "private",
                        message_id: m.message_id,
                        from: m.from.clone(),
                        text: m.text.clone(),
                        reply_to: m.reply_to_message.as_ref().map(|r| (r.message_id, r.from.clone())),
                    }),
                    None => Event::Other,
                },
                Err(_) => Event::Other,
            }
        } else if let Some(q) = value.get("callback_query") {
            match CallbackJson::deserialize(q) {
                Ok(q) if !q.id.is_empty() => Event::Press(Press {
                    id: q.id,
                    from: q.from,
                    chat: q.message.as_ref().and_then(|m| m.chat.as_ref()).map(|c| c.id),
                    message_id: q.message.as_ref().map(|m| m.message_id),
                    data: q.data,
                }),
                _ => Event::Other,
            }
        } else {
            Event::Other
        };
        Some(Update { id, event })
    }
}

#[cfg(test)]
mod tests;
