//! # askuser-bridge
//!
//! The bridge: the one process every agent and every browser tab talks to. It stores
//! each question durably, pushes it to every open tab and terminal, and returns the
//! first answer to the agent that asked. `askuser serve` runs it; `askuser mcp` starts
//! one in its own process when none runs; tests and the benchmark start it with
//! [`serve::start`].
//!
//! # Layout
//! - [`serve`]: starting and stopping a bridge.
//! - [`hub`]: the bridge's state: store, waiting agents, browser events, timeouts.
//! - [`store`]: the durable question store (SQLite, or PostgreSQL for a team).
//! - [`damage`]: refusing a truncated, damaged or half-written store before it loses anything.
//! - [`http`]: routes and the guard (host, token, origin) every request passes.
//! - [`first`]: the question before the app, written into the page.
//! - [`ws`]: the agent and browser WebSockets.
//! - [`assets`]: the embedded web UI.
//! - [`listen`]: accepting connections under a cap and a header timeout, with TLS or without.
//! - [`tls`]: certificates, fingerprint pinning, and every HTTP and WebSocket client.
//! - [`tokens`]: scoped credentials (agent, device, admin), stored hashed, revocable.
//! - [`config`]: the data directory, the token, `bridge.json`, finding a bridge.
//! - [`notify`]: Web Push to paired devices, the webhook and ntfy, answer links.
//! - [`late`]: the command run for answers that arrive after their agent left.
//! - [`process`]: whether another process (the bridge that wrote `bridge.json`) still runs.
//!
//! Everything about questions themselves (dialects, validation, formats, protocol)
//! lives in `askuser-core`; this crate only stores and transports. It knows nothing of
//! the commands that use it (the `askuser` binary: the CLI, the MCP and ACP adapters,
//! the terminal front end): Cargo keeps it that way.

pub mod assets;
pub mod config;
pub mod damage;
pub mod first;
pub mod http;
pub mod hub;
pub mod late;
pub mod listen;
pub mod notify;
pub mod process;
pub mod serve;
pub mod store;
pub mod tls;
pub mod tokens;
pub mod ws;

/// Every lock in askuser is taken this way. A lock is poisoned when a thread panicked
/// while holding it; nothing here panics on purpose, and every critical section leaves
/// its data consistent between statements (the store's open transaction rolls back when
/// dropped), so the data is used as it is rather than failing every later caller.
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One thread: a question's hops (agent socket → store → browser sockets → answer →
/// agent) then never wake another thread. On this 2-core VM that took the bridge's
/// round trip from 0.93 to 0.57 ms p50 and its CPU from 660 to 430 µs per question
/// (BENCHMARKS.md, finding 5); 5,000 asks/s on one core is far beyond what people answer.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts")
}

/// A future that resolves when SIGINT or SIGTERM arrives. The handlers are in place as
/// soon as this returns, so a signal sent right after the bridge says where it is
/// (as a test or a supervisor may) stops it cleanly instead of killing it.
pub fn terminated() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
        async move {
            match handlers {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
