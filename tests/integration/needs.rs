//! What a test needs beyond cargo, and skipping it where that is missing.
//!
//! A plain `cargo test` on a fresh checkout runs every test that needs nothing installed.
//! A test that drives Chromium, tmux, PostgreSQL, Node or a mail server says so first (`needs!(Chromium)`)
//! and, where that is missing, returns at once after one line on the terminal:
//! `skipped: browser::x needs Chromium (scripts/test installs it)`. `scripts/test` installs
//! everything and sets `ASKUSER_TEST_ALL=1`: there a missing tool fails the test instead,
//! so nothing is skipped unseen.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug)]
pub enum Tool {
    /// chromedriver (and the Chromium it drives), from Debian.
    Chromium,
    /// tmux, which drives `askuser tui` in a real terminal.
    Tmux,
    /// PostgreSQL's initdb and pg_ctl, for throwaway clusters.
    Postgres,
    /// Node.
    Node,
    /// Node with the official ACP TypeScript SDK in tests/acp.
    AcpSdk,
    /// axe-core in .tools/axe, the accessibility audit.
    Axe,
    /// code-server and vsce in .tools/editor (scripts/setup editor), for the editor
    /// extension, with util-linux's unshare for a network namespace of its own.
    CodeServer,
    /// A real mail server: dovecot (IMAP, LMTP) and exim (SMTP) from Debian, run as
    /// throwaway instances by root (tests/integration/email.rs).
    MailServer,
}

/// How many tools [`Tool`] names: its last one's number and one (a tool added last must be named here).
const TOOLS: usize = Tool::MailServer as usize + 1;

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Chromium => "Chromium and chromedriver",
            Tool::Tmux => "tmux",
            Tool::Postgres => "PostgreSQL",
            Tool::Node => "Node",
            Tool::AcpSdk => "Node and the ACP SDK in tests/acp",
            Tool::Axe => "axe-core in .tools/axe",
            Tool::CodeServer => "code-server and vsce in .tools/editor",
            Tool::MailServer => "dovecot and exim4 (run as root)",
        }
    }

    /// For what uses this tool: a clear panic where it is missing, rather than one
    /// from deep inside, since the test should have skipped itself with `needs!`.
    pub fn declared(self) {
        assert!(self.present(), "{} is missing and this test does not say it needs it: begin it with needs!({self:?})", self.name());
    }

    fn present(self) -> bool {
        static FOUND: [OnceLock<bool>; TOOLS] = [const { OnceLock::new() }; TOOLS];
        *FOUND[self as usize].get_or_init(|| match self {
            Tool::Chromium => runs(&std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into()), "--version"),
            Tool::Tmux => runs("tmux", "-V"),
            Tool::Postgres => crate::pg::installed(),
            Tool::Node => runs("node", "--version"),
            Tool::AcpSdk => runs("node", "--version") && repo("tests/acp/node_modules/@agentclientprotocol/sdk/package.json").exists(),
            Tool::Axe => repo(".tools/axe/node_modules/axe-core/axe.min.js").exists(),
            Tool::CodeServer => {
                repo(".tools/editor/node_modules/.bin/code-server").exists()
                    && repo(".tools/editor/node_modules/.bin/vsce").exists()
                    && runs("unshare", "--version")
            }
            Tool::MailServer => Path::new("/usr/sbin/dovecot").exists() && Path::new("/usr/sbin/exim").exists() && crate::email::is_root(),
        })
    }
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// Whether the running test must be skipped for want of one of `tools` (it has then
/// said so), or, under `ASKUSER_TEST_ALL`, a panic naming what is missing.
pub fn missing(tools: &[Tool]) -> bool {
    let absent: Vec<&str> = tools.iter().filter(|t| !t.present()).map(|t| t.name()).collect();
    if absent.is_empty() {
        return false;
    }
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let what = absent.join(" and ");
    if std::env::var_os("ASKUSER_TEST_ALL").is_some() {
        panic!("{test} needs {what}, which is missing: run scripts/setup");
    }
    // Straight to the terminal: the test harness keeps a passing test's own output.
    let _ = writeln!(std::io::stderr(), "skipped: {test} needs {what} (scripts/test installs it)");
    true
}

/// Returns from the test where one of the named [`Tool`]s is missing (see the module).
/// main.rs declares this module first, with `#[macro_use]`, so every test module has it.
macro_rules! needs {
    ($($tool:ident),+) => {
        if crate::needs::missing(&[$(crate::needs::Tool::$tool),+]) {
            return;
        }
    };
}
