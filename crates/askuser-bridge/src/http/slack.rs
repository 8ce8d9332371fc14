//! `POST /slack/actions`: Slack's "Interactivity" request URL for the Slack app
//! (`notify/slack_app.rs`).

use super::App;
use crate::hub::{Answerer, BridgeError};
use crate::notify::push::Sent;
use crate::notify::slack::{self, Interaction, Outcome};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// `POST /slack/actions`: a button pressed (or a box ticked, a menu chosen) in one of
/// the app's messages. Checked against the signing secret first; then acknowledged at
/// once (Slack wants an answer within 3 s) and carried out: the question set the
/// message is about is answered or declined as `slack:USER`, or the person alone is
/// told why not.
pub async fn actions(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(slack) = app.notifier.options().slack.as_ref() else {
        return (StatusCode::NOT_FOUND, "this bridge has no Slack app (askuser serve --notify-slack)").into_response();
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let now_s = app.bridge.now_ms() / 1000;
    let (timestamp, signature) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
    if let Err(e) = slack::verify(slack.signing_secret.as_bytes(), timestamp, signature, &body, now_s) {
        tracing::warn!("refused a request to /slack/actions: {e}");
        return (StatusCode::UNAUTHORIZED, format!("not from Slack: {e}")).into_response();
    }
    let interaction = match Interaction::from_form(&body) {
        Ok(i) => i,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    if interaction.kind != "block_actions" {
        return StatusCode::OK.into_response();
    }
    tokio::spawn(async move { act(&app, &interaction).await });
    StatusCode::OK.into_response()
}

/// Carries out one interaction (see [`actions`]).
async fn act(app: &App, interaction: &Interaction) {
    let (Some(channel), Some(ts)) = (interaction.channel_id(), interaction.message_ts()) else { return };
    let user = interaction.user.id.as_str();
    let tell = |text: String| async move {
        if let Sent::Refused(e) | Sent::Retry { why: e, .. } = app.notifier.tell_in_slack(channel, user, &text).await {
            tracing::warn!("cannot tell a Slack user why their answer was not taken: {e}");
        }
    };
    let id = match app.notifier.question_of(&format!("slack:{channel}"), ts).await {
        Ok(Some(id)) => id,
        Ok(None) => return tell("This question set is not waiting any more.".into()).await,
        Err(e) => return tell(format!("The answer was not taken: {e}. Try again.")).await,
    };
    let record = match app.bridge.get(&id).await {
        Ok(r) => r,
        Err(e) => return tell(format!("The answer was not taken: {e}")).await,
    };
    if record.status != askuser_core::Status::Pending {
        return tell("This question set is not waiting any more.".into()).await;
    }
    let by = interaction.answered_by().unwrap_or_else(|| "slack".into());
    let who = Answerer { viewer: None, by: Some(&by) };
    let done = match slack::selections(interaction, &record) {
        Ok(None) => return, // a box ticked, not sent yet
        Ok(Some(Outcome::Answer(selections))) => app.bridge.answer(&id, &selections, who).await,
        Ok(Some(Outcome::Decline)) => app.bridge.decline(&id, false, who).await,
        Err(problem) => return tell(problem).await,
    };
    match done {
        Ok(_) => tracing::info!(%id, "answered in Slack by {by}"),
        Err(BridgeError::Conflict(_) | BridgeError::Store(crate::store::StoreError::Conflict { .. })) => {
            tell("This question set was answered or closed elsewhere already.".into()).await
        }
        Err(e) => tell(format!("The answer was not taken: {e}")).await,
    }
}
