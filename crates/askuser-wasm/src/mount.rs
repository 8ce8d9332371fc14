//! `mountDialog(element, request, {onAnswer, onCancel, styles})`: the same Leptos
//! dialog the askuser page shows, mounted inside any element of the host page.
//!
//! Styling: the element gets the class `askuser-embed`, and the package's stylesheet
//! (`src/embed.css`, shipped as `askuser.css` too) is added to `<head>` once, unless
//! `styles: false`. Every colour, the font and the spacing are `--askuser-*` custom
//! properties read with a default (`var(--askuser-bg, #fff)`), so a host sets them on
//! `:root`, on the element, or anywhere between.

use crate::{callback, get, into_error, read_request, to_js};
use askuser_core::{Limits, Selection};
use askuser_web::DialogHandle;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The stylesheet for mounted dialogs.
pub const CSS: &str = include_str!("embed.css");

/// The id of the `<style>` element `mountDialog` adds.
pub const STYLE_ID: &str = "askuser-embed-style";

/// A mounted dialog; `unmount()` removes it.
#[wasm_bindgen]
pub struct MountedDialog {
    handle: Option<DialogHandle>,
    element: web_sys::HtmlElement,
}

#[wasm_bindgen]
impl MountedDialog {
    /// Removes the dialog and its state from the element. Calling it twice is harmless.
    pub fn unmount(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.unmount();
            let _ = self.element.class_list().remove_1("askuser-embed");
        }
    }

    /// Whether the dialog is still mounted.
    #[wasm_bindgen(getter)]
    pub fn mounted(&self) -> bool {
        self.handle.is_some()
    }
}

/// Mounts the dialog for `request` (any dialect; invalid throws) into `element`.
/// `onAnswer(answers)` gets one selection per question when the person submits,
/// `onCancel(chat)` runs when they decline (`chat`: "Chat about this", they would rather
/// talk it over). It takes the keyboard focus.
#[wasm_bindgen(js_name = mountDialog)]
pub fn mount_dialog(
    #[wasm_bindgen(unchecked_param_type = "HTMLElement")] element: JsValue,
    #[wasm_bindgen(unchecked_param_type = "AnyRequest")] request: JsValue,
    options: Option<crate::types::MountOptionsArg>,
) -> Result<MountedDialog, JsValue> {
    let element: web_sys::HtmlElement =
        element.dyn_into().map_err(|_| into_error("element: expected an HTMLElement to mount the dialog into"))?;
    let mut request = read_request(request, &Limits::default())?.request;
    // No bridge parses this one's previews for the dialog: the package does.
    request.parse_previews();
    let options = options.map(JsValue::from).unwrap_or_default();
    let on_answer = callback(&options, "onAnswer")?;
    let on_cancel = callback(&options, "onCancel")?;
    if get(&options, "styles") != JsValue::FALSE {
        add_styles();
    }
    let _ = element.class_list().add_1("askuser-embed");
    let submit = move |answers: Vec<Selection>| {
        if let Some(f) = &on_answer {
            report(to_js(&answers).and_then(|a| f.call1(&JsValue::UNDEFINED, &a)));
        }
    };
    let cancel = move |chat: bool| {
        if let Some(f) = &on_cancel {
            report(f.call1(&JsValue::UNDEFINED, &JsValue::from_bool(chat)));
        }
    };
    let handle = askuser_web::mount_dialog(element.clone(), request, submit, cancel);
    Ok(MountedDialog { handle: Some(handle), element })
}

/// The dialog's stylesheet, for a host that passes `styles: false` and adds it itself.
#[wasm_bindgen(js_name = dialogStyles)]
pub fn dialog_styles() -> String {
    CSS.to_owned()
}

/// Adds the stylesheet to `<head>` unless it is there already.
fn add_styles() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    if document.get_element_by_id(STYLE_ID).is_some() {
        return;
    }
    let (Ok(style), Some(head)) = (document.create_element("style"), document.head()) else { return };
    style.set_id(STYLE_ID);
    style.set_text_content(Some(CSS));
    // First in <head>, so the host's own rules come later and win at equal specificity.
    let _ = head.insert_before(&style, head.first_child().as_ref());
}

/// A host callback threw: it cannot be thrown back through the dialog's event handler,
/// so it is reported the way an uncaught exception would be.
fn report(outcome: Result<JsValue, JsValue>) {
    if let Err(e) = outcome {
        web_sys::console::error_1(&e);
    }
}
