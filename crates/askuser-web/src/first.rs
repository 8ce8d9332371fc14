//! The question the bridge wrote into the page before the app loaded (`#askuser-first`,
//! see the bridge's `first.rs`): a plain form a person may already have used. When the
//! app has an inbox to show, [`adopt`] keeps what was chosen or typed there as that
//! question's draft and removes the form, so the app opens on the same question with
//! the same answer half-given. [`open_session`] is how the bridge comes to know this
//! device for the next load.

use askuser_core::dialog::{Draft, QuestionDraft};
use wasm_bindgen::JsValue;

const ID: &str = "askuser-first";

fn property(element: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(element, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// What the form holds for question `i`: None when nothing was chosen or typed.
fn question(form: &web_sys::Element, i: usize) -> Option<QuestionDraft> {
    let mut draft = QuestionDraft::default();
    let chosen = form.query_selector_all(&format!("input[name=\"q{i}\"]:checked")).ok()?;
    for n in 0..chosen.length() {
        let value = chosen.item(n).map(|e| property(&e, "value").as_string().unwrap_or_default()).unwrap_or_default();
        match value.parse::<usize>() {
            Ok(option) => draft.selected.push(option),
            Err(_) => draft.other = true,
        }
    }
    if let Ok(Some(text)) = form.query_selector(&format!("textarea[name=\"q{i}-text\"]")) {
        draft.other_text = property(&text, "value").as_string().unwrap_or_default();
    }
    // Typing with nothing chosen chooses Other, as the bridge reads the form.
    if draft.selected.is_empty() && !draft.other_text.trim().is_empty() {
        draft.other = true;
    }
    draft.selected.sort_unstable();
    (draft != QuestionDraft::default()).then_some(draft)
}

/// Takes over the first-paint form, if the page has one: saves what it holds as its
/// question's draft, removes it, and returns that question's id and whether the person
/// chose or typed anything in it (then the app opens it).
pub fn adopt() -> Option<(String, bool)> {
    let document = web_sys::window()?.document()?;
    let first = document.get_element_by_id(ID)?;
    let form = first.query_selector("form[data-id]").ok().flatten();
    first.remove();
    let form = form?;
    let id = form.get_attribute("data-id")?;
    let count: usize = form.get_attribute("data-questions")?.parse().ok()?;
    let questions: Vec<Option<QuestionDraft>> = (0..count).map(|i| question(&form, i)).collect();
    let engaged = questions.iter().any(Option::is_some);
    if engaged {
        let tab = questions.iter().position(Option::is_some).unwrap_or(0);
        let questions = questions.into_iter().map(Option::unwrap_or_default).collect();
        crate::drafts::save(&id, &Draft { tab, questions });
    }
    Some((id, engaged))
}

/// Whether the person is pressing or typing in the form now (`web/first.js` marks it
/// with `data-busy`).
pub fn busy() -> bool {
    web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(ID)).is_some_and(|first| first.has_attribute("data-busy"))
}

/// Whether the page shows the bridge's form (fresher than the inbox kept from the last
/// visit, which then waits for the bridge's own).
pub fn present() -> bool {
    web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(ID)).is_some()
}

/// Asks the bridge to remember this device (`POST /v1/session` with its token: an
/// `HttpOnly` cookie holding a page session, never the token), so its next load shows
/// the waiting question at once.
pub fn open_session(token: String) {
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = crate::pairing::request("POST", "/v1/session", Some(&token), None).await {
            web_sys::console::warn_1(&format!("askuser: the bridge did not open a session: {e}").into());
        }
    });
}
