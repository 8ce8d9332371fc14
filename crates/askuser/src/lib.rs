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

/// The bridge's modules (the server: what `askuser serve` runs) and the command side's
/// (the CLI, the MCP and ACP adapters, the terminal front end). The command side uses the
/// bridge; the bridge never uses the command side, so it can become a library of its own
/// (issue 30).
#[cfg(test)]
mod layout {
    use std::path::Path;

    const BRIDGE: [&str; 15] = [
        "assets", "config", "damage", "first", "http", "hub", "late", "listen", "notify", "process", "serve", "store", "tls", "tokens",
        "ws",
    ];
    const COMMANDS: [&str; 11] = ["acp", "agent", "ask", "cli", "client", "doctor", "input", "mcp", "setup", "term", "tui"];

    /// A module's files: `NAME.rs`, or every `.rs` file under `NAME/`.
    fn sources(path: &Path, out: &mut Vec<(String, String)>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap().flatten() {
                sources(&entry.path(), out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(path).unwrap()));
        }
    }

    #[test]
    fn the_bridge_uses_nothing_of_the_command_side() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for module in BRIDGE {
            let file = src.join(format!("{module}.rs"));
            sources(&if file.exists() { file } else { src.join(module) }, &mut files);
        }
        assert!(files.len() >= BRIDGE.len(), "the bridge's files are where this test looks: {files:?}");
        let mut found = Vec::new();
        for (path, text) in &files {
            for (n, line) in text.lines().enumerate() {
                let uses = |m: &str| [format!("crate::{m}::"), format!("crate::{m};"), format!("crate::{{{m}")];
                if COMMANDS.iter().any(|m| uses(m).iter().any(|u| line.contains(u.as_str()))) {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "the bridge uses the command side:\n{}", found.join("\n"));
        // Every module is on one side or the other.
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.trim_end_matches(".rs");
            let known = ["lib", "main"].contains(&stem) || BRIDGE.contains(&stem) || COMMANDS.contains(&stem);
            assert!(known, "{name}: on which side, the bridge's or the commands'?");
        }
    }
}
