//! Getting a person's attention: the title counts pending question sets; while the tab
//! is hidden, desktop notifications (after the person enabled them) and an optional
//! short beep. All of it is best effort; a browser without an API simply gets less.

use wasm_bindgen::JsValue;

pub const TITLE: &str = "askuser";
const SOUND_KEY: &str = "askuser:sound";

pub fn hidden() -> bool {
    web_sys::window().and_then(|w| w.document()).is_some_and(|d| d.hidden())
}

/// `(N) askuser` with N pending, else `askuser`.
pub fn title(pending: usize) -> String {
    if pending > 0 {
        format!("({pending}) {TITLE}")
    } else {
        TITLE.to_owned()
    }
}

pub fn set_title(text: &str) {
    if let Some(d) = web_sys::window().and_then(|w| w.document()) {
        if d.title() != text {
            d.set_title(text);
        }
    }
}

fn has_notification_api() -> bool {
    web_sys::window().is_some_and(|w| js_sys::Reflect::has(&w, &JsValue::from_str("Notification")).unwrap_or(false))
}

/// "granted", "denied", "default", or "unsupported".
pub fn permission() -> &'static str {
    if !has_notification_api() {
        return "unsupported";
    }
    match web_sys::Notification::permission() {
        web_sys::NotificationPermission::Granted => "granted",
        web_sys::NotificationPermission::Denied => "denied",
        _ => "default",
    }
}

/// Asks for permission; `done` gets the answer ("granted", ...).
pub fn request_permission(done: impl FnOnce(&'static str) + 'static) {
    if !has_notification_api() {
        return done("unsupported");
    }
    match web_sys::Notification::request_permission() {
        Ok(promise) => on_settled(promise, move || done(permission())),
        Err(_) => done(permission()),
    }
}

/// Runs `then` once `promise` settles.
fn on_settled(promise: js_sys::Promise, then: impl FnOnce() + 'static) {
    let cb = wasm_bindgen::closure::Closure::<dyn FnMut()>::once(then);
    let _ = promise.finally(&cb);
    // Called once by the browser, then garbage.
    cb.forget();
}

/// A desktop notification, when permitted. Agent text goes in as plain text.
pub fn notify(title: &str, body: &str) {
    if permission() != "granted" {
        return;
    }
    let opts = web_sys::NotificationOptions::new();
    opts.set_body(body);
    opts.set_tag("askuser");
    let _ = web_sys::Notification::new_with_options(title, &opts);
}

pub fn sound_enabled() -> bool {
    web_sys::window()
        .and_then(|w| w.local_storage().ok().flatten())
        .and_then(|s| s.get_item(SOUND_KEY).ok().flatten())
        .is_some_and(|v| v == "on")
}

pub fn set_sound_enabled(on: bool) {
    if let Some(s) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = s.set_item(SOUND_KEY, if on { "on" } else { "off" });
    }
}

thread_local! {
    static AUDIO: std::cell::RefCell<Option<web_sys::AudioContext>> = const { std::cell::RefCell::new(None) };
}

/// Creates the audio context; call it from a click so the browser lets it play later.
pub fn unlock_audio() {
    AUDIO.with(|a| {
        let mut a = a.borrow_mut();
        if a.is_none() {
            *a = web_sys::AudioContext::new().ok();
        }
        if let Some(ctx) = a.as_ref() {
            let _ = ctx.resume();
        }
    });
}

/// A short, quiet two-tone beep.
pub fn beep() {
    AUDIO.with(|a| {
        let a = a.borrow();
        let Some(ctx) = a.as_ref() else { return };
        let (Ok(osc), Ok(gain)) = (ctx.create_oscillator(), ctx.create_gain()) else { return };
        let now = ctx.current_time();
        osc.set_type(web_sys::OscillatorType::Sine);
        osc.frequency().set_value(880.0);
        let _ = osc.frequency().set_value_at_time(660.0, now + 0.09);
        gain.gain().set_value(0.06);
        let _ = gain.gain().linear_ramp_to_value_at_time(0.0, now + 0.18);
        let _ = osc.connect_with_audio_node(&gain);
        let _ = gain.connect_with_audio_node(&ctx.destination());
        let _ = osc.start();
        let _ = osc.stop_with_when(now + 0.2);
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_title_counts_what_waits() {
        assert_eq!(super::title(3), "(3) askuser");
        assert_eq!(super::title(0), "askuser");
    }
}
