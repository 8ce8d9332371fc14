//! Dialect detection, normalization and validation on any JSON text.
//!
//! Invariants: nothing panics; a refusal lists at least one error, each with a message;
//! an accepted request is valid by `validate`, and its canonical JSON normalizes back to
//! the same request (the canonical form is itself a dialect, and a fixed point).
#![no_main]

use askuser_core::validate::validate;
use askuser_core::{normalize, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else { return };
    for limits in [Limits::default(), Limits::claude_code()] {
        match normalize(&value, &limits) {
            Ok(n) => {
                let canonical = serde_json::to_value(&n.request).expect("a request serializes");
                let again = normalize(&canonical, &limits).unwrap_or_else(|e| panic!("the canonical form is refused: {e}\n{canonical}"));
                assert_eq!(again.request, n.request, "normalizing twice changed the request");
                validate(n.request.clone(), &limits).unwrap_or_else(|e| panic!("a normalized request fails validation: {e}"));
                assert!(!n.request.questions.is_empty());
            }
            Err(invalid) => {
                assert!(!invalid.errors.is_empty(), "a refusal names at least one problem");
                assert!(invalid.errors.iter().all(|e| !e.message.is_empty()));
                let _ = invalid.to_string();
            }
        }
    }
});
