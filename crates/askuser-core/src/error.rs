//! Errors that name the field, what was expected and what came.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One problem with one field. `path` is a JSON path such as `questions[1].options[2].label`
/// (empty for the whole input); `message` says what was expected and what came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every problem found in one input, never only the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{}", lines(.errors))]
pub struct Invalid {
    pub errors: Vec<FieldError>,
}

impl Invalid {
    pub fn one(path: impl Into<String>, message: impl Into<String>) -> Self {
        Invalid { errors: vec![FieldError::new(path, message)] }
    }
}

fn lines(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// A short description of a JSON value for "expected X, got Y" messages.
pub fn describe(value: &serde_json::Value) -> String {
    use serde_json::Value::*;
    match value {
        Null => "null".into(),
        Bool(b) => format!("the boolean {b}"),
        Number(n) => format!("the number {n}"),
        String(s) if s.chars().count() > 40 => {
            format!("a string ({} chars)", s.chars().count())
        }
        String(s) => format!("the string {s:?}"),
        Array(a) => format!("an array of {} item{}", a.len(), if a.len() == 1 { "" } else { "s" }),
        Object(_) => "an object".into(),
    }
}
