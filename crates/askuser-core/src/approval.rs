//! Approvals: an agent asks leave to use a tool (run a command, edit a file), and a
//! person allows it once, allows it always (a [`Rule`]), or denies it with a word to
//! the model.
//!
//! An approval travels as a question like any other, so every front end, store and
//! notification shows it without knowing more: [`Approval::request`] makes the one
//! question (what will happen, as a command or a diff, and the choices [`ALLOW`],
//! [`ALWAYS`], [`ALWAYS_EXACTLY`] where the rule is a prefix, [`DENY`]; the free-text
//! row denies with the text as the message), and carries the approval in
//! [`Request::approval`]. [`Approval::decide`] reads the result back as a [`Decision`],
//! in each host's shape ([`Decision::claude`]), and [`Approval::kept`] the rule the
//! person chose, only as the question named it.
//!
//! Claude Code also sends its own `AskUserQuestion` through the permission prompt tool
//! when it runs headless: that approval is asked as its questions
//! ([`Approval::request`]), and allowed with the person's answers in its input.

use crate::answer::{AskResult, Selection, Status};
use crate::error::{describe, Invalid};
pub use crate::model::Approval;
use crate::model::{Agent, Choice, Question, Request};
use crate::validate::Limits;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The option that allows the call this once.
pub const ALLOW: &str = "Allow";
/// The option that allows it and keeps the suggested rule.
pub const ALWAYS: &str = "Always allow";
/// Where the suggested rule is a prefix (`Bash(git status:*)`), the option that allows
/// it and keeps the exact command instead (`Bash(git status --short)`).
pub const ALWAYS_EXACTLY: &str = "Always allow exactly";
/// The option that denies it.
pub const DENY: &str = "Deny";

/// Claude Code's own question tool, which reaches a permission prompt tool headless.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// The tools whose calls change files; an `Edit` rule covers them all (as in Claude Code).
const EDITS: [&str; 4] = ["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Where a rule applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// Every agent, everywhere.
    #[default]
    Everywhere,
    /// Agents working in this folder or below it.
    Project(String),
    /// One agent session.
    Session(String),
    /// Agents of this name (`Claude Code`).
    Agent(String),
}

/// A standing "yes": calls of `tool` that `pattern` matches, in `scope`, are allowed
/// without asking.
///
/// Patterns are Claude Code's: for `Bash`, `npm test:*` (the command or that prefix
/// followed by arguments) or an exact command; for file tools, a path relative to the
/// project (`src/main.rs`) or a folder (`src/**`); for `WebFetch`, `domain:HOST`. No
/// pattern: every call of the tool. A command that chains, redirects, substitutes or
/// expands (`&&`, `|`, `;`, `>`, `<(`, `` ` ``, `$`, a newline) matches only an exact
/// rule, and so does one with an option that runs a program (`--config`, `-exec`).
/// Paths and folders are compared clean: one with `..` is under no folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default)]
    pub scope: Scope,
}

/// The answer to an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "camelCase")]
pub enum Decision {
    /// Run it, with this input (the agent's, or with the person's answers for
    /// `AskUserQuestion`); `always`: the person also kept a rule.
    Allow {
        #[serde(rename = "updatedInput")]
        input: Map<String, Value>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        always: bool,
    },
    /// Do not run it; the model reads `message`.
    Deny { message: String },
}

impl Decision {
    /// The permission prompt tool's result, as Claude Code reads it:
    /// `{"behavior":"allow","updatedInput":{…}}` or `{"behavior":"deny","message":"…"}`.
    pub fn claude(&self) -> Value {
        match self {
            Decision::Allow { input, .. } => serde_json::json!({"behavior": "allow", "updatedInput": input}),
            Decision::Deny { message } => serde_json::json!({"behavior": "deny", "message": message}),
        }
    }

    /// `allow`, `always` or `deny`: how the audit log names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Allow { always: false, .. } => "allow",
            Decision::Allow { always: true, .. } => "always",
            Decision::Deny { .. } => "deny",
        }
    }
}

/// Lines of a new file shown before "… N more lines".
const WRITE_HEAD: usize = 20;

/// The most work (old lines × new lines) an edit's diff does line by line.
const DIFF_CELLS: usize = 250_000;

/// What an approval will do, as front ends show it. JSON: `{"kind":"command",
/// "command":"cargo test","cwd":"/srv/app"}`, `{"kind":"diff","file":"src/lib.rs",
/// "lines":[{"change":"removed","text":"a"},{"change":"added","text":"b"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Shown {
    /// A shell command, run in `cwd`.
    Command {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// An edit of `file` (relative to the project when inside it).
    Diff { file: String, lines: Vec<Line> },
    /// A new or replaced file: its first lines, of `total`.
    Write { file: String, head: Vec<String>, total: usize },
    /// A page fetched.
    Fetch { url: String },
    /// Any other tool: its arguments, name and value (strings as they are, the rest as JSON).
    Call { args: Vec<(String, String)> },
}

impl Shown {
    /// What it will do as one block of plain text, for a front end that shows it as code
    /// (a chat message): the command, the diff as a unified diff writes it, a new file's
    /// first lines and how many more, the arguments one per line; `None` for a fetch (the
    /// title names its URL).
    pub fn as_text(&self) -> Option<String> {
        match self {
            Shown::Command { command, .. } => Some(command.clone()),
            Shown::Diff { lines, .. } => Some(lines.iter().map(Line::marked).collect::<Vec<_>>().join("\n")),
            Shown::Write { head, total, .. } => {
                let more = total.saturating_sub(head.len());
                let tail = if more > 0 { format!("\n… {more} more lines") } else { String::new() };
                Some(format!("{}{tail}", head.join("\n")))
            }
            Shown::Fetch { .. } => None,
            Shown::Call { args } => Some(args.iter().map(|(name, value)| format!("{name}: {value}")).collect::<Vec<_>>().join("\n")),
        }
    }
}

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub change: Change,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    Same,
    Added,
    Removed,
    /// Between two edits of one file.
    Gap,
}

impl Line {
    /// The line as a unified diff writes it: `+ added`, `- removed`, `  same`, `…`.
    pub fn marked(&self) -> String {
        match self.change {
            Change::Same => format!("  {}", self.text),
            Change::Added => format!("+ {}", self.text),
            Change::Removed => format!("- {}", self.text),
            Change::Gap => "…".to_owned(),
        }
    }

    /// What a screen reader says before the line: "added", "removed" or nothing.
    pub fn spoken(&self) -> Option<&'static str> {
        match self.change {
            Change::Added => Some("added"),
            Change::Removed => Some("removed"),
            Change::Same | Change::Gap => None,
        }
    }
}

/// An approval as the dialog shows it: which tool, what it asks ("Run this command in
/// /srv/app?"), what will happen, and the agent's reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    pub tool: String,
    pub title: String,
    pub shown: Shown,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Approval {
    /// Reads Claude Code's permission prompt call, `{tool_name, input, tool_use_id}`;
    /// every problem named by its field.
    pub fn from_claude(args: &Value) -> Result<Approval, Invalid> {
        let Some(obj) = args.as_object() else {
            return Err(Invalid::one("", format!("expected {{\"tool_name\", \"input\", \"tool_use_id\"}}, got {}", describe(args))));
        };
        let mut errors = Vec::new();
        let tool = match obj.get("tool_name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(other) => {
                errors.push(crate::FieldError::new("tool_name", format!("expected the tool's name, got {}", describe(other))));
                String::new()
            }
            None => {
                errors.push(crate::FieldError::new("tool_name", "is missing; expected the tool's name"));
                String::new()
            }
        };
        let input = match obj.get("input") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(other) => {
                errors
                    .push(crate::FieldError::new("input", format!("expected the tool's arguments as an object, got {}", describe(other))));
                Map::new()
            }
        };
        let tool_use_id = match obj.get("tool_use_id") {
            Some(Value::String(s)) => Some(s.clone()),
            None | Some(Value::Null) => None,
            Some(other) => {
                errors.push(crate::FieldError::new("tool_use_id", format!("expected a string, got {}", describe(other))));
                None
            }
        };
        if !errors.is_empty() {
            return Err(Invalid { errors });
        }
        let reason = input.get("description").and_then(Value::as_str).map(str::to_owned);
        Ok(Approval { tool, input, reason, cwd: None, tool_use_id })
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.input.get(key).and_then(Value::as_str)
    }

    /// The file a file tool works on, relative to the project when it is inside it.
    fn file(&self) -> Option<String> {
        let path = self.text("file_path").or_else(|| self.text("notebook_path")).or_else(|| self.text("path"))?;
        let relative = self.cwd.as_deref().and_then(|cwd| path.strip_prefix(cwd.trim_end_matches('/')).and_then(|p| p.strip_prefix('/')));
        Some(relative.unwrap_or(path).to_owned())
    }

    /// The file a file tool works on, absolute and clean ([`clean`]): a relative path
    /// against the agent's folder; `None` without a file, or with `..` in the way.
    fn path(&self) -> Option<String> {
        let path = self.text("file_path").or_else(|| self.text("notebook_path")).or_else(|| self.text("path"))?;
        match path.starts_with('/') {
            true => clean(path),
            false => clean(&format!("{}/{path}", self.cwd.as_deref()?)),
        }
    }

    /// What it would do, in one line (`rm -rf build`, `src/main.rs`): for lists, the
    /// audit log and notifications.
    pub fn summary(&self) -> String {
        let line = match self.tool.as_str() {
            "Bash" => self.text("command").map(str::to_owned),
            t if EDITS.contains(&t) => self.file(),
            "WebFetch" => self.text("url").map(str::to_owned),
            _ => None,
        };
        let line = line.unwrap_or_else(|| Value::Object(self.input.clone()).to_string());
        cut(&crate::text::visible(line.lines().next().unwrap_or_default()), 120)
    }

    /// What will happen, as a front end shows it: a command, a diff, a new file's head,
    /// a URL, or the arguments one per line (never the JSON); every character that would
    /// hide or reorder part of it shown as an escape ([`crate::text::visible`]).
    pub fn shown(&self) -> Shown {
        let mut shown = self.shown_raw();
        let show = |text: &mut String| {
            if let std::borrow::Cow::Owned(seen) = crate::text::visible(text) {
                *text = seen;
            }
        };
        match &mut shown {
            Shown::Command { command, cwd } => {
                show(command);
                cwd.iter_mut().for_each(show);
            }
            Shown::Diff { file, lines } => {
                show(file);
                lines.iter_mut().for_each(|l| show(&mut l.text));
            }
            Shown::Write { file, head, .. } => {
                show(file);
                head.iter_mut().for_each(show);
            }
            Shown::Fetch { url } => show(url),
            Shown::Call { args } => args.iter_mut().for_each(|(name, value)| {
                show(name);
                show(value);
            }),
        }
        shown
    }

    fn shown_raw(&self) -> Shown {
        match self.tool.as_str() {
            "Bash" => Shown::Command { command: self.text("command").unwrap_or_default().to_owned(), cwd: self.cwd.clone() },
            "Edit" | "MultiEdit" => {
                let pairs: Vec<(&str, &str)> = match self.input.get("edits").and_then(Value::as_array) {
                    Some(edits) => edits
                        .iter()
                        .map(|e| (e["old_string"].as_str().unwrap_or_default(), e["new_string"].as_str().unwrap_or_default()))
                        .collect(),
                    None => vec![(self.text("old_string").unwrap_or_default(), self.text("new_string").unwrap_or_default())],
                };
                let mut lines = Vec::new();
                for (i, (old, new)) in pairs.iter().enumerate() {
                    if i > 0 {
                        lines.push(Line { change: Change::Gap, text: String::new() });
                    }
                    lines.extend(diff(old, new));
                }
                Shown::Diff { file: self.file().unwrap_or_default(), lines }
            }
            "Write" => {
                let content = self.text("content").unwrap_or_default();
                let head = content.lines().take(WRITE_HEAD).map(str::to_owned).collect();
                Shown::Write { file: self.file().unwrap_or_default(), head, total: content.lines().count() }
            }
            "WebFetch" => Shown::Fetch { url: self.text("url").unwrap_or_default().to_owned() },
            _ => Shown::Call {
                args: self
                    .input
                    .iter()
                    .map(|(name, value)| {
                        let value = match value {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (name.clone(), value)
                    })
                    .collect(),
            },
        }
    }

    /// The line above what is shown: "Run this command in /srv/app?", "Edit src/main.rs?".
    pub fn title(&self) -> String {
        self.title_of(&self.shown())
    }

    /// [`Approval::title`] of what [`Approval::shown`] gave (a diff is made once).
    fn title_of(&self, shown: &Shown) -> String {
        match shown {
            Shown::Command { cwd, .. } => format!("Run this command{}?", cwd.as_ref().map(|c| format!(" in {c}")).unwrap_or_default()),
            Shown::Diff { file, .. } => format!("Edit {file}?"),
            Shown::Write { file, total, .. } => format!("Write {file} ({total} lines)?"),
            Shown::Fetch { url } => format!("Fetch {url}?"),
            Shown::Call { .. } => format!("Use {}?", self.tool),
        }
    }

    /// Whether it asks leave to use a tool, rather than being Claude Code's own
    /// `AskUserQuestion` (which is asked as its questions).
    pub fn is_permission(&self) -> bool {
        self.tool != ASK_USER_QUESTION
    }

    /// What a front end shows of it ([`Approval::title`], [`Approval::shown`], the reason),
    /// or `None` for `AskUserQuestion`, which is shown as its questions.
    pub fn view(&self) -> Option<ApprovalView> {
        self.is_permission().then(|| {
            let shown = self.shown();
            ApprovalView {
                tool: self.tool.clone(),
                title: self.title_of(&shown),
                shown,
                reason: self.reason.clone().filter(|r| !r.trim().is_empty()),
            }
        })
    }

    /// [`Approval::title`] and [`Approval::shown`] as markdown, for front ends that show
    /// only the question's text (notifications, the embed package's plain hosts).
    fn details(&self) -> String {
        let fence = |body: &str| format!("```\n{}\n```", body.trim_end_matches('\n'));
        let shown = self.shown();
        let title = self.title_of(&shown);
        match shown {
            Shown::Command { command, .. } => format!("{title}\n\n{}", fence(&command)),
            Shown::Diff { lines, .. } => {
                let lines: Vec<String> = lines.iter().map(Line::marked).collect();
                format!("{title}\n\n{}", fence(&lines.join("\n")))
            }
            Shown::Write { head, total, .. } => {
                let more = if total > head.len() { format!("\n… {} more lines", total - head.len()) } else { String::new() };
                format!("{title}\n\n{}{more}", fence(&head.join("\n")))
            }
            Shown::Fetch { .. } => title,
            Shown::Call { args } => {
                let args: Vec<String> = args.iter().map(|(name, value)| format!("{name}: {value}")).collect();
                format!("{title}\n\n{}", fence(&args.join("\n")))
            }
        }
    }

    /// The question a person answers: what will happen and why, with [`ALLOW`],
    /// [`ALWAYS`] (naming `rule`, [`Approval::suggest`]'s, whole: the rule is what the
    /// person sees; none: it says no rule is kept), [`ALWAYS_EXACTLY`] where `rule` is a
    /// prefix (naming the exact command's rule, [`Rule::exactly`]) and [`DENY`]; for `AskUserQuestion`,
    /// its own questions. `id` and `agent` are the ask's; the approval rides along in
    /// `approval`.
    pub fn request(&self, rule: &Option<Rule>, limits: &Limits) -> Result<Request, Invalid> {
        if self.tool == ASK_USER_QUESTION {
            let mut request = crate::normalize(&Value::Object(self.input.clone()), limits)?.request;
            request.approval = Some(self.clone());
            return Ok(request);
        }
        let mut question = self.details();
        if let Some(reason) = self.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            question = format!("{question}\n\nWhy: {reason}");
        }
        let question = cut(&question, limits.max_question_chars);
        let mut options = vec![
            Choice { label: ALLOW.into(), description: Some("Only this time".into()), preview: None },
            Choice { label: ALWAYS.into(), description: Some(always(rule.as_ref(), limits)), preview: None },
        ];
        if let Some(exact) = rule.as_ref().and_then(|r| r.exactly(self)) {
            options.push(Choice { label: ALWAYS_EXACTLY.into(), description: Some(always(Some(&exact), limits)), preview: None });
        }
        options.push(Choice {
            label: DENY.into(),
            description: Some("Do not run it (or type below what to do instead)".into()),
            preview: None,
        });
        let header = Some(cut(&self.tool, limits.max_header_chars));
        let question = Question { question, header, options, multi_select: false };
        Ok(Request { questions: vec![question], approval: Some(self.clone()), ..Request::default() })
    }

    /// The person's answer as a decision. An answer in the free-text row denies, with
    /// the text for the model; no answer (declined, timed out, withdrawn) denies.
    pub fn decide(&self, result: &AskResult) -> Decision {
        if result.status != Status::Answered {
            let why = result.no_answer_sentence().unwrap_or_else(|| "The user did not answer.".into());
            let message = match (self.tool == ASK_USER_QUESTION, &result.reason) {
                (true, _) => why,
                (false, Some(reason)) => format!("The user did not allow {} ({reason}: denied). Do not run it.", self.tool),
                (false, None) => format!("The user did not allow {} (no answer: {}). Do not run it.", self.tool, result.status.as_str()),
            };
            return Decision::Deny { message };
        }
        if self.tool == ASK_USER_QUESTION {
            let mut input = self.input.clone();
            let answers: Map<String, Value> =
                result.answers.iter().map(|a| (a.question.clone(), Value::String(a.answer.joined()))).collect();
            let annotations: Map<String, Value> = result
                .answers
                .iter()
                .filter(|a| a.notes.is_some() || a.preview.is_some())
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
            input.insert("answers".into(), Value::Object(answers));
            if !annotations.is_empty() {
                input.insert("annotations".into(), Value::Object(annotations));
            }
            return Decision::Allow { input, always: false };
        }
        let Some(answer) = result.answers.first() else {
            return Decision::Deny { message: format!("The user did not allow {}. Do not run it.", self.tool) };
        };
        let notes = answer.notes.as_deref().map(|n| format!(" They said: {n}")).unwrap_or_default();
        match answer.selected_options.first().map(String::as_str) {
            Some(ALLOW) => Decision::Allow { input: self.input.clone(), always: false },
            Some(ALWAYS | ALWAYS_EXACTLY) => Decision::Allow { input: self.input.clone(), always: true },
            Some(_) => Decision::Deny { message: format!("The user denied this {} call.{notes} Do not run it.", self.tool) },
            None => {
                let said = answer.custom.as_deref().unwrap_or_default();
                Decision::Deny { message: format!("The user denied this {} call and said: {said}{notes}", self.tool) }
            }
        }
    }

    /// The rule the person chose to keep in answering `asked` (this approval's question,
    /// as stored) with `result`: [`ALWAYS`]'s ([`Approval::suggest`]) or
    /// [`ALWAYS_EXACTLY`]'s ([`Rule::exactly`]), and only when the question named that
    /// very rule, as it would name it now: a question an older version asked (whose
    /// "Always allow" named `Bash(rm:*)`), an option it did not offer, or any other
    /// answer keeps none. `agent` and `limits` are those it was asked with.
    pub fn kept(&self, asked: &Request, result: &AskResult, agent: Option<&Agent>, limits: &Limits) -> Option<Rule> {
        if result.status != Status::Answered || !self.is_permission() {
            return None;
        }
        let label = result.answers.first()?.selected_options.first()?.as_str();
        let suggested = self.suggest(agent);
        let rule = match label {
            ALWAYS => suggested.clone()?,
            ALWAYS_EXACTLY => suggested.as_ref()?.exactly(self)?,
            _ => return None,
        };
        let named = |request: &Request| {
            let [question] = request.questions.as_slice() else { return None };
            question.options.iter().find(|o| o.label == label).map(|o| o.description.clone())
        };
        let now = self.request(&suggested, limits).ok()?;
        (named(asked)? == named(&now)?).then_some(rule)
    }

    /// The rule an "always" keeps, never allowing more than the person saw: for `Bash`
    /// the exact command, or `prog sub:*` where `prog` is a program whose second word is
    /// a subcommand and that subcommand runs nothing named in its arguments
    /// (`cargo test:*`, `git status:*`; never `rm:*`, `bash:*`, `npm exec:*`, `git -C:*`);
    /// for file tools the file (`Edit(src/main.rs)`); for `WebFetch` the host a URL
    /// parser agrees on (`domain:docs.rs`); any other tool as a whole (`mcp__db__query`:
    /// the person is told "any call"). Kept in the project when the agent's folder is
    /// known, else its session; `None` when neither is known (a rule for every agent
    /// everywhere is never kept) or nothing narrow can be said (an unreadable URL).
    pub fn suggest(&self, agent: Option<&Agent>) -> Option<Rule> {
        let pattern = match self.tool.as_str() {
            "Bash" => Some(command_pattern(self.text("command")?.trim())?),
            t if EDITS.contains(&t) => {
                let (path, cwd) = (self.path()?, self.cwd.as_deref().and_then(clean));
                let inside = cwd.as_deref().and_then(|cwd| path.strip_prefix(cwd)?.strip_prefix('/').map(str::to_owned));
                Some(inside.unwrap_or(path))
            }
            "WebFetch" => Some(format!("domain:{}", host(self.text("url")?)?)),
            ASK_USER_QUESTION => return None,
            _ => None,
        };
        let tool = if EDITS.contains(&self.tool.as_str()) { "Edit".to_owned() } else { self.tool.clone() };
        let scope = match (self.cwd.as_deref().and_then(clean), agent.and_then(|a| a.session_id.as_deref())) {
            (Some(cwd), _) => Scope::Project(cwd),
            (None, Some(session)) => Scope::Session(session.to_owned()),
            (None, None) => return None,
        };
        Some(Rule { tool, pattern, scope })
    }
}

impl Rule {
    /// For a prefix rule of `approval`'s command (`Bash(git status:*)`), the rule that
    /// keeps that command exactly, in the same scope (`Bash(git status --short)`): what
    /// [`ALWAYS_EXACTLY`] keeps. `None` for any other rule (already exact, or nothing
    /// narrower to say).
    pub fn exactly(&self, approval: &Approval) -> Option<Rule> {
        let command = approval.text("command")?.trim();
        let prefix = self.pattern.as_deref()?.strip_suffix(":*")?;
        // A command ending in `:*` would read as a prefix: it has no exact rule.
        let narrower = self.tool == "Bash" && approval.tool == "Bash" && !command.ends_with(":*") && prefix_allows(prefix, command);
        narrower.then(|| Rule { pattern: Some(command.to_owned()), ..self.clone() })
    }

    /// What this rule allows beyond anything "Always allow" keeps now, for a person to
    /// review (an earlier version kept `Bash(rm:*)` from `rm -rf build`): "any command
    /// that begins `rm`", "every file below src", "for every agent everywhere", joined
    /// with "; ". `None` when one answer could keep it today (an exact command, an
    /// allowlisted `prog sub:*`, a file, a domain, a whole tool other than these).
    pub fn wider(&self) -> Option<String> {
        let mut said = Vec::new();
        let edits = EDITS.contains(&self.tool.as_str());
        match (self.tool.as_str(), self.pattern.as_deref()) {
            ("Bash", None) => said.push("every command".to_owned()),
            ("Bash", Some(p)) => {
                if let Some(prefix) = p.strip_suffix(":*") {
                    let mut words = prefix.split(' ');
                    let kept = match (words.next(), words.next(), words.next()) {
                        (Some(program), Some(sub), None) => {
                            SUBCOMMANDS.iter().any(|(p, refused)| *p == program && is_subcommand(sub) && !refused.contains(&sub))
                        }
                        _ => false,
                    };
                    if !kept {
                        said.push(format!("any command that begins `{}`", crate::text::visible(prefix)));
                    }
                }
            }
            (_, None) if edits => said.push("every file".to_owned()),
            (_, Some(p)) if edits && p.ends_with("**") => {
                said.push(format!("every file below {}", crate::text::visible(p.trim_end_matches('*').trim_end_matches('/'))))
            }
            ("WebFetch", None) => said.push("every fetch".to_owned()),
            _ => {}
        }
        match &self.scope {
            Scope::Everywhere => said.push("for every agent everywhere".to_owned()),
            Scope::Agent(name) => said.push(format!("for every agent named {}, everywhere", crate::text::visible(name))),
            Scope::Project(_) | Scope::Session(_) => {}
        }
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Whether this rule allows `approval`, asked by `agent`. `AskUserQuestion` is never
    /// allowed by a rule: it is a question for the person.
    pub fn matches(&self, approval: &Approval, agent: Option<&Agent>) -> bool {
        if approval.tool == ASK_USER_QUESTION {
            return false;
        }
        let tool_fits = self.tool == approval.tool || (self.tool == "Edit" && EDITS.contains(&approval.tool.as_str()));
        if !tool_fits || !self.in_scope(approval, agent) {
            return false;
        }
        let Some(pattern) = self.pattern.as_deref() else { return true };
        match approval.tool.as_str() {
            "Bash" => {
                let command = approval.text("command").unwrap_or_default().trim();
                match pattern.strip_suffix(":*") {
                    Some(prefix) => prefix_allows(prefix, command),
                    None => command == pattern,
                }
            }
            // Paths compared whole and clean: a relative pattern is the project's (else
            // the agent folder's); `dir/**` is what is below `dir`.
            t if EDITS.contains(&t) => {
                let Some(file) = approval.path() else { return false };
                let base = match &self.scope {
                    Scope::Project(dir) => clean(dir),
                    _ => approval.cwd.as_deref().and_then(clean),
                };
                let (pattern, tree) = match pattern.strip_suffix("**") {
                    Some(dir) => (dir.trim_end_matches('/'), true),
                    None => (pattern, false),
                };
                let wanted = match (pattern.starts_with('/'), base) {
                    (true, _) => clean(pattern),
                    (false, Some(base)) => clean(&format!("{base}/{pattern}")),
                    (false, None) => None,
                };
                wanted.is_some_and(|wanted| if tree { file != wanted && within(&file, &wanted) } else { file == wanted })
            }
            "WebFetch" => {
                let wanted = pattern.strip_prefix("domain:");
                wanted.is_some_and(|w| approval.text("url").and_then(host).is_some_and(|h| h.eq_ignore_ascii_case(w)))
            }
            _ => false,
        }
    }

    fn in_scope(&self, approval: &Approval, agent: Option<&Agent>) -> bool {
        match &self.scope {
            Scope::Everywhere => true,
            Scope::Project(dir) => match (approval.cwd.as_deref().and_then(clean), clean(dir)) {
                (Some(cwd), Some(dir)) => within(&cwd, &dir),
                _ => false,
            },
            Scope::Session(s) => agent.and_then(|a| a.session_id.as_deref()) == Some(s.as_str()),
            Scope::Agent(name) => agent.is_some_and(|a| a.name == *name),
        }
    }

    /// Reads `Tool` or `Tool(pattern)`, as Claude Code writes rules; `scope` apart.
    pub fn parse(text: &str, scope: Scope) -> Result<Rule, Invalid> {
        let text = text.trim();
        let (tool, pattern) = match text.split_once('(') {
            Some((tool, rest)) => match rest.strip_suffix(')') {
                Some(pattern) => (tool.trim(), Some(pattern.trim().to_owned()).filter(|p| !p.is_empty())),
                None => return Err(Invalid::one("rule", format!("expected Tool or Tool(pattern), got {text:?}: the ')' is missing"))),
            },
            None => (text, None),
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(Invalid::one("rule", format!("expected a tool name such as Bash or Edit, got {tool:?}")));
        }
        Ok(Rule { tool: tool.to_owned(), pattern, scope })
    }
}

impl std::fmt::Display for Rule {
    /// `Bash(npm test:*) in /home/me/app`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.pattern {
            Some(p) => write!(f, "{}({p})", self.tool)?,
            None => write!(f, "{}", self.tool)?,
        }
        match &self.scope {
            Scope::Everywhere => Ok(()),
            Scope::Project(dir) => write!(f, " in {dir}"),
            Scope::Session(s) => write!(f, " in session {s}"),
            Scope::Agent(name) => write!(f, " for {name}"),
        }
    }
}

/// [`ALWAYS`]'s description: the rule it keeps, whole, or why none is kept.
fn always(rule: Option<&Rule>, limits: &Limits) -> String {
    // " in /home/me/app", " in session s-1".
    let scope = |rule: &Rule| Rule { pattern: None, ..rule.clone() }.to_string()[rule.tool.len()..].to_owned();
    let said = match rule {
        Some(rule @ Rule { pattern: None, .. }) => format!("Do not ask again for any {} call{}", rule.tool, scope(rule)),
        Some(rule) => format!("Do not ask again for {rule}"),
        None => "Allows it this time only: no rule can be kept for it (no folder or session to keep it for, or nothing narrower than the whole tool)".into(),
    };
    if said.chars().count() <= limits.max_description_chars {
        return said;
    }
    // Too long to show whole (a long exact command): it is the call shown above.
    let (tool, scope) = rule.map(|r| (r.tool.as_str(), scope(r))).unwrap_or_default();
    cut(&format!("Do not ask again for exactly this {tool} call{scope}"), limits.max_description_chars)
}

/// Whether a command does more than run one program with arguments: chains, pipes,
/// redirections, substitutions and expansions (`$`), control characters.
fn chains(command: &str) -> bool {
    ["&&", "||", ";", "|", "&", ">", "<", "`", "$"].iter().any(|op| command.contains(op)) || command.chars().any(char::is_control)
}

/// Programs whose second word is a subcommand, each with its subcommands that run a
/// program or package named in their arguments, or change what runs later: "Always
/// allow" keeps `prog sub:*` for the others only; every other command is kept exactly.
const SUBCOMMANDS: [(&str, &[&str]); 9] = [
    ("cargo", &["install", "run", "script"]),
    ("git", &["bisect", "config", "daemon", "difftool", "filter-branch", "mergetool", "rebase", "submodule"]),
    ("go", &["env", "generate", "get", "install", "run", "tool"]),
    ("npm", &["add", "config", "create", "exec", "explore", "i", "init", "install", "pkg", "set", "x"]),
    ("pip", &["config", "download", "install", "wheel"]),
    ("pip3", &["config", "download", "install", "wheel"]),
    ("pnpm", &["add", "config", "create", "dlx", "env", "exec", "i", "install"]),
    ("uv", &["add", "pip", "run", "sync", "tool"]),
    ("yarn", &["add", "config", "create", "dlx", "exec", "install", "node", "set"]),
];

/// Options that name a program to run, or a configuration that can: a prefix rule
/// never covers an argument that starts with one (`cargo test --config 'target.….runner=…'`,
/// `go test -exec`, `git fetch --upload-pack`). Not every such option of every program:
/// docs/approvals.md says what a prefix rule can promise.
const RUNS_A_PROGRAM: [&str; 11] = [
    "--config",
    "-Z",
    "--exec",
    "-exec",
    "-toolexec",
    "-vettool",
    "--upload-pack",
    "--receive-pack",
    "--open-files-in-pager",
    "--script-shell",
    "--ext-diff",
];

/// The pattern an "always" keeps for `command`: `prog sub:*` where [`SUBCOMMANDS`]
/// allows it and the prefix rule allows `command` itself, else the exact command;
/// none for an empty command or one a rule cannot name exactly (ending in `:*`).
fn command_pattern(command: &str) -> Option<String> {
    if command.is_empty() || command.ends_with(":*") {
        return None;
    }
    let mut words = command.split(' ');
    let prefix = match (words.next(), words.next()) {
        (Some(program), Some(sub)) => SUBCOMMANDS
            .iter()
            .find(|(p, _)| *p == program)
            .filter(|(_, refused)| is_subcommand(sub) && !refused.contains(&sub))
            .map(|_| format!("{program} {sub}")),
        _ => None,
    };
    Some(match prefix {
        Some(prefix) if prefix_allows(&prefix, command) => format!("{prefix}:*"),
        _ => command.to_owned(),
    })
}

/// A word that reads as a subcommand (`test`, `run-script`), as Claude Code tells one:
/// lower-case letters and digits in parts joined by `-`; not a flag, a path or a file.
fn is_subcommand(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_lowercase())
        && word.split('-').all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// Whether prefix rule `prefix:*` allows `command`: the prefix, then nothing or a space
/// and arguments; no chaining, redirection, substitution or expansion; no argument that
/// [`RUNS_A_PROGRAM`] (its quotes and backslashes removed, as the shell would).
fn prefix_allows(prefix: &str, command: &str) -> bool {
    let Some(rest) = command.strip_prefix(prefix) else { return false };
    if chains(command) || !(rest.is_empty() || rest.starts_with(' ')) {
        return false;
    }
    !rest.split_whitespace().any(|arg| {
        let arg: String = arg.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
        RUNS_A_PROGRAM.iter().any(|o| arg.strip_prefix(o).is_some_and(|r| r.is_empty() || r.starts_with('=') || *o == "-Z"))
    })
}

/// `path` absolute and lexically clean (no `.`, empty parts or trailing `/`); `None`
/// for a relative path or one with `..`, which only the file system can resolve (a
/// symlink before it leads elsewhere), so it is under no folder.
fn clean(path: &str) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    let mut out = String::new();
    for part in rest.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return None;
        }
        out.push('/');
        out.push_str(part);
    }
    Some(if out.is_empty() { "/".into() } else { out })
}

/// Whether clean path `path` is `dir` or below it.
fn within(path: &str, dir: &str) -> bool {
    path == dir || dir == "/" || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

/// The host of an `http(s)://` URL, lower-case, only when a WHATWG URL parser (Node's,
/// so Claude Code's fetch) can read no other: the URL has no whitespace, control
/// character or backslash anywhere (WHATWG drops tabs and newlines and reads `\` as
/// `/`), and its authority (to the first `/`, `?` or `#`) is a plain ASCII name or
/// address of letters, digits, `-` and `.`, with at most a numeric port: no userinfo
/// (`@`), percent-escape, IDN or IPv6 literal. Otherwise none, so no domain rule
/// matches (`https://evil.example\@docs.rs/` is evil.example to WHATWG, docs.rs to a
/// naive split at `@`). Conservative rather than the `url` crate: the core's
/// dependencies stay four (docs/approvals.md), and a URL it cannot read is asked about.
fn host(url: &str) -> Option<String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control() || c == '\\') {
        return None;
    }
    let scheme_end = url.find("://")?;
    if !["http", "https"].iter().any(|s| url[..scheme_end].eq_ignore_ascii_case(s)) {
        return None;
    }
    let authority = url[scheme_end + 3..].split(['/', '?', '#']).next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let plain = !host.is_empty()
        && !host.starts_with(['.', '-'])
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        && port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()));
    plain.then(|| host.to_ascii_lowercase())
}

/// `old` → `new` line by line: the lines both keep, and those removed and added, in
/// order (the longest common subsequence; past [`DIFF_CELLS`] of work, everything
/// between the common head and tail is shown removed, then added).
fn diff(old: &str, new: &str) -> Vec<Line> {
    let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..].iter().rev().zip(new[head..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (a, b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let line = |change: Change, text: &str| Line { change, text: text.to_owned() };
    let mut out: Vec<Line> = old[..head].iter().map(|t| line(Change::Same, t)).collect();
    if a.len().saturating_mul(b.len()) <= DIFF_CELLS {
        // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
        let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                out.push(line(Change::Same, a[i]));
                (i, j) = (i + 1, j + 1);
            } else if j == b.len() || (i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1]) {
                out.push(line(Change::Removed, a[i]));
                i += 1;
            } else {
                out.push(line(Change::Added, b[j]));
                j += 1;
            }
        }
    } else {
        out.extend(a.iter().map(|t| line(Change::Removed, t)));
        out.extend(b.iter().map(|t| line(Change::Added, t)));
    }
    out.extend(old[old.len() - tail..].iter().map(|t| line(Change::Same, t)));
    out
}

/// What the answer to an approval's question decides, as a sentence to show and for a
/// screen reader to say: "Allowed.", "Denied: use cargo clean instead".
pub fn said(answer: &Selection) -> String {
    match (answer.selected.first().map(String::as_str), &answer.custom) {
        (Some(ALLOW), _) => "Allowed.".into(),
        (Some(ALWAYS), _) => "Allowed, and calls like it will be allowed without asking.".into(),
        (Some(ALWAYS_EXACTLY), _) => "Allowed, and this exact call will be allowed without asking.".into(),
        (_, Some(said)) => format!("Denied: {said}"),
        _ => "Denied.".into(),
    }
}

/// `text` cut to `max` characters, ending with "…" when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{resolve, Selection};
    use serde_json::json;

    fn bash(command: &str) -> Approval {
        let mut a = Approval::from_claude(
            &json!({"tool_name": "Bash", "input": {"command": command, "description": "Clean the build"}, "tool_use_id": "toolu_1"}),
        )
        .unwrap();
        a.cwd = Some("/home/me/app".into());
        a
    }

    fn answer(a: &Approval, selection: Selection) -> Decision {
        let request = a.request(&a.suggest(None), &Limits::default()).unwrap();
        let answers = resolve(&request.questions, &[selection]).unwrap();
        a.decide(&AskResult::answered("q", &request, answers, 1))
    }

    #[test]
    fn claude_codes_permission_call_is_read_and_every_problem_named() {
        let a = bash("rm -rf build");
        assert_eq!((a.tool.as_str(), a.tool_use_id.as_deref(), a.reason.as_deref()), ("Bash", Some("toolu_1"), Some("Clean the build")));
        let e = Approval::from_claude(&json!({"tool_name": 3, "input": "ls", "tool_use_id": []})).unwrap_err();
        let paths: Vec<&str> = e.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["tool_name", "input", "tool_use_id"]);
        assert!(e.to_string().contains("expected the tool's name, got the number 3"), "{e}");
        assert!(Approval::from_claude(&json!({"input": {}})).unwrap_err().to_string().contains("tool_name: is missing"));
    }

    #[test]
    fn the_question_shows_the_command_and_why_and_the_three_choices() {
        let a = bash("rm -rf build");
        let r = a.request(&a.suggest(None), &Limits::default()).unwrap();
        let q = &r.questions[0];
        assert_eq!(q.question, "Run this command in /home/me/app?\n\n```\nrm -rf build\n```\n\nWhy: Clean the build");
        assert_eq!(q.header.as_deref(), Some("Bash"));
        let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, [ALLOW, ALWAYS, DENY]);
        assert_eq!(q.options[1].description.as_deref(), Some("Do not ask again for Bash(rm -rf build) in /home/me/app"));
        assert_eq!(r.approval.as_ref(), Some(&a));
        crate::validate::validate(r, &Limits::default()).expect("a valid request");
    }

    #[test]
    fn an_edit_shows_as_a_diff_and_a_write_as_the_files_head() {
        let mut e = Approval::from_claude(&json!({"tool_name": "Edit", "input": {"file_path": "/home/me/app/src/main.rs", "old_string": "let a = 1;", "new_string": "let a = 2;\nlet b = 3;"}})).unwrap();
        e.cwd = Some("/home/me/app".into());
        let r = e.request(&e.suggest(None), &Limits::default()).unwrap();
        assert_eq!(r.questions[0].question, "Edit src/main.rs?\n\n```\n- let a = 1;\n+ let a = 2;\n+ let b = 3;\n```");
        assert_eq!(e.summary(), "src/main.rs");
        let content: String = (1..=25).map(|n| format!("line {n}\n")).collect();
        let w = Approval::from_claude(&json!({"tool_name": "Write", "input": {"file_path": "notes.txt", "content": content}})).unwrap();
        let q = &w.request(&w.suggest(None), &Limits::default()).unwrap().questions[0].question;
        assert!(q.starts_with("Write notes.txt (25 lines)?\n\n```\nline 1\n"), "{q}");
        assert!(q.ends_with("line 20\n```\n… 5 more lines"), "{q}");
    }

    #[test]
    fn an_edit_is_diffed_line_by_line_keeping_what_both_sides_share() {
        let edit = |old: &str, new: &str| {
            let a = Approval::from_claude(
                &json!({"tool_name": "Edit", "input": {"file_path": "/a/src/lib.rs", "old_string": old, "new_string": new}}),
            );
            let mut a = a.unwrap();
            a.cwd = Some("/a".into());
            a
        };
        let a = edit("fn main() {\n    old();\n    keep();\n}", "fn main() {\n    keep();\n    new();\n}");
        let Shown::Diff { file, lines } = a.shown() else { panic!("{:?}", a.shown()) };
        assert_eq!(file, "src/lib.rs");
        let marked: Vec<String> = lines.iter().map(Line::marked).collect();
        assert_eq!(marked, ["  fn main() {", "-     old();", "      keep();", "+     new();", "  }"]);
        assert_eq!(lines.iter().map(Line::spoken).collect::<Vec<_>>(), [None, Some("removed"), None, Some("added"), None]);
        // Past the work limit: the middle removed, then added, still in order.
        let old: String = (0..600).map(|n| format!("a{n}\n")).collect();
        let new: String = (0..600).map(|n| format!("b{n}\n")).collect();
        let Shown::Diff { lines, .. } = edit(&format!("head\n{old}tail"), &format!("head\n{new}tail")).shown() else { panic!() };
        assert_eq!(
            (lines.len(), lines[1].change, lines[601].change, lines[1201].change),
            (1202, Change::Removed, Change::Added, Change::Same)
        );
        let view = a.view().unwrap();
        assert_eq!((view.tool.as_str(), view.title.as_str()), ("Edit", "Edit src/lib.rs?"));
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["shown"]["lines"][1], json!({"change": "removed", "text": "    old();"}));
        let other = Approval::from_claude(&json!({"tool_name": "mcp__db__query", "input": {"sql": "DROP TABLE x", "limit": 5}})).unwrap();
        assert_eq!(other.shown(), Shown::Call { args: vec![("sql".into(), "DROP TABLE x".into()), ("limit".into(), "5".into())] });
        let ask = Approval::from_claude(&json!({"tool_name": ASK_USER_QUESTION, "input": {"questions": []}})).unwrap();
        assert_eq!(ask.view(), None);
    }

    #[test]
    fn the_answers_become_claude_codes_permission_results() {
        let a = bash("cargo test --all");
        let allow = answer(&a, Selection::option(ALLOW));
        assert_eq!(
            allow.claude(),
            json!({"behavior": "allow", "updatedInput": {"command": "cargo test --all", "description": "Clean the build"}})
        );
        assert_eq!(answer(&a, Selection::option(ALWAYS)).kind(), "always");
        let deny = answer(&a, Selection::option(DENY).with_notes("not on main"));
        assert_eq!(deny.claude()["message"], "The user denied this Bash call. They said: not on main Do not run it.");
        let said = answer(&a, Selection::custom("run only the unit tests"));
        assert_eq!(
            said.claude(),
            json!({"behavior": "deny", "message": "The user denied this Bash call and said: run only the unit tests"})
        );
        let request = a.request(&a.suggest(None), &Limits::default()).unwrap();
        let declined = a.decide(&AskResult::unanswered("q", &request, Status::TimedOut, 1));
        assert_eq!(declined.claude()["message"], "The user did not allow Bash (no answer: timed_out). Do not run it.");
        let mut defaulted = request.clone();
        defaulted.default_after_seconds = Some(1800);
        let denied = a.decide(&AskResult::defaulted("q", &defaulted, 1));
        assert_eq!(denied.kind(), "deny");
        assert_eq!(
            denied.claude()["message"],
            "The user did not allow Bash (no answer after 30 min; default applied: denied). Do not run it."
        );
    }

    #[test]
    fn ask_user_question_through_the_permission_tool_is_asked_as_its_questions_and_allowed_with_the_answers() {
        let questions = json!([{"question": "Which database?", "header": "DB", "multiSelect": false, "options": [{"label": "PostgreSQL", "description": "Shared"}, {"label": "SQLite", "description": "Embedded"}]}]);
        let a =
            Approval::from_claude(&json!({"tool_name": "AskUserQuestion", "input": {"questions": questions}, "tool_use_id": "toolu_9"}))
                .unwrap();
        let request = a.request(&a.suggest(None), &Limits::default()).unwrap();
        assert_eq!(request.questions[0].question, "Which database?");
        let answers = resolve(&request.questions, &[Selection::option("SQLite").with_notes("for now")]).unwrap();
        let d = a.decide(&AskResult::answered("q", &request, answers, 1));
        assert_eq!(
            d.claude(),
            json!({"behavior": "allow", "updatedInput": {"questions": questions, "answers": {"Which database?": "SQLite"}, "annotations": {"Which database?": {"notes": "for now"}}}})
        );
        let declined = a.decide(&AskResult::unanswered("q", &request, Status::Cancelled, 1));
        assert!(declined.claude()["message"].as_str().unwrap().starts_with("The user declined to answer your questions."));
        assert!(!Rule { tool: ASK_USER_QUESTION.into(), pattern: None, scope: Scope::Everywhere }.matches(&a, None), "never a rule's");
    }

    #[test]
    fn suggested_rules_are_narrow_and_scoped_to_the_project() {
        let rule = |command: &str| bash(command).suggest(None).unwrap().to_string();
        assert_eq!(rule("cargo test --all"), "Bash(cargo test:*) in /home/me/app");
        assert_eq!(rule("git status"), "Bash(git status:*) in /home/me/app");
        assert_eq!(rule("ls -la"), "Bash(ls -la) in /home/me/app", "a program without subcommands: exact");
        assert_eq!(rule("make && rm -rf /"), "Bash(make && rm -rf /) in /home/me/app", "a chain: exact only");
        let mut edit =
            Approval::from_claude(&json!({"tool_name": "MultiEdit", "input": {"file_path": "/home/me/app/src/a/b.rs", "edits": []}}))
                .unwrap();
        edit.cwd = Some("/home/me/app/".into());
        assert_eq!(edit.suggest(None).unwrap().to_string(), "Edit(src/a/b.rs) in /home/me/app", "the file, not its folder");
        let fetch = Approval::from_claude(&json!({"tool_name": "WebFetch", "input": {"url": "https://docs.rs/serde?x=1"}})).unwrap();
        let agent = Agent { name: "Claude Code".into(), session_id: Some("s-1".into()), ..Agent::default() };
        assert_eq!(fetch.suggest(Some(&agent)).unwrap().to_string(), "WebFetch(domain:docs.rs) in session s-1");
        let mcp = Approval::from_claude(&json!({"tool_name": "mcp__db__query", "input": {"sql": "select 1"}, "cwd": "/p"})).unwrap();
        let mcp = Approval { cwd: Some("/p".into()), ..mcp };
        let r = mcp.request(&mcp.suggest(None), &Limits::default()).unwrap();
        assert_eq!(r.questions[0].options[1].description.as_deref(), Some("Do not ask again for any mcp__db__query call in /p"));
    }

    #[test]
    fn always_never_keeps_more_than_the_command_shown() {
        // Issue 45: "Always allow" on `rm -rf build` kept `Bash(rm:*)`, which allowed `rm -rf /`.
        let kept = |command: &str| bash(command).suggest(None).unwrap();
        for command in [
            "rm -rf build",
            "rm build",
            "git -C sub status",
            "python script.py",
            "python3 -c 'print(1)'",
            "bash -c 'make'",
            "sh run.sh",
            "env FOO=1 make",
            "sudo -u me ls",
            "xargs rm",
            "find . -name x -delete",
            "curl -s https://example.com",
            "node index.js",
            "timeout 5 make",
            "nohup make",
            "watch ls",
            "exec make",
            "npx jest",
            "npm exec jest",
            "npm install left-pad",
            "cargo run --release",
            "cargo install ripgrep",
            "go run main.go",
            "git submodule foreach ls",
            "git config core.pager cat",
            "cargo test --config x",
            "FOO=1 cargo test",
            "./build.sh test",
            "cargo  test",
        ] {
            let rule = kept(command);
            assert_eq!(rule.pattern.as_deref(), Some(command), "{command}: exactly what was shown");
            assert!(rule.matches(&bash(command), None), "{command}: the rule allows what was shown");
        }
        let rm = kept("rm -rf build");
        for other in ["rm -rf /", "rm -rf ~", "rm -rf --no-preserve-root /", "rm -rf build /"] {
            assert!(!rm.matches(&bash(other), None), "{other}");
        }
        // A rule cannot name a command ending in `:*` exactly (it would read as a prefix).
        assert_eq!(bash("rm -rf /tmp:*").suggest(None), None);
        let prefix = kept("cargo test --all");
        assert!(prefix.matches(&bash("cargo test -p x"), None));
        assert!(!prefix.matches(&bash("cargo run"), None));
    }

    #[test]
    fn always_keeps_no_rule_for_every_agent_everywhere() {
        let mut a = bash("cargo test");
        a.cwd = None;
        assert_eq!(a.suggest(None), None, "no folder, no session");
        let named = Agent { name: "Claude Code".into(), ..Agent::default() };
        assert_eq!(a.suggest(Some(&named)), None, "an agent's name is every such agent everywhere");
        let r = a.request(&a.suggest(None), &Limits::default()).unwrap();
        let said = r.questions[0].options[1].description.clone().unwrap();
        assert!(said.starts_with("Allows it this time only: no rule can be kept"), "{said}");
        let request = a.request(&None, &Limits::default()).unwrap();
        let answers = resolve(&request.questions, &[Selection::option(ALWAYS)]).unwrap();
        assert!(matches!(a.decide(&AskResult::answered("q", &request, answers, 1)), Decision::Allow { .. }), "still allowed once");
        a.cwd = Some("relative/dir".into());
        assert_eq!(a.suggest(None), None, "a relative folder is no project");
        a.cwd = Some("/home/me/./app//".into());
        assert_eq!(a.suggest(None).unwrap().scope, Scope::Project("/home/me/app".into()), "kept clean");
    }

    #[test]
    fn the_always_choice_names_the_whole_rule_or_says_the_command_is_above() {
        let long = format!("echo {}", "x".repeat(3_000));
        let a = bash(&long);
        let r = a.request(&a.suggest(None), &Limits::default()).unwrap();
        let said = r.questions[0].options[1].description.clone().unwrap();
        assert_eq!(said, "Do not ask again for exactly this Bash call in /home/me/app", "never a rule cut short");
    }

    #[test]
    fn a_prefix_rule_can_be_narrowed_to_the_exact_command_and_only_a_rule_shown_is_kept() {
        // Issue 45: "the person sees the exact rule before choosing 'Always' … and may narrow it".
        let limits = Limits::default();
        let a = bash("git status --short");
        let rule = a.suggest(None);
        let request = a.request(&rule, &limits).unwrap();
        let options = &request.questions[0].options;
        let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, [ALLOW, ALWAYS, ALWAYS_EXACTLY, DENY]);
        assert_eq!(options[1].description.as_deref(), Some("Do not ask again for Bash(git status:*) in /home/me/app"));
        assert_eq!(options[2].description.as_deref(), Some("Do not ask again for Bash(git status --short) in /home/me/app"));
        let kept = |request: &Request, label: &str| {
            let answers = resolve(&request.questions, &[Selection::option(label)]).unwrap();
            let result = AskResult::answered("q", request, answers, 1);
            assert_eq!(a.decide(&result).kind(), if label == ALLOW { "allow" } else { "always" });
            a.kept(request, &result, None, &limits)
        };
        let exact = kept(&request, ALWAYS_EXACTLY).unwrap();
        assert_eq!(exact.to_string(), "Bash(git status --short) in /home/me/app");
        assert!(exact.matches(&bash("git status --short"), None));
        assert!(!exact.matches(&bash("git status --porcelain"), None), "the narrowed rule asks again");
        assert!(!exact.matches(&bash("git status"), None));
        assert_eq!(kept(&request, ALWAYS).unwrap().to_string(), "Bash(git status:*) in /home/me/app");
        assert_eq!(kept(&request, ALLOW), None);
        // An exact rule has nothing narrower: three choices, and "exactly" keeps nothing.
        let rm = bash("rm -rf build");
        let asked = rm.request(&rm.suggest(None), &limits).unwrap();
        assert_eq!(asked.questions[0].options.len(), 3);
        let mut answers = resolve(&asked.questions, &[Selection::option(ALWAYS)]).unwrap();
        answers[0].selected_options = vec![ALWAYS_EXACTLY.into()];
        let forged = AskResult::answered("q", &asked, answers, 1);
        assert_eq!(rm.kept(&asked, &forged, None, &limits), None, "an option it did not offer");
        // A question that named another rule (an older version's `Bash(git:*)`) keeps none.
        let mut older = request.clone();
        older.questions[0].options[1].description = Some("Do not ask again for Bash(git:*) in /home/me/app".into());
        assert_eq!(kept(&older, ALWAYS), None, "a rule the person did not see is never kept");
        assert!(kept(&older, ALWAYS_EXACTLY).is_some(), "the one it named is");
        // A command a prefix does not cover (a chain) was never offered a prefix.
        assert_eq!(
            bash("git status; rm -rf ~").request(&bash("git status; rm -rf ~").suggest(None), &limits).unwrap().questions[0].options.len(),
            3
        );
    }

    #[test]
    fn rules_wider_than_one_answer_keeps_are_named_for_review() {
        let project = Scope::Project("/home/me/app".into());
        let wider = |rule: &str, scope: &Scope| Rule::parse(rule, scope.clone()).unwrap().wider();
        assert_eq!(wider("Bash(rm:*)", &project).as_deref(), Some("any command that begins `rm`"));
        assert_eq!(wider("Bash(git:*)", &project).as_deref(), Some("any command that begins `git`"));
        assert_eq!(wider("Bash(npm exec:*)", &project).as_deref(), Some("any command that begins `npm exec`"));
        assert_eq!(wider("Bash(rm:*)", &Scope::Everywhere).as_deref(), Some("any command that begins `rm`; for every agent everywhere"));
        assert_eq!(wider("Bash", &project).as_deref(), Some("every command"));
        assert_eq!(wider("Edit(src/**)", &project).as_deref(), Some("every file below src"));
        assert_eq!(wider("WebFetch", &Scope::Agent("ci".into())).as_deref(), Some("every fetch; for every agent named ci, everywhere"));
        for narrow in ["Bash(cargo test:*)", "Bash(rm -rf build)", "Edit(src/a.rs)", "WebFetch(domain:docs.rs)", "mcp__db__query"] {
            assert_eq!(wider(narrow, &project), None, "{narrow}");
            assert_eq!(wider(narrow, &Scope::Session("s-1".into())), None, "{narrow}");
        }
    }

    #[test]
    fn rules_match_what_they_say_and_nothing_more() {
        let project = Scope::Project("/home/me/app".into());
        let rule = Rule::parse("Bash(cargo test:*)", project.clone()).unwrap();
        assert!(rule.matches(&bash("cargo test"), None));
        assert!(rule.matches(&bash("cargo test --all"), None));
        assert!(!rule.matches(&bash("cargo testify"), None), "a prefix ends at a word");
        assert!(!rule.matches(&bash("cargo test && rm -rf ~"), None), "a chain is not the command");
        assert!(!rule.matches(&bash("cargo test > /etc/passwd"), None));
        let mut elsewhere = bash("cargo test");
        elsewhere.cwd = Some("/home/me/application".into());
        assert!(!rule.matches(&elsewhere, None), "another project");
        elsewhere.cwd = Some("/home/me/app/crates/x".into());
        assert!(rule.matches(&elsewhere, None), "below the project");
        let exact = Rule::parse("Bash(make && make install)", Scope::Everywhere).unwrap();
        assert!(exact.matches(&bash("make && make install"), None));

        let edits = Rule::parse("Edit(src/**)", project).unwrap();
        let mut write =
            Approval::from_claude(&json!({"tool_name": "Write", "input": {"file_path": "/home/me/app/src/x.rs", "content": ""}})).unwrap();
        write.cwd = Some("/home/me/app".into());
        assert!(edits.matches(&write, None), "Edit covers Write");
        write.input.insert("file_path".into(), json!("/home/me/app/src/../.env"));
        assert!(!edits.matches(&write, None), "no way out with ..");
        write.input.insert("file_path".into(), json!("/etc/hosts"));
        assert!(!edits.matches(&write, None));

        let session = Rule::parse("Bash", Scope::Session("s-1".into())).unwrap();
        let agent = |s: &str| Agent { name: "a".into(), session_id: Some(s.into()), ..Agent::default() };
        assert!(session.matches(&bash("anything"), Some(&agent("s-1"))));
        assert!(!session.matches(&bash("anything"), Some(&agent("s-2"))));
        assert!(!Rule::parse("Read", Scope::Everywhere).unwrap().matches(&bash("ls"), None));
    }

    #[test]
    fn a_prefix_rule_allows_one_program_with_plain_arguments_only() {
        let rule = Rule::parse("Bash(cargo test:*)", Scope::Project("/home/me/app".into())).unwrap();
        for command in [
            "cargo test\nrm -rf ~",
            "cargo test\r\nrm -rf ~",
            "cargo test $(rm -rf ~)",
            "cargo test `rm -rf ~`",
            "cargo test <(rm -rf ~)",
            "cargo test >(rm -rf ~)",
            "cargo test ${HOME}",
            "cargo test $HOME",
            "cargo test --config 'target.x86_64-unknown-linux-gnu.runner=\"sh -c evil\"'",
            "cargo test --config=x",
            "cargo test '--config' x",
            "cargo test --con\\fig x",
            "cargo test -Zunstable-options",
            "cargo test & rm -rf ~",
            "cargo test\t&& rm -rf ~",
            "cargo test\u{0}",
        ] {
            assert!(!rule.matches(&bash(command), None), "{command:?}");
        }
        assert!(!rule.matches(&bash("FOO=1 cargo test"), None), "an assignment before it is another command");
        assert!(rule.matches(&bash("cargo test --all -- --nocapture"), None));
        assert!(rule.matches(&bash("cargo test --configuration-free"), None), "an option is matched whole");
        let go = Rule::parse("Bash(go test:*)", Scope::Everywhere).unwrap();
        assert!(!go.matches(&bash("go test -exec ./evil ./..."), None));
        let git = Rule::parse("Bash(git fetch:*)", Scope::Everywhere).unwrap();
        assert!(!git.matches(&bash("git fetch --upload-pack='sh -c evil' origin"), None));
    }

    #[test]
    fn paths_are_compared_clean_and_a_relative_rule_is_the_projects() {
        // Issue 45: a cwd of /home/me/app/../other fell under /home/me/app's rules.
        let rule = Rule::parse("Bash(cargo test:*)", Scope::Project("/home/me/app/".into())).unwrap();
        let at = |cwd: &str| Approval { cwd: Some(cwd.into()), ..bash("cargo test") };
        assert!(!rule.matches(&at("/home/me/app/../other"), None), "not under the project");
        assert!(!rule.matches(&at("/home/me/app/sub/../../other"), None));
        assert!(!rule.matches(&at("home/me/app"), None), "a relative folder is under none");
        assert!(rule.matches(&at("/home/me//app/./crates"), None), "clean: under it");
        let edit = Rule::parse("Edit(src/lib.rs)", Scope::Project("/p".into())).unwrap();
        let write = |cwd: &str, file: &str| {
            let mut w = Approval::from_claude(&json!({"tool_name": "Write", "input": {"file_path": file, "content": ""}})).unwrap();
            w.cwd = Some(cwd.into());
            w
        };
        assert!(edit.matches(&write("/p", "/p/src/lib.rs"), None));
        assert!(!edit.matches(&write("/p/crates/x", "../../src/lib.rs"), None), "`..`: under no folder");
        assert!(edit.matches(&write("/p/crates/x", "/p/src//lib.rs"), None), "the project's src/lib.rs, from below");
        assert!(!edit.matches(&write("/p/crates/x", "src/lib.rs"), None), "another src/lib.rs than the rule's");
        let tree = Rule::parse("Edit(src/**)", Scope::Project("/p".into())).unwrap();
        assert!(tree.matches(&write("/p", "src/a/b.rs"), None));
        assert!(!tree.matches(&write("/p", "src"), None));
        assert!(!tree.matches(&write("/p", "srcx/a.rs"), None));
    }

    #[test]
    fn a_domain_rule_matches_the_host_a_url_parser_sends_to_and_nothing_it_cannot_read() {
        // Issue 45: `WebFetch(domain:docs.rs)` allowed `https://evil.example\\@docs.rs/`,
        // which WHATWG (Node's fetch) sends to evil.example.
        let rule = Rule::parse("WebFetch(domain:docs.rs)", Scope::Everywhere).unwrap();
        let fetch = |url: &str| Approval::from_claude(&json!({"tool_name": "WebFetch", "input": {"url": url}})).unwrap();
        for url in ["https://docs.rs/serde", "HTTPS://Docs.RS:443/x?y#z", "http://docs.rs"] {
            assert!(rule.matches(&fetch(url), None), "{url}");
        }
        for url in [
            "https://evil.example\\@docs.rs/",
            "https://evil.example/@docs.rs/",
            "https://user@docs.rs/",
            "https://evil.example#@docs.rs/",
            "https://evil.example?@docs.rs/",
            "https://docs.rs\t.evil.example/",
            "https://docs.rs\n.evil.example/",
            " https://docs.rs.evil.example/",
            "https://docs%2Ers/",
            "https://docs.rs.evil.example/",
            "https://[::1]/",
            "https://docs.rs:x/",
            "ftp://docs.rs/",
            "https:docs.rs",
            "https:///docs.rs",
        ] {
            assert!(!rule.matches(&fetch(url), None), "{url:?}");
        }
        // A URL it cannot read keeps no rule: "Always" would otherwise name the wrong host.
        assert_eq!(Approval { cwd: Some("/p".into()), ..fetch("https://evil.example\\@docs.rs/") }.suggest(None), None);
    }

    #[test]
    fn what_would_hide_or_reorder_part_of_a_command_is_shown() {
        // Issue 45: bidi and invisible characters in commands, shown visibly everywhere.
        let a = bash("echo safe\u{202E}fr- mr\u{2066} \u{200B}x\u{1b}[2J");
        let Shown::Command { command, .. } = a.shown() else { panic!() };
        assert_eq!(command, "echo safe\\u{202e}fr- mr\\u{2066} \\u{200b}x\\u{1b}[2J");
        let q = &a.request(&a.suggest(None), &Limits::default()).unwrap().questions[0].question;
        assert!(q.contains("safe\\u{202e}fr-") && !q.contains('\u{202E}'), "{q}");
        assert_eq!(a.text("command"), Some("echo safe\u{202E}fr- mr\u{2066} \u{200B}x\u{1b}[2J"), "what runs is unchanged");
        assert!(!a.summary().contains('\u{200B}'));
        let mut e = Approval::from_claude(
            &json!({"tool_name": "Edit", "input": {"file_path": "/p/a\u{202E}sr.rs", "old_string": "a", "new_string": "b\u{FEFF}"}}),
        )
        .unwrap();
        e.cwd = Some("/p".into());
        let Shown::Diff { file, lines } = e.shown() else { panic!() };
        assert_eq!((file.as_str(), lines[1].text.as_str()), ("a\\u{202e}sr.rs", "b\\u{feff}"));
        assert_eq!(crate::text::visible("plain, é, 😀 and tabs\t"), "plain, é, 😀 and tabs\t");
    }

    #[test]
    fn rules_are_read_as_claude_code_writes_them_with_clear_errors() {
        let r = Rule::parse(" WebFetch(domain:docs.rs) ", Scope::Everywhere).unwrap();
        assert_eq!((r.tool.as_str(), r.pattern.as_deref()), ("WebFetch", Some("domain:docs.rs")));
        assert_eq!(Rule::parse("Bash()", Scope::Everywhere).unwrap().pattern, None);
        assert!(Rule::parse("Bash(ls", Scope::Everywhere).unwrap_err().to_string().contains("the ')' is missing"));
        assert!(Rule::parse("rm -rf", Scope::Everywhere).unwrap_err().to_string().contains("expected a tool name"));
        let json = serde_json::to_value(Rule::parse("Bash(ls:*)", Scope::Project("/p".into())).unwrap()).unwrap();
        assert_eq!(json, json!({"tool": "Bash", "pattern": "ls:*", "scope": {"project": "/p"}}));
    }
}
