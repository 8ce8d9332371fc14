//! The rules a request must meet, and the [`Limits`] they use.
//!
//! Validation never stops at the first problem: every error is collected, each named
//! by the path of the field as the agent wrote it. Fixes that keep a request usable
//! (dropping an "Other" option, truncating a long header for display) are applied and
//! reported as warnings beside the request, never silently.

use crate::error::{FieldError, Invalid};
use crate::model::{Agent, Question, Request};

/// A change made to a request so it could be used, or a field that was ignored.
pub type Warning = FieldError;

/// How big a request may be. The default is lenient; [`Limits::claude_code`] is the
/// profile Claude Code's AskUserQuestion enforces. Callers may set any field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_questions: usize,
    /// Applies only to questions that have options.
    pub min_options: usize,
    pub max_options: usize,
    /// When true, free-text questions (no options) are refused.
    pub require_options: bool,
    pub max_question_chars: usize,
    /// Longer headers are truncated for display, with a warning.
    pub max_header_chars: usize,
    pub max_label_chars: usize,
    pub max_description_chars: usize,
    pub max_preview_chars: usize,
    pub max_id_chars: usize,
    /// How deeply `metadata` may nest (objects and arrays). Every front end parses it
    /// again inside larger messages, so it must stay well under JSON parsers' limits.
    pub max_metadata_depth: usize,
    /// The size of `metadata` as JSON text.
    pub max_metadata_bytes: usize,
}

/// The longest person or team name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `name` is a usable person or team name (`alice`, `db-team`, `bob@example.org`).
pub fn is_name(name: &str) -> bool {
    !name.is_empty() && chars(name) <= MAX_NAME_CHARS && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
}

/// The longest agent name, in characters (the inbox shows it as a heading).
pub const MAX_AGENT_NAME_CHARS: usize = 100;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_questions: 10,
            min_options: 1,
            max_options: 50,
            require_options: false,
            max_question_chars: 4_000,
            max_header_chars: 40,
            max_label_chars: 200,
            max_description_chars: 2_000,
            max_preview_chars: 20_000,
            max_id_chars: 128,
            max_metadata_depth: 32,
            max_metadata_bytes: 64 * 1024,
        }
    }
}

impl Limits {
    /// Claude Code's AskUserQuestion: 1-4 questions, 2-4 options each, headers of at most 12 chars.
    pub fn claude_code() -> Self {
        Limits { max_questions: 4, min_options: 2, max_options: 4, require_options: true, max_header_chars: 12, ..Limits::default() }
    }
}

/// Where each field of a request came from in the agent's input, so errors name the
/// field the agent wrote (`choices[2]` for Opal, `questions[0].options[2].label` for Claude).
#[derive(Debug, Clone, Default)]
pub(crate) struct Paths {
    pub questions: String,
    pub items: Vec<QuestionPaths>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct QuestionPaths {
    pub text: String,
    pub header: String,
    pub multi_select: String,
    pub options: String,
    /// Per option: the option itself, and its label (the same for a bare string).
    pub option: Vec<(String, String)>,
}

impl Paths {
    /// The canonical paths: `questions[i].options[j].label`.
    pub(crate) fn canonical(request: &Request) -> Paths {
        Paths {
            questions: "questions".into(),
            items: request
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let base = format!("questions[{i}]");
                    QuestionPaths {
                        text: format!("{base}.question"),
                        header: format!("{base}.header"),
                        multi_select: format!("{base}.multiSelect"),
                        option: (0..q.options.len())
                            .map(|j| (format!("{base}.options[{j}]"), format!("{base}.options[{j}].label")))
                            .collect(),
                        options: format!("{base}.options"),
                    }
                })
                .collect(),
        }
    }
}

/// Checks a request built in code against the rules, with canonical paths.
pub fn validate(request: Request, limits: &Limits) -> Result<(Request, Vec<Warning>), Invalid> {
    let paths = Paths::canonical(&request);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let request = apply_rules(request, &paths, limits, &mut errors, &mut warnings);
    if errors.is_empty() {
        Ok((request, warnings))
    } else {
        Err(Invalid { errors })
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn too_long(path: &str, what: &str, len: usize, max: usize, errors: &mut Vec<FieldError>) {
    if len > max {
        errors.push(FieldError::new(path, format!("{what} is {len} chars long; expected at most {max}")));
    }
}

/// How many objects and arrays nest in `value` (a scalar is 0).
fn depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// An option an agent added for free text, which the dialog always adds itself.
fn is_other_label(label: &str) -> bool {
    let l = label.trim().to_lowercase();
    l == "other" || l.starts_with("other (") || l.starts_with("other:") || l == "other..." || l == "other…"
}

/// Applies every rule, pushing errors and warnings; returns the request with the
/// warned-about fixes applied.
pub(crate) fn apply_rules(
    mut request: Request,
    paths: &Paths,
    limits: &Limits,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) -> Request {
    let mut check = Check { limits, errors, warnings };
    if let Some(id) = &request.id {
        check.id(id);
    }
    if let Some(metadata) = &request.metadata {
        check.metadata(metadata);
    }
    if request.timeout_seconds == Some(0) {
        check.error("timeoutSeconds", "expected at least 1 second (leave it out to wait without limit), got 0");
    }
    for (field, seconds) in [("remindAfterSeconds", request.remind_after_seconds), ("defaultAfterSeconds", request.default_after_seconds)] {
        if let Some(Err(e)) = seconds.map(|s| crate::remind::check_seconds(field, s)) {
            let message = e.split_once(": ").map_or(e.as_str(), |(_, m)| m).to_owned();
            check.error(field, message);
        }
    }
    if let Some(agent) = &request.agent {
        check.agent(agent);
    }
    let n = request.questions.len();
    if n == 0 {
        check.error(&paths.questions, "expected at least 1 question, got none");
    } else if n > limits.max_questions {
        check.error(&paths.questions, format!("expected at most {} questions, got {n}", limits.max_questions));
    }
    let mut seen_texts: Vec<String> = Vec::new();
    for (i, q) in request.questions.iter_mut().enumerate() {
        let p = &paths.items[i];
        check.text(q, p, &mut seen_texts);
        check.header(q, p);
        check.options(q, p);
    }
    request
}

/// One pass of the rules: the limits it checks against and what it found.
struct Check<'a> {
    limits: &'a Limits,
    errors: &'a mut Vec<FieldError>,
    warnings: &'a mut Vec<Warning>,
}

impl Check<'_> {
    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(FieldError::new(path, message));
    }

    fn warning(&mut self, path: &str, message: impl Into<String>) {
        self.warnings.push(Warning::new(path, message));
    }

    fn id(&mut self, id: &str) {
        // "." and ".." would name another path in a URL (/v1/questions/..).
        let dots = id == "." || id == "..";
        let max = self.limits.max_id_chars;
        if dots || id.is_empty() || chars(id) > max || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c)) {
            let got = id.chars().take(60).collect::<String>();
            self.error("id", format!("expected 1 to {max} characters from A-Z a-z 0-9 - _ . : (not \".\" or \"..\"), got {got:?}"));
        }
    }

    fn metadata(&mut self, metadata: &serde_json::Map<String, serde_json::Value>) {
        let value = serde_json::Value::Object(metadata.clone());
        let depth = depth(&value);
        if depth > self.limits.max_metadata_depth {
            self.error("metadata", format!("nests {depth} levels deep; expected at most {}", self.limits.max_metadata_depth));
        }
        let bytes = value.to_string().len();
        if bytes > self.limits.max_metadata_bytes {
            self.error("metadata", format!("is {bytes} bytes of JSON; expected at most {}", self.limits.max_metadata_bytes));
        }
    }

    fn agent(&mut self, agent: &Agent) {
        if agent.name.trim().is_empty() {
            self.error("agent.name", "must not be empty");
        } else if chars(&agent.name) > MAX_AGENT_NAME_CHARS || agent.name.chars().any(char::is_control) {
            let n = chars(&agent.name);
            self.error(
                "agent.name",
                format!("expected at most {MAX_AGENT_NAME_CHARS} characters without control characters, got {n} characters"),
            );
        }
        if let Some(to) = agent.assignee.as_deref().filter(|to| !is_name(to)) {
            let got = to.chars().take(60).collect::<String>();
            self.error(
                "agent.assignee",
                format!("expected a person or team name: 1 to {MAX_NAME_CHARS} characters from a-z A-Z 0-9 - _ . @, got {got:?}"),
            );
        }
        // Session ids reach a late-answer hook's environment and command line.
        for (path, value) in [("agent.sessionId", &agent.session_id), ("agent.parentSessionId", &agent.parent_session_id)] {
            let Some(v) = value else { continue };
            let max = self.limits.max_id_chars;
            let ok = !v.is_empty()
                && chars(v) <= max
                && !v.starts_with('-')
                && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
            if !ok {
                let got = v.chars().take(60).collect::<String>();
                self.error(path, format!("expected 1 to {max} characters from A-Z a-z 0-9 - _ . :, not starting with \"-\", got {got:?}"));
            }
        }
    }

    /// The question's text: there, within its limit, and unlike the ones before it
    /// (`seen`, lowercased), since answers are keyed by it.
    fn text(&mut self, q: &Question, p: &QuestionPaths, seen: &mut Vec<String>) {
        let text = q.question.trim();
        if text.is_empty() {
            return self.error(&p.text, "must not be empty");
        }
        too_long(&p.text, "the question", chars(&q.question), self.limits.max_question_chars, self.errors);
        let key = text.to_lowercase();
        if let Some(first) = seen.iter().position(|t| *t == key) {
            self.error(
                &p.text,
                format!(
                    "repeats the text of question {} (answers are keyed by question text); expected each question to be different",
                    first + 1
                ),
            );
        }
        seen.push(key);
    }

    /// An empty header is dropped, a long one cut to the display limit (warnings both).
    fn header(&mut self, q: &mut Question, p: &QuestionPaths) {
        let max = self.limits.max_header_chars;
        match q.header.as_deref().map(str::trim) {
            Some("") => {
                self.warning(&p.header, "is empty; ignored");
                q.header = None;
            }
            Some(h) if chars(h) > max => {
                let cut: String = h.chars().take(max.saturating_sub(1)).collect::<String>().trim_end().to_owned() + "…";
                self.warning(&p.header, format!("is {} chars long, over the {max}-char display limit; shown as {cut:?}", chars(h)));
                q.header = Some(cut);
            }
            _ => {}
        }
    }

    /// The options: an agent's own "Other" dropped (every front end adds one), then
    /// each label, description and preview, and how many there are.
    fn options(&mut self, q: &mut Question, p: &QuestionPaths) {
        let mut kept = Vec::with_capacity(q.options.len());
        let mut kept_paths = Vec::with_capacity(q.options.len());
        for (j, option) in std::mem::take(&mut q.options).into_iter().enumerate() {
            if is_other_label(&option.label) {
                self.warning(&p.option[j].1, format!("{:?} dropped: askuser always adds its own \"Other\" answer", option.label));
            } else {
                kept.push(option);
                kept_paths.push(&p.option[j]);
            }
        }
        q.options = kept;

        let limits = self.limits;
        let mut seen_labels: Vec<String> = Vec::new();
        for (option, (base, label_path)) in q.options.iter().zip(&kept_paths) {
            let label = option.label.trim();
            if label.is_empty() {
                self.error(label_path, "must not be empty");
            } else {
                too_long(label_path, "the label", chars(&option.label), limits.max_label_chars, self.errors);
                let key = label.to_lowercase();
                if seen_labels.contains(&key) {
                    self.error(
                        label_path,
                        format!("repeats the label {label:?} (labels are compared ignoring case); expected each option to be different"),
                    );
                }
                seen_labels.push(key);
            }
            if let Some(d) = &option.description {
                too_long(&format!("{base}.description"), "the description", chars(d), limits.max_description_chars, self.errors);
            }
            if let Some(pv) = &option.preview {
                too_long(&format!("{base}.preview"), "the preview", chars(pv), limits.max_preview_chars, self.errors);
            }
        }

        let count = q.options.len();
        if count == 0 {
            if limits.require_options {
                let (lo, hi) = (limits.min_options, limits.max_options);
                self.error(&p.options, format!("expected {lo} to {hi} options, got none (this profile has no free-text questions)"));
            }
            if q.multi_select {
                self.warning(&p.multi_select, "has no effect on a free-text question; ignored");
                q.multi_select = false;
            }
        } else if count < limits.min_options {
            self.error(&p.options, format!("expected at least {} options besides \"Other\", got {count}", limits.min_options));
        } else if count > limits.max_options {
            self.error(&p.options, format!("expected at most {} options, got {count}", limits.max_options));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Choice, Question};

    fn q(text: &str, labels: &[&str]) -> Question {
        Question { question: text.into(), options: labels.iter().map(|l| Choice::new(*l)).collect(), ..Question::default() }
    }

    fn req(questions: Vec<Question>) -> Request {
        Request { questions, ..Request::default() }
    }

    fn messages(r: Request, limits: &Limits) -> Vec<String> {
        validate(r, limits).unwrap_err().errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn every_error_is_reported_with_its_path() {
        let r = req(vec![q("Which DB?", &["A", "a", ""]), q("", &[]), q("which db?", &["X"])]);
        assert_eq!(
            messages(r, &Limits::default()),
            [
                "questions[0].options[1].label: repeats the label \"a\" (labels are compared ignoring case); expected each option to be different",
                "questions[0].options[2].label: must not be empty",
                "questions[1].question: must not be empty",
                "questions[2].question: repeats the text of question 1 (answers are keyed by question text); expected each question to be different",
            ]
        );
    }

    #[test]
    fn no_questions_is_an_error() {
        assert_eq!(messages(req(vec![]), &Limits::default()), ["questions: expected at least 1 question, got none"]);
    }

    #[test]
    fn other_is_dropped_with_a_warning() {
        let (r, w) = validate(req(vec![q("Pick", &["A", "Other (type your answer)", "B"])]), &Limits::default()).unwrap();
        assert_eq!(r.questions[0].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(w[0].path, "questions[0].options[1].label");
        assert!(w[0].message.contains("always adds its own"));
    }

    #[test]
    fn claude_code_profile_is_strict() {
        let mut long = q("Pick", &["A"]);
        long.header = Some("A very long header".into());
        let r = req(vec![long, q("Name?", &[]), q("3", &["a", "b"]), q("4", &["a", "b"]), q("5", &["a", "b", "c", "d", "e"])]);
        assert_eq!(
            messages(r, &Limits::claude_code()),
            [
                "questions: expected at most 4 questions, got 5",
                "questions[0].options: expected at least 2 options besides \"Other\", got 1",
                "questions[1].options: expected 2 to 4 options, got none (this profile has no free-text questions)",
                "questions[4].options: expected at most 4 options, got 5",
            ]
        );
    }

    #[test]
    fn long_header_is_truncated_with_a_warning() {
        let mut x = q("Pick", &["A", "B"]);
        x.header = Some("Authentication".into());
        let (r, w) = validate(req(vec![x]), &Limits::claude_code()).unwrap();
        assert_eq!(r.questions[0].header.as_deref(), Some("Authenticat…"));
        assert_eq!(w[0].to_string(), "questions[0].header: is 14 chars long, over the 12-char display limit; shown as \"Authenticat…\"");
    }

    #[test]
    fn limits_are_configurable() {
        let limits = Limits { max_label_chars: 3, ..Limits::default() };
        assert_eq!(
            messages(req(vec![q("Pick", &["abcd"])]), &limits),
            ["questions[0].options[0].label: the label is 4 chars long; expected at most 3"]
        );
    }

    #[test]
    fn ids_must_be_url_safe() {
        for bad in ["a b/c", ".", ".."] {
            let r = Request { id: Some(bad.into()), ..req(vec![q("Pick", &["A"])]) };
            assert!(messages(r, &Limits::default())[0].starts_with("id: expected 1 to 128 characters"), "{bad:?}");
        }
        let r = Request { id: Some("v1.2..3".into()), ..req(vec![q("Pick", &["A", "B"])]) };
        assert!(validate(r, &Limits::default()).is_ok(), "dots inside an id are fine");
    }

    #[test]
    fn an_assignee_is_a_person_or_team_name() {
        let to = |assignee: &str| Request {
            agent: Some(crate::model::Agent { name: "bot".into(), assignee: Some(assignee.into()), ..Default::default() }),
            ..req(vec![q("Pick", &["A", "B"])])
        };
        for good in ["alice", "db-team", "bob@example.org", "on_call.1"] {
            assert!(validate(to(good), &Limits::default()).is_ok(), "{good:?}");
        }
        for bad in ["", "a b", "<script>", &"x".repeat(65), "al\u{0}ice"] {
            let m = messages(to(bad), &Limits::default());
            assert!(m[0].starts_with("agent.assignee: expected a person or team name"), "{bad:?}: {m:?}");
        }
        let read = crate::dialect::normalize(
            &serde_json::json!({"question": "Go?", "agent": {"name": "ci", "assignee": "db-team"}}),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(read.request.agent.unwrap().assignee.as_deref(), Some("db-team"), "read from every dialect's agent");
    }

    #[test]
    fn agent_fields_are_bounded_and_plain() {
        let with = |name: &str, session: &str| Request {
            agent: Some(crate::model::Agent {
                name: name.into(),
                session_id: Some(session.into()),
                parent_session_id: Some("p-1".into()),
                ..Default::default()
            }),
            ..req(vec![q("Pick", &["A", "B"])])
        };
        assert!(validate(with("claude-code", "3f2a-9c:1.x_y"), &Limits::default()).is_ok());
        for (name, session, path) in [
            ("x".repeat(101).as_str(), "s", "agent.name"),
            ("bot\u{0}name", "s", "agent.name"),
            ("bot", "-rf", "agent.sessionId"),
            ("bot", &"s".repeat(129), "agent.sessionId"),
            ("bot", "a b", "agent.sessionId"),
        ] {
            let m = messages(with(name, session), &Limits::default());
            assert!(m[0].starts_with(&format!("{path}: expected")), "{name:?} {session:?}: {m:?}");
        }
    }

    #[test]
    fn deep_or_huge_metadata_is_refused() {
        let mut nested = serde_json::json!(1);
        for _ in 0..40 {
            nested = serde_json::json!({ "a": nested });
        }
        let r = Request { metadata: nested.as_object().cloned(), ..req(vec![q("Pick", &["A"])]) };
        assert_eq!(messages(r, &Limits::default()), ["metadata: nests 40 levels deep; expected at most 32"]);
        let big = serde_json::json!({ "blob": "x".repeat(70_000) });
        let r = Request { metadata: big.as_object().cloned(), ..req(vec![q("Pick", &["A"])]) };
        assert!(messages(r, &Limits::default())[0].starts_with("metadata: is 70011 bytes of JSON; expected at most 65536"));
    }

    #[test]
    fn multi_select_without_options_is_ignored_with_a_warning() {
        let mut x = q("Name?", &[]);
        x.multi_select = true;
        let (r, w) = validate(req(vec![x]), &Limits::default()).unwrap();
        assert!(!r.questions[0].multi_select);
        assert_eq!(w[0].path, "questions[0].multiSelect");
    }
}
