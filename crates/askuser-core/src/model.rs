//! The unified question model: what an agent asks, in one canonical shape.
//!
//! Every dialect the core reads (see [`crate::dialect`]) normalizes to a [`Request`].
//! The JSON is camelCase, so the canonical shape is Claude Code's AskUserQuestion
//! plus askuser's own optional fields (`id`, `metadata`, `agent`, `timeoutSeconds`,
//! `remindAfterSeconds`, `defaultAfterSeconds`).
//!
//! "Other" is never an option in the data: every front end adds its own free-text
//! row. A question without options is a free-text question.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One ask: one or more questions answered together, atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// Client-chosen idempotency key. Asking again with the same id resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub questions: Vec<Question>,
    /// Any JSON object; echoed back in the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Agent>,
    /// `None` waits for as long as the human takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Send the set again after this long without an answer, then escalate it after twice
    /// as long ([`crate::remind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after_seconds: Option<u64>,
    /// Only when the caller asks: after this long without an answer, end it with the
    /// default (an approval is denied, a question returns no answer with the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_after_seconds: Option<u64>,
    /// Set when this asks leave to use a tool ([`crate::approval`]); made by the bridge
    /// from an approval, never read from an agent's question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// Every option's preview read as markdown, question by question and option by
    /// option (`None` for an option without one): the web app draws these and carries no
    /// parser (it was 150 KB of its wasm; issue 51). Filled in by the bridge as it sends a
    /// question set to a page ([`Request::parse_previews`]); never read from an agent (the
    /// dialects build a request field by field) and never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_docs: Option<Vec<Vec<Option<crate::markdown::Doc>>>>,
}

impl Request {
    /// Sets [`Request::preview_docs`] from the options' previews (`None` when no option
    /// has one), whatever it held.
    pub fn parse_previews(&mut self) {
        let any = self.questions.iter().flat_map(|q| &q.options).any(|c| c.preview.is_some());
        self.preview_docs = any.then(|| {
            self.questions.iter().map(|q| q.options.iter().map(|c| c.preview.as_deref().map(crate::markdown::parse)).collect()).collect()
        });
    }
}

/// What an agent asks leave to do: the data. What it means (the dialects it comes in,
/// how it is shown and asked, the rules that allow it) is in [`crate::approval`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The tool (`Bash`, `Edit`, `mcp__github__create_issue`, …).
    pub tool: String,
    /// Its arguments, as the agent would call it.
    #[serde(default)]
    pub input: Map<String, Value>,
    /// Why the agent wants to (shown with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The folder the agent works in: where a command runs, what relative paths mean,
    /// and the project a rule is kept for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The host's id of the call (Claude Code's `tool_use_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Who is asking. A sub-agent names the session of the agent it works for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The person or team the question is for: their devices see it first, everyone
    /// else after the bridge's escalation delay (or never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question: String,
    /// A short chip shown above the question ("Database").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Empty means a free-text question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Choice>,
    #[serde(default)]
    pub multi_select: bool,
}

/// One option of a question. Called `Choice` so it never clashes with `Option`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the option would look like (code, a mockup, a config), as markdown: front ends
    /// draw [`crate::markdown::parse`]'s model of it in a monospace box, never as HTML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

impl Question {
    /// A question with no options is answered with free text only.
    pub fn is_free_text(&self) -> bool {
        self.options.is_empty()
    }

    /// The option whose label matches `label`, ignoring case and surrounding space.
    pub fn find_option(&self, label: &str) -> Option<usize> {
        let wanted = label.trim();
        self.options.iter().position(|c| c.label.trim().to_lowercase() == wanted.to_lowercase())
    }
}

impl Choice {
    pub fn new(label: impl Into<String>) -> Self {
        Choice { label: label.into(), ..Choice::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::parse;

    /// What the bridge sends a page in place of a parser (issue 51): each option's doc in
    /// its place, none for an option without a preview, none at all without previews,
    /// and never a doc the request came with.
    #[test]
    fn parsed_previews_follow_the_options() {
        let with = |preview: Option<&str>| Choice { preview: preview.map(str::to_owned), ..Choice::new("x") };
        let question = |options| Question { question: "Q".into(), options, ..Question::default() };
        let mut r = Request {
            questions: vec![question(vec![with(Some("# A")), with(None)]), question(vec![with(Some("*b*"))])],
            preview_docs: Some(vec![vec![Some(parse("forged"))]]),
            ..Request::default()
        };
        r.parse_previews();
        assert_eq!(r.preview_docs, Some(vec![vec![Some(parse("# A")), None], vec![Some(parse("*b*"))]]));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(serde_json::from_value::<Request>(json.clone()).unwrap(), r);
        assert!(json["previewDocs"][0][1].is_null());

        let mut plain = Request { questions: vec![question(vec![with(None)])], preview_docs: r.preview_docs.clone(), ..Request::default() };
        plain.parse_previews();
        assert_eq!(plain.preview_docs, None);
        assert!(serde_json::to_value(&plain).unwrap().get("previewDocs").is_none());
    }
}
