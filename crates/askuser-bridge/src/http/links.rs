//! Answer links: `/a/KEY` answers one question with one option, once.
//!
//! A GET only shows a confirmation page (so a link preview, a mail scanner or a chat
//! unfurler that fetches it answers nothing); the page's button POSTs, and so do a
//! notification's action (the service worker) and an ntfy button. A link is refused,
//! with a page that says why, when it is unknown (mistyped, or another bridge's), used,
//! expired, for a question that closed, or sent to a device since revoked. Keys are
//! 128 random bits, kept only as their SHA-256.

use super::App;
use crate::hub::Answerer;
/// Agent text as HTML text: never markup (the one escape a mail's HTML uses too).
pub use crate::notify::email::escape;
use crate::store::{LinkUse, StoredLink};
use askuser_core::protocol::QuestionRecord;
use askuser_core::{Selection, Status};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The pages' own policy: no script at all, and the form may post only here.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// `GET /a/KEY`: what the link would answer, and a button to send it.
pub async fn show(State(app): State<App>, Path(key): Path<String>) -> Response {
    let found = app.notifier.link(&key).await;
    let (link, used) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return unknown(),
        Err(e) => return trouble("Not available", &e),
    };
    if used {
        return used_already();
    }
    if link.expires_at <= app.bridge.now_ms() {
        return expired();
    }
    match usable(&app, &link).await {
        Err(refusal) => refusal,
        Ok((record, label)) => {
            let form = format!("<form method=post><button type=submit>Send “{}”</button></form>", escape(&label));
            page(StatusCode::OK, "Answer this question?", &describe(&record, &label), Some(&form))
        }
    }
}

/// `POST /a/KEY`: uses the link and answers. 200 answered, 404 unknown, 409 the
/// question closed, 410 used, expired or revoked.
pub async fn answer(State(app): State<App>, Path(key): Path<String>) -> Response {
    let link = match app.notifier.use_link(&key).await {
        Ok(LinkUse::Fresh(link)) => link,
        Ok(LinkUse::Used) => return used_already(),
        Ok(LinkUse::Expired) => return expired(),
        Ok(LinkUse::Unknown) => return unknown(),
        Err(e) => return trouble("Not answered", &e),
    };
    let (record, label) = match usable(&app, &link).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    match app.bridge.answer(&record.id, &[Selection::option(label.clone())], Answerer { viewer: None, by: Some(&link.channel) }).await {
        Ok(_) => page(StatusCode::OK, "Answered", &format!("Sent “{}”. The agent has your answer.", escape(&label)), None),
        Err(_) => closed(&app, &record.id).await,
    }
}

/// The question and option `link` answers, if it can still be answered.
async fn usable(app: &App, link: &StoredLink) -> Result<(QuestionRecord, String), Response> {
    if let Some(id) = &link.credential {
        if !app.security.registry.in_force(id) {
            return Err(page(StatusCode::GONE, "Revoked", "The device this link was sent to has been revoked.", None));
        }
    }
    let Ok(record) = app.bridge.get(&link.question_id).await else { return Err(unknown()) };
    if record.status != Status::Pending {
        return Err(closed(app, &record.id).await);
    }
    let label = record.request.questions.first().and_then(|q| q.options.get(link.option)).map(|o| o.label.clone());
    label.map(|l| (record, l)).ok_or_else(unknown)
}

/// What the link answers: the question, or an approval whole (its title, the command or
/// diff as the page shows it, never cut, and why), and the answer it sends.
fn describe(record: &QuestionRecord, label: &str) -> String {
    let agent = askuser_core::inbox::agent_name(record);
    let q = record.request.questions.first();
    let header = q.and_then(|q| q.header.as_deref()).map(|h| format!("<p class=chip>{}</p>", escape(h))).unwrap_or_default();
    let asked = match record.request.approval.as_ref().and_then(|a| a.view()) {
        Some(view) => {
            let code = view.shown.as_text().filter(|c| !c.trim().is_empty()).map(|c| format!("<pre>{}</pre>", escape(&c)));
            let why = view.reason.as_deref().map(|r| format!("<p>Why: {}</p>", escape(r)));
            format!("<p class=q>{}</p>{}{}", escape(&view.title), code.unwrap_or_default(), why.unwrap_or_default())
        }
        None => format!("<p class=q>{}</p>", escape(q.map(|q| q.question.as_str()).unwrap_or_default())),
    };
    format!("<p>{} asks:</p>{header}{asked}<p>Your answer: <strong>{}</strong></p>", escape(&agent), escape(label))
}

fn used_already() -> Response {
    page(StatusCode::GONE, "Used already", "This answer link was used already: each works once.", None)
}

fn expired() -> Response {
    page(StatusCode::GONE, "Expired", "This answer link has expired. Open askuser to answer.", None)
}

fn unknown() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Unknown link",
        "This answer link is not known here: it may be mistyped, or belong to another askuser bridge.",
        None,
    )
}

async fn closed(app: &App, id: &str) -> Response {
    let what = match app.bridge.get(id).await {
        Ok(r) => match (r.status, r.result) {
            (Status::Answered, Some(result)) => {
                let given: Vec<String> = result.answers.iter().map(|a| a.answer.joined()).collect();
                format!("This question was answered already: {}.", escape(&given.join("; ")))
            }
            (Status::Cancelled, _) => "This question was declined already.".to_owned(),
            (Status::TimedOut, _) => "This question timed out.".to_owned(),
            _ => "The agent withdrew this question.".to_owned(),
        },
        Err(_) => "This question is no longer here.".to_owned(),
    };
    page(StatusCode::CONFLICT, "Closed", &what, None)
}

/// A small page; `body` and `form` are HTML already escaped.
/// The page for a store that failed: 503 when it did not answer in time (try again in
/// a moment; the link was not used), else 500. The details go to the log, not to whoever
/// holds the link.
fn trouble(title: &str, e: &crate::store::StoreError) -> Response {
    tracing::warn!("an answer link's page: {e}");
    let (status, words) = match e {
        crate::store::StoreError::Unavailable(_) => {
            (StatusCode::SERVICE_UNAVAILABLE, "<p>askuser's question store did not answer in time. Try again in a moment.</p>")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "<p>askuser's question store failed; its log says why.</p>"),
    };
    page(status, title, words, None)
}

pub(crate) fn page(status: StatusCode, title: &str, body: &str, form: Option<&str>) -> Response {
    let html = format!(
        "<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport content=\"width=device-width,initial-scale=1\">\
<meta name=robots content=noindex><title>askuser · {title}</title>\
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem;color:#1b1b1f}}\
.q{{font-size:1.2rem;white-space:pre-wrap;overflow-wrap:anywhere}}pre{{white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f0f5;padding:.5rem;border-radius:.3rem}}.chip{{display:inline-block;background:#e8e8f0;border-radius:1rem;padding:0 .6rem;margin:0}}\
button{{font:inherit;padding:.7rem 1.2rem;border-radius:.5rem;border:0;background:#3b4cca;color:#fff;cursor:pointer}}\
@media (prefers-color-scheme:dark){{body{{background:#16161a;color:#e8e8ee}}.chip,pre{{background:#2c2c36}}}}</style>\
<h1>{title}</h1>{body}{}</html>",
        form.unwrap_or_default()
    );
    let mut r = (status, Html(html)).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    // Its button posts here with this origin (under `no-referrer`, `Origin: null`).
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    r
}
