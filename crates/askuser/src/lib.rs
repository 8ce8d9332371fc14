//! # askuser
//!
//! The `askuser` command and the bridge behind it. The bridge is the one process every
//! agent and every browser tab talks to: it stores each question durably, pushes it to
//! every open tab, and returns the first answer to the agent that asked.
//!
//! # Layout
//! - [`cli`]: the command line (clap) and what each subcommand does.
//! - [`config`]: the data directory, the token, `bridge.json`, finding a bridge.
//! - [`store`]: the durable question store (SQLite).
//! - [`damage`]: refusing a truncated, damaged or half-written store before it loses anything.
//! - [`hub`]: the bridge's state: store, waiting agents, browser events, timeouts.
//! - [`http`]: routes and the guard (host, token, origin) every request passes.
//! - [`ws`]: the agent and browser WebSockets.
//! - [`assets`]: the embedded web UI.
//! - [`listen`]: accepting connections under a cap and a header timeout, with TLS or without.
//! - [`tls`]: certificates, fingerprint pinning, and every HTTP and WebSocket client.
//! - [`tokens`]: scoped credentials (agent, device, admin), stored hashed, revocable.
//! - [`serve`]: starting and stopping a bridge.
//! - [`client`]: the terminal commands' HTTP client.
//! - [`ask`]: the `ask`, `result` and `mcp` commands.
//! - [`setup`]: writes a host's MCP configuration for `askuser mcp`.
//! - [`doctor`]: checks the data directory, the bridge and each host's configuration.
//! - [`agent`]: asking a bridge resumably, for `askuser mcp` and `askuser ask`.
//! - [`mcp`]: the `ask_user` MCP server over stdio.
//! - [`acp`]: `askuser acp`, an ACP client that runs an agent and asks its permissions and forms.
//! - [`late`]: the command run for answers that arrive after their agent left.
//! - [`notify`]: Web Push to paired devices, the webhook and ntfy, answer links.
//! - [`process`]: whether another process (an `askuser mcp`, the bridge that wrote `bridge.json`) still runs.
//! - [`input`]: reads a request or result from a file or stdin.
//! - [`term`]: prints agent text on a terminal without its control characters.
//! - [`tui`]: `askuser tui` and `askuser ask --here`, the dialog in a terminal.
//!
//! Everything about questions themselves (dialects, validation, formats, protocol)
//! lives in `askuser-core`; this crate only stores, transports and prints.

pub mod acp;
pub mod agent;
pub mod ask;
pub mod assets;
pub mod cli;
pub mod client;
pub mod config;
pub mod damage;
pub mod doctor;
pub mod first;
pub mod http;
pub mod hub;
pub mod input;
pub mod late;
pub mod listen;
pub mod mcp;
pub mod notify;
pub mod process;
pub mod serve;
pub mod setup;
pub mod store;
pub mod term;
pub mod tls;
pub mod tokens;
pub mod tui;
pub mod ws;

/// Every lock in askuser is taken this way. A lock is poisoned when a thread panicked
/// while holding it; nothing here panics on purpose, and every critical section leaves
/// its data consistent between statements (the store's open transaction rolls back when
/// dropped), so the data is used as it is rather than failing every later caller.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
