//! Commands a person types in a chat that takes text (Telegram, WhatsApp, Slack, Discord): `approve ID`,
//! `deny ID [what to do instead]`, `answer ID 2` or `answer ID words`, `ID` being the
//! short id every chat's message shows in its first line ([`short_id`], through
//! [`super::Headline`]). Read here once for every chat ([`parse`], [`outcome`]); pure.
//! The notifier finds the set and takes the answer ([`super::Notifier::command_from_chat`]),
//! only for a set that was sent to the chat the command came from.

use super::channel::{permission, Outcome};
use askuser_core::approval::{ALLOW, DENY};
use askuser_core::protocol::QuestionRecord;
use askuser_core::Selection;

/// Characters of a short id.
pub const SHORT_ID: usize = 6;

/// Set `id`'s short id: the first [`SHORT_ID`] hex digits of its SHA-256 (the same at
/// every bridge, typed as it is shown).
pub fn short_id(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>()[..SHORT_ID].to_owned()
}

/// What a command asks of the set with short id `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `approve ID`: Allow an approval.
    Approve { id: String },
    /// `deny ID [words]`: deny an approval (saying what to do instead), or decline a question set.
    Deny { id: String, words: Option<String> },
    /// `answer ID TEXT`: an option's number(s), its name or the answer in words.
    Answer { id: String, text: String },
}

impl Command {
    /// The short id it names.
    pub fn id(&self) -> &str {
        match self {
            Command::Approve { id } | Command::Deny { id, .. } | Command::Answer { id, .. } => id,
        }
    }
}

/// How the commands are written, for a reply to one that is not.
pub const USAGE: &str = "Commands: approve ID, deny ID (what to do instead), answer ID 2 (or answer ID your words); ID is the one in the question's first line.";

/// Whether `word` is written as a short id is (`#` before it allowed).
fn is_short_id(word: &str) -> bool {
    let word = word.strip_prefix('#').unwrap_or(word);
    word.len() == SHORT_ID && word.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads `text` as a command: `None` when its first word is none of `approve`, `deny` and
/// `answer` (any case, a leading `/` and a bot's `@name` allowed, as Telegram writes its
/// commands); an error, in askuser's words, when it is one but not as it should be.
/// `strict`: a first word that names a command but a second that is no short id is no
/// command (a reply "deny it, run the tests" answers the message it replies to).
pub fn parse(text: &str, strict: bool) -> Option<Result<Command, String>> {
    let text = text.trim();
    let (first, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let verb = first.strip_prefix('/').unwrap_or(first);
    let verb = verb.split_once('@').map_or(verb, |(v, _)| v).to_lowercase();
    if !matches!(verb.as_str(), "approve" | "deny" | "answer") {
        return None;
    }
    let rest = rest.trim_start();
    let (id, words) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let words = words.trim();
    if !is_short_id(id) {
        if strict {
            return None;
        }
        let got = if id.is_empty() { "nothing".to_owned() } else { format!("{:?}", id.chars().take(20).collect::<String>()) };
        return Some(Err(format!("{verb} needs the question's id ({SHORT_ID} letters and digits, in its first line), got {got}. {USAGE}")));
    }
    let id = id.trim_start_matches('#').to_lowercase();
    Some(match verb.as_str() {
        "approve" if words.is_empty() => Ok(Command::Approve { id }),
        "approve" => Err(format!("approve takes only the id; to deny with a message: deny {id} what to do instead")),
        "deny" => Ok(Command::Deny { id, words: (!words.is_empty()).then(|| words.to_owned()) }),
        _ if words.is_empty() => Err(format!("answer needs the answer after the id: answer {id} 2, or answer {id} your words")),
        _ => Ok(Command::Answer { id, text: words.to_owned() }),
    })
}

/// What `command` does to `record` in a chat where `allowable` says whether Allow may be
/// chosen there (an approval shown whole) and `reply` reads a reply's words as that chat
/// does: `approve` allows an approval (nothing else), `deny` denies one (with its words
/// as what to do instead) or declines a question set, `answer` is a reply. An error says
/// why not, in askuser's words.
pub fn outcome(
    record: &QuestionRecord,
    command: &Command,
    allowable: impl FnOnce(&QuestionRecord, &str) -> Result<(), String>,
    reply: impl FnOnce(&QuestionRecord, &str) -> Result<Vec<Selection>, String>,
) -> Result<Outcome, String> {
    let options = record.request.questions.first().map(|q| q.options.as_slice()).unwrap_or_default();
    let has = |label: &str| options.iter().any(|o| o.label == label);
    let approval = permission(record).is_some() && has(ALLOW) && has(DENY);
    let id = command.id();
    let answer = |selections: Vec<Selection>| {
        askuser_core::resolve(&record.request.questions, &selections).map_err(|e| e.to_string())?;
        Ok(Outcome::Answer(selections))
    };
    match command {
        Command::Approve { .. } if !approval => {
            Err(format!("{id} is a question, not an approval: answer {id} with a number or your words"))
        }
        Command::Approve { .. } => {
            allowable(record, ALLOW)?;
            answer(vec![Selection::option(ALLOW)])
        }
        Command::Deny { words: None, .. } if approval => answer(vec![Selection::option(DENY)]),
        Command::Deny { words: Some(words), .. } if approval => answer(vec![Selection::custom(words.clone())]),
        Command::Deny { .. } => Ok(Outcome::Decline),
        Command::Answer { text, .. } => answer(reply(record, text)?),
    }
}

/// The option numbers of a reply made only of numbers ("2", "1,3", "1, 3", "1 3").
fn numbers(text: &str) -> Option<Vec<usize>> {
    let parts: Vec<&str> = text.split(|c: char| c == ',' || c == ';' || c.is_whitespace()).filter(|p| !p.is_empty()).collect();
    if parts.is_empty() || parts.len() > 100 || !parts.iter().all(|p| p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    parts.iter().map(|p| p.parse().ok()).collect()
}

/// What a reply with `text` to `record`'s message answers, in any chat. A set of one question: numbers
/// pick its options ("2", or "1,3" where it takes several); words are read as the core
/// reads a typed answer ([`Selection::from_text`]: an option's label picks it, and
/// "Auth, API" both where it takes several), anything else is the answer in words (for an approval: a denial that says it; "allow"
/// and "deny" are its buttons). A set of several questions (answered in askuser, at `open`),
/// a number that is not an option, or several for a question that takes one, is an error
/// that says what to do instead: askuser's words, agent text in it made safe by the chat's
/// `defuse`, ready to send. An option is taken only where the chat's `allowable` lets it.
pub fn reply(
    record: &QuestionRecord,
    text: &str,
    open: Option<&str>,
    allowable: impl FnOnce(&QuestionRecord, &str) -> Result<(), String>,
    defuse: impl FnOnce(&str) -> String,
) -> Result<Vec<Selection>, String> {
    let questions = &record.request.questions;
    let text = text.trim();
    let [q] = questions.as_slice() else {
        let open = open.map(|url| format!(": {url}")).unwrap_or_default();
        return Err(format!("This set has {} questions: answer them in askuser{open}", questions.len()));
    };
    if text.is_empty() {
        return Err("Reply with an option's number or with your answer in words.".into());
    }
    let labelled = |labels: &[&str]| q.find_option(text).map(|j| q.options[j].label.clone()).filter(|l| labels.contains(&l.as_str()));
    let approval = permission(record).is_some() && [ALLOW, DENY].iter().all(|l| q.options.iter().any(|o| o.label == *l));
    let picked = numbers(text).filter(|_| !q.options.is_empty());
    let selection = match (approval, picked) {
        (true, _) => match labelled(&[ALLOW, DENY]) {
            Some(label) => Selection::option(label),
            None => Selection::custom(text),
        },
        // Words, as the core reads a typed answer: an option's label picks it.
        (false, None) => Selection::from_text(q, text),
        (false, Some(picked)) => {
            let n = q.options.len();
            if let Some(k) = picked.iter().find(|&&k| k == 0 || k > n) {
                return Err(format!("There is no option {k}: reply with a number from 1 to {n}, or with your answer in words."));
            }
            let mut labels: Vec<String> = Vec::new();
            for k in picked {
                let label = &q.options[k - 1].label;
                if !labels.contains(label) {
                    labels.push(label.clone());
                }
            }
            if labels.len() > 1 && !q.multi_select {
                return Err("This question takes one answer: reply with one number.".into());
            }
            Selection { selected: labels, ..Selection::default() }
        }
    };
    if let Some(label) = selection.selected.first() {
        allowable(record, label)?;
    }
    let selections = vec![selection];
    askuser_core::resolve(questions, &selections).map_err(|e| defuse(&e.to_string()))?;
    Ok(selections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::fixtures::{approval, record, single};

    fn parsed(text: &str) -> Option<Result<Command, String>> {
        parse(text, false)
    }

    #[test]
    fn commands_are_read_in_any_case_with_a_slash_or_a_bots_name() {
        let id = || "a1b2c3".to_owned();
        assert_eq!(parsed("approve a1b2c3"), Some(Ok(Command::Approve { id: id() })));
        assert_eq!(parsed("  /Approve@askuser_bot  #A1B2C3 "), Some(Ok(Command::Approve { id: id() })));
        assert_eq!(parsed("deny a1b2c3"), Some(Ok(Command::Deny { id: id(), words: None })));
        assert_eq!(
            parsed("DENY a1b2c3  use the staging db\nplease"),
            Some(Ok(Command::Deny { id: id(), words: Some("use the staging db\nplease".into()) }))
        );
        assert_eq!(parsed("answer a1b2c3 1,3"), Some(Ok(Command::Answer { id: id(), text: "1,3".into() })));
        assert_eq!(parsed("answer a1b2c3 SQLite, obviously"), Some(Ok(Command::Answer { id: id(), text: "SQLite, obviously".into() })));
    }

    #[test]
    fn what_is_no_command_is_left_alone_and_a_wrong_one_says_how() {
        assert_eq!(parsed("SQLite"), None);
        assert_eq!(parsed("approved it already"), None, "approved is not approve");
        assert_eq!(parsed(""), None);
        let e = parsed("approve").unwrap().unwrap_err();
        assert!(e.contains("approve needs the question's id") && e.contains("got nothing"), "{e}");
        let e = parsed("deny it, run the tests first").unwrap().unwrap_err();
        assert!(e.contains("got \"it,\""), "{e}");
        assert_eq!(parse("deny it, run the tests first", true), None, "strict: a reply's words, not a command");
        assert!(parsed("answer a1b2c3").unwrap().unwrap_err().contains("answer a1b2c3 2"));
        assert!(parsed("approve a1b2c3 now").unwrap().unwrap_err().contains("deny a1b2c3"));
        assert!(parsed("approve a1b2c").unwrap().is_err(), "five digits are no id");
    }

    #[test]
    fn a_short_id_is_six_hex_digits_of_the_sets_id() {
        assert_eq!(short_id("q-1"), short_id("q-1"));
        assert_ne!(short_id("q-1"), short_id("q-2"));
        assert!(is_short_id(&short_id("q-1")), "{}", short_id("q-1"));
    }

    #[test]
    fn each_command_does_what_it_says_and_only_that() {
        let ok = |_: &QuestionRecord, _: &str| Ok(());
        let words = |r: &QuestionRecord, t: &str| Ok(vec![Selection::from_text(&r.request.questions[0], t)]);
        let a = approval("rm -rf build");
        let id = || short_id("q-1");
        let approve = Command::Approve { id: id() };
        assert_eq!(outcome(&a, &approve, ok, words), Ok(Outcome::Answer(vec![Selection::option(ALLOW)])));
        let shown_in_part = |_: &QuestionRecord, _: &str| Err("Too long to show here whole".to_owned());
        assert_eq!(outcome(&a, &approve, shown_in_part, words), Err("Too long to show here whole".into()), "no Allow unseen");
        let deny = Command::Deny { id: id(), words: Some("use make clean".into()) };
        assert_eq!(outcome(&a, &deny, ok, words), Ok(Outcome::Answer(vec![Selection::custom("use make clean")])));
        assert_eq!(outcome(&a, &Command::Deny { id: id(), words: None }, ok, words), Ok(Outcome::Answer(vec![Selection::option(DENY)])));
        let q = record(vec![single(&["Postgres", "SQLite"])]);
        let e = outcome(&q, &approve, ok, words).unwrap_err();
        assert!(e.contains("is a question, not an approval"), "{e}");
        assert_eq!(outcome(&q, &Command::Deny { id: id(), words: None }, ok, words), Ok(Outcome::Decline));
        let answer = Command::Answer { id: id(), text: "sqlite".into() };
        assert_eq!(outcome(&q, &answer, ok, words), Ok(Outcome::Answer(vec![Selection::option("SQLite")])));
    }
}
