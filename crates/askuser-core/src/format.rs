//! The canonical result in the shapes agents expect.
//!
//! - `canonical`: [`AskResult`] as it is.
//! - `claude`: Claude Code's `{questions, answers: {"<question>": "A, B"}}` plus the
//!   tool-result sentence its agents read.
//! - `pi`: pi's `{answered, cancelled?, answers: [{question, answer, selectedOption?, wasCustom}]}`.
//! - `text`: one line per question, for transcripts and compaction.
//!
//! A result that is not an answer says so plainly in every format and tells the model
//! not to assume one.

use crate::answer::{AnswerValue, AskResult, Status};
use serde_json::{json, Map, Value};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Canonical,
    Claude,
    Pi,
    Text,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "canonical" => Ok(Format::Canonical),
            "claude" => Ok(Format::Claude),
            "pi" => Ok(Format::Pi),
            "text" => Ok(Format::Text),
            other => Err(format!("expected canonical, claude, pi or text, got {other:?}")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Canonical => "canonical",
            Format::Claude => "claude",
            Format::Pi => "pi",
            Format::Text => "text",
        })
    }
}

impl AskResult {
    /// The result as JSON in `format`; `text` gives a JSON string.
    pub fn to_json(&self, format: Format) -> Value {
        match format {
            Format::Canonical => serde_json::to_value(self).unwrap_or(Value::Null),
            Format::Claude => self.claude_json(),
            Format::Pi => self.pi_json(),
            Format::Text => Value::String(self.summary()),
        }
    }

    /// The result as the text a model reads: the Claude Code sentence for `claude`,
    /// the summary for `text`, pretty JSON for `canonical` and `pi`.
    pub fn to_text(&self, format: Format) -> String {
        match format {
            Format::Claude => self.claude_message(),
            Format::Text => self.summary(),
            Format::Canonical | Format::Pi => serde_json::to_string_pretty(&self.to_json(format)).unwrap_or_default(),
        }
    }

    /// What the model should be told when there is no answer, or `None` when answered.
    pub fn no_answer_sentence(&self) -> Option<String> {
        if let (Status::TimedOut, Some(reason)) = (self.status, &self.reason) {
            return Some(format!(
                "The user did not answer: {reason} (the question ended without an answer, as the caller asked). \
Do not assume an answer: continue without it, or ask again later."
            ));
        }
        self.status_sentence().map(str::to_owned)
    }

    fn status_sentence(&self) -> Option<&'static str> {
        match self.status {
            Status::Answered => None,
            Status::Pending => Some("The user has not answered yet. Do not assume an answer."),
            Status::Cancelled if self.chat => Some(
                "The user wants to talk these questions over with you instead of choosing an answer. Do not assume an answer: \
ask them in the conversation what they would like to discuss or clarify, then ask again if you still need to.",
            ),
            Status::Cancelled => Some(
                "The user declined to answer your questions. Do not assume an answer: continue without it, or ask again differently if you cannot.",
            ),
            Status::TimedOut => Some(
                "The question timed out before the user answered. Do not assume an answer: continue without it, or ask again later.",
            ),
            Status::Withdrawn => Some(
                "The question was withdrawn before the user answered. Do not assume an answer.",
            ),
        }
    }

    /// Claude Code's tool-result sentence.
    pub fn claude_message(&self) -> String {
        if let Some(s) = self.no_answer_sentence() {
            return s;
        }
        // Claude Code's own shape: `"Q"="A" selected preview:\n… user notes: …`.
        let pairs: Vec<String> = self
            .answers
            .iter()
            .map(|a| {
                let mut pair = format!("\"{}\"=\"{}\"", a.question, a.answer.joined());
                if let Some(preview) = &a.preview {
                    pair.push_str(&format!(" selected preview:\n{preview}"));
                }
                if let Some(notes) = &a.notes {
                    pair.push_str(&format!(" user notes: {notes}"));
                }
                pair
            })
            .collect();
        format!("User has answered your questions: {}. You can now continue with the user's answers in mind.", pairs.join(", "))
    }

    fn claude_json(&self) -> Value {
        let questions: Vec<Value> = self
            .answers
            .iter()
            .map(|a| {
                let mut q = Map::new();
                q.insert("question".into(), a.question.clone().into());
                if let Some(h) = &a.header {
                    q.insert("header".into(), h.clone().into());
                }
                q.insert("multiSelect".into(), matches!(a.answer, AnswerValue::Many(_)).into());
                Value::Object(q)
            })
            .collect();
        let answers: Map<String, Value> = self.answers.iter().map(|a| (a.question.clone(), Value::String(a.answer.joined()))).collect();
        let mut out = json!({ "questions": questions, "answers": answers });
        // Claude Code's `annotations`: per question, the chosen option's preview and the notes.
        let annotations: Map<String, Value> = self
            .answers
            .iter()
            .filter(|a| a.preview.is_some() || a.notes.is_some())
            .map(|a| {
                let mut note = Map::new();
                if let Some(p) = &a.preview {
                    note.insert("preview".into(), p.clone().into());
                }
                if let Some(n) = &a.notes {
                    note.insert("notes".into(), n.clone().into());
                }
                (a.question.clone(), Value::Object(note))
            })
            .collect();
        if !annotations.is_empty() {
            out["annotations"] = Value::Object(annotations);
        }
        if self.chat {
            out["chat"] = true.into();
        }
        // The caller's `metadata` (e.g. `{"source": "setup"}`) comes back as sent.
        if let Some(m) = &self.metadata {
            out["metadata"] = Value::Object(m.clone());
        }
        out["message"] = self.claude_message().into();
        out
    }

    fn pi_json(&self) -> Value {
        let answers: Vec<Value> = self
            .answers
            .iter()
            .map(|a| {
                let mut o = Map::new();
                o.insert("question".into(), a.question.clone().into());
                o.insert("answer".into(), serde_json::to_value(&a.answer).unwrap_or(Value::Null));
                if let (AnswerValue::One(_), Some(label)) = (&a.answer, a.selected_options.first()) {
                    o.insert("selectedOption".into(), label.clone().into());
                }
                o.insert("wasCustom".into(), a.was_custom.into());
                if let Some(n) = &a.notes {
                    o.insert("notes".into(), n.clone().into());
                }
                Value::Object(o)
            })
            .collect();
        let mut out = Map::new();
        out.insert("answered".into(), self.answered.into());
        match self.status {
            Status::Cancelled => {
                out.insert("cancelled".into(), true.into());
                if self.chat {
                    out.insert("chat".into(), true.into());
                }
            }
            Status::TimedOut => {
                out.insert("timedOut".into(), true.into());
                if let Some(reason) = &self.reason {
                    out.insert("reason".into(), reason.clone().into());
                }
            }
            Status::Withdrawn => {
                out.insert("withdrawn".into(), true.into());
            }
            Status::Answered | Status::Pending => {}
        }
        out.insert("answers".into(), answers.into());
        if let Some(m) = &self.metadata {
            out.insert("metadata".into(), Value::Object(m.clone()));
        }
        Value::Object(out)
    }

    /// One line per question (`Which database should we use? → PostgreSQL`), or the
    /// sentence that says there is no answer.
    pub fn summary(&self) -> String {
        if let Some(s) = self.no_answer_sentence() {
            return s;
        }
        self.answers
            .iter()
            .map(|a| {
                let line = format!("{} → {}", one_line(&a.question), one_line(&a.answer.joined()));
                match &a.notes {
                    Some(n) => format!("{line} (notes: {})", one_line(n)),
                    None => line,
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Folds line breaks so each answer stays on its own line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{resolve, Selection};
    use crate::model::{Choice, Question, Request};

    fn request() -> Request {
        Request {
            id: Some("q-1".into()),
            questions: vec![
                Question {
                    question: "Which database should we use?".into(),
                    header: Some("Database".into()),
                    options: vec![Choice::new("PostgreSQL (Recommended)"), Choice::new("SQLite")],
                    multi_select: false,
                },
                Question {
                    question: "Which features?".into(),
                    header: Some("Features".into()),
                    options: vec![Choice::new("Auth"), Choice::new("API"), Choice::new("UI")],
                    multi_select: true,
                },
                Question { question: "What should we name this service?".into(), ..Question::default() },
            ],
            metadata: serde_json::from_str(r#"{"source":"project-setup"}"#).ok(),
            ..Request::default()
        }
    }

    fn answered() -> AskResult {
        let r = request();
        let sel = [
            Selection::option("PostgreSQL (Recommended)"),
            Selection { selected: vec!["Auth".into(), "UI".into()], ..Selection::default() },
            Selection::custom("order-processor\nv2"),
        ];
        AskResult::answered("q-1", &r, resolve(&r.questions, &sel).unwrap(), 1_707_091_200_000)
    }

    #[test]
    fn canonical_json() {
        insta::assert_json_snapshot!(answered().to_json(Format::Canonical));
    }

    #[test]
    fn claude_json_and_sentence() {
        insta::assert_json_snapshot!(answered().to_json(Format::Claude));
        assert_eq!(
            answered().to_text(Format::Claude),
            "User has answered your questions: \"Which database should we use?\"=\"PostgreSQL (Recommended)\", \
\"Which features?\"=\"Auth, UI\", \"What should we name this service?\"=\"order-processor\nv2\". \
You can now continue with the user's answers in mind."
        );
    }

    #[test]
    fn pi_json() {
        insta::assert_json_snapshot!(answered().to_json(Format::Pi));
    }

    #[test]
    fn text_summary() {
        assert_eq!(
            answered().to_text(Format::Text),
            "Which database should we use? → PostgreSQL (Recommended)\nWhich features? → Auth, UI\nWhat should we name this service? → order-processor v2"
        );
    }

    #[test]
    fn unanswered_results_tell_the_model_not_to_assume() {
        let r = request();
        for status in [Status::Cancelled, Status::TimedOut, Status::Withdrawn] {
            let res = AskResult::unanswered("q-1", &r, status, 5);
            for f in [Format::Claude, Format::Text] {
                assert!(res.to_text(f).contains("Do not assume an answer"), "{status:?} {f}");
            }
            let pi = res.to_json(Format::Pi);
            assert_eq!(pi["answered"], false);
        }
        let cancelled = AskResult::unanswered("q-1", &r, Status::Cancelled, 5);
        assert_eq!(cancelled.reason, None);
        insta::assert_json_snapshot!(cancelled.to_json(Format::Pi));
        insta::assert_json_snapshot!(cancelled.to_json(Format::Canonical));
    }

    #[test]
    fn a_default_says_why_in_every_format_and_answers_nothing() {
        let r = Request { default_after_seconds: Some(1800), ..request() };
        let res = AskResult::defaulted("q-1", &r, 5);
        assert_eq!((res.status, res.answered, res.answers.len()), (Status::TimedOut, false, 0));
        let canonical = res.to_json(Format::Canonical);
        assert_eq!(
            (canonical["status"].as_str(), canonical["reason"].as_str()),
            (Some("timed_out"), Some("no answer after 30 min; default applied"))
        );
        assert_eq!(res.to_json(Format::Pi)["reason"], "no answer after 30 min; default applied");
        assert!(res.to_json(Format::Claude)["message"].as_str().unwrap().contains("no answer after 30 min; default applied"));
        assert_eq!(
            res.to_text(Format::Text),
            "The user did not answer: no answer after 30 min; default applied (the question ended without an answer, as the caller asked). \
Do not assume an answer: continue without it, or ask again later."
        );
        let plain = AskResult::unanswered("q-1", &r, Status::TimedOut, 5);
        assert!(plain.to_text(Format::Claude).starts_with("The question timed out"), "a timeout without a default says so");
    }

    #[test]
    fn formats_parse_and_print() {
        for f in [Format::Canonical, Format::Claude, Format::Pi, Format::Text] {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("xml".parse::<Format>().unwrap_err(), "expected canonical, claude, pi or text, got \"xml\"");
    }

    #[test]
    fn notes_and_previews_come_back_as_claude_code_annotations() {
        let mut r = request();
        r.questions[0].options[1].preview = Some("file: ./app.db".into());
        let sel = [
            Selection::option("SQLite").with_notes("only for now"),
            Selection { selected: vec!["API".into()], ..Selection::default() },
            Selection::custom("svc"),
        ];
        let res = AskResult::answered("q-1", &r, resolve(&r.questions, &sel).unwrap(), 5);
        let claude = res.to_json(Format::Claude);
        assert_eq!(claude["annotations"], json!({"Which database should we use?": {"preview": "file: ./app.db", "notes": "only for now"}}));
        assert_eq!(
            res.to_text(Format::Claude),
            "User has answered your questions: \"Which database should we use?\"=\"SQLite\" selected preview:\nfile: ./app.db \
user notes: only for now, \"Which features?\"=\"API\", \"What should we name this service?\"=\"svc\". \
You can now continue with the user's answers in mind."
        );
        assert_eq!(res.to_json(Format::Pi)["answers"][0]["notes"], "only for now");
        assert!(res.to_text(Format::Text).starts_with("Which database should we use? → SQLite (notes: only for now)\n"));
        // Without notes or previews there is no `annotations` key at all.
        assert!(answered().to_json(Format::Claude).get("annotations").is_none());
        assert_eq!(answered().to_json(Format::Claude)["metadata"], json!({"source": "project-setup"}));
    }

    #[test]
    fn chat_about_this_is_a_decline_that_asks_for_a_conversation() {
        let res = AskResult::chat("q-1", &request(), 5);
        assert_eq!((res.status, res.answered, res.chat), (Status::Cancelled, false, true));
        let text = res.to_text(Format::Claude);
        assert!(text.contains("talk these questions over") && text.contains("Do not assume an answer"), "{text}");
        assert_eq!(res.to_json(Format::Pi)["chat"], true);
        assert_eq!(res.to_json(Format::Canonical)["chat"], true);
        assert_eq!(res.to_json(Format::Claude)["chat"], true);
        // A plain decline does not carry the flag.
        let declined = AskResult::unanswered("q-1", &request(), Status::Cancelled, 5);
        assert!(declined.to_json(Format::Canonical).get("chat").is_none());
    }
}
