//! Web Push to this device: the "Push even when closed" panel ([`PushPanel`]) subscribes this
//! browser with the bridge's key (`GET /v1/push`), hands the subscription and its rules
//! to the bridge (`POST /v1/push/subscriptions`: which agents, only if unanswered after
//! a while, not in quiet hours) and stops it (`DELETE`). The service worker
//! (`web/sw.js`) shows what is pushed; a tap opens the page at `#q=ID`, and
//! [`crate::app`] selects that question.

use crate::pairing::request;
use js_sys::{Array, Object, Reflect, JSON};
use leptos::either::Either;
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{PushManager, PushSubscription};

const SUBSCRIPTIONS: &str = "/v1/push/subscriptions";

// The bridge's JSON is read and written as JS objects (no serde code for a few fields;
// also for [`crate::rules`]).
pub(crate) fn get(o: &JsValue, key: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(key)).unwrap_or_default()
}

fn set(o: &JsValue, key: &str, value: &JsValue) {
    _ = Reflect::set(o, &JsValue::from_str(key), value);
}

pub(crate) fn text(o: &JsValue, key: &str) -> String {
    get(o, key).as_string().unwrap_or_default()
}

/// Which questions reach this device, and when: the bridge's rules (`agents`,
/// `delaySeconds`, `quiet` hours from and to, in this browser's time zone).
#[derive(Clone, Default, PartialEq)]
struct Rules {
    agents: Vec<String>,
    delay_seconds: u32,
    quiet: Option<(String, String)>,
}

impl Rules {
    fn from_js(rules: &JsValue) -> Rules {
        let agents = get(rules, "agents").dyn_into::<Array>().map(|a| a.iter().filter_map(|a| a.as_string()).collect());
        let quiet = get(rules, "quiet");
        Rules {
            agents: agents.unwrap_or_default(),
            delay_seconds: get(rules, "delaySeconds").as_f64().unwrap_or(0.0) as u32,
            quiet: quiet.is_object().then(|| (text(&quiet, "from"), text(&quiet, "to"))),
        }
    }

    fn to_js(&self) -> JsValue {
        let rules = Object::new().into();
        set(&rules, "agents", &self.agents.iter().map(|a| JsValue::from_str(a)).collect::<Array>());
        set(&rules, "delaySeconds", &JsValue::from_f64(self.delay_seconds.into()));
        if let Some((from, to)) = &self.quiet {
            let quiet = Object::new().into();
            set(&quiet, "from", &JsValue::from_str(from));
            set(&quiet, "to", &JsValue::from_str(to));
            set(&quiet, "utcOffsetMinutes", &JsValue::from_f64(-js_sys::Date::new_0().get_timezone_offset()));
            set(&rules, "quiet", &quiet);
        }
        rules
    }
}

/// `value` as JSON text.
fn json(value: &JsValue) -> String {
    JSON::stringify(value).ok().and_then(|t| t.as_string()).unwrap_or_default()
}

/// Why this browser cannot take push messages, if it cannot.
fn unsupported() -> Option<&'static str> {
    let window = web_sys::window()?;
    let has = |o: &JsValue, name: &str| Reflect::has(o, &JsValue::from_str(name)).unwrap_or(false);
    if !window.is_secure_context() {
        return Some("Push notifications need this page over HTTPS (or on localhost).");
    }
    let able = has(&window.navigator(), "serviceWorker") && has(&window, "PushManager") && has(&window, "Notification");
    (!able).then_some("This browser cannot receive push notifications (on iPhone: add askuser to the Home Screen first).")
}

/// What a promise resolved to, or the message it was rejected with.
async fn wait(promise: Result<js_sys::Promise, JsValue>) -> Result<JsValue, String> {
    let failed = |e: JsValue| Some(text(&e, "message")).filter(|m| !m.is_empty()).unwrap_or_else(|| "the browser refused".into());
    JsFuture::from(promise.map_err(failed)?).await.map_err(failed)
}

/// The push manager of the page's service worker, once it is active.
async fn push_manager() -> Result<PushManager, String> {
    let window = web_sys::window().ok_or("no window")?;
    let registration: web_sys::ServiceWorkerRegistration = wait(window.navigator().service_worker().ready()).await?.unchecked_into();
    registration.push_manager().map_err(|_| "no push manager".into())
}

/// This browser's subscription, if it has one.
async fn current(manager: &PushManager) -> Result<Option<PushSubscription>, String> {
    let found = wait(manager.get_subscription()).await?;
    Ok((!found.is_null() && !found.is_undefined()).then(|| found.unchecked_into()))
}

/// A subscription's endpoint, and the subscription as the bridge takes it: `{endpoint,
/// keys}` (`toJSON()` without `expirationTime`).
fn described(subscription: &PushSubscription) -> Result<(String, JsValue), String> {
    let all: JsValue = subscription.to_json().map_err(|_| "an unreadable push subscription")?.into();
    let endpoint = get(&all, "endpoint").as_string().ok_or("a push subscription without an endpoint")?;
    let taken = Object::new().into();
    set(&taken, "endpoint", &JsValue::from_str(&endpoint));
    set(&taken, "keys", &get(&all, "keys"));
    Ok((endpoint, taken))
}

/// Base64url (padding and the `+/` alphabet allowed) to bytes.
fn base64url(text: &str) -> Option<Vec<u8>> {
    let (mut bits, mut held, mut out) = (0u32, 0u32, Vec::with_capacity(text.len() * 3 / 4));
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        bits = (bits << 6 | u32::from(v)) & 0xffff;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
    }
    Some(out)
}

/// The rules as the panel's form has them.
fn form_rules() -> Result<Rules, String> {
    let field = |name: &str| {
        document().query_selector(&format!(".askuser-push [name={name}]")).ok().flatten().map(JsValue::from).unwrap_or_default()
    };
    let agents = text(&field("agents"), "value").split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect();
    let delay = text(&field("delay"), "value");
    let delay_seconds = match delay.trim() {
        "" => 0,
        d => d.parse().map_err(|_| format!("Only if unanswered after: expected a whole number of seconds, got {d}"))?,
    };
    let quiet = get(&field("quiet"), "checked").is_truthy().then(|| (text(&field("from"), "value"), text(&field("to"), "value")));
    Ok(Rules { agents, delay_seconds, quiet })
}

/// What this device is to the bridge: the key to subscribe with, and the rules of this
/// browser's subscription if the bridge has it from this page's token.
async fn load(token: &str) -> Result<(String, Option<Rules>), String> {
    let info = JSON::parse(&request("GET", "/v1/push", Some(token), None).await?).unwrap_or_default();
    let key = get(&info, "publicKey").as_string().ok_or("the bridge sent no push key")?;
    let endpoint = match current(&push_manager().await?).await? {
        Some(s) => Some(described(&s)?.0),
        None => None,
    };
    let mine = get(&info, "subscriptions")
        .dyn_into::<Array>()
        .ok()
        .and_then(|all| all.iter().find(|s| get(s, "endpoint").as_string() == endpoint));
    Ok((key, mine.map(|s| Rules::from_js(&get(&s, "rules")))))
}

/// Does `action`: subscribes with the bridge's `key` and hands the subscription with the
/// form's rules to the bridge (`Start`), hands it again with new rules (`Save`), or
/// forgets it, at the bridge first (`Stop`).
async fn perform(action: Action, token: &str, key: &str) -> Result<(), String> {
    let rules = match action {
        Action::Load => return Ok(()),
        Action::Start | Action::Save => form_rules()?,
        Action::Stop => Rules::default(),
    };
    if let Action::Start = action {
        // First, while the click still counts as one (browsers ask only then).
        wait(web_sys::Notification::request_permission()).await?;
        if crate::notify::permission() != "granted" {
            return Err("Notifications are blocked for this page: allow them in the browser's site settings, then try again.".into());
        }
    }
    let manager = push_manager().await?;
    let mut subscription = current(&manager).await?;
    if let Action::Start = action {
        // One subscription per page: one the bridge does not know (made with another
        // key, or forgotten) makes way for a new one.
        if let Some(old) = subscription {
            _ = wait(old.unsubscribe()).await;
        }
        let options = web_sys::PushSubscriptionOptionsInit::new();
        options.set_user_visible_only(true);
        let key = base64url(key).ok_or("the bridge's push key is not base64url")?;
        options.set_application_server_key_opt_u8_array(Some(&js_sys::Uint8Array::from(key.as_slice())));
        subscription = Some(wait(manager.subscribe_with_options(&options)).await?.unchecked_into());
    }
    let subscription = subscription.ok_or("This browser's subscription has gone: send questions to this device again.")?;
    let (endpoint, taken) = described(&subscription)?;
    let body = Object::new().into();
    if let Action::Stop = action {
        set(&body, "endpoint", &JsValue::from_str(&endpoint));
        request("DELETE", SUBSCRIPTIONS, Some(token), Some(&json(&body))).await?;
        return wait(subscription.unsubscribe()).await.map(drop);
    }
    set(&body, "subscription", &taken);
    set(&body, "rules", &rules.to_js());
    request("POST", SUBSCRIPTIONS, Some(token), Some(&json(&body))).await.map(drop)
}

#[derive(Clone, Copy)]
enum Action {
    Load,
    Start,
    Save,
    Stop,
}

/// What the panel shows: a note (checking, or why not), or the form for this device,
/// with its rules if it gets questions.
#[derive(Clone, PartialEq)]
enum Shown {
    Note(&'static str),
    Off,
    On(Rules),
}

/// The "Push even when closed" panel: whether this device gets questions pushed, with which
/// rules; start, change and stop it. `permission` is the page's notification permission.
#[component]
pub fn PushPanel(token: Option<String>, permission: RwSignal<&'static str>, on_close: Callback<()>) -> impl IntoView {
    let cannot = unsupported().or(token.is_none().then_some("This page has no token: open the link `askuser serve` printed."));
    let shown = RwSignal::new(Shown::Note(cannot.unwrap_or("Checking this browser…")));
    let error = RwSignal::new(None::<String>);
    let token = StoredValue::new(token);
    let key = StoredValue::new(None::<String>);
    let busy = StoredValue::new(false);

    let act = move |action: Action| {
        if busy.get_value() {
            return;
        }
        busy.set_value(true);
        error.set(None);
        leptos::task::spawn_local(async move {
            let token = token.get_value().unwrap_or_default();
            let done = perform(action, &token, &key.get_value().unwrap_or_default()).await;
            _ = permission.try_set(crate::notify::permission());
            let loaded = load(&token).await;
            let failed = done.err().or_else(|| loaded.as_ref().err().cloned());
            if let Ok((public_key, mine)) = loaded {
                _ = key.try_set_value(Some(public_key));
                let now = mine.map_or(Shown::Off, Shown::On);
                if shown.try_get_untracked().is_some_and(|s| s != now) {
                    shown.set(now);
                }
            }
            _ = error.try_set(failed);
            _ = busy.try_set_value(false);
        });
    };
    if cannot.is_none() {
        act(Action::Load);
    }

    // Rendered again only when what the bridge has changes: what is typed stays.
    let body = move || {
        let (on, rules) = match shown.get() {
            Shown::Note(text) => return Either::Left(view! { <p>{text}</p> }),
            Shown::Off => (false, Rules::default()),
            Shown::On(rules) => (true, rules),
        };
        let delay = if rules.delay_seconds > 0 { rules.delay_seconds.to_string() } else { String::new() };
        let quiet = rules.quiet.is_some();
        let (from, to) = rules.quiet.unwrap_or_else(|| ("22:00".into(), "07:00".into()));
        let fields = [
            (
                "Only from these agents (names or session ids, comma-separated; empty: all)",
                "text",
                "agents",
                rules.agents.join(", "),
                false,
            ),
            ("Only if still unanswered after (seconds)", "number", "delay", delay, false),
            ("Quiet hours", "checkbox", "quiet", String::new(), quiet),
            ("Quiet from", "time", "from", from, false),
            ("Quiet until", "time", "to", to, false),
        ];
        let buttons: &[(Action, &str)] =
            if on { &[(Action::Save, "Save rules"), (Action::Stop, "Stop")] } else { &[(Action::Start, "Send questions to this device")] };
        Either::Right(view! {
            <p>{if on { "This device gets questions pushed to it." } else { "This device gets no questions pushed to it." }}</p>
            {fields.map(|(label, kind, name, value, checked)| view! {
                <p><label>{label}" " <input type=kind name=name value=value checked=checked /></label></p>
            }).collect_view()}
            <p class="askuser-buttons">
                {buttons.iter().map(|&(a, label)| view! { <button type="button" on:click=move |_| act(a)>{label}</button> }).collect_view()}
            </p>
        })
    };
    view! {
        <section class="askuser-push" role="dialog" aria-label="Push even when closed">
            <h2>"Questions on this device"</h2>
            <p class="askuser-muted">
                "The bridge pushes questions to this device even when no askuser page is open. \
                 (\"Notify while open\" notifies only while this page is open.)"
            </p>
            {body}
            {move || error.get().map(|e| view! { <p class="askuser-error" role="alert">{e}</p> })}
            <button type="button" on:click=move |_| on_close.run(())>"Done"</button>
        </section>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64url_decodes_a_push_key() {
        let key = super::base64url("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4").unwrap();
        assert_eq!((key.len(), key[0], key[64]), (65, 4, 0x0e));
        assert_eq!(super::base64url("aGk=").unwrap(), b"hi");
        assert_eq!(super::base64url("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(super::base64url("a b"), None);
    }
}
