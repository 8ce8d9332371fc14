//! Asking a bridge as an agent, resumably. Every ask carries an id; if the bridge
//! restarts or the connection drops, the same ask is sent again with the same id
//! (with backoff) and waits on the same stored question, so the caller still gets the
//! answer. Used by `askuser mcp` and `askuser ask`.

use crate::client::Refused;
use crate::config::{self, Endpoint};
use askuser_core::protocol::{ErrorBody, ErrorCode, QuestionRecord};
use askuser_core::AskResult;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Why an ask ended without a result.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The bridge refused the request (invalid input, id conflict, too many, no access).
    #[error("{}", .0.body.message)]
    Refused(Refused),
    /// No bridge could be reached and retrying was not allowed.
    #[error("cannot reach the bridge at {url}: {message}")]
    Unreachable { url: String, message: String },
}

pub struct Asker {
    http: reqwest::Client,
    endpoint: Mutex<Endpoint>,
    /// Where to look for a restarted bridge's `bridge.json` (new port or token).
    rediscover: Option<PathBuf>,
}

const MIN_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

impl Asker {
    pub fn new(endpoint: Endpoint, rediscover: Option<PathBuf>) -> Asker {
        Asker { http: reqwest::Client::new(), endpoint: Mutex::new(endpoint), rediscover }
    }

    pub fn endpoint(&self) -> Endpoint {
        self.endpoint.lock().unwrap().clone()
    }

    fn refresh(&self) {
        let Some(dir) = &self.rediscover else { return };
        if let Ok(found) = config::find_bridge(None, None, dir) {
            *self.endpoint.lock().unwrap() = found;
        }
    }

    /// Asks and waits until the question is final. `request` must carry an `id`.
    /// With `retry`, connection failures and bridge restarts are retried forever
    /// (`on_retry` hears of each); without, the first one is returned.
    pub async fn ask(&self, request: &Value, retry: bool, mut on_retry: impl FnMut(&str)) -> Result<AskResult, AskError> {
        let mut backoff = MIN_BACKOFF;
        loop {
            let ep = self.endpoint();
            let sent = self
                .http
                .post(format!("{}/v1/ask?format=canonical", ep.url))
                .bearer_auth(&ep.token)
                .json(request)
                .send()
                .await;
            let problem = match sent {
                Ok(response) if response.status().is_success() => match crate::client::read::<AskResult>(response).await {
                    Ok(result) => return Ok(result),
                    Err(e) => format!("{e:#}"),
                },
                Ok(response) if response.status().is_server_error() => {
                    format!("the bridge answered {} (restarting?)", response.status())
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response.json::<ErrorBody>().await.unwrap_or_else(|e| {
                        ErrorBody::new(ErrorCode::Internal, format!("the bridge answered {status}: {e}"))
                    });
                    return Err(AskError::Refused(Refused { status, body }));
                }
                Err(e) => format!("cannot reach the bridge at {}: {e}", ep.url),
            };
            if !retry {
                return Err(AskError::Unreachable { url: ep.url, message: problem });
            }
            on_retry(&problem);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            self.refresh();
        }
    }

    /// Stores the question without waiting (`askuser ask --no-wait`).
    pub async fn store(&self, request: &Value) -> Result<QuestionRecord, AskError> {
        let ep = self.endpoint();
        let response = self
            .http
            .post(format!("{}/v1/ask?wait=false", ep.url))
            .bearer_auth(&ep.token)
            .json(request)
            .send()
            .await
            .map_err(|e| AskError::Unreachable { url: ep.url.clone(), message: e.to_string() })?;
        crate::client::read(response).await.map_err(|e| match e.downcast::<Refused>() {
            Ok(r) => AskError::Refused(r),
            Err(e) => AskError::Unreachable { url: ep.url, message: format!("{e:#}") },
        })
    }

    /// The agent takes its question back (best effort).
    pub async fn withdraw(&self, id: &str) {
        let ep = self.endpoint();
        let _ = self.http.delete(format!("{}/v1/questions/{id}", ep.url)).bearer_auth(&ep.token).send().await;
    }
}
