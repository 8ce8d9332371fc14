//! The seam between the transport and the UI, typed: the bridge client
//! ([`crate::bridge`]) hands over each [`FromBridge`] once. The page's regions subscribe
//! to them as they are ([`subscribe`], [`publish`]); for a page that embeds askuser,
//! [`dom_relay`] fires the same as DOM `CustomEvent`s (`askuser:snapshot`,
//! `askuser:asked`, ...; `detail` is the message as a plain JS object, built once from
//! the typed value).

use askuser_core::client::State;
use askuser_core::protocol::BrowserEvent;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;

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

/// What the bridge client tells the page.
#[derive(Debug, Clone, PartialEq)]
pub enum FromBridge {
    /// A message from the bridge (a snapshot whole).
    Event(BrowserEvent),
    /// The connection's state changed.
    Connection { state: State, attempt: u32 },
}

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

/// The DOM event name for `event`.
pub fn name_of(event: &BrowserEvent) -> &'static str {
    match event {
        BrowserEvent::Snapshot { .. } => SNAPSHOT,
        BrowserEvent::Asked { .. } => ASKED,
        BrowserEvent::Answered { .. } => ANSWERED,
        BrowserEvent::Withdrawn { .. } => WITHDRAWN,
        BrowserEvent::Agent { .. } => AGENT,
        BrowserEvent::History { .. } => HISTORY,
        BrowserEvent::Ack { .. } => ACK,
        BrowserEvent::Error(_) => ERROR,
    }
}

type Listener = Rc<dyn Fn(&FromBridge)>;

thread_local! {
    static LISTENERS: RefCell<Vec<(u64, Listener)>> = const { RefCell::new(Vec::new()) };
    static NEXT: RefCell<u64> = const { RefCell::new(0) };
}

/// A subscription to every [`FromBridge`]; dropping it unsubscribes.
#[must_use = "dropping the subscription unsubscribes"]
pub struct Subscription(u64);

impl Drop for Subscription {
    fn drop(&mut self) {
        let id = self.0;
        // During thread teardown the registry may be gone: nothing to remove then.
        let _ = LISTENERS.try_with(|l| l.borrow_mut().retain(|(i, _)| *i != id));
    }
}

/// Calls `listener` with every update any bridge client publishes, from now on.
pub fn subscribe(listener: impl Fn(&FromBridge) + 'static) -> Subscription {
    let id = NEXT.with(|n| {
        let mut n = n.borrow_mut();
        *n += 1;
        *n
    });
    LISTENERS.with(|l| l.borrow_mut().push((id, Rc::new(listener))));
    Subscription(id)
}

/// Hands `update` to every subscriber (the page's regions).
pub fn publish(update: &FromBridge) {
    // Listeners may subscribe, unsubscribe or publish: call a copy of the list.
    let listeners: Vec<Listener> = LISTENERS.with(|l| l.borrow().iter().map(|(_, f)| f.clone()).collect());
    for listener in listeners {
        listener(update);
    }
}

/// What an embedding page gets instead ([`crate::bridge::Bridge::start_on`]): each
/// update fired on `target` as an `askuser:*` `CustomEvent` whose `detail` is the
/// message as a plain JS object. (Only the embed package links this, and with it the
/// protocol's serializers; the page itself never fires DOM events.)
pub fn dom_relay(target: web_sys::EventTarget) -> impl Fn(&FromBridge) + 'static {
    move |update| {
        let (name, detail) = match update {
            FromBridge::Event(event) => (name_of(event), to_js(event)),
            FromBridge::Connection { state, attempt } => {
                let detail = js_sys::Object::new();
                let _ = js_sys::Reflect::set(&detail, &"state".into(), &state.as_str().into());
                let _ = js_sys::Reflect::set(&detail, &"attempt".into(), &(*attempt).into());
                (CONNECTION, detail.into())
            }
        };
        dispatch_on(&target, name, &detail);
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = parse)]
    fn parse_js(text: &str) -> JsValue;
}

/// A message as the plain JS object a page's listener expects.
fn to_js(event: &BrowserEvent) -> JsValue {
    parse_js(&serde_json::to_string(event).expect("protocol messages serialize"))
}

/// Publishes one text frame as if the bridge had sent it (a test feeding the page).
/// Returns the event name, or what was wrong with the frame.
pub fn dispatch_message(text: &str) -> Result<&'static str, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|_| format!("expected a JSON message from the bridge, got {:.80}", text))?;
    let kind = value.get("type").and_then(serde_json::Value::as_str).ok_or("expected a message with a string `type`, got none")?.to_owned();
    let name = event_name(&kind).ok_or_else(|| format!("unknown message type {kind:?}"))?;
    let event: BrowserEvent = serde_json::from_value(value).map_err(|e| format!("a {kind} message: {e}"))?;
    publish(&FromBridge::Event(event));
    Ok(name)
}

/// Publishes a connection state (a test feeding the page).
pub fn dispatch_connection(state: State, attempt: u32) {
    publish(&FromBridge::Connection { state, attempt });
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
