//! TLS for a bridge reached from other machines, on rustls with the `ring` provider.
//!
//! - The bridge: a certificate of the person's own (`--tls-cert`, `--tls-key`), or one
//!   it makes itself once per data directory (`tls/cert.pem`, `tls/key.pem`) and keeps,
//!   so its SHA-256 fingerprint stays the same across restarts.
//! - Clients pin that fingerprint (`--cert-fingerprint`, or `bridge.json` on the same
//!   machine): the certificate is accepted when its hash matches, whatever its name or
//!   issuer, and the handshake's signature is still checked, which proves the bridge
//!   holds the key. Without a pin, https uses the system's certificate authorities.
//!
//! Every HTTP client and WebSocket in askuser is built here, so none falls back to a
//! TLS setup of its own.

use crate::error::{Error, Result};
pub use crate::fingerprint::Fingerprint;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Why a connection failed, in a sentence that says what to do when TLS is the reason
/// (else the error and its causes).
pub fn explain(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(tls) = find_tls_error(error) {
        return match tls {
            rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other.0.to_string(),
            rustls::Error::InvalidCertificate(_) => format!(
                "the bridge's certificate is not one this system trusts ({tls}); if it is a bridge's own \
                 (askuser serve --tls), pin it with --cert-fingerprint as `askuser serve` printed it"
            ),
            rustls::Error::InvalidMessage(_) => "the bridge does not speak TLS: use an http:// address".to_owned(),
            other => format!("TLS failed: {other}"),
        };
    }
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text = format!("{text}: {e}");
        cause = e.source();
    }
    text
}

/// Why a TLS connection to `host`, a server that is not a bridge (a mail server), failed,
/// in a sentence that says what to do when its certificate was refused.
pub fn explain_server(error: &(dyn std::error::Error + 'static), host: &str) -> String {
    use rustls::Error::InvalidCertificate;
    match find_tls_error(error) {
        Some(e @ InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })) => {
            format!("the certificate {host} presented is not for {host} ({e})")
        }
        Some(e @ InvalidCertificate(CertificateError::UnknownIssuer)) => format!(
            "the certificate {host} presented is not signed by an authority this system trusts ({e}); \
             for a server with a private CA, trust it with SSL_CERT_FILE (docs/notify.md)"
        ),
        Some(e @ InvalidCertificate(_)) => format!("the certificate {host} presented was refused ({e})"),
        Some(e) => format!("TLS with {host} failed: {e}"),
        None => format!("TLS with {host} failed: {}", explain(error)),
    }
}

/// Whether `error` is a server's certificate refused.
pub fn is_refused_certificate(error: &(dyn std::error::Error + 'static)) -> bool {
    matches!(find_tls_error(error), Some(rustls::Error::InvalidCertificate(_)))
}

/// The rustls error somewhere in `error`'s causes (an io::Error hides the error it
/// wraps from `source()`, so those are opened too).
fn find_tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let wrapped = error.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
    if let Some(found) = wrapped.and_then(|inner| find_tls_error(inner)) {
        return Some(found);
    }
    error.source().and_then(find_tls_error)
}

/// The certificate changed since it was pinned (or this is another server).
struct Mismatch {
    pinned: Fingerprint,
    seen: Fingerprint,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the bridge's certificate has fingerprint {}, not the pinned {}: another server, or a new certificate (check it, then pin the new one)",
            self.seen, self.pinned
        )
    }
}

impl fmt::Debug for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Mismatch {}

#[derive(Debug)]
struct Pinned {
    fingerprint: Fingerprint,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The pin is the identity: name, issuer and dates do not matter for it.
        let seen = Fingerprint::of(end_entity.as_ref());
        if seen == self.fingerprint {
            return Ok(ServerCertVerified::assertion());
        }
        let mismatch = Mismatch { pinned: self.fingerprint, seen };
        Err(rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(mismatch)))))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// What a client trusts: exactly the pinned certificate, or else the system's
/// certificate authorities (none, if the system has none: https then fails clearly).
pub fn client_config(pin: Option<Fingerprint>) -> rustls::ClientConfig {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports TLS 1.2 and 1.3");
    match pin {
        Some(fingerprint) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned { fingerprint, algorithms: provider.signature_verification_algorithms }))
            .with_no_client_auth(),
        // The system's authorities, read once per process.
        None => {
            static SYSTEM: std::sync::OnceLock<rustls::ClientConfig> = std::sync::OnceLock::new();
            SYSTEM
                .get_or_init(|| match rustls_platform_verifier::Verifier::new(provider) {
                    Ok(system) => builder.dangerous().with_custom_certificate_verifier(Arc::new(system)).with_no_client_auth(),
                    Err(_) => builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth(),
                })
                .clone()
        }
    }
}

/// What a connection to the shared database trusts: the CA in the PEM file `ca` (the
/// `sslrootcert` of its URL), else the system's authorities. Either way the server's
/// certificate is verified, with its name.
pub fn database_config(ca: Option<&Path>) -> Result<rustls::ClientConfig> {
    let Some(ca) = ca else { return Ok(client_config(None)) };
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| Error::invalid(format!("cannot read the database's CA certificate {}: {e}", ca.display())))?;
    for cert in certs {
        roots.add(cert).map_err(|e| Error::invalid(format!("{} is not a usable CA certificate: {e}", ca.display())))?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// An HTTP client for the bridge (plain http, or https with `pin` or the system's CAs).
pub fn http(pin: Option<Fingerprint>) -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(client_config(pin))
}

/// [`http`] with nothing else set.
pub fn http_client(pin: Option<Fingerprint>) -> reqwest::Client {
    http(pin).build().expect("an HTTP client with a rustls config builds")
}

/// The notifier's client (Web Push, the webhook, ntfy): it follows no redirect, since
/// a 307 would re-post a signed message, answer links and all, wherever the receiver
/// (or whoever controls it) points, this machine's loopback included.
pub fn notify_client() -> reqwest::Client {
    http(None).redirect(reqwest::redirect::Policy::none()).build().expect("an HTTP client with a rustls config builds")
}

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket (`ws://`, or `wss://` trusting as [`client_config`] does), with
/// Nagle off: a frame is sent at once.
pub async fn websocket(
    request: tokio_tungstenite::tungstenite::handshake::client::Request,
    pin: Option<Fingerprint>,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let connector = tokio_tungstenite::Connector::Rustls(Arc::new(client_config(pin)));
    let (socket, _) = tokio_tungstenite::connect_async_tls_with_config(request, None, true, Some(connector)).await?;
    Ok(socket)
}

/// The bridge's certificate and key.
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    pub fingerprint: Fingerprint,
}

impl Identity {
    /// From PEM files the person gives (`--tls-cert`, `--tls-key`).
    pub fn from_files(cert: &Path, key: &Path) -> Result<Identity> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|e| Error::invalid(format!("cannot read the certificate {}: {e}", cert.display())))?
            .collect::<Result<_, _>>()
            .map_err(|e| Error::invalid(format!("{}: expected PEM certificates: {e}", cert.display())))?;
        let first = chain.first().ok_or_else(|| Error::invalid(format!("{}: expected a PEM certificate, found none", cert.display())))?;
        let fingerprint = Fingerprint::of(first.as_ref());
        let key =
            PrivateKeyDer::from_pem_file(key).map_err(|e| Error::invalid(format!("{}: expected a PEM private key: {e}", key.display())))?;
        Ok(Identity { chain, key, fingerprint })
    }

    /// The certificate this data directory keeps for itself, made on first use for
    /// localhost, 127.0.0.1, ::1 and `names` (the host names people reach it by).
    pub fn self_signed(data_dir: &Path, names: &[String]) -> Result<Identity> {
        let dir = data_dir.join("tls");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        if cert.exists() && key.exists() {
            return Identity::from_files(&cert, &key);
        }
        crate::files::ensure_dir(&dir)?;
        let mut all = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        all.extend(names.iter().filter(|n| !n.is_empty()).cloned());
        let made = rcgen::generate_simple_self_signed(all).map_err(|e| Error::invalid(format!("cannot make a certificate: {e}")))?;
        crate::files::write_private(&key, made.signing_key.serialize_pem().as_bytes())?;
        crate::files::write_private(&cert, made.cert.pem().as_bytes())?;
        Identity::from_files(&cert, &key)
    }

    pub fn server_config(self) -> Result<rustls::ServerConfig> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_single_cert(self.chain, self.key)
            .map_err(|e| Error::invalid(format!("the certificate and the key do not belong together: {e}")))?;
        // The bridge speaks HTTP/1.1 (WebSockets upgrade from it).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_read_in_every_common_spelling() {
        let fp = Fingerprint([0xab; 32]);
        let shown = fp.to_string();
        assert_eq!(shown.len(), 32 * 3 - 1);
        for spelling in [shown.clone(), shown.replace(':', ""), shown.to_lowercase(), format!("sha256:{shown}")] {
            assert_eq!(spelling.parse::<Fingerprint>(), Ok(fp), "{spelling}");
        }
        let err = "abc".parse::<Fingerprint>().unwrap_err();
        assert!(err.contains("64 hex digits") && err.contains("\"abc\""), "{err}");
    }

    #[test]
    fn a_self_signed_certificate_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = Identity::self_signed(dir.path(), &["box.lan".into()]).unwrap();
        let again = Identity::self_signed(dir.path(), &[]).unwrap();
        assert_eq!(first.fingerprint, again.fingerprint, "the pin survives a restart");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("tls/key.pem")).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the key is the user's alone");
        }
        again.server_config().unwrap();
    }

    /// A mail server's certificate refused (as tokio-rustls hands it: in an io::Error)
    /// is explained for a server, not a bridge: no advice to pin a fingerprint.
    #[test]
    fn a_servers_refused_certificate_says_why_and_what_to_do() {
        let refused = |e: CertificateError| std::io::Error::other(rustls::Error::InvalidCertificate(e));
        let unknown = explain_server(&refused(CertificateError::UnknownIssuer), "mail.example.com");
        assert!(
            unknown.contains("mail.example.com presented is not signed by an authority") && unknown.contains("SSL_CERT_FILE"),
            "{unknown}"
        );
        let name = explain_server(&refused(CertificateError::NotValidForName), "mail.example.com");
        assert!(name.contains("is not for mail.example.com"), "{name}");
        let expired = explain_server(&refused(CertificateError::Expired), "mail.example.com");
        assert!(expired.contains("was refused") && !expired.contains("fingerprint"), "{expired}");
        assert!(is_refused_certificate(&refused(CertificateError::Expired)));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!is_refused_certificate(&reset));
        assert!(explain_server(&reset, "mail.example.com").starts_with("TLS with mail.example.com failed: "));
    }
}
