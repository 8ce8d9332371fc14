//! The inbox as last seen, kept in `localStorage` (`askuser:inbox:{bridge}`), so the
//! page opened without the bridge (the service worker serves its shell) still shows the
//! questions, their drafts and the answers waiting to be sent. The next snapshot from
//! the bridge replaces it. A page whose token is refused forgets it, with the drafts (a
//! revoked phone keeps no questions).

use askuser_core::inbox::Inbox;
use askuser_core::protocol::BrowserEvent;

const PREFIX: &str = "askuser:inbox:";

/// At most this much agent text is kept (`localStorage` holds about 5 MB per origin).
const BUDGET: usize = 1 << 20;

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// Keeps `inbox` for the bridge at `key` (its address without the token).
pub fn save(key: &str, inbox: &Inbox) {
    let text = format!(r#"{{"saved":{},"snapshot":{}}}"#, js_sys::Date::now() as u64, inbox.keep(BUDGET));
    if let Some(s) = storage() {
        let _ = s.set_item(&format!("{PREFIX}{key}"), &text);
    }
}

/// The inbox kept for `key`, and when it was kept (ms).
pub fn load(key: &str) -> Option<(u64, BrowserEvent)> {
    #[derive(serde::Deserialize)]
    struct Kept {
        saved: u64,
        snapshot: BrowserEvent,
    }
    let text = storage()?.get_item(&format!("{PREFIX}{key}")).ok()??;
    let kept: Kept = serde_json::from_str(&text).ok()?;
    Some((kept.saved, kept.snapshot))
}

/// Forgets every kept inbox and draft.
pub fn forget() {
    let Some(s) = storage() else { return };
    let keys: Vec<String> = (0..s.length().unwrap_or(0)).filter_map(|i| s.key(i).ok().flatten()).collect();
    for key in keys.iter().filter(|k| k.starts_with(PREFIX) || k.starts_with(crate::drafts::PREFIX)) {
        let _ = s.remove_item(key);
    }
}
