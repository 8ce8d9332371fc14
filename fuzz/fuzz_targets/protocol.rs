//! Protocol decoding (both sockets) and answer bodies on any text.
//!
//! Invariants: nothing panics; a refused frame is `bad_message` with a message; an
//! accepted frame re-encodes to a frame that decodes to the same message; an answer
//! body either resolves against a question set into a result every format can print,
//! or is refused with named errors.
#![no_main]

use askuser_core::protocol::{decode_agent, decode_browser, AgentMessage, AnswerBody, ErrorCode};
use askuser_core::{normalize, resolve, AskResult, Format, Limits};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn questions() -> &'static askuser_core::Request {
    static R: OnceLock<askuser_core::Request> = OnceLock::new();
    R.get_or_init(|| {
        let v = serde_json::json!({"questions": [
            {"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
            {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "API"}, {"label": "UI"}]},
            {"question": "Name?"}
        ], "metadata": {"k": 1}});
        normalize(&v, &Limits::default()).unwrap().request
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match decode_agent(text) {
        Ok(m) => {
            let again = decode_agent(&serde_json::to_string(&m).unwrap()).expect("a decoded agent message re-encodes");
            match (&m, &again) {
                (AgentMessage::Ask { reference: a, format: f, .. }, AgentMessage::Ask { reference: b, format: g, .. }) => {
                    assert_eq!((a, f), (b, g));
                }
                _ => assert_eq!(m, again),
            }
        }
        Err(e) => {
            assert_eq!(e.code, ErrorCode::BadMessage);
            assert!(!e.message.is_empty());
        }
    }
    match decode_browser(text) {
        Ok(m) => assert_eq!(decode_browser(&serde_json::to_string(&m).unwrap()).expect("re-encodes"), m),
        Err(e) => {
            assert_eq!(e.code, ErrorCode::BadMessage);
            assert!(!e.message.is_empty());
        }
    }
    if let Ok(body) = serde_json::from_str::<AnswerBody>(text) {
        let request = questions();
        match body.answers.selections(&request.questions) {
            Ok(selections) => match resolve(&request.questions, &selections) {
                Ok(answers) => {
                    assert_eq!(answers.len(), request.questions.len());
                    let result = AskResult::answered("q-1", request, answers, 1);
                    for f in [Format::Canonical, Format::Claude, Format::Pi, Format::Text] {
                        let _ = result.to_json(f);
                        let _ = result.to_text(f);
                    }
                    let _ = result.summary();
                }
                Err(e) => assert!(!e.errors.is_empty()),
            },
            Err(e) => assert!(!e.errors.is_empty()),
        }
    }
});
