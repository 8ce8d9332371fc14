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

use askuser_core::approval::{self, Shown, ALLOW, DENY};
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
pub const MAX_BUTTON_VALUE: usize = 2000;
/// An option's text, and its description.
pub const MAX_OPTION_TEXT: usize = 75;
/// An option's value.
pub const MAX_OPTION_VALUE: usize = 150;
/// An `action_id`, and a `block_id`.
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

/// The permission an approval asks, when the set is one (not Claude Code's own
/// `AskUserQuestion`, which is shown as its questions).
fn permission(record: &QuestionRecord) -> Option<approval::ApprovalView> {
    record.request.approval.as_ref().and_then(|a| a.view())
}

/// The header: who asks (and the chip of a lone question).
fn header(record: &QuestionRecord) -> Value {
    let agent = agent_name(record);
    let questions = &record.request.questions;
    let text = match (questions.len(), questions.first().and_then(|q| q.header.as_deref())) {
        (1, Some(chip)) if !chip.trim().is_empty() => format!("{agent} asks · {chip}"),
        _ => format!("{agent} asks"),
    };
    json!({"type": "header", "text": plain(&text, MAX_HEADER)})
}

/// The text of question `i`: prose as plain text, fenced blocks as code blocks; for a
/// permission, what it would do.
fn question_text(record: &QuestionRecord, i: usize) -> Vec<Value> {
    let questions = &record.request.questions;
    let q = &questions[i];
    if let (0, Some(view)) = (i, permission(record)) {
        let mut blocks = vec![section(&view.title)];
        let code = match &view.shown {
            Shown::Command { command, .. } => Some(command.clone()),
            Shown::Diff { lines, .. } => Some(lines.iter().map(approval::Line::marked).collect::<Vec<_>>().join("\n")),
            Shown::Write { head, total, .. } => {
                let more = total.saturating_sub(head.len());
                let tail = if more > 0 { format!("\n… {more} more lines") } else { String::new() };
                Some(format!("{}{tail}", head.join("\n")))
            }
            Shown::Fetch { .. } => None,
            Shown::Call { args } => Some(args.iter().map(|(name, value)| format!("{name}: {value}")).collect::<Vec<_>>().join("\n")),
        };
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
            let buttons: Vec<Value> = q
                .options
                .iter()
                .enumerate()
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
            descriptions: if pick(&questions[i], alone) == Pick::Buttons && !(i == 0 && permission(record).is_some()) {
                descriptions(&questions[i])
            } else {
                None
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
    let answers = record.result.as_ref().filter(|r| r.status == Status::Answered).map(|r| r.answers.as_slice()).unwrap_or_default();
    let is_permission = permission(record).is_some();
    let said: Vec<String> = answers
        .iter()
        .map(|a| {
            if is_permission {
                approval::said(&Selection { selected: a.selected_options.clone(), custom: a.custom.clone(), notes: None })
            } else {
                a.answer.joined()
            }
        })
        .collect();
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

/// `application/x-www-form-urlencoded` text decoded: `+` is a space, `%XX` a byte.
fn form_decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let pair = std::str::from_utf8(text.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(pair, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Some(out)
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

    /// The acknowledgement Slack waits for (within 3 s), for an envelope that has an id.
    pub fn ack(&self) -> Option<String> {
        self.envelope_id.as_ref().map(|id| json!({"envelope_id": id}).to_string())
    }
}

/// What an interaction does to its question set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// One selection per question, in order (checked with [`resolve`]).
    Answer(Vec<Selection>),
    /// The person declined the set.
    Decline,
}

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
mod tests {
    use super::*;
    use askuser_core::approval::Approval;
    use askuser_core::{Agent, AskResult, Choice, Limits, Request};

    fn record(questions: Vec<Question>) -> QuestionRecord {
        QuestionRecord {
            id: "q-1".into(),
            request: Request {
                id: Some("q-1".into()),
                questions,
                agent: Some(Agent { name: "claude-code".into(), ..Agent::default() }),
                ..Request::default()
            },
            status: Status::Pending,
            created_at: 1_000,
            answered_at: None,
            result: None,
            answered_by: None,
        }
    }

    fn single(labels: &[&str]) -> Question {
        Question {
            question: "Which database?".into(),
            header: Some("DB".into()),
            options: labels.iter().map(|l| Choice::new(*l)).collect(),
            multi_select: false,
        }
    }

    fn multi(labels: &[&str]) -> Question {
        Question { question: "Which features?".into(), multi_select: true, ..single(labels) }
    }

    fn blocks(m: &Value) -> &Vec<Value> {
        m["blocks"].as_array().expect("blocks")
    }

    /// Every string under a `text` key, anywhere in `v`.
    fn texts(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("text", Value::String(s)) => out.push(s.clone()),
                        _ => texts(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
            _ => {}
        }
    }

    /// The block with this block id.
    fn block<'a>(m: &'a Value, id: &str) -> &'a Value {
        blocks(m).iter().find(|b| b["block_id"] == id).unwrap_or_else(|| panic!("no block {id} in {m:#}"))
    }

    /// A `block_actions` interaction as Slack sends it for `action` in `m`'s block `block_id`.
    fn acted(block_id: &str, action: Value, state: Value) -> Interaction {
        let mut action = action;
        action["block_id"] = json!(block_id);
        Interaction::from_json(
            &json!({
                "type": "block_actions", "user": {"id": "U0ALICE", "username": "alice", "name": "alice"},
                "team": {"id": "T1"}, "channel": {"id": "C1"}, "container": {"type": "message", "message_ts": "1700.01", "channel_id": "C1"},
                "message": {"ts": "1700.01"}, "actions": [action], "state": {"values": state},
                "response_url": "https://hooks.slack.com/actions/x", "trigger_id": "1.2.3",
            })
            .to_string(),
        )
        .unwrap()
    }

    fn press(block_id: &str, action_id: &str) -> Interaction {
        acted(block_id, json!({"type": "button", "action_id": action_id, "value": "ignored"}), json!({}))
    }

    #[test]
    fn slacks_documented_example_verifies() {
        let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar\
&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F\
T1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let secret = b"8f742231b10e8888abcd99yyyzzz85a5";
        let signature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(verify(secret, "1531420618", signature, body.as_bytes(), 1531420618 + 12), Ok(()));
        assert_eq!(verify(b"another secret", "1531420618", signature, body.as_bytes(), 1531420618), Err(SignatureError::Mismatch));
    }

    #[test]
    fn a_signature_is_checked_against_the_body_the_secret_and_the_clock() {
        let secret = b"s3cret";
        let body = br#"payload=%7B%22type%22%3A%22block_actions%22%7D"#;
        let sign = |ts: &str, body: &[u8]| {
            let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
            let mut signed = format!("v0:{ts}:").into_bytes();
            signed.extend_from_slice(body);
            format!("v0={}", hex(ring::hmac::sign(&key, &signed).as_ref()))
        };
        let now = 1_800_000_000;
        let good = sign("1800000000", body);
        assert_eq!(verify(secret, "1800000000", &good, body, now), Ok(()));
        // One byte of the body, or one digit of the signature, changed.
        let mut altered = body.to_vec();
        altered[10] ^= 1;
        assert_eq!(verify(secret, "1800000000", &good, &altered, now), Err(SignatureError::Mismatch));
        let mut flipped = good.clone().into_bytes();
        flipped[3] = if flipped[3] == b'0' { b'1' } else { b'0' };
        assert_eq!(verify(secret, "1800000000", std::str::from_utf8(&flipped).unwrap(), body, now), Err(SignatureError::Mismatch));
        // The timestamp is signed: another one with the same signature is refused.
        assert_eq!(verify(secret, "1800000001", &good, body, now), Err(SignatureError::Mismatch));
        // 300 s either way is fine, 301 is not.
        assert_eq!(verify(secret, "1800000000", &good, body, now + 300), Ok(()));
        assert_eq!(verify(secret, "1800000000", &good, body, now - 300), Ok(()));
        assert_eq!(verify(secret, "1800000000", &good, body, now + 301), Err(SignatureError::Stale { skew_s: 301 }));
        let future = sign("1800000400", body);
        assert_eq!(verify(secret, "1800000400", &future, body, now), Err(SignatureError::Stale { skew_s: 400 }));
        let stale = verify(secret, "1800000000", &good, body, now + 3600).unwrap_err().to_string();
        assert!(stale.contains("3600 s") && stale.contains("replayed"), "{stale}");
    }

    #[test]
    fn malformed_headers_are_named() {
        let now = 1_800_000_000;
        let sig = format!("v0={}", "ab".repeat(32));
        for ts in ["", "abc", "+1800000000", " 1800000000", "1800000000.5", "99999999999999999999999"] {
            match verify(b"k", ts, &sig, b"", now) {
                Err(SignatureError::Malformed(m)) => assert!(m.starts_with("X-Slack-Request-Timestamp: expected Unix seconds"), "{m}"),
                other => panic!("{ts:?}: {other:?}"),
            }
        }
        let (short, bare) = (format!("v0={}", "ab".repeat(31)), "ab".repeat(32));
        for sig in ["", "v1=abcd", "v0=", "v0=zz", &short, &bare] {
            match verify(b"k", "1800000000", sig, b"", now) {
                Err(SignatureError::Malformed(m)) => assert!(m.starts_with("X-Slack-Signature: expected v0= and 64 hex digits"), "{m}"),
                other => panic!("{sig:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn agent_text_never_pings_links_or_formats() {
        let evil = "<!channel> <@U0BOSS> <https://evil.example|your bank> & *bold* :fire:";
        let mut q = single(&[evil, "Fine"]);
        q.question = format!("Hi {evil}\n```\n{evil}\n```\nand `{evil}`");
        q.header = Some(evil.into());
        q.options[0].description = Some(evil.into());
        let mut r = record(vec![q.clone(), multi(&[evil, "b"])]);
        r.request.agent = Some(Agent { name: evil.into(), ..Agent::default() });
        for rec in [r.clone(), record(vec![q])] {
            let m = message(&rec, Some("https://askuser.example/#q=q-1"));
            let mut all = vec![m["text"].as_str().unwrap().to_owned()];
            texts(&m["blocks"], &mut all);
            assert!(all.len() > 5);
            for t in &all {
                assert!(!t.contains('<') && !t.contains('>'), "unescaped control character in {t:?}");
                assert!(!t.contains("& ") && !t.contains("&*"), "a raw & in {t:?}");
            }
            assert!(all.iter().any(|t| t.contains("&lt;!channel&gt; &lt;@U0BOSS&gt; &lt;https://evil.example|your bank&gt; &amp;")));
            // Prose is plain text (no mrkdwn, so *bold* stays as typed); mrkdwn is only code.
            let mut kinds = vec![];
            fn collect(v: &Value, kinds: &mut Vec<(String, String)>) {
                match v {
                    Value::Object(map) => {
                        if let (Some(Value::String(k)), Some(Value::String(t))) = (map.get("type"), map.get("text")) {
                            kinds.push((k.clone(), t.clone()));
                        }
                        map.values().for_each(|v| collect(v, kinds));
                    }
                    Value::Array(items) => items.iter().for_each(|v| collect(v, kinds)),
                    _ => {}
                }
            }
            collect(&m["blocks"], &mut kinds);
            for (kind, text) in &kinds {
                match kind.as_str() {
                    "plain_text" => {}
                    "mrkdwn" => assert!(text.starts_with("```\n") && text.ends_with("\n```"), "mrkdwn outside a code block: {text:?}"),
                    other => panic!("text of type {other}"),
                }
            }
        }
        // The answered message: agent text escaped, the answerer a mention of a checked id.
        let mut done = record(vec![single(&[evil])]);
        let answers = resolve(&done.request.questions, &[Selection::option(evil)]).unwrap();
        done.status = Status::Answered;
        done.result = Some(AskResult::answered("q-1", &done.request, answers, 2_000));
        done.answered_by = Some("slack:U0ALICE".into());
        let m = answered(&done);
        let mut all = vec![];
        texts(&m["blocks"], &mut all);
        assert!(all
            .iter()
            .any(|t| t.ends_with("→ &lt;!channel&gt; &lt;@U0BOSS&gt; &lt;https://evil.example|your bank&gt; &amp; *bold* :fire:")));
        assert_eq!(all.iter().filter(|t| t.contains('<')).collect::<Vec<_>>(), ["Answered by <@U0ALICE>"]);
        // Anything else as "who" is never a mention.
        done.answered_by = Some("slack:<!channel>".into());
        assert_eq!(blocks(&answered(&done)).last().unwrap()["elements"][0]["text"], "Answered in askuser");
    }

    #[test]
    fn code_cannot_close_its_block() {
        let command = "echo ```; *x* `date` ````` <!here>";
        let block = code_section(command);
        let text = block["text"]["text"].as_str().unwrap();
        let inner = text.strip_prefix("```\n").and_then(|t| t.strip_suffix("\n```")).unwrap();
        assert!(!inner.contains("```"), "{inner:?}");
        assert_eq!(inner.replace('\u{200B}', ""), escape(command), "shown as typed, but for the zero-width spaces");
        assert_eq!(block["text"]["verbatim"], true);
        // A question's fenced block is code; the prose around it plain text.
        let mut q = single(&["Yes"]);
        q.question = "Run this?\n```sh\nmake `x`\n```\nThanks".into();
        let m = message(&record(vec![q]), None);
        let texts: Vec<(&str, &str)> =
            blocks(&m)[1..4].iter().map(|b| (b["text"]["type"].as_str().unwrap(), b["text"]["text"].as_str().unwrap())).collect();
        assert_eq!(texts, [("plain_text", "Run this?"), ("mrkdwn", "```\nmake `x`\n```"), ("plain_text", "Thanks")]);
    }

    #[test]
    fn long_text_is_cut_by_characters_with_an_ellipsis_never_inside_an_entity() {
        assert_eq!(fit("abc", 3), "abc");
        assert_eq!(fit("abcd", 3), "ab…");
        assert_eq!(fit("a&b", 5), "a…", "an entity is not cut");
        assert_eq!(fit("a&b", 7), "a&amp;b");
        assert_eq!(fit("a&bc", 7), "a&amp;…");
        assert_eq!(fit("🎉🎉🎉🎉", 3), "🎉🎉…");
        let agent = "é".repeat(400);
        let label = "<".repeat(100);
        let mut q = single(&[&label, &"ü".repeat(300)]);
        q.question = "x".repeat(5000);
        q.options[1].description = Some("d".repeat(500));
        let mut r = record(vec![q, multi(&["y"; 12].map(|_| "z".repeat(200)).iter().map(String::as_str).collect::<Vec<_>>())]);
        r.request.agent = Some(Agent { name: agent, ..Agent::default() });
        r.request.questions[1].options.iter_mut().enumerate().for_each(|(j, o)| o.label = format!("{j}{}", o.label));
        let m = message(&r, None);
        let n = |v: &Value| v.as_str().unwrap().chars().count();
        let header = &blocks(&m)[0]["text"]["text"];
        assert_eq!(n(header), MAX_HEADER);
        assert!(header.as_str().unwrap().ends_with('…'));
        let mut all = vec![];
        texts(&m["blocks"], &mut all);
        assert!(all.iter().all(|t| t.chars().count() <= MAX_SECTION));
        assert!(all.iter().any(|t| t.chars().count() == MAX_SECTION && t.ends_with('…')), "the 5000-char question is cut");
        let radio = &block(&m, "q-1/q0")["elements"][0];
        assert_eq!(radio["type"], "radio_buttons");
        let first = radio["options"][0]["text"]["text"].as_str().unwrap();
        assert_eq!(first, format!("{}…", "&lt;".repeat(18)), "at most 75 chars: 18 whole entities and the ellipsis");
        assert_eq!(n(&radio["options"][1]["description"]["text"]), MAX_OPTION_TEXT);
        let menu = &block(&m, "q-1/q1")["elements"][0];
        assert_eq!(menu["type"], "multi_static_select");
        assert!(menu["options"].as_array().unwrap().iter().all(|o| n(&o["text"]["text"]) == MAX_OPTION_TEXT));
    }

    #[test]
    fn one_single_select_question_is_buttons_that_answer_at_once() {
        let mut q = single(&["PostgreSQL", "SQLite", "DynamoDB"]);
        q.options[1].description = Some("Embedded".into());
        let r = record(vec![q]);
        let m = message(&r, Some("https://h/#q=q-1"));
        assert_eq!(m["text"], "claude-code asks: Which database?");
        let b = blocks(&m);
        let kinds: Vec<&str> = b.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["header", "section", "section", "actions", "input", "actions"]);
        assert_eq!(b[0]["text"]["text"], "claude-code asks · DB");
        assert_eq!(b[2]["text"]["text"], "SQLite: Embedded", "buttons cannot show descriptions: a section does");
        let buttons = &block(&m, "q-1/q0")["elements"];
        let ids: Vec<&str> = buttons.as_array().unwrap().iter().map(|e| e["action_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["o0", "o1", "o2"]);
        assert_eq!(block(&m, "q-1/t0")["label"]["text"], OTHER_LABEL);
        let end: Vec<&str> =
            block(&m, "q-1/end")["elements"].as_array().unwrap().iter().map(|e| e["action_id"].as_str().unwrap()).collect();
        assert_eq!(end, ["submit", "decline", "open"]);
        assert_eq!(block(&m, "q-1/end")["elements"][2]["url"], "https://h/#q=q-1");
        // A press answers; its value is not what says which option.
        let got = selections(&press("q-1/q0", "o1"), &r).unwrap();
        assert_eq!(got, Some(Outcome::Answer(vec![Selection::option("SQLite")])));
        // Typed instead, with Submit.
        let state = json!({"q-1/t0": {"text": {"type": "plain_text_input", "value": "  CockroachDB "}}});
        let typed = acted("q-1/end", json!({"type": "button", "action_id": "submit"}), state);
        assert_eq!(selections(&typed, &r).unwrap(), Some(Outcome::Answer(vec![Selection::custom("CockroachDB")])));
        let empty = selections(&press("q-1/end", "submit"), &r).unwrap_err();
        assert_eq!(empty, "question 1 has no answer: press an option, or type an answer and Submit");
        assert_eq!(selections(&press("q-1/end", "decline"), &r).unwrap(), Some(Outcome::Decline));
        assert_eq!(selections(&press("q-1/end", "open"), &r).unwrap(), None);
    }

    #[test]
    fn many_options_become_a_menu_and_many_choices_a_multi_select() {
        let labels: Vec<String> = (0..30).map(|i| format!("option {i}")).collect();
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        let r = record(vec![single(&refs)]);
        let m = message(&r, None);
        let menu = &block(&m, "q-1/q0")["elements"];
        assert_eq!((menu.as_array().unwrap().len(), menu[0]["type"].as_str()), (1, Some("static_select")));
        assert_eq!(menu[0]["options"].as_array().unwrap().len(), 30);
        assert_eq!(menu[0]["options"][29]["value"], "29");
        // Alone, a choice in the menu answers; a deselection does not.
        let chose = acted("q-1/q0", json!({"type": "static_select", "action_id": "one", "selected_option": {"value": "29"}}), json!({}));
        assert_eq!(selections(&chose, &r).unwrap(), Some(Outcome::Answer(vec![Selection::option("option 29")])));
        let cleared = acted("q-1/q0", json!({"type": "static_select", "action_id": "one", "selected_option": null}), json!({}));
        assert_eq!(selections(&cleared, &r).unwrap(), None);
        let beyond = acted("q-1/q0", json!({"type": "static_select", "action_id": "one", "selected_option": {"value": "30"}}), json!({}));
        assert_eq!(selections(&beyond, &r).unwrap_err(), "option \"30\" is not one of the 30 this question set has");
        // 12 options to pick several of: a multi-select; 4: checkboxes.
        let m = message(&record(vec![multi(&refs[..12])]), None);
        assert_eq!(block(&m, "q-1/q0")["elements"][0]["type"], "multi_static_select");
        let m = message(&record(vec![multi(&refs[..4])]), None);
        assert_eq!(block(&m, "q-1/q0")["elements"][0]["type"], "checkboxes");
        // 150 options: the menu shows Slack's 100.
        let labels: Vec<String> = (0..150).map(|i| format!("o{i}")).collect();
        let m = message(&record(vec![single(&labels.iter().map(String::as_str).collect::<Vec<_>>())]), None);
        assert_eq!(block(&m, "q-1/q0")["elements"][0]["options"].as_array().unwrap().len(), MAX_MENU);
    }

    #[test]
    fn several_questions_are_answered_together_with_submit() {
        let mut free = single(&[]);
        free.question = "Name the service?".into();
        let r = record(vec![single(&["PostgreSQL", "SQLite"]), multi(&["Auth", "API", "UI"]), free]);
        let m = message(&r, None);
        assert_eq!(block(&m, "q-1/q0")["elements"][0]["type"], "radio_buttons");
        assert_eq!(block(&m, "q-1/q1")["elements"][0]["type"], "checkboxes");
        assert!(blocks(&m).iter().all(|b| b["block_id"] != "q-1/q2"), "free text has no options");
        assert_eq!(block(&m, "q-1/t2")["label"]["text"], "Your answer");
        assert_eq!(block(&m, "q-1/t2")["element"]["multiline"], true);
        assert_eq!(blocks(&m)[1]["text"]["text"], "1. DB: Which database?");
        // Choosing and ticking are not answers yet.
        let radio = acted("q-1/q0", json!({"type": "radio_buttons", "action_id": "one", "selected_option": {"value": "1"}}), json!({}));
        assert_eq!(selections(&radio, &r).unwrap(), None);
        let tick = acted("q-1/q1", json!({"type": "checkboxes", "action_id": "many", "selected_options": [{"value": "2"}]}), json!({}));
        assert_eq!(selections(&tick, &r).unwrap(), None);
        // Submit reads them all, in the question's order, whatever order they were ticked in.
        let state = json!({
            "q-1/q0": {"one": {"type": "radio_buttons", "selected_option": {"text": {"type": "plain_text", "text": "x"}, "value": "1"}}},
            "q-1/q1": {"many": {"type": "checkboxes", "selected_options": [{"value": "2"}, {"value": "0"}]}},
            "q-1/t1": {"text": {"type": "plain_text_input", "value": "Billing"}},
            "q-1/t2": {"text": {"type": "plain_text_input", "value": "orders"}},
            "elsewhere": {"x": {"type": "datepicker", "selected_date": "2027-01-31"}},
        });
        let submit = acted("q-1/end", json!({"type": "button", "action_id": "submit"}), state.clone());
        let Some(Outcome::Answer(got)) = selections(&submit, &r).unwrap() else { panic!() };
        assert_eq!(got[0], Selection::option("SQLite"));
        assert_eq!(got[1].selected, ["UI", "Auth"]);
        assert_eq!(got[1].custom.as_deref(), Some("Billing"));
        assert_eq!(got[2], Selection::custom("orders"));
        let answers = resolve(&r.request.questions, &got).unwrap();
        assert_eq!(answers[1].answer.joined(), "Auth, UI, Billing");
        // Every missing or doubled answer is named, by number.
        let mut partial = state.clone();
        partial["q-1/t0"] = json!({"text": {"type": "plain_text_input", "value": "MySQL"}});
        partial.as_object_mut().unwrap().remove("q-1/t2");
        partial["q-1/q1"]["many"]["selected_options"] = json!([{"value": "7"}]);
        let err = selections(&acted("q-1/end", json!({"type": "button", "action_id": "submit"}), partial), &r).unwrap_err();
        assert_eq!(
            err,
            "question 1 takes one answer: choose an option or type one, not both (clear the text to use the option); \
             question 2: option \"7\" is not one of the 3 this question set has; question 3 has no answer: type one"
        );
        // A button press on a set of several is no answer by itself.
        let odd = selections(&press("q-1/q0", "o1"), &r).unwrap_err();
        assert!(odd.starts_with("question 1 has no control \"o1\""), "{odd}");
    }

    #[test]
    fn an_action_from_another_sets_message_is_refused() {
        let r = record(vec![single(&["A", "B"])]);
        let err = selections(&press("q-2/q0", "o0"), &r).unwrap_err();
        assert_eq!(err, "block \"q-2/q0\" belongs to another question set's message, not \"q-1\"'s");
        assert!(selections(&press("nonsense", "o0"), &r).unwrap_err().contains("not one of askuser's"));
        assert!(selections(&press("q-1/q5", "o0"), &r).unwrap_err().starts_with("question \"5\" is not one of the 1"));
        assert!(selections(&press("q-1/q0", "o9"), &r).unwrap_err().starts_with("option \"9\" is not one of the 2"));
        assert!(selections(&press("q-1/q0", "o-1"), &r).is_err());
        assert!(selections(&press("q-1/end", "explode"), &r).unwrap_err().starts_with("unknown control \"explode\""));
        let mut other = press("q-1/q0", "o0");
        other.kind = "view_submission".into();
        assert_eq!(selections(&other, &r).unwrap_err(), "expected a block_actions interaction, got \"view_submission\"");
        other.kind = "block_actions".into();
        other.actions.clear();
        assert_eq!(selections(&other, &r).unwrap_err(), "the interaction has no action");
        // An id askuser would not put in a block id as it is is marked by its digest.
        let mut long = record(vec![single(&["A"])]);
        long.id = "x/".repeat(150);
        let m = message(&long, None);
        let id = blocks(&m)[2]["block_id"].as_str().unwrap();
        assert!(id.starts_with('#') && id.ends_with("/q0") && id.len() == 1 + 32 + 3, "{id}");
        assert_eq!(selections(&press(id, "o0"), &long).unwrap(), Some(Outcome::Answer(vec![Selection::option("A")])));
        assert!(selections(&press(id, "o0"), &r).is_err());
    }

    #[test]
    fn an_approval_shows_its_command_in_a_code_block_with_allow_and_deny() {
        let mut a = Approval::from_claude(
            &json!({"tool_name": "Bash", "input": {"command": "rm -rf build && echo '<!here>'", "description": "Clean & go"}}),
        )
        .unwrap();
        a.cwd = Some("/home/me/app".into());
        let mut r = record(vec![]);
        r.request = Request { agent: r.request.agent.clone(), ..a.request(&a.suggest(None), &Limits::default()).unwrap() };
        let m = message(&r, None);
        let b = blocks(&m);
        assert_eq!(b[0]["text"]["text"], "claude-code asks · Bash");
        assert_eq!(b[1]["text"]["text"], "Run this command in /home/me/app?");
        assert_eq!(b[2]["text"]["text"], "```\nrm -rf build &amp;&amp; echo '&lt;!here&gt;'\n```");
        assert_eq!(b[3]["text"]["text"], "Why: Clean &amp; go");
        let buttons = &block(&m, "q-1/q0")["elements"];
        assert_eq!(buttons[0]["text"]["text"], ALLOW);
        assert_eq!(buttons[0]["style"], "primary");
        assert_eq!(buttons[2]["style"], "danger");
        assert_eq!(block(&m, "q-1/t0")["label"]["text"], DENY_SAYING);
        assert_eq!(m["text"], "claude-code asks: Run this command in /home/me/app?");
        // Typed words deny, with them.
        let state = json!({"q-1/t0": {"text": {"type": "plain_text_input", "value": "use cargo clean"}}});
        let Some(Outcome::Answer(said)) = selections(&acted("q-1/end", json!({"action_id": "submit"}), state), &r).unwrap() else {
            panic!()
        };
        let answers = resolve(&r.request.questions, &said).unwrap();
        let mut done = r.clone();
        done.status = Status::Answered;
        done.result = Some(AskResult::answered("q-1", &done.request, answers, 2));
        done.answered_by = Some("slack:U0ALICE".into());
        let m = answered(&done);
        assert_eq!(blocks(&m)[1]["text"]["text"], "Run this command in /home/me/app?\n→ Denied: use cargo clean");
        assert_eq!(m["text"], "Answered in Slack: Denied: use cargo clean");
        // A long diff is cut to the section's limit and still closes its block.
        let old: String = (0..400).map(|n| format!("old line {n}\n")).collect();
        let e = Approval::from_claude(&json!({"tool_name": "Edit", "input": {"file_path": "a.rs", "old_string": old, "new_string": "x"}}))
            .unwrap();
        let mut r = record(vec![]);
        r.request = e.request(&e.suggest(None), &Limits::default()).unwrap();
        let m = message(&r, None);
        let diff = blocks(&m)[2]["text"]["text"].as_str().unwrap();
        assert_eq!(diff.chars().count(), MAX_SECTION);
        assert!(diff.starts_with("```\n- old line 0\n") && diff.ends_with("…\n```"), "{diff}");
    }

    #[test]
    fn every_message_keeps_slacks_limits() {
        let labels: Vec<String> = (0..40).map(|i| format!("{i} {}", "long label ".repeat(10))).collect();
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        let code_heavy = Question { question: "a\n```\nx\n```\nb\n```\ny\n```\nc".into(), ..single(&refs[..3]) };
        let sets = [
            vec![single(&refs[..25])],
            vec![single(&refs[..26])],
            vec![multi(&refs[..10]), multi(&refs[..11]), single(&refs[..10]), single(&refs[..11])],
            (0..10).map(|_| code_heavy.clone()).collect(),
            (0..30).map(|_| single(&refs[..2])).collect(),
            (0..60).map(|_| single(&refs[..2])).collect(),
        ];
        for questions in sets {
            let n = questions.len();
            let r = record(questions);
            for m in [message(&r, Some("https://h/#q=q-1")), answered(&r)] {
                let b = blocks(&m);
                assert!(b.len() <= MAX_BLOCKS, "{n} questions: {} blocks", b.len());
                let mut ids = std::collections::HashSet::new();
                for block in b {
                    if let Some(id) = block["block_id"].as_str() {
                        assert!(id.chars().count() <= MAX_ID && ids.insert(id.to_owned()), "{id}");
                    }
                    let elements: Vec<&Value> = block["elements"].as_array().map(|e| e.iter().collect()).unwrap_or_default();
                    if block["type"] == "actions" {
                        assert!((1..=MAX_BUTTONS).contains(&elements.len()));
                        let mut actions = std::collections::HashSet::new();
                        for e in &elements {
                            let id = e["action_id"].as_str().unwrap();
                            assert!(id.len() <= MAX_ID && actions.insert(id));
                            let count = |key: &str| e[key].as_array().map_or(0, Vec::len);
                            match e["type"].as_str().unwrap() {
                                "button" => {
                                    assert!(e["text"]["text"].as_str().unwrap().chars().count() <= MAX_BUTTON_TEXT);
                                    assert!(e["value"].as_str().unwrap().len() <= MAX_BUTTON_VALUE);
                                }
                                "checkboxes" | "radio_buttons" => assert!((1..=MAX_CHECKBOXES).contains(&count("options"))),
                                "static_select" | "multi_static_select" => assert!((1..=MAX_MENU).contains(&count("options"))),
                                other => panic!("element {other}"),
                            }
                            for o in e["options"].as_array().into_iter().flatten() {
                                assert!(o["text"]["text"].as_str().unwrap().chars().count() <= MAX_OPTION_TEXT);
                                assert!(o["value"].as_str().unwrap().len() <= MAX_OPTION_VALUE);
                            }
                        }
                    }
                    match block["type"].as_str().unwrap() {
                        "header" => assert!(block["text"]["text"].as_str().unwrap().chars().count() <= MAX_HEADER),
                        "section" => assert!(block["text"]["text"].as_str().unwrap().chars().count() <= MAX_SECTION),
                        "input" => assert!(block["label"]["text"].as_str().unwrap().chars().count() <= MAX_INPUT_LABEL),
                        "actions" | "context" => {}
                        other => panic!("block {other}"),
                    }
                }
            }
            let m = message(&r, None);
            let submit = blocks(&m).last().unwrap()["elements"][0]["action_id"] == "submit";
            let inputs = blocks(&m).iter().filter(|b| b["type"] == "input").count();
            // Every question can be answered here, or none is offered and Submit is gone.
            assert!((submit && inputs == n) || (!submit && inputs == 0), "{n} questions: submit {submit}, {inputs} inputs");
            assert_eq!(submit, n <= 10, "{n} questions: 30 radio groups do not fit in 50 blocks");
        }
    }

    #[test]
    fn the_closed_message_says_how_it_ended_and_has_no_controls() {
        let r = record(vec![single(&["PostgreSQL", "SQLite"]), multi(&["Auth", "API"])]);
        let answers = resolve(
            &r.request.questions,
            &[Selection::option("SQLite"), Selection { selected: vec!["API".into(), "Auth".into()], ..Selection::default() }],
        )
        .unwrap();
        let close = |status: Status, by: Option<&str>, chat: bool| {
            let mut done = r.clone();
            done.status = status;
            done.answered_by = by.map(str::to_owned);
            done.result = Some(match status {
                Status::Answered => AskResult::answered("q-1", &done.request, answers.clone(), 2),
                _ if chat => AskResult::chat("q-1", &done.request, 2),
                s => AskResult::unanswered("q-1", &done.request, s, 2),
            });
            let m = answered(&done);
            assert!(blocks(&m).iter().all(|b| b["type"] != "actions" && b["type"] != "input"), "{m:#}");
            let ended = blocks(&m).last().unwrap()["elements"][0]["text"].as_str().unwrap().to_owned();
            (ended, m["text"].as_str().unwrap().to_owned(), m)
        };
        let (ended, text, m) = close(Status::Answered, Some("slack:U0ALICE"), false);
        assert_eq!(ended, "Answered by <@U0ALICE>");
        assert_eq!(text, "Answered in Slack: SQLite; Auth, API");
        assert_eq!(blocks(&m)[1]["text"]["text"], "1. DB: Which database?\n→ SQLite");
        assert_eq!(blocks(&m)[2]["text"]["text"], "2. DB: Which features?\n→ Auth, API");
        assert_eq!(close(Status::Answered, Some("c-7"), false).0, "Answered in askuser");
        assert_eq!(close(Status::Cancelled, Some("slack:U0BOB"), false).0, "Declined by <@U0BOB>");
        assert_eq!(close(Status::Cancelled, Some("slack:U0BOB"), true).0, "Declined by <@U0BOB>: they would rather talk it over");
        let (ended, text, _) = close(Status::Withdrawn, None, false);
        assert_eq!((ended.as_str(), text.as_str()), ("Withdrawn by the agent", "Withdrawn by the agent"));
        assert_eq!(close(Status::TimedOut, None, false).0, "Expired");
        assert_eq!(blocks(&answered(&r)).last().unwrap()["elements"][0]["text"], "Not answered yet");
    }

    #[test]
    fn interactions_are_read_from_a_form_or_a_socket_mode_envelope() {
        let payload = json!({
            "type": "block_actions", "user": {"id": "U0ALICE", "username": "alice", "name": "alice", "team_id": "T1"},
            "api_app_id": "A1", "team": {"id": "T1", "domain": "x"}, "channel": {"id": "C1", "name": "general"},
            "container": {"type": "message", "message_ts": "1700000000.000100", "channel_id": "C1", "is_ephemeral": false},
            "message": {"ts": "1700000000.000100", "blocks": [{"type": "future_block", "whatever": [1, 2]}]},
            "actions": [
                {"type": "button", "action_id": "o1", "block_id": "q-1/q0", "value": "1", "action_ts": "1700000001.1"},
                {"type": "some_future_element", "action_id": "z", "block_id": "b", "value": {"nested": true}, "selected_option": 5},
            ],
            "state": {"values": {"q-1/t0": {"text": {"type": "plain_text_input", "value": "a+b & c"}},
                                 "w": {"d": {"type": "datepicker", "selected_date": "2027-01-31"}}}},
            "response_url": "https://hooks.slack.com/actions/T1/1/x", "trigger_id": "1.2.3",
        });
        // As Slack POSTs it: the JSON %-encoded in a form field (spaces as +).
        let encoded: String = payload
            .to_string()
            .bytes()
            .map(|b| match b {
                b' ' => "+".to_owned(),
                b if b.is_ascii_alphanumeric() => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect();
        let body = format!("token=ignored&payload={encoded}&other=1");
        let i = Interaction::from_form(body.as_bytes()).unwrap();
        assert_eq!(i.kind, "block_actions");
        assert_eq!((i.user.id.as_str(), i.user.username.as_deref()), ("U0ALICE", Some("alice")));
        assert_eq!((i.message_ts(), i.channel_id()), (Some("1700000000.000100"), Some("C1")));
        assert_eq!(i.answered_by().as_deref(), Some("slack:U0ALICE"));
        assert_eq!(i.team.as_ref().unwrap().id, "T1");
        assert_eq!(i.actions.len(), 2);
        assert_eq!((i.actions[0].action_id.as_str(), i.actions[0].kind.as_str()), ("o1", "button"));
        assert_eq!(
            (i.actions[1].kind.as_str(), i.actions[1].value.as_deref(), i.actions[1].selected.as_deref()),
            ("some_future_element", None, None)
        );
        assert_eq!(i.state.values["q-1/t0"]["text"].value.as_deref(), Some("a+b & c"));
        assert_eq!(i.response_url.as_deref(), Some("https://hooks.slack.com/actions/T1/1/x"));
        assert_eq!(selections(&i, &record(vec![single(&["A", "B"])])).unwrap(), Some(Outcome::Answer(vec![Selection::option("B")])));
        // What is not Slack's form is named.
        assert!(Interaction::from_form(b"token=x").unwrap_err().contains("payload field"));
        assert!(Interaction::from_form(b"payload=%ZZ").unwrap_err().contains("%-escape"));
        assert!(Interaction::from_form(b"payload=%FF").unwrap_err().contains("UTF-8"));
        assert!(Interaction::from_form(b"payload=%7Bnope").unwrap_err().starts_with("the interaction payload: expected Slack's JSON"));
        // Socket Mode: the same payload in an envelope, acknowledged by its id.
        let frame = json!({"envelope_id": "e-1", "type": "interactive", "payload": payload, "accepts_response_payload": false}).to_string();
        let envelope = Envelope::parse(&frame).unwrap();
        assert_eq!(envelope.interaction().unwrap().unwrap(), i);
        assert_eq!(envelope.ack().as_deref(), Some(r#"{"envelope_id":"e-1"}"#));
        let hello = Envelope::parse(r#"{"type": "hello", "num_connections": 1, "debug_info": {"host": "x"}}"#).unwrap();
        assert_eq!((hello.interaction(), hello.ack()), (Ok(None), None));
        let events = Envelope::parse(r#"{"envelope_id": "e-2", "type": "events_api", "payload": {"event": {}}}"#).unwrap();
        assert_eq!((events.interaction(), events.ack().is_some()), (Ok(None), true));
        assert!(Envelope::parse("{").unwrap_err().starts_with("a Socket Mode frame"));
        assert!(Envelope::parse(r#"{"envelope_id": "e", "type": "interactive", "payload": {"user": {}}}"#).unwrap().interaction().is_err());
    }

    #[test]
    fn a_message_round_trips_through_its_own_ids() {
        // Every control the message offers maps back to its question and option.
        let r = record(vec![single(&["A", "B", "C"]), multi(&["x", "y", "z"])]);
        let m = message(&r, None);
        let mut state = serde_json::Map::new();
        for (i, q) in r.request.questions.iter().enumerate() {
            let b = block(&m, &format!("q-1/q{i}"));
            let element = &b["elements"][0];
            let last = element["options"].as_array().unwrap().last().unwrap().clone();
            let action = element["action_id"].as_str().unwrap();
            let value = match q.multi_select {
                true => json!({"type": element["type"], "selected_options": [last]}),
                false => json!({"type": element["type"], "selected_option": last}),
            };
            state.insert(b["block_id"].as_str().unwrap().to_owned(), json!({ action: value }));
        }
        let submit = block(&m, "q-1/end")["elements"][0].clone();
        let got = selections(&acted("q-1/end", submit, Value::Object(state)), &r).unwrap();
        assert_eq!(got, Some(Outcome::Answer(vec![Selection::option("C"), Selection::option("z")])));
        let alone = record(vec![single(&["A", "B", "C"])]);
        let m = message(&alone, None);
        for (j, button) in block(&m, "q-1/q0")["elements"].as_array().unwrap().iter().enumerate() {
            let got = selections(&acted("q-1/q0", button.clone(), json!({})), &alone).unwrap();
            assert_eq!(got, Some(Outcome::Answer(vec![Selection::option(["A", "B", "C"][j])])));
        }
    }
}
