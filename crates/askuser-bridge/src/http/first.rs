//! The question before the app: a device the bridge knows gets the waiting question
//! set written into the page it loads, as a plain HTML form, so a phone on a slow
//! network shows it (and can answer it) before the web app's wasm has arrived.
//!
//! How the bridge knows the device: `POST /v1/session` with the page's token (the web
//! app does it once it has connected) opens a page session (`tokens::Registry::
//! open_session`) and sets a cookie holding its random value, never the token: a
//! browser sends a cookie to every port of its host, so any other server on
//! 127.0.0.1 it visits receives it. The session is the device page of the token's
//! credential (one the admin token opened is no admin), kept as a hash, lasts
//! [`MAX_AGE`] (each start of the app opens a new one in its place), and ends when
//! revoked (`askuser tokens revoke session-…`) or with its credential. The cookie is
//! `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends it),
//! `Secure` over TLS, named by the bridge's port (two bridges on one machine keep
//! theirs). It is read here only: `GET /` (this page), `POST /answer/ID` (its form)
//! and `GET /answer/ID` (whether that set still waits), so it reads and answers that
//! person's question sets and nothing else; the API never takes it. A cookie that opens
//! nothing (ended, expired, revoked, or a token as older bridges set) is cleared when it
//! comes back.
//!
//! The form answers through the same first-answer-wins path as every other answer.
//! The page's script (`web/first.js`, instead of the app's loader) starts the app at
//! once, or, on a slow or data-saving connection where this device has not kept the app,
//! leaves the form as the page: the app (300 KB) loads when the person opens the inbox,
//! and `GET /answer/ID` tells the page when its question set was answered elsewhere.
//! When the app starts, it takes what the person chose or typed in the form as the
//! question's draft (askuser-web's `first.rs`), then removes the form: nothing is lost
//! and nothing is answered twice. Agent text is escaped, never HTML.

use super::App;
use crate::hub::{Answerer, BridgeError};
use crate::store::Filter;
use crate::tokens::{Caller, Scope};
use askuser_core::approval::{Line, Shown};
use askuser_core::dialog::{DENY_SAYING, OTHER_LABEL};
use askuser_core::protocol::{BrowserEvent, QuestionRecord};
use askuser_core::{Selection, Status};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form};

/// How long `GET /answer/ID` holds before saying the question set still waits.
const WATCH: std::time::Duration = std::time::Duration::from_secs(25);

/// A page session lasts 90 days from the app's last start on that browser.
const MAX_AGE: u64 = 90 * 24 * 3600;

/// Where the rendered part goes: in place of the page's `<noscript>` (the form works
/// without scripts).
const SLOT_OPEN: &str = "<noscript>";
const SLOT_CLOSE: &str = "</noscript>";

/// The cookie's name on this bridge: `askuser` and the port the browser reached it on.
fn cookie_name(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let port = host.rsplit_once(':').map(|(_, p)| p).filter(|p| p.bytes().all(|b| b.is_ascii_digit())).unwrap_or("");
    format!("askuser{port}")
}

fn secure(app: &App) -> bool {
    app.security.trust_proxy || app.security.origins.first().is_some_and(|o| o.starts_with("https://"))
}

fn set_cookie(app: &App, headers: &HeaderMap, value: &str, max_age: u64) -> HeaderValue {
    let secure = if secure(app) { "; Secure" } else { "" };
    let cookie = format!("{}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}", cookie_name(headers));
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The session cookie's value, if the request carries one.
fn presented(headers: &HeaderMap) -> Option<String> {
    let name = cookie_name(headers);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name.as_str())?.strip_prefix('=').map(str::to_owned))
}

/// What a request's session cookie opens.
enum Session {
    /// No cookie.
    None,
    /// One that opens nothing (ended, expired, its credential revoked, or a raw token
    /// as bridges before page sessions set): cleared in the response.
    Gone,
    /// A device page of this credential; the session's id.
    Open(Caller, String),
    /// The store did not answer.
    Unknown,
}

async fn session(app: &App, headers: &HeaderMap) -> Session {
    let Some(cookie) = presented(headers) else { return Session::None };
    match app.security.registry.session(&cookie, app.bridge.now_ms()).await {
        Ok(Some((caller, id))) => Session::Open(caller, id),
        Ok(None) => Session::Gone,
        Err(e) => {
            tracing::warn!("a page session: {e}");
            Session::Unknown
        }
    }
}

/// `response` with the session cookie cleared.
fn cleared(app: &App, headers: &HeaderMap, mut response: Response) -> Response {
    response.headers_mut().insert(header::SET_COOKIE, set_cookie(app, headers, "", 0));
    response
}

/// `POST /v1/session`: opens a page session for this device's token and sets its
/// cookie (204). The one the request's cookie opened for the same credential ends.
/// `POST /v1/session?form` (`web/first.js` on a page opened with its token, [`stranger`])
/// also answers with the first waiting set's form (200, HTML the page draws as it is),
/// or 204 when none waits.
pub async fn open(State(app): State<App>, Extension(caller): Extension<Caller>, uri: Uri, headers: HeaderMap) -> Response {
    if caller.scope == Scope::Agent {
        return (StatusCode::FORBIDDEN, "an agent token opens no page session").into_response();
    }
    let registry = &app.security.registry;
    if let Session::Open(before, id) = session(&app, &headers).await {
        if before.id == caller.id {
            if let Err(e) = registry.end_session(&id).await {
                return super::Refusal::from(BridgeError::from(e)).into_response();
            }
        }
    }
    let cookie = match registry.open_session(&caller, app.bridge.now_ms(), MAX_AGE * 1000).await {
        Ok((_, cookie)) => set_cookie(&app, &headers, &cookie, MAX_AGE),
        Err(e) => return super::Refusal::from(BridgeError::from(e)).into_response(),
    };
    let form = match uri.query() {
        Some("form") => waiting(&app, &caller).await.ok().filter(|w| !w.is_empty()).map(|w| render(w.first(), w.len() - 1, None)),
        _ => None,
    };
    match form {
        Some(part) => {
            ([(header::SET_COOKIE, cookie), (header::CACHE_CONTROL, HeaderValue::from_static("no-store"))], Html(part)).into_response()
        }
        None => (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response(),
    }
}

/// `DELETE /v1/session`: ends the page session the cookie opens, and forgets the cookie.
pub async fn close(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Session::Open(_, id) = session(&app, &headers).await {
        if let Err(e) = app.security.registry.end_session(&id).await {
            return super::Refusal::from(BridgeError::from(e)).into_response();
        }
    }
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, set_cookie(&app, &headers, "", 0))]).into_response()
}

#[derive(serde::Deserialize, Default)]
pub struct Landing {
    /// The question set just answered from this page (`/?sent=ID`).
    sent: Option<String>,
    /// The question set this page showed, answered elsewhere (`/?closed=ID`).
    closed: Option<String>,
}

/// `GET /`: the app's page, with the first waiting question set written in for a
/// device the bridge knows. A device it does not know gets the page its script can fill
/// in with one request ([`stranger`]); `/index.html` is the page as built for it (the
/// service worker keeps that one as the shell).
pub async fn index(State(app): State<App>, uri: Uri, headers: HeaderMap, query: Result<Query<Landing>, QueryRejection>) -> Response {
    let caller = match session(&app, &headers).await {
        Session::Open(caller, _) => caller,
        Session::None if uri.path() == "/" => return stranger(uri, headers).await,
        Session::Gone if uri.path() == "/" => return cleared(&app, &headers, stranger(uri, headers.clone()).await),
        Session::None | Session::Unknown => return crate::assets::serve(uri, headers).await,
        Session::Gone => return cleared(&app, &headers, crate::assets::serve(uri, headers.clone()).await),
    };
    let landing = query.map(|Query(q)| q).unwrap_or_default();
    let said = match (landing.sent, landing.closed) {
        (Some(_), _) => Some("Sent. The agent has your answer."),
        (None, Some(_)) => Some("That question set was answered or closed elsewhere."),
        (None, None) => None,
    };
    let (part, form) = match waiting(&app, &caller).await {
        Ok(waiting) => (render(waiting.first(), waiting.len().saturating_sub(1), said), !waiting.is_empty()),
        Err(e) => {
            tracing::warn!("the first paint's questions: {e}");
            return crate::assets::serve(uri, headers).await;
        }
    };
    match filled(&part, form) {
        Some(page) => html(page, &headers),
        None => crate::assets::serve(uri, headers).await,
    }
}

/// `GET /` for a device the bridge does not know (yet): the page as built, its style
/// written in and `web/first.js` for its loader, with nothing written in. Opened from
/// the link `askuser serve` prints (`/#token=…`: a fragment, which no request carries),
/// the script sends the token once (`POST /v1/session?form`, [`open`]), which opens this
/// device's page session and answers with the waiting set's form, drawn at once: one
/// round trip after the page, not the app's wasm, before a phone shows the question.
async fn stranger(uri: Uri, headers: HeaderMap) -> Response {
    match filled("<noscript>askuser needs JavaScript to show your agents' questions.</noscript>", true) {
        Some(page) => html(page, &headers),
        None => crate::assets::serve(uri, headers).await,
    }
}

/// The built page with `part` in its slot and its style written in; with `form`, it
/// loads `web/first.js` instead of the app's loader ([`follow_loader`]). None when this
/// build has no UI.
fn filled(part: &str, form: bool) -> Option<String> {
    let shell = crate::assets::index_html()?;
    // The form posts with this page's origin (under `no-referrer`, `Origin: null`).
    let shell =
        shell.replacen("<meta name=\"referrer\" content=\"no-referrer\" />", "<meta name=\"referrer\" content=\"same-origin\" />", 1);
    let page = match (shell.find(SLOT_OPEN), shell.find(SLOT_CLOSE)) {
        (Some(a), Some(b)) if a < b => format!("{}{part}{}", &shell[..a], &shell[b + SLOT_CLOSE.len()..]),
        _ => shell.replacen("<body>", &format!("<body>{part}"), 1),
    };
    let page = inline_style(&page);
    Some(if form { follow_loader(&page) } else { page })
}

/// `page` as the response to a page load: gzipped where the browser takes it, kept by
/// no cache (it may hold agent text; the service worker neither).
fn html(page: String, headers: &HeaderMap) -> Response {
    let accepted = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut r = match crate::assets::accepts(accepted, "gzip") {
        true => ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CONTENT_ENCODING, "gzip")], gzip(page.as_bytes()))
            .into_response(),
        false => Html(page).into_response(),
    };
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::VARY, HeaderValue::from_static("cookie"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::CONTENT_SECURITY_POLICY, csp());
    r
}

/// The page with its stylesheet written in: drawn from the first response, with no
/// second round trip first (562 ms on a slow phone network).
fn inline_style(page: &str) -> String {
    const LINK: &str = "<link rel=\"stylesheet\" href=\"";
    let Some(start) = page.find(LINK) else { return page.to_owned() };
    let Some(end) = page[start..].find('>').map(|e| start + e + 1) else { return page.to_owned() };
    let href = page[start + LINK.len()..].split('"').next().unwrap_or_default();
    match crate::assets::file(href).and_then(|css| std::str::from_utf8(css).ok()) {
        Some(css) if !css.contains("</") => format!("{}<style>{css}</style>{}", &page[..start], &page[end..]),
        _ => page.to_owned(),
    }
}

/// The page with a form runs `web/first.js` instead of the app's loader, written into
/// the page (a slow phone's round trip, 562 ms, fewer before a device the bridge does
/// not know sees its form; the CSP allows it by its hash, [`csp`]), and asks for none of
/// the app's files before that script has decided to start it (the wasm's path is left
/// in a `<meta name="askuser-app">` for it).
fn follow_loader(page: &str) -> String {
    const LOADER: &str = "<script type=\"module\" src=\"/askuser-init.js\"></script>";
    let script = match first_js() {
        Some(js) => format!("<script type=\"module\">{js}</script>"),
        None => "<script type=\"module\" src=\"/first.js\"></script>".to_owned(),
    };
    let mut page = page.replacen(LOADER, &script, 1);
    let mut wasm = String::new();
    for preload in ["<link rel=\"modulepreload\"", "<link rel=\"preload\""] {
        while let Some(start) = page.find(preload) {
            let Some(end) = page[start..].find('>').map(|e| start + e + 1) else { break };
            let href = page[start..end].split("href=\"").nth(1).and_then(|h| h.split('"').next()).unwrap_or_default();
            if href.ends_with(".wasm") {
                wasm = href.to_owned();
            }
            page.replace_range(start..end, "");
        }
    }
    let meta = format!("<meta name=\"askuser-app\" content=\"{}\" />", super::links::escape(&wasm));
    page.replacen("</head>", &format!("{meta}</head>"), 1)
}

/// `web/first.js` as this build ships it, if it can be written into a page.
fn first_js() -> Option<&'static str> {
    crate::assets::file("/first.js").and_then(|js| std::str::from_utf8(js).ok()).filter(|js| !js.contains("</"))
}

/// The pages' Content-Security-Policy with `web/first.js` written in: the app's, and
/// that one inline script by its SHA-256 (no other inline script runs).
fn csp() -> HeaderValue {
    static CSP: std::sync::OnceLock<HeaderValue> = std::sync::OnceLock::new();
    CSP.get_or_init(|| {
        use base64::Engine;
        let Some(js) = first_js() else { return HeaderValue::from_static(crate::assets::CSP) };
        let hash = base64::engine::general_purpose::STANDARD.encode(ring::digest::digest(&ring::digest::SHA256, js.as_bytes()));
        let policy = crate::assets::CSP.replacen("script-src 'self'", &format!("script-src 'self' 'sha256-{hash}'"), 1);
        HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static(crate::assets::CSP))
    })
    .clone()
}

/// `GET /answer/ID`: holds until question set ID no longer waits (answered, declined,
/// withdrawn or timed out, here or at another bridge), for at most [`WATCH`]: 200 then,
/// 204 while it still waits, 404 for a set that is not this person's (`Bridge::mine`:
/// one closed before they saw it is as unknown as one that never was). The page with the
/// form (`web/first.js`) asks, to show the next set when this one was answered elsewhere.
pub async fn watch(
    State(app): State<App>,
    Path(id): Path<String>,
    standing: Option<Extension<crate::listen::Standing>>,
    headers: HeaderMap,
) -> Response {
    let caller = match session(&app, &headers).await {
        Session::Open(caller, _) => caller,
        Session::None => return StatusCode::UNAUTHORIZED.into_response(),
        Session::Gone => return cleared(&app, &headers, StatusCode::UNAUTHORIZED.into_response()),
        Session::Unknown => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    };
    // The cookie proves the connection as a token would: a held request keeps its place.
    if let Some(Extension(standing)) = standing {
        standing.authenticated();
    }
    let viewer = app.security.registry.viewer(&caller);
    // Subscribe first, then look, so no answer falls between the two.
    let mut events = app.bridge.subscribe();
    let waits = |r: &QuestionRecord| r.status == Status::Pending;
    match app.bridge.mine(&id, viewer.as_ref()).await {
        Ok(r) if waits(&r) => {}
        Ok(_) => return StatusCode::OK.into_response(),
        Err(BridgeError::NotFound(_)) => return StatusCode::NOT_FOUND.into_response(),
        Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
    let mut stop = app.bridge.shutdown_signal();
    let closed = async {
        loop {
            match events.recv().await {
                Ok(BrowserEvent::Answered { id: done, .. } | BrowserEvent::Withdrawn { id: done, .. }) if done == id => return true,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    if !app.bridge.get(&id).await.is_ok_and(|r| waits(&r)) {
                        return true;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return false,
            }
        }
    };
    let status = tokio::select! {
        closed = tokio::time::timeout(WATCH, closed) => match closed {
            Ok(true) => StatusCode::OK,
            Ok(false) => StatusCode::SERVICE_UNAVAILABLE,
            Err(_) => StatusCode::NO_CONTENT,
        },
        _ = crate::hub::stopped(&mut stop) => StatusCode::SERVICE_UNAVAILABLE,
    };
    (status, [(header::CACHE_CONTROL, "no-store")]).into_response()
}

/// `bytes` gzipped (a page is a few KB: well under a millisecond).
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 3), flate2::Compression::default());
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// The pending question sets `caller` sees, oldest first.
async fn waiting(app: &App, caller: &Caller) -> Result<Vec<QuestionRecord>, BridgeError> {
    let viewer = app.security.registry.viewer(caller);
    let mut records = app.bridge.list(Filter::Pending, 1000, viewer.as_ref()).await?;
    records.retain(|r| r.status == Status::Pending);
    records.sort_by_key(|r| r.created_at);
    Ok(records)
}

/// The first-paint part of the page: `record` as a form (or that nothing waits).
fn render(record: Option<&QuestionRecord>, more: usize, said: Option<&str>) -> String {
    let esc = super::links::escape;
    let status = said.map(|s| format!("<p class=\"askuser-first-sent\" role=\"status\">{s}</p>")).unwrap_or_default();
    let Some(record) = record else {
        let header = "<header class=\"askuser-top\"><h1 class=\"askuser-title\">askuser</h1></header>";
        return format!(
            "<div id=\"askuser-first\" class=\"askuser-first\">{header}<main class=\"askuser-active\">{status}\
<p class=\"askuser-empty\">No questions are waiting.</p></main></div>"
        );
    };
    let agent = askuser_core::inbox::agent_name(record);
    let questions = &record.request.questions;
    let approval = record.request.approval.as_ref().and_then(|a| a.view());
    let mut body = String::new();
    for (i, q) in questions.iter().enumerate() {
        body.push_str("<fieldset class=\"askuser-question\"><legend class=\"askuser-meta\">");
        match (&approval, &q.header) {
            (Some(a), _) => body.push_str(&format!("<span class=\"askuser-chip\">{}</span> Approval", esc(&a.tool))),
            (None, Some(h)) => body.push_str(&format!("<span class=\"askuser-chip\">{}</span>", esc(h))),
            (None, None) => {}
        }
        body.push_str("</legend>");
        match &approval {
            Some(a) => {
                body.push_str(&format!("<p class=\"askuser-text askuser-approval-title\">{}</p>", esc(&a.title)));
                body.push_str(&shown(&a.shown));
            }
            None => body.push_str(&format!("<p class=\"askuser-text\">{}</p>", esc(&q.question))),
        }
        let (kind, other) = match q.multi_select {
            true => ("checkbox", ""),
            false => ("radio", " required"),
        };
        let name = format!("q{i}");
        if !q.is_free_text() {
            body.push_str("<div class=\"askuser-list\">");
            let width = (q.options.len() + 1).to_string().len();
            for (n, o) in q.options.iter().enumerate() {
                let description =
                    o.description.as_deref().map(|d| format!("<span class=\"askuser-desc\">{}</span>", esc(d))).unwrap_or_default();
                body.push_str(&format!(
                    "<label class=\"askuser-row\"><input type=\"{kind}\" name=\"{name}\" value=\"{n}\"{other}>\
<span class=\"askuser-num\">{:>width$}</span><span class=\"askuser-label\">{}</span>{description}</label>",
                    n + 1,
                    esc(&o.label)
                ));
            }
            let label = if approval.is_some() { DENY_SAYING } else { OTHER_LABEL };
            body.push_str(&format!(
                "<label class=\"askuser-row\"><input type=\"{kind}\" name=\"{name}\" value=\"other\"{other}>\
<span class=\"askuser-num\"></span><span class=\"askuser-label\">{label}</span></label></div>"
            ));
        }
        let required = if q.is_free_text() { " required" } else { "" };
        body.push_str(&format!(
            "<textarea class=\"askuser-other\" name=\"{name}-text\" rows=\"2\" aria-label=\"Your own answer\"{required}></textarea></fieldset>"
        ));
    }
    let more = match more {
        0 => String::new(),
        1 => "<p class=\"askuser-first-more\">1 more question set is waiting.</p>".into(),
        n => format!("<p class=\"askuser-first-more\">{n} more question sets are waiting.</p>"),
    };
    // Shown by `web/first.js` when it leaves the app unloaded (a slow connection).
    let header = "<header class=\"askuser-top\"><h1 class=\"askuser-title\">askuser</h1>\
<button type=\"button\" class=\"askuser-first-open\" hidden>Open the inbox</button></header>";
    format!(
        "<div id=\"askuser-first\" class=\"askuser-first\">{header}<main class=\"askuser-active\">{status}\
<form class=\"askuser-dialog\" method=\"post\" action=\"/answer/{id}\" data-id=\"{id}\" data-questions=\"{n}\" aria-label=\"Question from {agent}\">\
<p class=\"askuser-from\">{agent} asks</p>{body}<div class=\"askuser-actions\">\
<button type=\"submit\" class=\"askuser-primary\" name=\"do\" value=\"answer\">Submit</button>\
<button type=\"submit\" name=\"do\" value=\"decline\" formnovalidate>Decline</button></div></form>{more}</main></div>",
        id = esc(&record.id),
        n = questions.len(),
        agent = esc(&agent),
    )
}

/// What an approval will do, as the app shows it (a command, a diff, a file's head,
/// a tool's arguments), in plain text boxes.
fn shown(shown: &Shown) -> String {
    let esc = super::links::escape;
    let pre = |class: &str, text: &str| format!("<pre class=\"{class}\"><code>{}</code></pre>", esc(text));
    match shown {
        Shown::Command { command, .. } => pre("askuser-command", &format!("$ {command}")),
        Shown::Diff { lines, .. } => pre("askuser-diff", &lines.iter().map(Line::marked).collect::<Vec<_>>().join("\n")),
        Shown::Write { head, total, .. } => {
            let more = total.saturating_sub(head.len());
            let more = if more > 0 { format!("<p class=\"askuser-more-lines\">… {more} more lines</p>") } else { String::new() };
            format!("{}{more}", pre("askuser-file", &head.join("\n")))
        }
        Shown::Fetch { .. } => String::new(),
        Shown::Call { args } => {
            let rows: String = args.iter().map(|(k, v)| format!("<dt>{}</dt><dd>{}</dd>", esc(k), esc(v))).collect();
            format!("<dl class=\"askuser-args\">{rows}</dl>")
        }
    }
}

/// What the form sent for question `i`: its choices and its text.
fn selection(q: &askuser_core::model::Question, i: usize, fields: &[(String, String)]) -> Selection {
    let name = format!("q{i}");
    let text_name = format!("{name}-text");
    let chosen: Vec<&str> = fields.iter().filter(|(k, _)| *k == name).map(|(_, v)| v.as_str()).collect();
    let text = fields.iter().find(|(k, _)| *k == text_name).map(|(_, v)| v.trim()).unwrap_or("");
    let labels: Vec<String> =
        chosen.iter().filter_map(|v| v.parse::<usize>().ok()).filter_map(|n| q.options.get(n)).map(|o| o.label.clone()).collect();
    // The text counts when Other is chosen, or nothing else is (typing is choosing it).
    let other = chosen.contains(&"other") || labels.is_empty() || q.multi_select;
    let custom = (other && !text.is_empty()).then(|| text.to_owned());
    match q.multi_select {
        true => Selection { selected: labels, custom, notes: None },
        false => match custom {
            Some(text) if chosen.contains(&"other") || labels.is_empty() => Selection::custom(text),
            _ => Selection { selected: labels.into_iter().take(1).collect(), custom: None, notes: None },
        },
    }
}

/// `POST /answer/ID`: the first-paint form's answer (or decline), for the device the
/// session cookie names; then back to `/`, which shows the next question set.
pub async fn answer(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let caller = match session(&app, &headers).await {
        Session::Open(caller, _) => caller,
        Session::Unknown => {
            return page(StatusCode::SERVICE_UNAVAILABLE, "Not sent", "The bridge cannot reach its store. Go back and try again.")
        }
        gone => {
            let refused = page(
                StatusCode::UNAUTHORIZED,
                "Not signed in",
                "This browser is not known to this bridge any more: open askuser with its link again.",
            );
            return if matches!(gone, Session::Gone) { cleared(&app, &headers, refused) } else { refused };
        }
    };
    let viewer = app.security.registry.viewer(&caller);
    let Ok(record) = app.bridge.mine(&id, viewer.as_ref()).await else {
        return page(StatusCode::NOT_FOUND, "Unknown question", "This question is not here (it may have been withdrawn).");
    };
    let by = format!("page: {}", app.security.registry.label(&caller));
    let who = Answerer { viewer: viewer.as_ref(), by: Some(&by) };
    let done = if fields.iter().any(|(k, v)| k == "do" && v == "decline") {
        app.bridge.decline(&id, false, who).await
    } else {
        let selections: Vec<Selection> = record.request.questions.iter().enumerate().map(|(i, q)| selection(q, i, &fields)).collect();
        app.bridge.answer(&id, &selections, who).await
    };
    match done {
        Ok(_) => Redirect::to(&format!("/?sent={}", percent(&id))).into_response(),
        Err(BridgeError::Invalid(message)) => page(StatusCode::BAD_REQUEST, "Not sent", &format!("The answer was not sent: {message}")),
        Err(e) if e.is_conflict() => page(StatusCode::CONFLICT, "Closed", "This question was answered or closed elsewhere already."),
        Err(e) => page(StatusCode::SERVICE_UNAVAILABLE, "Not sent", &format!("The answer was not sent ({e}). Go back and try again.")),
    }
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn page(status: StatusCode, title: &str, words: &str) -> Response {
    let body = format!("<p>{}</p><p><a href=\"/\">Back to askuser</a></p>", super::links::escape(words));
    super::links::page(status, title, &body, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use askuser_core::model::{Choice, Question};

    fn question(multi: bool) -> Question {
        let option = |l: &str| Choice { label: l.into(), ..Choice::default() };
        Question { question: "Which?".into(), header: None, options: vec![option("A"), option("B")], multi_select: multi }
    }

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_form_reads_as_the_selection_the_person_made() {
        let single = question(false);
        assert_eq!(selection(&single, 0, &fields(&[("q0", "1"), ("q0-text", "")])), Selection::option("B"));
        assert_eq!(selection(&single, 0, &fields(&[("q0", "other"), ("q0-text", " mine ")])), Selection::custom("mine"));
        // Text typed with no choice made is the person's own answer; beside a choice it is ignored.
        assert_eq!(selection(&single, 0, &fields(&[("q0-text", "mine")])), Selection::custom("mine"));
        assert_eq!(selection(&single, 0, &fields(&[("q0", "0"), ("q0-text", "mine")])), Selection::option("A"));
        let multi = question(true);
        let both = selection(&multi, 0, &fields(&[("q0", "0"), ("q0", "1"), ("q0-text", "C")]));
        assert_eq!((both.selected, both.custom.as_deref()), (vec!["A".to_owned(), "B".to_owned()], Some("C")));
        // Another question's fields and unknown option numbers count for nothing.
        let none = selection(&single, 0, &fields(&[("q1", "0"), ("q0", "7")]));
        assert!(none.selected.is_empty() && none.custom.is_none());
    }

    #[test]
    fn agent_text_is_escaped_and_every_option_is_a_control() {
        let record: QuestionRecord = serde_json::from_value(serde_json::json!({
            "id": "q<1>", "status": "pending", "createdAt": 1,
            "request": {"agent": {"name": "<b>bot</b>"}, "questions": [
                {"question": "<script>alert(1)</script>", "header": "H&", "options": [{"label": "<i>A</i>", "description": "d\""}, {"label": "B"}]},
                {"question": "Free?"}
            ]}
        }))
        .unwrap();
        let html = render(Some(&record), 2, Some("Sent. The agent has your answer."));
        assert!(!html.contains("<script>") && !html.contains("<i>") && !html.contains("<b>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && html.contains("&lt;i&gt;A&lt;/i&gt;"));
        assert!(html.contains("action=\"/answer/q&lt;1&gt;\""), "{html}");
        assert_eq!(html.matches("type=\"radio\" name=\"q0\"").count(), 3, "two options and Other");
        assert!(html.contains("name=\"q1-text\" rows=\"2\" aria-label=\"Your own answer\" required"), "free text is required");
        assert!(html.contains("2 more question sets") && html.contains("Sent. The agent has your answer."));
        assert!(render(None, 0, None).contains("No questions are waiting."));
    }

    #[test]
    fn a_page_with_a_form_asks_for_none_of_the_app_until_its_script_decides() {
        let shell = "<head><script type=\"module\" src=\"/askuser-init.js\"></script>\
<link rel=\"modulepreload\" href=\"/askuser-web-1.js\" crossorigin=\"anonymous\">\
<link rel=\"preload\" href=\"/askuser-web-1_bg.wasm\" as=\"fetch\" type=\"application/wasm\"></head><body></body>";
        let page = follow_loader(shell);
        // web/first.js written in, where this build ships it (a build without the UI names it).
        let script = match first_js() {
            Some(js) => format!("<script type=\"module\">{js}</script>"),
            None => "<script type=\"module\" src=\"/first.js\"></script>".to_owned(),
        };
        assert_eq!(page, format!("<head>{script}<meta name=\"askuser-app\" content=\"/askuser-web-1_bg.wasm\" /></head><body></body>"));
    }

    #[test]
    fn the_cookie_is_named_by_the_port_and_read_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7823"));
        h.insert(header::COOKIE, HeaderValue::from_static("other=1; askuser7823=tok-en; askuser9=no"));
        assert_eq!(cookie_name(&h), "askuser7823");
        assert_eq!(presented(&h).as_deref(), Some("tok-en"));
        h.insert(header::HOST, HeaderValue::from_static("ask.example"));
        assert_eq!(cookie_name(&h), "askuser");
        assert_eq!(presented(&h), None);
    }
}
