//! `askuser ask --here`: the terminal dialog inline, below the prompt, for the one
//! question this command asks, while the same question waits in the bridge's inbox (as
//! pi's ask_user does in its TUI mode). Whichever answers first wins: an answer here is
//! sent to the bridge like any other, and an answer given elsewhere closes this one.
//! It draws on stderr, so the result on stdout stays clean for a script. When it ends,
//! its lines give way to one line per answer ("askuser: Deploy now? → No"), and the
//! cursor is at the start of the line after them, where the shell's prompt goes.

use super::app::{Action, App};
use super::view::{self, Look};
use crate::client::Client;
use askuser_bridge::client::Endpoint;
use askuser_core::client::State;
use askuser_core::protocol::{AnswerBody, AnswerItem, AnswerSet, BrowserEvent, QuestionRecord};
use askuser_core::{Request, Status};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::MoveTo;
use ratatui::crossterm::event::{self, Event as TermEvent};
use ratatui::crossterm::terminal::{Clear, ClearType};
use ratatui::crossterm::{execute, terminal};
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::io::{IsTerminal, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;
use tokio::sync::mpsc;

/// Lines the inline dialog takes below the prompt.
const HEIGHT: u16 = 18;

/// Puts the terminal back: the dialog's lines cleared and what was said in their place,
/// the cursor at the start of the next line; then (as its fields drop) the cursor shown,
/// raw mode off and standard output where it was.
struct Restore {
    terminal: Terminal<CrosstermBackend<std::io::Stderr>>,
    /// The lines left where the dialog was (what was answered here).
    said: Vec<String>,
    _raw: RawMode,
    _stdout: SavedStdout,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // From the dialog's first line down, not from wherever the last frame left the
        // cursor (a clear that puts the cursor back leaves it mid-line, blank lines above).
        let top = self.terminal.get_frame().area().y;
        let mut stderr = std::io::stderr();
        let _ = execute!(stderr, event::DisableBracketedPaste, MoveTo(0, top), Clear(ClearType::FromCursorDown));
        for line in &self.said {
            // Raw mode is still on: the carriage return is ours to write.
            let _ = write!(stderr, "{}\r\n", crate::term::safe(line));
        }
        let _ = stderr.flush();
    }
}

/// What the person did here, as the lines left in the dialog's place.
fn said(id: &str, request: &Request, action: &Action) -> Vec<String> {
    let one_line = |text: &str| crate::term::one_line(text);
    match action {
        Action::Answer { answers, .. } => {
            if let (Some(_), Some(first)) = (request.approval.as_ref().filter(|a| a.is_permission()), answers.first()) {
                return vec![format!("askuser: {}", askuser_core::approval::said(first))];
            }
            match askuser_core::resolve(&request.questions, answers) {
                Ok(resolved) => {
                    resolved.iter().map(|a| format!("askuser: {} → {}", one_line(&a.question), one_line(&a.answer.joined()))).collect()
                }
                Err(_) => vec!["askuser: answered here".into()],
            }
        }
        Action::Decline { chat: true, .. } => vec!["askuser: declined here, to chat about it with the agent".into()],
        Action::Decline { .. } => vec!["askuser: declined here".into()],
        Action::Quit => vec![format!("askuser: not answered; it still waits in the inbox (`askuser result {id} --wait` gets its answer)")],
        Action::Bell => vec![],
    }
}

struct RawMode;

impl RawMode {
    fn on() -> std::io::Result<RawMode> {
        terminal::enable_raw_mode().map(|()| RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

/// crossterm asks the terminal where the cursor is by writing to standard output, which
/// a script has usually redirected (`answer=$(askuser ask --here …)`). While the dialog
/// shows, standard output is the terminal too, and the original comes back on drop.
/// Nothing else is printed to standard output meanwhile.
struct SavedStdout(Option<OwnedFd>);

impl SavedStdout {
    fn to_terminal() -> std::io::Result<SavedStdout> {
        if std::io::stdout().is_terminal() {
            return Ok(SavedStdout(None));
        }
        std::io::stdout().flush()?;
        let saved = rustix::io::dup(std::io::stdout().as_fd())?;
        rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
        Ok(SavedStdout(Some(saved)))
    }
}

impl Drop for SavedStdout {
    fn drop(&mut self) {
        if let Some(saved) = self.0.take() {
            let _ = rustix::stdio::dup2_stdout(saved);
        }
    }
}

/// How the dialog here ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Here {
    /// Answered or declined here: the answer went to the bridge.
    Sent,
    /// Ctrl+C: the person quits `ask`; the question still waits in the inbox.
    Quit,
    /// No more keys come (standard input closed): the answer is awaited from elsewhere.
    NoKeys,
}

/// Shows the dialog for question `id` until the person answers or declines here, or
/// quits with Ctrl+C. Dropping the future (the question was answered elsewhere) puts the
/// terminal back.
pub async fn dialog(id: String, request: Request, endpoint: Endpoint) -> anyhow::Result<Here> {
    let mut app = App::new(false);
    app.connection = (State::Open, 0);
    let asked = request.clone();
    let record = QuestionRecord {
        id: id.clone(),
        request,
        status: Status::Pending,
        created_at: super::now_ms(),
        answered_at: None,
        result: None,
        answered_by: None,
    };
    app.on_event(BrowserEvent::Snapshot { client: "here".into(), questions: vec![record], agents: vec![], more: false, viewer: None });

    let stdout = SavedStdout::to_terminal()?;
    let raw = RawMode::on()?;
    let backend = CrosstermBackend::new(std::io::stderr());
    let height = terminal::size().map_or(HEIGHT, |(_, h)| h.saturating_sub(1).min(HEIGHT));
    let terminal = Terminal::with_options(backend, TerminalOptions { viewport: Viewport::Inline(height) })?;
    let mut restore = Restore { terminal, said: Vec::new(), _raw: raw, _stdout: stdout };
    let _ = execute!(std::io::stderr(), event::EnableBracketedPaste);
    let (tx, mut rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        // Polls, so the thread ends soon after the dialog does.
        while !tx.is_closed() {
            if event::poll(Duration::from_millis(100)).unwrap_or(false) {
                match event::read() {
                    Ok(ev) => {
                        if tx.send(ev).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        }
    });
    let client = Client::new(endpoint).named("terminal");
    loop {
        let look = Look { color: super::color(), now: super::now_ms() };
        restore.terminal.draw(|f| view::draw(f, &mut app, look))?;
        let Some(ev) = rx.recv().await else { return Ok(Here::NoKeys) };
        let actions = match ev {
            TermEvent::Key(key) => app.on_key(key),
            TermEvent::Paste(text) => app.on_paste(&text),
            _ => vec![],
        };
        for action in actions {
            // Said as soon as it is sent: an answer that reaches the agent before the
            // bridge's reply reaches this dialog (which is then dropped) still says so.
            restore.said = said(&id, &asked, &action);
            let sent = match action {
                Action::Answer { id, answers } => {
                    let items = answers.into_iter().map(AnswerItem::Selection).collect();
                    client.answer(&id, &AnswerBody { answers: AnswerSet::InOrder(items) }).await
                }
                Action::Decline { id, chat } => client.decline(&id, chat).await,
                // Ctrl+C: one press quits, as the header says; the question still waits.
                Action::Quit => return Ok(Here::Quit),
                Action::Bell => continue,
            };
            if let Err(e) = sent {
                restore.said.clear();
                return Err(e);
            }
            return Ok(Here::Sent);
        }
    }
}
