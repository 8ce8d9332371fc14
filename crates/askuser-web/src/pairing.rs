//! Pairing a device: the page opened at `#pair=CODE` (the link `askuser pair` prints)
//! trades the one-time code for a device token of its own, keeps it in `localStorage`
//! (the device stays paired until the token is revoked) and loads the page again.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Where a paired device keeps its token.
pub const DEVICE_KEY: &str = "askuser:device-token";

fn code() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    hash.trim_start_matches('#').split('&').find_map(|kv| kv.strip_prefix("pair=")).filter(|c| !c.is_empty()).map(str::to_owned)
}

/// If the page was opened to pair, pairs (then reloads) and returns true.
pub fn start() -> bool {
    let Some(code) = code() else { return false };
    wasm_bindgen_futures::spawn_local(async move {
        let Some(window) = web_sys::window() else { return };
        match claim(&code).await {
            Ok(token) => {
                if let Some(local) = window.local_storage().ok().flatten() {
                    let _ = local.set_item(DEVICE_KEY, &token);
                }
            }
            Err(message) => {
                let _ = window.alert_with_message(&format!("Pairing failed: {message}"));
            }
        }
        // Without the code in the address: it is spent either way.
        let location = window.location();
        let _ = location.replace(&location.pathname().unwrap_or_else(|_| "/".into()));
    });
    true
}

/// `POST /v1/pair {"code"}`: the device token, or what the bridge said.
async fn claim(code: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    let headers = web_sys::Headers::new().map_err(|_| "no headers")?;
    let _ = headers.set("content-type", "application/json");
    init.set_headers(&headers);
    // A code is letters, digits and dashes; anything else is dropped, not escaped.
    let code: String = code.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    init.set_body(&JsValue::from_str(&format!(r#"{{"code":"{code}"}}"#)));
    let unreachable = |_| "the bridge did not answer".to_owned();
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_str_and_init("/v1/pair", &init)).await.map_err(unreachable)?.unchecked_into();
    let text = JsFuture::from(response.text().map_err(unreachable)?).await.map_err(unreachable)?.as_string().unwrap_or_default();
    let reply: Reply = serde_json::from_str(&text).unwrap_or_default();
    match reply.token {
        Some(token) if response.ok() => Ok(token),
        _ => Err(reply.message.unwrap_or_else(|| "the bridge refused the code".into())),
    }
}

/// The bridge's answer: a token, or (refused) a message.
#[derive(Default, serde::Deserialize)]
struct Reply {
    token: Option<String>,
    message: Option<String>,
}
