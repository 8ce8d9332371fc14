//! # askuser
//!
//! The `askuser` command: the CLI, the agent side (`askuser mcp`, `ask`, `acp`), host
//! setup and checks, and the terminal front end, all on the bridge library
//! (`askuser-bridge`).
//!
//! # Layout
//! - [`cli`]: the command line (clap) and what each subcommand does.
//! - [`client`]: the terminal commands' HTTP client.
//! - [`ask`]: the `ask`, `result` and `mcp` commands.
//! - [`setup`]: writes a host's MCP configuration for `askuser mcp`.
//! - [`doctor`]: checks the data directory, the bridge and each host's configuration.
//! - [`agent`]: asking a bridge resumably, for `askuser mcp` and `askuser ask`.
//! - [`mcp`]: the `ask_user` MCP server over stdio.
//! - [`acp`]: `askuser acp`, an ACP client that runs an agent and asks its permissions and forms.
//! - [`input`]: reads a request or result from a file or stdin.
//! - [`term`]: prints agent text on a terminal without its control characters.
//! - [`tui`]: `askuser tui` and `askuser ask --here`, the dialog in a terminal.
//!
//! The bridge itself (store, hub, HTTP and WebSockets, notifications, TLS, config) is
//! the `askuser-bridge` library; everything about questions themselves (dialects,
//! validation, formats, protocol) lives in `askuser-core`.

pub mod acp;
pub mod agent;
pub mod ask;
pub mod cli;
pub mod client;
pub mod doctor;
pub mod input;
pub mod mcp;
pub mod setup;
pub mod term;
pub mod tui;

pub(crate) use askuser_bridge::lock;
