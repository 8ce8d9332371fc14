//! Pairing a device: the page opened at `#pair=CODE` (the link `askuser pair` prints,
//! or the QR code [`PairPanel`] shows) trades the one-time code for a device token of
//! its own, keeps it in `localStorage` (the device stays paired until the token is
//! revoked) and loads the page again.

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
            Ok((token, name)) => {
                if let Some(local) = window.local_storage().ok().flatten() {
                    let _ = local.set_item(DEVICE_KEY, &token);
                }
                // The page that loads next says so.
                if let Some(session) = window.session_storage().ok().flatten() {
                    let _ = session.set_item(PAIRED_KEY, &name);
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

/// Where the page that pairs leaves the device's name for the page it loads.
const PAIRED_KEY: &str = "askuser:paired";

/// What to tell the person, once, on the page loaded right after pairing.
pub fn just_paired() -> Option<String> {
    let session = web_sys::window()?.session_storage().ok()??;
    let name = session.get_item(PAIRED_KEY).ok()??;
    let _ = session.remove_item(PAIRED_KEY);
    let name = if name.is_empty() { String::new() } else { format!(" as “{name}”") };
    Some(format!("This device is paired{name}: it has a token of its own and stays signed in until the token is revoked."))
}

/// `POST /v1/pair {"code"}`: the device token and its name, or what the bridge said.
async fn claim(code: &str) -> Result<(String, String), String> {
    // A code is letters, digits and dashes; anything else is dropped, not escaped.
    let code: String = code.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let reply = post("/v1/pair", None, &format!(r#"{{"code":"{code}"}}"#)).await?;
    let name = reply.credential.as_ref().and_then(|c| c.get("name")).and_then(|n| n.as_str()).unwrap_or_default().to_owned();
    reply.token.map(|t| (t, name)).ok_or_else(|| "the bridge sent no token".into())
}

/// `POST path` with a JSON `body` (and the page's `token`): the bridge's answer, or
/// the message of its refusal.
async fn post(path: &str, token: Option<&str>, body: &str) -> Result<Reply, String> {
    let text = request("POST", path, token, Some(body)).await?;
    Ok(serde_json::from_str(&text).unwrap_or_default())
}

/// `method path` (with a JSON `body` and the page's `token`, if given): the text of the
/// bridge's answer, or the message of its refusal (also for [`crate::push`]).
pub(crate) async fn request(method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    let headers = web_sys::Headers::new().map_err(|_| "no headers")?;
    let _ = headers.set("content-type", "application/json");
    if let Some(t) = token {
        let _ = headers.set("authorization", &format!("Bearer {t}"));
    }
    init.set_headers(&headers);
    if let Some(body) = body {
        init.set_body(&JsValue::from_str(body));
    }
    let unreachable = |_| "the bridge did not answer".to_owned();
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_str_and_init(path, &init)).await.map_err(unreachable)?.unchecked_into();
    let text = JsFuture::from(response.text().map_err(unreachable)?).await.map_err(unreachable)?.as_string().unwrap_or_default();
    if response.ok() {
        Ok(text)
    } else {
        let reply: Reply = serde_json::from_str(&text).unwrap_or_default();
        Err(reply.message.unwrap_or_else(|| format!("the bridge answered {}", response.status())))
    }
}

/// What the bridge answers to pairing requests (each uses some of it).
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply {
    token: Option<String>,
    credential: Option<serde_json::Value>,
    message: Option<String>,
    link: Option<String>,
    qr_svg: Option<String>,
}

/// The host of an `http(s)://host[:port]/…` link, as written (`[::1]` with its brackets).
fn host(link: &str) -> &str {
    let rest = link.split_once("://").map_or(link, |(_, r)| r);
    let authority = rest.split(['/', '#', '?']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(authority, |(h, _)| &authority[..h.len() + 2]),
        None => authority.split(':').next().unwrap_or_default(),
    }
}

/// Whether `link` points at this machine only (127.0.0.0/8, `[::1]`, localhost), which
/// no other device can open.
fn loopback(link: &str) -> bool {
    let host = host(link).to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "[::1]"
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// A new pairing code for another device, as a QR code and a link (only the admin
/// token, the one `askuser serve` printed, may make one).
#[leptos::component]
pub fn PairPanel(token: Option<String>, on_close: leptos::prelude::Callback<()>) -> impl leptos::IntoView {
    use leptos::prelude::*;
    let made = RwSignal::new(None::<Result<(String, String), String>>);
    leptos::task::spawn_local(async move {
        let Some(token) = token else {
            made.set(Some(Err("This page has no token.".into())));
            return;
        };
        let outcome = match post("/v1/pairings", Some(&token), r#"{"name":"paired device"}"#).await {
            Ok(Reply { link: Some(link), qr_svg: Some(svg), .. }) => Ok((link, svg)),
            Ok(_) => Err("the bridge sent no link".into()),
            Err(e) if e.contains("may not") => Err("Only the bridge's own link (the one `askuser serve` printed) can pair devices.".into()),
            Err(e) => Err(e),
        };
        _ = made.try_set(Some(outcome));
    });
    view! {
        <section class="askuser-pair" role="dialog" aria-label="Pair a device">
            <h2>"Pair a phone or laptop"</h2>
            {move || match made.get() {
                None => view! { <p>"Making a one-time code…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="askuser-error">{e}</p> }.into_any(),
                Some(Ok((link, svg))) => {
                    let src = format!("data:image/svg+xml;utf8,{}", String::from(js_sys::encode_uri_component(&svg)));
                    view! {
                        <img class="askuser-qr" alt="QR code of the pairing link" src=src width="220" height="220" />
                        <p>"Scan it, or open this link on the device, within 5 minutes; it works once:"</p>
                        <p><code class="askuser-pair-link">{link.clone()}</code></p>
                        {loopback(&link).then(|| view! {
                            <p class="askuser-pair-local" role="note">
                                "This link is for this computer only (" {host(&link).to_owned()} "): a phone cannot open it. \
                                 To pair a phone, start the bridge on your network, e.g. "
                                <code>"askuser serve --tls --addr 0.0.0.0:7823 --name THIS-COMPUTER.lan"</code>
                                ", and open this page at that address (the README's \"From another machine\")."
                            </p>
                        })}
                    }
                    .into_any()
                }
            }}
            <button type="button" on:click=move |_| on_close.run(())>"Done"</button>
        </section>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_link_to_this_machine_only_is_told_apart() {
        for link in ["http://127.0.0.1:7823/#pair=x", "http://localhost:1/#pair=x", "http://[::1]:7823/#pair=x", "http://127.5.0.1/"] {
            assert!(super::loopback(link), "{link}");
        }
        for link in
            ["https://devbox.lan:7823/#pair=x", "https://192.168.1.5:7823/#pair=x", "https://[fe80::1]:1/", "https://localhost.example/"]
        {
            assert!(!super::loopback(link), "{link}");
        }
        assert_eq!(super::host("https://[::1]:7823/#pair=x"), "[::1]");
    }
}
