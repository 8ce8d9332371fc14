//! A client of a running bridge over HTTP, for the terminal commands.

use anyhow::{anyhow, Context};
use askuser_bridge::client::Endpoint;
use askuser_bridge::{client, files};
use askuser_core::protocol::{AnswerBody, ErrorBody, QuestionRecord};
use askuser_core::AskResult;
use clap::Args;
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use std::path::PathBuf;

/// How a client command finds the bridge. Global: the flags may also follow a nested
/// subcommand (`askuser tokens create … --url U`).
#[derive(Debug, Clone, Args)]
pub struct BridgeArgs {
    /// The bridge's URL (default: $ASKUSER_URL, else bridge.json in the data directory).
    /// Plain http only to this machine; a bridge elsewhere is reached over https.
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// The bridge's token (default: $ASKUSER_TOKEN, else bridge.json, whose token goes only
    /// to bridge.json's own URL: another --url needs its own token).
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Where askuser keeps its files (default: $ASKUSER_DATA_DIR, else the platform's data directory).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// The SHA-256 fingerprint of an https bridge's certificate, as `askuser serve`
    /// printed it (default: $ASKUSER_CERT_FINGERPRINT, else bridge.json).
    #[arg(long, value_name = "SHA256", global = true)]
    pub cert_fingerprint: Option<askuser_bridge::client::Fingerprint>,
}

impl BridgeArgs {
    pub fn client(&self) -> anyhow::Result<Client> {
        let dir = files::data_dir(self.data_dir.as_deref())?;
        Ok(Client::new(self.endpoint(&dir)?))
    }

    /// The bridge these flags (or the environment, or `bridge.json` in `dir`) name.
    pub fn endpoint(&self, dir: &std::path::Path) -> anyhow::Result<client::Endpoint> {
        Ok(client::find_bridge(self.url.as_deref(), self.token.as_deref(), self.cert_fingerprint, dir)?)
    }
}

pub struct Client {
    http: reqwest::Client,
    pub endpoint: Endpoint,
    /// Who answers through this client, as the bridge records it (`answeredBy`).
    name: &'static str,
}

/// A refusal from the bridge, with its HTTP status.
#[derive(Debug, thiserror::Error)]
#[error("{}", body.message)]
pub struct Refused {
    pub status: u16,
    pub body: ErrorBody,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Client {
        Client { http: askuser_bridge::client::http_client(endpoint.fingerprint), endpoint, name: "cli" }
    }

    /// The same client, answering as `name` (the terminal dialog: "terminal").
    pub fn named(self, name: &'static str) -> Client {
        Client { name, ..self }
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.endpoint.url))
            .bearer_auth(&self.endpoint.token)
            .header("x-askuser-client", self.name)
    }

    async fn json<T: DeserializeOwned>(&self, req: RequestBuilder) -> anyhow::Result<T> {
        // An address from bridge.json only while its bridge runs: never the token to a
        // stranger on a dead bridge's port.
        self.endpoint.check()?;
        let response = req
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach the bridge at {}: {}", self.endpoint.url, askuser_bridge::client::explain(&e)))?;
        read(response).await
    }

    pub async fn questions(&self, status: &str) -> anyhow::Result<Vec<QuestionRecord>> {
        self.json(self.request(Method::GET, "/v1/questions").query(&[("status", status)])).await
    }

    pub async fn get(&self, id: &str) -> anyhow::Result<QuestionRecord> {
        self.json(self.request(Method::GET, &format!("/v1/questions/{}", encode(id)))).await
    }

    pub async fn answer(&self, id: &str, body: &AnswerBody) -> anyhow::Result<AskResult> {
        self.json(self.request(Method::POST, &format!("/v1/questions/{}/answer", encode(id))).json(body)).await
    }

    pub async fn cancel(&self, id: &str) -> anyhow::Result<AskResult> {
        self.json(self.request(Method::POST, &format!("/v1/questions/{}/cancel", encode(id)))).await
    }

    /// A person declines question `id`; with `chat`, to talk it over instead.
    pub async fn decline(&self, id: &str, chat: bool) -> anyhow::Result<AskResult> {
        let body = serde_json::json!({"chat": chat});
        self.json(self.request(Method::POST, &format!("/v1/questions/{}/cancel", encode(id))).json(&body)).await
    }

    pub async fn tokens(&self) -> anyhow::Result<Vec<askuser_bridge::client::Credential>> {
        self.json(self.request(Method::GET, "/v1/tokens")).await
    }

    /// Makes a token; returns it with its credential.
    pub async fn create_token(
        &self,
        scope: askuser_bridge::client::Scope,
        name: &str,
        person: Option<&str>,
    ) -> anyhow::Result<(askuser_bridge::client::Credential, String)> {
        #[derive(serde::Deserialize)]
        struct Made {
            credential: askuser_bridge::client::Credential,
            token: String,
        }
        let body = serde_json::json!({"scope": scope, "name": name, "person": person});
        let made: Made = self.json(self.request(Method::POST, "/v1/tokens").json(&body)).await?;
        Ok((made.credential, made.token))
    }

    /// A one-time pairing code for a device called `name`, good for `seconds`.
    pub async fn pairing(&self, name: &str, person: Option<&str>, seconds: u64) -> anyhow::Result<String> {
        let body = serde_json::json!({"name": name, "person": person, "seconds": seconds});
        let made: serde_json::Value = self.json(self.request(Method::POST, "/v1/pairings").json(&body)).await?;
        made["code"].as_str().map(str::to_owned).context("the bridge sent no pairing code")
    }

    /// Every person, with their teams and devices.
    pub async fn people(&self) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::GET, "/v1/people")).await
    }

    /// Puts `person` in exactly `teams`.
    pub async fn set_teams(&self, person: &str, teams: &[String]) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::PUT, &format!("/v1/people/{}", encode(person))).json(&serde_json::json!({"teams": teams}))).await
    }

    pub async fn rules(&self) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::GET, "/v1/rules")).await
    }

    /// `{"rule": "Bash(cargo test:*)", "project"?, "session"?, "agent"?}`: the rule made.
    pub async fn add_rule(&self, body: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::POST, "/v1/rules").json(body)).await
    }

    pub async fn remove_rule(&self, id: &str) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::DELETE, &format!("/v1/rules/{}", encode(id)))).await
    }

    /// The audit log, newest first.
    pub async fn decisions(&self, limit: usize) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::GET, &format!("/v1/decisions?limit={limit}"))).await
    }

    /// The page sessions in force (each a browser's first-paint cookie).
    pub async fn sessions(&self) -> anyhow::Result<Vec<askuser_bridge::client::StoredSession>> {
        self.json(self.request(Method::GET, "/v1/sessions")).await
    }

    pub async fn revoke_token(&self, id: &str) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::DELETE, &format!("/v1/tokens/{}", encode(id)))).await
    }

    pub async fn health(&self) -> anyhow::Result<serde_json::Value> {
        self.json(self.request(Method::GET, "/v1/health")).await
    }
}

/// Ids are URL-safe by validation; encode anything else defensively.
pub(crate) fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.:".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

pub async fn read<T: DeserializeOwned>(response: Response) -> anyhow::Result<T> {
    let status = response.status();
    let bytes = response.bytes().await.context("the bridge closed the connection")?;
    if status.is_success() {
        return serde_json::from_slice(&bytes)
            .with_context(|| format!("the bridge sent an unexpected reply: {}", String::from_utf8_lossy(&bytes)));
    }
    match serde_json::from_slice::<ErrorBody>(&bytes) {
        Ok(mut body) => {
            if status == reqwest::StatusCode::UNAUTHORIZED {
                // The bridge speaks HTTP ("send `Authorization: Bearer`"); a command's user
                // gives the token by its option or variable.
                body.message = format!("{}. Give askuser the right token with --token or ASKUSER_TOKEN (the one `askuser serve` printed, or one from `askuser tokens create`)", body.message.split(": send `").next().unwrap_or(&body.message));
            }
            Err(Refused { status: status.as_u16(), body }.into())
        }
        Err(_) => Err(anyhow!("the bridge answered {status}: {}", String::from_utf8_lossy(&bytes))),
    }
}
