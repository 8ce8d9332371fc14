//! Email as a channel that answers: a pending question set as one mail ([`mail`]: plain
//! text and an HTML part made only of escaped text), and a person's reply read back
//! ([`Reply::read`]: who sent it, which mail it answers, the words above the quote) into
//! selections ([`replied`]). Pure: no IO; `mailbox.rs` sends over SMTP and reads over IMAP.
//!
//! # Matching a reply to its set
//! Each mail has a token of its own (96 random bits, [`token`]): its `Message-ID` is
//! `<askuser.TOKEN@DOMAIN>` and its `Reply-To` is the bridge's address with `+q-TOKEN`
//! after the local part (`bridge+q-TOKEN@example.com`, plus-addressing). A reply is taken
//! only when the token in an address it was sent to is also in its `In-Reply-To` or
//! `References` (a mail client's reply carries both), and only from the address the set
//! was mailed to (its `From`: the store finds a mail by the place it went to, `email:ADDRESS`,
//! and its token). A `From` header is what the sender wrote: askuser checks no DKIM or SPF,
//! so anyone who learns a token (it is in the mail the person got) and can send mail could
//! answer as them; without the token no forged `From` answers anything.
//!
//! # Agent text
//! The plain part is agent text as written, controls (but line breaks) taken out; the HTML
//! part is the same text escaped (`&`, `<`, `>`, `"`, `'`) in `white-space: pre-wrap`
//! blocks, code in `<pre>`: no agent text is ever markup, and its only links are askuser's
//! own (the answer links, the page). Mail clients may still make links of what looks like
//! an address in the plain part, as they do in any mail.

use super::channel::{permission, Notice};
use askuser_core::approval::{ALLOW, DENY};
use askuser_core::protocol::QuestionRecord;
use askuser_core::Selection;

/// The token's random bytes (hex in addresses: 24 characters).
const TOKEN_BYTES: usize = 12;

/// A fresh token for one mail.
pub fn token() -> String {
    crate::files::random_hex(TOKEN_BYTES)
}

/// Whether `text` is a token as [`token`] makes them.
pub fn is_token(text: &str) -> bool {
    text.len() == TOKEN_BYTES * 2 && text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The `Message-ID` of the mail with `token`, from the bridge's `domain` (no brackets).
pub fn message_id(token: &str, domain: &str) -> String {
    format!("askuser.{token}@{domain}")
}

/// The reply address of the mail with `token`: `local+q-TOKEN@domain`.
pub fn reply_to(local: &str, domain: &str, token: &str) -> String {
    format!("{local}+q-{token}@{domain}")
}

/// One piece of a mail's body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    /// askuser's own words.
    Own(String),
    /// Agent text (prose).
    Agent(String),
    /// Agent code (a command, a diff): shown as written, in `<pre>`.
    Code(String),
    /// One of askuser's own links, with what it does.
    Link { label: String, url: String },
}

/// A mail to send: its subject, plain text and HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// `text` without control characters (line breaks and tabs kept) or characters that
/// reorder text.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !askuser_core::text::is_control_or_bidi(*c)).collect()
}

/// `text` on one line, at most `max` characters (with "…").
fn line(text: &str, max: usize) -> String {
    let one: String = clean(text).split_whitespace().collect::<Vec<_>>().join(" ");
    match one.chars().count() <= max {
        true => one,
        false => one.chars().take(max - 1).chain(['…']).collect(),
    }
}

/// HTML-escaped `text`: never markup (also the bridge's own pages, `http::links`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn render(blocks: &[Block]) -> (String, String) {
    let mut text = String::new();
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><div style=\"font-family:sans-serif;white-space:pre-wrap\">",
    );
    for block in blocks {
        match block {
            Block::Own(t) | Block::Agent(t) => {
                text.push_str(t);
                html.push_str(&escape(t));
            }
            Block::Code(code) => {
                text.push_str(&format!("\n{code}\n"));
                html.push_str(&format!(
                    "</div><pre style=\"white-space:pre-wrap\">{}</pre><div style=\"font-family:sans-serif;white-space:pre-wrap\">",
                    escape(code)
                ));
            }
            Block::Link { label, url } => {
                text.push_str(&format!("{label}: {url}"));
                html.push_str(&format!("<a href=\"{}\">{}</a>", escape(url), escape(label)));
            }
        }
    }
    html.push_str("</div></body></html>");
    (text, html)
}

/// What the person can do with a set of this kind, in askuser's words.
fn instructions(record: &QuestionRecord) -> String {
    let questions = &record.request.questions;
    let [q] = questions.as_slice() else {
        return format!("{} questions: answer them in askuser (the link below).", questions.len());
    };
    if is_approval(record) {
        return "Reply \"allow\" or \"deny\", or reply with what to do instead (that denies it and says so).".into();
    }
    match (q.options.is_empty(), q.multi_select) {
        (true, _) => "Reply with your answer.".into(),
        (false, true) => "Reply with the numbers of your choices (like 1,3), their names, or your own answer.".into(),
        (false, false) => "Reply with an option's number (like 2), its name, or your own answer.".into(),
    }
}

/// Whether `record` is an approval with Allow and Deny.
fn is_approval(record: &QuestionRecord) -> bool {
    let [q] = record.request.questions.as_slice() else { return false };
    permission(record).is_some() && [ALLOW, DENY].iter().all(|l| q.options.iter().any(|o| o.label == *l))
}

/// The mail for a pending set: who asks (the subject too), each question with its
/// options numbered (an approval: what it would do, whole), what to reply, the answer
/// links `notice` carries and the set in askuser (`open`).
pub fn mail(notice: &Notice, open: &str) -> Mail {
    let record = &notice.record;
    let headline = notice.headline().line(100, 60, line);
    let mut blocks = vec![];
    if let Some(reminder) = &notice.reminder {
        blocks.push(Block::Own(format!("{reminder}\n")));
    }
    blocks.push(Block::Own(format!("{headline}\n\n")));
    let questions = &record.request.questions;
    match permission(record).filter(|_| is_approval(record)) {
        Some(view) => {
            blocks.push(Block::Agent(clean(&view.title)));
            if let Some(code) = view.shown.as_text().filter(|c| !c.trim().is_empty()) {
                blocks.push(Block::Code(code.trim_end_matches('\n').to_owned()));
            }
            if let Some(reason) = &view.reason {
                blocks.push(Block::Own("\nWhy: ".into()));
                blocks.push(Block::Agent(clean(reason)));
            }
            blocks.push(Block::Own("\n".into()));
        }
        None => {
            for (i, q) in questions.iter().enumerate() {
                if questions.len() > 1 {
                    let chip = q.header.as_deref().map(|h| format!(" · {}", line(h, 60))).unwrap_or_default();
                    blocks.push(Block::Own(format!("Question {} of {}{chip}\n", i + 1, questions.len())));
                }
                blocks.push(Block::Agent(format!("{}\n", clean(q.question.trim()))));
                for (j, o) in q.options.iter().enumerate() {
                    blocks.push(Block::Own(format!("{}. ", j + 1)));
                    blocks.push(Block::Agent(line(&o.label, 200)));
                    if let Some(d) = o.description.as_deref().filter(|d| !d.trim().is_empty()) {
                        blocks.push(Block::Own(" — ".into()));
                        blocks.push(Block::Agent(line(d, 500)));
                    }
                    blocks.push(Block::Own("\n".into()));
                }
                blocks.push(Block::Own("\n".into()));
            }
        }
    }
    blocks.push(Block::Own(format!("\n{}\nYour reply is read from its first lines, above the quoted mail.\n", instructions(record))));
    if !notice.message.options.is_empty() {
        blocks.push(Block::Own("\nOr answer with one click (a page asks you to confirm):\n".into()));
        for o in &notice.message.options {
            blocks.push(Block::Link { label: line(&o.label, 100), url: o.link.clone() });
            blocks.push(Block::Own("\n".into()));
        }
    }
    blocks.push(Block::Own("\n".into()));
    blocks.push(Block::Link { label: "Open askuser".into(), url: open.to_owned() });
    blocks.push(Block::Own("\n".into()));
    let (text, html) = render(&blocks);
    let subject = if notice.reminder.is_some() { format!("Reminder: {headline}") } else { headline };
    Mail { subject, text, html }
}

/// The short mail that says why a reply was not taken (`why`, askuser's words), with
/// the set in askuser (`open`).
pub fn told(why: &str, open: &str) -> Mail {
    let blocks = [Block::Own(format!("{}\n\n", clean(why))), Block::Link { label: "Open askuser".into(), url: open.to_owned() }];
    let (text, html) = render(&blocks);
    Mail { subject: String::new(), text, html }
}

/// What askuser reads of a mail in its mailbox.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// Its `From` address, lower case.
    pub from: Option<String>,
    /// The tokens of the addresses it went to (`To`, `Cc`, `Delivered-To`) that are
    /// askuser's reply addresses.
    pub to_tokens: Vec<String>,
    /// The tokens of askuser's mails it replies to (`In-Reply-To`, `References`).
    pub ref_tokens: Vec<String>,
    /// Its own `Message-ID`, to reply to it.
    pub message_id: Option<String>,
    pub subject: Option<String>,
    /// Sent by a machine (`Auto-Submitted` other than `no`, a bounce's empty
    /// `Return-Path`): never answered, never told.
    pub automatic: bool,
    /// The words above the quoted mail and the signature.
    pub text: String,
}

impl Reply {
    /// Reads the mail `raw`, askuser's reply addresses being `local+q-TOKEN@domain`.
    pub fn read(raw: &[u8], local: &str, domain: &str) -> Option<Reply> {
        let mail = mail_parser::MessageParser::default().parse(raw)?;
        let lower = |s: &str| s.trim().to_lowercase();
        let prefix = format!("{}+q-", local.to_lowercase());
        let domain = domain.to_lowercase();
        let mut to_tokens = vec![];
        let addresses =
            [mail.to(), mail.cc()].into_iter().flatten().flat_map(|a| a.iter().filter_map(|a| a.address().map(lower)).collect::<Vec<_>>());
        let delivered: Vec<String> =
            mail.header_values("Delivered-To").filter_map(|v| v.as_text().map(|t| lower(t.trim_matches(['<', '>'])))).collect();
        for address in addresses.chain(delivered) {
            let Some((local_part, at)) = address.rsplit_once('@') else { continue };
            if at == domain {
                if let Some(token) = local_part.strip_prefix(&prefix).filter(|t| is_token(t)) {
                    if !to_tokens.iter().any(|t| t == token) {
                        to_tokens.push(token.to_owned());
                    }
                }
            }
        }
        let mut ref_tokens = vec![];
        for value in [mail.in_reply_to(), mail.references()] {
            let ids: Vec<String> = match (value.as_text(), value.as_text_list()) {
                (Some(one), _) => vec![one.to_owned()],
                (_, Some(list)) => list.iter().map(|s| s.to_string()).collect(),
                _ => vec![],
            };
            for id in ids {
                let id = lower(id.trim_matches(['<', '>']));
                if let Some(token) =
                    id.strip_prefix("askuser.").and_then(|rest| rest.strip_suffix(&format!("@{domain}"))).filter(|t| is_token(t))
                {
                    if !ref_tokens.iter().any(|t| t == token) {
                        ref_tokens.push(token.to_owned());
                    }
                }
            }
        }
        let auto_submitted = mail.header("Auto-Submitted").and_then(|v| v.as_text()).map(lower);
        let bounce = mail.return_path().as_text().is_some_and(|p| p.trim_matches(['<', '>', ' ']).is_empty());
        let body = mail.body_text(0).map(|b| b.into_owned()).unwrap_or_default();
        Some(Reply {
            from: mail.from().and_then(|a| a.first()).and_then(|a| a.address()).map(lower),
            to_tokens,
            ref_tokens,
            message_id: mail.message_id().map(str::to_owned),
            subject: mail.subject().map(str::to_owned),
            automatic: auto_submitted.is_some_and(|a| a != "no") || bounce,
            text: fresh(&body),
        })
    }

    /// The token of the mail it answers: one in an address it went to that its
    /// `In-Reply-To` or `References` also names.
    pub fn token(&self) -> Option<&str> {
        self.to_tokens.iter().find(|t| self.ref_tokens.contains(t)).map(String::as_str)
    }
}

/// The words of a reply above what it quotes: up to the first quoted line (`>`), a
/// mail client's "On … wrote:" line, an "-----Original Message-----" or Outlook's
/// `From:` block, or a signature (`-- `), trimmed.
pub fn fresh(body: &str) -> String {
    let mut kept: Vec<&str> = vec![];
    let lines: Vec<&str> = body.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        let l = raw.trim_end();
        let t = l.trim();
        let next = lines.get(i + 1).map(|n| n.trim()).unwrap_or_default();
        let wrote = |s: &str| s.ends_with("wrote:") || s.ends_with("schrieb:") || s.ends_with("a écrit :") || s.ends_with("escribió:");
        if t.starts_with('>')
            || l == "--"
            || l == "-- "
            || t.starts_with("-----Original Message-----")
            || t.starts_with("________________________________")
            || (t.starts_with("On ") && (wrote(t) || wrote(&format!("{t} {next}"))))
            || (t.starts_with("From:") && kept.iter().any(|k| k.trim().is_empty()) && next.starts_with("Sent:"))
        {
            break;
        }
        kept.push(l);
    }
    kept.join("\n").trim().to_owned()
}

/// What a reply with `text` to `record`'s mail answers: an approval "allow" or "deny"
/// (askuser's mail shows it whole), else words that deny it and say what to do instead;
/// any other set as every chat reads a reply ([`super::command::reply`]: numbers, an
/// option's name, words). An error says what to do instead (askuser's words).
pub fn replied(record: &QuestionRecord, text: &str, open: &str) -> Result<Vec<Selection>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("Your reply had no words above the quoted mail: reply with an option's number or your answer.".into());
    }
    if !is_approval(record) {
        // Not an approval: every option may be chosen by mail.
        return super::command::reply(record, text, Some(open), |_, _| Ok(()), str::to_owned);
    }
    let q = &record.request.questions[0];
    let chosen = q.find_option(text).map(|j| q.options[j].label.as_str());
    let selection = match chosen {
        Some(label) if label == ALLOW || label == DENY => Selection::option(label),
        Some(_) => return Err("Allow or deny here; Always allow is in askuser, which names the rule it keeps.".into()),
        None => Selection::custom(text),
    };
    let selections = vec![selection];
    askuser_core::resolve(&record.request.questions, &selections).map_err(|e| e.to_string())?;
    Ok(selections)
}

#[cfg(test)]
mod tests;
