//! # askuser-web
//!
//! The browser side of askuser: a person sees every question agents are waiting on and
//! answers them. Client-side Leptos, built by Trunk (`index.html` at the workspace
//! root); the bridge embeds the result.
//!
//! The dialog's behaviour is not here: [`askuser_core::dialog::Dialog`] decides
//! everything (keys, focus, tabs, prompts, submit). This crate turns DOM events into
//! dialog events, renders its [`View`](askuser_core::dialog::View), and moves messages.
//!
//! # Layout
//! - [`dialog_view`]: [`DialogView`], one question set as an accessible dialog, and
//!   [`mount_dialog`] to mount it alone (the embed package).
//! - [`events`]: the seam between transport and UI: typed updates for the page, and
//!   the same as `askuser:*` `CustomEvent`s for embedding pages.
//! - [`bridge`]: drives the core's bridge client with a WebSocket, a timer and storage.
//! - [`app`]: the page: inbox, active dialog, banners, notifications, history.
//! - [`drafts`], [`notify`]: draft storage, attention.
//! - [`first`]: taking over the question the bridge wrote into the page (what was
//!   chosen there becomes its draft), and the session that lets it write one.
//! - [`kept`]: the inbox as last seen, shown while the bridge cannot be reached.
//! - [`pairing`]: a device opened at `#pair=CODE` trades it for a token of its own.
//! - [`push`]: Web Push to this device (the "Push even when closed" panel); a tapped
//!   notification opens the page at `#q=ID`, on that question.
//! - [`history`]: answered question sets kept in this browser.
//!
//! The inbox and the split of agent text into code and prose are the core's
//! ([`askuser_core::inbox`], [`askuser_core::text`]), shared with the terminal.
//! - [`perf`]: User Timing marks for the benchmark harness (only with `?perf`).
//!
//! Invariant: agent text reaches the DOM only as text nodes, an option's `preview` too
//! (its markdown as the core parses it: headings, lists, code and tables of text nodes).

pub mod app;
pub mod bridge;
pub mod dialog_view;
pub mod drafts;
pub mod events;
pub mod first;
pub mod history;
pub mod kept;
pub mod notify;
pub mod pairing;
pub mod perf;
pub mod push;
pub mod rules;

pub use app::App;
pub use dialog_view::{mount_dialog, DialogHandle, DialogView};

/// Mounts the whole page into `<body>` (what `main.rs` does).
pub fn mount_app() {
    std::panic::set_hook(Box::new(|info| web_sys::console::error_1(&info.to_string().into())));
    if pairing::start() {
        return; // the page loads again once paired
    }
    leptos::mount::mount_to_body(App);
}
