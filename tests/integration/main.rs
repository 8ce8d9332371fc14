//! askuser's one integration test binary: the command line and a real bridge, over
//! real HTTP and WebSockets on 127.0.0.1 with a real store on disk.

// First, so that every module below has its `needs!`.
#[macro_use]
mod needs;

mod acp;
mod approvals;
mod asserted;
mod bridge;
mod browser;
mod channel;
mod cli;
mod clients;
mod discord;
mod editor;
mod email;
mod first;
mod hardening;
mod input;
mod mcp;
mod notify;
mod people;
mod pg;
mod preview;
mod remind;
mod remote;
mod setup;
mod shared;
mod slack;
mod support;
mod telegram;
mod terminal;
mod tokens;
mod whatsapp;
