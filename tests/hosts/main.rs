//! The host conformance suite: the hosts' own command-line tools (Claude Code, Codex,
//! Gemini CLI, OpenCode, Copilot CLI, Cline, Qwen Code), installed from npm into `.tools/hosts` by
//! `scripts/setup hosts`, run headless in a throwaway HOME against a scripted model on
//! 127.0.0.1 that speaks each vendor's API, with `askuser mcp` set up by
//! `askuser setup HOST` as a new user would, and a bridge whose questions this suite
//! answers as the person would. Run it with `cargo test -p askuser --test hosts`.
//!
//! `scenarios.rs` holds what every host is tested on, once; each host's file (`codex.rs`,
//! `claude.rs`, `gemini.rs`, `opencode.rs`, `copilot.rs`, `cline.rs`, `qwen.rs`) what is its own: how a user sets it up and runs it, what it
//! shows the model, and its tests. `approvals.rs` is Claude Code asking askuser for its
//! permissions, `acp.rs` Claude Code run by `askuser acp` through its ACP adapter
//! (claude-agent-acp). `run.rs` is a running host, `harness.rs` the user's machine and the
//! person, `interactive.rs` Claude Code's terminal UI in tmux (a person at the screen),
//! `model.rs` the scripted model that each vendor's fake API
//! (`openai.rs`, `anthropic.rs`, `gemini_api.rs`, and `chat.rs` for Chat Completions) serves.

mod harness;
mod model;
mod run;
mod scenarios;

mod acp;
mod anthropic;
mod approvals;
mod chat;
mod claude;
mod cline;
mod codex;
mod copilot;
mod gemini;
mod gemini_api;
mod interactive;
mod openai;
mod opencode;
mod qwen;
