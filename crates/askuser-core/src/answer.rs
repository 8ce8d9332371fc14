//! Answers: what a front end sends ([`Selection`]), and the canonical result an agent
//! receives ([`AskResult`]), checked against the questions that were asked.
//!
//! A front end never sends derived fields (`wasCustom`, the joined answer text): it
//! sends selections, and [`resolve`] builds the answers, so a browser cannot make an
//! answer disagree with its question.

use crate::error::{FieldError, Invalid};
use crate::model::{Question, Request};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a question stands. Every status but `Pending` is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    /// The human answered every question.
    Answered,
    /// The human declined.
    Cancelled,
    /// The request's timeout passed first.
    TimedOut,
    /// The agent (or the bridge, for an agent that never came back) took the question back.
    Withdrawn,
}

impl Status {
    pub fn is_final(self) -> bool {
        self != Status::Pending
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::TimedOut => "timed_out",
            Status::Withdrawn => "withdrawn",
        }
    }
}

impl std::str::FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Status::Pending, Status::Answered, Status::Cancelled, Status::TimedOut, Status::Withdrawn]
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("expected pending, answered, cancelled, timed_out or withdrawn, got {s:?}"))
    }
}

/// A person's answer to one question, as a front end sends it: option labels and/or
/// the "Other" text, and optional notes about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
    /// What the person adds about this answer (Claude Code's per-question notes). Notes
    /// alone are not an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Selection {
    pub fn option(label: impl Into<String>) -> Self {
        Selection { selected: vec![label.into()], ..Selection::default() }
    }

    pub fn custom(text: impl Into<String>) -> Self {
        Selection { custom: Some(text.into()), ..Selection::default() }
    }

    /// The same answer with `notes` added.
    pub fn with_notes(mut self, notes: impl Into<String>) -> Self {
        self.notes = Some(notes.into());
        self
    }

    /// Reads an answer a person typed (the terminal fallback, `{"Q": "A"}` answer maps):
    /// text equal to an option's label (ignoring case) selects it; for multi-select,
    /// comma-separated labels select each, and any part that is no label becomes the
    /// "Other" text; anything else is the "Other" text.
    pub fn from_text(question: &Question, text: &str) -> Selection {
        if let Some(i) = question.find_option(text) {
            return Selection::option(question.options[i].label.clone());
        }
        if question.multi_select && text.contains(',') {
            let mut selection = Selection::default();
            let mut other = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match question.find_option(part) {
                    Some(i) => selection.selected.push(question.options[i].label.clone()),
                    None => other.push(part),
                }
            }
            if !other.is_empty() {
                selection.custom = Some(other.join(", "));
            }
            return selection;
        }
        Selection::custom(text)
    }

    fn custom_text(&self) -> Option<&str> {
        self.custom.as_deref().filter(|t| !t.trim().is_empty())
    }

    fn notes_text(&self) -> Option<&str> {
        self.notes.as_deref().filter(|t| !t.trim().is_empty())
    }
}

/// An answer is one string, or a list of strings for a multi-select question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AnswerValue {
    One(String),
    Many(Vec<String>),
}

/// Read by hand: serde's derived untagged enum buffers the value into its `Content` tree
/// and tries each variant on it, code a page reading results does not need (issue 51).
impl<'de> Deserialize<'de> for AnswerValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrMany;
        impl<'de> serde::de::Visitor<'de> for OneOrMany {
            type Value = AnswerValue;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<AnswerValue, E> {
                Ok(AnswerValue::One(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<AnswerValue, E> {
                Ok(AnswerValue::One(text))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<AnswerValue, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(AnswerValue::Many)
            }
        }
        deserializer.deserialize_any(OneOrMany)
    }
}

impl AnswerValue {
    /// The answer as one line: multi-select labels joined with ", " (Claude Code's way).
    pub fn joined(&self) -> String {
        match self {
            AnswerValue::One(s) => s.clone(),
            AnswerValue::Many(v) => v.join(", "),
        }
    }
}

/// One question's answer in the canonical result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub answer: AnswerValue,
    pub selected_options: Vec<String>,
    /// The "Other" text, or null.
    pub custom: Option<String>,
    pub was_custom: bool,
    /// The person's notes on this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The `preview` of the chosen option (of each chosen option with one, separated by
    /// blank lines, for multi-select), so the agent knows which artifact was picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

/// The canonical result of one ask: what the agent receives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskResult {
    pub id: String,
    pub status: Status,
    pub answered: bool,
    /// In question order; empty unless `status` is `answered`.
    pub answers: Vec<Answer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// When the question became final, in milliseconds since the Unix epoch (passed in).
    pub answered_at: u64,
    /// Set on a `cancelled` result when the person chose "Chat about this": they would
    /// rather talk the questions over with the agent than pick an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chat: bool,
    /// Why it ended without an answer, when askuser can say more than its status: on a
    /// `timed_out` set whose caller asked for a default, `no answer after 30 min; default
    /// applied` ([`crate::remind::reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AskResult {
    /// The result of an answered request. The answers come from [`resolve`].
    pub fn answered(id: impl Into<String>, request: &Request, answers: Vec<Answer>, at: u64) -> Self {
        AskResult {
            id: id.into(),
            status: Status::Answered,
            answered: true,
            answers,
            metadata: request.metadata.clone(),
            answered_at: at,
            chat: false,
            reason: None,
        }
    }

    /// The result of a request that ended without an answer (`status` is not `answered`).
    pub fn unanswered(id: impl Into<String>, request: &Request, status: Status, at: u64) -> Self {
        debug_assert!(status != Status::Answered && status != Status::Pending);
        AskResult {
            id: id.into(),
            status,
            answered: false,
            answers: vec![],
            metadata: request.metadata.clone(),
            answered_at: at,
            chat: false,
            reason: None,
        }
    }

    /// No answer within the `defaultAfterSeconds` its caller asked for: `timed_out`, with
    /// the reason ([`crate::remind::reason`]). Never an answer the person did not give.
    pub fn defaulted(id: impl Into<String>, request: &Request, at: u64) -> Self {
        let reason = request.default_after_seconds.map(crate::remind::reason);
        AskResult { reason, ..AskResult::unanswered(id, request, Status::TimedOut, at) }
    }

    /// The person declined with "Chat about this": `cancelled`, with `chat` set.
    pub fn chat(id: impl Into<String>, request: &Request, at: u64) -> Self {
        AskResult { chat: true, ..AskResult::unanswered(id, request, Status::Cancelled, at) }
    }
}

/// Checks a front end's selections against the questions and builds the canonical
/// answers. Every problem is reported, each with its path (`answers[1].selected[0]`).
pub fn resolve(questions: &[Question], selections: &[Selection]) -> Result<Vec<Answer>, Invalid> {
    if selections.len() != questions.len() {
        return Err(Invalid::one(
            "answers",
            format!(
                "expected {} answer{} (one per question, in order), got {}",
                questions.len(),
                if questions.len() == 1 { "" } else { "s" },
                selections.len()
            ),
        ));
    }
    let mut errors = Vec::new();
    let answers: Vec<Answer> = questions
        .iter()
        .zip(selections)
        .enumerate()
        .filter_map(|(i, (q, s))| resolve_one(q, s, &format!("answers[{i}]"), &mut errors))
        .collect();
    if errors.is_empty() {
        Ok(answers)
    } else {
        Err(Invalid { errors })
    }
}

fn resolve_one(q: &Question, s: &Selection, path: &str, errors: &mut Vec<FieldError>) -> Option<Answer> {
    let before = errors.len();
    // Map each label to its option, in the question's order, without duplicates.
    let mut picked: Vec<usize> = Vec::new();
    for (j, label) in s.selected.iter().enumerate() {
        match q.find_option(label) {
            Some(k) if !picked.contains(&k) => picked.push(k),
            Some(_) => {}
            None if q.is_free_text() => errors.push(FieldError::new(
                format!("{path}.selected[{j}]"),
                format!("{:?} is a free-text question with no options; send the text as `custom`", q.question),
            )),
            None => errors.push(FieldError::new(
                format!("{path}.selected[{j}]"),
                format!(
                    "{label:?} is not an option of {:?}; expected one of {}, or the text as `custom`",
                    q.question,
                    q.options.iter().map(|o| format!("{:?}", o.label)).collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }
    picked.sort_unstable();
    let custom = s.custom_text().map(str::to_owned);
    let count = picked.len() + usize::from(custom.is_some());
    if count == 0 {
        errors.push(FieldError::new(path, "expected an answer: select an option or give the \"Other\" text, got neither"));
    } else if !q.multi_select && count > 1 {
        errors.push(FieldError::new(path, format!("{:?} takes one answer, got {count} (options and \"Other\" text together)", q.question)));
    }
    if errors.len() > before {
        return None;
    }
    let labels: Vec<String> = picked.iter().map(|&k| q.options[k].label.clone()).collect();
    let previews: Vec<&str> = picked.iter().filter_map(|&k| q.options[k].preview.as_deref()).collect();
    let preview = (!previews.is_empty()).then(|| previews.join("\n\n"));
    let answer = if q.multi_select {
        AnswerValue::Many(labels.iter().cloned().chain(custom.clone()).collect())
    } else {
        AnswerValue::One(labels.first().cloned().or_else(|| custom.clone()).unwrap_or_default())
    };
    Some(Answer {
        question: q.question.clone(),
        header: q.header.clone(),
        answer,
        selected_options: labels,
        was_custom: custom.is_some(),
        custom,
        notes: s.notes_text().map(str::to_owned),
        preview,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Choice;

    fn db() -> Question {
        Question {
            question: "Which database?".into(),
            header: Some("DB".into()),
            options: vec![Choice::new("PostgreSQL (Recommended)"), Choice::new("SQLite")],
            multi_select: false,
        }
    }

    fn features() -> Question {
        Question {
            question: "Which features?".into(),
            options: vec![Choice::new("Auth"), Choice::new("API"), Choice::new("UI")],
            multi_select: true,
            ..Question::default()
        }
    }

    #[test]
    fn single_select_by_label_ignores_case() {
        let a = resolve(&[db()], &[Selection::option("sqlite")]).unwrap();
        assert_eq!(a[0].answer, AnswerValue::One("SQLite".into()));
        assert_eq!(a[0].selected_options, vec!["SQLite"]);
        assert!(!a[0].was_custom);
    }

    #[test]
    fn multi_select_keeps_question_order_and_adds_custom_last() {
        let s = Selection { selected: vec!["UI".into(), "auth".into(), "UI".into()], custom: Some("Billing".into()), notes: None };
        let a = resolve(&[features()], &[s]).unwrap();
        assert_eq!(a[0].answer, AnswerValue::Many(vec!["Auth".into(), "UI".into(), "Billing".into()]));
        assert!(a[0].was_custom);
        assert_eq!(a[0].answer.joined(), "Auth, UI, Billing");
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let bad = [Selection::option("MySQL"), Selection::default()];
        let err = resolve(&[db(), features()], &bad).unwrap_err();
        let paths: Vec<_> = err.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["answers[0].selected[0]", "answers[0]", "answers[1]"]);
        assert!(err.errors[0].message.contains("\"PostgreSQL (Recommended)\", \"SQLite\""));
    }

    #[test]
    fn single_select_refuses_two_answers() {
        let s = Selection { selected: vec!["SQLite".into()], custom: Some("DynamoDB".into()), notes: None };
        let err = resolve(&[db()], &[s]).unwrap_err();
        assert!(err.to_string().starts_with("answers[0]: \"Which database?\" takes one answer, got 2"));
    }

    #[test]
    fn wrong_count_is_refused() {
        let err = resolve(&[db()], &[]).unwrap_err();
        assert_eq!(err.to_string(), "answers: expected 1 answer (one per question, in order), got 0");
    }

    #[test]
    fn typed_text_selects_labels_or_becomes_other() {
        assert_eq!(Selection::from_text(&db(), " postgresql (recommended) "), Selection::option("PostgreSQL (Recommended)"));
        assert_eq!(Selection::from_text(&db(), "DynamoDB"), Selection::custom("DynamoDB"));
        let s = Selection::from_text(&features(), "auth, ui, billing");
        assert_eq!(s.selected, vec!["Auth", "UI"]);
        assert_eq!(s.custom.as_deref(), Some("billing"));
        // A single-select answer with a comma is text, not a list.
        assert_eq!(Selection::from_text(&db(), "SQLite, PostgreSQL"), Selection::custom("SQLite, PostgreSQL"));
    }

    #[test]
    fn whitespace_custom_counts_as_no_answer() {
        let free = Question { question: "Name?".into(), ..Question::default() };
        assert!(resolve(std::slice::from_ref(&free), &[Selection::custom("  ")]).is_err());
        let a = resolve(&[free], &[Selection::custom("order-processor")]).unwrap();
        assert_eq!(a[0].answer, AnswerValue::One("order-processor".into()));
        assert!(a[0].was_custom);
    }

    #[test]
    fn notes_travel_and_the_chosen_options_previews_come_back() {
        let mut q = db();
        q.options[0].preview = Some("CREATE TABLE t (...)".into());
        let a = resolve(std::slice::from_ref(&q), &[Selection::option("PostgreSQL (Recommended)").with_notes("use v16")]).unwrap();
        assert_eq!(a[0].notes.as_deref(), Some("use v16"));
        assert_eq!(a[0].preview.as_deref(), Some("CREATE TABLE t (...)"));
        // An option without a preview gives none; blank notes are no notes.
        let a = resolve(&[q], &[Selection::option("SQLite").with_notes("  ")]).unwrap();
        assert_eq!((a[0].notes.as_deref(), a[0].preview.as_deref()), (None, None));
        // Multi-select: every chosen option's preview, in question order.
        let mut f = features();
        f.options[0].preview = Some("auth.rs".into());
        f.options[2].preview = Some("ui.rs".into());
        let a = resolve(&[f], &[Selection { selected: vec!["UI".into(), "Auth".into()], ..Selection::default() }]).unwrap();
        assert_eq!(a[0].preview.as_deref(), Some("auth.rs\n\nui.rs"));
    }

    #[test]
    fn notes_alone_are_not_an_answer() {
        let err = resolve(&[db()], &[Selection::default().with_notes("not sure")]).unwrap_err();
        assert!(err.to_string().contains("expected an answer"), "{err}");
    }
}
