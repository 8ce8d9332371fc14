//! Web Push to paired devices: RFC 8030 delivery, RFC 8291 message encryption (the
//! `web-push-native` crate) and RFC 8292 VAPID (an ES256 JWT signed with `ring`).
//!
//! The bridge makes its VAPID key once per data directory (`push/vapid.p8`, private)
//! and keeps it: a browser's subscription is bound to that public key, so a new key
//! would orphan every subscription.

use crate::error::{Error, OrFile, Result};
use crate::files;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
use web_push_native::p256;

/// How long a push service keeps a message for a device that is offline (`TTL`), and
/// how long a VAPID JWT is valid (RFC 8292 allows at most 24 h).
pub const TTL: Duration = Duration::from_secs(12 * 3600);

/// The largest plaintext a push message may carry: push services take 4096 bytes of
/// encrypted body, and the encryption adds 86 (header, key id, tag, padding delimiter).
pub const MAX_PLAINTEXT: usize = 4096 - 86 - 16;

/// The bridge's VAPID key.
pub struct Vapid {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// Who runs this bridge (`mailto:` or `https:`), for the push service's operators.
    contact: String,
}

impl Vapid {
    /// The key kept in `dir/push/vapid.p8`, made on first use.
    pub fn load_or_create(dir: &Path, contact: &str) -> Result<Vapid> {
        let path = dir.join("push").join("vapid.p8");
        let pkcs8 = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                files::ensure_dir(&dir.join("push"))?;
                let made = Vapid::generate()?;
                files::write_private(&path, &made)?;
                made
            }
            Err(e) => return Err(e).or_file("read the VAPID key", &path),
        };
        Vapid::from_pkcs8(&pkcs8, contact)
            .map_err(|e| Error::invalid(format!("{} is not a P-256 key in PKCS#8; move it away to make a new one: {e}", path.display())))
    }

    /// A new key, as PKCS#8.
    pub fn generate() -> Result<Vec<u8>> {
        let made = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| Error::invalid("cannot make a VAPID key"))?;
        Ok(made.as_ref().to_vec())
    }

    /// The key in `pkcs8` (P-256, PKCS#8).
    pub fn from_pkcs8(pkcs8: &[u8], contact: &str) -> Result<Vapid> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|_| Error::invalid("not a P-256 key in PKCS#8"))?;
        Ok(Vapid { key, rng, contact: contact.to_owned() })
    }

    /// The key every bridge sharing the store signs with (made by the first), else the
    /// one kept in data directory `dir`: a device subscribed through one bridge is pushed
    /// to by any.
    pub async fn for_store(shared: Option<&dyn crate::store::Shared>, dir: &Path, contact: &str) -> Result<Vapid> {
        let fresh = B64.encode(Vapid::generate()?);
        match shared {
            Some(shared) => {
                let shared = shared.shared_value("vapid", &fresh).await.map_err(|e| Error::Store(Box::new(e)))?;
                let pkcs8 = B64.decode(shared.trim()).map_err(|e| Error::invalid(format!("the shared VAPID key is not base64url: {e}")))?;
                Vapid::from_pkcs8(&pkcs8, contact).map_err(|e| Error::invalid(format!("the shared VAPID key: {e}")))
            }
            None => Vapid::load_or_create(dir, contact),
        }
    }

    /// The public key as a page passes it to `pushManager.subscribe`
    /// (`applicationServerKey`): the uncompressed point, base64url.
    pub fn public_key(&self) -> String {
        B64.encode(self.key.public_key().as_ref())
    }

    /// The `Authorization` header for a message to `endpoint` (RFC 8292 section 3):
    /// `vapid t=JWT, k=KEY`, the JWT naming the push service's origin, expiring in
    /// [`TTL`] from `now_s`.
    pub fn authorization(&self, endpoint: &reqwest::Url, now_s: u64) -> Result<String> {
        let audience = endpoint.origin().ascii_serialization();
        let header = B64.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({"aud": audience, "exp": now_s + TTL.as_secs(), "sub": self.contact});
        let signed = format!("{header}.{}", B64.encode(claims.to_string()));
        let signature = self.key.sign(&self.rng, signed.as_bytes()).map_err(|_| Error::invalid("cannot sign a VAPID JWT"))?;
        Ok(format!("vapid t={signed}.{}, k={}", B64.encode(signature.as_ref()), self.public_key()))
    }
}

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub endpoint: String,
    pub keys: Keys,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keys {
    /// The browser's P-256 public key, uncompressed, base64url.
    pub p256dh: String,
    /// The 16-byte authentication secret, base64url.
    pub auth: String,
}

/// Where push messages may go: the push services browsers use, and what the bridge was
/// told to add. A device token cannot make the bridge post to any other address.
#[derive(Debug, Clone)]
pub struct Services {
    /// Host names, or `*.`-prefixed suffixes.
    pub hosts: Vec<String>,
    /// Plain `http://` endpoints allowed (tests: a push service on loopback).
    pub plain_http: bool,
}

impl Default for Services {
    fn default() -> Self {
        let hosts = ["fcm.googleapis.com", "*.push.services.mozilla.com", "*.push.apple.com", "*.notify.windows.com"];
        Services { hosts: hosts.map(str::to_owned).to_vec(), plain_http: false }
    }
}

impl Services {
    fn allows(&self, url: &reqwest::Url) -> bool {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        self.hosts.iter().any(|h| match h.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => host == h.to_ascii_lowercase() || (host.starts_with('[') && host.trim_matches(['[', ']']) == h),
        })
    }
}

/// The checked form of a [`Subscription`], ready to encrypt to.
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: reqwest::Url,
    public: p256::PublicKey,
    auth: web_push_native::Auth,
}

impl Subscription {
    /// Checks every field, naming the one that is wrong.
    pub fn check(&self, services: &Services) -> Result<Target, String> {
        let endpoint: reqwest::Url =
            self.endpoint.parse().map_err(|e| format!("endpoint: expected the push service's https URL, got {:?} ({e})", self.endpoint))?;
        match endpoint.scheme() {
            "https" => {}
            "http" if services.plain_http => {}
            other => return Err(format!("endpoint: expected an https URL, got a {other}: URL")),
        }
        if !services.allows(&endpoint) {
            return Err(format!(
                "endpoint: {} is not a known push service (allowed: {}; add one with --push-service HOST)",
                endpoint.host_str().unwrap_or_default(),
                services.hosts.join(", ")
            ));
        }
        let decode = |field: &str, text: &str, len: usize| {
            B64.decode(text.trim_end_matches('=')).ok().filter(|b| b.len() == len).ok_or_else(|| {
                format!("keys.{field}: expected {len} bytes in base64url, got {:?}", text.chars().take(100).collect::<String>())
            })
        };
        let public = p256::PublicKey::from_sec1_bytes(&decode("p256dh", &self.keys.p256dh, 65)?)
            .map_err(|_| "keys.p256dh: expected a P-256 public key, got 65 bytes that are not one".to_owned())?;
        let auth = web_push_native::Auth::clone_from_slice(&decode("auth", &self.keys.auth, 16)?);
        Ok(Target { endpoint, public, auth })
    }
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// Delivered, and the channel's message is this (a Slack message's `ts`): kept to
    /// change it once the question closes.
    Posted(String),
    /// The push service says the subscription is gone (404, 410): forget it.
    Gone,
    /// Worth another try later (429, 5xx, no answer); `after` is the service's
    /// `Retry-After`, when it gave one.
    Retry {
        why: String,
        after: Option<Duration>,
    },
    /// Refused for good (another 4xx): the message is dropped.
    Refused(String),
}

/// Sends `payload` (at most [`MAX_PLAINTEXT`] bytes), encrypted to `target`.
/// `topic` lets the push service replace an undelivered message with a newer one of
/// the same topic (a question's "closed" replaces its "asked").
pub async fn send(http: &reqwest::Client, vapid: &Vapid, target: &Target, payload: &[u8], topic: &str, now_s: u64) -> Sent {
    let body = match web_push_native::encrypt(payload.to_vec(), &target.public, &target.auth) {
        Ok(b) => b,
        Err(e) => return Sent::Refused(format!("cannot encrypt: {e}")),
    };
    let authorization = match vapid.authorization(&target.endpoint, now_s) {
        Ok(a) => a,
        Err(e) => return Sent::Refused(e.to_string()),
    };
    let request = http
        .post(target.endpoint.clone())
        .header("TTL", TTL.as_secs().to_string())
        .header("Urgency", "high")
        .header("Topic", topic)
        .header("Content-Encoding", "aes128gcm")
        .header("Content-Type", "application/octet-stream")
        .header("Authorization", authorization)
        .body(body)
        .timeout(Duration::from_secs(30));
    match request.send().await {
        Ok(r) if matches!(r.status().as_u16(), 404 | 410) => Sent::Gone,
        response => outcome("the push service", response).await,
    }
}

/// What an answer from a push service, webhook or ntfy means for the message. A
/// redirect is not followed (the notifier's client follows none): it is refused, with
/// where it pointed. Errors leave out the URL: a webhook's or an endpoint's path is its
/// credential.
pub async fn outcome(who: &str, response: Result<reqwest::Response, reqwest::Error>) -> Sent {
    match response {
        Ok(r) if r.status().is_success() => Sent::Delivered,
        Ok(r) if r.status().is_redirection() => {
            let to = r.headers().get("location").map(|l| String::from_utf8_lossy(l.as_bytes()).chars().take(200).collect::<String>());
            let to = to.map_or_else(|| "no Location".to_owned(), |l| format!("Location {l:?}"));
            Sent::Refused(format!("{who} answered {} ({to}); askuser does not follow redirects", r.status()))
        }
        Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => Sent::Retry {
            why: format!("{who} answered {}", r.status()),
            after: r.headers().get("retry-after").and_then(|v| v.to_str().ok()?.trim().parse().ok()).map(Duration::from_secs),
        },
        Ok(r) => {
            let status = r.status();
            let text: String = r.text().await.unwrap_or_default().chars().take(200).collect();
            Sent::Refused(format!("{who} answered {status}: {text}"))
        }
        Err(e) => Sent::Retry { why: format!("cannot reach {who}: {}", e.without_url()), after: None },
    }
}

/// A `Topic` header value for question `id`: at most 32 characters of the URL-safe
/// base64 alphabet (RFC 8030 section 5.4).
pub fn topic(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    B64.encode(&digest.as_ref()[..24])
}

/// Push as a channel: one place per subscribed device (its endpoint), with the device's
/// rules, reached when the device's person may see the set; the notification closes
/// (by its tag) once the set does.
pub struct Push;

impl Push {
    /// The stored subscription at `endpoint`, checked again (the allowed push services
    /// may have changed).
    async fn target(notifier: &super::Notifier, endpoint: &str, credential: Option<&Option<String>>) -> Option<Target> {
        let subs = notifier.deliveries.subscriptions().await.unwrap_or_default();
        // Unsubscribed or revoked while a notification waited for its time: not sent.
        let sub = subs.into_iter().find(|s| s.endpoint == endpoint && credential.is_none_or(|c| *c == s.credential))?;
        let keys = Keys { p256dh: sub.p256dh.clone(), auth: sub.auth.clone() };
        Subscription { endpoint: sub.endpoint.clone(), keys }.check(&notifier.options.push_services).ok()
    }

    /// Sends `payload` to the device at `endpoint`, forgetting it when its push service
    /// says it is gone.
    async fn send_to(notifier: &super::Notifier, target: &Target, payload: &[u8], id: &str) -> Sent {
        let now_s = notifier.now_ms() / 1000;
        let sent = send(&notifier.http, &notifier.vapid, target, payload, &topic(id), now_s).await;
        if sent == Sent::Gone {
            tracing::info!(endpoint = %target.endpoint, "the push service says this subscription is gone: forgetting it");
            let _ = notifier.deliveries.remove_subscription(target.endpoint.as_str(), None).await;
        }
        sent
    }
}

#[async_trait::async_trait]
impl super::Channel for Push {
    fn name(&self) -> &'static str {
        "push"
    }

    async fn routes(&self, notifier: &super::Notifier, _record: &askuser_core::protocol::QuestionRecord) -> Vec<super::Route> {
        let subs = match notifier.deliveries.subscriptions().await {
            Ok(subs) => subs,
            Err(e) => {
                tracing::warn!("cannot read push subscriptions: {e}");
                return vec![];
            }
        };
        subs.into_iter()
            .map(|sub| {
                // A device of someone the question is not for gets it when it escalates.
                let caller = crate::tokens::Caller { scope: crate::tokens::Scope::Device, id: sub.credential.clone() };
                super::Route {
                    rules: serde_json::from_str(&sub.rules).unwrap_or_default(),
                    reach: super::Reach::Viewer(notifier.registry.viewer(&caller)),
                    credential: sub.credential,
                    to: sub.endpoint,
                }
            })
            .collect()
    }

    fn links(&self) -> bool {
        true
    }

    async fn post(&self, notifier: &super::Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        match Push::target(notifier, &route.to, Some(&route.credential)).await {
            Some(target) => Push::send_to(notifier, &target, &super::push_payload(&notice.message), &notice.record.id).await,
            None => Sent::Gone,
        }
    }

    fn closes(&self) -> bool {
        true
    }

    async fn close(&self, notifier: &super::Notifier, to: &str, _: Option<&str>, record: &askuser_core::protocol::QuestionRecord) -> Sent {
        let Some(target) = Push::target(notifier, to, None).await else { return Sent::Delivered };
        let payload = serde_json::json!({"type": "close", "tag": record.id}).to_string();
        match Push::send_to(notifier, &target, payload.as_bytes(), &record.id).await {
            Sent::Gone => Sent::Delivered,
            sent => sent,
        }
    }
}
