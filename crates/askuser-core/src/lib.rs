//! # askuser-core
//!
//! Everything askuser knows about questions, with no IO: no clock, no randomness, no
//! network, no files. Ids and timestamps are passed in, so every front end (the bridge,
//! the Leptos dialog, the wasm package, a terminal) shares one behaviour and the
//! whole of it is tested natively.
//!
//! # Layout
//! - [`model`]: the canonical [`Request`] / [`Question`] / [`Choice`].
//! - [`dialect`]: reads Claude Code, pi, Opal and Roo Code shapes into the model, with
//!   every error named by path.
//! - [`validate`]: the rules and the [`Limits`] they use; warnings are returned, not applied silently.
//! - [`answer`]: what a front end sends ([`Selection`]) and the canonical [`AskResult`].
//! - [`format`]: the result as Claude Code, pi or plain text expect it.
//! - [`dialog`]: the whole dialog (focus, tabs, Other text, confirmations, submit) as a
//!   pure state machine driven by events.
//! - [`protocol`]: the messages between agents, the bridge and browsers.
//! - [`inbox`]: every pending question set a front end knows of, grouped by agent.
//! - [`text`]: agent text split into prose and code, never parsed as markup.
//! - [`markdown`]: an option's preview read as markdown into a small document model
//!   (raw HTML stays text; nothing here makes HTML).
//! - [`approval`]: an agent's request to use a tool, asked as a question, answered as
//!   a decision in each host's shape, and the rules that answer it without asking.
//! - [`remind`]: reminders and a default: what is due when, so a wait never goes silent.
//! - [`client`]: a front end's bridge client (outbox, acknowledgements, snapshot
//!   parts, reconnecting) as a pure state machine.

pub mod answer;
pub mod approval;
pub mod client;
pub mod dialect;
pub mod dialog;
pub mod error;
pub mod format;
pub mod inbox;
pub mod markdown;
pub mod model;
pub mod protocol;
pub mod remind;
pub mod text;
pub mod validate;

pub use answer::{resolve, Answer, AnswerValue, AskResult, Selection, Status};
pub use dialect::{normalize, Dialect, Normalized};
pub use error::{FieldError, Invalid};
pub use format::Format;
pub use model::{Agent, Choice, Question, Request};
pub use validate::{Limits, Warning};
