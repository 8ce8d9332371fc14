//! Reads the shapes agents already speak into one canonical [`Request`].
//!
//! | dialect | shape |
//! |---|---|
//! | Claude Code AskUserQuestion | `{questions:[{question, header, options:[{label, description, preview?}], multiSelect}]}` (`multi_select` too) |
//! | pi `ask_user` | the same, with `options` optional and a top-level `metadata` |
//! | Opal | `{question, choices?: [string]}` |
//! | Roo Code | `{question, follow_up: [string \| {answer, mode?}]}` (or `suggest`) |
//!
//! Every dialect may also carry askuser's own top-level fields: `id`, `metadata`,
//! `agent`, `timeoutSeconds`. The shape is detected, not declared. Reading walks the
//! JSON by hand so that a wrong type is reported with its path like any other error,
//! and every error is reported, not only the first.

use crate::error::{describe, FieldError, Invalid};
use crate::model::{Agent, Choice, Question, Request};
use crate::validate::{apply_rules, Limits, Paths, QuestionPaths, Warning};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The shape a request was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `questions` with options on every question: Claude Code's AskUserQuestion (and askuser's canonical form).
    Claude,
    /// `questions` where some question has no options: pi's `ask_user`.
    Pi,
    Opal,
    Roo,
}

/// A request read and validated, with what was changed or ignored on the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalized {
    pub request: Request,
    pub warnings: Vec<Warning>,
    pub dialect: Dialect,
}

const SHAPES: &str = "expected a request: {\"questions\": [...]} (Claude Code AskUserQuestion, pi), \
{\"question\", \"choices\"?} (Opal) or {\"question\", \"follow_up\"|\"suggest\"} (Roo Code)";

/// Parses JSON text and normalizes it; a JSON syntax error names its line and column.
pub fn normalize_str(text: &str, limits: &Limits) -> Result<Normalized, Invalid> {
    let value: Value = serde_json::from_str(text).map_err(|e| Invalid::one("", format!("expected JSON: {e}")))?;
    normalize(&value, limits)
}

/// Reads a request in any dialect, applies every rule in `limits`, and returns the
/// canonical request with its warnings, or every error found.
pub fn normalize(input: &Value, limits: &Limits) -> Result<Normalized, Invalid> {
    let Some(obj) = input.as_object() else {
        return Err(Invalid::one("", format!("{SHAPES}; got {}", describe(input))));
    };
    let mut r = Reader::default();
    let (questions, paths, dialect, own_keys): (_, _, _, &[&str]) = if obj.contains_key("questions") {
        let (questions, paths) = r.questions(obj);
        if obj.contains_key("question") {
            r.error("question", "cannot be used together with `questions`; put every question in `questions`");
        }
        let dialect = if questions.iter().all(|q: &Question| !q.options.is_empty()) { Dialect::Claude } else { Dialect::Pi };
        (questions, paths, dialect, &["questions"])
    } else if obj.contains_key("question") {
        let list_key = ["follow_up", "suggest", "choices"].into_iter().find(|k| obj.contains_key(*k));
        let dialect = if matches!(list_key, Some("follow_up" | "suggest")) { Dialect::Roo } else { Dialect::Opal };
        let (question, paths) = r.single(obj, list_key);
        (vec![question], paths, dialect, &["question", "choices", "follow_up", "suggest", "header", "multiSelect", "multi_select"])
    } else {
        return Err(Invalid::one("", format!("{SHAPES}; got an object with keys {}", keys(obj))));
    };

    let request = Request {
        id: r.opt_string(obj, "id", "id"),
        metadata: r.metadata(obj),
        agent: r.agent(obj),
        timeout_seconds: r.opt_u64(obj, &["timeoutSeconds", "timeout_seconds"], "timeoutSeconds"),
        remind_after_seconds: r.opt_u64(obj, &["remindAfterSeconds", "remind_after_seconds"], "remindAfterSeconds"),
        default_after_seconds: r.opt_u64(obj, &["defaultAfterSeconds", "default_after_seconds"], "defaultAfterSeconds"),
        questions,
        approval: None,
        preview_docs: None,
    };
    r.unknown_keys(
        obj,
        "",
        &[
            own_keys,
            &[
                "id",
                "metadata",
                "agent",
                "timeoutSeconds",
                "timeout_seconds",
                "remindAfterSeconds",
                "remind_after_seconds",
                "defaultAfterSeconds",
                "default_after_seconds",
            ],
        ]
        .concat(),
    );

    let reported = r.errors.clone();
    let mut rule_errors = Vec::new();
    let request = apply_rules(request, &paths, limits, &mut rule_errors, &mut r.warnings);
    // A field the reader already refused was read as empty: don't report it twice.
    r.errors.extend(rule_errors.into_iter().filter(|e| !reported.iter().any(|seen| covers(&seen.path, &e.path))));
    if r.errors.is_empty() {
        Ok(Normalized { request, warnings: r.warnings, dialect })
    } else {
        Err(Invalid { errors: r.errors })
    }
}

fn covers(reported: &str, path: &str) -> bool {
    path == reported || path.starts_with(&format!("{reported}.")) || path.starts_with(&format!("{reported}["))
}

fn keys(obj: &Map<String, Value>) -> String {
    if obj.is_empty() {
        return "(none)".into();
    }
    obj.keys().take(8).map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
}

/// Walks JSON objects, collecting every error and warning with its path.
#[derive(Default)]
struct Reader {
    errors: Vec<FieldError>,
    warnings: Vec<Warning>,
}

impl Reader {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError::new(path, message));
    }

    fn wrong_type(&mut self, path: &str, expected: &str, got: &Value) {
        self.error(path, format!("expected {expected}, got {}", describe(got)));
    }

    /// The first of `names` present (null counts as absent), with the path it was found at.
    fn field<'a>(obj: &'a Map<String, Value>, names: &[&str], base: &str) -> Option<(&'a Value, String)> {
        names.iter().find_map(|n| obj.get(*n).filter(|v| !v.is_null()).map(|v| (v, join(base, n))))
    }

    fn string(&mut self, obj: &Map<String, Value>, name: &str, base: &str) -> String {
        match Self::field(obj, &[name], base) {
            Some((Value::String(s), _)) => s.clone(),
            Some((other, path)) => {
                self.wrong_type(&path, "a string", other);
                String::new()
            }
            None => {
                self.error(join(base, name), "is missing; expected a string");
                String::new()
            }
        }
    }

    fn opt_string(&mut self, obj: &Map<String, Value>, name: &str, path: &str) -> Option<String> {
        match Self::field(obj, &[name], "") {
            Some((Value::String(s), _)) => Some(s.clone()),
            Some((other, _)) => {
                self.wrong_type(path, "a string", other);
                None
            }
            None => None,
        }
    }

    fn opt_bool(&mut self, obj: &Map<String, Value>, names: &[&str], path: &str) -> bool {
        match Self::field(obj, names, "") {
            Some((Value::Bool(b), _)) => *b,
            Some((other, _)) => {
                self.wrong_type(path, "true or false", other);
                false
            }
            None => false,
        }
    }

    fn opt_u64(&mut self, obj: &Map<String, Value>, names: &[&str], path: &str) -> Option<u64> {
        match Self::field(obj, names, "") {
            Some((v @ Value::Number(n), _)) => n.as_u64().or_else(|| {
                self.wrong_type(path, "a whole number of seconds", v);
                None
            }),
            Some((other, _)) => {
                self.wrong_type(path, "a whole number of seconds", other);
                None
            }
            None => None,
        }
    }

    fn array<'a>(&mut self, v: &'a Value, path: &str, expected: &str) -> &'a [Value] {
        match v {
            Value::Array(items) => items,
            other => {
                self.wrong_type(path, expected, other);
                &[]
            }
        }
    }

    fn unknown_keys(&mut self, obj: &Map<String, Value>, base: &str, known: &[&str]) {
        for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            self.warnings.push(Warning::new(join(base, k), "unknown field; ignored"));
        }
    }

    fn metadata(&mut self, obj: &Map<String, Value>) -> Option<Map<String, Value>> {
        match Self::field(obj, &["metadata"], "") {
            Some((Value::Object(m), _)) => Some(m.clone()),
            Some((other, _)) => {
                self.wrong_type("metadata", "an object", other);
                None
            }
            None => None,
        }
    }

    fn agent(&mut self, obj: &Map<String, Value>) -> Option<Agent> {
        match Self::field(obj, &["agent"], "") {
            Some((Value::Object(a), _)) => {
                let agent = Agent {
                    name: self.string(a, "name", "agent"),
                    session_id: self
                        .opt_string(a, "sessionId", "agent.sessionId")
                        .or_else(|| self.opt_string(a, "session_id", "agent.session_id")),
                    parent_session_id: self
                        .opt_string(a, "parentSessionId", "agent.parentSessionId")
                        .or_else(|| self.opt_string(a, "parent_session_id", "agent.parent_session_id")),
                    assignee: self.opt_string(a, "assignee", "agent.assignee"),
                };
                self.unknown_keys(a, "agent", &["name", "sessionId", "session_id", "parentSessionId", "parent_session_id", "assignee"]);
                Some(agent)
            }
            Some((other, _)) => {
                self.wrong_type("agent", "an object {name, sessionId?, parentSessionId?, assignee?}", other);
                None
            }
            None => None,
        }
    }

    /// Claude Code / pi: `questions: [{question, header?, options?, multiSelect?}]`.
    fn questions(&mut self, obj: &Map<String, Value>) -> (Vec<Question>, Paths) {
        let mut paths = Paths { questions: "questions".into(), items: vec![] };
        let Some((v, _)) = Self::field(obj, &["questions"], "") else {
            self.error("questions", "is missing; expected an array of questions");
            return (vec![], paths);
        };
        let items = self.array(v, "questions", "an array of questions");
        let mut questions = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let base = format!("questions[{i}]");
            let Some(q) = item.as_object() else {
                self.wrong_type(&base, "a question object {question, header?, options?, multiSelect?}", item);
                continue;
            };
            let mut qp = QuestionPaths {
                text: format!("{base}.question"),
                header: format!("{base}.header"),
                multi_select: format!("{base}.multiSelect"),
                options: format!("{base}.options"),
                option: vec![],
            };
            let text = self.string(q, "question", &base);
            let header = self.opt_string(q, "header", &qp.header);
            let mut options = Vec::new();
            if let Some((ov, opath)) = Self::field(q, &["options"], &base) {
                for (j, o) in self.array(ov, &opath, "an array of options").iter().enumerate() {
                    let obase = format!("{opath}[{j}]");
                    if let Some(c) = self.option(o, &obase) {
                        options.push(c);
                        qp.option.push((obase.clone(), if o.is_string() { obase } else { format!("{obase}.label") }));
                    }
                }
            }
            questions.push(Question {
                question: text,
                header,
                options,
                multi_select: self.opt_bool(q, &["multiSelect", "multi_select"], &qp.multi_select),
            });
            self.unknown_keys(q, &base, &["question", "header", "options", "multiSelect", "multi_select"]);
            paths.items.push(qp);
        }
        (questions, paths)
    }

    /// An option: `{label, description?, preview?}`, or a bare string label.
    fn option(&mut self, v: &Value, path: &str) -> Option<Choice> {
        match v {
            Value::String(s) => Some(Choice::new(s.clone())),
            Value::Object(o) => {
                let mut preview = self.opt_string(o, "preview", &join(path, "preview"));
                // Claude Code's older name for the preview.
                if o.contains_key("markdown") {
                    let markdown = self.opt_string(o, "markdown", &join(path, "markdown"));
                    if preview.is_none() {
                        self.warnings.push(Warning::new(join(path, "markdown"), "is the older name of `preview`; read as `preview`"));
                        preview = markdown;
                    } else {
                        self.warnings.push(Warning::new(join(path, "markdown"), "ignored: `preview` is given too"));
                    }
                }
                let choice = Choice {
                    label: self.string(o, "label", path),
                    description: self.opt_string(o, "description", &join(path, "description")),
                    preview,
                };
                self.unknown_keys(o, path, &["label", "description", "preview", "markdown"]);
                Some(choice)
            }
            other => {
                self.wrong_type(path, "an option {label, description?} or a string", other);
                None
            }
        }
    }

    /// Opal `{question, choices?}` and Roo `{question, follow_up|suggest}`.
    fn single(&mut self, obj: &Map<String, Value>, list_key: Option<&str>) -> (Question, Paths) {
        let mut qp = QuestionPaths {
            text: "question".into(),
            header: "header".into(),
            multi_select: "multiSelect".into(),
            options: list_key.unwrap_or("choices").into(),
            option: vec![],
        };
        let text = self.string(obj, "question", "");
        let mut options = Vec::new();
        if let Some(key) = list_key {
            if let Some((v, _)) = Self::field(obj, &[key], "") {
                for (j, item) in self.array(v, key, "an array of strings").iter().enumerate() {
                    let path = format!("{key}[{j}]");
                    if let Some(c) = self.suggestion(item, &path, key == "choices") {
                        qp.option.push((path.clone(), if item.is_string() { path } else { format!("{path}.answer") }));
                        options.push(c);
                    }
                }
            }
        }
        let question = Question {
            question: text,
            header: self.opt_string(obj, "header", "header"),
            options,
            multi_select: self.opt_bool(obj, &["multiSelect", "multi_select"], "multiSelect"),
        };
        (question, Paths { questions: "question".into(), items: vec![qp] })
    }

    /// An Opal choice (a string) or a Roo suggestion (a string or `{answer, mode?}`).
    fn suggestion(&mut self, v: &Value, path: &str, strings_only: bool) -> Option<Choice> {
        match v {
            Value::String(s) => Some(Choice::new(s.clone())),
            Value::Object(o) if !strings_only => {
                let label = self.string(o, "answer", path);
                let mode = self.opt_string(o, "mode", &join(path, "mode"));
                self.unknown_keys(o, path, &["answer", "mode"]);
                Some(Choice { label, description: mode.map(|m| format!("Switches to {m} mode")), preview: None })
            }
            other => {
                self.wrong_type(path, if strings_only { "a string" } else { "a string or {answer, mode?}" }, other);
                None
            }
        }
    }
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_owned()
    } else {
        format!("{base}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(v: Value) -> Normalized {
        normalize(&v, &Limits::default()).unwrap()
    }

    fn errs(v: Value) -> Vec<String> {
        normalize(&v, &Limits::default()).unwrap_err().errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn markdown_is_read_as_preview_with_a_warning() {
        let n = ok(json!({"questions": [{"question": "Layout?", "options": [{"label": "A", "markdown": "# A"}, {"label": "B"}]}]}));
        assert_eq!(n.request.questions[0].options[0].preview.as_deref(), Some("# A"));
        assert_eq!(n.warnings[0].to_string(), "questions[0].options[0].markdown: is the older name of `preview`; read as `preview`");
    }

    #[test]
    fn questions_and_question_together_is_an_error() {
        let e = errs(json!({"questions": [{"question": "A?"}], "question": "B?"}));
        assert_eq!(e, ["question: cannot be used together with `questions`; put every question in `questions`"]);
    }

    #[test]
    fn claude_code_shape() {
        let n = ok(json!({"questions": [{
            "question": "Which approach?", "header": "Approach", "multi_select": true,
            "options": [{"label": "A", "description": "Fast"}, {"label": "B", "description": "Simple", "preview": "<b>b</b>"}]
        }]}));
        assert_eq!(n.dialect, Dialect::Claude);
        let q = &n.request.questions[0];
        assert!(q.multi_select);
        assert_eq!(q.options[1].preview.as_deref(), Some("<b>b</b>"));
        assert!(n.warnings.is_empty());
    }

    #[test]
    fn pi_shape_with_free_text_and_metadata() {
        let n = ok(json!({"questions": [
            {"question": "Which database should we use?", "header": "Database", "options": [{"label": "PostgreSQL (Recommended)"}]},
            {"question": "What should we name this service?"}
        ], "metadata": {"source": "project-setup"}}));
        assert_eq!(n.dialect, Dialect::Pi);
        assert!(n.request.questions[1].is_free_text());
        assert_eq!(n.request.metadata.unwrap()["source"], "project-setup");
    }

    #[test]
    fn opal_shape() {
        let n = ok(json!({"question": "Proceed?", "choices": ["Yes", "No"]}));
        assert_eq!(n.dialect, Dialect::Opal);
        assert_eq!(n.request.questions[0].options.len(), 2);
        let n = ok(json!({"question": "Your name?"}));
        assert_eq!(n.dialect, Dialect::Opal);
        assert!(n.request.questions[0].is_free_text());
    }

    #[test]
    fn roo_shapes() {
        let n = ok(json!({"question": "Where?", "follow_up": ["./src", "./lib"]}));
        assert_eq!(n.dialect, Dialect::Roo);
        let n = ok(json!({"question": "Next?", "suggest": ["Stop", {"answer": "Write tests", "mode": "code"}]}));
        assert_eq!(n.request.questions[0].options[1].label, "Write tests");
        assert_eq!(n.request.questions[0].options[1].description.as_deref(), Some("Switches to code mode"));
    }

    #[test]
    fn own_fields_in_any_dialect() {
        let n = ok(json!({"question": "Q?", "id": "run-1", "timeoutSeconds": 60,
            "agent": {"name": "claude", "sessionId": "s1", "parentSessionId": "p0"}}));
        assert_eq!(n.request.id.as_deref(), Some("run-1"));
        assert_eq!(n.request.timeout_seconds, Some(60));
        assert_eq!(n.request.agent.unwrap().parent_session_id.as_deref(), Some("p0"));
    }

    #[test]
    fn reminders_and_a_default_in_any_dialect_each_error_naming_its_field() {
        let n = ok(json!({"question": "Q?", "remindAfterSeconds": 600, "default_after_seconds": 1800}));
        assert_eq!((n.request.remind_after_seconds, n.request.default_after_seconds), (Some(600), Some(1800)));
        let e = errs(json!({"question": "Q?", "remindAfterSeconds": "10m", "defaultAfterSeconds": 0}));
        assert_eq!(
            e,
            [
                "remindAfterSeconds: expected a whole number of seconds, got the string \"10m\"",
                "defaultAfterSeconds: expected at least 1 second, got 0",
            ]
        );
        let e = errs(json!({"question": "Q?", "remindAfterSeconds": 9_000_000}));
        assert_eq!(e, ["remindAfterSeconds: expected at most 30 days (2592000 seconds), got 9000000 seconds"]);
    }

    #[test]
    fn unknown_shape_names_the_accepted_ones() {
        let e = errs(json!({"prompt": "hi"}));
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("Claude Code AskUserQuestion") && e[0].contains("Opal") && e[0].contains("Roo Code"));
        assert!(e[0].ends_with("got an object with keys \"prompt\""));
        assert!(errs(json!([1, 2]))[0].ends_with("got an array of 2 items"));
    }

    #[test]
    fn wrong_types_are_reported_once_each_with_paths() {
        let e = errs(json!({"questions": [
            {"question": 7, "options": [{"label": ""}, 3, {"label": "B", "description": false}]},
            "nope",
            {"question": "ok", "multiSelect": "yes", "options": "A,B"}
        ], "metadata": [], "timeoutSeconds": -1}));
        assert_eq!(
            e,
            [
                "questions[0].question: expected a string, got the number 7",
                "questions[0].options[1]: expected an option {label, description?} or a string, got the number 3",
                "questions[0].options[2].description: expected a string, got the boolean false",
                "questions[1]: expected a question object {question, header?, options?, multiSelect?}, got the string \"nope\"",
                "questions[2].options: expected an array of options, got the string \"A,B\"",
                "questions[2].multiSelect: expected true or false, got the string \"yes\"",
                "metadata: expected an object, got an array of 0 items",
                "timeoutSeconds: expected a whole number of seconds, got the number -1",
                "questions[0].options[0].label: must not be empty",
            ]
        );
    }

    #[test]
    fn opal_errors_name_opal_fields() {
        let e = errs(json!({"question": "", "choices": ["A", "a", 5]}));
        assert_eq!(
            e,
            [
                "choices[2]: expected a string, got the number 5",
                "question: must not be empty",
                "choices[1]: repeats the label \"a\" (labels are compared ignoring case); expected each option to be different",
            ]
        );
    }

    #[test]
    fn unknown_fields_warn() {
        let n = ok(json!({"questions": [{"question": "Q", "mutliSelect": true}], "extra": 1}));
        let w: Vec<_> = n.warnings.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(w, ["questions[0].mutliSelect", "extra"]);
    }

    #[test]
    fn json_syntax_errors_name_the_line() {
        let e = normalize_str("{\"questions\": [", &Limits::default()).unwrap_err();
        assert!(e.to_string().starts_with("expected JSON: EOF while parsing a list at line 1 column 15"), "{e}");
    }
}
