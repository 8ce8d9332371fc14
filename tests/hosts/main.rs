//! The host conformance suite: the hosts' own command-line tools (Codex so far; Claude
//! Code and Gemini CLI next), installed from npm into `.tools/hosts` by
//! `scripts/setup hosts`, run headless in a throwaway HOME against a scripted model on
//! 127.0.0.1 that speaks each vendor's API, with `askuser mcp` set up by
//! `askuser setup HOST` as a new user would, and a bridge whose questions this suite
//! answers as the person would. Run it with `cargo test -p askuser --test hosts`.

// The harness and the model serve every host's suite; not each uses all of it yet.
#[allow(dead_code)]
mod harness;
#[allow(dead_code)]
mod model;

mod codex;
mod openai;
