//! Discord as a channel that answers: a pending question set as a bot message with
//! components ([`message`]), the same message once the set closed ([`answered`]), what a
//! press, a menu choice or a modal's words chose ([`act`], [`Interaction`]), and the
//! gateway's frames a bot sends and reads ([`Frame`], [`identify`], [`resume`],
//! [`heartbeat`]). Pure: no IO, no clock; `discord_bot.rs` posts, edits, answers
//! interactions and keeps the gateway connection.
//!
//! # Why a small gateway client here, not twilight
//! `twilight-gateway` 0.18 can be pointed at a local `ws://` server (its `proxy_url`), but
//! it opens its sockets with `tokio-websockets`, a second WebSocket stack beside the
//! `tokio-tungstenite` already in the lock file, whose TLS is chosen by its own features
//! (platform verifier, webpki or native roots): the bridge opens every socket through
//! `tls.rs` so that none trusts certificates its own way. It also brings `twilight-model`
//! (every Discord type, hundreds of structs, for the four fields read here),
//! `twilight-gateway-queue`, `bitflags` and zstd by default, and REST needs
//! `twilight-http` besides. Measured on the 2-core machine (a scratch crate, debug,
//! `default-features = false` with webpki roots): `twilight-gateway` 21 s and
//! `twilight-model` 21 s of compile on their own, and 9 crates this lock file does not
//! have (`tokio-websockets`, `webpki-roots`, `serde-value`, `serde_repr`, `ordered-float`,
//! `sha1_smol`, the queue and the two). What the bot needs of the gateway is five opcodes (Hello,
//! Identify, Heartbeat and its ACK, Resume), three dispatches (READY, INTERACTION_CREATE, MESSAGE_CREATE)
//! and the close codes that say stop: a few dozen lines over `tls::websocket`, tested
//! against a local gateway that checks the heartbeat and the resume.
//!
//! # Agent text
//! Messages are sent with `allowed_mentions: {"parse": []}` (no text pings anyone) and
//! embeds suppressed. Agent prose has every character Discord's markdown gives a meaning
//! (`\ * _ ~ \` | > # - [ ] ( ) < @ : .`) escaped with a backslash ([`escape`]), so
//! `**bold**`, `[label](https://x)`, `<@123>` or `# title` show as typed; code (an
//! approval's command or diff, fenced blocks) goes in a code block, where Discord formats
//! nothing, with a run of backticks broken by a zero-width space so it cannot close the
//! block. A button's label is plain text (at most [`MAX_LABEL`]).
//!
//! # Mapping an interaction back
//! The bridge keeps each message's channel and id as it posted it; a component's
//! `custom_id` is `MARK:ACTION`, `MARK` being 16 hex digits of the set's id's SHA-256,
//! checked against the record found, so an interaction is taken only for the set its
//! message shows; `ACTION` is `o{j}` (option `j`), `sel` (the menu, its values option
//! numbers), `other` (opens the modal for the person's own words, or a denial's),
//! `typed` (that modal, submitted) or `no` (Decline). Every number is checked against
//! the record.

use super::channel::{permission, Outcome};
use askuser_core::approval::{ALLOW, ALWAYS, ALWAYS_EXACTLY, DENY};
use askuser_core::dialog::{DENY_SAYING, OTHER_LABEL};
use askuser_core::protocol::QuestionRecord;
use askuser_core::text::{segments, Segment};
use askuser_core::{resolve, Selection, Status};
use serde_json::{json, Value};

/// A message's content, in characters.
pub const MAX_CONTENT: usize = 2000;
/// A button's label (and a select option's is 100).
pub const MAX_LABEL: usize = 80;
/// Buttons in one action row.
pub const MAX_ROW: usize = 5;
/// Action rows in one message.
pub const MAX_ROWS: usize = 5;
/// Options of a string select.
pub const MAX_SELECT: usize = 25;
/// A select option's label, value and description.
pub const MAX_OPTION: usize = 100;
/// A modal's title and a text input's label.
pub const MAX_MODAL_LABEL: usize = 45;
/// A link button's URL (a longer one would have the whole message refused).
pub const MAX_URL: usize = 512;
/// What a modal's text input takes.
pub const MAX_TYPED: usize = 4000;
/// The note when a command is not shown whole.
const NOT_WHOLE: &str = "Too long to show here whole: open askuser to see all of it and allow it. Deny it here, or say what to do instead.";

/// An interaction's type: a button or a menu (`MESSAGE_COMPONENT`).
pub const COMPONENT: u64 = 3;
/// An interaction's type: a modal submitted (`MODAL_SUBMIT`).
pub const MODAL_SUBMIT: u64 = 5;
/// A callback's type: a message in reply (only the presser sees it with flags 64).
pub const REPLY: u64 = 4;
/// A callback's type: acknowledged, the message unchanged.
pub const DEFERRED_UPDATE: u64 = 6;
/// A callback's type: the message changed to the one given.
pub const UPDATE: u64 = 7;
/// A callback's type: a modal.
pub const MODAL: u64 = 9;
/// A message flag: no embeds for links in it.
pub const SUPPRESS_EMBEDS: u64 = 1 << 2;
/// A message flag: only the one who acted sees it.
pub const EPHEMERAL: u64 = 1 << 6;

/// `text` with every character Discord's markdown reads escaped by a backslash, control
/// characters as spaces and the characters that reorder text dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '*' | '_' | '~' | '`' | '|' | '>' | '#' | '-' | '[' | ']' | '(' | ')' | '<' | '@' | ':' | '.' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push('\n'),
            c if c.is_control() => out.push(' '),
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` as a code block: a backtick after a backtick gets a zero-width space first.
pub fn code_block(text: &str) -> String {
    let mut body = String::with_capacity(text.len() + 8);
    let mut previous = None;
    for c in text.trim_end_matches('\n').chars() {
        if c == '`' && previous == Some('`') {
            body.push('\u{200B}');
        }
        body.push(c);
        previous = Some(c);
    }
    format!("```\n{body}\n```")
}

/// `text` cut to `max` characters, ending with "…" when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max.saturating_sub(1)).chain(['…']).collect()
}

/// Escaped agent text cut to `max` characters, never leaving a lone escaping backslash.
fn cut_escaped(text: &str, max: usize) -> String {
    let escaped = escape(text);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut out: String = escaped.chars().take(max.saturating_sub(1)).collect();
    let trailing = out.chars().rev().take_while(|c| *c == '\\').count();
    if trailing % 2 == 1 {
        out.pop();
    }
    out.push('…');
    out
}

/// A plain label (a button's): one line, no control characters, at most `max`.
fn label(text: &str, max: usize) -> String {
    let clean: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    cut(clean.trim(), max)
}

/// A question set's mark in its components: 16 hex digits of its id's SHA-256.
pub fn mark(id: &str) -> String {
    super::channel::fingerprint(id)
}

/// The line that says who asks, bold.
fn headline(record: &QuestionRecord) -> String {
    format!("**{}**", super::Headline::of(record).line(200, 100, cut_escaped))
}

/// Agent prose and code as Discord shows them: prose escaped, fenced blocks as code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for segment in segments(text) {
        match segment {
            Segment::Text(t) => out.push_str(&escape(&t)),
            Segment::Code(c) => out.push_str(&escape(&format!("`{c}`"))),
            Segment::Block(b) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&code_block(&b));
                out.push('\n');
            }
        }
    }
    out.trim().to_owned()
}

/// An approval's body: its title, its command or diff in a code block and why; `whole`
/// false when it had to be cut to fit `room` characters.
fn approval_body(view: &askuser_core::approval::ApprovalView, room: usize) -> (String, bool) {
    let title = escape(&view.title);
    let code = view.shown.as_text().filter(|c| !c.trim().is_empty());
    let why = view.reason.as_deref().map(|r| format!("\nWhy: {}", escape(r))).unwrap_or_default();
    let full = match &code {
        Some(code) => format!("{title}\n{}{why}", code_block(code)),
        None => format!("{title}{why}"),
    };
    if full.chars().count() <= room {
        return (full, true);
    }
    let note = format!("\n{NOT_WHOLE}");
    let fixed = cut(&title, 300).chars().count() + note.chars().count() + 12;
    let code = code.map(|c| code_block(&cut(&c, room.saturating_sub(fixed).max(20)))).unwrap_or_default();
    (format!("{}\n{code}{note}", cut(&title, 300)), false)
}

/// How a one-question set's options are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// None: typed words only.
    Typed,
    /// A button each (up to four rows of five).
    Buttons,
    /// A string select (up to 25; several when the question takes several).
    Menu,
    /// Too many to offer here.
    TooMany,
}

fn pick(q: &askuser_core::Question) -> Pick {
    match q.options.len() {
        0 => Pick::Typed,
        n if n <= (MAX_ROWS - 1) * MAX_ROW && !q.multi_select => Pick::Buttons,
        n if n <= MAX_SELECT => Pick::Menu,
        _ => Pick::TooMany,
    }
}

/// A message: its content and components, ready for `POST /channels/{id}/messages` or
/// its `PATCH` (and an interaction's update).
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub content: String,
    pub components: Vec<Value>,
}

impl Outgoing {
    /// The fields of a message create or edit (no pings, no embeds).
    pub fn fields(&self) -> Value {
        json!({
            "content": self.content, "components": self.components,
            "allowed_mentions": {"parse": []}, "flags": SUPPRESS_EMBEDS,
        })
    }
}

fn button(text: &str, style: u64, custom_id: String) -> Value {
    json!({"type": 2, "style": style, "label": label(text, MAX_LABEL), "custom_id": custom_id})
}

/// Whether an approval's option `label` may be pressed here: Allow only where the
/// command is shown whole; "Always allow" never (its rule cannot be named on a button).
fn offered(label: &str, whole: bool) -> bool {
    match label {
        ALLOW => whole,
        ALWAYS | ALWAYS_EXACTLY => false,
        _ => true,
    }
}

/// The message for a pending set: who asks, the question (an approval's command whole in
/// a code block, or cut with no Allow), its options numbered with their descriptions, and
/// components: a button per option (a string select for more than 20, or where it takes
/// several), "Other…" (or "Answer…", or for an approval "Deny…") which opens a modal for
/// words, Decline, and a link to the set in askuser (`open`). A set of several questions
/// shows them and is answered in askuser.
pub fn message(record: &QuestionRecord, open: Option<&str>) -> Outgoing {
    reminder(record, open, None)
}

/// [`message`], with a reminder's `line` (`Reminder: still waiting since …`) first.
pub fn reminder(record: &QuestionRecord, open: Option<&str>, line: Option<&str>) -> Outgoing {
    let mark = mark(&record.id);
    let questions = &record.request.questions;
    let head = match line {
        Some(line) => format!("{}\n{}", cut(line, 100), headline(record)),
        None => headline(record),
    };
    let mut end = vec![];
    let mut rows = vec![];
    let content;
    let view = permission(record);
    match (questions.as_slice(), &view) {
        ([q], Some(view)) => {
            let room = MAX_CONTENT - head.chars().count() - 2;
            let (body, whole) = approval_body(view, room);
            content = format!("{head}\n{body}");
            let buttons: Vec<Value> = q
                .options
                .iter()
                .enumerate()
                .filter(|(_, c)| offered(&c.label, whole))
                .map(|(j, c)| {
                    let style = match c.label.as_str() {
                        ALLOW => 3,
                        DENY => 4,
                        _ => 2,
                    };
                    button(&c.label, style, format!("{mark}:o{j}"))
                })
                .collect();
            rows.extend(buttons.chunks(MAX_ROW).map(|row| json!({"type": 1, "components": row})));
            end.push(button("Deny, saying what to do…", 2, format!("{mark}:other")));
        }
        ([q], None) => {
            let kind = pick(q);
            let listed: String = match kind {
                Pick::Typed => String::new(),
                _ => q
                    .options
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        let description = c.description.as_deref().filter(|d| !d.trim().is_empty());
                        let description = description.map(|d| format!(" — {}", cut_escaped(d, 200))).unwrap_or_default();
                        format!("\n**{}.** {}{description}", j + 1, cut_escaped(&c.label, 200))
                    })
                    .collect(),
            };
            let note = match kind {
                Pick::TooMany => format!("\n{} options are too many to choose from here: open askuser.", q.options.len()),
                _ => String::new(),
            };
            let fixed = head.chars().count() + listed.chars().count() + note.chars().count() + 2;
            let question = if fixed + 20 <= MAX_CONTENT {
                let text = prose(&q.question);
                match text.chars().count() <= MAX_CONTENT - fixed {
                    true => text,
                    false => cut_escaped(&q.question, MAX_CONTENT - fixed),
                }
            } else {
                cut_escaped(&q.question, 200)
            };
            content = cut(&format!("{head}\n{question}{listed}{note}"), MAX_CONTENT);
            match kind {
                Pick::Buttons => {
                    let buttons: Vec<Value> =
                        (0..q.options.len()).map(|j| button(&q.options[j].label, 1, format!("{mark}:o{j}"))).collect();
                    rows.extend(buttons.chunks(MAX_ROW).map(|row| json!({"type": 1, "components": row})));
                }
                Pick::Menu => {
                    let options: Vec<Value> = q
                        .options
                        .iter()
                        .enumerate()
                        .map(|(j, c)| {
                            let mut o = json!({"label": label(&c.label, MAX_OPTION), "value": j.to_string()});
                            if let Some(d) = c.description.as_deref().filter(|d| !d.trim().is_empty()) {
                                o["description"] = label(d, MAX_OPTION).into();
                            }
                            o
                        })
                        .collect();
                    let max = if q.multi_select { options.len() } else { 1 };
                    let placeholder = if q.multi_select { "Choose answers" } else { "Choose an answer" };
                    let menu = json!({"type": 3, "custom_id": format!("{mark}:sel"), "placeholder": placeholder,
                                      "min_values": 1, "max_values": max, "options": options});
                    rows.push(json!({"type": 1, "components": [menu]}));
                }
                Pick::Typed | Pick::TooMany => {}
            }
            let words = if q.is_free_text() { "Answer…" } else { "Other…" };
            end.push(button(words, 2, format!("{mark}:other")));
        }
        (questions, _) => {
            let mut text = head.clone();
            for (i, q) in questions.iter().enumerate() {
                text.push_str(&format!("\n{}. {}", i + 1, cut_escaped(&askuser_core::text::summary(&q.question), 300)));
            }
            let note = format!("\n{} questions: answer them in askuser.", questions.len());
            content = format!("{}{note}", cut(&text, MAX_CONTENT - note.chars().count()));
        }
    }
    end.push(button("Decline", 2, format!("{mark}:no")));
    if let Some(url) = open.filter(|url| url.len() <= MAX_URL) {
        end.push(json!({"type": 2, "style": 5, "label": "Open askuser", "url": url}));
    }
    rows.push(json!({"type": 1, "components": end}));
    Outgoing { content, components: rows }
}

/// Who answered, as the closed message says it: a Discord user as a mention (which,
/// with no mentions allowed, pings no one), anyone else "in askuser".
fn by_whom(answered_by: Option<&str>) -> String {
    match answered_by {
        Some(by) => match by.strip_prefix("discord:").and_then(|rest| rest.split(' ').next()).filter(|id| is_snowflake(id)) {
            Some(id) => format!(" by <@{id}>"),
            None => " in askuser".to_owned(),
        },
        None => String::new(),
    }
}

/// A Discord id: digits only.
pub fn is_snowflake(id: &str) -> bool {
    (1..=20).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_digit())
}

/// The message once the set closed: each question with its answer, and how it ended
/// ("Answered by @alice", "Declined", "Withdrawn by the agent", "Expired"); no components.
pub fn answered(record: &QuestionRecord) -> Outgoing {
    let questions = &record.request.questions;
    let said = super::channel::said(record);
    let view = permission(record);
    let mut text = headline(record);
    for (i, q) in questions.iter().enumerate() {
        let what = match (i, &view) {
            (0, Some(view)) => view.title.clone(),
            _ => askuser_core::text::summary(&q.question),
        };
        let number = if questions.len() > 1 { format!("{}. ", i + 1) } else { String::new() };
        text.push_str(&format!("\n{number}{}", cut_escaped(&what, 300)));
        if let Some(said) = said.get(i) {
            text.push_str(&format!("\n→ {}", cut_escaped(said, 300)));
        }
    }
    let by = by_whom(record.answered_by.as_deref());
    let chat = record.result.as_ref().is_some_and(|r| r.chat);
    let ended = match record.status {
        Status::Answered => format!("Answered{by}"),
        Status::Cancelled if chat => format!("Declined{by}: they would rather talk it over"),
        Status::Cancelled => format!("Declined{by}"),
        Status::Withdrawn => "Withdrawn by the agent".to_owned(),
        Status::TimedOut => "Expired".to_owned(),
        Status::Pending => "Not answered yet".to_owned(),
    };
    let tail = format!("\n\n{ended}");
    Outgoing { content: format!("{}{tail}", cut(&text, MAX_CONTENT - tail.chars().count())), components: vec![] }
}

/// The modal that takes the person's words for question `q` of `record`: a denial's for
/// an approval, else "Other" (or the answer to a free-text question).
pub fn modal(record: &QuestionRecord) -> Value {
    let mark = mark(&record.id);
    let q = record.request.questions.first();
    let (title, field) = match (permission(record).is_some(), q.is_some_and(|q| q.is_free_text())) {
        (true, _) => ("Deny", DENY_SAYING),
        (false, true) => ("Your answer", "Your answer"),
        (false, false) => ("Other", OTHER_LABEL),
    };
    json!({
        "custom_id": format!("{mark}:typed"), "title": label(title, MAX_MODAL_LABEL),
        "components": [{"type": 1, "components": [{
            "type": 4, "custom_id": "text", "style": 2, "label": label(field, MAX_MODAL_LABEL),
            "required": true, "min_length": 1, "max_length": MAX_TYPED,
        }]}],
    })
}

/// A Discord user, as an interaction names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub username: String,
}

impl User {
    /// Who answered, as a record's `answered_by` keeps it: `discord:ID @username`.
    pub fn answered_by(&self) -> String {
        let name: String = self.username.chars().filter(|c| c.is_ascii_alphanumeric() || "._".contains(*c)).take(32).collect();
        match name.is_empty() {
            true => format!("discord:{}", self.id),
            false => format!("discord:{} @{name}", self.id),
        }
    }
}

/// An `INTERACTION_CREATE`, read field by field (anything else in it is skipped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interaction {
    pub id: String,
    /// Its token: only for answering it (valid 15 minutes), never logged.
    pub token: String,
    /// The bot's application, for a follow-up message.
    pub application_id: Option<String>,
    /// [`COMPONENT`], [`MODAL_SUBMIT`], or another (a ping, a command).
    pub kind: u64,
    pub channel_id: Option<String>,
    /// The message the component is in (a modal's: the message whose button opened it).
    pub message_id: Option<String>,
    pub user: User,
    pub custom_id: String,
    /// A menu's chosen values.
    pub values: Vec<String>,
    /// A modal's text input `text`.
    pub typed: Option<String>,
}

impl Interaction {
    /// The dispatch's `d`; none without an id and a token (nothing to answer).
    pub fn parse(d: &Value) -> Option<Interaction> {
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let user = d.get("member").and_then(|m| m.get("user")).or_else(|| d.get("user"));
        let data = &d["data"];
        let typed = data["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().into_iter().flatten())
            .find(|c| c["custom_id"] == "text");
        Some(Interaction {
            id: text(&d["id"]).filter(|id| is_snowflake(id))?,
            token: text(&d["token"]).filter(|t| !t.is_empty() && !t.contains(['/', '?', '#']))?,
            application_id: text(&d["application_id"]).filter(|id| is_snowflake(id)),
            kind: d["type"].as_u64().unwrap_or(0),
            channel_id: text(&d["channel_id"]).filter(|id| is_snowflake(id)),
            message_id: text(&d["message"]["id"]).filter(|id| is_snowflake(id)),
            user: User {
                id: user.and_then(|u| text(&u["id"])).filter(|id| is_snowflake(id)).unwrap_or_default(),
                username: user.and_then(|u| text(&u["username"])).unwrap_or_default(),
            },
            custom_id: text(&data["custom_id"]).unwrap_or_default(),
            values: data["values"].as_array().into_iter().flatten().filter_map(&text).collect(),
            typed: typed.and_then(|c| text(&c["value"])),
        })
    }
}

/// What an interaction does.
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// Answers or declines the set.
    Outcome(Outcome),
    /// Opens this modal for the person's words.
    Modal(Value),
}

/// What `interaction` chose on `record`'s message. A component of another set's message,
/// an option the record does not have, Allow where the command was not shown whole, or
/// anything not askuser's is an error that says so (askuser's words, naming no agent text
/// but escaped all the same).
pub fn act(record: &QuestionRecord, interaction: &Interaction) -> Result<Act, String> {
    let Some((their_mark, action)) = interaction.custom_id.split_once(':') else {
        return Err("That is not one of askuser's buttons.".into());
    };
    if their_mark != mark(&record.id) {
        return Err("That button belongs to another question set's message.".into());
    }
    if action == "no" {
        return Ok(Act::Outcome(Outcome::Decline));
    }
    let questions = &record.request.questions;
    let [q] = questions.as_slice() else {
        return Err(format!("This set has {} questions: answer them in askuser.", questions.len()));
    };
    let whole = permission(record).map(|view| approval_body(&view, MAX_CONTENT - headline(record).chars().count() - 2).1);
    let option = |j: &str| {
        let j = j.parse::<usize>().ok().filter(|_| !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit()));
        let choice = j.and_then(|j| q.options.get(j)).ok_or("This question has no such option (its message may be older than it).")?;
        if whole.is_some_and(|whole| !offered(&choice.label, whole)) {
            return Err("This message does not show it whole: open askuser to see all of it and allow it.".to_owned());
        }
        Ok(choice.label.clone())
    };
    let selection = match (action, interaction.kind) {
        ("other", COMPONENT) => return Ok(Act::Modal(modal(record))),
        (action, COMPONENT) if action.starts_with('o') && !q.multi_select => Selection::option(option(&action[1..])?),
        ("sel", COMPONENT) if !interaction.values.is_empty() => {
            let labels = interaction.values.iter().map(|v| option(v)).collect::<Result<Vec<_>, _>>()?;
            Selection { selected: labels, ..Selection::default() }
        }
        ("typed", MODAL_SUBMIT) => match interaction.typed.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(words) => Selection { custom: Some(words.chars().take(MAX_TYPED).collect()), ..Selection::default() },
            None => return Err("Type an answer first.".into()),
        },
        _ => return Err("That button does not answer this question set; open it in askuser.".into()),
    };
    let selections = vec![selection];
    resolve(questions, &selections).map_err(|e| escape(&e.to_string()))?;
    Ok(Act::Outcome(Outcome::Answer(selections)))
}

/// Gateway opcodes the bot sends or reads.
pub mod op {
    pub const DISPATCH: u64 = 0;
    pub const HEARTBEAT: u64 = 1;
    pub const IDENTIFY: u64 = 2;
    pub const RESUME: u64 = 6;
    pub const RECONNECT: u64 = 7;
    pub const INVALID_SESSION: u64 = 9;
    pub const HELLO: u64 = 10;
    pub const HEARTBEAT_ACK: u64 = 11;
}

/// `GUILD_MESSAGES`: a server's new messages (`MESSAGE_CREATE`).
pub const GUILD_MESSAGES: u64 = 1 << 9;
/// `DIRECT_MESSAGES`: new messages in a direct message with the bot.
pub const DIRECT_MESSAGES: u64 = 1 << 12;

/// The intents the bot identifies with: new messages in servers and direct messages, for
/// typed commands. Neither is privileged: without `MESSAGE_CONTENT` (privileged, never
/// asked for) Discord gives a message's text only where it mentions the bot or is a direct
/// message, which is all a command needs. Interactions come whatever the intents; members
/// and presences are not asked for.
pub const INTENTS: u64 = GUILD_MESSAGES | DIRECT_MESSAGES;

/// A person's new message (`MESSAGE_CREATE`), read field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub id: String,
    pub channel_id: String,
    pub author: User,
    /// Its text: empty unless it mentions the bot or is a direct message (no
    /// `MESSAGE_CONTENT` intent).
    pub content: String,
    /// In a server (`guild_id`), not a direct message.
    pub in_guild: bool,
}

impl Said {
    /// The dispatch's `d`; none for a bot's or a webhook's message (askuser's own too), or
    /// one without its ids.
    pub fn parse(d: &Value) -> Option<Said> {
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let author = &d["author"];
        if author["bot"] == true || author["system"] == true || d.get("webhook_id").is_some_and(|w| !w.is_null()) {
            return None;
        }
        Some(Said {
            id: text(&d["id"]).filter(|id| is_snowflake(id))?,
            channel_id: text(&d["channel_id"]).filter(|id| is_snowflake(id))?,
            author: User {
                id: text(&author["id"]).filter(|id| is_snowflake(id))?,
                username: text(&author["username"]).unwrap_or_default(),
            },
            content: text(&d["content"]).unwrap_or_default(),
            in_guild: d["guild_id"].is_string(),
        })
    }

    /// What it says to bot `bot_id`: its text after a leading mention of the bot
    /// (`<@ID>`, or `<@!ID>`); in a direct message the mention may be left out. None: not
    /// to the bot.
    pub fn to_bot(&self, bot_id: &str) -> Option<&str> {
        let text = self.content.trim_start();
        let mentioned = [format!("<@{bot_id}>"), format!("<@!{bot_id}>")].into_iter().find_map(|m| text.strip_prefix(m.as_str()));
        match mentioned {
            Some(rest) => Some(rest.trim()),
            None if !self.in_guild && !text.is_empty() => Some(text.trim()),
            None => None,
        }
    }
}

/// Whether option `label` may be chosen from Discord's message of `record`: on an
/// approval, Deny, and Allow only where the message shows it whole (where it has Allow).
pub fn allowable(record: &QuestionRecord, label: &str) -> Result<(), String> {
    let view = permission(record);
    let approval = view.is_some();
    let whole = || view.is_none_or(|view| approval_body(&view, MAX_CONTENT - headline(record).chars().count() - 2).1);
    super::channel::allowable(approval, whole, label)
}

/// A reply to message `to` with `text` (askuser's words, escaped here): no pings, no embeds.
pub fn reply(to: &str, text: &str) -> Value {
    json!({
        "content": cut_escaped(text, MAX_CONTENT), "allowed_mentions": {"parse": []}, "flags": SUPPRESS_EMBEDS,
        "message_reference": {"message_id": to, "fail_if_not_exists": false},
    })
}

/// One gateway frame: `{"op", "d", "s", "t"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub op: u64,
    pub d: Value,
    /// A dispatch's sequence number.
    pub s: Option<u64>,
    /// A dispatch's event name (`READY`, `INTERACTION_CREATE`, …).
    pub t: Option<String>,
}

impl Frame {
    /// A text frame from the gateway.
    pub fn parse(text: &str) -> Result<Frame, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("a gateway frame: expected Discord's JSON, {e}"))?;
        let op = v["op"].as_u64().ok_or("a gateway frame: expected a number op, found none")?;
        Ok(Frame { op, d: v["d"].clone(), s: v["s"].as_u64(), t: v["t"].as_str().map(str::to_owned) })
    }
}

/// Identify (op 2): the token, the intents, what the bot runs on.
pub fn identify(token: &str) -> String {
    json!({"op": op::IDENTIFY, "d": {
        "token": token, "intents": INTENTS,
        "properties": {"os": std::env::consts::OS, "browser": "askuser", "device": "askuser"},
    }})
    .to_string()
}

/// Resume (op 6): session `session_id` from after dispatch `seq`.
pub fn resume(token: &str, session_id: &str, seq: Option<u64>) -> String {
    json!({"op": op::RESUME, "d": {"token": token, "session_id": session_id, "seq": seq}}).to_string()
}

/// Heartbeat (op 1) with the last sequence number seen.
pub fn heartbeat(seq: Option<u64>) -> String {
    json!({"op": op::HEARTBEAT, "d": seq}).to_string()
}

/// The gateway's address to connect to, from `GET /gateway/bot`'s `url` or READY's
/// `resume_gateway_url`: with the API version and JSON encoding asked for.
pub fn gateway_url(base: &str) -> String {
    format!("{}/?v=10&encoding=json", base.trim_end_matches('/'))
}

/// Whether a close code says not to connect again as is (a bad token, intents not
/// allowed, a wrong version), with what to do.
pub fn fatal_close(code: u16) -> Option<&'static str> {
    match code {
        4004 => Some("Discord refused the bot token (4004): check --discord-bot-token"),
        4010 | 4011 => Some("Discord wants the bot sharded (4010/4011): askuser runs one shard"),
        4012 => Some("Discord refused the gateway version (4012)"),
        4013 | 4014 => Some("Discord refused the intents (4013/4014)"),
        _ => None,
    }
}

/// Whether a close code ends the session (Identify again, not Resume).
pub fn session_ended(code: u16) -> bool {
    matches!(code, 4007 | 4009)
}

#[cfg(test)]
mod tests;
