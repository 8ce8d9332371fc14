//! The HTTP face of the bridge: routes, the guard every request passes, and the
//! mapping from bridge errors to statuses.
//!
//! The guard refuses, in order: a foreign `Host` (DNS rebinding) with 403; a `/v1`
//! request without the bearer token with 401; a foreign `Origin` with 403 (the browser
//! socket must send one). No CORS headers are ever sent, so other pages cannot read
//! any answer.

use crate::hub::{Approving, Bridge, BridgeError};
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
        .route("/v1/pairings", post(create_pairing))
        .route("/v1/people", get(list_people))
        .route("/v1/people/{person}", axum::routing::put(set_teams))
        .route("/v1/pair", post(claim_pairing))
        .route("/v1/push", get(push_info))
        .route("/v1/push/subscriptions", post(subscribe).delete(unsubscribe))
        .route("/v1/session", post(crate::first::open).delete(crate::first::close));
    Router::new()
        .merge(api)
        .route("/a/{key}", get(crate::notify::links::show).post(crate::notify::links::answer))
        .route("/", get(crate::first::index))
        .route("/index.html", get(crate::first::index))
        .route("/answer/{id}", get(crate::first::watch).post(crate::first::answer))
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
        return query.split('&').find_map(|kv| kv.strip_prefix("token=")).map(percent_decode);
    }
    None
}

fn percent_decode(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('%') && !s.contains('+') {
        return s.into();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned().into()
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

/// `POST /v1/ask`: store, then block until the question is final (unless `wait=false`).
async fn ask(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    p: Result<Query<AskParams>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let p = read_query(p)?;
    let body = read_body(body)?;
    let format = parse_format(p.format.as_deref())?;
    let asked = app.bridge.ask_as(&parse_json(&body)?, caller.owner()).await?;
    if p.wait == Some(false) {
        let status = if asked.resumed { StatusCode::OK } else { StatusCode::ACCEPTED };
        return Ok((status, Json(asked.record)).into_response());
    }
    // A token revoked while its ask waits ends the wait: what it may not start, it may
    // not finish either. The question stays, as when an agent goes away.
    let revoked = app.security.registry.revocation(caller.id.clone());
    tokio::select! {
        result = app.bridge.wait(&asked.record.id) => Ok(result_response(&result?, format)),
        () = revoked => Err(Refusal(error(
            StatusCode::UNAUTHORIZED,
            ErrorBody::new(ErrorCode::Unauthorized, "this token was revoked while its ask waited; the question stays in the inbox"),
        ))),
    }
}

/// `POST /v1/approve`: may the agent use a tool? Claude Code's permission call
/// (`{tool_name, input, tool_use_id}`), with askuser's optional `id`, `agent`, `cwd` and
/// `reason`. A rule that matches answers at once; otherwise the person is asked and the
/// call waits (`?wait=false`: 202 with the question). The reply is the decision in
/// Claude Code's shape (`behavior`, `updatedInput` or `message`), plus `decidedBy`
/// (`rule` or `person`), and `rule` or `id`.
async fn approve(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    p: Result<Query<AskParams>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let p = read_query(p)?;
    let body = parse_json(&read_body(body)?)?;
    let (approval, agent, id) = read_approval(&body)?;
    let asked = match app.bridge.approve(approval.clone(), agent, id, caller.owner()).await? {
        Approving::Decided { decision, rule } => {
            let mut reply = decision.claude();
            reply["decidedBy"] = "rule".into();
            reply["rule"] = rule.into();
            return Ok(Json(reply).into_response());
        }
        Approving::Asked(asked) => asked,
    };
    if p.wait == Some(false) {
        let status = if asked.resumed { StatusCode::OK } else { StatusCode::ACCEPTED };
        return Ok((status, Json(asked.record)).into_response());
    }
    let revoked = app.security.registry.revocation(caller.id.clone());
    let result = tokio::select! {
        result = app.bridge.wait(&asked.record.id) => result?,
        () = revoked => return Err(Refusal(error(
            StatusCode::UNAUTHORIZED,
            ErrorBody::new(ErrorCode::Unauthorized, "this token was revoked while its approval waited; the question stays in the inbox"),
        ))),
    };
    let mut reply = approval.decide(&result).claude();
    reply["decidedBy"] = "person".into();
    reply["id"] = asked.record.id.into();
    Ok(Json(reply).into_response())
}

/// An approval's body: the call (see [`Approval::from_claude`]) and askuser's fields.
fn read_approval(body: &Value) -> Result<(Approval, Option<Agent>, Option<String>), Refusal> {
    let refuse = |e: askuser_core::Invalid| Refusal(error(StatusCode::BAD_REQUEST, ErrorBody::invalid(e)));
    let mut approval = Approval::from_claude(body).map_err(refuse)?;
    let text = |key: &str| -> Result<Option<String>, Refusal> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(format!("{key}: expected a string, got {}", askuser_core::error::describe(other)))),
        }
    };
    approval.cwd = text("cwd")?;
    if let Some(reason) = text("reason")? {
        approval.reason = Some(reason);
    }
    let agent = match body.get("agent") {
        None | Some(Value::Null) => None,
        Some(a) => Some(serde_json::from_value::<Agent>(a.clone()).map_err(|e| invalid(format!("agent: {e}")))?),
    };
    Ok((approval, agent, text("id")?))
}

#[derive(Deserialize)]
struct LimitParams {
    limit: Option<usize>,
}

/// `GET /v1/rules`: every approval rule, oldest first: `[{id, rule, text, createdAt, createdBy}]`.
async fn list_rules(State(app): State<App>) -> Reply {
    let rules: Vec<Value> = app
        .bridge
        .store()
        .rules()
        .await
        .map_err(BridgeError::from)?
        .into_iter()
        .map(|r| {
            let rule: Value = serde_json::from_str(&r.rule).unwrap_or(Value::Null);
            let text = serde_json::from_value::<Rule>(rule.clone()).map(|r| r.to_string()).unwrap_or_default();
            json!({"id": r.id, "rule": rule, "text": text, "createdAt": r.created_at, "createdBy": r.created_by})
        })
        .collect();
    Ok(Json(rules).into_response())
}

/// `POST /v1/rules` `{"rule": "Bash(npm test:*)", "project"?: DIR, "session"?: ID,
/// "agent"?: NAME}` (at most one scope; none: everywhere): 201 with the rule kept.
async fn add_rule(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = parse_json(&read_body(body)?)?;
    let Some(text) = body.get("rule").and_then(Value::as_str) else {
        return Err(invalid("rule: expected a rule such as \"Bash(npm test:*)\"".into()));
    };
    let scopes: Vec<(&str, &str)> =
        ["project", "session", "agent"].iter().filter_map(|k| body.get(*k).and_then(Value::as_str).map(|v| (*k, v))).collect();
    let scope = match scopes.as_slice() {
        [] => RuleScope::Everywhere,
        [("project", dir)] => RuleScope::Project((*dir).to_owned()),
        [("session", s)] => RuleScope::Session((*s).to_owned()),
        [(_, name)] => RuleScope::Agent((*name).to_owned()),
        _ => return Err(invalid("expected at most one of project, session and agent".into())),
    };
    let rule = Rule::parse(text, scope).map_err(|e| Refusal(error(StatusCode::BAD_REQUEST, ErrorBody::invalid(e))))?;
    let stored = StoredRule {
        id: format!("r-{}", crate::config::random_hex(6)),
        rule: serde_json::to_string(&rule).unwrap_or_default(),
        created_at: app.bridge.now_ms(),
        created_by: Some("admin".into()),
    };
    app.bridge.store().add_rule(&stored).await.map_err(BridgeError::from)?;
    let reply = json!({"id": stored.id, "rule": rule, "text": rule.to_string(), "createdAt": stored.created_at});
    Ok((StatusCode::CREATED, Json(reply)).into_response())
}

/// `DELETE /v1/rules/ID`: the rule asks again from now on.
async fn remove_rule(State(app): State<App>, Path(id): Path<String>) -> Reply {
    if !app.bridge.store().remove_rule(&id).await.map_err(BridgeError::from)? {
        return Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, format!("no rule with id {id:?}")))));
    }
    Ok(Json(json!({"removed": id})).into_response())
}

/// `GET /v1/decisions?limit=N`: the audit log, newest first (100 by default).
async fn list_decisions(State(app): State<App>, p: Result<Query<LimitParams>, QueryRejection>) -> Reply {
    let p = read_query(p)?;
    let decisions = app.bridge.store().decisions(p.limit.unwrap_or(100).min(10_000)).await.map_err(BridgeError::from)?;
    let decisions: Vec<Value> = decisions
        .into_iter()
        .map(|d| {
            json!({"question": d.question, "tool": d.tool, "summary": d.summary, "decision": d.decision,
                   "rule": d.rule, "by": d.by, "agent": d.agent, "at": d.at})
        })
        .collect();
    Ok(Json(decisions).into_response())
}

#[derive(Deserialize)]
struct ListParams {
    status: Option<String>,
    limit: Option<usize>,
}

/// `GET /v1/questions?status=pending|answered|cancelled|timed_out|withdrawn|final|all`.
async fn list(State(app): State<App>, Extension(caller): Extension<Caller>, p: Result<Query<ListParams>, QueryRejection>) -> Reply {
    let p = read_query(p)?;
    let (filter, only) = match p.status.as_deref().unwrap_or("pending") {
        "all" => (Filter::All, None),
        "final" => (Filter::Final, None),
        "pending" => (Filter::Pending, None),
        other => (Filter::Final, Some(other.parse::<Status>().map_err(|e| invalid(format!("status: {e}, final or all")))?)),
    };
    let limit = p.limit.unwrap_or(1000).min(100_000);
    let mut records = app.bridge.list(filter, if only.is_some() { usize::MAX } else { limit }).await?;
    if let Some(s) = only {
        records.retain(|r| r.status == s);
        records.truncate(limit);
    }
    // A person's device lists what it sees: not someone else's pending question yet.
    if let Some(viewer) = app.security.registry.viewer(&caller) {
        records.retain(|r| r.status != Status::Pending || app.bridge.visible(r, Some(&viewer)));
    }
    Ok(Json(records).into_response())
}

async fn get_one(State(app): State<App>, Extension(caller): Extension<Caller>, Path(id): Path<String>) -> Reply {
    app.bridge.reaches(&id, caller.owner()).await?;
    app.bridge.sees(&id, app.security.registry.viewer(&caller).as_ref()).await?;
    Ok(Json(app.bridge.get(&id).await?).into_response())
}

/// Who answered over HTTP: `X-Askuser-Client` if given (the terminal sends `cli`).
fn client_name(headers: &HeaderMap) -> String {
    headers.get("x-askuser-client").and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty() && v.len() <= 64).unwrap_or("http").to_owned()
}

async fn answer(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    app.bridge.sees(&id, app.security.registry.viewer(&caller).as_ref()).await?;
    let value = parse_json(&read_body(body)?)?;
    let body: AnswerBody = serde_json::from_value(value).map_err(|e| {
        invalid(format!(
            "expected {{\"answers\": [...]}} with one answer per question (text, or {{\"selected\": [labels], \"custom\": text}}), or \
             {{\"answers\": {{\"<question>\": \"<answer>\"}}}}: {e}"
        ))
    })?;
    let record = app.bridge.get(&id).await?;
    let selections = body.answers.selections(&record.request.questions).map_err(BridgeError::Invalid)?;
    Ok(Json(app.bridge.answer(&id, &selections, Some(&client_name(&headers))).await?).into_response())
}

/// A person declines. An optional body `{"chat": true}` says they would rather talk
/// the questions over with the agent ("Chat about this").
async fn cancel(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    app.bridge.sees(&id, app.security.registry.viewer(&caller).as_ref()).await?;
    let body = read_body(body)?;
    let chat = if body.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        match parse_json(&body)?.get("chat") {
            None => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(other) => return Err(invalid(format!("chat: expected true or false, got {other}"))),
        }
    };
    Ok(Json(app.bridge.decline(&id, chat, Some(&client_name(&headers))).await?).into_response())
}

async fn withdraw(State(app): State<App>, Extension(caller): Extension<Caller>, Path(id): Path<String>) -> Reply {
    app.bridge.reaches(&id, caller.owner()).await?;
    Ok(Json(app.bridge.close(&id, Status::Withdrawn, None).await?).into_response())
}

/// `ok` only when the store answers and can take writes: a full disk, or a database
/// that does not answer, is not healthy (503, so a load balancer takes this bridge out).
async fn health(State(app): State<App>) -> Reply {
    let store = app.bridge.store();
    let mut body = serde_json::json!({"ok": true, "version": env!("CARGO_PKG_VERSION")});
    // Counts are a courtesy: a database that does not answer must not hold the answer up.
    let counts = tokio::time::timeout(std::time::Duration::from_secs(2), store.counts());
    let (counts, health) = tokio::join!(counts, store.health());
    if let Ok(Ok((pending, done))) = counts {
        body["pending"] = pending.into();
        body["final"] = done.into();
    }
    Ok(match health {
        Ok(()) => Json(body).into_response(),
        Err(problem) => {
            tracing::warn!("unhealthy: {problem}");
            body["ok"] = false.into();
            body["error"] = problem.into();
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    })
}

/// Messages are small and connections many: tungstenite's default 128 KiB read buffer
/// per socket (all of it resident) made 1,000 agents cost 126 MiB (BENCHMARKS.md).
fn small_buffers(upgrade: WebSocketUpgrade) -> WebSocketUpgrade {
    upgrade.max_message_size(MAX_BODY).read_buffer_size(4 * 1024).write_buffer_size(4 * 1024)
}

async fn agent_socket(State(app): State<App>, Extension(caller): Extension<Caller>, upgrade: WebSocketUpgrade) -> Response {
    let owner = caller.owner().map(str::to_owned);
    let revocation = app.security.registry.revocation(caller.id);
    small_buffers(upgrade).on_upgrade(move |socket| ws::agent(app.bridge, socket, owner, revocation))
}

async fn ui_socket(State(app): State<App>, Extension(caller): Extension<Caller>, method: Method, upgrade: WebSocketUpgrade) -> Response {
    debug_assert_eq!(method, Method::GET);
    let viewer = app.security.registry.watch_viewer(caller.clone());
    let revocation = app.security.registry.revocation(caller.id);
    small_buffers(upgrade).on_upgrade(move |socket| ws::browser(app.bridge, socket, viewer, revocation))
}

/// Every credential, revoked ones too (never a token: only its hash is kept).
async fn list_tokens(State(app): State<App>) -> Reply {
    Ok(Json(app.bridge.store().credentials().await.map_err(BridgeError::from)?).into_response())
}

#[derive(Deserialize)]
struct NewToken {
    scope: Scope,
    name: String,
    /// The person a device belongs to.
    #[serde(default)]
    person: Option<String>,
}

/// A person's or team's name, checked: `what` names the field.
fn person_name(raw: Option<&str>, what: &str) -> Result<Option<String>, Refusal> {
    match raw {
        None => Ok(None),
        Some(name) if askuser_core::validate::is_name(name) => Ok(Some(name.to_owned())),
        Some(name) => Err(invalid(format!(
            "{what}: expected 1 to {} characters from a-z A-Z 0-9 - _ . @, got {name:?}",
            askuser_core::validate::MAX_NAME_CHARS
        ))),
    }
}

/// A credential's name (what it is for), trimmed: 1 to 100 characters.
fn credential_name(raw: &str) -> Result<&str, Refusal> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(invalid(format!("name: expected 1 to 100 characters, got {raw:?}")));
    }
    Ok(name)
}

/// Makes a credential; the answer holds its token, shown this once.
async fn create_token(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = read_body(body)?;
    let wanted: NewToken = serde_json::from_slice(&body)
        .map_err(|e| invalid(format!("expected {{\"scope\": \"agent\" | \"device\" | \"admin\", \"name\": \"…\"}}: {e}")))?;
    let name = credential_name(&wanted.name)?;
    let person = person_name(wanted.person.as_deref(), "person")?;
    if person.is_some() && wanted.scope != Scope::Device {
        return Err(invalid(format!("person: only a device belongs to a person, not an {} credential", wanted.scope.as_str())));
    }
    let (credential, token) = app
        .security
        .registry
        .create(app.bridge.store(), wanted.scope, name, person.as_deref(), app.bridge.now_ms())
        .await
        .map_err(BridgeError::from)?;
    tracing::info!(id = %credential.id, scope = credential.scope.as_str(), "credential made");
    Ok((StatusCode::CREATED, Json(serde_json::json!({"credential": credential, "token": token}))).into_response())
}

#[derive(Deserialize)]
struct NewPairing {
    name: String,
    /// The person the device will belong to.
    #[serde(default)]
    person: Option<String>,
    /// How long the code is good for (default 300 s, at most an hour).
    #[serde(default)]
    seconds: Option<u64>,
}

/// A one-time code a device trades for a device token (`askuser pair`, or the page's
/// "Pair a device"). Asked from a page (an `Origin`, already checked against the
/// allowlist), the answer also carries the link on that origin and its QR code.
async fn create_pairing(State(app): State<App>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = read_body(body)?;
    let wanted: NewPairing =
        serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"name\": \"…\", \"seconds\": N (optional)}}: {e}")))?;
    let name = credential_name(&wanted.name)?;
    let seconds = wanted.seconds.unwrap_or(300);
    if !(1..=3600).contains(&seconds) {
        return Err(invalid(format!("seconds: expected 1 to 3600, got {seconds}")));
    }
    let now = app.bridge.now_ms();
    let person = person_name(wanted.person.as_deref(), "person")?;
    let (paired, expires_at) = (tokens::Paired { name: name.to_owned(), person }, now + seconds * 1000);
    // In a store other bridges share, so the device may claim it at any of them.
    let code = tokens::Pairings::code();
    if !app.bridge.store().put_pairing(&tokens::hash(&code), &paired, expires_at).await.map_err(BridgeError::from)? {
        app.security.pairings.keep(&code, paired, expires_at);
    }
    let mut made = serde_json::json!({"code": code, "name": name, "expiresAt": now + seconds * 1000});
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        let link = format!("{origin}/#pair={code}");
        made["qrSvg"] = qr_svg(&link).into();
        made["link"] = link.into();
    }
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

/// `GET /v1/push`: the key a page subscribes with, and the caller's subscriptions
/// with their rules.
async fn push_info(State(app): State<App>, Extension(caller): Extension<Caller>) -> Reply {
    let mine: Vec<serde_json::Value> = app
        .bridge
        .store()
        .subscriptions()
        .await
        .map_err(BridgeError::Store)?
        .into_iter()
        .filter(|s| s.credential.as_deref() == caller.id.as_deref())
        .map(|s| {
            let rules: serde_json::Value = serde_json::from_str(&s.rules).unwrap_or_default();
            serde_json::json!({"endpoint": s.endpoint, "rules": rules, "createdAt": s.created_at})
        })
        .collect();
    Ok(Json(serde_json::json!({"publicKey": app.notifier.vapid.public_key(), "subscriptions": mine})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSubscription {
    subscription: crate::notify::push::Subscription,
    #[serde(default)]
    rules: crate::notify::Rules,
}

/// `POST /v1/push/subscriptions`: a device's push subscription (again: new rules).
async fn subscribe(State(app): State<App>, Extension(caller): Extension<Caller>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = read_body(body)?;
    let wanted: NewSubscription = serde_json::from_slice(&body).map_err(|e| {
        invalid(format!(
            "expected {{\"subscription\": {{\"endpoint\": …, \"keys\": {{\"p256dh\": …, \"auth\": …}}}}, \"rules\": {{…}}}}: {e}"
        ))
    })?;
    wanted.subscription.check(&app.notifier.options().push_services).map_err(|e| invalid(format!("subscription.{e}")))?;
    wanted.rules.check().map_err(invalid)?;
    let stored = crate::store::StoredSubscription {
        endpoint: wanted.subscription.endpoint.clone(),
        credential: caller.id.clone(),
        p256dh: wanted.subscription.keys.p256dh,
        auth: wanted.subscription.keys.auth,
        rules: serde_json::to_string(&wanted.rules).unwrap_or_else(|_| "{}".into()),
        created_at: app.bridge.now_ms(),
    };
    if !app.bridge.store().add_subscription(&stored).await.map_err(BridgeError::Store)? {
        return Err(anothers());
    }
    let made = serde_json::json!({"endpoint": stored.endpoint, "rules": wanted.rules});
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

/// The 409 for a subscription to an endpoint another credential made: a subscription
/// belongs to the credential that made it, so a device that learns another's endpoint
/// can neither take it over (its keys, its rules) nor, owning it then, delete it (F8,
/// issue 28). Who owns it is not said. The store's write decides (it replaces a row only
/// for the credential that made it), so two first subscriptions racing are refused too.
fn anothers() -> Refusal {
    Refusal(error(
        StatusCode::CONFLICT,
        ErrorBody::new(
            ErrorCode::Conflict,
            "subscription.endpoint: already subscribed by another device; only that device may change it, and it or the admin token remove it",
        ),
    ))
}

#[derive(Deserialize)]
struct Unsubscribe {
    endpoint: String,
}

/// `DELETE /v1/push/subscriptions`: forgets one of the caller's subscriptions (the
/// admin token: anyone's).
async fn unsubscribe(State(app): State<App>, Extension(caller): Extension<Caller>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = read_body(body)?;
    let gone: Unsubscribe = serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"endpoint\": \"…\"}}: {e}")))?;
    let whose = (caller.scope != Scope::Admin).then_some(caller.id.as_deref());
    if !app.bridge.store().remove_subscription(&gone.endpoint, whose).await.map_err(BridgeError::Store)? {
        return Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, "no such subscription of yours"))));
    }
    Ok(Json(serde_json::json!({"removed": gone.endpoint})).into_response())
}

#[derive(Deserialize)]
struct Claim {
    code: String,
}

/// The address of the client that sent a request: the connection's peer, or behind a
/// trusted proxy (`--trust-proxy`) the last address in `X-Forwarded-For`, the one the
/// proxy appended (nginx: `$proxy_add_x_forwarded_for`); addresses before it are the
/// client's own claims. Without the header (a proxy not set up to send it), the proxy's.
fn client_ip(trust_proxy: bool, peer: std::net::IpAddr, headers: &HeaderMap) -> std::net::IpAddr {
    if !trust_proxy {
        return peer;
    }
    let last = headers.get_all("x-forwarded-for").iter().next_back().and_then(|v| v.to_str().ok()).and_then(|v| v.rsplit(',').next());
    last.and_then(|a| a.trim().parse().ok()).unwrap_or(peer)
}

/// Trades a pairing code for a device token (once, before it expires). Wrong codes
/// are limited per client address ([`client_ip`]).
async fn claim_pairing(
    State(app): State<App>,
    peer: Option<Extension<crate::listen::Peer>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let body = read_body(body)?;
    let claim: Claim = serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"code\": \"…\"}}: {e}")))?;
    let (pairings, now) = (&app.security.pairings, app.bridge.now_ms());
    let ip = peer.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |Extension(crate::listen::Peer(addr))| addr.ip());
    let source = tokens::Pairings::source(client_ip(app.security.trust_proxy, ip, &headers));
    let taken = match pairings.limited(source, now) {
        Err(e) => Err(e),
        Ok(()) => {
            let code = tokens::Pairings::normal(&claim.code);
            let here = pairings.take(&code, now);
            let taken = match here {
                Some(t) => Some(t),
                None => app.bridge.store().take_pairing(&tokens::hash(&code)).await.map_err(BridgeError::from)?,
            };
            pairings.outcome(source, tokens::Pairings::judge(taken, now), now)
        }
    };
    let paired = match taken {
        Ok(paired) => paired,
        Err(refused) => {
            let status = match refused {
                tokens::Unpaired::TooMany => StatusCode::TOO_MANY_REQUESTS,
                tokens::Unpaired::Expired => StatusCode::GONE,
                tokens::Unpaired::Unknown => StatusCode::NOT_FOUND,
            };
            let code = if status == StatusCode::TOO_MANY_REQUESTS { ErrorCode::TooMany } else { ErrorCode::NotFound };
            return Err(Refusal(error(status, ErrorBody::new(code, refused.to_string()))));
        }
    };
    let (credential, token) = app
        .security
        .registry
        .create(app.bridge.store(), Scope::Device, &paired.name, paired.person.as_deref(), app.bridge.now_ms())
        .await
        .map_err(BridgeError::from)?;
    tracing::info!(id = %credential.id, "a device paired");
    Ok(Json(serde_json::json!({"credential": credential, "token": token})).into_response())
}

/// `GET /v1/people`: every person (a device's, or a team member) with their teams and
/// devices (credential ids).
async fn list_people(State(app): State<App>) -> Reply {
    let people: Vec<serde_json::Value> = app
        .security
        .registry
        .people()
        .into_iter()
        .map(|(person, teams, devices)| serde_json::json!({"person": person, "teams": teams, "devices": devices}))
        .collect();
    Ok(Json(people).into_response())
}

#[derive(Deserialize)]
struct Teams {
    teams: Vec<String>,
}

/// `PUT /v1/people/{person}` `{"teams": [...]}`: the teams a person is in.
async fn set_teams(State(app): State<App>, Path(person): Path<String>, body: Result<Bytes, BytesRejection>) -> Reply {
    let person = person_name(Some(&person), "person")?.unwrap_or_default();
    let body = read_body(body)?;
    let wanted: Teams = serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"teams\": [\"name\", …]}}: {e}")))?;
    let mut teams = vec![];
    for (i, team) in wanted.teams.iter().enumerate() {
        teams.extend(person_name(Some(team), &format!("teams[{i}]"))?);
    }
    teams.sort();
    teams.dedup();
    app.security.registry.set_teams(app.bridge.store(), &person, teams.clone()).await.map_err(BridgeError::from)?;
    Ok(Json(serde_json::json!({"person": person, "teams": teams})).into_response())
}

/// Revokes a credential: refused from its next request, its sockets closed now.
async fn revoke_token(State(app): State<App>, Path(id): Path<String>) -> Reply {
    if app.security.registry.revoke(app.bridge.store(), &id, app.bridge.now_ms()).await.map_err(BridgeError::from)? {
        tracing::info!(%id, "credential revoked");
        return Ok(Json(serde_json::json!({"id": id, "revoked": true})).into_response());
    }
    let known = app.bridge.store().credentials().await.map_err(BridgeError::from)?.into_iter().any(|c| c.id == id);
    let message = if known { format!("credential {id:?} was already revoked") } else { format!("no credential with id {id:?}") };
    Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, message))))
}

/// `text` as a QR code in SVG (black on white, a 4-module quiet zone), for the page
/// to show as an image.
fn qr_svg(text: &str) -> Option<String> {
    use std::fmt::Write;
    let code = qrcodegen::QrCode::encode_text(text, qrcodegen::QrCodeEcc::Medium).ok()?;
    let (n, quiet) = (code.size(), 4);
    let size = n + 2 * quiet;
    let mut path = String::new();
    for y in 0..n {
        for x in 0..n {
            if code.get_module(x, y) {
                let _ = write!(path, "M{},{}h1v1h-1z", x + quiet, y + quiet);
            }
        }
    }
    Some(format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" shape-rendering="crispEdges"><rect width="{size}" height="{size}" fill="#fff"/><path d="{path}" fill="#000"/></svg>"##
    ))
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
        assert_eq!(percent_decode("a%2Fb+c"), "a/b c");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
    }
}
