//! The core compiled to wasm32 and run under wasm-bindgen-test (in Node): the same
//! behaviour a browser front end gets. The full unit and property suites run natively;
//! these cover every module on the wasm target.
#![cfg(target_arch = "wasm32")]

use askuser_core::dialect::{normalize, normalize_str, Dialect};
use askuser_core::dialog::{Dialog, DialogOptions, Effect};
use askuser_core::protocol::{decode_browser, BrowserMessage};
use askuser_core::{resolve, AskResult, Format, Limits, Selection};
use serde_json::json;
use wasm_bindgen_test::wasm_bindgen_test;

const EXAMPLES: [(&str, Dialect); 4] = [
    (include_str!("../../../examples/claude.json"), Dialect::Claude),
    (include_str!("../../../examples/pi.json"), Dialect::Pi),
    (include_str!("../../../examples/opal.json"), Dialect::Opal),
    (include_str!("../../../examples/roo.json"), Dialect::Roo),
];

#[wasm_bindgen_test]
fn every_dialect_example_normalizes() {
    for (text, dialect) in EXAMPLES {
        let n = normalize_str(text, &Limits::default()).unwrap();
        assert_eq!(n.dialect, dialect);
        assert!(!n.request.questions.is_empty());
    }
}

#[wasm_bindgen_test]
fn invalid_input_reports_every_error() {
    let e = normalize_str(include_str!("../../../examples/invalid.json"), &Limits::default()).unwrap_err();
    assert_eq!(e.errors.len(), 6, "{e}");
    assert!(e.to_string().contains("questions[0].options[2].label: must not be empty"));
}

#[wasm_bindgen_test]
fn dialog_keys_to_submitted_answers_and_formats() {
    let n = normalize(&json!({"question": "Deploy?", "choices": ["Yes", "No"], "id": "d-1"}), &Limits::default()).unwrap();
    let mut dialog = Dialog::new(&n.request, DialogOptions::default());
    assert!(dialog.key("ArrowDown").handled);
    let out = dialog.key("Enter");
    let Some(Effect::Submitted { answers }) = out.effects.first() else { panic!("expected a submit, got {:?}", out.effects) };
    assert_eq!(answers, &[Selection::option("No")]);
    let result = AskResult::answered("d-1", &n.request, resolve(&n.request.questions, answers).unwrap(), 1);
    assert_eq!(result.to_text(Format::Text), "Deploy? → No");
    assert!(result.to_text(Format::Claude).starts_with("User has answered your questions: \"Deploy?\"=\"No\""));
}

#[wasm_bindgen_test]
fn escape_with_nothing_answered_cancels() {
    let n = normalize(&json!({"question": "Name?"}), &Limits::default()).unwrap();
    let mut dialog = Dialog::new(&n.request, DialogOptions::default());
    assert_eq!(dialog.key("Escape").effects, vec![Effect::Cancelled { chat: false }]);
}

#[wasm_bindgen_test]
fn protocol_decodes_and_refuses() {
    let m = decode_browser(r#"{"type":"cancel","id":"q-1"}"#).unwrap();
    assert_eq!(m, BrowserMessage::Cancel { reference: None, id: "q-1".into(), chat: false });
    assert!(decode_browser(r#"{"type":"nope"}"#).unwrap_err().message.contains("expected one of answer, cancel"));
}
