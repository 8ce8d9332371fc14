//! `POST /slack/actions`: Slack's "Interactivity" request URL for the Slack app
//! (`notify/slack_app.rs`); what a person chose is taken by
//! [`crate::notify::Notifier::answer_from_chat`], as from every chat.

use super::App;
use crate::notify::push::Sent;
use crate::notify::slack::{self, Interaction};
use crate::notify::slack_app::SlackApp;
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
    let Some(slack) = app.notifier.options().channel::<SlackApp>().cloned() else {
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
    tokio::spawn(async move { act(&app, &slack, &interaction).await });
    StatusCode::OK.into_response()
}

/// Carries out one interaction (see [`actions`]).
async fn act(app: &App, slack: &SlackApp, interaction: &Interaction) {
    let (Some(channel), Some(ts)) = (interaction.channel_id(), interaction.message_ts()) else { return };
    let by = interaction.answered_by().unwrap_or_else(|| "slack".into());
    let taken = app.notifier.answer_from_chat(&format!("slack:{channel}"), ts, &by, |record| slack::selections(interaction, record)).await;
    if let Err(not) = taken {
        // Slack escapes the whole text as it tells it.
        let told = not.told(str::to_owned);
        if let Sent::Refused(e) | Sent::Retry { why: e, .. } = slack.tell(app.notifier.http(), channel, &interaction.user.id, &told).await {
            tracing::warn!("cannot tell a Slack user why their answer was not taken: {e}");
        }
    }
}
