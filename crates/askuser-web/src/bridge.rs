//! The browser's connection to the bridge: drives [`askuser_core::client::Client`]
//! (outbox, acknowledgements, snapshot parts, backoff: all decided there) with a
//! WebSocket to `ws(s)://HOST/v1/ui?token=TOKEN`, a timer, `localStorage` for the
//! outbox and a `fetch` for the token check. What the client reports goes out as
//! [`FromBridge`]s ([`crate::events`]).
//!
//! The token comes from `#token=...` in the address (then kept in `sessionStorage` and
//! removed from the address bar), or from `sessionStorage` after a reload.

use crate::events::{self, FromBridge};
use askuser_core::client::{Client, Effect, Input};
use askuser_core::Selection;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, WebSocket};

const TOKEN_KEY: &str = "askuser:token";
const OUTBOX_KEY: &str = "askuser:outbox";

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
    let from_session = session.and_then(|s| s.get_item(TOKEN_KEY).ok().flatten()).filter(|t| !t.is_empty());
    // A paired device's own token, kept across browser restarts.
    from_session.or_else(|| local()?.get_item(crate::pairing::DEVICE_KEY).ok().flatten().filter(|t| !t.is_empty()))
}

/// The socket address for `token` on this page's origin.
pub fn socket_url(token: &str) -> Option<String> {
    let location = web_sys::window()?.location();
    let scheme = if location.protocol().ok()? == "https:" { "wss" } else { "ws" };
    let token: String = js_sys::encode_uri_component(token).into();
    Some(format!("{scheme}://{}/v1/ui?token={token}", location.host().ok()?))
}

struct Inner {
    client: Client,
    url: String,
    /// Who hears what the client reports.
    sink: Rc<dyn Fn(&FromBridge)>,
    ws: Option<WebSocket>,
    /// The socket's handlers, kept alive while it lives (and the last socket's, until the
    /// next is closed: a handler may be running when its socket is closed).
    handlers: Vec<Closure<dyn FnMut(JsValue)>>,
    retired: Vec<Closure<dyn FnMut(JsValue)>>,
    /// When the first part of a snapshot still being collected arrived (`?perf` only).
    first_part: Option<crate::perf::Timing>,
    /// The token check's callbacks; kept past `stop`, as the fetch may still answer.
    checking: Vec<Closure<dyn FnMut(JsValue)>>,
    timer: Option<i32>,
}

/// A running connection; cheap to clone.
#[derive(Clone)]
pub struct Bridge {
    inner: Rc<RefCell<Inner>>,
}

impl Bridge {
    /// Starts connecting to `url`, publishing what happens to the page's subscribers
    /// ([`events::publish`]).
    pub fn start(url: String) -> Bridge {
        Bridge::start_on(url, events::publish)
    }

    /// [`Bridge::start`], handing what happens to `sink` instead (the embed package:
    /// [`events::dom_relay`]).
    pub fn start_on(url: String, sink: impl Fn(&FromBridge) + 'static) -> Bridge {
        // Refs must be unique across reloads and tabs: a time and a random number.
        let seed = format!("r{:x}-{:x}", js_sys::Date::now() as u64, (js_sys::Math::random() * 1e12) as u64);
        let saved = local().and_then(|s| s.get_item(&outbox_key(&url)).ok().flatten());
        let (client, effects) = Client::new(seed, saved.as_deref());
        let bridge = Bridge {
            inner: Rc::new(RefCell::new(Inner {
                client,
                url,
                sink: Rc::new(sink),
                ws: None,
                handlers: vec![],
                retired: vec![],
                first_part: None,
                checking: vec![],
                timer: None,
            })),
        };
        bridge.run(effects, None);
        bridge
    }

    /// Whether the socket is open now.
    pub fn is_open(&self) -> bool {
        self.inner.borrow().client.state() == askuser_core::client::State::Open
    }

    /// How many answers and declines wait for the bridge.
    pub fn queued(&self) -> usize {
        self.inner.borrow().client.queued()
    }

    /// The question ids of the answers and declines waiting for the bridge.
    pub fn queued_ids(&self) -> Vec<String> {
        self.inner.borrow().client.queued_ids().map(str::to_owned).collect()
    }

    /// Sends (or queues) an answer. Returns whether it went out at once.
    pub fn answer(&self, id: &str, answers: Vec<Selection>) -> bool {
        self.handle_sent(Input::Answer { id, answers })
    }

    /// Sends (or queues) a decline; with `chat`, the person would rather talk it over.
    /// Returns whether it went out at once.
    pub fn cancel(&self, id: &str, chat: bool) -> bool {
        self.handle_sent(Input::Decline { id, chat })
    }

    /// Asks the bridge for a page of its history (it comes as an `askuser:history`
    /// event). Not queued: returns false when the socket is not open.
    pub fn history(&self, search: Option<String>, offset: usize, limit: usize) -> bool {
        self.handle_sent(Input::History { search, offset, limit })
    }

    /// Closes the socket and stops reconnecting.
    pub fn stop(&self) {
        self.handle(Input::Stop);
    }

    /// Handles `input`; whether it sent a frame.
    fn handle_sent(&self, input: Input<'_>) -> bool {
        let effects = self.inner.borrow_mut().client.handle(input);
        let sent = effects.iter().any(|e| matches!(e, Effect::Send(_)));
        self.run(effects, None);
        sent
    }

    fn handle(&self, input: Input<'_>) {
        let effects = self.inner.borrow_mut().client.handle(input);
        self.run(effects, None);
    }

    /// A text frame arrived; `timing` marks when (`?perf` only).
    fn frame(&self, text: &str, timing: Option<crate::perf::Timing>) {
        let effects = self.inner.borrow_mut().client.handle(Input::Frame(text));
        let published = effects.iter().any(|e| matches!(e, Effect::Event(_)));
        if !published {
            // A snapshot's part: its timing runs from the first part.
            let mut inner = self.inner.borrow_mut();
            if inner.first_part.is_none() {
                inner.first_part = timing;
            }
            drop(inner);
            return self.run(effects, None);
        }
        let timing = self.inner.borrow_mut().first_part.take().or(timing);
        self.run(effects, timing);
    }

    /// Carries out the client's effects, in order. Never called with `inner` borrowed:
    /// publishing runs the page's listeners, which may answer (and so call back in).
    /// `timing` measures the event this produces, from when its frame arrived.
    fn run(&self, effects: Vec<Effect>, mut timing: Option<crate::perf::Timing>) {
        for effect in effects {
            match effect {
                Effect::Connect => self.connect(),
                Effect::Send(text) => {
                    if let Some(ws) = &self.inner.borrow().ws {
                        let _ = ws.send_with_str(&text);
                    }
                }
                Effect::Close => self.close_socket(),
                Effect::After(delay) => self.after(delay),
                Effect::CheckToken => self.check_token(),
                Effect::ForgetToken => {
                    if let Some(s) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
                        let _ = s.remove_item(TOKEN_KEY);
                    }
                    // A revoked device token too: the device must be paired again, and
                    // keeps no questions.
                    if let Some(l) = local() {
                        let _ = l.remove_item(crate::pairing::DEVICE_KEY);
                    }
                    crate::kept::forget();
                }
                Effect::SaveOutbox(saved) => {
                    let key = outbox_key(&self.inner.borrow().url);
                    if let Some(s) = local() {
                        let _ = match saved {
                            Some(text) => s.set_item(&key, &text),
                            None => s.remove_item(&key),
                        };
                    }
                }
                Effect::Connection { state, attempt } => self.publish(&FromBridge::Connection { state, attempt }),
                Effect::Event(event) => {
                    let name = events::name_of(&event);
                    self.publish(&FromBridge::Event(event));
                    if let Some(timing) = timing.take() {
                        timing.end(name);
                    }
                }
            }
        }
    }

    fn publish(&self, update: &FromBridge) {
        let sink = self.inner.borrow().sink.clone();
        sink(update);
    }

    fn connect(&self) {
        self.close_socket();
        let url = self.inner.borrow().url.clone();
        let Ok(ws) = WebSocket::new(&url) else {
            return self.handle(Input::Closed);
        };
        let handler = |this: &Bridge, f: fn(&Bridge, JsValue)| {
            let this = this.clone();
            Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| f(&this, ev))
        };
        let on_open = handler(self, |b, _| b.handle(Input::Opened));
        let on_message = handler(self, |b, ev| {
            let timing = crate::perf::begin();
            if let Some(text) = ev.unchecked_into::<MessageEvent>().data().as_string() {
                b.frame(&text, timing);
            }
        });
        let on_close = handler(self, |b, _| {
            b.inner.borrow_mut().ws = None;
            b.handle(Input::Closed);
        });
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        let mut inner = self.inner.borrow_mut();
        inner.ws = Some(ws);
        inner.handlers = vec![on_open, on_message, on_close];
    }

    fn close_socket(&self) {
        let mut inner = self.inner.borrow_mut();
        if let Some(ws) = inner.ws.take() {
            ws.set_onopen(None);
            ws.set_onmessage(None);
            ws.set_onclose(None);
            let _ = ws.close();
        }
        inner.retired = std::mem::take(&mut inner.handlers);
        inner.first_part = None;
        if let (Some(id), Some(w)) = (inner.timer.take(), web_sys::window()) {
            w.clear_timeout_with_handle(id);
        }
    }

    fn after(&self, delay: std::time::Duration) {
        let this = self.clone();
        let tick = Closure::once_into_js(move || {
            this.inner.borrow_mut().timer = None;
            this.handle(Input::Tick);
        });
        let id = web_sys::window().and_then(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(tick.unchecked_ref(), delay.as_millis().min(i32::MAX as u128) as i32)
                .ok()
        });
        self.inner.borrow_mut().timer = id;
    }

    /// A socket that never opened says nothing about why (a browser hides the 401).
    /// Asks `GET /v1/health` with the same token: a 401 means the token is wrong;
    /// anything else (no answer at all) means try again later.
    fn check_token(&self) {
        let Some((url, token)) = health_check(&self.inner.borrow().url) else {
            return self.handle(Input::TokenChecked { refused: false });
        };
        let init = web_sys::RequestInit::new();
        if let Ok(headers) = web_sys::Headers::new() {
            let _ = headers.set("authorization", &format!("Bearer {token}"));
            init.set_headers(&headers);
        }
        let Some(promise) = web_sys::window().map(|w| w.fetch_with_str_and_init(&url, &init)) else {
            return self.handle(Input::TokenChecked { refused: false });
        };
        let (this, other) = (self.clone(), self.clone());
        let on_response = Closure::<dyn FnMut(JsValue)>::new(move |res: JsValue| {
            let status = res.dyn_into::<web_sys::Response>().map_or(0, |r| r.status());
            this.handle(Input::TokenChecked { refused: status == 401 });
        });
        let on_failure = Closure::<dyn FnMut(JsValue)>::new(move |_| other.handle(Input::TokenChecked { refused: false }));
        let _ = promise.then2(&on_response, &on_failure);
        // One of them runs, once, before the next check replaces them.
        self.inner.borrow_mut().checking = vec![on_response, on_failure];
    }
}

/// The health address and the token for socket address `url` (`ws(s)://HOST/v1/ui?token=…`).
fn health_check(url: &str) -> Option<(String, String)> {
    let (base, query) = url.split_once("/v1/ui?")?;
    let token = query.split('&').find_map(|kv| kv.strip_prefix("token="))?;
    let token = js_sys::decode_uri_component(token).ok()?.as_string()?;
    Some((format!("{}/v1/health", base.replacen("ws", "http", 1)), token))
}

/// One outbox per bridge, so two connections never share one.
fn outbox_key(url: &str) -> String {
    format!("{OUTBOX_KEY}:{}", storage_key(url))
}

/// What the page keeps for the bridge at socket address `url`: the address without the token.
pub fn storage_key(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}

/// The outbox lives in `localStorage`: an answer given offline survives the tab closing
/// and goes out from the next tab of the page (a resend of the same answer is harmless).
fn local() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}
