//! The whole ask-user dialog as a pure state machine.
//!
//! A front end (the Leptos page, the wasm package, a terminal) owns one [`Dialog`], turns
//! keys and clicks into [`Event`]s (or hands DOM key names to [`Dialog::key`]), passes them
//! to [`Dialog::apply`], performs the returned [`Effect`]s and renders [`Dialog::state`].
//! Nothing here does IO; effects are returned, never performed.
//!
//! Layout of one question: its options in order, then the "Other (type your answer)" row,
//! always last (its index is `options.len()`). A question without options has only that row
//! and is always being edited.
//!
//! Per question the machine keeps a [`QuestionDraft`] (checked options, the Other flag and
//! text, whether Enter confirmed it), the focused row and a scroll offset. Whether a question
//! is *answered* is derived (confirmed and the draft is still a valid answer), so it can never
//! disagree with what is shown. After [`Effect::Submitted`] or [`Effect::Cancelled`] the
//! dialog is done and ignores every further event.
//!
//! With 2+ questions there is a final Submit tab (a review); ← and → switch questions
//! and wrap around; Tab is left to the front end (a browser moves the focus on). Focus
//! in an option list clamps at both ends. Nothing here panics on any event sequence.

use crate::answer::{resolve, Selection};
use crate::approval::{ApprovalView, ALLOW, ALWAYS, ALWAYS_EXACTLY, DENY};
use crate::model::{Question, Request};
use serde::{Deserialize, Serialize};

/// The label of the free-text row that ends every question.
pub const OTHER_LABEL: &str = "Other (type your answer)";

/// The free-text row's label in an approval: the text denies, and tells the agent.
pub const DENY_SAYING: &str = "Deny, and say what to do instead";

/// Layout and limits of a dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DialogOptions {
    /// Rows visible at once in an option list (at least 1 is used). Default 7.
    pub viewport: usize,
    /// Text answers longer than this many chars ask for confirmation. Default 2000.
    pub soft_limit: usize,
    /// The key the footer names for a new line in typed text: the front end's, since
    /// most terminals send Shift+Enter as a plain Enter. Default "Shift+Enter".
    pub newline_key: String,
}

impl Default for DialogOptions {
    fn default() -> Self {
        DialogOptions { viewport: 7, soft_limit: 2000, newline_key: "Shift+Enter".into() }
    }
}

/// Everything a front end can tell the dialog. JSON: `{"type":"next"}`, `{"type":"pick","index":2}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// Focus the next row (no wrapping).
    Next,
    /// Focus the previous row (no wrapping).
    Prev,
    First,
    Last,
    /// Mouse hover or keyboard focus on a row. Ignored while editing text.
    Focus {
        index: usize,
    },
    /// A click or tap on a row: focus it, then choose it (single select: shown as
    /// chosen, sent by Enter or [`Event::Commit`], so a misclick is undone by another
    /// click) or toggle it (multi). The Other row is chosen and its text field opened.
    /// Never sends.
    Pick {
        index: usize,
    },
    /// Quick-select option `number` (1-based): answers in single select, toggles in multi.
    Quick {
        number: usize,
    },
    /// Go to the Other row and start typing.
    Other,
    /// Space: toggle the focused option (multi select) or start editing on the Other row.
    Toggle,
    /// Replace the Other text (a browser textarea sends this on every input).
    SetText {
        text: String,
    },
    /// Append to the Other text (a terminal sends typed characters).
    Type {
        text: String,
    },
    /// Remove the last char of the Other text while editing.
    Backspace,
    /// Next tab; wraps from the Submit tab to the first question.
    NextTab,
    /// Previous tab; wraps from the first question to the Submit tab.
    PrevTab,
    GoTab {
        index: usize,
    },
    Enter,
    /// The dialog's Next/Submit button: sends what was chosen (the rows checked, the
    /// option picked, the text typed), whichever row the pointer passed over on its way;
    /// with nothing chosen it asks for a choice and sends nothing.
    Commit,
    Escape,
    /// Answer the open prompt.
    Confirm {
        yes: bool,
    },
    /// Replace the current question's notes: what the person adds for the agent.
    Notes {
        text: String,
    },
    /// The Decline button: decline (asks first when anything is chosen or typed).
    Decline,
    /// "Chat about this": decline because the person would rather talk it over (asks
    /// first when anything is chosen or typed, like Escape).
    Chat,
    /// The number of visible rows changed.
    Resize {
        viewport: usize,
    },
    /// How much of an approval's command or diff the front end shows now: `whole`, or a
    /// part (a terminal shorter than it, until the person scrolls to its end). While a
    /// part is shown, Allow and Always allow are refused: nobody allows what they have
    /// not seen. Front ends that always show it whole never send this.
    Shown {
        whole: bool,
    },
}

/// What the front end must do. JSON: `{"type":"submitted","answers":[...]}`, `{"type":"cancelled"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Effect {
    /// One selection per question, in order; each passes [`crate::answer::resolve`].
    Submitted { answers: Vec<Selection> },
    /// The person declined; no answers are sent. With `chat`, they would rather talk the
    /// questions over with the agent.
    Cancelled {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        chat: bool,
    },
}

/// The result of [`Dialog::key`]. `handled == false` means the front end must not
/// `preventDefault` (a textarea inserts the key, the browser moves focus, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyOutcome {
    pub handled: bool,
    pub effects: Vec<Effect>,
}

/// What a front end persists across reloads: every question's draft and the active tab.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Draft {
    pub tab: usize,
    /// One per question, in order.
    pub questions: Vec<QuestionDraft>,
}

impl Draft {
    /// The text typed into it (every Other answer and note, joined with " / "), so a
    /// front end can show it when the question closes elsewhere rather than lose it.
    pub fn typed(&self) -> Option<String> {
        let texts: Vec<&str> =
            self.questions.iter().flat_map(|q| [q.other_text.trim(), q.notes.trim()]).filter(|t| !t.is_empty()).collect();
        (!texts.is_empty()).then(|| texts.join(" / "))
    }
}

/// One question's draft.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QuestionDraft {
    /// Checked options (multi select) or the chosen option (single select, at most one), ascending.
    pub selected: Vec<usize>,
    /// Other is checked (multi select) or chosen (single select); always true for free text.
    pub other: bool,
    pub other_text: String,
    /// Enter confirmed the question (it counts as answered while the draft stays valid).
    pub confirmed: bool,
    /// What the person adds about this answer for the agent (sent as the answer's notes).
    pub notes: String,
    /// The focused row, so a question comes back where the person left it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<usize>,
}

/// Whether the dialog ended, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Done {
    Submitted,
    Cancelled,
}

/// What an open prompt asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PromptKind {
    /// Escape or "Chat about this" after choosing or typing something: "Discard N
    /// answers?" (default No). The c key asks with `chat` even when nothing was chosen
    /// (`count` 0): a letter alone never ends a question.
    Discard {
        count: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        chat: bool,
    },
    /// A text answer over the soft limit: "Answer is long (N chars). Continue anyway?" (default Yes).
    LongAnswer { chars: usize },
}

/// A yes/no prompt over the dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    /// What Enter answers.
    pub default_yes: bool,
    /// The buttons' words, for what each does ("Decline" and "Keep answering").
    pub yes: String,
    pub no: String,
    /// What a yes would throw away: each answer given or text typed, as "Label: text".
    pub lost: Vec<String>,
}

/// The plain view model a front end renders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// One per question, then a Submit tab when there are 2+ questions.
    pub tabs: Vec<TabView>,
    pub active_tab: usize,
    pub on_submit_tab: bool,
    /// `None` on the Submit tab.
    pub question: Option<QuestionView>,
    /// The options, then the Other row; empty on the Submit tab.
    pub rows: Vec<RowView>,
    pub other_text: String,
    /// The current question's notes for the agent.
    pub notes: String,
    /// The text field has the keyboard.
    pub editing: bool,
    /// The visible slice of `rows`.
    pub window: Window,
    pub prompt: Option<Prompt>,
    /// A short message after a refused action.
    pub hint: Option<String>,
    /// Every question with its answer so far (for the Submit tab).
    pub review: Vec<ReviewItem>,
    /// The texts of the questions not answered yet.
    pub unanswered: Vec<String>,
    pub done: Option<Done>,
    /// What was sent, as a sentence to show and announce once done: "Answer sent.",
    /// "Declined."; for an approval "Allowed.", "Denied: use cargo build instead."
    pub outcome: Option<String>,
    /// Set when the question set is an approval ([`crate::approval`]): show this in
    /// place of the question's text. Its keys are a (allow), A (always), d (deny,
    /// then the message) and the rows' keys say so.
    pub approval: Option<ApprovalView>,
    /// Key help for the current mode.
    pub footer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TabView {
    /// The question's header, or "Q1", "Q2", ...; "Submit" for the Submit tab.
    pub label: String,
    pub answered: bool,
    pub is_submit: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    pub index: usize,
    pub text: String,
    pub header: Option<String>,
    pub multi_select: bool,
    pub free_text: bool,
    pub answered: bool,
}

impl QuestionView {
    /// What kind of answer it takes, as the dialog says it above the question.
    pub fn kind(&self) -> &'static str {
        if self.free_text {
            "Free text"
        } else if self.multi_select {
            "Choose any"
        } else {
            "Choose one"
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowView {
    pub index: usize,
    pub label: String,
    pub description: Option<String>,
    pub preview: Option<String>,
    /// The 1-based number shown before an option; `None` for Other.
    pub number: Option<usize>,
    /// The quick key: "1".."9" for the first nine options, "0" for Other; in an
    /// approval "a", "A", "e" (Always allow exactly), "d" and none for the message row.
    pub key: Option<String>,
    pub focused: bool,
    /// Chosen (single select) or checked (multi select).
    pub selected: bool,
    pub is_other: bool,
}

/// Rows `start..end` are visible; `above` / `below` are hidden ("↑ N more", "↓ N more").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub start: usize,
    pub end: usize,
    pub above: usize,
    pub below: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewItem {
    pub index: usize,
    pub label: String,
    pub question: String,
    /// The answer as one line (labels and Other text joined with ", "), or `None` if unanswered.
    pub answer: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Slot {
    draft: QuestionDraft,
    focus: usize,
    /// The highlight was last moved by the pointer ([`Event::Focus`]), not a key: Enter
    /// then sends the option clicked, if one is, not the row the pointer passed over.
    pointed: bool,
    scroll: usize,
}

/// The dialog state machine. See the module docs.
#[derive(Debug, Clone)]
pub struct Dialog {
    questions: Vec<Question>,
    opts: DialogOptions,
    slots: Vec<Slot>,
    tab: usize,
    editing: bool,
    prompt: Option<PromptKind>,
    hint: Option<String>,
    done: Option<Done>,
    /// Declined to talk it over ("Chat about this").
    chat: bool,
    /// The front end shows only part of the approval (see [`Event::Shown`]).
    partly_shown: bool,
    /// Set for an approval: one question whose options are Allow, Always allow, Deny.
    approval: Option<ApprovalView>,
}

impl Dialog {
    /// A fresh dialog: first tab, first row focused, nothing answered.
    pub fn new(request: &Request, opts: DialogOptions) -> Dialog {
        Dialog::restore(request, opts, Draft::default())
    }

    /// A dialog resuming `draft`. Out-of-range indices, extra drafts and a bad tab are
    /// dropped; a single-select draft keeps at most one choice.
    pub fn restore(request: &Request, opts: DialogOptions, draft: Draft) -> Dialog {
        let questions = request.questions.clone();
        let mut saved = draft.questions.into_iter();
        let mut slots = Vec::with_capacity(questions.len());
        for q in &questions {
            let d = sanitize(q, saved.next().unwrap_or_default());
            let chosen = d.selected.first().copied().unwrap_or(if d.other { q.options.len() } else { 0 });
            let focus = d.focus.filter(|&f| f <= q.options.len()).unwrap_or(chosen);
            slots.push(Slot { draft: d, focus, pointed: false, scroll: 0 });
        }
        let mut dialog = Dialog {
            questions,
            opts: DialogOptions { viewport: opts.viewport.max(1), ..opts },
            slots,
            tab: 0,
            editing: false,
            prompt: None,
            hint: None,
            done: None,
            chat: false,
            partly_shown: false,
            approval: approval_view(request),
        };
        if draft.tab < dialog.tab_count() {
            dialog.tab = draft.tab;
        }
        dialog.follow_all();
        dialog
    }

    /// The drafts and active tab, to persist and pass to [`Dialog::restore`].
    pub fn draft(&self) -> Draft {
        Draft { tab: self.tab, questions: self.slots.iter().map(|s| QuestionDraft { focus: Some(s.focus), ..s.draft.clone() }).collect() }
    }

    /// How the dialog ended, if it did.
    pub fn done(&self) -> Option<Done> {
        self.done
    }

    /// Whether question `index` is answered: confirmed, and its draft is still a valid answer.
    pub fn is_answered(&self, index: usize) -> bool {
        match (self.questions.get(index), self.slots.get(index)) {
            (Some(q), Some(s)) => s.draft.confirmed && is_valid(q, &s.draft),
            _ => false,
        }
    }

    /// Whether the text field has the keyboard (the Other row, or a free-text question).
    pub fn is_editing(&self) -> bool {
        if self.done.is_some() || self.prompt.is_some() {
            return false;
        }
        match self.current() {
            Some(q) => self.questions[q].is_free_text() || (self.editing && self.slots[q].focus == self.other_index(q)),
            None => false,
        }
    }

    /// Whether the Other row has the focus without its text field open: there, typed
    /// characters start the person's own answer (front ends with shortcuts of their own,
    /// as the terminal's n and f, leave them to the dialog there).
    pub fn on_other_row(&self) -> bool {
        self.done.is_none()
            && self.prompt.is_none()
            && !self.is_editing()
            && self.current().is_some_and(|q| self.slots[q].focus == self.other_index(q))
    }

    /// Handles one event and returns what the front end must do.
    pub fn apply(&mut self, event: Event) -> Vec<Effect> {
        if self.done.is_some() {
            return vec![];
        }
        if self.prompt.is_some() {
            return match event {
                Event::Confirm { yes } => self.answer_prompt(yes),
                Event::Escape => self.answer_prompt(false),
                Event::Resize { viewport } => self.resize(viewport),
                Event::Shown { whole } => {
                    self.partly_shown = !whole;
                    vec![]
                }
                _ => vec![],
            };
        }
        // Passive events (hover, layout) keep the last hint; anything else clears it.
        if !matches!(event, Event::Focus { .. } | Event::Resize { .. } | Event::Shown { .. }) {
            self.hint = None;
        }
        let current = self.current();
        match (event, current) {
            (Event::Resize { viewport }, _) => self.resize(viewport),
            (Event::Shown { whole }, _) => {
                self.partly_shown = !whole;
                vec![]
            }
            (Event::NextTab, _) => self.step_tab(true),
            (Event::PrevTab, _) => self.step_tab(false),
            (Event::GoTab { index }, _) => {
                if index < self.tab_count() {
                    self.leave();
                    self.tab = index;
                    self.editing = false;
                }
                vec![]
            }
            (Event::Enter | Event::Commit, None) => self.submit(),
            (Event::Escape, q) => {
                let has_options = q.is_some_and(|q| !self.questions[q].is_free_text());
                if self.is_editing() && has_options {
                    self.editing = false;
                    vec![]
                } else {
                    self.decline(false)
                }
            }
            (Event::Chat, _) => self.decline(true),
            (Event::Decline, _) => self.decline(false),
            (Event::Confirm { .. }, _) | (_, None) => vec![],
            (Event::Notes { text }, Some(q)) => {
                self.slots[q].draft.notes = text;
                vec![]
            }
            (Event::Next, Some(q)) => self.navigate(q, self.slots[q].focus.saturating_add(1)),
            (Event::Prev, Some(q)) => self.navigate(q, self.slots[q].focus.saturating_sub(1)),
            (Event::First, Some(q)) => self.navigate(q, 0),
            (Event::Last, Some(q)) => self.navigate(q, usize::MAX),
            (Event::Focus { index }, Some(q)) => {
                if !self.is_editing() && index <= self.other_index(q) {
                    self.navigate(q, index);
                    self.slots[q].pointed = true;
                }
                vec![]
            }
            (Event::Pick { index }, Some(q)) => {
                self.pick(q, index);
                vec![]
            }
            // An approval's Deny sends the message typed under it, if any.
            (Event::Quick { number }, Some(q))
                if self.approval.is_some() && number == self.deny_index(q) + 1 && has_text(&self.slots[q].draft) =>
            {
                self.confirm(q, false)
            }
            (Event::Quick { number }, Some(q)) => {
                if number == 0 || number > self.questions[q].options.len() {
                    self.hint = Some(format!("There is no option {number}"));
                    vec![]
                } else {
                    self.quick(q, number - 1)
                }
            }
            (Event::Other, Some(q)) => {
                self.start_editing(q);
                vec![]
            }
            (Event::Toggle, Some(q)) => {
                let question = &self.questions[q];
                let on_other = self.slots[q].focus == self.other_index(q);
                if question.multi_select && !question.is_free_text() {
                    self.toggle(q, self.slots[q].focus);
                } else if on_other && !self.is_editing() {
                    self.start_editing(q);
                }
                vec![]
            }
            (Event::SetText { text }, Some(q)) => self.set_text(q, text),
            (Event::Type { text }, Some(q)) => {
                let joined = format!("{}{text}", self.slots[q].draft.other_text);
                self.set_text(q, joined)
            }
            (Event::Backspace, Some(q)) => {
                if self.is_editing() {
                    self.slots[q].draft.other_text.pop();
                }
                vec![]
            }
            (Event::Enter, Some(q)) => self.enter(q),
            (Event::Commit, Some(q)) => self.commit(q),
        }
    }

    /// Maps a DOM `KeyboardEvent.key` ("Shift+" prefixed for shifted Tab and Enter) to an
    /// event for the current mode and applies it.
    pub fn key(&mut self, key: &str) -> KeyOutcome {
        match self.key_event(key) {
            // A letter alone never ends a question: "c" asks first, as Esc does after
            // anything was chosen (the "Chat about this" button declines at once).
            Some(Event::Chat) => {
                self.hint = None;
                self.prompt = Some(PromptKind::Discard { count: self.touched_count(), chat: true });
                KeyOutcome { handled: true, effects: vec![] }
            }
            Some(event) => KeyOutcome { handled: true, effects: self.apply(event) },
            None => KeyOutcome::default(),
        }
    }

    /// The event `key` means in the current mode, or `None` if the dialog does not use it.
    pub fn key_event(&self, key: &str) -> Option<Event> {
        if self.done.is_some() {
            return None;
        }
        if let Some(kind) = self.prompt {
            return match key {
                "y" | "Y" => Some(Event::Confirm { yes: true }),
                "n" | "N" | "Escape" => Some(Event::Confirm { yes: false }),
                "Enter" => Some(Event::Confirm { yes: default_yes(kind) }),
                _ => None,
            };
        }
        let tabs = self.questions.len() >= 2;
        let event = match key {
            "Enter" => Event::Enter,
            "Escape" => Event::Escape,
            // Tab is never the dialog's: it moves the focus on to the next control (the
            // note, the buttons, the inbox), as the WAI-ARIA practices have it for radio
            // and checkbox groups. ← and → switch questions, wrapping around.
            _ if self.is_editing() => return None,
            // On the Other row a printable key starts the person's own answer, as on
            // Claude Code's "Type something" row: no letter or digit there is a shortcut.
            _ if self.on_other_row() && key.chars().count() == 1 && key != " " && !key.chars().any(char::is_control) => {
                Event::Type { text: key.to_owned() }
            }
            "a" if self.approval.is_some() => Event::Quick { number: 1 },
            "A" if self.approval.is_some() => Event::Quick { number: 2 },
            "e" if self.approval.is_some() && self.questions[0].options.iter().any(|o| o.label == ALWAYS_EXACTLY) => {
                Event::Quick { number: 3 }
            }
            "d" if self.approval.is_some() => Event::Other,
            // "Chat about this", as the terminal's c (the page's button says so).
            "c" => Event::Chat,
            "ArrowRight" if tabs => Event::NextTab,
            "ArrowLeft" if tabs => Event::PrevTab,
            _ => {
                let q = self.current()?;
                let question = &self.questions[q];
                match key {
                    "ArrowDown" | "j" => Event::Next,
                    "ArrowUp" | "k" => Event::Prev,
                    "Home" => Event::First,
                    "End" => Event::Last,
                    "0" | "o" => Event::Other,
                    " " if question.multi_select || self.slots[q].focus == self.other_index(q) => Event::Toggle,
                    _ => match key.parse::<usize>() {
                        Ok(number @ 1..=9) if key.len() == 1 => Event::Quick { number },
                        _ => return None,
                    },
                }
            }
        };
        Some(event)
    }

    /// The view model to render.
    pub fn state(&self) -> View {
        let n = self.questions.len();
        let mut tabs: Vec<TabView> =
            (0..n).map(|i| TabView { label: self.label(i), answered: self.is_answered(i), is_submit: false }).collect();
        if n >= 2 {
            let all = (0..n).all(|i| self.is_answered(i));
            tabs.push(TabView { label: "Submit".into(), answered: all, is_submit: true });
        }
        let review: Vec<ReviewItem> = (0..n)
            .map(|i| ReviewItem {
                index: i,
                label: self.label(i),
                question: self.questions[i].question.clone(),
                answer: self.is_answered(i).then(|| answer_text(&self.selection(i))),
            })
            .collect();
        let unanswered = (0..n).filter(|&i| !self.is_answered(i)).map(|i| self.questions[i].question.clone()).collect();
        let mut view = View {
            tabs,
            active_tab: self.tab,
            on_submit_tab: self.current().is_none(),
            question: None,
            rows: vec![],
            other_text: String::new(),
            notes: String::new(),
            editing: self.is_editing(),
            window: Window::default(),
            prompt: self.prompt.map(|kind| self.prompt_view(kind)),
            hint: self.hint.clone(),
            review,
            unanswered,
            done: self.done,
            outcome: self.outcome(),
            approval: self.approval.clone(),
            footer: self.footer(),
        };
        if let Some(q) = self.current() {
            let question = &self.questions[q];
            let slot = &self.slots[q];
            let other = self.other_index(q);
            view.question = Some(QuestionView {
                index: q,
                text: question.question.clone(),
                header: question.header.clone(),
                multi_select: question.multi_select,
                free_text: question.is_free_text(),
                answered: self.is_answered(q),
            });
            view.rows = question
                .options
                .iter()
                .enumerate()
                .map(|(i, c)| RowView {
                    index: i,
                    label: c.label.clone(),
                    description: c.description.clone(),
                    preview: c.preview.clone(),
                    number: Some(i + 1),
                    key: match &self.approval {
                        Some(_) => approval_key(&c.label).map(str::to_owned),
                        None => (i < 9).then(|| (i + 1).to_string()),
                    },
                    focused: slot.focus == i,
                    selected: slot.draft.selected.contains(&i),
                    is_other: false,
                })
                .collect();
            let other_selected = if question.is_free_text() { has_text(&slot.draft) } else { slot.draft.other };
            view.rows.push(RowView {
                index: other,
                label: if self.approval.is_some() { DENY_SAYING } else { OTHER_LABEL }.into(),
                description: None,
                preview: None,
                number: None,
                key: self.approval.is_none().then(|| "0".into()),
                focused: slot.focus == other,
                selected: other_selected,
                is_other: true,
            });
            view.other_text = slot.draft.other_text.clone();
            view.notes = slot.draft.notes.clone();
            let rows = other + 1;
            let end = slot.scroll.saturating_add(self.opts.viewport).min(rows);
            view.window = Window { start: slot.scroll, end, above: slot.scroll, below: rows - end };
        }
        view
    }

    // ----- internals -----

    fn tab_count(&self) -> usize {
        let n = self.questions.len();
        n + usize::from(n >= 2)
    }

    /// The question on the active tab, `None` on the Submit tab.
    fn current(&self) -> Option<usize> {
        (self.tab < self.questions.len()).then_some(self.tab)
    }

    fn other_index(&self, q: usize) -> usize {
        self.questions[q].options.len()
    }

    fn label(&self, q: usize) -> String {
        match self.questions[q].header.as_deref().map(str::trim) {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => format!("Q{}", q + 1),
        }
    }

    fn selection(&self, q: usize) -> Selection {
        let (question, d) = (&self.questions[q], &self.slots[q].draft);
        let text = d.other_text.trim();
        Selection {
            selected: d.selected.iter().filter_map(|&i| question.options.get(i)).map(|c| c.label.clone()).collect(),
            custom: ((d.other || question.is_free_text()) && !text.is_empty()).then(|| text.to_string()),
            notes: Some(d.notes.trim()).filter(|n| !n.is_empty()).map(str::to_owned),
        }
    }

    fn resize(&mut self, viewport: usize) -> Vec<Effect> {
        self.opts.viewport = viewport.max(1);
        self.follow_all();
        vec![]
    }

    fn follow_all(&mut self) {
        for q in 0..self.slots.len() {
            self.follow(q);
        }
    }

    /// Moves question `q`'s scroll window minimally so that it shows the focused row.
    fn follow(&mut self, q: usize) {
        let rows = self.other_index(q) + 1;
        let viewport = self.opts.viewport;
        let slot = &mut self.slots[q];
        slot.focus = slot.focus.min(rows - 1);
        if slot.focus < slot.scroll {
            slot.scroll = slot.focus;
        } else if slot.focus >= slot.scroll.saturating_add(viewport) {
            slot.scroll = slot.focus + 1 - viewport;
        }
        slot.scroll = slot.scroll.min(rows.saturating_sub(viewport));
    }

    /// Focuses row `index` (clamped); moving off the Other row stops editing.
    fn navigate(&mut self, q: usize, index: usize) -> Vec<Effect> {
        let other = self.other_index(q);
        self.slots[q].focus = index.min(other);
        self.slots[q].pointed = false;
        if self.slots[q].focus != other {
            self.editing = false;
        }
        self.follow(q);
        vec![]
    }

    fn start_editing(&mut self, q: usize) {
        self.navigate(q, usize::MAX);
        self.editing = true;
    }

    /// Leaving a question for another tab keeps what was chosen or typed there as its
    /// answer (boxes ticked, text typed: the tab ticks), if it is a valid one.
    fn leave(&mut self) {
        if let Some(q) = self.current() {
            let draft = &mut self.slots[q].draft;
            if (!draft.selected.is_empty() || has_text(draft)) && is_valid(&self.questions[q], draft) {
                draft.confirmed = true;
            }
        }
    }

    fn step_tab(&mut self, forward: bool) -> Vec<Effect> {
        let count = self.tab_count();
        if count >= 2 {
            self.leave();
            self.tab = if forward { (self.tab + 1) % count } else { (self.tab + count - 1) % count };
            self.editing = false;
        }
        vec![]
    }

    /// A number key: answers with option `index` in single select (Claude Code's quick
    /// select), toggles it in multi select.
    fn quick(&mut self, q: usize, index: usize) -> Vec<Effect> {
        self.navigate(q, index);
        if self.questions[q].multi_select {
            self.toggle(q, index);
            vec![]
        } else {
            self.choose(q, index)
        }
    }

    /// A click or tap on row `index` (see [`Event::Pick`]): chooses, never sends. A
    /// question answered before stays answered, with what is chosen now.
    fn pick(&mut self, q: usize, index: usize) {
        let question = &self.questions[q];
        if index > question.options.len() || question.is_free_text() {
            return;
        }
        let multi = question.multi_select;
        self.navigate(q, index);
        if multi {
            return self.toggle(q, index);
        }
        let other = index == self.other_index(q);
        let draft = &mut self.slots[q].draft;
        draft.selected = if other { vec![] } else { vec![index] };
        draft.other = other;
        if other {
            self.start_editing(q);
        }
    }

    /// Multi select: flips option `index`, or the Other row (checking it starts editing).
    fn toggle(&mut self, q: usize, index: usize) {
        if index == self.other_index(q) {
            let checked = !self.slots[q].draft.other;
            self.slots[q].draft.other = checked;
            self.editing = checked;
        } else {
            let selected = &mut self.slots[q].draft.selected;
            match selected.binary_search(&index) {
                Ok(at) => {
                    selected.remove(at);
                }
                Err(at) => selected.insert(at, index),
            }
        }
    }

    fn set_text(&mut self, q: usize, text: String) -> Vec<Effect> {
        if !self.questions[q].is_free_text() {
            self.start_editing(q);
        }
        let question = &self.questions[q];
        let draft = &mut self.slots[q].draft;
        if question.multi_select && !text.is_empty() {
            draft.other = true;
        }
        draft.other_text = text;
        vec![]
    }

    fn enter(&mut self, q: usize) -> Vec<Effect> {
        let question = &self.questions[q];
        let multi = question.multi_select;
        if question.is_free_text() || self.is_editing() {
            return self.confirm(q, false);
        }
        let focus = self.slots[q].focus;
        let chosen = !self.slots[q].draft.selected.is_empty() || self.slots[q].draft.other;
        if self.slots[q].pointed && chosen && !multi {
            // Clicked, then the pointer moved on (towards Submit, say): Enter sends what
            // was clicked, not the row under the pointer.
            return self.commit(q);
        }
        if focus == self.other_index(q) {
            // Enter on the Other row opens the text field (and checks Other in multi select).
            self.slots[q].draft.other |= multi;
            self.start_editing(q);
            vec![]
        } else if multi {
            self.confirm(q, false)
        } else {
            self.choose(q, focus)
        }
    }

    /// The Next/Submit button sends what the person chose, never the row the focus (or a
    /// pointer resting on the page) happens to be on: in a multi-select the rows checked,
    /// in a single select the option chosen or the text typed; nothing chosen asks for a
    /// choice.
    fn commit(&mut self, q: usize) -> Vec<Effect> {
        let question = &self.questions[q];
        let draft = &self.slots[q].draft;
        if question.is_free_text() || self.is_editing() || question.multi_select {
            return self.confirm(q, false);
        }
        match draft.selected.as_slice() {
            [index] if !draft.other => self.choose(q, *index),
            _ if has_text(draft) => self.confirm(q, false),
            _ => {
                self.hint = Some(if self.approval.is_some() {
                    "Choose first: Allow, Always allow or Deny".into()
                } else {
                    "Choose an option first, or type an answer under Other".into()
                });
                vec![]
            }
        }
    }

    /// [`DENY`]'s row in an approval: the last option.
    fn deny_index(&self, q: usize) -> usize {
        self.questions[q].options.len().saturating_sub(1)
    }

    /// Single select: answers with option `index` and moves on.
    fn choose(&mut self, q: usize, index: usize) -> Vec<Effect> {
        if self.approval.is_some() && self.partly_shown && index != self.deny_index(q) {
            self.hint = Some("Scroll to its end first: only what you have seen can be allowed".into());
            return vec![];
        }
        let draft = &mut self.slots[q].draft;
        draft.selected = vec![index];
        draft.other = false;
        draft.confirmed = true;
        self.advance(q)
    }

    /// Confirms question `q` from its draft: the Other text (single select, free text) or
    /// the checked rows (multi select). Refuses an empty answer with a hint, and asks first
    /// about a text over the soft limit unless `allow_long`.
    fn confirm(&mut self, q: usize, allow_long: bool) -> Vec<Effect> {
        let question = &self.questions[q];
        let editing = self.is_editing();
        let draft = &mut self.slots[q].draft;
        let text = draft.other_text.trim();
        let chars = text.chars().count();
        let has_text = !text.is_empty();
        if self.approval.is_some() && !has_text {
            // "d" then Enter: a denial with nothing to say.
            return self.choose(q, self.deny_index(q));
        }
        let uses_text = if question.multi_select && !question.is_free_text() {
            if editing && has_text {
                draft.other = true;
            }
            if !is_valid(question, draft) {
                self.hint = Some("Select at least one option, or type an answer under Other".into());
                return vec![];
            }
            draft.other && has_text
        } else if has_text {
            true
        } else {
            self.hint = Some(if question.is_free_text() {
                "Type an answer first".into()
            } else {
                "Type an answer first, or press Esc to go back".into()
            });
            return vec![];
        };
        if uses_text && chars > self.opts.soft_limit && !allow_long {
            self.prompt = Some(PromptKind::LongAnswer { chars });
            return vec![];
        }
        if !question.multi_select {
            draft.selected.clear();
            draft.other = true;
        }
        draft.confirmed = true;
        self.advance(q)
    }

    /// After question `q` was answered: submit a lone question, else go to the next
    /// unanswered question (searching forward, then wrapping), else to the Submit tab.
    fn advance(&mut self, q: usize) -> Vec<Effect> {
        self.editing = false;
        let n = self.questions.len();
        if n == 1 {
            return self.submit();
        }
        self.tab = (1..n).map(|k| (q + k) % n).find(|&i| !self.is_answered(i)).unwrap_or(n);
        vec![]
    }

    /// Submits when every question is answered; otherwise names the missing ones and goes
    /// to the first of them.
    fn submit(&mut self) -> Vec<Effect> {
        let missing: Vec<usize> = (0..self.questions.len()).filter(|&i| !self.is_answered(i)).collect();
        if let Some(&first) = missing.first() {
            let names: Vec<String> = missing.iter().map(|&i| self.label(i)).collect();
            self.hint = Some(format!("Answer every question first: {}", names.join(", ")));
            self.tab = first;
            self.editing = false;
            return vec![];
        }
        let answers: Vec<Selection> = (0..self.questions.len()).map(|i| self.selection(i)).collect();
        // `is_answered` matches `resolve` (the property tests check every submit), and the
        // bridge resolves every answer again. Checked in debug builds only: in the web
        // app's release build `resolve` would cost 10 KB gzip (Unicode case tables).
        debug_assert!(resolve(&self.questions, &answers).is_ok(), "a submitted answer must resolve");
        self.done = Some(Done::Submitted);
        vec![Effect::Submitted { answers }]
    }

    /// Escape outside a text field, or Chat: decline at once, or ask first if anything
    /// was chosen or typed (answered or not).
    fn decline(&mut self, chat: bool) -> Vec<Effect> {
        let count = self.touched_count();
        if count == 0 {
            self.done = Some(Done::Cancelled);
            self.chat = chat;
            vec![Effect::Cancelled { chat }]
        } else {
            self.prompt = Some(PromptKind::Discard { count, chat });
            vec![]
        }
    }

    fn prompt_view(&self, kind: PromptKind) -> Prompt {
        let (yes, no) = match kind {
            PromptKind::Discard { chat: false, .. } => ("Decline", "Keep answering"),
            PromptKind::Discard { chat: true, .. } => ("Decline, to talk it over", "Keep answering"),
            PromptKind::LongAnswer { .. } => ("Send it", "Edit it"),
        };
        let lost = match kind {
            PromptKind::Discard { .. } => (0..self.questions.len())
                .filter(|&i| self.is_answered(i) || touched(&self.slots[i].draft))
                .map(|i| {
                    let (question, draft) = (&self.questions[i], &self.slots[i].draft);
                    let mut said: Vec<String> =
                        draft.selected.iter().filter_map(|&o| question.options.get(o)).map(|c| c.label.clone()).collect();
                    said.extend(Some(draft.other_text.trim()).filter(|t| !t.is_empty()).map(str::to_owned));
                    said.extend(Some(draft.notes.trim()).filter(|n| !n.is_empty()).map(|n| format!("(note: {n})")));
                    format!("{}: {}", self.label(i), said.join(", "))
                })
                .collect(),
            PromptKind::LongAnswer { .. } => vec![],
        };
        Prompt { kind, text: prompt_text(kind), default_yes: default_yes(kind), yes: yes.into(), no: no.into(), lost }
    }

    /// How many questions hold something the person chose or typed.
    fn touched_count(&self) -> usize {
        (0..self.questions.len()).filter(|&i| self.is_answered(i) || touched(&self.slots[i].draft)).count()
    }

    fn answer_prompt(&mut self, yes: bool) -> Vec<Effect> {
        self.hint = None;
        match (self.prompt.take(), yes) {
            (Some(PromptKind::Discard { chat, .. }), true) => {
                self.done = Some(Done::Cancelled);
                self.chat = chat;
                vec![Effect::Cancelled { chat }]
            }
            (Some(PromptKind::LongAnswer { .. }), true) => match self.current() {
                Some(q) => self.confirm(q, true),
                None => vec![],
            },
            (Some(PromptKind::LongAnswer { .. }), false) => {
                if let Some(q) = self.current().filter(|&q| !self.questions[q].is_free_text()) {
                    self.start_editing(q);
                }
                vec![]
            }
            _ => vec![],
        }
    }

    /// What was sent, once done (see [`View::outcome`]).
    fn outcome(&self) -> Option<String> {
        let done = self.done?;
        if done == Done::Cancelled && self.chat {
            return Some("Told the agent you would rather talk it over.".into());
        }
        let Some(approval) = &self.approval else {
            return Some(
                match done {
                    Done::Submitted => "Answer sent.",
                    Done::Cancelled => "Declined.",
                }
                .into(),
            );
        };
        Some(match done {
            Done::Cancelled => format!("Declined: {} was not allowed.", approval.tool),
            Done::Submitted => crate::approval::said(&self.selection(0)),
        })
    }

    fn footer(&self) -> String {
        if self.done.is_some() {
            return String::new();
        }
        if let Some(kind) = self.prompt {
            return if default_yes(kind) { "y/Enter yes • n/Esc no" } else { "y yes • n/Enter/Esc no" }.into();
        }
        let tabs = self.questions.len() >= 2;
        let mut parts: Vec<String> = Vec::new();
        let escape = match self.current() {
            None => {
                parts.push("Enter submit".into());
                "Esc cancel"
            }
            Some(q) if self.is_editing() => {
                let question = &self.questions[q];
                parts.push(if question.multi_select && !question.is_free_text() { "Enter confirm" } else { "Enter submit" }.into());
                parts.push(format!("{} new line", self.opts.newline_key));
                return finish(parts, if question.is_free_text() { "Esc cancel" } else { "Esc back" });
            }
            Some(q) if self.approval.is_some() => {
                let exactly = self.questions[q].options.iter().any(|o| o.label == ALWAYS_EXACTLY);
                let exactly = if exactly { "e always allow exactly • " } else { "" };
                return format!("a allow • A always allow • {exactly}d deny (then say why, or Enter) • Esc decline");
            }
            Some(q) => {
                let options = self.questions[q].options.len();
                parts.push("↑↓ navigate".into());
                if self.questions[q].multi_select {
                    parts.push("Space toggle".into());
                    parts.push("Enter confirm".into());
                } else {
                    parts.push(if options <= 1 { "1 quick select".into() } else { format!("1-{} quick select", options.min(9)) });
                    parts.push("Enter select".into());
                }
                "Esc cancel"
            }
        };
        if tabs {
            parts.push("←→ switch".into());
        }
        finish(parts, escape)
    }
}

/// The approval `request` carries, if it is asked as one question with the choices
/// [`ALLOW`], [`ALWAYS`], [`ALWAYS_EXACTLY`] where the rule is a prefix, and [`DENY`]
/// (as [`crate::approval::Approval::request`] makes it).
fn approval_view(request: &Request) -> Option<ApprovalView> {
    let view = request.approval.as_ref()?.view()?;
    let [question] = request.questions.as_slice() else { return None };
    let labels: Vec<&str> = question.options.iter().map(|c| c.label.as_str()).collect();
    let asked = labels == [ALLOW, ALWAYS, DENY] || labels == [ALLOW, ALWAYS, ALWAYS_EXACTLY, DENY];
    (asked && !question.multi_select).then_some(view)
}

/// An approval option's key: a, A, e (exactly), d.
fn approval_key(label: &str) -> Option<&'static str> {
    match label {
        ALLOW => Some("a"),
        ALWAYS => Some("A"),
        ALWAYS_EXACTLY => Some("e"),
        DENY => Some("d"),
        _ => None,
    }
}

fn finish(mut parts: Vec<String>, last: &str) -> String {
    parts.push(last.into());
    parts.join(" • ")
}

fn sanitize(q: &Question, mut d: QuestionDraft) -> QuestionDraft {
    let n = q.options.len();
    d.selected.retain(|&i| i < n);
    if q.is_free_text() {
        d.other = true;
    } else if !q.multi_select {
        d.selected.truncate(1);
        if !d.selected.is_empty() {
            d.other = false;
        }
    }
    d.selected.sort_unstable();
    d.selected.dedup();
    d
}

/// Whether the person chose or typed anything in a draft.
fn touched(d: &QuestionDraft) -> bool {
    !d.selected.is_empty() || has_text(d) || !d.notes.trim().is_empty()
}

fn has_text(d: &QuestionDraft) -> bool {
    !d.other_text.trim().is_empty()
}

/// Whether a draft is a complete answer (the same rule [`resolve`] applies).
fn is_valid(q: &Question, d: &QuestionDraft) -> bool {
    if q.is_free_text() {
        has_text(d)
    } else if q.multi_select {
        !d.selected.is_empty() || (d.other && has_text(d))
    } else {
        (d.selected.len() == 1 && !d.other) || (d.selected.is_empty() && d.other && has_text(d))
    }
}

fn answer_text(s: &Selection) -> String {
    s.selected.iter().cloned().chain(s.custom.clone()).collect::<Vec<_>>().join(", ")
}

fn default_yes(kind: PromptKind) -> bool {
    matches!(kind, PromptKind::LongAnswer { .. })
}

fn prompt_text(kind: PromptKind) -> String {
    match kind {
        PromptKind::Discard { count: 0, chat: true } => "Decline, and talk it over with the agent instead?".into(),
        PromptKind::Discard { count: 1, chat: false } => "Decline, and lose the answer you gave?".into(),
        PromptKind::Discard { count, chat: false } => format!("Decline, and lose the {count} answers you gave?"),
        PromptKind::Discard { count: 1, chat: true } => "Decline to talk it over, and lose the answer you gave?".into(),
        PromptKind::Discard { count, chat: true } => format!("Decline to talk it over, and lose the {count} answers you gave?"),
        PromptKind::LongAnswer { chars } => format!("Answer is long ({chars} chars). Continue anyway?"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Choice;
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    fn q(text: &str, options: &[&str], multi: bool) -> Question {
        Question { question: text.into(), header: None, options: options.iter().map(|o| Choice::new(*o)).collect(), multi_select: multi }
    }

    fn request(questions: Vec<Question>) -> Request {
        Request { questions, ..Request::default() }
    }

    fn dialog(questions: Vec<Question>) -> Dialog {
        Dialog::new(&request(questions), DialogOptions::default())
    }

    fn approval(command: &str) -> Dialog {
        let a = crate::approval::Approval::from_claude(&serde_json::json!({"tool_name": "Bash", "input": {"command": command}}));
        let a = a.unwrap();
        Dialog::new(&a.request(&a.suggest(None), &crate::validate::Limits::default()).unwrap(), DialogOptions::default())
    }

    fn sent(effects: &[Effect]) -> Selection {
        match effects {
            [Effect::Submitted { answers }] => answers[0].clone(),
            other => panic!("expected one submit, got {other:?}"),
        }
    }

    #[test]
    fn a_prefix_rule_is_offered_narrowed_and_e_keeps_the_exact_command() {
        let narrowable = || {
            let mut a = crate::approval::Approval::from_claude(
                &serde_json::json!({"tool_name": "Bash", "input": {"command": "git status --short"}}),
            )
            .unwrap();
            a.cwd = Some("/srv/app".into());
            Dialog::new(&a.request(&a.suggest(None), &crate::validate::Limits::default()).unwrap(), DialogOptions::default())
        };
        let mut d = narrowable();
        let v = d.state();
        assert!(v.approval.is_some());
        let rows: Vec<(Option<&str>, &str, Option<&str>)> =
            v.rows.iter().map(|r| (r.key.as_deref(), r.label.as_str(), r.description.as_deref())).collect();
        assert_eq!(rows[1], (Some("A"), ALWAYS, Some("Do not ask again for Bash(git status:*) in /srv/app")));
        assert_eq!(rows[2], (Some("e"), ALWAYS_EXACTLY, Some("Do not ask again for Bash(git status --short) in /srv/app")));
        assert_eq!(rows[3].0, Some("d"));
        assert!(v.footer.contains("e always allow exactly • d deny"), "{}", v.footer);
        assert_eq!(sent(&keys(&mut d, &["e"])).selected, [ALWAYS_EXACTLY]);
        assert_eq!(d.state().outcome.as_deref(), Some("Allowed, and this exact call will be allowed without asking."));
        // Deny is the last option: d then Enter, or its number with a message typed.
        let mut d = narrowable();
        assert_eq!(sent(&keys(&mut d, &["d", "Enter"])).selected, [DENY]);
        let mut d = narrowable();
        keys(&mut d, &["d"]);
        d.apply(Event::SetText { text: "not now".into() });
        let s = sent(&d.apply(Event::Quick { number: 4 }));
        assert_eq!((s.selected.len(), s.custom.as_deref()), (0, Some("not now")));
        // Shown in part: neither Always is allowed, Deny is.
        let mut d = narrowable();
        d.apply(Event::Shown { whole: false });
        assert!(keys(&mut d, &["e"]).is_empty());
        assert!(keys(&mut d, &["A"]).is_empty());
        // Without the narrower choice, e is no key.
        let mut d = approval("rm -rf build");
        assert!(!d.key("e").handled);
    }

    #[test]
    fn an_approval_is_shown_as_what_it_does_and_answered_with_a_capital_a_or_d() {
        let mut d = approval("cargo test");
        let v = d.state();
        let shown = v.approval.as_ref().map(|a| a.shown.clone());
        assert_eq!(shown, Some(crate::approval::Shown::Command { command: "cargo test".into(), cwd: None }));
        let keys_shown: Vec<Option<&str>> = v.rows.iter().map(|r| r.key.as_deref()).collect();
        assert_eq!(keys_shown, [Some("a"), Some("A"), Some("d"), None]);
        assert_eq!(v.rows[3].label, DENY_SAYING);
        assert!(v.footer.starts_with("a allow • A always allow • d deny"), "{}", v.footer);
        assert_eq!(sent(&keys(&mut d, &["a"])).selected, [ALLOW]);
        assert_eq!(d.state().outcome.as_deref(), Some("Allowed."));

        let mut d = approval("cargo test");
        assert_eq!(sent(&keys(&mut d, &["A"])).selected, [ALWAYS]);
        assert!(d.state().outcome.unwrap().starts_with("Allowed, and calls like it"));

        // d, then the message: the message denies and tells the agent.
        let mut d = approval("rm -rf /");
        assert!(keys(&mut d, &["d"]).is_empty());
        assert!(d.is_editing());
        // Typed letters are the message's, not keys.
        assert!(!d.key("a").handled);
        d.apply(Event::SetText { text: "use cargo clean".into() });
        let s = sent(&keys(&mut d, &["Enter"]));
        assert_eq!((s.selected.len(), s.custom.as_deref()), (0, Some("use cargo clean")));
        assert_eq!(d.state().outcome.as_deref(), Some("Denied: use cargo clean"));

        // d, then Enter with nothing typed: a plain denial.
        let mut d = approval("rm -rf /");
        assert_eq!(sent(&keys(&mut d, &["d", "Enter"])).selected, [DENY]);
        assert_eq!(d.state().outcome.as_deref(), Some("Denied."));

        // c: "Chat about this", always after asking (a letter alone never ends a
        // question); the button declines at once.
        let mut d = approval("cargo test");
        assert_eq!(keys(&mut d, &["c"]), []);
        let p = d.state().prompt.unwrap();
        assert_eq!((p.kind, p.default_yes), (PromptKind::Discard { count: 0, chat: true }, false));
        assert_eq!(p.text, "Decline, and talk it over with the agent instead?");
        assert_eq!(keys(&mut d, &["Enter"]), [], "Enter keeps the question");
        assert_eq!(keys(&mut d, &["c", "y"]), [Effect::Cancelled { chat: true }]);
        let mut d = approval("cargo test");
        assert_eq!(d.apply(Event::Chat), [Effect::Cancelled { chat: true }]);
        assert_eq!(d.state().outcome.as_deref(), Some("Told the agent you would rather talk it over."));
        let mut d = dialog(vec![q("Which?", &["A", "B"], false), q("And?", &["C", "D"], false)]);
        assert_eq!(keys(&mut d, &["1"]), []);
        assert_eq!(keys(&mut d, &["c"]), [], "an answer was chosen: asked first");
        assert_eq!(d.state().prompt.map(|p| p.kind), Some(PromptKind::Discard { count: 1, chat: true }));
        assert_eq!(keys(&mut d, &["y"]), [Effect::Cancelled { chat: true }]);

        // A question is not an approval: its keys stay numbers, and "a" does nothing.
        let mut q = dialog(vec![q("Which?", &["Allow", "Always allow", "Deny"], false)]);
        assert!(q.state().approval.is_none());
        assert!(!q.key("a").handled);
        assert_eq!(q.state().rows[0].key.as_deref(), Some("1"));
    }

    fn db() -> Question {
        Question { header: Some("DB".into()), ..q("Which database?", &["Postgres", "SQLite", "MySQL"], false) }
    }

    fn features() -> Question {
        q("Which features?", &["Auth", "API", "UI"], true)
    }

    fn name() -> Question {
        q("Project name?", &[], false)
    }

    /// Presses keys in order, collecting every effect.
    fn keys(d: &mut Dialog, keys: &[&str]) -> Vec<Effect> {
        keys.iter().flat_map(|k| d.key(k).effects).collect()
    }

    fn submitted(answers: Vec<Selection>) -> Vec<Effect> {
        vec![Effect::Submitted { answers }]
    }

    #[test]
    fn single_question_enter_submits_the_focused_option() {
        let mut d = dialog(vec![db()]);
        assert_eq!(keys(&mut d, &["ArrowDown"]), vec![]);
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::option("SQLite")]));
        assert_eq!(d.done(), Some(Done::Submitted));
        assert_eq!(d.state().done, Some(Done::Submitted));
    }

    #[test]
    fn quick_select_answers_single_and_toggles_multi() {
        let mut d = dialog(vec![db()]);
        assert_eq!(d.apply(Event::Quick { number: 3 }), submitted(vec![Selection::option("MySQL")]));
        let mut d = dialog(vec![features()]);
        assert_eq!(keys(&mut d, &["3", "1", "3", "2"]), vec![]);
        assert_eq!(d.slots[0].draft.selected, vec![0, 1]);
        assert_eq!(d.slots[0].focus, 1);
    }

    #[test]
    fn quick_select_out_of_range_is_refused_with_a_hint() {
        let mut d = dialog(vec![db()]);
        assert!(d.key("9").handled);
        assert_eq!(d.state().hint.as_deref(), Some("There is no option 9"));
        assert_eq!(d.apply(Event::Quick { number: 0 }), vec![]);
        d.apply(Event::Next);
        assert_eq!(d.state().hint, None, "the next accepted event clears the hint");
        let mut free = dialog(vec![name()]);
        assert_eq!(free.apply(Event::Quick { number: 1 }), vec![]);
        assert!(free.state().hint.is_some());
    }

    #[test]
    fn focus_clamps_at_both_ends() {
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["ArrowUp", "k"]);
        assert_eq!(d.slots[0].focus, 0);
        keys(&mut d, &["j", "j", "j", "ArrowDown", "ArrowDown", "ArrowDown"]);
        assert_eq!(d.slots[0].focus, 3, "the Other row is last");
        assert!(!d.is_editing(), "arrows move on the Other row (letters type there)");
        keys(&mut d, &["Home"]);
        assert_eq!(d.slots[0].focus, 0);
        keys(&mut d, &["End"]);
        assert_eq!(d.slots[0].focus, 3);
        let rows = d.state().rows;
        assert_eq!(rows.len(), 4);
        assert!(rows[3].is_other && rows[3].focused && rows[3].label == OTHER_LABEL);
        assert_eq!(rows[3].key.as_deref(), Some("0"));
        assert_eq!((rows[0].number, rows[0].key.as_deref()), (Some(1), Some("1")));
    }

    #[test]
    fn enter_on_other_starts_editing_and_text_answers() {
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["End", "Enter"]);
        assert!(d.is_editing() && d.state().editing);
        d.apply(Event::SetText { text: "  DynamoDB \n".into() });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::custom("DynamoDB")]));
    }

    #[test]
    fn other_key_and_space_on_other_start_editing() {
        for start in [&["o"][..], &["0"], &["End", " "]] {
            let mut d = dialog(vec![db()]);
            keys(&mut d, start);
            assert!(d.is_editing(), "{start:?}");
            assert_eq!(d.slots[0].focus, 3);
        }
    }

    #[test]
    fn blank_text_is_refused_with_a_hint() {
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["o"]);
        d.apply(Event::SetText { text: "   ".into() });
        assert_eq!(keys(&mut d, &["Enter"]), vec![]);
        assert_eq!(d.state().hint.as_deref(), Some("Type an answer first, or press Esc to go back"));
        assert!(d.is_editing());
        d.apply(Event::SetText { text: "x".into() });
        assert_eq!(d.state().hint, None);
    }

    #[test]
    fn escape_while_editing_goes_back_and_keeps_the_text() {
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["o"]);
        d.apply(Event::Type { text: "Dyn".into() });
        d.apply(Event::Type { text: "amo".into() });
        d.apply(Event::Backspace);
        assert_eq!(keys(&mut d, &["Escape"]), vec![]);
        assert!(!d.is_editing());
        assert_eq!(d.done(), None);
        assert_eq!(d.state().other_text, "Dynam");
        d.apply(Event::Backspace);
        assert_eq!(d.state().other_text, "Dynam", "Backspace does nothing outside the text field");
    }

    #[test]
    fn multi_select_toggles_and_confirms_in_option_order() {
        let mut d = dialog(vec![features()]);
        assert_eq!(keys(&mut d, &["End", "ArrowUp", " ", "Home", " ", "j", " ", " "]), vec![]);
        let rows = d.state().rows;
        assert_eq!(rows.iter().map(|r| r.selected).collect::<Vec<_>>(), [true, false, true, false]);
        assert_eq!(
            keys(&mut d, &["Enter"]),
            submitted(vec![Selection { selected: vec!["Auth".into(), "UI".into()], ..Selection::default() }])
        );
    }

    #[test]
    fn multi_select_enter_with_nothing_checked_hints() {
        let mut d = dialog(vec![features()]);
        assert_eq!(keys(&mut d, &["Enter"]), vec![]);
        assert_eq!(d.state().hint.as_deref(), Some("Select at least one option, or type an answer under Other"));
        assert_eq!(d.done(), None);
    }

    #[test]
    fn multi_select_typing_checks_other_and_toggle_unchecks_it() {
        let mut d = dialog(vec![features()]);
        d.apply(Event::SetText { text: "Billing".into() });
        assert!(d.is_editing() && d.slots[0].draft.other);
        keys(&mut d, &["Escape"]);
        assert!(!d.is_editing());
        keys(&mut d, &[" "]);
        assert!(!d.slots[0].draft.other && !d.is_editing());
        keys(&mut d, &[" "]);
        assert!(d.slots[0].draft.other && d.is_editing());
        let want = Selection::custom("Billing");
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![want]));
    }

    #[test]
    fn multi_select_enter_while_editing_counts_the_text() {
        let mut d = dialog(vec![features()]);
        keys(&mut d, &["2", "o"]);
        d.apply(Event::SetText { text: "Billing".into() });
        d.slots[0].draft.other = false; // unchecked by some other route; the text still counts
        let want = Selection { selected: vec!["API".into()], custom: Some("Billing".into()), notes: None };
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![want]));
    }

    #[test]
    fn pick_chooses_in_single_and_toggles_in_multi() {
        let mut d = dialog(vec![db(), features()]);
        assert_eq!(d.apply(Event::Pick { index: 2 }), vec![]);
        assert_eq!(d.state().active_tab, 0, "a click chooses and stays");
        assert_eq!(d.slots[0].draft.selected, vec![2]);
        assert_eq!(d.apply(Event::Commit), vec![]);
        assert_eq!(d.state().active_tab, 1, "Next answers it and moves on");
        d.apply(Event::Pick { index: 0 });
        d.apply(Event::Pick { index: 2 });
        d.apply(Event::Pick { index: 0 });
        assert_eq!(d.slots[1].draft.selected, vec![2]);
        d.apply(Event::Pick { index: 3 });
        assert!(d.is_editing() && d.slots[1].draft.other);
        d.apply(Event::Pick { index: 3 });
        assert!(!d.is_editing() && !d.slots[1].draft.other);
    }

    /// Issue 50 D4: a click chooses, so a misclick is undone by the next click, and only
    /// Submit (or Enter) sends.
    #[test]
    fn a_click_chooses_and_only_submit_sends() {
        let mut d = dialog(vec![db()]);
        assert_eq!(d.apply(Event::Pick { index: 1 }), vec![], "nothing is sent on a click");
        assert_eq!(d.apply(Event::Pick { index: 2 }), vec![]);
        let v = d.state();
        assert_eq!(v.rows.iter().filter(|r| r.selected).map(|r| r.index).collect::<Vec<_>>(), [2]);
        assert_eq!(v.done, None);
        d.apply(Event::Notes { text: "for the cache".into() });
        let want = Selection { notes: Some("for the cache".into()), ..Selection::option("MySQL") };
        assert_eq!(d.apply(Event::Commit), submitted(vec![want]));

        // Enter sends the row clicked; a click on Other chooses it and opens its text.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Pick { index: 0 });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::option("Postgres")]));
        let mut d = dialog(vec![db()]);
        d.apply(Event::Pick { index: 1 });
        d.apply(Event::Pick { index: 3 });
        let other = d.state();
        assert!(other.editing && other.rows[3].selected && !other.rows[1].selected);
        assert_eq!(d.apply(Event::Commit), vec![]);
        assert_eq!(d.state().hint.as_deref(), Some("Type an answer first, or press Esc to go back"));
        d.apply(Event::SetText { text: "Cassandra".into() });
        d.apply(Event::Escape);
        assert_eq!(d.apply(Event::Commit), submitted(vec![Selection::custom("Cassandra")]));

        // A number key still answers at once, as in Claude Code.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Pick { index: 0 });
        assert_eq!(keys(&mut d, &["2"]), submitted(vec![Selection::option("SQLite")]));

        // Clicked, then the pointer passes over another row: Enter sends the one clicked.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Pick { index: 2 });
        d.apply(Event::Focus { index: 0 });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::option("MySQL")]));
        // ... but a key that moves the highlight means the row it lands on.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Pick { index: 2 });
        d.apply(Event::Focus { index: 0 });
        assert_eq!(keys(&mut d, &["ArrowDown", "Enter"]), submitted(vec![Selection::option("SQLite")]));
        // With nothing clicked, Enter takes the row the pointer is on, as before.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Focus { index: 1 });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::option("SQLite")]));
    }

    #[test]
    fn out_of_range_indices_are_ignored() {
        let mut d = dialog(vec![db(), features()]);
        let before = d.state();
        for e in [Event::Pick { index: 4 }, Event::Focus { index: 99 }, Event::GoTab { index: 3 }, Event::Pick { index: usize::MAX }] {
            assert_eq!(d.apply(e), vec![]);
        }
        assert_eq!(d.state(), before);
        d.apply(Event::Focus { index: 3 });
        assert_eq!(d.slots[0].focus, 3);
    }

    #[test]
    fn focus_is_ignored_while_editing() {
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["o"]);
        d.apply(Event::Focus { index: 0 });
        assert!(d.is_editing());
        assert_eq!(d.slots[0].focus, 3);
    }

    #[test]
    fn free_text_is_always_editing() {
        let mut d = dialog(vec![name()]);
        let v = d.state();
        assert!(v.editing && v.question.as_ref().is_some_and(|q| q.free_text));
        assert_eq!(v.rows.len(), 1);
        assert_eq!(d.key("j"), KeyOutcome::default(), "printable keys go to the textarea");
        assert_eq!(keys(&mut d, &["Enter"]), vec![]);
        assert_eq!(d.state().hint.as_deref(), Some("Type an answer first"));
        d.apply(Event::SetText { text: "order-processor".into() });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::custom("order-processor")]));
    }

    #[test]
    fn escape_on_free_text_cancels_and_asks_first_when_something_is_typed() {
        let mut d = dialog(vec![name()]);
        assert_eq!(keys(&mut d, &["Escape"]), vec![Effect::Cancelled { chat: false }]);
        let mut d = dialog(vec![name()]);
        d.apply(Event::SetText { text: "draft".into() });
        assert_eq!(keys(&mut d, &["Escape"]), vec![], "typed but not confirmed text is not thrown away unasked");
        assert_eq!(d.state().prompt.map(|p| p.text), Some("Decline, and lose the answer you gave?".into()));
        assert_eq!(keys(&mut d, &["y"]), vec![Effect::Cancelled { chat: false }]);
        assert_eq!(d.done(), Some(Done::Cancelled));
    }

    #[test]
    fn chat_about_this_declines_with_chat_and_asks_first_when_something_is_chosen() {
        let mut d = dialog(vec![db(), name()]);
        assert_eq!(d.apply(Event::Chat), vec![Effect::Cancelled { chat: true }]);
        let mut d = dialog(vec![db(), name()]);
        d.apply(Event::Pick { index: 1 });
        assert_eq!(d.apply(Event::Chat), vec![]);
        assert_eq!(d.state().prompt.map(|p| p.text), Some("Decline to talk it over, and lose the answer you gave?".into()));
        assert_eq!(d.apply(Event::Confirm { yes: true }), vec![Effect::Cancelled { chat: true }]);
    }

    #[test]
    fn a_restored_question_keeps_its_cursor() {
        let mut d = dialog(vec![db(), name()]);
        keys(&mut d, &["ArrowDown", "ArrowDown"]);
        let mut restored = Dialog::restore(&request(vec![db(), name()]), DialogOptions::default(), d.draft());
        assert_eq!(restored.state().rows.iter().position(|r| r.focused), Some(2));
        assert_eq!(keys(&mut restored, &["Enter"]), vec![], "Enter chooses MySQL, where the cursor was, and moves on");
        assert_eq!(restored.draft().questions[0].selected, [2]);
    }

    #[test]
    fn notes_travel_with_each_answer_and_survive_a_restore() {
        let mut d = dialog(vec![db(), name()]);
        d.apply(Event::Notes { text: "  only for now ".into() });
        assert_eq!(d.state().notes, "  only for now ");
        let restored = Dialog::restore(&request(vec![db(), name()]), DialogOptions::default(), d.draft());
        assert_eq!(restored.state().notes, "  only for now ");
        keys(&mut d, &["1"]);
        d.apply(Event::SetText { text: "svc".into() });
        let effects = keys(&mut d, &["Enter", "Enter"]);
        let Some(Effect::Submitted { answers }) = effects.first() else { panic!("{effects:?}") };
        assert_eq!(answers[0].notes.as_deref(), Some("only for now"));
        assert_eq!(answers[1].notes, None, "empty notes are not sent");
    }

    #[test]
    fn answering_moves_to_the_next_unanswered_then_to_submit() {
        let mut d = dialog(vec![db(), features(), name()]);
        keys(&mut d, &["ArrowRight"]);
        assert_eq!(d.tab, 1);
        keys(&mut d, &["1", "Enter"]);
        assert_eq!(d.tab, 2, "forward first");
        d.apply(Event::SetText { text: "svc".into() });
        keys(&mut d, &["Enter"]);
        assert_eq!(d.tab, 0, "then wrapping");
        keys(&mut d, &["2"]);
        let v = d.state();
        assert!(v.on_submit_tab && v.question.is_none() && v.rows.is_empty());
        assert_eq!(v.active_tab, 3);
        assert_eq!(v.tabs.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["DB", "Q2", "Q3", "Submit"]);
        assert!(v.tabs.iter().all(|t| t.answered));
        assert_eq!(
            v.review.iter().map(|r| r.answer.clone()).collect::<Vec<_>>(),
            [Some("SQLite".into()), Some("Auth".into()), Some("svc".into())]
        );
        assert!(v.unanswered.is_empty());
        assert_eq!(keys(&mut d, &["ArrowDown", "ArrowUp"]), vec![]);
        assert_eq!(d.tab, 3, "Up/Down do nothing on the Submit tab");
        let want = vec![Selection::option("SQLite"), Selection::option("Auth"), Selection::custom("svc")];
        assert_eq!(keys(&mut d, &["Enter"]), submitted(want));
    }

    #[test]
    fn submit_with_unanswered_questions_names_them_and_jumps() {
        let mut d = dialog(vec![db(), features(), name()]);
        keys(&mut d, &["ArrowRight", "1", "Enter"]);
        d.apply(Event::GoTab { index: 3 });
        let v = d.state();
        assert_eq!(v.review[1].answer.as_deref(), Some("Auth"));
        assert_eq!(v.review[0].answer, None);
        assert_eq!(v.unanswered, ["Which database?", "Project name?"]);
        assert_eq!(keys(&mut d, &["Enter"]), vec![]);
        assert_eq!(d.tab, 0);
        assert_eq!(d.state().hint.as_deref(), Some("Answer every question first: DB, Q3"));
    }

    #[test]
    fn tabs_wrap_and_tab_is_never_the_dialogs() {
        let mut d = dialog(vec![db(), features()]);
        for k in ["Tab", "Shift+Tab"] {
            assert!(!d.key(k).handled, "{k}: the focus moves on to the next control");
        }
        keys(&mut d, &["ArrowLeft"]);
        assert_eq!(d.tab, 2, "← wraps to Submit");
        assert!(!d.key("Tab").handled);
        keys(&mut d, &["ArrowRight"]);
        assert_eq!(d.tab, 0);
        keys(&mut d, &["o"]);
        assert!(d.is_editing());
        assert!(!d.key("Tab").handled, "while editing too");
        assert!(d.is_editing() && d.tab == 0);
        keys(&mut d, &["Escape", "ArrowRight", "ArrowLeft"]);
        assert_eq!(d.tab, 0);
        assert!(!d.is_editing(), "coming back does not resume editing");
    }

    #[test]
    fn typing_on_the_other_row_types_and_never_answers() {
        // ↓ to Other, then "cassandra": c is not "Chat about this", 1 is not option 1.
        let mut d = dialog(vec![db()]);
        assert_eq!(keys(&mut d, &["End"]), []);
        assert!(d.on_other_row() && !d.is_editing());
        assert_eq!(keys(&mut d, &["c"]), []);
        assert!(d.is_editing() && d.state().prompt.is_none());
        assert_eq!(d.state().other_text, "c");
        // The rest goes to the text field (the front end's), then Enter sends it.
        d.apply(Event::SetText { text: "cassandra 1".into() });
        assert_eq!(sent(&keys(&mut d, &["Enter"])).custom.as_deref(), Some("cassandra 1"));

        let mut d = dialog(vec![db()]);
        assert_eq!(keys(&mut d, &["End", "1", "j", "k", "a"]), []);
        assert_eq!(d.state().other_text, "1", "the first key starts the text; the field has the rest");
        assert_eq!(d.done(), None);

        // In a multi-select the typed text checks Other; in an approval it is the denial's message.
        let mut d = dialog(vec![features()]);
        keys(&mut d, &["End", "x"]);
        assert!(d.is_editing() && d.slots[0].draft.other);
        let mut d = approval("rm -rf build");
        keys(&mut d, &["End", "a"]);
        assert!(d.is_editing() && d.done().is_none(), "a on the deny row types, it does not allow");
        assert_eq!(d.state().other_text, "a");
        // Space still opens the field, arrows still move away.
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["End", " "]);
        assert!(d.is_editing() && d.state().other_text.is_empty());
        let mut d = dialog(vec![db()]);
        keys(&mut d, &["End", "ArrowUp"]);
        assert!(!d.on_other_row() && d.slots[0].focus == 2);
    }

    #[test]
    fn an_approval_shown_in_part_is_never_allowed() {
        let mut d = approval("cargo build --release");
        d.apply(Event::Shown { whole: false });
        for allow in [vec!["a"], vec!["A"], vec!["Home", "Enter"], vec!["Home", "ArrowDown", "Enter"]] {
            assert_eq!(keys(&mut d, &allow), [], "{allow:?}");
            assert!(d.state().hint.unwrap().starts_with("Scroll to its end first"));
        }
        assert_eq!(d.apply(Event::Pick { index: 0 }), []);
        assert_eq!(keys(&mut d, &["Enter"]), []);
        assert_eq!(d.done(), None);
        // Denying needs nothing seen.
        let mut denied = d.clone();
        assert_eq!(sent(&keys(&mut denied, &["d", "Enter"])).selected, [DENY]);
        // Scrolled to its end: allowed.
        d.apply(Event::Shown { whole: true });
        assert_eq!(sent(&keys(&mut d, &["a"])).selected, [ALLOW]);
    }

    #[test]
    fn an_approvals_deny_button_sends_the_message_typed_under_it() {
        let mut d = approval("rm -rf build");
        keys(&mut d, &["d"]);
        d.apply(Event::SetText { text: "use cargo clean".into() });
        let s = sent(&d.apply(Event::Quick { number: 3 }));
        assert_eq!((s.selected.len(), s.custom.as_deref()), (0, Some("use cargo clean")));
        let mut d = approval("rm -rf build");
        assert_eq!(sent(&d.apply(Event::Quick { number: 3 })).selected, [DENY]);
    }

    #[test]
    fn submit_with_nothing_chosen_asks_for_a_choice() {
        // An approval: the button with nothing chosen does not allow.
        let mut d = approval("rm -rf build");
        assert_eq!(d.apply(Event::Commit), []);
        assert_eq!(d.done(), None);
        assert_eq!(d.state().hint.as_deref(), Some("Choose first: Allow, Always allow or Deny"));
        // A single select: not the first row, nor the row the pointer rests on.
        let mut d = dialog(vec![db()]);
        d.apply(Event::Focus { index: 2 });
        assert_eq!(d.apply(Event::Commit), []);
        assert_eq!(d.done(), None);
        assert!(d.state().hint.unwrap().starts_with("Choose an option first"));
        // Once chosen (a kept draft, the page's form), the button sends that choice.
        let draft = Draft { tab: 0, questions: vec![QuestionDraft { selected: vec![1], ..QuestionDraft::default() }] };
        let mut d = Dialog::restore(&request(vec![db()]), DialogOptions::default(), draft);
        d.apply(Event::Focus { index: 0 });
        assert_eq!(sent(&d.apply(Event::Commit)).selected, ["SQLite"]);
        // Typed text under Other is a choice too.
        let mut d = dialog(vec![db()]);
        d.apply(Event::SetText { text: "Cassandra".into() });
        d.apply(Event::Escape);
        assert_eq!(sent(&d.apply(Event::Commit)).custom.as_deref(), Some("Cassandra"));
        // Enter on a focused row is the keyboard's explicit choice, and still sends it.
        let mut d = dialog(vec![db()]);
        assert_eq!(sent(&keys(&mut d, &["ArrowDown", "Enter"])).selected, ["SQLite"]);
    }

    #[test]
    fn the_next_button_confirms_the_rows_checked_not_the_row_under_the_pointer() {
        let mut d = dialog(vec![q("Which?", &["A", "B"], true), q("Name?", &[], false)]);
        d.apply(Event::Quick { number: 1 });
        d.apply(Event::Focus { index: 2 }); // the pointer passed over Other
        d.apply(Event::Commit);
        assert!(d.state().tabs[0].answered && !d.slots[0].draft.other, "A confirmed, Other untouched");
        assert_eq!(d.tab, 1);
    }

    #[test]
    fn leaving_a_question_with_boxes_ticked_or_text_typed_answers_it() {
        let mut d = dialog(vec![q("Which?", &["A", "B"], true), q("Name?", &[], false), q("Why?", &[], false)]);
        d.apply(Event::Quick { number: 2 });
        assert!(!d.state().tabs[0].answered, "not yet: still on it");
        d.apply(Event::NextTab);
        assert!(d.state().tabs[0].answered, "a box ticked, then another tab: answered");
        d.apply(Event::SetText { text: "atlas".into() });
        d.apply(Event::GoTab { index: 2 });
        assert!(d.state().tabs[1].answered, "text typed, then another tab: answered");
        d.apply(Event::NextTab);
        assert!(!d.state().tabs[2].answered, "nothing typed is no answer");
    }

    #[test]
    fn answered_is_derived_from_the_draft() {
        let mut d = dialog(vec![features(), db()]);
        keys(&mut d, &["1", "Enter"]);
        assert!(d.is_answered(0));
        d.apply(Event::GoTab { index: 0 });
        keys(&mut d, &["1"]);
        assert!(!d.is_answered(0) && d.slots[0].draft.confirmed, "unchecking everything un-answers");
        keys(&mut d, &["2"]);
        assert!(d.is_answered(0), "still confirmed, valid again");
        d.apply(Event::GoTab { index: 1 });
        keys(&mut d, &["o"]);
        d.apply(Event::SetText { text: "Dynamo".into() });
        keys(&mut d, &["Enter"]);
        assert!(d.is_answered(1));
        d.apply(Event::GoTab { index: 1 });
        d.apply(Event::SetText { text: " ".into() });
        assert!(!d.is_answered(1), "clearing the chosen Other text un-answers");
        assert!(!d.state().tabs[1].answered);
    }

    #[test]
    fn escape_with_nothing_answered_cancels_at_once() {
        let mut d = dialog(vec![features(), db()]);
        keys(&mut d, &["1", "Enter"]);
        d.apply(Event::GoTab { index: 0 });
        keys(&mut d, &["1"]);
        assert_eq!(keys(&mut d, &["Escape"]), vec![Effect::Cancelled { chat: false }], "a confirmed but emptied question does not count");
    }

    #[test]
    fn discard_prompt_no_then_yes() {
        let mut d = dialog(vec![db(), features()]);
        keys(&mut d, &["1"]);
        assert_eq!(keys(&mut d, &["Escape"]), vec![]);
        let p = d.state().prompt.expect("prompt");
        assert_eq!(p.kind, PromptKind::Discard { count: 1, chat: false });
        assert_eq!(p.text, "Decline, and lose the answer you gave?");
        assert_eq!((p.yes.as_str(), p.no.as_str()), ("Decline", "Keep answering"));
        assert_eq!(p.lost, ["DB: Postgres"], "what would be lost is shown");
        assert!(!p.default_yes);
        // While the prompt is open, other events do nothing.
        assert_eq!(d.key("j"), KeyOutcome::default());
        d.apply(Event::Next);
        d.apply(Event::NextTab);
        assert_eq!((d.tab, d.slots[1].focus), (1, 0));
        assert_eq!(keys(&mut d, &["Enter"]), vec![], "Enter is No");
        assert!(d.state().prompt.is_none());
        keys(&mut d, &["Escape"]);
        assert_eq!(keys(&mut d, &["n"]), vec![]);
        keys(&mut d, &["Escape"]);
        assert_eq!(keys(&mut d, &["Escape"]), vec![], "Escape closes the prompt");
        keys(&mut d, &["Escape"]);
        assert_eq!(keys(&mut d, &["Y"]), vec![Effect::Cancelled { chat: false }]);
    }

    #[test]
    fn discard_prompt_counts_answers() {
        let mut d = dialog(vec![db(), features(), name()]);
        keys(&mut d, &["1", "1", "Enter", "Escape"]);
        assert_eq!(d.state().prompt.map(|p| p.text), Some("Decline, and lose the 2 answers you gave?".into()));
        assert_eq!(d.apply(Event::Confirm { yes: true }), vec![Effect::Cancelled { chat: false }]);
    }

    #[test]
    fn long_answer_prompt() {
        let opts = DialogOptions { soft_limit: 5, ..DialogOptions::default() };
        let mut d = Dialog::new(&request(vec![db()]), opts.clone());
        keys(&mut d, &["o"]);
        d.apply(Event::SetText { text: " abcdef ".into() });
        assert_eq!(keys(&mut d, &["Enter"]), vec![]);
        let p = d.state().prompt.expect("prompt");
        assert_eq!(p.kind, PromptKind::LongAnswer { chars: 6 });
        assert_eq!(p.text, "Answer is long (6 chars). Continue anyway?");
        assert!(p.default_yes);
        assert_eq!(keys(&mut d, &["n"]), vec![]);
        assert!(d.is_editing(), "No returns to editing");
        d.apply(Event::SetText { text: "abcde".into() });
        assert_eq!(keys(&mut d, &["Enter"]), submitted(vec![Selection::custom("abcde")]), "at the limit is fine");

        let mut d = Dialog::new(&request(vec![features(), db()]), opts);
        keys(&mut d, &["1"]);
        d.apply(Event::SetText { text: "abcdefg".into() });
        keys(&mut d, &["Escape", "Home", "Enter"]);
        assert!(d.state().prompt.is_some(), "a checked long Other asks from any row");
        assert_eq!(keys(&mut d, &["Escape"]), vec![]);
        assert!(d.is_editing());
        assert_eq!(keys(&mut d, &["Enter", "Enter"]), vec![], "Enter is Yes");
        assert!(d.is_answered(0));
        assert_eq!(d.tab, 1);
    }

    #[test]
    fn scroll_window_follows_focus_minimally() {
        let options: Vec<String> = (1..=10).map(|i| format!("opt{i}")).collect();
        let labels: Vec<&str> = options.iter().map(String::as_str).collect();
        let opts = DialogOptions { viewport: 5, ..DialogOptions::default() };
        let mut d = Dialog::new(&request(vec![q("Pick", &labels, false)]), opts);
        let w = |d: &Dialog| {
            let w = d.state().window;
            (w.start, w.end, w.above, w.below)
        };
        assert_eq!(w(&d), (0, 5, 0, 6));
        keys(&mut d, &["j", "j", "j", "j"]);
        assert_eq!(w(&d), (0, 5, 0, 6));
        keys(&mut d, &["j"]);
        assert_eq!(w(&d), (1, 6, 1, 5));
        keys(&mut d, &["k", "k", "k", "k"]);
        assert_eq!(w(&d), (1, 6, 1, 5), "moving inside the window does not scroll");
        keys(&mut d, &["k"]);
        assert_eq!(w(&d), (0, 5, 0, 6));
        keys(&mut d, &["End"]);
        assert_eq!(w(&d), (6, 11, 6, 0));
        d.apply(Event::Resize { viewport: 3 });
        assert_eq!(w(&d), (8, 11, 8, 0));
        d.apply(Event::Resize { viewport: 50 });
        assert_eq!(w(&d), (0, 11, 0, 0));
        d.apply(Event::Resize { viewport: 0 });
        assert_eq!(w(&d), (10, 11, 10, 0), "a zero viewport shows one row");
        d.apply(Event::Resize { viewport: usize::MAX });
        assert_eq!(w(&d), (0, 11, 0, 0));
    }

    #[test]
    fn keys_when_not_editing() {
        let mut d = dialog(vec![db(), features()]);
        for k in ["x", "J", "Shift+Enter", "Backspace", "F5", "10", " "] {
            assert_eq!(d.key(k), KeyOutcome::default(), "{k:?}");
        }
        assert_eq!(d.key_event("ArrowDown"), Some(Event::Next));
        assert_eq!(d.key_event("k"), Some(Event::Prev));
        assert_eq!(d.key_event("Home"), Some(Event::First));
        assert_eq!(d.key_event("End"), Some(Event::Last));
        assert_eq!(d.key_event("7"), Some(Event::Quick { number: 7 }));
        assert_eq!(d.key_event("o"), Some(Event::Other));
        assert_eq!(d.key_event("Tab"), None);
        assert_eq!(d.key_event("ArrowRight"), Some(Event::NextTab));
        assert_eq!(d.key_event("ArrowLeft"), Some(Event::PrevTab));
        d.apply(Event::NextTab);
        assert_eq!(d.key_event(" "), Some(Event::Toggle), "Space toggles in multi select");
        d.apply(Event::NextTab);
        for k in ["ArrowDown", "1", "o", " "] {
            assert_eq!(d.key_event(k), None, "{k:?} on the Submit tab");
        }
        assert_eq!(d.key_event("Enter"), Some(Event::Enter));
        // One question: no tabs, so Tab belongs to the browser.
        let d = dialog(vec![db()]);
        assert_eq!(d.key_event("Tab"), None);
        assert_eq!(d.key_event("ArrowRight"), None);
    }

    #[test]
    fn keys_while_editing() {
        let mut d = dialog(vec![db(), features()]);
        keys(&mut d, &["o"]);
        for k in ["j", "1", "0", " ", "Shift+Enter", "ArrowDown", "ArrowLeft", "Backspace", "Home"] {
            assert_eq!(d.key(k), KeyOutcome::default(), "{k:?}");
        }
        assert_eq!(d.key_event("Enter"), Some(Event::Enter));
        assert_eq!(d.key_event("Escape"), Some(Event::Escape));
        assert_eq!(d.key_event("Shift+Tab"), None);
        assert_eq!(d.key_event("Tab"), None);
        let d = dialog(vec![name()]);
        assert_eq!(d.key_event("Tab"), None);
    }

    #[test]
    fn done_dialog_ignores_everything() {
        let mut d = dialog(vec![db()]);
        assert_eq!(keys(&mut d, &["Escape"]), vec![Effect::Cancelled { chat: false }]);
        let before = d.state();
        assert_eq!(d.key("Enter"), KeyOutcome::default());
        assert_eq!(d.apply(Event::Pick { index: 0 }), vec![]);
        assert_eq!(d.apply(Event::Escape), vec![]);
        assert_eq!(d.state(), before);
        assert_eq!(before.footer, "");
    }

    #[test]
    fn footers_match_the_mode() {
        let mut d = dialog(vec![db()]);
        assert_eq!(d.state().footer, "↑↓ navigate • 1-3 quick select • Enter select • Esc cancel");
        keys(&mut d, &["o"]);
        assert_eq!(d.state().footer, "Enter submit • Shift+Enter new line • Esc back");
        let mut d = dialog(vec![features(), name()]);
        assert_eq!(d.state().footer, "↑↓ navigate • Space toggle • Enter confirm • ←→ switch • Esc cancel");
        keys(&mut d, &["o"]);
        assert_eq!(d.state().footer, "Enter confirm • Shift+Enter new line • Esc back");
        keys(&mut d, &["Escape", "ArrowRight"]);
        assert_eq!(d.state().footer, "Enter submit • Shift+Enter new line • Esc cancel");
        d.apply(Event::NextTab);
        assert_eq!(d.state().footer, "Enter submit • ←→ switch • Esc cancel");
        keys(&mut d, &["ArrowRight", "1", "Enter", "Escape"]);
        assert_eq!(d.state().footer, "y yes • n/Enter/Esc no");
    }

    #[test]
    fn the_new_line_key_in_the_footer_is_the_front_ends() {
        let opts = DialogOptions { newline_key: "Alt+Enter".into(), ..DialogOptions::default() };
        let mut d = Dialog::new(&request(vec![features(), name()]), opts);
        let mut footers = vec![d.state().footer];
        keys(&mut d, &["o"]);
        footers.push(d.state().footer);
        assert_eq!(footers[1], "Enter confirm • Alt+Enter new line • Esc back");
        keys(&mut d, &["Escape", "ArrowRight"]);
        footers.push(d.state().footer);
        assert_eq!(footers[2], "Enter submit • Alt+Enter new line • Esc cancel");
        assert!(footers.iter().all(|f| !f.contains("Shift+Enter")), "{footers:?}");
        // A host's options from JSON: the key is optional, the page's by default.
        let parsed: DialogOptions = serde_json::from_str(r#"{"newlineKey":"Ctrl+J"}"#).unwrap();
        assert_eq!(parsed, DialogOptions { newline_key: "Ctrl+J".into(), ..DialogOptions::default() });
        let parsed: DialogOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(parsed.newline_key, "Shift+Enter");
    }

    #[test]
    fn draft_round_trips_through_json() {
        let req = request(vec![db(), features(), name()]);
        let mut d = Dialog::new(&req, DialogOptions::default());
        keys(&mut d, &["2", "1", "3"]);
        d.apply(Event::SetText { text: "Billing".into() });
        let draft = d.draft();
        let json = serde_json::to_value(&draft).unwrap();
        assert_eq!(json["questions"][1]["otherText"], "Billing");
        let back: Draft = serde_json::from_value(json).unwrap();
        let restored = Dialog::restore(&req, DialogOptions::default(), back);
        assert_eq!(restored.draft(), draft);
        let (a, b) = (restored.state(), d.state());
        assert_eq!((a.active_tab, a.tabs, a.review), (b.active_tab, b.tabs, b.review));
        assert_eq!(restored.slots[0].focus, 1, "focus starts on the chosen option");
    }

    #[test]
    fn restore_clamps_garbage() {
        let req = request(vec![db(), features()]);
        let junk = QuestionDraft {
            selected: vec![9, 2, 1, 2, usize::MAX],
            other: true,
            other_text: "x".into(),
            confirmed: true,
            ..QuestionDraft::default()
        };
        let draft = Draft { tab: 42, questions: vec![junk.clone(), junk.clone(), junk] };
        let d = Dialog::restore(&req, DialogOptions { viewport: 0, soft_limit: 0, ..DialogOptions::default() }, draft);
        assert_eq!(d.tab, 0);
        assert_eq!(d.slots[0].draft.selected, vec![2], "single select keeps its first valid choice");
        assert!(!d.slots[0].draft.other);
        assert_eq!(d.slots[1].draft.selected, vec![1, 2]);
        assert!(d.is_answered(0) && d.is_answered(1));
        assert_eq!(d.draft().questions.len(), 2);
        let free = Dialog::restore(
            &request(vec![name()]),
            DialogOptions::default(),
            Draft { tab: 1, questions: vec![QuestionDraft { selected: vec![0], ..QuestionDraft::default() }] },
        );
        assert_eq!(free.draft().questions[0], QuestionDraft { other: true, focus: Some(0), ..QuestionDraft::default() });
        let from_json: Draft = serde_json::from_str(r#"{"questions":[{"selected":[7]},{}],"extra":1}"#).unwrap();
        let d = Dialog::restore(&req, DialogOptions::default(), from_json);
        assert!(d.slots[0].draft.selected.is_empty());
    }

    #[test]
    fn serde_shapes_for_javascript() {
        let e: Event = serde_json::from_str(r#"{"type":"next"}"#).unwrap();
        assert_eq!(e, Event::Next);
        let e: Event = serde_json::from_str(r#"{"type":"setText","text":"hi"}"#).unwrap();
        assert_eq!(e, Event::SetText { text: "hi".into() });
        let e: Event = serde_json::from_str(r#"{"type":"goTab","index":1}"#).unwrap();
        assert_eq!(e, Event::GoTab { index: 1 });
        let e: Event = serde_json::from_str(r#"{"type":"confirm","yes":true}"#).unwrap();
        assert_eq!(e, Event::Confirm { yes: true });
        assert_eq!(serde_json::to_value(Effect::Cancelled { chat: false }).unwrap(), serde_json::json!({"type": "cancelled"}));
        assert_eq!(serde_json::to_value(Effect::Cancelled { chat: true }).unwrap(), serde_json::json!({"type": "cancelled", "chat": true}));
        assert_eq!(
            serde_json::to_value(Effect::Submitted { answers: vec![Selection::option("A")] }).unwrap(),
            serde_json::json!({"type": "submitted", "answers": [{"selected": ["A"]}]})
        );
        let mut d = dialog(vec![db(), features()]);
        keys(&mut d, &["1", "Escape"]);
        let v = serde_json::to_value(d.state()).unwrap();
        for key in [
            "tabs",
            "activeTab",
            "onSubmitTab",
            "question",
            "rows",
            "otherText",
            "editing",
            "window",
            "prompt",
            "hint",
            "review",
            "unanswered",
            "done",
            "footer",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert_eq!(v["prompt"]["kind"], serde_json::json!({"type": "discard", "count": 1}));
        assert_eq!(v["rows"][3]["isOther"], true);
        assert_eq!(v["question"]["multiSelect"], true);
        assert_eq!(serde_json::to_value(Done::Submitted).unwrap(), "submitted");
    }

    #[test]
    fn no_questions_never_panics() {
        let mut d = dialog(vec![]);
        assert!(d.state().tabs.is_empty());
        for k in ["j", "Tab", "1", " ", "o"] {
            d.key(k);
        }
        assert_eq!(d.apply(Event::Enter), submitted(vec![]));
    }

    // ----- properties -----

    #[derive(Debug, Clone)]
    enum Action {
        Apply(Event),
        Key(&'static str),
    }

    const KEYS: &[&str] = &[
        "ArrowDown",
        "ArrowUp",
        "j",
        "k",
        "Home",
        "End",
        "1",
        "2",
        "3",
        "9",
        "0",
        "o",
        " ",
        "Enter",
        "Shift+Enter",
        "Tab",
        "Shift+Tab",
        "ArrowLeft",
        "ArrowRight",
        "Enter",
        "y",
        "n",
        "x",
        "Backspace",
    ];

    fn question_strategy() -> impl Strategy<Value = Question> {
        (proptest::collection::vec("[A-C ]{0,2}", 0..=8), any::<bool>(), proptest::option::of("[a-z]{1,4}")).prop_map(
            |(labels, multi, header)| Question {
                question: format!("{} {}", labels.len(), multi),
                header,
                options: labels.into_iter().map(Choice::new).collect(),
                multi_select: multi,
            },
        )
    }

    fn event_strategy() -> impl Strategy<Value = Event> {
        let index = prop_oneof![9 => 0usize..12, 1 => Just(usize::MAX)];
        prop_oneof![
            Just(Event::Next),
            Just(Event::Prev),
            Just(Event::First),
            Just(Event::Last),
            index.clone().prop_map(|index| Event::Focus { index }),
            index.clone().prop_map(|index| Event::Pick { index }),
            index.clone().prop_map(|number| Event::Quick { number }),
            Just(Event::Other),
            Just(Event::Toggle),
            "[a-z \n]{0,12}".prop_map(|text| Event::SetText { text }),
            "[a-z ]{0,3}".prop_map(|text| Event::Type { text }),
            Just(Event::Backspace),
            Just(Event::NextTab),
            Just(Event::PrevTab),
            (0usize..7).prop_map(|index| Event::GoTab { index }),
            Just(Event::Enter),
            Just(Event::Enter),
            Just(Event::Commit),
            any::<bool>().prop_map(|yes| Event::Confirm { yes }),
            any::<bool>().prop_map(|whole| Event::Shown { whole }),
            prop_oneof![0usize..6, Just(usize::MAX)].prop_map(|viewport| Event::Resize { viewport }),
        ]
    }

    fn action_strategy() -> impl Strategy<Value = Action> {
        // Escape is rare so that many sessions get as far as submitting.
        prop_oneof![
            36 => event_strategy().prop_map(Action::Apply),
            24 => proptest::sample::select(KEYS).prop_map(Action::Key),
            1 => Just(Action::Apply(Event::Escape)),
            1 => Just(Action::Key("Escape")),
        ]
    }

    fn config() -> ProptestConfig {
        ProptestConfig { cases: 384, rng_seed: RngSeed::Fixed(0x0a5c_05e2), failure_persistence: None, ..ProptestConfig::default() }
    }

    /// What a draft would send, built independently of the dialog's own rules.
    fn naive_selection(q: &Question, d: &QuestionDraft) -> Selection {
        Selection {
            selected: d.selected.iter().map(|&i| q.options[i].label.clone()).collect(),
            custom: (d.other || q.is_free_text()).then(|| d.other_text.clone()),
            notes: None,
        }
    }

    fn check_invariants(d: &Dialog) {
        let n = d.questions.len();
        let v = d.state();
        assert!(d.tab < d.tab_count(), "tab {} of {}", d.tab, d.tab_count());
        assert_eq!(v.tabs.len(), d.tab_count());
        for (i, (question, slot)) in d.questions.iter().zip(&d.slots).enumerate() {
            assert!(slot.focus <= question.options.len());
            assert!(slot.draft.selected.windows(2).all(|w| w[0] < w[1]));
            assert!(slot.draft.selected.iter().all(|&s| s < question.options.len()));
            if !question.multi_select {
                assert!(slot.draft.selected.len() <= 1);
            }
            let valid = resolve(std::slice::from_ref(question), &[naive_selection(question, &slot.draft)]).is_ok();
            assert_eq!(v.tabs[i].answered, slot.draft.confirmed && valid, "question {i}: {:?}", slot.draft);
        }
        if let Some(q) = d.current() {
            let rows = d.questions[q].options.len() + 1;
            let (w, focus) = (v.window, d.slots[q].focus);
            assert!(w.start <= focus && focus < w.end, "{w:?} focus {focus}");
            assert!(w.start <= w.end && w.end <= rows && w.end - w.start <= d.opts.viewport);
            assert_eq!((w.above, w.below), (w.start, rows - w.end));
            assert_eq!(v.rows.len(), rows);
            assert_eq!(v.rows.iter().filter(|r| r.focused).count(), 1);
            if v.editing {
                assert_eq!(focus, rows - 1);
            }
        } else {
            assert!(v.on_submit_tab && v.rows.is_empty() && !v.editing && n >= 2);
        }
        serde_json::to_string(&v).expect("the view serializes");
    }

    fn run(d: &mut Dialog, actions: &[Action]) {
        let mut done_effects = 0;
        for action in actions {
            let was_done = d.done().is_some();
            let effects = match action {
                Action::Apply(e) => d.apply(e.clone()),
                Action::Key(k) => {
                    let out = d.key(k);
                    assert!(out.handled || out.effects.is_empty());
                    out.effects
                }
            };
            if was_done {
                assert!(effects.is_empty(), "effects after done: {effects:?}");
            }
            for effect in &effects {
                done_effects += 1;
                match effect {
                    Effect::Submitted { answers } => {
                        assert_eq!(answers.len(), d.questions.len());
                        if let Err(e) = resolve(&d.questions, answers) {
                            panic!("submitted an invalid answer: {e}");
                        }
                        assert_eq!(d.done(), Some(Done::Submitted));
                    }
                    Effect::Cancelled { .. } => {
                        assert_eq!(serde_json::to_value(effect).unwrap(), serde_json::json!({"type": "cancelled"}));
                        assert_eq!(d.done(), Some(Done::Cancelled));
                    }
                }
            }
            assert!(done_effects <= 1, "more than one done effect");
            assert_eq!(d.done().is_some(), done_effects == 1);
            check_invariants(d);
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn random_sessions_keep_every_invariant(
            questions in proptest::collection::vec(question_strategy(), 1..=4),
            actions in proptest::collection::vec(action_strategy(), 0..60),
            viewport in 0usize..6,
            soft_limit in 0usize..10,
        ) {
            let mut d = Dialog::new(&request(questions), DialogOptions { viewport, soft_limit, ..DialogOptions::default() });
            check_invariants(&d);
            run(&mut d, &actions);
        }

        #[test]
        fn any_draft_restores_and_round_trips(
            questions in proptest::collection::vec(question_strategy(), 1..=4),
            drafts in proptest::collection::vec(
                (proptest::collection::vec(0usize..12, 0..5), any::<bool>(), "[a-z ]{0,4}", any::<bool>()).prop_map(
                    |(selected, other, other_text, confirmed)| QuestionDraft { selected, other, other_text, confirmed, ..QuestionDraft::default() },
                ),
                0..6,
            ),
            tab in 0usize..8,
            actions in proptest::collection::vec(action_strategy(), 0..20),
        ) {
            let req = request(questions);
            let mut d = Dialog::restore(&req, DialogOptions::default(), Draft { tab, questions: drafts });
            check_invariants(&d);
            let again = Dialog::restore(&req, DialogOptions::default(), d.draft());
            prop_assert_eq!(again.draft(), d.draft());
            run(&mut d, &actions);
            let again = Dialog::restore(&req, DialogOptions::default(), d.draft());
            prop_assert_eq!(again.draft(), d.draft());
        }

        #[test]
        fn answering_in_order_submits_exactly_what_was_chosen(
            plans in proptest::collection::vec(
                (question_strategy(), proptest::collection::vec(0usize..8, 1..4), proptest::option::of("[a-z]{1,5}")),
                1..=4,
            ),
        ) {
            let questions: Vec<Question> = plans.iter().map(|(q, _, _)| q.clone()).collect();
            let mut d = Dialog::new(&request(questions.clone()), DialogOptions::default());
            let mut effects = vec![];
            let mut expected = vec![];
            for (i, (question, picks, text)) in plans.iter().enumerate() {
                prop_assert_eq!(d.tab, i);
                let options = question.options.len();
                let mut picks: Vec<usize> = picks.iter().filter(|_| options > 0).map(|p| p % options.max(1)).collect();
                let text = if picks.is_empty() { Some(text.clone().unwrap_or_else(|| "t".into())) } else { text.clone() };
                let multi = question.multi_select && !question.is_free_text();
                if !multi {
                    picks.truncate(1);
                }
                if multi {
                    picks.sort_unstable();
                    picks.dedup();
                    for &p in &picks {
                        effects.extend(d.apply(Event::Pick { index: p }));
                    }
                    if let Some(t) = &text {
                        effects.extend(d.apply(Event::SetText { text: format!(" {t} ") }));
                    }
                    effects.extend(d.key("Enter").effects);
                    expected.push(Selection {
                        selected: picks.iter().map(|&p| question.options[p].label.clone()).collect(),
                        custom: text,
                        notes: None,
                    });
                } else if picks.is_empty() {
                    effects.extend(d.apply(Event::SetText { text: text.clone().unwrap_or_default() }));
                    effects.extend(d.key("Enter").effects);
                    expected.push(Selection { custom: text, ..Selection::default() });
                } else {
                    effects.extend(d.apply(Event::Pick { index: picks[0] }));
                    effects.extend(d.apply(Event::Commit));
                    expected.push(Selection::option(question.options[picks[0]].label.clone()));
                }
            }
            if questions.len() >= 2 {
                prop_assert!(d.state().on_submit_tab);
                prop_assert!(d.state().unanswered.is_empty());
                effects.extend(d.key("Enter").effects);
            }
            prop_assert_eq!(effects, vec![Effect::Submitted { answers: expected }]);
        }
    }
}
