//! WhatsApp (the Cloud API) as a channel that answers: a pending question set as an
//! interactive message ([`message`]: reply buttons for up to 3 options, a list for up to
//! 10, numbered text beyond, Allow and Deny for an approval shown whole), what its
//! webhook posts ([`Inbound`]) checked by its signature ([`verify`]) and its subscription
//! handshake ([`challenge`]), what a press, a list row or a reply chose ([`pressed`],
//! [`replied`]), and the 24-hour rule ([`in_window`]). Pure: no IO, no clock;
//! `whatsapp_app.rs` sends and receives.
//!
//! # Limits
//! WhatsApp refuses a message over its limits rather than cutting it: an interactive
//! message's body is at most [`MAX_BODY`] characters, a reply button's title
//! [`MAX_BUTTON`], a list row's title [`MAX_ROW`] and its description
//! [`MAX_DESCRIPTION`], a text message [`MAX_TEXT`]. A title cut to fit ends with "…" and
//! the option's whole label is in the body (and a row's description). An approval offers
//! Allow only when its title, its command or diff whole and what to do fit the body;
//! else it says so, offers Deny and links to the page.
//!
//! # Agent text
//! WhatsApp has no parse mode: `*bold*`, `_italic_`, `~strike~` and ```` ``` ```` are
//! always read. A command or diff goes in a ```` ``` ```` block, inside which WhatsApp
//! formats nothing, so it shows as written; one that holds ```` ``` ```` itself could end
//! the block early, so it is not shown as whole (no Allow). Control characters are
//! spaces and the characters that reorder text are dropped ([`clean`]).
//!
//! # Mapping a press or a reply back
//! As for Telegram: the bridge keeps the id of each message it sent (`wamid.…`), which a
//! reply's `context` names; a button's or row's id is `MARK:ACTION` (the set's mark,
//! [`super::telegram::mark`], and `o{j}` or `no`), checked against the set found.

use super::channel::{permission, Outcome};
use super::telegram::mark;
use askuser_core::approval::{ALLOW, DENY};
use askuser_core::protocol::QuestionRecord;
use askuser_core::text::summary;
use askuser_core::{resolve, Selection};
use serde::Deserialize;
use serde_json::{json, Value};

/// An interactive message's body, in characters.
pub const MAX_BODY: usize = 1024;
/// A text message's body.
pub const MAX_TEXT: usize = 4096;
/// A reply button's title.
pub const MAX_BUTTON: usize = 20;
/// A list row's title.
pub const MAX_ROW: usize = 24;
/// A list row's description.
pub const MAX_DESCRIPTION: usize = 72;
/// Reply buttons in one message.
pub const MAX_BUTTONS: usize = 3;
/// Rows in one list.
pub const MAX_ROWS: usize = 10;
/// How long after a person last wrote a business may send them free-form messages.
pub const WINDOW_MS: u64 = 24 * 3600 * 1000;
/// The window is taken as closed this long before it does (a message on its way).
const WINDOW_MARGIN_MS: u64 = 5 * 60 * 1000;
/// Room kept for "Open askuser: LINK" when measuring whether an approval fits whole.
const OPEN_LINE: usize = 200;

/// Whether a person who last wrote at `heard_ms` (never: none) may be sent a free-form
/// message at `now_ms`.
pub fn in_window(heard_ms: Option<u64>, now_ms: u64) -> bool {
    heard_ms.is_some_and(|at| now_ms < at.saturating_add(WINDOW_MS - WINDOW_MARGIN_MS))
}

/// Agent text made safe to show: `\r` dropped, control characters but `\n` as spaces,
/// the characters that reorder text dropped.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter(|&c| c != '\r' && !matches!(c, '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect()
}

/// `text` in at most `max` characters, ending with "…" when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max.saturating_sub(1)).chain(['…']).collect()
}

/// What a message offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An approval: Allow (option `allow`) and Deny (option `deny`).
    Approval { allow: usize, deny: usize },
    /// One question with one answer and up to [`MAX_BUTTONS`] options: buttons.
    Buttons,
    /// One with one answer and up to [`MAX_ROWS`]: a list.
    List,
    /// One with one answer and more options, or several answers: numbered text.
    Numbered,
    /// One answered in words.
    Words,
    /// Several questions: answered in askuser.
    Several,
}

fn kind(record: &QuestionRecord) -> Kind {
    let [q] = record.request.questions.as_slice() else { return Kind::Several };
    if permission(record).is_some() {
        let at = |label: &str| q.options.iter().position(|o| o.label == label);
        if let (Some(allow), Some(deny)) = (at(ALLOW), at(DENY)) {
            return Kind::Approval { allow, deny };
        }
    }
    match q.options.len() {
        0 => Kind::Words,
        _ if q.multi_select => Kind::Numbered,
        n if n <= MAX_BUTTONS => Kind::Buttons,
        n if n <= MAX_ROWS => Kind::List,
        _ => Kind::Numbered,
    }
}

/// A message as `/{phone-number-id}/messages` takes it (without the recipient).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// Reply buttons: (id, title).
    Buttons { body: String, buttons: Vec<(String, String)> },
    /// A list behind a button: rows of (id, title, description).
    List { body: String, button: String, rows: Vec<(String, String, Option<String>)> },
    /// Plain text.
    Text { body: String },
}

impl Outgoing {
    /// The request's JSON, to `to` (a phone number).
    pub fn payload(&self, to: &str) -> Value {
        let mut payload = json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to});
        match self {
            Outgoing::Buttons { body, buttons } => {
                let buttons: Vec<Value> =
                    buttons.iter().map(|(id, title)| json!({"type": "reply", "reply": {"id": id, "title": title}})).collect();
                payload["type"] = "interactive".into();
                payload["interactive"] = json!({"type": "button", "body": {"text": body}, "action": {"buttons": buttons}});
            }
            Outgoing::List { body, button, rows } => {
                let rows: Vec<Value> = rows
                    .iter()
                    .map(|(id, title, description)| {
                        let mut row = json!({"id": id, "title": title});
                        if let Some(d) = description {
                            row["description"] = d.as_str().into();
                        }
                        row
                    })
                    .collect();
                payload["type"] = "interactive".into();
                payload["interactive"] = json!({"type": "list", "body": {"text": body},
                    "action": {"button": button, "sections": [{"title": "Options", "rows": rows}]}});
            }
            Outgoing::Text { body } => {
                payload["type"] = "text".into();
                payload["text"] = json!({"body": body, "preview_url": false});
            }
        }
        payload
    }
}

/// `head`, `body` and `tail` in at most `max` characters: `body` cut with "…" so `head`
/// and `tail` stay whole. `true` when `body` was cut.
fn compose(head: &str, body: &str, tail: &str, max: usize) -> (String, bool) {
    let fixed = head.chars().count() + tail.chars().count();
    let room = max.saturating_sub(fixed);
    let cut_body = cut(body, room);
    let was_cut = cut_body != body;
    (format!("{head}{cut_body}{tail}"), was_cut)
}

/// The first line: who asks, the chip, the short id.
fn headline(record: &QuestionRecord) -> String {
    super::Headline::of(record).line(60, 40, |text, max| cut(clean(text).trim(), max)) + "\n\n"
}

/// An approval's body: what it asks, its command or diff in a block, why. `None` for the
/// block when it cannot be shown as written (it holds ```` ``` ````).
fn approval_body(record: &QuestionRecord) -> (String, bool) {
    let Some(view) = permission(record) else { return (String::new(), false) };
    let mut body = clean(&view.title);
    let mut safe = true;
    if let Some(code) = view.shown.as_text().filter(|c| !c.trim().is_empty()) {
        let code = clean(code.trim_end_matches('\n'));
        safe = !code.contains("```");
        body.push_str(&format!("\n```\n{code}\n```"));
    }
    if let Some(reason) = &view.reason {
        body.push_str(&format!("\nWhy: {}", clean(reason)));
    }
    (body, safe)
}

/// What the person can do.
fn instructions(kind: Kind, n: usize, whole: bool, other: usize) -> String {
    match kind {
        Kind::Approval { .. } if !whole => {
            "Too long to show here whole: open askuser to see all of it and allow it. Deny it here, or reply with what to do instead."
                .into()
        }
        Kind::Approval { .. } => "Allow or Deny it, or reply with what to do instead.".into(),
        Kind::Buttons => "Press an option, or reply with its number or your own answer.".into(),
        Kind::List => "Choose an option from the list, or reply with its number or your own answer.".into(),
        Kind::Numbered => format!("Reply with the number of your choice, or with your own answer in words ({other}. Other)."),
        Kind::Words => "Reply with your answer.".into(),
        Kind::Several => format!(
            "{n} questions: reply with a line for each, its number, a colon and your answer (an option's number, several like 1,3 where it takes several, or words), like\n1: 2\n2: 1,3\nor answer them in askuser."
        ),
    }
}

/// Whether an approval's message shows what it would do whole (not an approval: `true`).
pub fn whole(record: &QuestionRecord) -> bool {
    let Kind::Approval { .. } = kind(record) else { return true };
    let (body, safe) = approval_body(record);
    let tail = format!("\n\n{}", instructions(kind(record), 1, true, 0));
    let size = headline(record).chars().count() + body.chars().count() + tail.chars().count() + OPEN_LINE;
    safe && size <= MAX_BODY
}

/// Option `j`'s line: its number, its whole label and its description.
fn option_line(j: usize, label: &str, description: Option<&str>, description_max: usize) -> String {
    let mut line = format!("\n{}. {}", j + 1, clean(label.trim()));
    if let Some(d) = description.filter(|d| !d.trim().is_empty()).filter(|_| description_max > 0) {
        line.push_str(&format!(" — {}", cut(&clean(&summary(d)), description_max)));
    }
    line
}

/// The message for a pending set, `open` linking it in askuser.
pub fn message(record: &QuestionRecord, open: &str) -> Outgoing {
    reminder(record, open, None)
}

/// [`message`], with a reminder's `line` (`Reminder: still waiting since …`) first.
pub fn reminder(record: &QuestionRecord, open: &str, line: Option<&str>) -> Outgoing {
    let questions = &record.request.questions;
    let kind = kind(record);
    let mark = mark(&record.id);
    let head = match line {
        Some(line) => format!("{}\n{}", cut(&clean(line), 100), headline(record)),
        None => headline(record),
    };
    let open_line = format!("\n\nOpen askuser: {open}");
    let button = |title: &str, action: &str| (format!("{mark}:{action}"), cut(&clean(title.trim()), MAX_BUTTON));
    match (kind, questions.first()) {
        (Kind::Approval { allow, deny }, _) => {
            let (body, _) = approval_body(record);
            let compose_with = |whole: bool| {
                let tail = format!("\n\n{}{open_line}", instructions(kind, 1, whole, 0));
                compose(&head, &body, &tail, MAX_BODY)
            };
            let (text, was_cut) = compose_with(true);
            if whole(record) && !was_cut {
                return Outgoing::Buttons {
                    body: text,
                    buttons: vec![button(ALLOW, &format!("o{allow}")), button(DENY, &format!("o{deny}"))],
                };
            }
            // Shown in part: no Allow, as the person would allow what they did not see.
            let (text, _) = compose_with(false);
            Outgoing::Buttons { body: text, buttons: vec![button(DENY, &format!("o{deny}"))] }
        }
        (Kind::Several, _) => {
            let list: String = questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let chip = q.header.as_deref().filter(|h| !h.trim().is_empty()).map(|h| format!("{}: ", cut(&clean(h), 40)));
                    // Its options inline, numbered: "(1) PostgreSQL (2) SQLite".
                    let options: String =
                        q.options.iter().enumerate().map(|(j, o)| format!(" ({}) {}", j + 1, cut(&clean(o.label.trim()), 60))).collect();
                    let many = if q.multi_select { " [several]" } else { "" };
                    format!(
                        "{}{}. {}{}{}{many}",
                        if i == 0 { "" } else { "\n" },
                        i + 1,
                        chip.unwrap_or_default(),
                        cut(&clean(&summary(&q.question)), 300),
                        if options.is_empty() { String::new() } else { format!("\n  {}", options.trim_start()) },
                    )
                })
                .collect();
            let tail = format!("\n\n{}{open_line}", instructions(kind, questions.len(), true, 0));
            Outgoing::Text { body: compose(&head, &list, &tail, MAX_TEXT).0 }
        }
        (_, Some(q)) => {
            let question = clean(q.question.trim());
            let other = q.options.len() + 1;
            let what = format!("\n\n{}{open_line}", instructions(kind, 1, true, other));
            match kind {
                Kind::Buttons | Kind::List => {
                    // The whole labels in the body, with descriptions while they fit.
                    let lines = |description_max: usize| -> String {
                        q.options
                            .iter()
                            .enumerate()
                            .map(|(j, o)| option_line(j, &o.label, o.description.as_deref(), description_max))
                            .collect()
                    };
                    let options = [120, 40, 0].into_iter().map(lines).find(|l| l.chars().count() + what.chars().count() + 200 <= MAX_BODY);
                    let options = options.unwrap_or_else(|| lines(0));
                    let tail = format!("\n{options}{what}");
                    let (body, _) = compose(&head, &question, &tail, MAX_BODY);
                    if kind == Kind::Buttons {
                        let buttons = q.options.iter().enumerate().map(|(j, o)| button(&o.label, &format!("o{j}"))).collect();
                        return Outgoing::Buttons { body, buttons };
                    }
                    let rows = q
                        .options
                        .iter()
                        .enumerate()
                        .map(|(j, o)| {
                            let label = clean(o.label.trim());
                            let title = cut(&format!("{}. {label}", j + 1), MAX_ROW);
                            // A label cut in its title is whole (as far as it fits) below it.
                            let description = match title.ends_with('…') {
                                true => Some(label),
                                false => o.description.as_deref().map(|d| clean(&summary(d))),
                            };
                            let description = description.filter(|d| !d.trim().is_empty()).map(|d| cut(&d, MAX_DESCRIPTION));
                            (format!("{mark}:o{j}"), title, description)
                        })
                        .collect();
                    Outgoing::List { body, button: "Choose".into(), rows }
                }
                Kind::Numbered => {
                    let mut options: String =
                        q.options.iter().enumerate().map(|(j, o)| option_line(j, &o.label, o.description.as_deref(), 100)).collect();
                    if options.chars().count() > MAX_TEXT / 2 {
                        options = q.options.iter().enumerate().map(|(j, o)| option_line(j, &cut(&o.label, 60), None, 0)).collect();
                    }
                    let many = if q.multi_select { "\n(Several may be chosen: reply with their numbers, like 1,3.)" } else { "" };
                    let tail = format!("\n{options}\n{other}. Other{many}{what}");
                    Outgoing::Text { body: compose(&head, &question, &tail, MAX_TEXT).0 }
                }
                _ => Outgoing::Text { body: compose(&head, &question, &what, MAX_TEXT).0 },
            }
        }
        (_, None) => Outgoing::Text { body: head },
    }
}

/// What became of a set, as a message of its own (WhatsApp edits none): each question
/// and its answer, and how it ended.
pub fn closed(record: &QuestionRecord) -> String {
    let said = super::channel::said(record);
    let view = permission(record);
    let mut body = String::new();
    for (i, q) in record.request.questions.iter().enumerate() {
        let asked = match (i, &view) {
            (0, Some(view)) => view.title.clone(),
            _ => summary(&q.question),
        };
        body.push_str(&format!("{}{}", if i == 0 { "" } else { "\n" }, cut(&clean(&asked), 200)));
        if let Some(said) = said.get(i) {
            body.push_str(&format!("\n→ {}", cut(&clean(said), 200)));
        }
    }
    let by = match record.answered_by.as_deref() {
        Some(by) if by.starts_with("whatsapp:") => " here",
        Some(by) if by.starts_with("telegram:") => " in Telegram",
        Some(by) if by.starts_with("slack:") => " in Slack",
        Some(_) => " in askuser",
        None => "",
    };
    let end = match record.status {
        askuser_core::Status::Answered => format!("Answered{by}."),
        askuser_core::Status::Cancelled => format!("Declined{by}."),
        askuser_core::Status::Withdrawn => "Withdrawn by the agent.".into(),
        askuser_core::Status::TimedOut => "Expired.".into(),
        askuser_core::Status::Pending => "Not answered yet.".into(),
    };
    compose(&headline(record), &body, &format!("\n\n{end}"), MAX_TEXT).0
}

/// Whether option `label` may be chosen from WhatsApp: on an approval, Deny, and Allow only
/// when its message shows it whole ([`whole`]).
pub fn allowable(record: &QuestionRecord, label: &str) -> Result<(), String> {
    let approval = matches!(kind(record), Kind::Approval { .. });
    super::channel::allowable(approval, || whole(record), label)
}

/// What a reply button or list row with id `data` chose on `record`'s message.
pub fn pressed(record: &QuestionRecord, data: &str) -> Result<Outcome, String> {
    let Some((their_mark, action)) = data.split_once(':') else { return Err("That button is not one of askuser's.".into()) };
    if their_mark != mark(&record.id) {
        return Err("That button belongs to another question set's message.".into());
    }
    let j = action.strip_prefix('o').and_then(|j| j.parse::<usize>().ok());
    let (Some(j), [q]) = (j, record.request.questions.as_slice()) else {
        return Err("That button does not answer this question set; open it in askuser.".into());
    };
    let Some(choice) = q.options.get(j) else { return Err(format!("This question has no option {}.", j + 1)) };
    allowable(record, &choice.label)?;
    let selections = vec![Selection::option(choice.label.clone())];
    resolve(&record.request.questions, &selections).map_err(|e| e.to_string())?;
    Ok(Outcome::Answer(selections))
}

/// What a reply with `text` answers (as every chat reads one, [`super::command::reply`]: numbers,
/// an option's name, words), Allow only where [`allowable`]; the number after the last
/// option ("Other") asks for the words. `open` links the set in askuser.
pub fn replied(record: &QuestionRecord, text: &str, open: &str) -> Result<Vec<Selection>, String> {
    if kind(record) == Kind::Several {
        return several(record, text);
    }
    if let [q] = record.request.questions.as_slice() {
        if !q.options.is_empty() && text.trim() == (q.options.len() + 1).to_string() && permission(record).is_none() {
            return Err("Reply with your own answer in words.".into());
        }
    }
    super::command::reply(record, text, Some(open), allowable, str::to_owned)
}

/// A reply to a set of several questions: a line each, `N: answer` (`N.` and `N)` too),
/// each answer read as a reply to that question alone is; every question answered.
fn several(record: &QuestionRecord, text: &str) -> Result<Vec<Selection>, String> {
    let questions = &record.request.questions;
    let n = questions.len();
    let mut answers: Vec<Option<Selection>> = vec![None; n];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let how = || {
            format!("Reply with a line for each question: its number, a colon and your answer (like 1: 2). {:?} is not one.", cut(line, 40))
        };
        let (number, answer) = line.split_once([':', '.', ')']).ok_or_else(how)?;
        let i = number.trim().parse::<usize>().ok().filter(|i| (1..=n).contains(i)).ok_or_else(how)?;
        let mut one = record.clone();
        one.request.questions = vec![questions[i - 1].clone()];
        one.request.approval = None;
        let selection =
            super::command::reply(&one, answer.trim(), None, allowable, str::to_owned).map_err(|e| format!("Question {i}: {e}"))?;
        answers[i - 1] = selection.into_iter().next();
    }
    let missing: Vec<String> = answers.iter().enumerate().filter(|(_, a)| a.is_none()).map(|(i, _)| (i + 1).to_string()).collect();
    if !missing.is_empty() {
        return Err(format!("Answer every question, a line each (like 1: 2): {} has no answer yet.", missing.join(", ")));
    }
    let selections: Vec<Selection> = answers.into_iter().flatten().collect();
    resolve(questions, &selections).map_err(|e| e.to_string())?;
    Ok(selections)
}

/// Checks `X-Hub-Signature-256` (`sha256=HEX`): the HMAC-SHA256 of the raw `body` under
/// the app secret, compared in constant time.
pub fn verify(app_secret: &[u8], signature: &str, body: &[u8]) -> Result<(), String> {
    let tag = signature
        .strip_prefix("sha256=")
        .and_then(unhex)
        .filter(|t| t.len() == 32)
        .ok_or_else(|| format!("X-Hub-Signature-256: expected sha256= and 64 hex digits, got {:?}", cut(signature, 80)))?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, app_secret);
    ring::hmac::verify(&key, body, &tag).map_err(|_| "X-Hub-Signature-256 does not match the body under the app secret".to_owned())
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok())).collect()
}

/// The subscription handshake (`GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`):
/// the challenge to answer with when the token is ours (compared in constant time).
pub fn challenge(query: &str, verify_token: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(&format!("http://h/?{query}")).map_err(|_| "the query is not one".to_owned())?;
    let get = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    if get("hub.mode").as_deref() != Some("subscribe") {
        return Err("hub.mode: expected subscribe".into());
    }
    let given = get("hub.verify_token").unwrap_or_default();
    let ours = ring::digest::digest(&ring::digest::SHA256, verify_token.as_bytes());
    let theirs = ring::digest::digest(&ring::digest::SHA256, given.as_bytes());
    // Equal digests of equal length: compared whole, not up to the first difference.
    if ours.as_ref().iter().zip(theirs.as_ref()).fold(0u8, |d, (a, b)| d | (a ^ b)) != 0 {
        return Err("hub.verify_token is not this bridge's --whatsapp-verify-token".into());
    }
    get("hub.challenge").filter(|c| !c.is_empty() && c.len() <= 200).ok_or_else(|| "hub.challenge: expected a value".into())
}

/// What a person's message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    Text(String),
    /// A reply button pressed or a list row chosen: its id.
    Chose(String),
    /// A template's quick-reply button, a sticker, an image...: it opens the window, no more.
    Other,
}

/// One message a person sent to the business number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Their phone number (`wa_id`, digits).
    pub from: String,
    /// Their profile name, if given.
    pub name: Option<String>,
    /// The message it replies to (a press's message, or a swiped reply), if any.
    pub context: Option<String>,
    /// When they sent it (ms; Meta may deliver a call late, or it may be replayed).
    pub sent_ms: Option<u64>,
    pub said: Said,
}

/// What a webhook call carries that askuser acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inbound {
    pub messages: Vec<Message>,
    /// Messages that failed: (message id, recipient, error code).
    pub failed: Vec<(String, String, u64)>,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    entry: Vec<Entry>,
}
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    changes: Vec<Change>,
}
#[derive(Deserialize)]
struct Change {
    #[serde(default)]
    value: Value,
}

impl Inbound {
    /// Reads a webhook body for phone number `phone_number_id` (changes for any other are
    /// skipped; so is anything not as documented).
    pub fn parse(body: &[u8], phone_number_id: &str) -> Result<Inbound, String> {
        let envelope: Envelope = serde_json::from_slice(body).map_err(|e| format!("the body is not a webhook's JSON: {e}"))?;
        let mut inbound = Inbound::default();
        for value in envelope.entry.iter().flat_map(|e| &e.changes).map(|c| &c.value) {
            if value["metadata"]["phone_number_id"].as_str() != Some(phone_number_id) {
                continue;
            }
            let name_of = |wa_id: &str| {
                value["contacts"].as_array()?.iter().find(|c| c["wa_id"] == wa_id)?["profile"]["name"].as_str().map(str::to_owned)
            };
            for m in value["messages"].as_array().into_iter().flatten() {
                let Some(from) = m["from"].as_str() else { continue };
                let said = match (m["type"].as_str(), m["interactive"]["type"].as_str()) {
                    (Some("text"), _) => m["text"]["body"].as_str().map(|t| Said::Text(t.to_owned())),
                    (Some("interactive"), Some("button_reply")) => {
                        m["interactive"]["button_reply"]["id"].as_str().map(|i| Said::Chose(i.to_owned()))
                    }
                    (Some("interactive"), Some("list_reply")) => {
                        m["interactive"]["list_reply"]["id"].as_str().map(|i| Said::Chose(i.to_owned()))
                    }
                    _ => Some(Said::Other),
                };
                inbound.messages.push(Message {
                    from: from.to_owned(),
                    name: name_of(from),
                    context: m["context"]["id"].as_str().map(str::to_owned),
                    sent_ms: m["timestamp"].as_str().and_then(|t| t.parse::<u64>().ok()).map(|s| s.saturating_mul(1000)),
                    said: said.unwrap_or(Said::Other),
                });
            }
            for s in value["statuses"].as_array().into_iter().flatten() {
                if s["status"] != "failed" {
                    continue;
                }
                let (Some(id), Some(to)) = (s["id"].as_str(), s["recipient_id"].as_str()) else { continue };
                let code = s["errors"][0]["code"].as_u64().unwrap_or(0);
                inbound.failed.push((id.to_owned(), to.to_owned(), code));
            }
        }
        Ok(inbound)
    }
}

impl Message {
    /// Who answered, as a record's `answered_by` keeps it: `whatsapp:PHONE Name`.
    pub fn answered_by(&self) -> String {
        match self.name.as_deref().map(|n| cut(clean(n).trim(), 40)).filter(|n| !n.is_empty()) {
            Some(name) => format!("whatsapp:{} {name}", self.from),
            None => format!("whatsapp:{}", self.from),
        }
    }
}

#[cfg(test)]
mod tests;
