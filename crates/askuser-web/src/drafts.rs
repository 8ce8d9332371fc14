//! Dialog drafts in `localStorage` (`askuser:draft:{questionId}`), so a half-answered
//! question survives a reload. Storage errors (private mode, quota) are ignored: a
//! draft is a convenience.

use askuser_core::dialog::Draft;

pub const PREFIX: &str = "askuser:draft:";

pub fn key(id: &str) -> String {
    format!("{PREFIX}{id}")
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

pub fn load(id: &str) -> Option<Draft> {
    let text = storage()?.get_item(&key(id)).ok()??;
    serde_json::from_str(&text).ok()
}

pub fn save(id: &str, draft: &Draft) {
    if let (Some(s), Ok(text)) = (storage(), serde_json::to_string(draft)) {
        let _ = s.set_item(&key(id), &text);
    }
}

pub fn remove(id: &str) {
    if let Some(s) = storage() {
        let _ = s.remove_item(&key(id));
    }
}
