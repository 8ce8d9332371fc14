//! Question sets: asking (and approvals asked as questions), listing, answering,
//! declining and withdrawing them, the bridge's health, and the two WebSockets.

use super::*;
use askuser_core::remind::Patience;

/// `POST /v1/ask`: store, then block until the question is final (unless `wait=false`).
pub(super) async fn ask(
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
/// (`{tool_name, input, tool_use_id}`), with askuser's optional `id`, `agent`, `cwd`,
/// `reason`, `remindAfterSeconds` and `defaultAfterSeconds`. A rule that matches answers at once; otherwise the person is asked and the
/// call waits (`?wait=false`: 202 with the question). The reply is the decision in
/// Claude Code's shape (`behavior`, `updatedInput` or `message`), plus `decidedBy`
/// (`rule` or `person`), and `rule` or `id`.
pub(super) async fn approve(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    p: Result<Query<AskParams>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let p = read_query(p)?;
    let body = parse_json(&read_body(body)?)?;
    let (approval, agent, id, patience) = read_approval(&body)?;
    let asked = match app.bridge.approve(approval.clone(), agent, id, caller.owner(), patience).await? {
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
pub(super) fn read_approval(body: &Value) -> Result<(Approval, Option<Agent>, Option<String>, Patience), Refusal> {
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
    let patience = Patience::from_json(body).map_err(invalid)?;
    Ok((approval, agent, text("id")?, patience))
}

#[derive(Deserialize)]
pub(super) struct ListParams {
    status: Option<String>,
    limit: Option<usize>,
}

/// `GET /v1/questions?status=pending|answered|cancelled|timed_out|withdrawn|final|all`.
pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    p: Result<Query<ListParams>, QueryRejection>,
) -> Reply {
    let p = read_query(p)?;
    let (filter, only) = match p.status.as_deref().unwrap_or("pending") {
        "all" => (Filter::All, None),
        "final" => (Filter::Final, None),
        "pending" => (Filter::Pending, None),
        other => (Filter::Final, Some(other.parse::<Status>().map_err(|e| invalid(format!("status: {e}, final or all")))?)),
    };
    let limit = p.limit.unwrap_or(1000).min(100_000);
    // A person's device lists what it sees: not someone else's pending question yet.
    let viewer = app.security.registry.viewer(&caller);
    let mut records = app.bridge.list(filter, if only.is_some() { usize::MAX } else { limit }, viewer.as_ref()).await?;
    if let Some(s) = only {
        records.retain(|r| r.status == s);
        records.truncate(limit);
    }
    Ok(Json(records).into_response())
}

pub(super) async fn get_one(State(app): State<App>, Extension(caller): Extension<Caller>, Path(id): Path<String>) -> Reply {
    app.bridge.reaches(&id, caller.owner()).await?;
    Ok(Json(app.bridge.seen(&id, app.security.registry.viewer(&caller).as_ref()).await?).into_response())
}

/// Who answered over HTTP, for the record and the audit log: the client
/// (`X-Askuser-Client` if given, the terminal sends `cli`; else `http`) and the token's
/// credential as the page names it: "cli: alice's phone (alice)", "http: the admin token".
pub(super) fn client_name(app: &App, caller: &Caller, headers: &HeaderMap) -> String {
    let client = headers.get("x-askuser-client").and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty() && v.len() <= 64).unwrap_or("http");
    format!("{client}: {}", app.security.registry.label(caller))
}

pub(super) async fn answer(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let viewer = app.security.registry.viewer(&caller);
    let record = app.bridge.seen(&id, viewer.as_ref()).await?;
    let value = parse_json(&read_body(body)?)?;
    let body: AnswerBody = serde_json::from_value(value).map_err(|e| {
        invalid(format!(
            "expected {{\"answers\": [...]}} with one answer per question (text, or {{\"selected\": [labels], \"custom\": text}}), or \
             {{\"answers\": {{\"<question>\": \"<answer>\"}}}}: {e}"
        ))
    })?;
    let selections = body.answers.selections(&record.request.questions).map_err(BridgeError::Invalid)?;
    let who = Answerer { viewer: viewer.as_ref(), by: Some(&client_name(&app, &caller, &headers)) };
    Ok(Json(app.bridge.answer(&id, &selections, who).await?).into_response())
}

/// A person declines. An optional body `{"chat": true}` says they would rather talk
/// the questions over with the agent ("Chat about this").
pub(super) async fn cancel(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
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
    let viewer = app.security.registry.viewer(&caller);
    let who = Answerer { viewer: viewer.as_ref(), by: Some(&client_name(&app, &caller, &headers)) };
    Ok(Json(app.bridge.decline(&id, chat, who).await?).into_response())
}

pub(super) async fn withdraw(State(app): State<App>, Extension(caller): Extension<Caller>, Path(id): Path<String>) -> Reply {
    app.bridge.reaches(&id, caller.owner()).await?;
    Ok(Json(app.bridge.close(&id, Status::Withdrawn, None).await?).into_response())
}

/// `ok` only when the store answers and can take writes: a full disk, or a database
/// that does not answer, is not healthy (503, so a load balancer takes this bridge out).
/// Answered at once, from what the store last found (a shared store's heartbeat).
pub(super) async fn health(State(app): State<App>) -> Reply {
    let mut body = serde_json::json!({"ok": true, "version": env!("CARGO_PKG_VERSION")});
    let health = app.bridge.health().await;
    // Counts are a courtesy: a database that does not answer must not hold the answer up.
    if health.is_ok() {
        if let Ok(Ok((pending, done))) = tokio::time::timeout(std::time::Duration::from_millis(250), app.bridge.counts()).await {
            body["pending"] = pending.into();
            body["final"] = done.into();
        }
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
pub(super) fn small_buffers(upgrade: WebSocketUpgrade) -> WebSocketUpgrade {
    upgrade.max_message_size(MAX_BODY).read_buffer_size(4 * 1024).write_buffer_size(4 * 1024)
}

pub(super) async fn agent_socket(State(app): State<App>, Extension(caller): Extension<Caller>, upgrade: WebSocketUpgrade) -> Response {
    let owner = caller.owner().map(str::to_owned);
    let revocation = app.security.registry.revocation(caller.id);
    small_buffers(upgrade).on_upgrade(move |socket| ws::agent(app.bridge, socket, owner, revocation))
}

pub(super) async fn ui_socket(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    method: Method,
    upgrade: WebSocketUpgrade,
) -> Response {
    debug_assert_eq!(method, Method::GET);
    let viewer = app.security.registry.watch_viewer(caller.clone());
    let revocation = app.security.registry.revocation(caller.id);
    small_buffers(upgrade).on_upgrade(move |socket| ws::browser(app.bridge, socket, viewer, revocation))
}
