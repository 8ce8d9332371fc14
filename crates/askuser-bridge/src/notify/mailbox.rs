//! Email (`--notify-email`): mails each question set to a person's address over SMTP (the
//! mail [`super::email::mail`] builds, with answer links), and reads their replies from
//! the bridge's own mailbox over IMAP: IDLE when the server offers it, else a poll every
//! [`POLL`]. A reply is taken as [`super::email`] says (its token, in its reply address and
//! `In-Reply-To`, and the configured `From`); a reply that came too late, or that askuser
//! cannot read, gets a short mail saying why. Mail cannot be edited: nothing is sent when a
//! set closes elsewhere. Each reply askuser took or refused is marked `\Seen`; any other
//! mail in the mailbox is left as it was. Bridges sharing a store read the mailbox one at a
//! time, with a lease like Telegram's polling ([`super::channel::Lease`]).
//!
//! # Why these crates
//! `lettre` is the well-kept SMTP client (tokio, rustls on ring, the platform's verifier,
//! as the bridge's other clients: no OpenSSL). For IMAP, `async-imap` (Delta Chat's, on
//! `imap-proto`) runs over any tokio stream, so the bridge opens the socket and its own
//! rustls (`crate::tls::client_config`) and STARTTLS are a few lines here; it has IDLE.
//! `mail-parser` (Stalwart's) reads what comes back, whatever its MIME and encodings, with
//! no dependency of its own. The `imap` crate is blocking; `async-imap` adds `chrono` and a
//! few small crates.
//!
//! Plain connections (no TLS) are refused unless the server is on this machine (loopback):
//! passwords and replies never cross a network in the clear.

use super::channel::{Lease, Step};
use super::channel::{Places, SettingsError};
use super::email::{self, Reply};
use super::push::Sent;
use super::{Notifier, Rules};
use askuser_core::protocol::QuestionRecord;
use futures_util::TryStreamExt;
use lettre::message::{header::ContentType, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How often the mailbox is read when the server has no IDLE.
pub const POLL: Duration = Duration::from_secs(30);
/// The longest one IDLE waits before it is renewed (servers end it after 30 minutes).
pub const IDLE: Duration = Duration::from_secs(20 * 60);
/// A reading lease's term, for bridges sharing a store.
pub const LEASE: Duration = Duration::from_secs(60);
/// How long one SMTP or IMAP exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection to a mail server is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the start (`smtps://`, port 465; `imaps://`, port 993).
    Tls,
    /// Plain, then STARTTLS, which must succeed (`smtp://`, port 587; `imap://`, 143).
    StartTls,
    /// No TLS (`smtp+plain://`, `imap+plain://`): a server on this machine only.
    Plain,
}

/// A mail server: where it is, how to reach it, and whom to log in as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub host: String,
    pub port: u16,
    pub security: Security,
    /// Whom to log in as (none: no login, SMTP only).
    pub user: Option<String>,
    /// The mailbox replies arrive in (IMAP only: `INBOX`).
    pub mailbox: String,
}

impl Server {
    /// `URL` of flag `--{flag}`: `{kind}s://USER@HOST[:PORT]` (TLS), `{kind}://…`
    /// (STARTTLS), `{kind}+plain://…` (loopback only); IMAP's path names the mailbox.
    pub fn parse(flag: &'static str, kind: &str, text: &str) -> Result<Server, SettingsError> {
        let form =
            format!("{kind}s://USER@HOST[:PORT], {kind}://USER@HOST[:PORT] (STARTTLS) or {kind}+plain://HOST:PORT (this machine only)");
        let bad = |why: &str| SettingsError::Invalid { flag, expected: form.clone(), got: why.to_owned() };
        let url: reqwest::Url = text.parse().map_err(|e| bad(&format!("{:?} ({e})", redacted(text))))?;
        if url.password().is_some() {
            return Err(bad("a URL with a password (give it in the environment: docs/notify.md)"));
        }
        let (security, port) = match (url.scheme(), kind) {
            (s, _) if s == format!("{kind}s") => (Security::Tls, if kind == "smtp" { 465 } else { 993 }),
            (s, _) if s == kind => (Security::StartTls, if kind == "smtp" { 587 } else { 143 }),
            (s, _) if s == format!("{kind}+plain") => (Security::Plain, if kind == "smtp" { 25 } else { 143 }),
            _ => return Err(bad(&format!("{:?}", redacted(text)))),
        };
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad(&format!("{text:?} (no host)")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        if security == Security::Plain && !is_loopback(&host) {
            return Err(SettingsError::Invalid {
                flag,
                expected: format!("{kind}s:// or {kind}:// (TLS) for a server on another machine; {kind}+plain:// only on this one"),
                got: format!("{text:?}"),
            });
        }
        let user = percent_encoding::percent_decode_str(url.username()).decode_utf8_lossy().into_owned();
        let path = percent_encoding::percent_decode_str(url.path().trim_start_matches('/')).decode_utf8_lossy().into_owned();
        Ok(Server {
            host,
            port: url.port().unwrap_or(port),
            security,
            user: Some(user).filter(|u| !u.is_empty()),
            mailbox: if path.is_empty() { "INBOX".into() } else { path },
        })
    }

    /// As `askuser serve` says it: the URL without a password.
    fn shown(&self, kind: &str) -> String {
        let scheme = match self.security {
            Security::Tls => format!("{kind}s"),
            Security::StartTls => kind.to_owned(),
            Security::Plain => format!("{kind}+plain"),
        };
        let user = self.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
        format!("{scheme}://{user}{}:{}", self.host, self.port)
    }
}

/// `text` with whatever follows `:` in a URL's user part cut (a password given by mistake).
fn redacted(text: &str) -> String {
    match (text.find("://"), text.rfind('@')) {
        (Some(s), Some(at)) if at > s => match text[s + 3..at].find(':') {
            Some(colon) => format!("{}:…{}", &text[..s + 3 + colon], &text[at..]),
            None => text.to_owned(),
        },
        _ => text.to_owned(),
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// How email is set up (`askuser serve --notify-email`, docs/notify.md).
#[derive(Clone)]
pub struct Email {
    /// The bridge's own address: mails come from it, replies go to it (`+q-TOKEN`).
    pub from: String,
    /// Where question sets for no one go, and everyone else's once they escalate.
    pub to: Option<String>,
    /// Where question sets for a person or a team go (name → address).
    pub routes: BTreeMap<String, String>,
    pub smtp: Server,
    pub imap: Server,
    pub smtp_password: Option<String>,
    pub imap_password: String,
    /// Which question sets it hears of, and when.
    pub rules: Rules,
    /// How often to read the mailbox without IDLE ([`POLL`]).
    pub poll: Duration,
    /// The longest IDLE ([`IDLE`]).
    pub idle: Duration,
    /// The reading lease's term among bridges sharing a store ([`LEASE`]).
    pub lease: Duration,
}

/// Says where it sends and reads, never a password.
impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Email")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("routes", &self.routes)
            .field("smtp", &self.smtp.shown("smtp"))
            .field("imap", &self.imap.shown("imap"))
            .finish()
    }
}

/// An address as askuser keeps it (lower case), if it is one.
fn address(flag: &'static str, text: &str) -> Result<String, SettingsError> {
    match text.trim().parse::<lettre::Address>() {
        Ok(a) if !text.contains(['<', '>', ' ']) => Ok(a.to_string().to_lowercase()),
        _ => Err(SettingsError::invalid(flag, "an email address (name@example.com)", text)),
    }
}

impl Email {
    /// Email as `--notify-email [NAME=]ADDRESS` (`places`), `--email-from`, `--email-smtp`,
    /// `--email-imap` and the passwords set it up, hearing of sets as `rules` say.
    pub fn configure(
        places: &[String],
        from: Option<&str>,
        smtp: Option<&str>,
        imap: Option<&str>,
        smtp_password: Option<&str>,
        imap_password: Option<&str>,
        rules: Rules,
    ) -> Result<Email, SettingsError> {
        let places = Places::parse("notify-email", "ADDRESS", "address", places, |a| address("notify-email", a))?;
        let missing = |what, flag, var| SettingsError::Missing { channel: "notify-email", what, flag, var };
        let from = from.ok_or_else(|| missing("the bridge's own address", "email-from", "ASKUSER_EMAIL_FROM"))?;
        let from = address("email-from", from)?;
        let smtp =
            Server::parse("email-smtp", "smtp", smtp.ok_or_else(|| missing("the SMTP server", "email-smtp", "ASKUSER_EMAIL_SMTP"))?)?;
        let imap =
            Server::parse("email-imap", "imap", imap.ok_or_else(|| missing("the IMAP server", "email-imap", "ASKUSER_EMAIL_IMAP"))?)?;
        if imap.user.is_none() {
            return Err(SettingsError::invalid("email-imap", "the user to log in as (imaps://USER@HOST)", &imap.shown("imap")));
        }
        let present = |p: Option<&str>| p.filter(|p| !p.is_empty()).map(str::to_owned);
        let smtp_password = present(smtp_password);
        if smtp.user.is_some() && smtp_password.is_none() {
            return Err(missing("the SMTP password", "smtp-password", "ASKUSER_SMTP_PASSWORD"));
        }
        // The same account's, unless the mailbox has its own.
        let imap_password = present(imap_password)
            .or_else(|| smtp_password.clone())
            .ok_or_else(|| missing("the IMAP password", "imap-password", "ASKUSER_IMAP_PASSWORD"))?;
        Ok(Email {
            from,
            to: places.shared,
            routes: places.own,
            smtp,
            imap,
            smtp_password,
            imap_password,
            rules,
            poll: POLL,
            idle: IDLE,
            lease: LEASE,
        })
    }

    /// The bridge address's local part and domain.
    fn parts(&self) -> (&str, &str) {
        self.from.rsplit_once('@').unwrap_or((self.from.as_str(), "localhost"))
    }

    /// Whether `address` is one the bridge mails (and so may answer).
    pub fn allows(&self, address: &str) -> bool {
        self.to.as_deref() == Some(address) || self.routes.values().any(|a| a == address)
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
        let s = &self.smtp;
        let tls = || TlsParameters::new_rustls(s.host.clone()).map_err(|e| format!("cannot set up TLS for {}: {e}", s.host));
        let tls = match s.security {
            Security::Tls => Tls::Wrapper(tls()?),
            Security::StartTls => Tls::Required(tls()?),
            Security::Plain => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(s.host.clone())
            .port(s.port)
            .tls(tls)
            .timeout(Some(TIMEOUT))
            .hello_name(ClientId::Domain(self.parts().1.to_owned()));
        if let (Some(user), Some(password)) = (&s.user, &self.smtp_password) {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        Ok(builder.build())
    }

    /// Sends `mail` to `to` with `headers` set by `build`: [`Sent::Delivered`] once the
    /// server took it.
    async fn send(
        &self,
        to: &str,
        mail: &email::Mail,
        build: impl FnOnce(lettre::message::MessageBuilder) -> lettre::message::MessageBuilder,
    ) -> Sent {
        let parse = |a: &str| a.parse::<Mailbox>().map_err(|e| format!("{a:?} is not an address: {e}"));
        let (from, to) = match (parse(&self.from), parse(to)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(e), _) | (_, Err(e)) => return Sent::Refused(e),
        };
        let builder = build(lettre::Message::builder().from(from).to(to).subject(&mail.subject).date_now());
        let body = MultiPart::alternative()
            .singlepart(SinglePart::builder().header(ContentType::TEXT_PLAIN).body(mail.text.clone()))
            .singlepart(SinglePart::builder().header(ContentType::TEXT_HTML).body(mail.html.clone()));
        let message = match builder.multipart(body) {
            Ok(m) => m,
            Err(e) => return Sent::Refused(format!("cannot make the mail: {e}")),
        };
        let transport = match self.transport() {
            Ok(t) => t,
            Err(e) => return Sent::Refused(e),
        };
        let shown = self.smtp.shown("smtp");
        match transport.send(message).await {
            Ok(_) => Sent::Delivered,
            Err(e) if e.is_permanent() => Sent::Refused(format!("the SMTP server refused the mail: {e}")),
            // A certificate refused, or no STARTTLS (never a plain fallback): trying again
            // changes nothing, so it says so at once.
            Err(e) if crate::tls::is_refused_certificate(&e) => {
                Sent::Refused(format!("cannot send over SMTP ({shown}): {}", crate::tls::explain_server(&e, &self.smtp.host)))
            }
            Err(e) if e.is_client() => Sent::Refused(format!("cannot send over SMTP ({shown}): {e}")),
            Err(e) => Sent::Retry { why: format!("cannot send over SMTP ({shown}): {e}"), after: None },
        }
    }

    /// Mails `notice` to `to`: [`Sent::Posted`] with its token.
    async fn post(&self, notifier: &Notifier, to: &str, notice: &super::Notice) -> Sent {
        let token = email::token();
        let (local, domain) = self.parts();
        let open = super::telegram::open_link(notifier.base(), &notice.record.id);
        let mail = email::mail(notice, &open);
        let reply_to = email::reply_to(local, domain, &token);
        let reply_to: Mailbox = match reply_to.parse() {
            Ok(m) => m,
            Err(e) => return Sent::Refused(format!("cannot make the reply address {reply_to:?}: {e}")),
        };
        let id = email::message_id(&token, domain);
        let auto = lettre::message::header::HeaderName::new_from_ascii_str("Auto-Submitted");
        let sent = self
            .send(to, &mail, |b| {
                b.reply_to(reply_to)
                    .message_id(Some(format!("<{id}>")))
                    .raw_header(lettre::message::header::HeaderValue::new(auto, "auto-generated".into()))
            })
            .await;
        match sent {
            Sent::Delivered => Sent::Posted(token),
            other => other,
        }
    }
}

/// A stream to an IMAP server, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> Io for T {}
type Session = async_imap::Session<Box<dyn Io>>;

/// `stream` wrapped in TLS for `host`, verified as the bridge's other clients verify.
async fn tls(host: &str, stream: tokio::net::TcpStream) -> Result<Box<dyn Io>, String> {
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| format!("{host:?} is no server name: {e}"))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(crate::tls::client_config(None)));
    let stream = connector.connect(name, stream).await.map_err(|e| crate::tls::explain_server(&e, host))?;
    Ok(Box::new(stream))
}

/// Logs in to the IMAP server and selects the mailbox; whether it offers IDLE.
async fn open(mail: &Email) -> Result<(Session, bool), String> {
    let s = &mail.imap;
    let io = |e: std::io::Error| format!("cannot reach the IMAP server {}: {e}", s.shown("imap"));
    let imap = |e: async_imap::error::Error| format!("the IMAP server {} said: {e}", s.shown("imap"));
    let tcp = tokio::net::TcpStream::connect((s.host.as_str(), s.port)).await.map_err(io)?;
    let stream: Box<dyn Io> = match s.security {
        Security::Tls => tls(&s.host, tcp).await?,
        Security::Plain => Box::new(tcp),
        Security::StartTls => {
            let mut client = async_imap::Client::new(tcp);
            client.read_response().await.map_err(io)?;
            // No plain fallback: a server that does not take STARTTLS is not read.
            client.run_command_and_check_ok("STARTTLS", None).await.map_err(|e| {
                format!(
                    "the IMAP server {} refused STARTTLS ({e}); askuser reads mail only over TLS (imaps://, or \
                     imap+plain:// for a server on this machine)",
                    s.shown("imap")
                )
            })?;
            tls(&s.host, client.into_inner()).await?
        }
    };
    let mut client = async_imap::Client::new(stream);
    if s.security != Security::StartTls {
        client.read_response().await.map_err(io)?; // the greeting
    }
    let user = s.user.as_deref().unwrap_or_default();
    let mut session = client.login(user, &mail.imap_password).await.map_err(|(e, _)| imap(e))?;
    let idle = session.capabilities().await.map_err(imap)?.has_str("IDLE");
    session.select(&s.mailbox).await.map_err(imap)?;
    Ok((session, idle))
}

/// Reads the mailbox while the bridge runs: alone, always; with bridges sharing the
/// store, only while this bridge holds the reading lease.
pub(super) async fn read(notifier: Arc<Notifier>, mail: Email) {
    let mut stop = notifier.bridge.shutdown_signal();
    let lease = Lease { term_ms: (mail.lease.as_millis() as u64).max(1000) };
    let (mut held, mut refused): (Option<u64>, Option<u64>) = (None, None);
    let mut session: Option<(Session, bool)> = None;
    let mut backoff = Duration::from_secs(1);
    let mut told = None::<String>;
    loop {
        let now = notifier.bridge.now_ms();
        let step = match notifier.shared.as_deref() {
            None => Step::Poll(u64::MAX),
            Some(shared) => match lease.step(now, held, refused) {
                Step::Claim(term) => {
                    let (id, target) = (format!("email-read:{}", mail.from), format!("close:email-read:{term}"));
                    match shared.claim_close(&id, &target, now).await {
                        Ok(true) => held = Some(term),
                        Ok(false) => refused = Some(term),
                        Err(e) => {
                            tracing::warn!("cannot claim reading the mailbox: {e}");
                            refused = Some(term);
                        }
                    }
                    continue;
                }
                step => step,
            },
        };
        let within = match step {
            Step::Claim(_) => continue,
            Step::Wait(ms) => {
                // A moment before this bridge claims its next term (a round ends early, to
                // end IDLE in time): the session is kept, not logged out and in each term.
                let ours = held.is_some_and(|h| lease.end(h) > now && refused != Some(h + 1));
                if let Some((s, _)) = session.take_if(|_| !ours) {
                    let _ = tokio::time::timeout(TIMEOUT, logout(s)).await;
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => continue,
                    _ = crate::hub::stopped(&mut stop) => return,
                }
            }
            Step::Poll(ms) => Duration::from_millis(ms),
        };
        let round = async {
            let (mut s, idle) = match session.take() {
                Some(open) => open,
                None => {
                    tokio::time::timeout(TIMEOUT, open(&mail)).await.map_err(|_| "the IMAP server did not answer in time".to_owned())??
                }
            };
            tokio::time::timeout(TIMEOUT * 4, handle_new(&notifier, &mail, &mut s))
                .await
                .map_err(|_| "reading the mailbox took too long".to_owned())??;
            let wait = within.saturating_sub(Duration::from_secs(2)).min(if idle { mail.idle } else { mail.poll });
            let s = match idle {
                true => wait_idle(s, wait).await?,
                false => {
                    tokio::time::sleep(wait).await;
                    s
                }
            };
            Ok::<_, String>((s, idle))
        };
        let result = tokio::select! {
            r = round => r,
            _ = crate::hub::stopped(&mut stop) => return,
        };
        match result {
            Ok(open) => {
                session = Some(open);
                backoff = Duration::from_secs(1);
                told = None;
            }
            Err(why) => {
                let why = super::channel::scrub(&why, &[&mail.imap_password]);
                if told.as_deref() != Some(why.as_str()) {
                    tracing::warn!("cannot read the mailbox for email answers: {why}; trying again");
                    told = Some(why);
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = crate::hub::stopped(&mut stop) => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
}

async fn logout(mut session: Session) {
    let _ = session.logout().await;
}

/// Waits in IDLE up to `wait` for the mailbox to change.
async fn wait_idle(session: Session, wait: Duration) -> Result<Session, String> {
    let said = |e: async_imap::error::Error| format!("IDLE: {e}");
    let mut idle = session.idle();
    idle.init().await.map_err(said)?;
    let (done, _stop) = idle.wait_with_timeout(wait);
    // Its timeout restarts at each keepalive the server sends: `wait` is a hard limit here
    // (a bridge sharing a store reads only within its lease).
    if let Ok(done) = tokio::time::timeout(wait, done).await {
        done.map_err(said)?;
    }
    tokio::time::timeout(TIMEOUT, idle.done()).await.map_err(|_| "IDLE did not end in time".to_owned())?.map_err(said)
}

/// Handles every unseen mail in the mailbox that is a reply to one of askuser's.
async fn handle_new(notifier: &Arc<Notifier>, mail: &Email, session: &mut Session) -> Result<(), String> {
    let said = |e: async_imap::error::Error| format!("the IMAP server said: {e}");
    let mut uids: Vec<u32> = session.uid_search("UNSEEN").await.map_err(said)?.into_iter().collect();
    uids.sort_unstable();
    let (local, domain) = mail.parts();
    for uid in uids {
        let fetched: Vec<_> = session.uid_fetch(uid.to_string(), "BODY.PEEK[]").await.map_err(said)?.try_collect().await.map_err(said)?;
        let Some(raw) = fetched.iter().find_map(|f| f.body().map(<[u8]>::to_vec)) else { continue };
        let Some(reply) = Reply::read(&raw, local, domain) else { continue };
        if reply.to_tokens.is_empty() {
            continue; // not a reply to askuser: left as it was
        }
        replied(notifier, mail, &reply).await;
        session.uid_store(uid.to_string(), "+FLAGS (\\Seen)").await.map_err(said)?.try_collect::<Vec<_>>().await.map_err(said)?;
    }
    Ok(())
}

/// A reply: the set it answers answered, or its sender told why not.
async fn replied(notifier: &Arc<Notifier>, mail: &Email, reply: &Reply) {
    let Some(from) = reply.from.as_deref().filter(|f| mail.allows(f)) else {
        return tracing::warn!("a reply to askuser's mail from an address it does not send to: ignored");
    };
    if reply.automatic {
        return tracing::info!("an automatic reply (an absence notice, a bounce) from {from}: ignored");
    }
    let Some(token) = reply.token() else {
        return tracing::warn!("a reply from {from} whose In-Reply-To names no mail of askuser's to its address: ignored");
    };
    let key = format!("email:{from}");
    let by = format!("email:{from}");
    let mut open = None;
    let taken = notifier
        .answer_from_chat(&key, token, &by, |record: &QuestionRecord| {
            let link = super::telegram::open_link(&notifier.base, &record.id);
            open = Some(link.clone());
            email::replied(record, &reply.text, &link).map(|s| Some(super::Outcome::Answer(s)))
        })
        .await;
    let Err(not) = taken else { return };
    let why = not.told(str::to_owned);
    let open = open.unwrap_or_else(|| notifier.base.clone());
    let told = email::told(&why, &open);
    let subject = reply.subject.clone().unwrap_or_default();
    let subject = if subject.to_lowercase().starts_with("re:") { subject } else { format!("Re: {subject}") };
    let told = email::Mail { subject, ..told };
    let reply_id = reply.message_id.clone().map(|id| format!("<{}>", id.trim_matches(['<', '>'])));
    let auto = lettre::message::header::HeaderName::new_from_ascii_str("Auto-Submitted");
    let sent = mail
        .send(from, &told, |b| {
            let b = b.raw_header(lettre::message::header::HeaderValue::new(auto, "auto-replied".into()));
            match reply_id {
                Some(id) => b.in_reply_to(id.clone()).references(id),
                None => b,
            }
        })
        .await;
    if let Sent::Refused(e) | Sent::Retry { why: e, .. } = sent {
        tracing::warn!("cannot tell {from} why their answer was not taken: {e}");
    }
}

#[async_trait::async_trait]
impl super::Channel for Email {
    fn name(&self) -> &'static str {
        "email"
    }

    /// Its passwords.
    fn secrets(&self) -> Vec<&str> {
        [self.smtp_password.as_deref(), Some(self.imap_password.as_str())].into_iter().flatten().collect()
    }

    async fn routes(&self, _: &Notifier, record: &QuestionRecord) -> Vec<super::Route> {
        super::channel::route(self.to.as_ref(), &self.routes, record, &self.rules).into_iter().collect()
    }

    /// A mail cannot answer by itself: answer links beside the reply.
    fn links(&self) -> bool {
        true
    }

    async fn post(&self, notifier: &Notifier, route: &super::Route, notice: &super::Notice) -> Sent {
        self.post(notifier, &route.to, notice).await
    }

    fn describe(&self, _: &std::path::Path) -> Option<String> {
        let to: Vec<&str> = self.to.iter().chain(self.routes.values()).map(String::as_str).collect();
        Some(format!(
            "question sets are mailed to {} from {} over {}; replies are read from {}/{}",
            to.join(", "),
            self.from,
            self.smtp.shown("smtp"),
            self.imap.shown("imap"),
            self.imap.mailbox
        ))
    }

    /// Reads replies.
    fn start(self: Arc<Self>, notifier: Arc<Notifier>) {
        tokio::spawn(read(notifier, (*self).clone()));
    }
}
