//! # askuser-wasm
//!
//! askuser for any web page, as one ES module: a thin wasm-bindgen facade over
//! [`askuser_core`] (dialects, validation, result formats, the dialog state machine)
//! and [`askuser_web`] (the Leptos dialog and the bridge client). Nothing here decides
//! anything: every rule is the core's, every pixel the dialog's.
//!
//! JS values cross the boundary as JSON text (`JSON.stringify` in, `JSON.parse` out,
//! through the `serde_json` the core already carries, not a second serde stack: issue
//! 51): plain objects in, plain JSON-compatible objects out (`null` for absent optional
//! values, objects, never `Map`s). Every failure becomes a JS `Error` through one helper, [`into_error`]: its
//! `message` lists every `path: message` line, and its `errors` property holds them as
//! `{path, message}` objects.
//!
//! # Layout
//! - this file: `normalize`, `validate`, `formatResult`, and the conversions.
//! - [`dialog`]: `new Dialog(request, options)`, the core's state machine for a host
//!   that renders its own UI.
//! - [`mount`]: `mountDialog(element, request, {onAnswer, onCancel})`, the Leptos dialog
//!   in any element, styled by `--askuser-*` custom properties (`src/embed.css`).
//! - [`connect`]: `connect(url, token, target?)`, a bridge client firing `askuser:*`
//!   events.
//! - [`types`]: the TypeScript declarations of every payload.
//!
//! Agent text reaches the DOM only through the Leptos dialog, which renders it as text.

pub mod connect;
pub mod dialog;
pub mod mount;
pub mod types;

use askuser_core::dialect::normalize_str;
use askuser_core::{AskResult, FieldError, Format, Invalid, Limits, Normalized};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Why a call failed: bad input for a field, or anything else with a plain message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Invalid(Invalid),
    Message(String),
}

impl From<Invalid> for Failure {
    fn from(e: Invalid) -> Self {
        Failure::Invalid(e)
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::Message(message.to_owned())
    }
}

/// The one conversion of a Rust failure into a JS `Error`: `message` has one
/// `path: message` line per problem, `errors` holds them as `{path, message}` objects.
pub fn into_error(failure: impl Into<Failure>) -> JsValue {
    let errors = match failure.into() {
        Failure::Invalid(invalid) => invalid.errors,
        Failure::Message(message) => vec![FieldError::new("", message)],
    };
    let message = Invalid { errors: errors.clone() }.to_string();
    let error = js_sys::Error::new(&message);
    if let Ok(list) = to_js(&errors) {
        let _ = js_sys::Reflect::set(&error, &JsValue::from_str("errors"), &list);
    }
    error.into()
}

/// A Rust value as a plain, JSON-compatible JS value.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    let text = serde_json::to_string(value).map_err(|e| into_error(e.to_string()))?;
    js_sys::JSON::parse(&text)
}

/// A JS value as JSON text; `what` names it in the error when it is no plain JSON data
/// (a function, `undefined`, a cycle, a `BigInt`).
fn json_text(value: &JsValue, what: &str) -> Result<String, JsValue> {
    let plain = || into_error(format!("expected {what} (plain JSON data)"));
    js_sys::JSON::stringify(value).map_err(|_| plain())?.as_string().ok_or_else(plain)
}

/// A JS value read as `T`, through JSON so that every integer-valued number fits any
/// integer field. `what` names the value in the error ("expected {what}: ...").
pub(crate) fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsValue> {
    serde_json::from_str(&json_text(&value, what)?).map_err(|e| {
        // The position is in JSON text the caller never wrote.
        let e = e.to_string();
        into_error(format!("expected {what}: {}", e.rsplit_once(" at line ").map_or(e.as_str(), |(m, _)| m)))
    })
}

/// Reads a request in any dialect (an object, or its JSON text) under `limits`.
pub(crate) fn read_request(request: JsValue, limits: &Limits) -> Result<Normalized, JsValue> {
    let text = match request.as_string() {
        Some(text) => text,
        None => json_text(&request, "a request")?,
    };
    normalize_str(&text, limits).map_err(into_error)
}

/// Any dialect in (Claude Code, pi, Opal, Roo Code; an object or JSON text), the
/// canonical request out. Throws an `Error` listing every problem.
#[wasm_bindgen(unchecked_return_type = "CanonicalRequest")]
pub fn normalize(#[wasm_bindgen(unchecked_param_type = "AnyRequest")] request: JsValue) -> Result<JsValue, JsValue> {
    to_js(&read_request(request, &Limits::default())?.request)
}

/// Like `normalize`, and says what was read: `{request, dialect, warnings}`.
/// `options.profile = "claude-code"` applies Claude Code's limits (1-4 questions,
/// 2-4 options, headers of at most 12 chars).
#[wasm_bindgen(unchecked_return_type = "Validated")]
pub fn validate(
    #[wasm_bindgen(unchecked_param_type = "AnyRequest")] request: JsValue,
    options: Option<crate::types::ValidateOptionsArg>,
) -> Result<JsValue, JsValue> {
    let profile = get(&options.map(JsValue::from).unwrap_or_default(), "profile").as_string();
    let limits = match profile.as_deref() {
        None | Some("default") => Limits::default(),
        Some("claude-code") => Limits::claude_code(),
        Some(other) => return Err(into_error(Invalid::one("profile", format!("expected \"default\" or \"claude-code\", got {other:?}")))),
    };
    to_js(&read_request(request, &limits)?)
}

/// A canonical result in the shape an agent expects: `"canonical"` as it is, `"claude"`
/// and `"pi"` as objects, `"text"` as a string.
#[wasm_bindgen(js_name = formatResult, unchecked_return_type = "FormattedResult")]
pub fn format_result(
    #[wasm_bindgen(unchecked_param_type = "AskResult")] result: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue,
) -> Result<JsValue, JsValue> {
    let format: Format = match format.as_string() {
        Some(name) => name.parse().map_err(|e: String| into_error(Invalid::one("format", e)))?,
        None => return Err(into_error(Invalid::one("format", "expected canonical, claude, pi or text"))),
    };
    let result: AskResult = from_js(result, "a canonical result {id, status, answered, answers, answeredAt}")?;
    to_js(&result.to_json(format))
}

/// `object[key]`, or `undefined` when `object` is not an object.
pub(crate) fn get(object: &JsValue, key: &str) -> JsValue {
    if object.is_object() {
        js_sys::Reflect::get(object, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

/// `object[key]` when it is a function; an error naming `key` when it is set to
/// something else.
pub(crate) fn callback(object: &JsValue, key: &str) -> Result<Option<js_sys::Function>, JsValue> {
    let value = get(object, key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value.dyn_into::<js_sys::Function>().map(Some).map_err(|_| into_error(Invalid::one(key, "expected a function")))
}
