//! The seam between the transport and the UI: every message from the bridge becomes a
//! DOM `CustomEvent` on `window` (`askuser:snapshot`, `askuser:asked`, ...), whose
//! `detail` is the message as a plain JS object. The UI listens to these events, not to
//! the socket, so an embedding page can listen (or feed events) too.

use serde::de::DeserializeOwned;
use wasm_bindgen::{JsCast, JsValue};

pub const SNAPSHOT: &str = "askuser:snapshot";
pub const ASKED: &str = "askuser:asked";
/// Answered or cancelled (`detail.result.status` says which).
pub const ANSWERED: &str = "askuser:answered";
/// Withdrawn or timed out (`detail.status` says which).
pub const WITHDRAWN: &str = "askuser:withdrawn";
pub const AGENT: &str = "askuser:agent";
/// A page of the bridge's history, for a `history` request.
pub const HISTORY: &str = "askuser:history";
pub const ACK: &str = "askuser:ack";
pub const ERROR: &str = "askuser:error";
/// `detail`: `{state: "connecting" | "open" | "reconnecting" | "unauthorized" | "closed", attempt}`
/// (`unauthorized`: the bridge refused the token; the client stops trying).
pub const CONNECTION: &str = "askuser:connection";

/// Every event a bridge message can become.
pub const MESSAGE_EVENTS: [&str; 8] = [SNAPSHOT, ASKED, ANSWERED, WITHDRAWN, AGENT, HISTORY, ACK, ERROR];

/// The event name for a message `type`, or `None` for a type this UI does not know.
pub fn event_name(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "snapshot" => SNAPSHOT,
        "asked" => ASKED,
        "answered" => ANSWERED,
        "withdrawn" => WITHDRAWN,
        "agent" => AGENT,
        "history" => HISTORY,
        "ack" => ACK,
        "error" => ERROR,
        _ => return None,
    })
}

/// Parses one text frame from the bridge and fires its event on `window`. Returns the
/// event name, or an error naming what was wrong with the frame.
pub fn dispatch_message(text: &str) -> Result<&'static str, String> {
    dispatch_message_on(&window_target(), text)
}

/// [`dispatch_message`] on any `target` (an embedding page's element, say).
pub fn dispatch_message_on(target: &web_sys::EventTarget, text: &str) -> Result<&'static str, String> {
    dispatch_frame_on(target, &JsValue::from_str(text))
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `JSON.parse` of a JS string, which stays on the JS side (no copy through wasm).
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn parse_js(text: &JsValue) -> Result<JsValue, JsValue>;
}

/// [`dispatch_message_on`] for a socket frame's `data` as it came (a JS string).
pub fn dispatch_frame_on(target: &web_sys::EventTarget, text: &JsValue) -> Result<&'static str, String> {
    let (name, detail) = parse_frame(text)?;
    dispatch_on(target, name, &detail);
    Ok(name)
}

/// A frame's event name and `detail` (the message as a plain JS object).
pub fn parse_frame(text: &JsValue) -> Result<(&'static str, JsValue), String> {
    let detail =
        parse_js(text).map_err(|_| format!("expected a JSON message from the bridge, got {:.80}", text.as_string().unwrap_or_default()))?;
    let kind = js_sys::Reflect::get(&detail, &JsValue::from_str("type")).ok().and_then(|t| t.as_string());
    let Some(kind) = kind else {
        return Err("expected a message with a string `type`, got none".into());
    };
    let name = event_name(&kind).ok_or_else(|| format!("unknown message type {kind:?}"))?;
    Ok((name, detail))
}

/// Fires `askuser:connection` with `{state, attempt}` on `target`.
pub fn dispatch_connection_on(target: &web_sys::EventTarget, state: &str, attempt: u32) {
    let detail = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&detail, &"state".into(), &state.into());
    let _ = js_sys::Reflect::set(&detail, &"attempt".into(), &attempt.into());
    dispatch_on(target, CONNECTION, &detail);
}

/// Fires `askuser:connection` with `{state, attempt}` on `window`.
pub fn dispatch_connection(state: &str, attempt: u32) {
    dispatch_connection_on(&window_target(), state, attempt);
}

/// Fires a `CustomEvent` named `name` with `detail` on `window`.
pub fn dispatch(name: &str, detail: &JsValue) {
    dispatch_on(&window_target(), name, detail);
}

/// Fires a `CustomEvent` named `name` with `detail` on `target`.
pub fn dispatch_on(target: &web_sys::EventTarget, name: &str, detail: &JsValue) {
    let init = web_sys::CustomEventInit::new();
    init.set_detail(detail);
    if let Ok(event) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
        let _ = target.dispatch_event(&event);
    }
}

/// `window` as an event target.
pub fn window_target() -> web_sys::EventTarget {
    web_sys::window().expect("askuser-web runs in a browser window").into()
}

/// The `detail` of a `CustomEvent`, read as `T` (through JSON, so any plain object works).
pub fn detail<T: DeserializeOwned>(event: &web_sys::Event) -> Option<T> {
    let detail = event.dyn_ref::<web_sys::CustomEvent>()?.detail();
    let json = js_sys::JSON::stringify(&detail).ok()?.as_string()?;
    serde_json::from_str(&json).ok()
}
