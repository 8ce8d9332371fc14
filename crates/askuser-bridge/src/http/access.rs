//! Who may call: scoped tokens, pairing a device with a one-time code, and people with
//! their teams.

use super::*;

/// Every credential, revoked ones too (never a token: only its hash is kept).
pub(super) async fn list_tokens(State(app): State<App>) -> Reply {
    Ok(Json(app.security.registry.credentials().await.map_err(BridgeError::from)?).into_response())
}

#[derive(Deserialize)]
pub(super) struct NewToken {
    scope: Scope,
    name: String,
    /// The person a device belongs to.
    #[serde(default)]
    person: Option<String>,
}

/// A person's or team's name, checked: `what` names the field.
pub(super) fn person_name(raw: Option<&str>, what: &str) -> Result<Option<String>, Refusal> {
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
pub(super) fn credential_name(raw: &str) -> Result<&str, Refusal> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(invalid(format!("name: expected 1 to 100 characters, got {raw:?}")));
    }
    Ok(name)
}

/// Makes a credential; the answer holds its token, shown this once.
pub(super) async fn create_token(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = read_body(body)?;
    let wanted: NewToken = serde_json::from_slice(&body)
        .map_err(|e| invalid(format!("expected {{\"scope\": \"agent\" | \"device\" | \"admin\", \"name\": \"…\"}}: {e}")))?;
    let name = credential_name(&wanted.name)?;
    let person = person_name(wanted.person.as_deref(), "person")?;
    if person.is_some() && wanted.scope != Scope::Device {
        return Err(invalid(format!("person: only a device belongs to a person, not an {} credential", wanted.scope.as_str())));
    }
    let (credential, token) =
        app.security.registry.create(wanted.scope, name, person.as_deref(), app.bridge.now_ms()).await.map_err(BridgeError::from)?;
    tracing::info!(id = %credential.id, scope = credential.scope.as_str(), "credential made");
    Ok((StatusCode::CREATED, Json(serde_json::json!({"credential": credential, "token": token}))).into_response())
}

#[derive(Deserialize)]
pub(super) struct NewPairing {
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
pub(super) async fn create_pairing(State(app): State<App>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Reply {
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
    if !app.security.registry.share_pairing(&code, &paired, expires_at).await.map_err(BridgeError::from)? {
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

#[derive(Deserialize)]
pub(super) struct Claim {
    code: String,
}

/// The address of the client that sent a request: the connection's peer, or behind a
/// trusted proxy (`--trust-proxy`) the last address in `X-Forwarded-For`, the one the
/// proxy appended (nginx: `$proxy_add_x_forwarded_for`); addresses before it are the
/// client's own claims. Without the header (a proxy not set up to send it), the proxy's.
pub(super) fn client_ip(trust_proxy: bool, peer: std::net::IpAddr, headers: &HeaderMap) -> std::net::IpAddr {
    if !trust_proxy {
        return peer;
    }
    let last = headers.get_all("x-forwarded-for").iter().next_back().and_then(|v| v.to_str().ok()).and_then(|v| v.rsplit(',').next());
    last.and_then(|a| a.trim().parse().ok()).unwrap_or(peer)
}

/// Trades a pairing code for a device token (once, before it expires). Wrong codes
/// are limited per client address ([`client_ip`]).
pub(super) async fn claim_pairing(
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
                None => app.security.registry.take_shared_pairing(&code).await.map_err(BridgeError::from)?,
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
        .create(Scope::Device, &paired.name, paired.person.as_deref(), app.bridge.now_ms())
        .await
        .map_err(BridgeError::from)?;
    tracing::info!(id = %credential.id, "a device paired");
    Ok(Json(serde_json::json!({"credential": credential, "token": token})).into_response())
}

/// `GET /v1/people`: every person (a device's, or a team member) with their teams and
/// devices (credential ids).
pub(super) async fn list_people(State(app): State<App>) -> Reply {
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
pub(super) struct Teams {
    teams: Vec<String>,
}

/// `PUT /v1/people/{person}` `{"teams": [...]}`: the teams a person is in.
pub(super) async fn set_teams(State(app): State<App>, Path(person): Path<String>, body: Result<Bytes, BytesRejection>) -> Reply {
    let person = person_name(Some(&person), "person")?.unwrap_or_default();
    let body = read_body(body)?;
    let wanted: Teams = serde_json::from_slice(&body).map_err(|e| invalid(format!("expected {{\"teams\": [\"name\", …]}}: {e}")))?;
    let mut teams = vec![];
    for (i, team) in wanted.teams.iter().enumerate() {
        teams.extend(person_name(Some(team), &format!("teams[{i}]"))?);
    }
    teams.sort();
    teams.dedup();
    app.security.registry.set_teams(&person, teams.clone()).await.map_err(BridgeError::from)?;
    Ok(Json(serde_json::json!({"person": person, "teams": teams})).into_response())
}

/// `GET /v1/sessions`: the page sessions in force (each a browser's first-paint
/// cookie), oldest first: `[{id, credential, createdAt, expiresAt}]`, `credential` null
/// for one the admin token opened. Never the cookie (only its hash is kept).
pub(super) async fn list_sessions(State(app): State<App>) -> Reply {
    Ok(Json(app.security.registry.sessions(app.bridge.now_ms()).await.map_err(BridgeError::from)?).into_response())
}

/// Revokes a credential (refused from its next request, its sockets closed now, its
/// page sessions ended), or ends a page session (`session-…`).
pub(super) async fn revoke_token(State(app): State<App>, Path(id): Path<String>) -> Reply {
    if id.starts_with("session-") {
        if app.security.registry.end_session(&id).await.map_err(BridgeError::from)? {
            tracing::info!(%id, "page session ended");
            return Ok(Json(serde_json::json!({"id": id, "revoked": true})).into_response());
        }
        let message = format!("no page session with id {id:?}");
        return Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, message))));
    }
    if app.security.registry.revoke(&id, app.bridge.now_ms()).await.map_err(BridgeError::from)? {
        tracing::info!(%id, "credential revoked");
        return Ok(Json(serde_json::json!({"id": id, "revoked": true})).into_response());
    }
    let known = app.security.registry.credentials().await.map_err(BridgeError::from)?.into_iter().any(|c| c.id == id);
    let message = if known { format!("credential {id:?} was already revoked") } else { format!("no credential with id {id:?}") };
    Err(Refusal(error(StatusCode::NOT_FOUND, ErrorBody::new(ErrorCode::NotFound, message))))
}

/// `text` as a QR code in SVG (black on white, a 4-module quiet zone), for the page
/// to show as an image.
pub(super) fn qr_svg(text: &str) -> Option<String> {
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
