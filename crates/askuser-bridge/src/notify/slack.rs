//! Slack as a channel that answers: a pending question set as a Block Kit message
//! ([`message`]), the same message once the set closed ([`answered`]), Slack's request
//! signature ([`verify`]), the interactions Slack sends back ([`Interaction`], over HTTP
//! or inside a Socket Mode [`Envelope`]) and what a person chose in one ([`selections`]).
//! Pure: no IO, no clock (`now_s` is passed in); the bridge posts and receives.
//!
//! # Why the JSON is built here, not with slack-morphism
//! `slack-morphism` 2.31 with `default-features = false` pulls in no hyper, rustls or
//! tungstenite, and its Block Kit types can express every block used here. But its
//! models come with its whole Web API surface: 20 crates this crate has no other use
//! for (serde_with and darling 0.24, jiff, mime_guess, futures-locks, rsb_derive, …),
//! measured at +108 s wall (94 s CPU) on a clean build of the bridge on the 2-core
//! machine, and none of Slack's limits are checked by its types. The eight shapes below
//! are a few lines of `json!` each, checked by the tests against the limits Slack
//! documents; incoming payloads are read into small local structs either way (its enums
//! have no catch-all for new block or action types).
//!
//! # Agent text
//! Anything an agent wrote (its name, questions, labels, descriptions, a command) never
//! becomes a ping, a link or markup: prose goes out as `plain_text` (no mrkdwn at all),
//! code as a mrkdwn code block (`verbatim`, where mrkdwn does not format), and every text
//! has Slack's control characters `&`, `<` and `>` as entities ([`escape`]), so
//! `<!channel>` or `<https://x|y>` is shown as typed. A run of backticks in code is
//! broken with a zero-width space so it cannot close its block. Texts over a limit are cut
//! by characters, ending with "…", never inside an entity. Error messages from
//! [`selections`] name questions by number, never by their text.
//!
//! # Mapping an interaction back
//! Every interactive block's `block_id` is `MARK/PART`: `MARK` is the question set's id
//! (or `#` and a SHA-256 prefix of it, for an id too long or with other characters), so
//! an action from another set's message is refused even if the bridge's message-ts map is
//! wrong; `PART` is `q{i}` (question `i`'s options), `t{i}` (its typed answer) or `end`
//! (Submit, Decline, Open). Option `j` of a button is action `o{j}`; a menu or radio group
//! is action `one`, checkboxes or a multi-select `many`, option values are `j`. Button
//! values are never trusted for anything: the index comes from the action id and is
//! checked against the record.

use super::channel::permission;
use askuser_core::approval::{ALLOW, ALWAYS, ALWAYS_EXACTLY, DENY};
use askuser_core::dialog::{DENY_SAYING, OTHER_LABEL};
use askuser_core::inbox::agent_name;
use askuser_core::protocol::QuestionRecord;
use askuser_core::text::{segments, summary, Segment};
use askuser_core::{resolve, Question, Selection, Status};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Blocks in one message.
pub const MAX_BLOCKS: usize = 50;
/// A header block's text.
pub const MAX_HEADER: usize = 150;
/// A section's text.
pub const MAX_SECTION: usize = 3000;
/// A button's text.
pub const MAX_BUTTON_TEXT: usize = 75;
/// A button's value.
#[cfg(test)]
pub const MAX_BUTTON_VALUE: usize = 2000;
/// An option's text, and its description.
pub const MAX_OPTION_TEXT: usize = 75;
/// An option's value.
#[cfg(test)]
pub const MAX_OPTION_VALUE: usize = 150;
/// An `action_id`, and a `block_id`.
#[cfg(test)]
pub const MAX_ID: usize = 255;
/// An input block's label.
pub const MAX_INPUT_LABEL: usize = 2000;
/// A placeholder's text.
pub const MAX_PLACEHOLDER: usize = 150;
/// Elements of one actions block.
pub const MAX_BUTTONS: usize = 25;
/// Options of a checkbox group or a radio group.
pub const MAX_CHECKBOXES: usize = 10;
/// Options of a select menu.
pub const MAX_MENU: usize = 100;
/// The message's `text` (what notifications show; Slack cuts at 40,000).
pub const MAX_FALLBACK: usize = 3000;
/// How far a request's timestamp may be from now, either way, in seconds.
pub const MAX_SKEW_S: u64 = 300;

/// Ids used as they are in block ids (askuser's own ids are shorter, and of these characters).
const MAX_PLAIN_MARK: usize = 200;

/// `text` with Slack's three control characters as HTML entities (`&amp;`, `&lt;`,
/// `&gt;`), as Slack documents for text objects: shown as typed, never parsed as a
/// mention, a link or a command.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `text` escaped and cut to at most `max` characters (counted after escaping), ending
/// with "…" when cut; an entity is never cut in two. In `code`, a backtick after a
/// backtick gets a zero-width space first, so no run of three closes a code block.
fn fit_with(text: &str, max: usize, code: bool) -> String {
    let mut pieces: Vec<String> = Vec::new();
    let mut previous = None;
    for c in text.chars() {
        let piece = match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '`' if code && previous == Some('`') => "\u{200B}`".to_owned(),
            c => c.to_string(),
        };
        previous = Some(c);
        pieces.push(piece);
    }
    let total: usize = pieces.iter().map(|p| p.chars().count()).sum();
    if total <= max {
        return pieces.concat();
    }
    let mut out = String::new();
    let mut used = 0;
    for piece in pieces {
        let n = piece.chars().count();
        if used + n > max.saturating_sub(1) {
            break;
        }
        out.push_str(&piece);
        used += n;
    }
    out.push('…');
    out
}

/// [`fit_with`] for prose.
fn fit(text: &str, max: usize) -> String {
    fit_with(text, max, false)
}

/// A `plain_text` object of agent text: escaped, cut to `max`, colon codes left as typed.
fn plain(text: &str, max: usize) -> Value {
    json!({"type": "plain_text", "text": fit(text, max), "emoji": false})
}

/// A section of prose.
fn section(text: &str) -> Value {
    json!({"type": "section", "text": plain(text, MAX_SECTION)})
}

/// A section showing `code` in a code block (cut to fit the section).
fn code_section(code: &str) -> Value {
    let fence = "```\n\n```".chars().count();
    let body = fit_with(code.trim_end_matches('\n'), MAX_SECTION - fence, true);
    json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("```\n{body}\n```"), "verbatim": true}})
}

/// A question set's mark in its block ids: the id itself when it is short and of the
/// characters askuser's ids use, else `#` and 32 hex digits of its SHA-256.
fn mark(id: &str) -> String {
    let plain = !id.is_empty() && id.len() <= MAX_PLAIN_MARK && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if plain {
        return id.to_owned();
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    format!("#{}", hex(&digest.as_ref()[..16]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The interactive blocks of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Question `i`'s options.
    Options(usize),
    /// Question `i`'s typed answer.
    Typed(usize),
    /// Submit, Decline, Open.
    End,
}

impl Part {
    fn block_id(self, mark: &str) -> String {
        match self {
            Part::Options(i) => format!("{mark}/q{i}"),
            Part::Typed(i) => format!("{mark}/t{i}"),
            Part::End => format!("{mark}/end"),
        }
    }
}

/// How a question's options are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// A free-text question: only the typed answer.
    Typed,
    /// One button per option: a press answers a set of one question at once.
    Buttons,
    /// A select menu: a choice answers a set of one question at once; in a larger set it
    /// is read on Submit.
    Menu,
    /// A radio group (one of several questions), read on Submit.
    Radio,
    /// A checkbox group, read on Submit.
    Checkboxes,
    /// A multi-select menu, read on Submit.
    MultiMenu,
}

/// How question `q` is offered, `alone` when it is its set's only question.
fn pick(q: &Question, alone: bool) -> Pick {
    let n = q.options.len();
    match (n, q.multi_select, alone) {
        (0, _, _) => Pick::Typed,
        (n, true, _) if n <= MAX_CHECKBOXES => Pick::Checkboxes,
        (_, true, _) => Pick::MultiMenu,
        (n, false, true) if n <= MAX_BUTTONS => Pick::Buttons,
        (n, false, false) if n <= MAX_CHECKBOXES => Pick::Radio,
        _ => Pick::Menu,
    }
}

/// Whether `text` fits in `max` characters once escaped (as [`fit_with`] counts).
fn fits(text: &str, max: usize, code: bool) -> bool {
    fit_with(text, usize::MAX, code).chars().count() <= max
}

/// What a permission's message offers beside Deny: Allow only when it shows what would
/// happen whole (its title in a section, its command or diff in a code block, neither
/// cut), and "Always allow" (with "Always allow exactly" where the rule is a prefix: the
/// person may narrow it here too, as in the page) only then and when the rules they keep
/// are shown whole too; both or neither. Not a permission: all.
fn offers(record: &QuestionRecord) -> (bool, bool) {
    let Some(view) = permission(record) else { return (true, true) };
    let code = view.shown.as_text().filter(|c| !c.trim().is_empty());
    let allow = fits(&view.title, MAX_SECTION, false)
        && code.is_none_or(|c| fits(c.trim_end_matches('\n'), MAX_SECTION - "```\n\n```".len(), true));
    (allow, allow && always_lines(record).is_some_and(|lines| fits(&lines, MAX_SECTION, false)))
}

/// "Always allow: Do not ask again for Bash(git status:*) in /srv/app" and, where it is
/// offered, "Always allow exactly: … Bash(git status --short) in /srv/app": the rules
/// named whole under a permission's buttons, a line each.
fn always_lines(record: &QuestionRecord) -> Option<String> {
    let q = record.request.questions.first()?;
    let line = |label: &str| {
        q.options.iter().find(|o| o.label == label).map(|o| format!("{label}: {}", o.description.as_deref().unwrap_or_default()))
    };
    let mut lines = line(ALWAYS)?;
    if let Some(exactly) = line(ALWAYS_EXACTLY) {
        lines = format!("{lines}\n{exactly}");
    }
    Some(lines)
}

/// Under a permission's buttons: the rule "Always allow" keeps, or why Allow is not here.
fn permission_note(record: &QuestionRecord) -> Option<Value> {
    match offers(record) {
        (true, true) => always_lines(record).map(|lines| section(&lines)),
        (true, false) => None,
        (false, _) => {
            let note =
                "Too long to show here whole: open askuser to see all of it and allow it. Deny it here, or say below what to do instead.";
            Some(json!({"type": "context", "elements": [plain(note, MAX_SECTION)]}))
        }
    }
}

/// The header: who asks (and the chip of a lone question).
fn header(record: &QuestionRecord) -> Value {
    let text = super::Headline::of(record).line(usize::MAX, usize::MAX, |s, _| s.to_owned());
    json!({"type": "header", "text": plain(&text, MAX_HEADER)})
}

/// The text of question `i`: prose as plain text, fenced blocks as code blocks; for a
/// permission, what it would do.
fn question_text(record: &QuestionRecord, i: usize) -> Vec<Value> {
    let questions = &record.request.questions;
    let q = &questions[i];
    if let (0, Some(view)) = (i, permission(record)) {
        let mut blocks = vec![section(&view.title)];
        let code = view.shown.as_text();
        if let Some(code) = code.filter(|c| !c.trim().is_empty()) {
            blocks.push(code_section(&code));
        }
        if let Some(reason) = &view.reason {
            blocks.push(section(&format!("Why: {reason}")));
        }
        return blocks;
    }
    let mut prose = prefix(questions, i);
    let mut blocks = Vec::new();
    let flush = |prose: &mut String, blocks: &mut Vec<Value>| {
        if !prose.trim().is_empty() {
            blocks.push(section(prose.trim()));
        }
        prose.clear();
    };
    for segment in segments(&q.question) {
        match segment {
            Segment::Text(t) => prose.push_str(&t),
            Segment::Code(c) => prose.push_str(&format!("`{c}`")),
            Segment::Block(b) => {
                flush(&mut prose, &mut blocks);
                if !b.trim().is_empty() {
                    blocks.push(code_section(&b));
                }
            }
        }
    }
    flush(&mut prose, &mut blocks);
    blocks
}

/// What comes before question `i`'s text in a set of several: its number and chip.
fn prefix(questions: &[Question], i: usize) -> String {
    match (questions.len(), questions[i].header.as_deref().filter(|h| !h.trim().is_empty())) {
        (1, _) => String::new(),
        (_, Some(chip)) => format!("{}. {chip}: ", i + 1),
        (_, None) => format!("{}. ", i + 1),
    }
}

/// Question `i`'s whole text in one section (when the message has no room for more).
fn question_text_short(record: &QuestionRecord, i: usize) -> Value {
    let questions = &record.request.questions;
    match (i, permission(record)) {
        (0, Some(view)) => section(&view.title),
        _ => section(&format!("{}{}", prefix(questions, i), questions[i].question.trim())),
    }
}

/// An option object: its label, value `j` and description.
fn option(q: &Question, j: usize) -> Value {
    let choice = &q.options[j];
    let mut o = json!({"text": plain(&choice.label, MAX_OPTION_TEXT), "value": j.to_string()});
    if let Some(d) = choice.description.as_deref().filter(|d| !d.trim().is_empty()) {
        o["description"] = plain(d, MAX_OPTION_TEXT);
    }
    o
}

/// Question `i`'s options as one actions block, or nothing for free text.
fn options_block(record: &QuestionRecord, i: usize, mark: &str) -> Option<Value> {
    let questions = &record.request.questions;
    let q = &questions[i];
    let options = |max: usize| (0..q.options.len().min(max)).map(|j| option(q, j)).collect::<Vec<_>>();
    let placeholder = |text: &str| plain(text, MAX_PLACEHOLDER);
    let element = match pick(q, questions.len() == 1) {
        Pick::Typed => return None,
        Pick::Buttons => {
            let is_permission = permission(record).is_some();
            let (allow, always) = offers(record);
            let buttons: Vec<Value> = q
                .options
                .iter()
                .enumerate()
                .filter(|(_, choice)| !is_permission || offered(&choice.label, allow, always))
                .map(|(j, choice)| {
                    let mut b = json!({
                        "type": "button", "action_id": format!("o{j}"),
                        "text": plain(&choice.label, MAX_BUTTON_TEXT), "value": j.to_string(),
                    });
                    match choice.label.as_str() {
                        ALLOW if is_permission => b["style"] = json!("primary"),
                        DENY if is_permission => b["style"] = json!("danger"),
                        _ => {}
                    }
                    b
                })
                .collect();
            return Some(json!({"type": "actions", "block_id": Part::Options(i).block_id(mark), "elements": buttons}));
        }
        Pick::Menu => {
            json!({"type": "static_select", "action_id": "one", "placeholder": placeholder("Choose an answer"), "options": options(MAX_MENU)})
        }
        Pick::Radio => json!({"type": "radio_buttons", "action_id": "one", "options": options(MAX_CHECKBOXES)}),
        Pick::Checkboxes => json!({"type": "checkboxes", "action_id": "many", "options": options(MAX_CHECKBOXES)}),
        Pick::MultiMenu => json!({
            "type": "multi_static_select", "action_id": "many",
            "placeholder": placeholder("Choose answers"), "options": options(MAX_MENU),
        }),
    };
    Some(json!({"type": "actions", "block_id": Part::Options(i).block_id(mark), "elements": [element]}))
}

/// Whether a permission's option `label` is offered, given [`offers`].
fn offered(label: &str, allow: bool, always: bool) -> bool {
    match label {
        ALLOW => allow,
        ALWAYS | ALWAYS_EXACTLY => always,
        _ => true,
    }
}

/// The options' descriptions, which buttons cannot show, as one section.
fn descriptions(q: &Question) -> Option<Value> {
    let lines: Vec<String> = q
        .options
        .iter()
        .filter_map(|o| o.description.as_deref().filter(|d| !d.trim().is_empty()).map(|d| format!("{}: {d}", o.label)))
        .collect();
    (!lines.is_empty()).then(|| section(&lines.join("\n")))
}

/// Question `i`'s typed answer: "Other", the words of a denial, or the answer itself.
fn typed_block(record: &QuestionRecord, i: usize, mark: &str) -> Value {
    let q = &record.request.questions[i];
    let label = match (q.is_free_text(), i == 0 && permission(record).is_some()) {
        (_, true) => DENY_SAYING,
        (true, false) => "Your answer",
        (false, false) => OTHER_LABEL,
    };
    json!({
        "type": "input", "block_id": Part::Typed(i).block_id(mark), "optional": true,
        "label": plain(label, MAX_INPUT_LABEL),
        "element": {"type": "plain_text_input", "action_id": "text", "multiline": q.is_free_text()},
    })
}

/// Submit (when the message can answer), Decline (confirmed first) and Open.
fn end_block(mark: &str, submit: bool, open: Option<&str>) -> Value {
    let mut elements = Vec::new();
    if submit {
        elements.push(json!({
            "type": "button", "action_id": "submit", "style": "primary",
            "text": plain("Submit", MAX_BUTTON_TEXT), "value": "submit",
        }));
    }
    elements.push(json!({
        "type": "button", "action_id": "decline", "text": plain("Decline", MAX_BUTTON_TEXT), "value": "decline",
        "confirm": {
            "title": plain("Decline these questions?", 100),
            "text": plain("The agent is told you declined to answer.", 300),
            "confirm": plain("Decline", 30), "deny": plain("Keep them", 30),
        },
    }));
    if let Some(url) = open {
        elements.push(json!({
            "type": "button", "action_id": "open", "text": plain("Open askuser", MAX_BUTTON_TEXT),
            "url": url, "value": "open",
        }));
    }
    json!({"type": "actions", "block_id": Part::End.block_id(mark), "elements": elements})
}

/// The one-line `text` notifications show: who asks and what.
fn fallback(record: &QuestionRecord) -> String {
    let questions = &record.request.questions;
    let what = match permission(record) {
        Some(view) => view.title,
        None => questions.first().map(|q| summary(&q.question)).unwrap_or_default(),
    };
    let more = match questions.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    fit(&format!("{} asks: {what}{more}", agent_name(record)), MAX_FALLBACK)
}

/// The `text` and `blocks` of `chat.postMessage` / `chat.update` for a pending question
/// set: a header, each question's text and controls (buttons, a menu, radio buttons or
/// checkboxes, and a box for a typed answer), then Submit, Decline and (with `open`, a
/// link to the set in askuser) Open. Within [`MAX_BLOCKS`]: long texts shrink to one
/// section per question, then the buttons' descriptions go; a set that still does not fit
/// shows its questions and only Decline and Open. Post it with `unfurl_links` and
/// `unfurl_media` off.
pub fn message(record: &QuestionRecord, open: Option<&str>) -> Value {
    let mark = mark(&record.id);
    let questions = &record.request.questions;
    let alone = questions.len() == 1;
    struct Laid {
        text: Vec<Value>,
        short: Value,
        descriptions: Option<Value>,
        controls: Vec<Value>,
    }
    let laid: Vec<Laid> = (0..questions.len())
        .map(|i| Laid {
            text: question_text(record, i),
            short: question_text_short(record, i),
            descriptions: match (i, permission(record), pick(&questions[i], alone)) {
                (0, Some(_), _) => permission_note(record),
                (_, _, Pick::Buttons) => descriptions(&questions[i]),
                _ => None,
            },
            controls: options_block(record, i, &mark).into_iter().chain([typed_block(record, i, &mark)]).collect(),
        })
        .collect();
    let fixed = 2 + laid.iter().map(|l| l.controls.len()).sum::<usize>();
    let full = fixed + laid.iter().map(|l| l.text.len() + usize::from(l.descriptions.is_some())).sum::<usize>();
    let shorter = fixed + laid.iter().map(|l| 1 + usize::from(l.descriptions.is_some())).sum::<usize>();
    let shortest = fixed + laid.len();
    let mut blocks = vec![header(record)];
    if shortest <= MAX_BLOCKS {
        for l in laid {
            if full <= MAX_BLOCKS {
                blocks.extend(l.text);
            } else {
                blocks.push(l.short);
            }
            if shorter <= MAX_BLOCKS {
                blocks.extend(l.descriptions);
            }
            blocks.extend(l.controls);
        }
        blocks.push(end_block(&mark, true, open));
    } else {
        // No room to answer here: the questions (as many as fit), and where to answer.
        let room = MAX_BLOCKS - 3;
        let shown = laid.len().min(room);
        blocks.extend(laid.into_iter().take(shown).map(|l| l.short));
        let note = format!("{} questions are too many to answer in Slack: answer them in askuser.", questions.len());
        blocks.push(json!({"type": "context", "elements": [plain(&note, MAX_SECTION)]}));
        blocks.push(end_block(&mark, false, open));
    }
    json!({"text": fallback(record), "blocks": blocks})
}

/// [`message`] as a reminder: `line` (`Reminder: still waiting since …`) before who asks,
/// in the header and the notification's text.
pub fn reminder(record: &QuestionRecord, open: Option<&str>, line: &str) -> Value {
    let mut message = message(record, open);
    let header = super::Headline::of(record).line(usize::MAX, usize::MAX, |s, _| s.to_owned());
    message["blocks"][0]["text"] = plain(&format!("{line} · {header}"), MAX_HEADER);
    message["text"] = format!("{line} · {}", message["text"].as_str().unwrap_or_default()).into();
    message
}

/// Who answered, as the context line says it (mrkdwn) and as the fallback says it.
fn who(answered_by: Option<&str>) -> (String, String) {
    match answered_by {
        Some(by) => match by.strip_prefix("slack:").filter(|id| is_user_id(id)) {
            Some(id) => (format!(" by <@{id}>"), " in Slack".to_owned()),
            None => (" in askuser".to_owned(), " in askuser".to_owned()),
        },
        None => (String::new(), String::new()),
    }
}

/// A Slack user id (`U0123ABCD`, or `W…` on Enterprise Grid): nothing else is ever
/// written as a mention.
fn is_user_id(id: &str) -> bool {
    (2..=24).contains(&id.len())
        && (id.starts_with('U') || id.starts_with('W'))
        && id.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The message once the set closed: each question with its answer, and how it ended
/// ("Answered by @who", "Declined by @who", "Withdrawn by the agent", "Expired"); no
/// controls. Same shape as [`message`].
pub fn answered(record: &QuestionRecord) -> Value {
    let questions = &record.request.questions;
    let said = super::channel::said(record);
    let (by, by_plain) = who(record.answered_by.as_deref());
    let chat = record.result.as_ref().is_some_and(|r| r.chat);
    let (ended, ended_plain) = match record.status {
        Status::Answered => (format!("Answered{by}"), format!("Answered{by_plain}")),
        Status::Cancelled if chat => (format!("Declined{by}: they would rather talk it over"), format!("Declined{by_plain}")),
        Status::Cancelled => (format!("Declined{by}"), format!("Declined{by_plain}")),
        Status::Withdrawn => ("Withdrawn by the agent".to_owned(), "Withdrawn by the agent".to_owned()),
        Status::TimedOut => ("Expired".to_owned(), "Expired".to_owned()),
        Status::Pending => ("Not answered yet".to_owned(), "Not answered yet".to_owned()),
    };
    let mut blocks = vec![header(record)];
    let room = MAX_BLOCKS - 2;
    for (i, q) in questions.iter().enumerate().take(room) {
        let asked = match (i, permission(record)) {
            (0, Some(view)) => view.title,
            _ => format!("{}{}", prefix(questions, i), summary(&q.question)),
        };
        let text = match said.get(i) {
            Some(answer) => format!("{asked}\n→ {answer}"),
            None => asked,
        };
        blocks.push(section(&text));
    }
    // `ended` is askuser's own words and a checked user id: the one mrkdwn here.
    blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": ended}]}));
    let text = match said.is_empty() {
        true => ended_plain,
        false => format!("{ended_plain}: {}", said.join("; ")),
    };
    json!({"text": fit(&text, MAX_FALLBACK), "blocks": blocks})
}

/// Why a request is not taken as Slack's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A header is not in Slack's form.
    #[error("{0}")]
    Malformed(String),
    /// Signed too long ago (a replay) or in the future (a clock that is off).
    #[error(
        "X-Slack-Request-Timestamp is {skew_s} s from this machine's clock; at most {max} s either way is taken \
         (a replayed request, or a clock that is off)",
        max = MAX_SKEW_S
    )]
    Stale { skew_s: u64 },
    /// Not signed with this signing secret (another app's, or altered on the way).
    #[error("X-Slack-Signature does not match the body under this signing secret: another app's secret, or an altered request")]
    Mismatch,
}

/// Checks Slack's `v0` request signature: `signature` (`X-Slack-Signature`, `v0=HEX`) must
/// be the HMAC-SHA256 of `v0:{timestamp}:{body}` under `signing_secret`, compared in
/// constant time, and `timestamp` (`X-Slack-Request-Timestamp`, Unix seconds) within
/// [`MAX_SKEW_S`] of `now_s`. `body` is the raw request body, before any parsing.
pub fn verify(signing_secret: &[u8], timestamp: &str, signature: &str, body: &[u8], now_s: u64) -> Result<(), SignatureError> {
    let at: u64 = match timestamp.parse() {
        Ok(at) if !timestamp.is_empty() && timestamp.bytes().all(|b| b.is_ascii_digit()) => at,
        _ => {
            return Err(SignatureError::Malformed(format!(
                "X-Slack-Request-Timestamp: expected Unix seconds, got {:?}",
                cut_plain(timestamp, 40)
            )))
        }
    };
    let skew_s = at.abs_diff(now_s);
    if skew_s > MAX_SKEW_S {
        return Err(SignatureError::Stale { skew_s });
    }
    let tag = signature.strip_prefix("v0=").and_then(unhex).filter(|t| t.len() == 32).ok_or_else(|| {
        SignatureError::Malformed(format!("X-Slack-Signature: expected v0= and 64 hex digits, got {:?}", cut_plain(signature, 80)))
    })?;
    let mut signed = format!("v0:{timestamp}:").into_bytes();
    signed.extend_from_slice(body);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, signing_secret);
    ring::hmac::verify(&key, &signed, &tag).map_err(|_| SignatureError::Mismatch)
}

/// `text` cut to `max` characters with "…" (for showing a header in an error).
fn cut_plain(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max - 1).chain(['…']).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok())).collect()
}

/// The person who acted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct User {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub team_id: Option<String>,
}

/// A workspace or a channel: its id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Id {
    #[serde(default)]
    pub id: String,
}

/// The message the action was taken in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct MessageRef {
    #[serde(default)]
    pub ts: Option<String>,
}

/// Where the action was taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Container {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message_ts: Option<String>,
    #[serde(default)]
    pub channel_id: Option<String>,
}

/// One action (a button pressed, an option chosen, a box ticked), of any type: an element
/// type Slack adds later parses too, with what it has of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "Value")]
pub struct Action {
    pub action_id: String,
    pub block_id: String,
    /// `button`, `static_select`, `checkboxes`, …
    pub kind: String,
    pub value: Option<String>,
    /// `selected_option.value` (a menu, a radio group); `None` also when deselected.
    pub selected: Option<String>,
    /// `selected_options[].value` (checkboxes, a multi-select).
    pub selected_all: Option<Vec<String>>,
}

impl From<Value> for Action {
    fn from(v: Value) -> Action {
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        Action {
            action_id: text("action_id").unwrap_or_default(),
            block_id: text("block_id").unwrap_or_default(),
            kind: text("type").unwrap_or_default(),
            value: text("value"),
            selected: v.get("selected_option").and_then(|o| o.get("value")).and_then(Value::as_str).map(str::to_owned),
            selected_all: v
                .get("selected_options")
                .and_then(Value::as_array)
                .map(|all| all.iter().filter_map(|o| o.get("value").and_then(Value::as_str).map(str::to_owned)).collect()),
        }
    }
}

/// The values of a message's stateful elements when the action was taken, by block id
/// and then action id (`value` of a text box, `selected` of a menu, `selected_all` of
/// checkboxes: an [`Action`] without its ids).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct State {
    #[serde(default)]
    pub values: BTreeMap<String, BTreeMap<String, Action>>,
}

/// A `block_actions` interaction (or any other type, which [`selections`] refuses).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Interaction {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub user: User,
    #[serde(default)]
    pub team: Option<Id>,
    #[serde(default)]
    pub channel: Option<Id>,
    #[serde(default)]
    pub message: Option<MessageRef>,
    #[serde(default)]
    pub container: Option<Container>,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default)]
    pub state: State,
    #[serde(default)]
    pub response_url: Option<String>,
    #[serde(default)]
    pub trigger_id: Option<String>,
}

impl Interaction {
    /// The payload's JSON.
    pub fn from_json(text: &str) -> Result<Interaction, String> {
        serde_json::from_str(text).map_err(|e| format!("the interaction payload: expected Slack's JSON, {e}"))
    }

    /// What Slack POSTs to the interactivity URL: `application/x-www-form-urlencoded`
    /// with one field, `payload`, holding the JSON.
    pub fn from_form(body: &[u8]) -> Result<Interaction, String> {
        for pair in body.split(|&b| b == b'&') {
            let (key, value) = match pair.iter().position(|&b| b == b'=') {
                Some(at) => (&pair[..at], &pair[at + 1..]),
                None => (pair, &[][..]),
            };
            if form_decode(key).as_deref() == Some(b"payload".as_slice()) {
                let json = form_decode(value).ok_or("the payload field: a bad %-escape")?;
                let json = String::from_utf8(json).map_err(|_| "the payload field: expected UTF-8 text".to_owned())?;
                return Interaction::from_json(&json);
            }
        }
        Err("expected a form with a payload field (Slack's interactivity request), found none".into())
    }

    /// The `ts` of the message acted in, which maps it to its question set.
    pub fn message_ts(&self) -> Option<&str> {
        self.container.as_ref().and_then(|c| c.message_ts.as_deref()).or_else(|| self.message.as_ref().and_then(|m| m.ts.as_deref()))
    }

    /// The channel of that message.
    pub fn channel_id(&self) -> Option<&str> {
        self.container.as_ref().and_then(|c| c.channel_id.as_deref()).or_else(|| self.channel.as_ref().map(|c| c.id.as_str()))
    }

    /// Who answered, as a record's `answered_by` keeps it (`slack:U0123ABCD`), which
    /// [`answered`] shows as a mention.
    pub fn answered_by(&self) -> Option<String> {
        is_user_id(&self.user.id).then(|| format!("slack:{}", self.user.id))
    }
}

/// `application/x-www-form-urlencoded` text decoded: `+` is a space, `%XX` a byte; none
/// when a `%` is not followed by two hex digits.
fn form_decode(text: &[u8]) -> Option<Vec<u8>> {
    let escaped = |i: usize| text.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
    if !(0..text.len()).filter(|&i| text[i] == b'%').all(escaped) {
        return None;
    }
    let spaced: Vec<u8> = text.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect();
    Some(percent_encoding::percent_decode(&spaced).collect())
}

/// One Socket Mode frame: `{"envelope_id", "type", "payload"}` (`hello` and `disconnect`
/// have no envelope id).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Envelope {
    #[serde(default)]
    pub envelope_id: Option<String>,
    /// `interactive`, `events_api`, `slash_commands`, `hello`, `disconnect`, …
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub payload: Value,
}

impl Envelope {
    /// Reads a text frame from the Socket Mode WebSocket.
    pub fn parse(frame: &str) -> Result<Envelope, String> {
        serde_json::from_str(frame).map_err(|e| format!("a Socket Mode frame: expected Slack's JSON envelope, {e}"))
    }

    /// The interaction it carries, when it is an `interactive` envelope.
    pub fn interaction(&self) -> Result<Option<Interaction>, String> {
        if self.kind != "interactive" {
            return Ok(None);
        }
        serde_json::from_value(self.payload.clone()).map(Some).map_err(|e| format!("the interactive envelope's payload: {e}"))
    }

    /// The Events API callback it carries, when it is an `events_api` envelope.
    pub fn event(&self) -> Option<Event> {
        (self.kind == "events_api").then(|| Event::of(&self.payload))
    }

    /// The acknowledgement Slack waits for (within 3 s), for an envelope that has an id.
    pub fn ack(&self) -> Option<String> {
        self.envelope_id.as_ref().map(|id| json!({"envelope_id": id}).to_string())
    }
}

/// What the Events API brings (posted to the events URL, or in a Socket Mode `events_api`
/// envelope), as far as askuser reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `url_verification`: Slack checks the events URL, the challenge to echo.
    Challenge(String),
    /// Someone wrote a message in a channel the app is in.
    Said(Said),
    /// Anything else: a bot's message (askuser's own too), an edit, a deletion, a join, a
    /// message with a file, an event askuser did not ask for.
    Other,
}

/// A person's new message, from a `message` event with no subtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub channel: String,
    /// Their user id (`U0123ABCD`).
    pub user: String,
    pub text: String,
    /// The message's ts, and the thread it is in (its own ts where it starts none).
    pub ts: String,
    pub thread_ts: String,
    /// To the app: in a direct message with it (`channel_type` `im`), or starting with its
    /// mention (`@askuser approve a1b2c3`, which is taken out of `text`).
    pub addressed: bool,
}

impl Said {
    /// Who answered, as a record's `answered_by` keeps it (`slack:U0123ABCD`).
    pub fn answered_by(&self) -> String {
        format!("slack:{}", self.user)
    }
}

impl Event {
    /// An Events API request body (`url_verification`, `event_callback`), read field by
    /// field; what is not a person's new message is [`Event::Other`].
    pub fn of(body: &Value) -> Event {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        match body["type"].as_str() {
            Some("url_verification") => return text(body, "challenge").map_or(Event::Other, Event::Challenge),
            Some("event_callback") => {}
            _ => return Event::Other,
        }
        let event = &body["event"];
        // A subtype is anything but a person's plain new message (`message_changed`, an
        // edit; `bot_message`; `channel_join`, `file_share`, ...); a bot's own has `bot_id`.
        if event["type"] != "message"
            || event.get("subtype").is_some_and(|s| !s.is_null())
            || event.get("bot_id").is_some_and(|b| !b.is_null())
        {
            return Event::Other;
        }
        let (Some(channel), Some(user), Some(said), Some(ts)) =
            (text(event, "channel"), text(event, "user"), text(event, "text"), text(event, "ts"))
        else {
            return Event::Other;
        };
        if !is_user_id(&user) || channel.is_empty() || ts.is_empty() {
            return Event::Other;
        }
        let thread_ts = text(event, "thread_ts").unwrap_or_else(|| ts.clone());
        // The app's own user, whose mention may lead the message (`<@U0APP> approve …`).
        let app = body["authorizations"].as_array().into_iter().flatten().find(|a| a["is_bot"] == true);
        let app = app.and_then(|a| a["user_id"].as_str()).filter(|id| is_user_id(id));
        let mentioned = app.and_then(|id| said.trim_start().strip_prefix(&format!("<@{id}>")).map(str::to_owned));
        let addressed = mentioned.is_some() || event["channel_type"] == "im";
        let said = mentioned.unwrap_or(said);
        // Slack writes `&`, `<` and `>` in a message's text as entities.
        let said = said.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        Event::Said(Said { channel, user, text: said.trim().to_owned(), ts, thread_ts, addressed })
    }

    /// A request body posted to the events URL.
    pub fn parse(body: &[u8]) -> Result<Event, String> {
        let body: Value = serde_json::from_slice(body).map_err(|e| format!("the event: expected Slack's JSON, {e}"))?;
        Ok(Event::of(&body))
    }
}

/// Whether option `label` may be chosen from Slack's message of `record`: on an approval,
/// Deny, and Allow only where the message shows it whole (where it offers Allow).
pub fn allowable(record: &QuestionRecord, label: &str) -> Result<(), String> {
    super::channel::allowable(permission(record).is_some(), || offers(record).0, label)
}

/// What an interaction does to its question set.
pub use super::channel::Outcome;

/// What the person chose in `interaction` on `record`'s message: `Some` when it answers
/// (a button of a one-question set, a choice in its menu, or Submit, which reads every
/// question's state) or declines; `None` when it is not final yet (a box ticked, a radio
/// chosen in a larger set, Open). An action from another set's message, an unknown
/// control, an option that is not the record's, or a Submit that does not answer every
/// question is an error that says which, naming questions by number only.
pub fn selections(interaction: &Interaction, record: &QuestionRecord) -> Result<Option<Outcome>, String> {
    if interaction.kind != "block_actions" {
        return Err(format!("expected a block_actions interaction, got {:?}", cut_plain(&interaction.kind, 40)));
    }
    let Some(action) = interaction.actions.first() else {
        return Err("the interaction has no action".into());
    };
    let mark = mark(&record.id);
    let block = cut_plain(&action.block_id, 80);
    let Some((their_mark, part)) = action.block_id.split_once('/') else {
        return Err(format!("block {block:?} is not one of askuser's (expected MARK/PART)"));
    };
    if their_mark != mark {
        return Err(format!("block {block:?} belongs to another question set's message, not {mark:?}'s"));
    }
    let questions = &record.request.questions;
    let alone = questions.len() == 1;
    let control = cut_plain(&action.action_id, 40);
    if part == "end" {
        return match action.action_id.as_str() {
            "submit" => submit(interaction, record, &mark).map(|s| Some(Outcome::Answer(s))),
            "decline" => Ok(Some(Outcome::Decline)),
            "open" => Ok(None),
            _ => Err(format!("unknown control {control:?} under the questions")),
        };
    }
    if let Some(i) = part.strip_prefix('t') {
        index(i, questions.len(), "question")?;
        return Ok(None); // typing is read on Submit
    }
    let Some(i) = part.strip_prefix('q') else {
        return Err(format!("block {block:?} is not one of askuser's (expected q, t or end after the mark)"));
    };
    let i = index(i, questions.len(), "question")?;
    let q = &questions[i];
    let n = i + 1;
    match (pick(q, alone), action.action_id.as_str()) {
        (Pick::Buttons, id) if id.starts_with('o') => {
            let j = index(&id[1..], q.options.len(), "option")?;
            let (allow, always) = offers(record);
            if i == 0 && permission(record).is_some() && !offered(&q.options[j].label, allow, always) {
                return Err("This message does not show it whole: open askuser to see all of it and allow it.".into());
            }
            Ok(Some(Outcome::Answer(vec![Selection::option(q.options[j].label.clone())])))
        }
        (Pick::Menu, "one") if alone => match &action.selected {
            Some(value) => {
                let j = index(value, q.options.len(), "option")?;
                Ok(Some(Outcome::Answer(vec![Selection::option(q.options[j].label.clone())])))
            }
            None => Ok(None), // deselected
        },
        (Pick::Menu | Pick::Radio, "one") | (Pick::Checkboxes | Pick::MultiMenu, "many") => Ok(None),
        _ => Err(format!("question {n} has no control {control:?} (its message may be older than its question set)")),
    }
}

/// `text` as an index below `len`.
fn index(text: &str, len: usize, what: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(i) if i < len && text.bytes().all(|b| b.is_ascii_digit()) => Ok(i),
        _ => Err(format!("{what} {:?} is not one of the {len} this question set has", cut_plain(text, 20))),
    }
}

/// Every question's answer from the message's state, when Submit was pressed.
fn submit(interaction: &Interaction, record: &QuestionRecord, mark: &str) -> Result<Vec<Selection>, String> {
    let questions = &record.request.questions;
    let alone = questions.len() == 1;
    let values = &interaction.state.values;
    let element = |part: Part, action: &str| values.get(&part.block_id(mark)).and_then(|block| block.get(action));
    let mut problems = Vec::new();
    let mut selections = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let n = i + 1;
        let mut picked: Vec<String> = match pick(q, alone) {
            Pick::Menu | Pick::Radio => element(Part::Options(i), "one").and_then(|e| e.selected.clone()).into_iter().collect(),
            Pick::Checkboxes | Pick::MultiMenu => {
                element(Part::Options(i), "many").and_then(|e| e.selected_all.clone()).unwrap_or_default()
            }
            Pick::Typed | Pick::Buttons => vec![],
        };
        let mut labels = Vec::new();
        for value in picked.drain(..) {
            match index(&value, q.options.len(), "option") {
                Ok(j) => labels.push(q.options[j].label.clone()),
                Err(e) => problems.push(format!("question {n}: {e}")),
            }
        }
        let typed = element(Part::Typed(i), "text").and_then(|e| e.value.as_deref()).map(str::trim).filter(|t| !t.is_empty());
        match (labels.len(), typed) {
            (0, None) => problems.push(match q.is_free_text() {
                true => format!("question {n} has no answer: type one"),
                false if alone => format!("question {n} has no answer: press an option, or type an answer and Submit"),
                false => format!("question {n} has no answer: choose an option or type one"),
            }),
            (1.., Some(_)) if !q.multi_select => problems
                .push(format!("question {n} takes one answer: choose an option or type one, not both (clear the text to use the option)")),
            _ => {}
        }
        selections.push(Selection { selected: labels, custom: typed.map(str::to_owned), notes: None });
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    resolve(questions, &selections).map_err(|e| e.to_string())?;
    Ok(selections)
}

#[cfg(test)]
mod tests;
