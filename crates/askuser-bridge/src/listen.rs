//! Accepting connections so that no client can hold the bridge. A connection that sends
//! no complete request head within [`Limits::header_timeout`] (silent, trickling
//! headers, or idle between requests) is closed before it ever reaches a handler; at most
//! [`Limits::max_connections`] are open at once (a WebSocket counts as long as it
//! lives), and the one over the cap gets a plain 503 at once instead of waiting in the
//! kernel's backlog. At start-up the soft descriptor limit is raised to the hard one,
//! and the cap is kept below it, so descriptors never run out first.
//!
//! A connection is *unproven* until one of its requests shows a valid token (the guard
//! in `http.rs` says so through the [`Standing`] on each request). Unproven connections
//! are held to [`Limits::unproven_per_source`] per source address and, all together,
//! leave [`Limits::reserved`] places of the cap free, so a tokenless client that keeps
//! reopening connections cannot take every place (F3, issue 28). Those reserved places,
//! and the per-source limit, are open to a source that showed a valid token within
//! [`VOUCHED_FOR`]: the person's page and clients keep being served. The listener sees
//! no token, only addresses: someone behind the same address as the person shares
//! their standing, and behind a proxy every connection is the proxy's.
//!
//! With TLS, the handshake happens in the connection's own task under the same header
//! timeout and holding its place under the cap; plain HTTP sent to a TLS port gets a
//! clear-text 400 that says to use https.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once (HTTP and WebSocket together).
    pub max_connections: usize,
    /// How long a connection may take to send a request head, and may sit idle between
    /// requests.
    pub header_timeout: Duration,
    /// Unproven connections (no valid token shown yet) one source address may hold open
    /// (an IPv6 one counted by its /64).
    pub unproven_per_source: usize,
    /// Places of the cap unproven connections may not take (at most a quarter of the
    /// cap): kept for sources that showed a valid token.
    pub reserved: usize,
    /// Whether connections from this machine (loopback) are exempt from the two limits
    /// above: its own clients open bursts of connections (a thousand agents at once, a
    /// page's assets) before any has shown a token, and whoever can open them could do
    /// worse on this machine anyway. The limits are for remote mode.
    pub exempt_loopback: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            unproven_per_source: 64,
            reserved: 512,
            exempt_loopback: true,
        }
    }
}

/// How long a source that showed a valid token may use the reserved places.
pub const VOUCHED_FOR: Duration = Duration::from_secs(3600);

/// Sources remembered as vouched for, at most (the stalest forgotten first).
const MAX_VOUCHED: usize = 4096;

/// Descriptors kept free beyond the connections: the store, its WAL, the listener, logs.
const SPARE_DESCRIPTORS: u64 = 64;

/// Raises the soft descriptor limit to the hard limit; returns the soft limit now in force.
pub fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource};
        let mut limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let before = limit.current;
            limit.current = limit.maximum;
            match setrlimit(Resource::Nofile, limit) {
                Ok(()) => tracing::debug!(?before, now = ?limit.current, "raised the open-file limit"),
                Err(e) => {
                    tracing::debug!("cannot raise the open-file limit: {e}");
                    limit.current = before;
                }
            }
        }
        limit.current
    }
    #[cfg(not(unix))]
    None
}

/// The cap that fits the descriptors this process may open.
pub fn effective_cap(wanted: usize, descriptors: Option<u64>) -> usize {
    match descriptors {
        Some(d) => wanted.min(usize::try_from(d.saturating_sub(SPARE_DESCRIPTORS)).unwrap_or(usize::MAX)).max(1),
        None => wanted.max(1),
    }
}

/// Serves `router` on `listener` until `stopped` turns true, then lets the requests in
/// flight finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    mut stopped: watch::Receiver<bool>,
) -> io::Result<()> {
    let cap = effective_cap(limits.max_connections, raise_descriptor_limit());
    if cap < limits.max_connections {
        tracing::debug!("at most {cap} connections at once: the open-file limit allows no more");
    }
    let permits = Arc::new(Semaphore::new(cap));
    let admission = Arc::new(Admission::new(&limits, cap));
    let mut connections = JoinSet::new();
    // Warnings at most once a second, however fast connections come.
    let (mut last_accept_error, mut last_refusal_log, mut refused) = (None::<tokio::time::Instant>, None::<tokio::time::Instant>, 0u64);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors (or a connection reset before accept): wait a
                        // little instead of spinning, and say so once a second at most.
                        if last_accept_error.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                            tracing::warn!("cannot accept a connection: {e}");
                            last_accept_error = Some(tokio::time::Instant::now());
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Small frames go out at once: with Nagle, a second frame waits for the
                // peer's delayed ACK and every round trip costs 40 ms (BENCHMARKS.md).
                let _ = tcp.set_nodelay(true);
                match place(&permits, &admission, peer, cap) {
                    Ok((permit, standing)) => {
                        let io = Counted { tcp, _permit: permit, _standing: Held(standing.clone()) };
                        let (timeout, stopped) = (limits.header_timeout, stopped.clone());
                        let service = WithPeer { inner: TowerToHyperService::new(router.clone()), peer: Peer(peer), standing };
                        match &tls {
                            None => connections.spawn(connection(io, service, timeout, stopped)),
                            Some(tls) => connections.spawn(secure(tls.clone(), io, service, timeout, stopped)),
                        };
                    }
                    Err(why) => {
                        refused += 1;
                        if last_refusal_log.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                            tracing::warn!("refused {refused} connection(s) so far; the last from {}: {why}", peer.ip());
                            last_refusal_log = Some(tokio::time::Instant::now());
                        }
                        // A TLS client cannot read a clear-text 503: it is just closed.
                        if tls.is_none() {
                            connections.spawn(refuse(tcp, why));
                        }
                    }
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = until_stopped(&mut stopped) => break,
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
    Ok(())
}

async fn connection<I>(io: I, service: WithPeer, header_timeout: Duration, mut stopped: watch::Receiver<bool>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::pin!(conn);
    let outcome = tokio::select! {
        outcome = conn.as_mut() => outcome,
        _ = until_stopped(&mut stopped) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = outcome {
        tracing::debug!("connection closed: {e}");
    }
}

/// A connection to the TLS port: the handshake (within `timeout`), then HTTP as usual.
async fn secure(tls: TlsAcceptor, io: Counted, service: WithPeer, timeout: Duration, mut stopped: watch::Receiver<bool>) {
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        peeked = tokio::time::timeout(timeout, io.tcp.peek(&mut first)) => peeked,
        _ = until_stopped(&mut stopped) => return,
    };
    match peeked {
        // 0x16: a TLS handshake record.
        Ok(Ok(1)) if first[0] == 0x16 => {}
        Ok(Ok(1)) if first[0].is_ascii_uppercase() => return plain_http_to_tls_port(io).await,
        _ => return,
    }
    let accepted = tokio::select! {
        accepted = tokio::time::timeout(timeout, tls.accept(io)) => accepted,
        _ = until_stopped(&mut stopped) => return,
    };
    match accepted {
        Ok(Ok(stream)) => connection(stream, service, timeout, stopped).await,
        Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
        Err(_) => tracing::debug!("TLS handshake timed out"),
    }
}

/// Plain HTTP sent to the TLS port: one clear-text answer that says what to do, then close.
async fn plain_http_to_tls_port(mut io: Counted) {
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        // Read the request first: closing with unread input resets the connection, and
        // the answer would be lost.
        let mut head = [0u8; 4096];
        let _ = io.read(&mut head).await;
        // The bridge's error shape, so clients show the message as they show any refusal.
        let body = r#"{"code":"bad_message","message":"this bridge speaks HTTPS only: use https:// (and pin its certificate's fingerprint, as `askuser serve` printed it)"}"#;
        let response = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             X-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = io.write_all(response.as_bytes()).await;
        let _ = io.shutdown().await;
    })
    .await;
}

async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// A place under the cap for a connection from `peer`, or why there is none.
fn place(
    permits: &Arc<Semaphore>,
    admission: &Arc<Admission>,
    peer: SocketAddr,
    cap: usize,
) -> Result<(OwnedSemaphorePermit, Standing), String> {
    let permit = permits
        .clone()
        .try_acquire_owned()
        .map_err(|_| format!("too many connections ({cap} open, the most this bridge allows: --max-connections)"))?;
    Ok((permit, admission.admit(peer.ip(), Instant::now())?))
}

/// The answer to a connection refused a place: a 503 that says why, then close.
async fn refuse(mut tcp: TcpStream, why: String) {
    let body = format!("askuser: {why}; try again shortly\n");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nRetry-After: 5\r\n\
         X-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = tcp.write_all(response.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// The address a request's connection came from (a request extension): what limits
/// per source, such as wrong pairing codes, count by. Behind a proxy it is the proxy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

/// Who holds unproven places, per source, and which sources showed a valid token lately.
struct Admission {
    per_source: usize,
    /// The places unproven connections may hold together: the cap less the reserve.
    pool: usize,
    exempt_loopback: bool,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    unproven: HashMap<IpAddr, usize>,
    total: usize,
    vouched: HashMap<IpAddr, Instant>,
}

impl Admission {
    fn new(limits: &Limits, cap: usize) -> Admission {
        let reserved = limits.reserved.min(cap / 4);
        Admission {
            per_source: limits.unproven_per_source.max(1),
            pool: cap - reserved,
            exempt_loopback: limits.exempt_loopback,
            counts: Mutex::default(),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new connection from `ip`: unproven, unless its source was vouched for lately.
    fn admit(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Standing, String> {
        let source = crate::tokens::Pairings::source(ip);
        let mut counts = self.counts();
        let vouched = (self.exempt_loopback && source.is_loopback())
            || counts.vouched.get(&source).is_some_and(|&at| now.duration_since(at) < VOUCHED_FOR);
        if !vouched {
            let mine = counts.unproven.get(&source).copied().unwrap_or(0);
            if mine >= self.per_source {
                return Err(format!(
                    "too many connections from your address without a valid token ({mine} open, the most one address may hold); send `Authorization: Bearer TOKEN`"
                ));
            }
            if counts.total >= self.pool {
                return Err(format!(
                    "too many connections without a valid token ({} open, the most this bridge allows; the rest of --max-connections is kept for clients that showed one)",
                    counts.total
                ));
            }
            *counts.unproven.entry(source).or_default() += 1;
            counts.total += 1;
        }
        Ok(Standing(Arc::new(Place { admission: self.clone(), source, unproven: AtomicBool::new(!vouched) })))
    }

    /// An unproven connection from `source` closed or showed a valid token.
    fn release(&self, source: IpAddr) {
        let mut counts = self.counts();
        if let Some(n) = counts.unproven.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                counts.unproven.remove(&source);
            }
            counts.total -= 1;
        }
    }

    /// `source` showed a valid token at `now`; the map stays at most [`MAX_VOUCHED`].
    fn vouch(&self, source: IpAddr, now: Instant) {
        let mut counts = self.counts();
        if counts.vouched.len() >= MAX_VOUCHED && !counts.vouched.contains_key(&source) {
            counts.vouched.retain(|_, at| now.duration_since(*at) < VOUCHED_FOR);
            if counts.vouched.len() >= MAX_VOUCHED {
                if let Some(stalest) = counts.vouched.iter().min_by_key(|(_, at)| **at).map(|(s, _)| *s) {
                    counts.vouched.remove(&stalest);
                }
            }
        }
        counts.vouched.insert(source, now);
    }
}

/// One connection's standing, on each of its requests (an extension): the guard calls
/// [`Standing::authenticated`] when a request showed a valid token.
#[derive(Clone)]
pub struct Standing(Arc<Place>);

struct Place {
    admission: Arc<Admission>,
    source: IpAddr,
    /// Still counted against its source and the unproven pool.
    unproven: AtomicBool,
}

impl Standing {
    /// The connection showed a valid token: it no longer counts as unproven, and its
    /// source may use the reserved places for [`VOUCHED_FOR`].
    pub fn authenticated(&self) {
        let place = &self.0;
        if place.unproven.swap(false, Ordering::AcqRel) {
            place.admission.release(place.source);
        }
        place.admission.vouch(place.source, Instant::now());
    }
}

/// Gives a connection's unproven place back when the connection ends.
struct Held(Standing);

impl Drop for Held {
    fn drop(&mut self) {
        let place = &(self.0).0;
        if place.unproven.swap(false, Ordering::AcqRel) {
            place.admission.release(place.source);
        }
    }
}

/// The router, with each request told its connection's [`Peer`] and [`Standing`].
#[derive(Clone)]
struct WithPeer {
    inner: TowerToHyperService<Router>,
    peer: Peer,
    standing: Standing,
}

impl<B> hyper::service::Service<hyper::Request<B>> for WithPeer
where
    TowerToHyperService<Router>: hyper::service::Service<hyper::Request<B>>,
{
    type Response = <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Response;
    type Error = <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Error;
    type Future = <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Future;

    fn call(&self, mut request: hyper::Request<B>) -> Self::Future {
        request.extensions_mut().insert(self.peer);
        request.extensions_mut().insert(self.standing.clone());
        self.inner.call(request)
    }
}

/// A connection holding its place under the cap for as long as it lives, upgraded
/// (WebSocket) or not.
struct Counted {
    tcp: TcpStream,
    _permit: OwnedSemaphorePermit,
    _standing: Held,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_descriptors_to_spare() {
        assert_eq!(effective_cap(4096, Some(1024)), 960);
        assert_eq!(effective_cap(4096, Some(1_048_576)), 4096);
        assert_eq!(effective_cap(100, None), 100);
        assert_eq!(effective_cap(4096, Some(10)), 1, "never zero");
    }

    #[test]
    fn unproven_connections_are_held_per_source_and_leave_the_reserve_to_vouched_ones() {
        let limits = Limits { unproven_per_source: 2, reserved: 3, ..Limits::default() };
        let admission = Arc::new(Admission::new(&limits, 12));
        let (now, ip) = (Instant::now(), |last: u8| IpAddr::from([10, 0, 0, last]));
        let mut held: Vec<Held> = (0..2).map(|_| Held(admission.admit(ip(1), now).unwrap())).collect();
        let refused = admission.admit(ip(1), now).err().unwrap();
        assert!(refused.contains("from your address without a valid token (2 open"), "{refused}");
        // An IPv6 peer counts by its /64.
        let v6 = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, last]);
        held.extend((1..=2).map(|n| Held(admission.admit(v6(n), now).unwrap())));
        assert!(admission.admit(v6(3), now).is_err(), "the same /64");
        // Together, unproven connections leave 3 of the 12 places.
        held.extend((2..7).map(|n| Held(admission.admit(ip(n), now).unwrap())));
        assert_eq!(admission.counts().total, 9);
        let refused = admission.admit(ip(9), now).err().unwrap();
        assert!(refused.contains("without a valid token (9 open"), "{refused}");
        // A connection that shows a token gives its place back; its source passes both
        // limits for an hour, uncounted.
        held[0].0.authenticated();
        assert_eq!(admission.counts().total, 8);
        let vouched: Vec<Standing> = (0..5).map(|_| admission.admit(ip(1), now).unwrap()).collect();
        assert_eq!(admission.counts().total, 8, "vouched connections are not unproven");
        assert!(admission.admit(ip(1), now + VOUCHED_FOR + Duration::from_secs(60)).is_ok(), "counted again after an hour: 2 of 2");
        drop(vouched);
        // Closed connections give their places back, once.
        held[0].0.authenticated();
        drop(held);
        let counts = admission.counts();
        assert_eq!((counts.total, counts.unproven.len()), (1, 1), "only the connection admitted after the hour");
    }
}
