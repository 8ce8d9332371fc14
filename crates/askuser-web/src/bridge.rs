//! The browser's connection to the bridge: one WebSocket to
//! `ws(s)://{location.host}/v1/ui?token=TOKEN`, reconnecting with exponential backoff
//! (0.5 s doubling to 10 s).
//!
//! Incoming frames are not interpreted for the UI here: each is fired as an
//! `askuser:*` event on `window` (see [`crate::events`]). This module only reads them
//! to keep its outbox: every answer or cancel carries a `ref` and stays queued (and in
//! `sessionStorage`, across a reload) until the bridge acks that ref, refuses it, or
//! announces the question final. Everything queued is resent on each (re)connect; the
//! bridge treats an identical resend as success, so each answer lands exactly once.
//!
//! The token comes from `#token=...` in the address (then kept in `sessionStorage` and
//! removed from the address bar), or from `sessionStorage` after a reload.

use crate::events;
use askuser_core::protocol::{BrowserEvent, BrowserMessage, Refused};
use askuser_core::Selection;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use web_sys::{CloseEvent, MessageEvent, WebSocket};

const TOKEN_KEY: &str = "askuser:token";
const OUTBOX_KEY: &str = "askuser:outbox";

/// The delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, ... 10 s.
pub fn backoff(attempt: u32) -> Duration {
    let ms = 500u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(10));
    Duration::from_millis(ms.min(10_000))
}

/// Reads the token from `#token=...` (then remembers it in `sessionStorage` and removes it
/// from the address bar), else from `sessionStorage`.
pub fn take_token() -> Option<String> {
    let window = web_sys::window()?;
    let session = window.session_storage().ok().flatten();
    let location = window.location();
    let hash = location.hash().unwrap_or_default();
    let from_hash = hash
        .trim_start_matches('#')
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(|t| js_sys::decode_uri_component(t).ok().and_then(|s| s.as_string()).unwrap_or_else(|| t.to_owned()));
    if let Some(token) = from_hash.filter(|t| !t.is_empty()) {
        if let Some(s) = &session {
            let _ = s.set_item(TOKEN_KEY, &token);
        }
        let clean = format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
        if let Ok(history) = window.history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&clean));
        }
        return Some(token);
    }
    session?.get_item(TOKEN_KEY).ok().flatten().filter(|t| !t.is_empty())
}

/// The socket address for `token` on this page's origin.
pub fn socket_url(token: &str) -> Option<String> {
    let location = web_sys::window()?.location();
    let scheme = if location.protocol().ok()? == "https:" { "wss" } else { "ws" };
    let token: String = js_sys::encode_uri_component(token).into();
    Some(format!("{scheme}://{}/v1/ui?token={token}", location.host().ok()?))
}

/// A message waiting for the bridge's word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Outgoing {
    reference: String,
    id: String,
    text: String,
}

struct Inner {
    url: String,
    /// Where the `askuser:*` events are fired (`window` for the app).
    target: web_sys::EventTarget,
    ws: Option<WebSocket>,
    open: bool,
    attempt: u32,
    outbox: Vec<Outgoing>,
    counter: u32,
    // Kept alive while their socket lives.
    handlers: Vec<Closure<dyn FnMut(JsValue)>>,
    /// The parts of a snapshot received so far (see [`Bridge::reassemble`]).
    partial: Option<(JsValue, Option<crate::perf::Timing>)>,
    /// The token check's callbacks (see [`Bridge::check_token`]); kept past `stop`, as the
    /// fetch may still answer.
    checking: Vec<Closure<dyn FnMut(JsValue)>>,
    stopped: bool,
}

/// A running connection; cheap to clone.
#[derive(Clone)]
pub struct Bridge {
    inner: Rc<RefCell<Inner>>,
}

impl Bridge {
    /// Starts connecting to `url`, firing `askuser:connection` as the state changes.
    pub fn start(url: String) -> Bridge {
        Bridge::start_on(url, events::window_target())
    }

    /// [`Bridge::start`], firing every event on `target` instead of `window`.
    pub fn start_on(url: String, target: web_sys::EventTarget) -> Bridge {
        let outbox = load_outbox(&url);
        let bridge = Bridge {
            inner: Rc::new(RefCell::new(Inner {
                target,
                url,
                ws: None,
                open: false,
                attempt: 0,
                outbox,
                counter: 0,
                handlers: vec![],
                partial: None,
                checking: vec![],
                stopped: false,
            })),
        };
        bridge.connect();
        bridge
    }

    /// Whether the socket is open now.
    pub fn is_open(&self) -> bool {
        self.inner.borrow().open
    }

    /// How many answers wait for the bridge.
    pub fn queued(&self) -> usize {
        self.inner.borrow().outbox.len()
    }

    /// Sends (or queues) an answer. Returns whether it went out at once.
    pub fn answer(&self, id: &str, answers: Vec<Selection>) -> bool {
        let reference = self.next_ref();
        let msg = BrowserMessage::Answer { reference: Some(reference.clone()), id: id.to_owned(), answers };
        self.enqueue(reference, id, &msg)
    }

    /// Sends (or queues) a decline; with `chat`, the person would rather talk it over.
    /// Returns whether it went out at once.
    pub fn cancel(&self, id: &str, chat: bool) -> bool {
        let reference = self.next_ref();
        let msg = BrowserMessage::Cancel { reference: Some(reference.clone()), id: id.to_owned(), chat };
        self.enqueue(reference, id, &msg)
    }

    /// Asks the bridge for a page of its history (answered by an `askuser:history` event).
    /// Not queued: returns false when the socket is not open.
    pub fn history(&self, search: Option<String>, offset: usize, limit: usize) -> bool {
        let msg = BrowserMessage::History { reference: None, search, offset, limit };
        let Ok(text) = serde_json::to_string(&msg) else { return false };
        let inner = self.inner.borrow();
        match (&inner.ws, inner.open) {
            (Some(ws), true) => ws.send_with_str(&text).is_ok(),
            _ => false,
        }
    }

    /// Closes the socket and stops reconnecting.
    pub fn stop(&self) {
        let mut inner = self.inner.borrow_mut();
        inner.stopped = true;
        if let Some(ws) = inner.ws.take() {
            detach(&ws);
            let _ = ws.close();
        }
        inner.handlers.clear();
        let target = inner.target.clone();
        drop(inner);
        events::dispatch_connection_on(&target, "closed", 0);
    }

    fn next_ref(&self) -> String {
        let mut inner = self.inner.borrow_mut();
        inner.counter += 1;
        let random = (js_sys::Math::random() * 1e9) as u64;
        format!("r{}-{random:x}-{}", js_sys::Date::now() as u64, inner.counter)
    }

    fn enqueue(&self, reference: String, id: &str, msg: &BrowserMessage) -> bool {
        let Ok(text) = serde_json::to_string(msg) else { return false };
        let mut inner = self.inner.borrow_mut();
        inner.outbox.push(Outgoing { reference, id: id.to_owned(), text: text.clone() });
        save_outbox(&inner.url, &inner.outbox);
        match (&inner.ws, inner.open) {
            (Some(ws), true) => ws.send_with_str(&text).is_ok(),
            _ => false,
        }
    }

    fn connect(&self) {
        let (url, attempt, target) = {
            let inner = self.inner.borrow();
            if inner.stopped {
                return;
            }
            (inner.url.clone(), inner.attempt, inner.target.clone())
        };
        events::dispatch_connection_on(&target, if attempt == 0 { "connecting" } else { "reconnecting" }, attempt);
        let ws = match WebSocket::new(&url) {
            Ok(ws) => ws,
            Err(_) => {
                self.schedule_reconnect();
                return;
            }
        };
        let on_open = {
            let this = self.clone();
            Closure::<dyn FnMut(JsValue)>::new(move |_| this.opened())
        };
        let on_message = {
            let this = self.clone();
            Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| {
                let timing = crate::perf::begin();
                let data = ev.unchecked_into::<MessageEvent>().data();
                if data.is_string() {
                    this.received(&data, timing);
                }
            })
        };
        let on_close = {
            let this = self.clone();
            Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| {
                let _ = ev.unchecked_into::<CloseEvent>();
                this.closed();
            })
        };
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        let mut inner = self.inner.borrow_mut();
        inner.ws = Some(ws);
        inner.open = false;
        inner.partial = None;
        inner.handlers = vec![on_open, on_message, on_close];
    }

    fn opened(&self) {
        let mut inner = self.inner.borrow_mut();
        inner.open = true;
        inner.attempt = 0;
        if let Some(ws) = &inner.ws {
            for out in &inner.outbox {
                let _ = ws.send_with_str(&out.text);
            }
        }
        let target = inner.target.clone();
        drop(inner);
        events::dispatch_connection_on(&target, "open", 0);
    }

    /// A text frame (`data`, a JS string) arrived.
    fn received(&self, data: &JsValue, timing: Option<crate::perf::Timing>) {
        // Only answers waiting for the bridge's word need the message decoded here.
        let waiting = !self.inner.borrow().outbox.is_empty();
        let decoded = waiting.then(|| data.as_string().and_then(|text| serde_json::from_str::<BrowserEvent>(&text).ok()));
        if let Some(event) = decoded.flatten() {
            let mut inner = self.inner.borrow_mut();
            let before = inner.outbox.len();
            inner.outbox.retain(|o| !settles(&event, o));
            if inner.outbox.len() != before {
                save_outbox(&inner.url, &inner.outbox);
            }
        }
        let Ok((name, detail)) = events::parse_frame(data) else { return };
        let (detail, timing) = if name == events::SNAPSHOT {
            match self.reassemble(detail, timing) {
                Some(whole) => whole,
                None => return,
            }
        } else {
            (detail, timing)
        };
        // Outside the borrow: listeners may send.
        let target = self.inner.borrow().target.clone();
        events::dispatch_on(&target, name, &detail);
        if let Some(timing) = timing {
            timing.end(name);
        }
    }

    /// Collects a snapshot's parts (`more: true` on all but the last) into one message,
    /// so listeners see one `askuser:snapshot` with everything. Returns it, with the
    /// timing of its first part, once the last part is in.
    fn reassemble(&self, part: JsValue, timing: Option<crate::perf::Timing>) -> Option<(JsValue, Option<crate::perf::Timing>)> {
        let field = |obj: &JsValue, key: &str| js_sys::Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
        let more = field(&part, "more").is_truthy();
        let mut inner = self.inner.borrow_mut();
        let (whole, first_timing) = match inner.partial.take() {
            Some((whole, first)) => {
                for key in ["questions", "agents"] {
                    if let (Ok(all), Ok(extra)) =
                        (field(&whole, key).dyn_into::<js_sys::Array>(), field(&part, key).dyn_into::<js_sys::Array>())
                    {
                        let _ = js_sys::Reflect::set(&whole, &JsValue::from_str(key), &all.concat(&extra));
                    }
                }
                (whole, first)
            }
            None => (part, timing),
        };
        if more {
            inner.partial = Some((whole, first_timing));
            return None;
        }
        let _ = js_sys::Reflect::delete_property(whole.unchecked_ref::<js_sys::Object>(), &JsValue::from_str("more"));
        Some((whole, first_timing))
    }

    fn closed(&self) {
        let never_opened = {
            let mut inner = self.inner.borrow_mut();
            let never_opened = !inner.open;
            inner.open = false;
            if let Some(ws) = inner.ws.take() {
                detach(&ws);
            }
            if inner.stopped {
                return;
            }
            never_opened
        };
        match never_opened.then(|| health_check(&self.inner.borrow().url)).flatten() {
            Some((url, token)) => self.check_token(&url, &token),
            None => self.schedule_reconnect(),
        }
    }

    /// A socket that never opened says nothing about why (a browser hides the 401).
    /// Asks `GET /v1/health` with the same token: a 401 means the token is wrong, and
    /// retrying cannot help; anything else (no answer at all) means try again later.
    fn check_token(&self, url: &str, token: &str) {
        let init = web_sys::RequestInit::new();
        if let Ok(headers) = web_sys::Headers::new() {
            let _ = headers.set("authorization", &format!("Bearer {token}"));
            init.set_headers(&headers);
        }
        let promise = web_sys::window().map(|w| w.fetch_with_str_and_init(url, &init));
        let Some(promise) = promise else { return self.schedule_reconnect() };
        let (this, other) = (self.clone(), self.clone());
        let on_response = Closure::<dyn FnMut(JsValue)>::new(move |res: JsValue| {
            let status = res.dyn_into::<web_sys::Response>().map_or(0, |r| r.status());
            this.checked(status == 401);
        });
        let on_failure = Closure::<dyn FnMut(JsValue)>::new(move |_| other.checked(false));
        let _ = promise.then2(&on_response, &on_failure);
        // One of them runs, once, before the next check replaces them.
        self.inner.borrow_mut().checking = vec![on_response, on_failure];
    }

    fn checked(&self, refused: bool) {
        if self.inner.borrow().stopped {
            return;
        }
        if !refused {
            return self.schedule_reconnect();
        }
        if let Some(s) = session() {
            let _ = s.remove_item(TOKEN_KEY);
        }
        let target = self.inner.borrow().target.clone();
        events::dispatch_connection_on(&target, "unauthorized", 0);
    }

    fn schedule_reconnect(&self) {
        let (attempt, target) = {
            let mut inner = self.inner.borrow_mut();
            inner.attempt += 1;
            (inner.attempt, inner.target.clone())
        };
        events::dispatch_connection_on(&target, "reconnecting", attempt);
        let this = self.clone();
        leptos::prelude::set_timeout(move || this.connect(), backoff(attempt));
    }
}

/// The health address and the token for socket address `url` (`ws(s)://HOST/v1/ui?token=…`).
fn health_check(url: &str) -> Option<(String, String)> {
    let (base, query) = url.split_once("/v1/ui?")?;
    let token = query.split('&').find_map(|kv| kv.strip_prefix("token="))?;
    let token = js_sys::decode_uri_component(token).ok()?.as_string()?;
    Some((format!("{}/v1/health", base.replacen("ws", "http", 1)), token))
}

fn detach(ws: &WebSocket) {
    ws.set_onopen(None);
    ws.set_onmessage(None);
    ws.set_onclose(None);
}

/// Whether `event` ends the wait for `out`: its ack, its refusal, or its question
/// becoming final.
fn settles(event: &BrowserEvent, out: &Outgoing) -> bool {
    match event {
        BrowserEvent::Ack { reference, .. } => *reference == out.reference,
        BrowserEvent::Error(Refused { reference, id, .. }) => {
            reference.as_deref() == Some(&out.reference) || id.as_deref() == Some(&out.id)
        }
        BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => *id == out.id,
        _ => false,
    }
}

fn session() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok()?
}

/// One outbox per bridge (its URL without the token), so two connections never share one.
fn outbox_key(url: &str) -> String {
    format!("{OUTBOX_KEY}:{}", url.split('?').next().unwrap_or(url))
}

/// The outbox lives in `localStorage`: an answer given offline survives the tab closing
/// and goes out from the next tab of the page (a resend of the same answer is harmless).
fn local() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn load_outbox(url: &str) -> Vec<Outgoing> {
    local().and_then(|s| s.get_item(&outbox_key(url)).ok().flatten()).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

fn save_outbox(url: &str, outbox: &[Outgoing]) {
    let key = outbox_key(url);
    if let (Some(s), Ok(text)) = (local(), serde_json::to_string(outbox)) {
        let _ = if outbox.is_empty() { s.remove_item(&key) } else { s.set_item(&key, &text) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out() -> Outgoing {
        Outgoing { reference: "r1".into(), id: "q1".into(), text: String::new() }
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_ten() {
        let ms: Vec<u128> = (1..=8).map(|a| backoff(a).as_millis()).collect();
        assert_eq!(ms, [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
        assert_eq!(backoff(u32::MAX).as_millis(), 10_000);
    }

    #[test]
    fn the_outbox_lets_go_on_ack_refusal_or_a_final_question() {
        let e = |v: serde_json::Value| serde_json::from_value::<BrowserEvent>(v).unwrap();
        assert!(settles(&e(serde_json::json!({"type": "ack", "ref": "r1", "id": "q1"})), &out()));
        assert!(!settles(&e(serde_json::json!({"type": "ack", "ref": "r2", "id": "q1"})), &out()));
        assert!(settles(&e(serde_json::json!({"type": "error", "id": "q1", "error": {"code": "conflict", "message": "x"}})), &out()));
        assert!(settles(&e(serde_json::json!({"type": "withdrawn", "id": "q1", "status": "withdrawn"})), &out()));
        assert!(!settles(&e(serde_json::json!({"type": "withdrawn", "id": "q2", "status": "withdrawn"})), &out()));
    }
}
