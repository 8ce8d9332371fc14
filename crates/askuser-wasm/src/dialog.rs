//! `new Dialog(request, options?)`: the core's [`Dialog`] state machine for a host that
//! draws its own UI. The host feeds DOM key names (`key("ArrowDown")`) or events
//! (`event({type: "pick", index: 2})`), renders `state()`, and learns the outcome from
//! the returned effects or the `onSubmit` / `onCancel` callbacks (called after the
//! state has changed, so they may read `state()`).

use crate::{callback, from_js, get, into_error, read_request, to_js};
use askuser_core::dialog::{Dialog, DialogOptions, Draft, Effect, Event};
use askuser_core::{Invalid, Limits};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// The dialog state machine, exported to JS as `Dialog`.
#[wasm_bindgen(js_name = Dialog)]
pub struct JsDialog {
    dialog: RefCell<Dialog>,
    on_submit: Option<js_sys::Function>,
    on_cancel: Option<js_sys::Function>,
}

#[wasm_bindgen(js_class = Dialog)]
impl JsDialog {
    /// A dialog for `request` (any dialect; it is normalized first, and an invalid one
    /// throws). `options`: `viewport` (visible rows, default 7), `softLimit` (chars
    /// before a long answer is confirmed, default 2000), `newlineKey` (the new line's key
    /// as the footer names it, default "Shift+Enter"), `draft` (from `draft()`, to
    /// resume), `onSubmit(answers)`, `onCancel()`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "AnyRequest")] request: JsValue,
        options: Option<crate::types::DialogOptionsArg>,
    ) -> Result<JsDialog, JsValue> {
        let request = read_request(request, &Limits::default())?.request;
        let options = options.map(JsValue::from).unwrap_or_default();
        let mut opts = DialogOptions::default();
        if let Some(n) = count(&options, "viewport")? {
            opts.viewport = n;
        }
        if let Some(n) = count(&options, "softLimit")? {
            opts.soft_limit = n;
        }
        let key = get(&options, "newlineKey");
        if !key.is_undefined() && !key.is_null() {
            opts.newline_key = key.as_string().ok_or_else(|| into_error(Invalid::one("newlineKey", "expected a string")))?;
        }
        let draft = get(&options, "draft");
        let dialog = if draft.is_undefined() || draft.is_null() {
            Dialog::new(&request, opts)
        } else {
            Dialog::restore(&request, opts, from_js::<Draft>(draft, "draft: a draft from dialog.draft()")?)
        };
        Ok(JsDialog {
            dialog: RefCell::new(dialog),
            on_submit: callback(&options, "onSubmit")?,
            on_cancel: callback(&options, "onCancel")?,
        })
    }

    /// Applies a DOM `KeyboardEvent.key` ("Shift+Tab" / "Shift+Enter" for the shifted
    /// ones). Returns `{handled, effects}`; call `preventDefault` only when `handled`.
    #[wasm_bindgen(unchecked_return_type = "KeyOutcome")]
    pub fn key(&self, name: &str) -> Result<JsValue, JsValue> {
        let outcome = self.dialog.borrow_mut().key(name);
        let value = to_js(&outcome)?;
        self.perform(&outcome.effects)?;
        Ok(value)
    }

    /// Applies one event (`{type: "next"}`, `{type: "pick", index: 2}`,
    /// `{type: "setText", text}`, ...). Returns the effects.
    #[wasm_bindgen(unchecked_return_type = "Effect[]")]
    pub fn event(&self, #[wasm_bindgen(unchecked_param_type = "DialogEvent")] event: JsValue) -> Result<JsValue, JsValue> {
        let event: Event = from_js(event, "a dialog event such as {type: \"next\"} or {type: \"pick\", index: 0}")?;
        let effects = self.dialog.borrow_mut().apply(event);
        let value = to_js(&effects)?;
        self.perform(&effects)?;
        Ok(value)
    }

    /// The plain view model to render: tabs, the question, rows with focus and
    /// selection, the Other text, the prompt to confirm, the scroll window, the footer.
    #[wasm_bindgen(unchecked_return_type = "DialogState")]
    pub fn state(&self) -> Result<JsValue, JsValue> {
        to_js(&self.dialog.borrow().state())
    }

    /// Every question's draft and the active tab, to persist and pass back as
    /// `options.draft`.
    #[wasm_bindgen(unchecked_return_type = "Draft")]
    pub fn draft(&self) -> Result<JsValue, JsValue> {
        to_js(&self.dialog.borrow().draft())
    }

    /// `"submitted"`, `"cancelled"`, or `null` while the dialog is open.
    #[wasm_bindgen(getter, unchecked_return_type = "\"submitted\" | \"cancelled\" | null")]
    pub fn done(&self) -> Result<JsValue, JsValue> {
        to_js(&self.dialog.borrow().done())
    }

    /// Calls `onSubmit(answers)` / `onCancel(chat)` for `effects`; the dialog is not borrowed.
    fn perform(&self, effects: &[Effect]) -> Result<(), JsValue> {
        for effect in effects {
            match (effect, &self.on_submit, &self.on_cancel) {
                (Effect::Submitted { answers }, Some(f), _) => {
                    f.call1(&JsValue::UNDEFINED, &to_js(answers)?)?;
                }
                (Effect::Cancelled { chat }, _, Some(f)) => {
                    f.call1(&JsValue::UNDEFINED, &JsValue::from_bool(*chat))?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `options[key]` as a count: absent, or a non-negative whole number.
fn count(options: &JsValue, key: &str) -> Result<Option<usize>, JsValue> {
    let value = get(options, key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(Some(n as usize)),
        _ => Err(into_error(Invalid::one(key, "expected a whole number of at least 0"))),
    }
}
