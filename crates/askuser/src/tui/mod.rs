//! `askuser tui`: the inbox and the dialog in a terminal, for a person on SSH to the
//! box where the agents run. It is a bridge client like a browser tab (the same socket,
//! the same token; `bridge.json` is read again on every reconnect, so a restarted bridge
//! is found), driving the core's [`Client`] and [`Dialog`](askuser_core::dialog::Dialog)
//! state machines. This module owns only the IO: the terminal, the socket, the timer
//! and the file that keeps unsent answers.
//!
//! - [`app`]: the state (inbox, one dialog per question set, editors) and the keys.
//! - [`view`]: drawing it.
//! - [`editor`]: the line editor for typed answers and notes.
//! - [`inline`]: `askuser ask --here`, the same dialog inline for one question.
//! - [`wrap`]: fitting agent text to the terminal's width.

pub mod app;
pub mod editor;
pub mod inline;
pub mod view;
pub mod wrap;

use crate::client::BridgeArgs;
use crate::term::fail;
use app::{Action, App};
use askuser_bridge::client::Endpoint;
use askuser_bridge::files;
use askuser_core::client::{Client, Effect, Input};
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use ratatui::crossterm::event::{self, Event as TermEvent};
use ratatui::crossterm::execute;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

#[derive(Debug, Clone, Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub bridge: BridgeArgs,
    /// No bell when a new question arrives.
    #[arg(long)]
    pub no_bell: bool,
}

/// Colours unless `NO_COLOR` is set (https://no-color.org).
pub fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

pub fn run(args: &TuiArgs) -> ExitCode {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return fail("askuser tui needs a terminal; without one, use `askuser pending` and `askuser answer`");
    }
    let dir = match files::data_dir(args.bridge.data_dir.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(format!("{e:#}")),
    };
    // Where the bridge is, read again on every connect (a restarted bridge may move).
    let find = {
        let (bridge, dir) = (args.bridge.clone(), dir.clone());
        move || bridge.endpoint(&dir)
    };
    if let Err(e) = find() {
        return fail(format!("{e:#}"));
    }
    let outcome = askuser_bridge::runtime().block_on(session(find, &dir, !args.no_bell));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format!("{e:#}")),
    }
}

/// Puts the terminal back as it was, however the program ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = execute!(std::io::stdout(), event::DisableBracketedPaste);
        ratatui::restore();
    }
}

/// What the loop hears from the terminal thread and the socket tasks.
enum Heard {
    Term(TermEvent),
    Opened(u64),
    Frame(u64, String),
    Closed(u64),
    TokenChecked(bool),
}

async fn session(find: impl Fn() -> anyhow::Result<Endpoint>, dir: &Path, bell: bool) -> anyhow::Result<()> {
    // ratatui::init also restores the terminal when the program panics.
    let mut terminal = ratatui::init();
    let _restore = Restore;
    let _ = execute!(std::io::stdout(), event::EnableBracketedPaste);
    let (tx, mut rx) = mpsc::unbounded_channel::<Heard>();
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            while let Ok(ev) = event::read() {
                if tx.send(Heard::Term(ev)).is_err() {
                    break;
                }
            }
        });
    }
    let outbox = Outbox::at(dir);
    let endpoint = find()?;
    let seed = format!("t{:x}-{:x}", now_ms(), rand_u64());
    let (mut client, effects) = Client::new(seed, outbox.load(&endpoint.url).as_deref());
    let mut link = Link { tx: tx.clone(), socket: None, generation: 0, tick: None };
    let mut app = App::new(bell);
    let mut pending = effects;
    let stop = askuser_bridge::terminated();
    tokio::pin!(stop);
    let mut redraw = tokio::time::interval(Duration::from_secs(1));
    loop {
        // Carry out what the client asked for, then draw.
        while !pending.is_empty() {
            let mut next = Vec::new();
            for effect in std::mem::take(&mut pending) {
                match effect {
                    Effect::Connect => link.connect(&find),
                    Effect::Send(text) => link.send(text),
                    Effect::Close => link.close(),
                    Effect::After(d) => link.tick = Some(tokio::time::Instant::now() + d),
                    Effect::CheckToken => link.check_token(&find),
                    Effect::ForgetToken => {}
                    Effect::SaveOutbox(saved) => outbox.save(&endpoint.url, saved.as_deref()),
                    Effect::Connection { state, attempt } => app.connection = (state, attempt),
                    Effect::Event(ev) => {
                        for action in app.on_event(ev) {
                            next.extend(act(&mut app, &mut client, action));
                        }
                    }
                }
            }
            pending = next;
        }
        let look = view::Look { color: color(), now: now_ms() };
        terminal.draw(|f| view::draw(f, &mut app, look))?;

        let tick = link.tick;
        let heard = tokio::select! {
            heard = rx.recv() => heard,
            _ = async { tokio::time::sleep_until(tick.unwrap()).await }, if tick.is_some() => {
                link.tick = None;
                pending = client.handle(Input::Tick);
                continue;
            }
            _ = redraw.tick() => continue,
            _ = &mut stop => break,
        };
        let Some(heard) = heard else { break };
        match heard {
            Heard::Term(TermEvent::Key(key)) => {
                for action in app.on_key(key) {
                    if action == Action::Quit {
                        client.handle(Input::Stop);
                        return Ok(());
                    }
                    pending.extend(act(&mut app, &mut client, action));
                }
            }
            Heard::Term(TermEvent::Paste(text)) => {
                for action in app.on_paste(&text) {
                    pending.extend(act(&mut app, &mut client, action));
                }
            }
            Heard::Term(_) => {}
            Heard::Opened(g) if g == link.generation => pending = client.handle(Input::Opened),
            Heard::Frame(g, text) if g == link.generation => pending = client.handle(Input::Frame(&text)),
            Heard::Closed(g) if g == link.generation => {
                link.socket = None;
                pending = client.handle(Input::Closed);
            }
            Heard::TokenChecked(refused) => pending = client.handle(Input::TokenChecked { refused }),
            Heard::Opened(_) | Heard::Frame(..) | Heard::Closed(_) => {} // an old socket's
        }
    }
    client.handle(Input::Stop);
    Ok(())
}

/// Carries out what the dialog asked for: answers and declines go to the client.
fn act(app: &mut App, client: &mut Client, action: Action) -> Vec<Effect> {
    let mut decided = None;
    let (effects, declined, id) = match action {
        Action::Answer { id, answers } => {
            // An approval says what it decided: "Allowed.", "Denied: …".
            let approval = app.inbox.get(&id).is_some_and(|i| i.record.request.approval.as_ref().is_some_and(|a| a.is_permission()));
            decided = approval.then(|| answers.first().map(askuser_core::approval::said)).flatten();
            (client.handle(Input::Answer { id: &id, answers }), false, id)
        }
        Action::Decline { id, chat } => (client.handle(Input::Decline { id: &id, chat }), true, id),
        Action::Bell => {
            let _ = std::io::stdout().write_all(b"\x07");
            return vec![];
        }
        Action::Quit => return vec![],
    };
    let sent = effects.iter().any(|e| matches!(e, Effect::Send(_)));
    let said = match (sent, declined) {
        (true, true) => "Declined: the agent was told not to assume an answer.",
        (true, false) => "Sent.",
        (false, _) => "Saved: it will be sent when the connection is back.",
    };
    let text = match decided {
        Some(decided) if sent => format!("{decided} Sent."),
        Some(decided) => format!("{decided} {said}"),
        None => said.to_owned(),
    };
    app.tell(Some(id), text);
    effects
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_le_bytes(b)
}

/// The socket to the bridge, and the timer the client asked for.
struct Link {
    tx: mpsc::UnboundedSender<Heard>,
    socket: Option<mpsc::UnboundedSender<String>>,
    /// Each socket's number: what an old socket says is ignored.
    generation: u64,
    tick: Option<tokio::time::Instant>,
}

impl Link {
    fn connect(&mut self, find: &impl Fn() -> anyhow::Result<Endpoint>) {
        self.close();
        self.generation += 1;
        let (g, tx) = (self.generation, self.tx.clone());
        let Ok(endpoint) = find() else {
            let _ = tx.send(Heard::Closed(g));
            return;
        };
        let (out, mut outgoing) = mpsc::unbounded_channel::<String>();
        self.socket = Some(out);
        tokio::spawn(async move {
            let Ok(socket) = open(&endpoint).await else {
                let _ = tx.send(Heard::Closed(g));
                return;
            };
            let _ = tx.send(Heard::Opened(g));
            let (mut sink, mut stream) = socket.split();
            loop {
                tokio::select! {
                    text = outgoing.recv() => match text {
                        Some(text) => if sink.send(Message::Text(text.into())).await.is_err() { break },
                        None => {
                            let _ = sink.close().await;
                            return;
                        }
                    },
                    frame = stream.next() => match frame {
                        Some(Ok(Message::Text(t))) => { let _ = tx.send(Heard::Frame(g, t.to_string())); }
                        Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                        Some(Ok(_)) => {}
                    },
                }
            }
            let _ = tx.send(Heard::Closed(g));
        });
    }

    fn send(&self, text: String) {
        if let Some(s) = &self.socket {
            let _ = s.send(text);
        }
    }

    fn close(&mut self) {
        self.socket = None;
        self.tick = None;
    }

    fn check_token(&self, find: &impl Fn() -> anyhow::Result<Endpoint>) {
        let tx = self.tx.clone();
        let Ok(endpoint) = find() else {
            let _ = tx.send(Heard::TokenChecked(false));
            return;
        };
        tokio::spawn(async move {
            let refused = match crate::client::Client::new(endpoint).health().await {
                Err(e) => e.downcast_ref::<crate::client::Refused>().is_some_and(|r| r.status == 401),
                Ok(_) => false,
            };
            let _ = tx.send(Heard::TokenChecked(refused));
        });
    }
}

/// The browser socket, as a tab opens it: the token in the query, the bridge's own
/// origin; over TLS when the bridge speaks it, trusting its pinned certificate.
async fn open(endpoint: &Endpoint) -> anyhow::Result<askuser_bridge::client::Socket> {
    endpoint.check()?;
    let base = endpoint.url.trim_end_matches('/');
    let ws = format!("{}/v1/ui?token={}", base.replacen("http", "ws", 1), endpoint.token);
    let mut request = ws.into_client_request()?;
    request.headers_mut().insert("origin", base.parse()?);
    Ok(tokio::time::timeout(Duration::from_secs(10), askuser_bridge::client::websocket(request, endpoint.fingerprint)).await??)
}

/// Answers given while the bridge was unreachable, kept in the data directory until it
/// acknowledges them (so quitting or a crash loses none), one entry per bridge address.
struct Outbox {
    path: PathBuf,
}

impl Outbox {
    fn at(dir: &Path) -> Outbox {
        Outbox { path: dir.join("tui-outbox.json") }
    }

    fn all(&self) -> serde_json::Map<String, serde_json::Value> {
        std::fs::read_to_string(&self.path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    }

    fn load(&self, url: &str) -> Option<String> {
        self.all().get(url).and_then(|v| v.as_str()).map(str::to_owned)
    }

    fn save(&self, url: &str, saved: Option<&str>) {
        let mut all = self.all();
        match saved {
            Some(text) => all.insert(url.to_owned(), text.into()),
            None => all.remove(url),
        };
        let result = if all.is_empty() {
            std::fs::remove_file(&self.path)
                .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
                .map_err(|e| e.to_string())
        } else {
            files::write_private(&self.path, serde_json::Value::Object(all).to_string().as_bytes()).map_err(|e| format!("{e:#}"))
        };
        if let Err(e) = result {
            tracing::warn!("cannot keep unsent answers in {}: {e:#}", self.path.display());
        }
    }
}
