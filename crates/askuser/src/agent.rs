//! Asking a bridge as an agent, resumably. Every ask carries an id; if the bridge
//! restarts or the connection drops, the same ask is sent again with the same id
//! (with backoff) and waits on the same stored question, so the caller still gets the
//! answer. Used by `askuser mcp` and `askuser ask`.

use crate::client::Refused;
use crate::lock;
use askuser_bridge::client;
use askuser_bridge::client::Endpoint;
use askuser_bridge::{Running, ServeOptions};
use askuser_core::protocol::{ErrorBody, ErrorCode, QuestionRecord};
use askuser_core::AskResult;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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
    /// Built for the endpoint's certificate pin, and again when that changes.
    http: Mutex<reqwest::Client>,
    endpoint: Mutex<Endpoint>,
    /// Where to look for a restarted bridge's `bridge.json` (new port or token).
    rediscover: Option<PathBuf>,
    /// Runs the bridge in this process when the one in use stays gone.
    host: Option<Arc<Host>>,
}

const MIN_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

impl Asker {
    pub fn new(endpoint: Endpoint, rediscover: Option<PathBuf>) -> Asker {
        let http = Mutex::new(askuser_bridge::client::http_client(endpoint.fingerprint));
        Asker { http, endpoint: Mutex::new(endpoint), rediscover, host: None }
    }

    /// Lets this asker run the bridge itself after [`TAKEOVER_AFTER`] without one.
    pub fn with_host(mut self, host: Arc<Host>) -> Asker {
        self.host = Some(host);
        self
    }

    pub fn endpoint(&self) -> Endpoint {
        lock(&self.endpoint).clone()
    }

    pub fn set_endpoint(&self, endpoint: Endpoint) {
        let mut current = lock(&self.endpoint);
        if current.fingerprint != endpoint.fingerprint {
            *lock(&self.http) = askuser_bridge::client::http_client(endpoint.fingerprint);
        }
        *current = endpoint;
    }

    fn http(&self) -> reqwest::Client {
        lock(&self.http).clone()
    }

    /// The endpoint, if a request may go there now: one read from `bridge.json` only
    /// while the bridge that wrote it runs, so a stranger on its old port never gets the
    /// token (`client::bridge_running`).
    fn usable(&self) -> Result<Endpoint, AskError> {
        let ep = self.endpoint();
        match ep.check() {
            Ok(()) => Ok(ep),
            Err(e) => Err(AskError::Unreachable { url: ep.url, message: e.to_string() }),
        }
    }

    /// Re-reads `bridge.json`, for a bridge that restarted on another port or token.
    pub fn refresh(&self) {
        let Some(dir) = &self.rediscover else { return };
        if let Ok(found) = client::find_bridge(None, None, None, dir) {
            self.set_endpoint(found);
        }
    }

    /// Asks and waits until the question is final. `request` must carry an `id`.
    /// With `retry`, connection failures and bridge restarts are retried forever;
    /// `on_retry` hears of each, with how long the bridge has been unreachable.
    /// Without, the first one is returned.
    pub async fn ask(&self, request: &Value, retry: bool, on_retry: impl FnMut(&str)) -> Result<AskResult, AskError> {
        self.post_waiting("/v1/ask?format=canonical", request, retry, on_retry).await
    }

    /// Asks leave to use a tool (`POST /v1/approve`, Claude Code's permission call and
    /// askuser's fields) and waits for the decision, retrying as [`Asker::ask`] does:
    /// the decision in Claude Code's shape, with `decidedBy`.
    pub async fn approve(&self, approval: &Value, on_retry: impl FnMut(&str)) -> Result<Value, AskError> {
        self.post_waiting("/v1/approve", approval, true, on_retry).await
    }

    /// [`Asker::approve`] without retrying: the first failure to reach the bridge is
    /// returned (`askuser acp` decides how long to go on).
    pub async fn approve_once(&self, approval: &Value) -> Result<Value, AskError> {
        self.post_waiting("/v1/approve", approval, false, |_| {}).await
    }

    /// POSTs `body` to `path` and waits for the reply (see [`Asker::ask`]).
    async fn post_waiting<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        retry: bool,
        mut on_retry: impl FnMut(&str),
    ) -> Result<T, AskError> {
        let mut backoff = MIN_BACKOFF;
        let mut failing_since: Option<tokio::time::Instant> = None;
        loop {
            let ep = match self.usable() {
                Ok(ep) => ep,
                Err(e) if !retry => return Err(e),
                Err(e) => {
                    self.wait_for_bridge(&e.to_string(), &mut backoff, &mut failing_since, &mut on_retry).await;
                    continue;
                }
            };
            let sent = self.http().post(format!("{}{path}", ep.url)).bearer_auth(&ep.token).json(body).send().await;
            let problem = match sent {
                Ok(response) if response.status().is_success() => match crate::client::read::<T>(response).await {
                    Ok(result) => return Ok(result),
                    Err(e) => format!("{e:#}"),
                },
                Ok(response) if response.status().is_server_error() => {
                    format!("the bridge answered {} (restarting?)", response.status())
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response
                        .json::<ErrorBody>()
                        .await
                        .unwrap_or_else(|e| ErrorBody::new(ErrorCode::Internal, format!("the bridge answered {status}: {e}")));
                    return Err(AskError::Refused(Refused { status, body }));
                }
                Err(e) => format!("cannot reach the bridge at {}: {}", ep.url, askuser_bridge::client::explain(&e)),
            };
            if !retry {
                return Err(AskError::Unreachable { url: ep.url, message: problem });
            }
            self.wait_for_bridge(&problem, &mut backoff, &mut failing_since, &mut on_retry).await;
        }
    }

    /// After a failed attempt: tells `on_retry`, backs off, looks for a restarted bridge,
    /// and runs one here once none has answered for [`TAKEOVER_AFTER`].
    async fn wait_for_bridge(
        &self,
        problem: &str,
        backoff: &mut Duration,
        failing_since: &mut Option<tokio::time::Instant>,
        on_retry: &mut impl FnMut(&str),
    ) {
        on_retry(problem);
        tokio::time::sleep(*backoff).await;
        *backoff = (*backoff * 2).min(MAX_BACKOFF);
        self.refresh();
        let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
        if since.elapsed() >= TAKEOVER_AFTER {
            self.take_over().await;
        }
    }

    /// Runs the bridge here, at the address and with the token of the one that went away.
    async fn take_over(&self) {
        let Some(host) = &self.host else { return };
        let ep = self.endpoint();
        let Some(addr) = ep.url.strip_prefix("http://") else { return };
        match host.start(addr, Some(ep.token.clone())).await {
            Ok(endpoint) => self.set_endpoint(endpoint),
            Err(e) => tracing::debug!("cannot take over the bridge at {addr}: {e:#}"),
        }
    }

    /// Stores the question without waiting (`askuser ask --no-wait`).
    pub async fn store(&self, request: &Value) -> Result<QuestionRecord, AskError> {
        let ep = self.usable()?;
        self.read(&ep, self.http().post(format!("{}/v1/ask?wait=false", ep.url)).json(request)).await
    }

    /// Answers question `id` as front end `client` would (`{"answers": [...]}`).
    pub async fn answer(&self, id: &str, body: &Value, client: &str) -> Result<AskResult, AskError> {
        let ep = self.usable()?;
        let url = format!("{}/v1/questions/{}/answer", ep.url, crate::client::encode(id));
        self.read(&ep, self.http().post(url).header("x-askuser-client", client).json(body)).await
    }

    /// Declines question `id` for a person who said no in front end `client`.
    pub async fn decline(&self, id: &str, client: &str) -> Result<AskResult, AskError> {
        let ep = self.usable()?;
        let url = format!("{}/v1/questions/{}/cancel", ep.url, crate::client::encode(id));
        self.read(&ep, self.http().post(url).header("x-askuser-client", client)).await
    }

    /// One stored question.
    pub async fn get(&self, id: &str) -> Result<QuestionRecord, AskError> {
        let ep = self.usable()?;
        self.read(&ep, self.http().get(format!("{}/v1/questions/{}", ep.url, crate::client::encode(id)))).await
    }

    /// Waits again for question `id`, asked earlier (by this process or another): its
    /// answer at once if it came meanwhile, else when it comes.
    pub async fn resume(&self, id: &str, on_retry: impl FnMut(&str)) -> Result<AskResult, AskError> {
        let record = self.get(id).await?;
        if let Some(result) = record.result {
            return Ok(result);
        }
        let request = serde_json::to_value(&record.request).expect("requests serialize");
        self.ask(&request, true, on_retry).await
    }

    async fn read<T: serde::de::DeserializeOwned>(&self, ep: &Endpoint, request: reqwest::RequestBuilder) -> Result<T, AskError> {
        let response = request
            .bearer_auth(&ep.token)
            .send()
            .await
            // Why, in a sentence (a TLS pin that does not match names both fingerprints).
            .map_err(|e| AskError::Unreachable { url: ep.url.clone(), message: askuser_bridge::client::explain(&e) })?;
        crate::client::read(response).await.map_err(|e| match e.downcast::<Refused>() {
            Ok(r) => AskError::Refused(r),
            Err(e) => AskError::Unreachable { url: ep.url.clone(), message: format!("{e:#}") },
        })
    }

    /// The agent takes its question back (best effort).
    pub async fn withdraw(&self, id: &str) {
        let Ok(ep) = self.usable() else { return };
        let _ = self.http().delete(format!("{}/v1/questions/{}", ep.url, crate::client::encode(id))).bearer_auth(&ep.token).send().await;
    }
}

/// How long the bridge in use may be unreachable before this process runs one itself.
pub const TAKEOVER_AFTER: Duration = Duration::from_secs(5);

/// A bridge run by this process when no other answers: at start, and when the one in
/// use has been gone for [`TAKEOVER_AFTER`] (say, the `askuser mcp` that hosted it
/// exited). Questions live in the store, so taking over loses nothing, and browsers
/// reconnect to the same address with the same token.
pub struct Host {
    dir: PathBuf,
    open_browser: bool,
    running: tokio::sync::Mutex<Option<Running>>,
}

impl Host {
    pub fn new(dir: PathBuf, open_browser: bool) -> Host {
        Host { dir, open_browser, running: tokio::sync::Mutex::new(None) }
    }

    /// Starts a bridge on `addr` (once) and prints where to open it.
    pub async fn start(&self, addr: &str, token: Option<String>) -> anyhow::Result<Endpoint> {
        let mut running = self.running.lock().await;
        if let Some(r) = running.as_ref() {
            return Ok(Endpoint::new(r.url.clone(), r.token.clone(), r.fingerprint));
        }
        let mut opts = ServeOptions::new(self.dir.clone());
        opts.addr = addr.to_owned();
        opts.token = token;
        let r = askuser_bridge::start(opts).await?;
        eprintln!("askuser: open {}", r.open_url());
        tracing::info!("this process runs the bridge at {}", r.url);
        if self.open_browser {
            askuser_bridge::open_browser(&r.open_url());
        }
        let endpoint = Endpoint::new(r.url.clone(), r.token.clone(), r.fingerprint);
        *running = Some(r);
        Ok(endpoint)
    }

    pub async fn stop(&self) {
        if let Some(r) = self.running.lock().await.take() {
            r.stop().await;
        }
    }
}
