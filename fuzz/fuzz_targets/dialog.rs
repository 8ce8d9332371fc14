//! The dialog state machine driven by random event and key sequences, from a fresh
//! start or a random (possibly nonsense) saved draft.
//!
//! Invariants, after every step: nothing panics; the active tab exists; on a question
//! tab exactly one row is focused and it is inside the visible window, which fits the
//! viewport; a tab shows answered exactly when its draft is confirmed and resolves;
//! at most one submitted/cancelled effect, never anything after it, and a submitted
//! answer always resolves against the questions; the draft restores to itself.
#![no_main]

use askuser_core::dialog::{Dialog, DialogOptions, Draft, Effect, Event, QuestionDraft};
use askuser_core::{normalize, resolve, Limits, Question, Selection};
use libfuzzer_sys::fuzz_target;

const KEYS: &[&str] = &[
    "Enter",
    "Escape",
    "Tab",
    "Shift+Tab",
    "ArrowDown",
    "ArrowUp",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "j",
    "k",
    " ",
    "0",
    "o",
    "1",
    "2",
    "3",
    "9",
    "y",
    "n",
    "Y",
    "N",
    "x",
    "Shift+Enter",
    "Backspace",
];

/// Reads the fuzzer's bytes as small numbers.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn small(&mut self, n: usize) -> usize {
        self.byte().map_or(0, |b| b as usize % n)
    }

    fn text(&mut self) -> String {
        let len = self.small(6);
        (0..len).map(|_| ["a", " ", "é", "\n", "🙂", "Z"][self.small(6)]).collect()
    }
}

fn selection(q: &Question, d: &QuestionDraft) -> Selection {
    Selection {
        selected: d.selected.iter().map(|&i| q.options[i].label.clone()).collect(),
        custom: (d.other || q.is_free_text()).then(|| d.other_text.clone()),
        notes: None,
    }
}

fn check(d: &Dialog, questions: &[Question], viewport: usize) {
    let v = d.state();
    assert!(v.active_tab < v.tabs.len(), "tab {} of {}", v.active_tab, v.tabs.len());
    assert_eq!(v.tabs.len(), questions.len() + usize::from(questions.len() >= 2));
    let draft = d.draft();
    for (i, (q, qd)) in questions.iter().zip(&draft.questions).enumerate() {
        assert!(qd.selected.windows(2).all(|w| w[0] < w[1]), "{qd:?}");
        assert!(qd.selected.iter().all(|&s| s < q.options.len()));
        assert!(q.multi_select || qd.selected.len() <= 1);
        let valid = resolve(std::slice::from_ref(q), &[selection(q, qd)]).is_ok();
        assert_eq!(v.tabs[i].answered, qd.confirmed && valid, "question {i}: {qd:?}");
    }
    match &v.question {
        Some(q) => {
            let rows = questions[q.index].options.len() + 1;
            assert_eq!(v.rows.len(), rows);
            let focused: Vec<usize> = v.rows.iter().filter(|r| r.focused).map(|r| r.index).collect();
            assert_eq!(focused.len(), 1, "{focused:?}");
            let w = v.window;
            assert!(w.start <= focused[0] && focused[0] < w.end, "{w:?} focus {}", focused[0]);
            assert!(w.end <= rows && w.end - w.start <= viewport.max(1));
            assert_eq!((w.above, w.below), (w.start, rows - w.end));
        }
        None => assert!(v.on_submit_tab && v.rows.is_empty() && questions.len() >= 2),
    }
    let restored = Dialog::restore(&request_of(questions), DialogOptions { viewport, ..DialogOptions::default() }, draft.clone());
    assert_eq!(restored.draft(), draft, "a draft restores to itself");
}

fn request_of(questions: &[Question]) -> askuser_core::Request {
    askuser_core::Request { questions: questions.to_vec(), ..askuser_core::Request::default() }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    // A valid request: 1-4 questions, 0-11 options each, single or multi select.
    let n = 1 + b.small(4);
    let qs: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let options: Vec<serde_json::Value> = (0..b.small(12)).map(|j| serde_json::json!({"label": format!("L{j}")})).collect();
            let header = (b.small(2) == 0).then(|| format!("H{i}"));
            serde_json::json!({"question": format!("Q{i}?"), "header": header, "options": options, "multiSelect": b.small(2) == 1})
        })
        .collect();
    let Ok(normalized) = normalize(&serde_json::json!({"questions": qs}), &Limits::default()) else { return };
    let request = normalized.request;
    let mut viewport = b.small(9);
    let soft_limit = [0, 1, 5, 2000][b.small(4)];
    let opts = DialogOptions { viewport, soft_limit, ..DialogOptions::default() };
    let mut d = if b.small(2) == 0 {
        Dialog::new(&request, opts)
    } else {
        // A saved draft of any shape: out-of-range indices, too many questions, a bad tab.
        let draft = Draft {
            tab: b.small(8),
            questions: (0..b.small(6))
                .map(|_| QuestionDraft {
                    selected: (0..b.small(4)).map(|_| b.small(16)).collect(),
                    other: b.small(2) == 1,
                    other_text: b.text(),
                    confirmed: b.small(2) == 1,
                    notes: b.text(),
                    focus: (b.small(2) == 1).then(|| b.small(16)),
                })
                .collect(),
        };
        Dialog::restore(&request, opts, draft)
    };
    check(&d, &request.questions, viewport);
    let mut finished = 0;
    while let Some(op) = b.byte() {
        let was_done = d.done().is_some();
        let effects = match op % 27 {
            0 => {
                let out = d.key(KEYS[b.small(KEYS.len())]);
                assert!(out.handled || out.effects.is_empty());
                out.effects
            }
            k => {
                let event = match k {
                    1 => Event::Next,
                    2 => Event::Prev,
                    3 => Event::First,
                    4 => Event::Last,
                    5 => Event::Focus { index: b.small(16) },
                    6 => Event::Pick { index: b.small(16) },
                    7 => Event::Quick { number: b.small(14) },
                    8 => Event::Other,
                    9 => Event::Toggle,
                    10 => Event::SetText { text: b.text() },
                    11 => Event::Type { text: b.text() },
                    12 => Event::Backspace,
                    13 => Event::NextTab,
                    14 => Event::PrevTab,
                    15 => Event::GoTab { index: b.small(8) },
                    16 | 17 => Event::Enter,
                    18 => Event::Escape,
                    19 => Event::Confirm { yes: b.small(2) == 1 },
                    20 => Event::Resize { viewport: b.small(9) },
                    21 => Event::Focus { index: usize::MAX },
                    22 => Event::GoTab { index: usize::MAX },
                    23 => Event::Notes { text: b.text() },
                    24 => Event::Decline,
                    25 => Event::Chat,
                    _ => Event::Quick { number: usize::MAX },
                };
                if let (Event::Resize { viewport: v }, false) = (&event, was_done) {
                    viewport = *v;
                }
                d.apply(event)
            }
        };
        if was_done {
            assert!(effects.is_empty(), "effects after done: {effects:?}");
        }
        for effect in &effects {
            finished += 1;
            if let Effect::Submitted { answers } = effect {
                assert_eq!(answers.len(), request.questions.len());
                resolve(&request.questions, answers).unwrap_or_else(|e| panic!("submitted an invalid answer: {e}"));
            }
        }
        assert!(finished <= 1, "more than one done effect");
        assert_eq!(d.done().is_some(), finished == 1);
        check(&d, &request.questions, viewport);
    }
});
