//! # askuser-bridge
//!
//! The bridge: the one process every agent and every browser tab talks to. It stores
//! each question durably, pushes it to every open tab and terminal, and returns the
//! first answer to the agent that asked. `askuser serve` runs it; `askuser mcp` starts
//! one in its own process when none runs; tests and the benchmark start it with
//! [`start`].
//!
//! # What it offers
//! The crate's public face is what the `askuser` binary, the tests and the benchmark use:
//! [`start`] and its options at the top, [`client`] (finding and reaching a running
//! bridge), [`files`] (the data directory), [`notify`] (the channels' settings, and
//! [`notify::channel`] to add one) and [`store`] (the two stores, for the team store's
//! tests). Every other module is the crate's own.
//!
//! # Layout
//! - `serve`: starting and stopping a bridge.
//! - `hub`: the bridge's state: store, waiting agents, browser events, timeouts.
//! - [`store`]: the durable question store (SQLite, or PostgreSQL for a team).
//! - `damage`: refusing a truncated, damaged or half-written store before it loses anything.
//! - `http`: routes and the guard (host, token, origin) every request passes; the
//!   question before the app (`http::first`), answer links (`http::links`), and the path
//!   each chat's service posts to (its channel's, e.g. Slack's actions).
//! - `ws`: the agent and browser WebSockets.
//! - `assets`: the embedded web UI.
//! - `listen`: accepting connections under a cap and a header timeout, with TLS or without.
//! - `tls`: certificates, fingerprint pinning, and every HTTP and WebSocket client.
//! - `fingerprint`: a certificate's SHA-256 fingerprint, as clients pin it.
//! - `tokens`: scoped credentials (agent, device, admin), stored hashed, revocable.
//! - [`files`]: the data directory, the token, private writes.
//! - [`client`]: `bridge.json`, finding a bridge, and its clients.
//! - `redact`: secrets shown redacted.
//! - [`notify`]: reaching people away from the screen: each way a `notify::Channel` (Web
//!   Push to paired devices, the webhook, ntfy, the Slack app, the Telegram bot).
//! - `late`: the command run for answers that arrive after their agent left.
//! - `process`: whether another process (the bridge that wrote `bridge.json`) still runs.
//!
//! Everything about questions themselves (dialects, validation, formats, protocol)
//! lives in `askuser-core`; this crate only stores and transports. It knows nothing of
//! the commands that use it (the `askuser` binary: the CLI, the MCP and ACP adapters,
//! the terminal front end): Cargo keeps it that way.

mod assets;
pub mod client;
mod damage;
mod error;
pub mod files;
mod fingerprint;
mod http;
mod hub;
mod late;
mod listen;
pub mod notify;
mod process;
mod redact;
mod serve;
pub mod store;
mod tls;
mod tokens;
mod ws;

// What the binary, the tests and the benchmark use; nothing else leaves the crate.

/// Starting and stopping a bridge.
pub use crate::{
    assets::has_ui,
    error::{Error, Result},
    hub::{Bridge, BridgeError, Settings},
    listen::Limits,
    redact::{redact, Secret},
    serve::{open_browser, public_url, serve, start, Running, ServeOptions, Tls},
    store::Durability,
};

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

/// Each crate's modules use each other in one direction only (ARCHITECTURE.md): no
/// cycle, so each can be read, tested and changed knowing only what is below it.
#[cfg(test)]
mod layout {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `.rs` file under `path` (or `path` itself), without its unit tests (which
    /// may use anything: a `mod tests` at a file's end, or a `tests.rs`) and comments (a doc link is not a use).
    fn texts(path: &Path, out: &mut String) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap().flatten() {
                texts(&entry.path(), out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            let text = std::fs::read_to_string(path).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap().lines().filter(|l| !l.trim_start().starts_with("//"));
            code.for_each(|l| out.extend([l, "\n"]));
        }
    }

    /// Which of the crate's top modules each uses, for the crate whose sources are in `src`.
    fn uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
        let modules: BTreeSet<String> = std::fs::read_dir(src)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().trim_end_matches(".rs").to_owned())
            .filter(|m| m != "lib" && m != "main")
            .collect();
        let mut uses = BTreeMap::new();
        for m in &modules {
            let mut text = String::new();
            let file = src.join(format!("{m}.rs"));
            texts(&if file.exists() { file } else { src.join(m) }, &mut text);
            let used =
                modules.iter().filter(|o| *o != m && [format!("crate::{o}::"), format!("crate::{o};")].iter().any(|u| text.contains(u)));
            uses.insert(m.clone(), used.cloned().collect());
        }
        uses
    }

    /// What is left of `uses` once every module that uses nothing left is taken away:
    /// the modules in a cycle.
    fn cycle(mut left: BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
        while let Some(leaf) = left.iter().find(|(_, u)| u.is_empty()).map(|(m, _)| m.clone()) {
            left.remove(&leaf);
            left.values_mut().for_each(|u| {
                u.remove(&leaf);
            });
        }
        left
    }

    #[test]
    fn each_crates_modules_use_each_other_without_a_cycle() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for name in ["askuser-bridge", "askuser-core", "askuser", "askuser-bench", "askuser-web"] {
            let uses = uses(&crates.join(name).join("src"));
            assert!(cycle(uses.clone()).is_empty(), "{name}: modules using each other in a cycle: {:?}", cycle(uses));
        }
        let bridge = uses(&crates.join("askuser-bridge/src"));
        assert!(bridge["http"].contains("notify") && !bridge["notify"].contains("http"), "the test sees uses: {bridge:?}");
    }
}
