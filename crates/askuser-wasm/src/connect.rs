//! `connect(url, token, target?)`: a bridge client for any page. It is the askuser
//! page's own client ([`askuser_web::bridge::Bridge`]: reconnects with backoff, keeps
//! answers queued until the bridge acks them) and fires the same `askuser:*`
//! `CustomEvent`s, whose `detail` is the bridge's message, on the chosen target.

use crate::{from_js, into_error};
use askuser_core::{Invalid, Selection};
use askuser_web::bridge::Bridge;
use askuser_web::events;
use wasm_bindgen::prelude::*;

/// A live bridge connection.
#[wasm_bindgen]
pub struct Connection {
    bridge: Bridge,
    closed: bool,
}

#[wasm_bindgen]
impl Connection {
    /// Sends one selection per question for question `id` (queued while offline, resent
    /// until acked). Returns whether it went out at once.
    pub fn answer(&self, id: &str, #[wasm_bindgen(unchecked_param_type = "Selection[]")] answers: JsValue) -> Result<bool, JsValue> {
        let answers: Vec<Selection> = from_js(answers, "answers: one {selected?, custom?} per question")?;
        Ok(self.bridge.answer(id, answers))
    }

    /// Declines question `id` for the person; with `chat`, they would rather talk it over
    /// ("Chat about this"). Returns whether it went out at once.
    pub fn cancel(&self, id: &str, chat: Option<bool>) -> bool {
        self.bridge.cancel(id, chat.unwrap_or(false))
    }

    /// Asks for a page of the bridge's history (final questions, most recently finished
    /// first; only those containing `search`, when given); it arrives as `askuser:history`.
    /// Returns false when the socket is not open.
    pub fn history(&self, search: Option<String>, offset: Option<usize>, limit: Option<usize>) -> bool {
        self.bridge.history(search, offset.unwrap_or(0), limit.unwrap_or(20))
    }

    /// Whether the socket is open now.
    #[wasm_bindgen(getter, js_name = isOpen)]
    pub fn is_open(&self) -> bool {
        self.bridge.is_open()
    }

    /// How many answers and cancels wait for the bridge's ack.
    #[wasm_bindgen(getter)]
    pub fn queued(&self) -> usize {
        self.bridge.queued()
    }

    /// Closes the socket and stops reconnecting (fires `askuser:connection` with
    /// `state: "closed"`). Calling it twice is harmless.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.bridge.stop();
    }
}

/// Connects to the bridge at `url` (its address, e.g. `http://127.0.0.1:7823`; the
/// address it prints, with `#token=...`, works too when `token` is empty) and fires
/// `askuser:*` events on `target` (default `window`): `snapshot` first, then `asked`,
/// `answered`, `withdrawn`, `agent`, `ack`, `error`, and `connection` on every state
/// change. The page's origin must be allowed by the bridge (`--allow-origin`).
#[wasm_bindgen]
pub fn connect(url: &str, token: &str, target: Option<web_sys::EventTarget>) -> Result<Connection, JsValue> {
    let socket = socket_url(url, token)?;
    let target = target.unwrap_or_else(events::window_target);
    Ok(Connection { bridge: Bridge::start_on(socket, events::dom_relay(target)), closed: false })
}

/// The browser socket's address: `ws(s)://HOST/v1/ui?token=TOKEN`. The token is never
/// echoed in an error.
pub fn socket_url(url: &str, token: &str) -> Result<String, JsValue> {
    let bad = || into_error(Invalid::one("url", "expected the bridge's address, such as http://127.0.0.1:7823"));
    let base = web_sys::window().and_then(|w| w.location().href().ok()).unwrap_or_default();
    let parsed = web_sys::Url::new_with_base(url, &base).map_err(|_| bad())?;
    let scheme = match parsed.protocol().as_str() {
        "http:" | "ws:" => "ws:",
        "https:" | "wss:" => "wss:",
        _ => return Err(bad()),
    };
    let token = if token.is_empty() {
        let hash = parsed.hash();
        let from_hash = hash.trim_start_matches('#').split('&').find_map(|kv| kv.strip_prefix("token=")).map(str::to_owned);
        match from_hash.and_then(|t| js_sys::decode_uri_component(&t).ok()).and_then(|t| t.as_string()) {
            Some(t) if !t.is_empty() => t,
            _ => return Err(into_error(Invalid::one("token", "expected the bridge's token (printed as #token=... in its address)"))),
        }
    } else {
        token.to_owned()
    };
    let token: String = js_sys::encode_uri_component(&token).into();
    Ok(format!("{scheme}//{}/v1/ui?token={token}", parsed.host()))
}
