//! Approval rules (what answers an agent's request to use a tool without asking) and
//! the audit log of every decision.

use super::*;

#[derive(Deserialize)]
pub(super) struct LimitParams {
    limit: Option<usize>,
}

/// `GET /v1/rules`: every approval rule, oldest first: `[{id, rule, text, wider?,
/// createdAt, createdBy}]`; `wider` says what it allows beyond anything "Always allow"
/// keeps now (`Bash(rm:*)`, kept by an earlier version), for a person to review.
pub(super) async fn list_rules(State(app): State<App>) -> Reply {
    let rules: Vec<Value> = app
        .bridge
        .rules()
        .await?
        .into_iter()
        .map(|r| {
            let rule: Value = serde_json::from_str(&r.rule).unwrap_or(Value::Null);
            let read = serde_json::from_value::<Rule>(rule.clone()).ok();
            let text = read.as_ref().map(Rule::to_string).unwrap_or_default();
            let mut item = json!({"id": r.id, "rule": rule, "text": text, "createdAt": r.created_at, "createdBy": r.created_by});
            if let Some(wider) = read.as_ref().and_then(Rule::wider) {
                item["wider"] = wider.into();
            }
            item
        })
        .collect();
    Ok(Json(rules).into_response())
}

/// `POST /v1/rules` `{"rule": "Bash(npm test:*)", "project"?: DIR, "session"?: ID,
/// "agent"?: NAME}` (at most one scope; none: everywhere): 201 with the rule kept.
pub(super) async fn add_rule(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
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
        id: format!("r-{}", crate::files::random_hex(6)),
        rule: serde_json::to_string(&rule).unwrap_or_default(),
        created_at: app.bridge.now_ms(),
        created_by: Some("admin".into()),
    };
    app.bridge.add_rule(&stored).await?;
    let reply = json!({"id": stored.id, "rule": rule, "text": rule.to_string(), "createdAt": stored.created_at});
    Ok((StatusCode::CREATED, Json(reply)).into_response())
}

/// `DELETE /v1/rules/ID`: the rule asks again from now on.
pub(super) async fn remove_rule(State(app): State<App>, Path(id): Path<String>) -> Reply {
    if !app.bridge.remove_rule(&id).await? {
        return Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, format!("no rule with id {id:?}")))));
    }
    Ok(Json(json!({"removed": id})).into_response())
}

/// `GET /v1/decisions?limit=N`: the audit log, newest first (100 by default).
pub(super) async fn list_decisions(State(app): State<App>, p: Result<Query<LimitParams>, QueryRejection>) -> Reply {
    let p = read_query(p)?;
    let decisions = app.bridge.decisions(p.limit.unwrap_or(100).min(10_000)).await?;
    let decisions: Vec<Value> = decisions
        .into_iter()
        .map(|d| {
            json!({"question": d.question, "tool": d.tool, "summary": d.summary, "decision": d.decision,
                   "rule": d.rule, "by": d.by, "agent": d.agent, "at": d.at})
        })
        .collect();
    Ok(Json(decisions).into_response())
}
