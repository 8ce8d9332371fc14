//! Web Push: the key a page subscribes with, and a device's subscriptions.

use super::*;

/// `GET /v1/push`: the key a page subscribes with, and the caller's subscriptions
/// with their rules.
pub(super) async fn push_info(State(app): State<App>, Extension(caller): Extension<Caller>) -> Reply {
    let mine: Vec<serde_json::Value> = app
        .notifier
        .subscriptions_of(caller.id.as_deref())
        .await
        .map_err(BridgeError::Store)?
        .into_iter()
        .map(|s| {
            let rules: serde_json::Value = serde_json::from_str(&s.rules).unwrap_or_default();
            serde_json::json!({"endpoint": s.endpoint, "rules": rules, "createdAt": s.created_at})
        })
        .collect();
    Ok(Json(serde_json::json!({"publicKey": app.notifier.vapid.public_key(), "subscriptions": mine})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewSubscription {
    subscription: crate::notify::push::Subscription,
    #[serde(default)]
    rules: crate::notify::Rules,
}

/// `POST /v1/push/subscriptions`: a device's push subscription (again: new rules).
pub(super) async fn subscribe(State(app): State<App>, Extension(caller): Extension<Caller>, body: Result<Bytes, BytesRejection>) -> Reply {
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
    if !app.notifier.subscribe(&stored).await.map_err(BridgeError::Store)? {
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
pub(super) fn anothers() -> Refusal {
    Refusal(error(
        StatusCode::CONFLICT,
        ErrorBody::new(
            ErrorCode::Conflict,
            "subscription.endpoint: already subscribed by another device; only that device may change it, and it or the admin token remove it",
        ),
    ))
}

#[derive(Deserialize)]
pub(super) struct Unsubscribe {
    endpoint: String,
}

/// `DELETE /v1/push/subscriptions`: forgets one of the caller's subscriptions (the
/// admin token: anyone's).
pub(super) async fn unsubscribe(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let body = read_body(body)?;
    let gone: Unsubscribe = serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"endpoint\": \"…\"}}: {e}")))?;
    let whose = (caller.scope != Scope::Admin).then_some(caller.id.as_deref());
    if !app.notifier.unsubscribe(&gone.endpoint, whose).await.map_err(BridgeError::Store)? {
        return Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, "no such subscription of yours"))));
    }
    Ok(Json(serde_json::json!({"removed": gone.endpoint})).into_response())
}
