//! The HTTP face of the bridge: routes, the guard every request passes, and the
//! mapping from bridge errors to statuses.
//!
//! The guard refuses, in order: a foreign `Host` (DNS rebinding) with 403; a `/v1`
//! request without the bearer token with 401; a foreign `Origin` with 403 (the browser
//! socket must send one). No CORS headers are ever sent, so other pages cannot read
//! any answer.

use crate::hub::{Answerer, Approving, Bridge, BridgeError};
use crate::store::{Filter, StoredRule};
use crate::tokens::{self, Caller, Registry, Scope};
use crate::{assets, ws};
use askuser_core::approval::{Approval, Rule, Scope as RuleScope};
use askuser_core::model::Agent;
use askuser_core::protocol::{AnswerBody, ErrorBody, ErrorCode};
use askuser_core::{Format, Status};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, Request, State, WebSocketUpgrade};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;

mod access;
mod approvals;
pub mod first;
pub mod links;
mod push;
mod questions;

use access::*;
use approvals::*;
use push::*;
use questions::*;

/// The largest request body or WebSocket message accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// Who may talk to the bridge.
#[derive(Debug, Clone)]
pub struct Security {
    /// The admin token (the data directory's `token`, or `--token`).
    pub token: String,
    /// The scoped credentials made since.
    pub registry: Arc<Registry>,
    /// One-time codes waiting to be traded for device tokens.
    pub pairings: Arc<tokens::Pairings>,
    /// Accepted `Host` header values (`127.0.0.1:7823`, `localhost:7823`, ...).
    pub hosts: Vec<String>,
    /// Accepted `Origin` header values: the bridge's own, and `--allow-origin` ones.
    pub origins: Vec<String>,
    /// Behind a TLS proxy (`--trust-proxy`): a client's address is the last one in
    /// `X-Forwarded-For`, which the proxy appends (see [`client_ip`]).
    pub trust_proxy: bool,
}

impl Security {
    /// The bridge's own names for `addr` and the host `names` people reach it by, with
    /// `scheme` (`http` or `https`) for the origins, plus `extra_origins`.
    pub fn new(
        token: String,
        registry: Arc<Registry>,
        addr: SocketAddr,
        scheme: &str,
        names: &[String],
        extra_origins: &[String],
    ) -> Security {
        let port = addr.port();
        let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        let own = match addr {
            SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
            SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
        };
        if !hosts.contains(&own) && !addr.ip().is_unspecified() {
            hosts.push(own);
        }
        for name in names {
            let host = host_port(name, port);
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        let mut origins: Vec<String> = hosts.iter().map(|h| format!("{scheme}://{h}")).collect();
        origins.extend(extra_origins.iter().map(|o| o.trim_end_matches('/').to_owned()));
        Security { token, registry, pairings: Arc::default(), hosts, origins, trust_proxy: false }
    }

    /// Who `presented` is: the admin token, a credential in force, or nobody.
    pub(crate) fn caller(&self, presented: &str) -> Option<Caller> {
        if self.token_ok(presented) {
            return Some(Caller { scope: Scope::Admin, id: None });
        }
        self.registry.find(presented)
    }

    fn token_ok(&self, presented: &str) -> bool {
        constant_time_eq(presented.as_bytes(), self.token.as_bytes())
    }
}

/// `name:port`, an IPv6 address in brackets.
pub fn host_port(name: &str, port: u16) -> String {
    if name.contains(':') && !name.starts_with('[') {
        format!("[{name}]:{port}")
    } else {
        format!("{name}:{port}")
    }
}

/// Compares without stopping at the first difference, so timing tells nothing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0));
    }
    diff == 0
}

#[derive(Clone)]
pub struct App {
    pub bridge: Arc<Bridge>,
    pub security: Arc<Security>,
    pub notifier: Arc<crate::notify::Notifier>,
}

pub fn router(app: App) -> Router {
    let api = Router::new()
        .route("/v1/ask", post(ask))
        .route("/v1/approve", post(approve))
        .route("/v1/rules", get(list_rules).post(add_rule))
        .route("/v1/rules/{id}", delete(remove_rule))
        .route("/v1/decisions", get(list_decisions))
        .route("/v1/questions", get(list))
        .route("/v1/questions/{id}", get(get_one).delete(withdraw))
        .route("/v1/questions/{id}/answer", post(answer))
        .route("/v1/questions/{id}/cancel", post(cancel))
        .route("/v1/health", get(health))
        .route("/v1/agent", get(agent_socket))
        .route("/v1/ui", get(ui_socket))
        .route("/v1/tokens", get(list_tokens).post(create_token))
        .route("/v1/tokens/{id}", delete(revoke_token))
        .route("/v1/sessions", get(list_sessions))
        .route("/v1/pairings", post(create_pairing))
        .route("/v1/people", get(list_people))
        .route("/v1/people/{person}", axum::routing::put(set_teams))
        .route("/v1/pair", post(claim_pairing))
        .route("/v1/push", get(push_info))
        .route("/v1/push/subscriptions", post(subscribe).delete(unsubscribe))
        .route("/v1/session", post(first::open).delete(first::close));
    let mut router = Router::new().merge(api);
    // What chats' services post back (Slack's interactivity and events URLs, WhatsApp's
    // webhook and its GET handshake): each channel's own.
    for channel in app.notifier.channels() {
        for path in channel.inbound() {
            let (channel, looked) = (channel.clone(), channel.clone());
            let receive = move |State(app): State<App>, headers: HeaderMap, body: axum::body::Bytes| async move {
                channel.receive(&app.notifier, path, &headers, &body).await.into_response()
            };
            let look = move |uri: axum::http::Uri| async move { looked.look(uri.query().unwrap_or_default()).into_response() };
            router = router.route(path, post(receive).get(look));
        }
    }
    router
        .route("/a/{key}", get(links::show).post(links::answer))
        .route("/", get(first::index))
        .route("/index.html", get(first::index))
        .route("/answer/{id}", get(first::watch).post(first::answer))
        .fallback(get(assets::serve))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

fn error(status: StatusCode, body: ErrorBody) -> Response {
    (status, Json(body)).into_response()
}

/// Why a request was refused, as the response that says so: handlers return
/// [`Reply`] and refuse with `?`.
pub struct Refusal(Response);

type Reply = Result<Response, Refusal>;

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        self.0
    }
}

impl From<BridgeError> for Refusal {
    fn from(e: BridgeError) -> Refusal {
        let status = match &e {
            BridgeError::Invalid(_) => StatusCode::BAD_REQUEST,
            BridgeError::Conflict(_) => StatusCode::CONFLICT,
            BridgeError::NotFound(_) => StatusCode::NOT_FOUND,
            BridgeError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            BridgeError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            BridgeError::Store(crate::store::StoreError::Conflict { .. }) => StatusCode::CONFLICT,
            BridgeError::Store(crate::store::StoreError::NotFound { .. }) => StatusCode::NOT_FOUND,
            BridgeError::Store(crate::store::StoreError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
            BridgeError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Refusal(error(status, e.body()))
    }
}

/// A 400 `invalid` that names the field.
fn invalid(message: String) -> Refusal {
    Refusal(error(StatusCode::BAD_REQUEST, ErrorBody::new(ErrorCode::Invalid, message)))
}

/// The token from `Authorization: Bearer`, or (browsers cannot set headers on a
/// WebSocket) from `?token=` on the two socket routes.
fn presented_token<'a>(req: &'a Request) -> Option<std::borrow::Cow<'a, str>> {
    if let Some(v) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        return v.strip_prefix("Bearer ").map(|t| t.trim().into());
    }
    if matches!(req.uri().path(), "/v1/ui" | "/v1/agent") {
        let query = req.uri().query().unwrap_or("");
        return query.split('&').find_map(|kv| kv.strip_prefix("token=")).and_then(percent_decode);
    }
    None
}

/// A query value decoded (`+` a space, `%XX` a byte); none unless it is UTF-8.
fn percent_decode(s: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !s.contains('+') {
        return percent_encoding::percent_decode_str(s).decode_utf8().ok();
    }
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).decode_utf8().ok().map(|t| t.into_owned().into())
}

async fn guard(State(app): State<App>, mut req: Request, next: Next) -> Response {
    // Refusals carry the same headers as everything else.
    let mut response = match admit(&app.security, &req) {
        Err(refused) => refused,
        Ok(caller) => {
            if let Some(caller) = caller {
                // A valid token: the connection (and its address) has proven itself.
                if let Some(standing) = req.extensions().get::<crate::listen::Standing>() {
                    standing.authenticated();
                }
                req.extensions_mut().insert(caller);
            }
            next.run(req).await
        }
    };
    let h = response.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // A page with a form keeps its `same-origin`: under `no-referrer` a browser posts
    // the form with `Origin: null`, which the guard refuses.
    h.entry(header::REFERRER_POLICY).or_insert(HeaderValue::from_static("no-referrer"));
    // A page with a policy of its own (an answer link's) keeps it.
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(assets::CSP));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// Who sent `req` (an API request) or nobody (the page's files), or why it may not
/// pass, as the response to send.
fn admit(sec: &Security, req: &Request) -> Result<Option<Caller>, Response> {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !sec.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        tracing::warn!("refused a request for host {host:?}");
        return Err(error(
            StatusCode::FORBIDDEN,
            ErrorBody::new(
                ErrorCode::Unauthorized,
                format!("Host {host:?} is not this bridge's; expected one of {}", sec.hosts.join(", ")),
            ),
        ));
    }
    let path = req.uri().path();
    if path.starts_with("/v1/") {
        // Claiming a pairing code is how a device gets its token: the code is the credential.
        let caller = if path == "/v1/pair" && req.method() == Method::POST {
            Some(Caller { scope: Scope::Device, id: None })
        } else {
            presented_token(req).and_then(|t| sec.caller(&t))
        };
        let Some(caller) = caller else {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                ErrorBody::new(
                    ErrorCode::Unauthorized,
                    "missing or wrong token: send `Authorization: Bearer TOKEN` (the token askuser serve printed)",
                ),
            );
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Err(r);
        };
        if path != "/v1/pair" && !tokens::allowed(caller.scope, req.method(), path) {
            let what = format!(
                "a {} token may not {} {path}: agent tokens ask and withdraw, device tokens see the inbox and answer, the admin token does both",
                caller.scope.as_str(),
                req.method()
            );
            return Err(error(StatusCode::FORBIDDEN, ErrorBody::new(ErrorCode::Unauthorized, what)));
        }
        let origin = req.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok());
        match origin {
            Some(o) if !sec.origins.iter().any(|a| a == o) => {
                tracing::warn!("refused a request from origin {o:?}");
                return Err(error(
                    StatusCode::FORBIDDEN,
                    ErrorBody::new(
                        ErrorCode::Unauthorized,
                        format!("Origin {o:?} is not allowed; start the bridge with --allow-origin {o} to allow it"),
                    ),
                ));
            }
            None if path == "/v1/ui" => {
                return Err(error(
                    StatusCode::FORBIDDEN,
                    ErrorBody::new(ErrorCode::Unauthorized, "the browser socket needs an Origin header"),
                ));
            }
            _ => {}
        }
        return Ok((path != "/v1/pair").then_some(caller));
    }
    // An answer link, or the first paint's form, answers on POST: never for another site's page.
    if (path.starts_with("/a/") || path.starts_with("/answer/")) && req.method() == Method::POST {
        if let Some(o) = req.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            if !sec.origins.iter().any(|a| a == o) {
                tracing::warn!("refused an answer link posted from origin {o:?}");
                return Err(error(
                    StatusCode::FORBIDDEN,
                    ErrorBody::new(ErrorCode::Unauthorized, format!("Origin {o:?} may not use answer links")),
                ));
            }
        }
    }
    Ok(None)
}

/// A query string or body axum could not read, as the protocol's error object
/// (axum's own rejections are plain text).
fn rejected(status: StatusCode, what: &str, detail: impl std::fmt::Display) -> Refusal {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        let body = ErrorBody::new(ErrorCode::TooMany, format!("the {what} is larger than the limit of {MAX_BODY} bytes"));
        return Refusal(error(status, body));
    }
    Refusal(error(status, ErrorBody::new(ErrorCode::Invalid, format!("{what}: {detail}"))))
}

fn read_body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, Refusal> {
    body.map_err(|e| rejected(e.status(), "body", e.body_text()))
}

fn read_query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Refusal> {
    query.map(|Query(q)| q).map_err(|e| rejected(StatusCode::BAD_REQUEST, "query", e.body_text()))
}

#[derive(Deserialize)]
struct AskParams {
    format: Option<String>,
    /// `false` stores the question and answers 202 with its record at once.
    wait: Option<bool>,
}

fn parse_format(f: Option<&str>) -> Result<Format, Refusal> {
    f.unwrap_or("canonical").parse().map_err(|e: String| invalid(format!("format: {e}")))
}

fn parse_json(body: &[u8]) -> Result<serde_json::Value, Refusal> {
    serde_json::from_slice(body).map_err(|e| {
        invalid(if std::str::from_utf8(body).is_err() {
            "expected UTF-8 JSON, got invalid UTF-8".to_owned()
        } else {
            format!("expected JSON: {e}")
        })
    })
}

/// The result in `format`: text as `text/plain`, the rest as JSON.
pub fn result_response(result: &askuser_core::AskResult, format: Format) -> Response {
    let mut r = match format {
        Format::Text => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], result.summary()).into_response(),
        f => Json(result.to_json(f)).into_response(),
    };
    if let Ok(v) = HeaderValue::from_str(&result.id) {
        r.headers_mut().insert("x-askuser-id", v);
    }
    if let Ok(v) = HeaderValue::from_str(result.status.as_str()) {
        r.headers_mut().insert("x-askuser-status", v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_fully() {
        assert!(constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!constant_time_eq(b"abc", b"abcdef"));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[test]
    fn percent_decoding() {
        let decoded = |s| percent_decode(s).map(|t| t.into_owned());
        assert_eq!(decoded("a%2Fb+c").as_deref(), Some("a/b c"));
        assert_eq!(decoded("plain").as_deref(), Some("plain"));
        assert_eq!(decoded("bad%zz").as_deref(), Some("bad%zz"));
        assert_eq!(decoded("%aé%e2%82%ac").as_deref(), Some("%aé€"), "a `%` before a multi-byte character");
        assert_eq!(decoded("%ff"), None, "not UTF-8: no token");
    }
}
