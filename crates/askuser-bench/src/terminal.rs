//! The terminal dialog (`askuser tui`): a key to a finished frame, as the program does
//! it: the core dialog's step, the view, ratatui's diff of the frame and the escapes
//! for the terminal (written to a sink, so the terminal's own drawing is not counted).

use crate::stats::{ms, Summary};
use askuser::tui::app::App;
use askuser::tui::view::{draw, Look};
use askuser_core::client::State;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::json;
use std::cell::Cell;
use std::fmt::Write as _;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

pub struct Figures {
    pub width: u16,
    pub height: u16,
    pub options: usize,
    pub keys: Summary,
    /// Bytes written to the terminal per key, on average.
    pub bytes: usize,
}

/// `keys` arrow keys (down through the list and back) at each terminal size.
pub fn run(options: usize, keys: usize) -> anyhow::Result<Vec<Figures>> {
    let mut out = Vec::new();
    for (width, height) in [(80, 24), (160, 48)] {
        let mut app = app(options);
        let area = Rect::new(0, 0, width, height);
        let written = Counter::default();
        let backend = CrosstermBackend::new(written.clone());
        let mut terminal = Terminal::with_options(backend, TerminalOptions { viewport: Viewport::Fixed(area) })?;
        let look = Look { color: true, now: 60_000 };
        terminal.draw(|f| draw(f, &mut app, look))?;
        let mut samples = Vec::with_capacity(keys);
        let before = written.0.get();
        for i in 0..keys {
            let down = (i / options).is_multiple_of(2);
            let key = KeyEvent::new(if down { KeyCode::Down } else { KeyCode::Up }, KeyModifiers::NONE);
            let start = Instant::now();
            app.on_key(key);
            terminal.draw(|f| draw(f, &mut app, look))?;
            samples.push(start.elapsed());
        }
        let bytes = (written.0.get() - before) / keys.max(1);
        out.push(Figures { width, height, options, keys: Summary::of(samples), bytes });
    }
    Ok(out)
}

/// A terminal that counts what it is sent.
#[derive(Clone, Default)]
struct Counter(Rc<Cell<usize>>);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn app(options: usize) -> App {
    let choices: Vec<_> = (1..=options)
        .map(|i| json!({"label": format!("Option {i}"), "description": format!("What option {i} means, in a few words")}))
        .collect();
    let request = json!({"questions": [{"question": "Which one?", "header": "Pick", "options": choices}],
        "agent": {"name": "claude-code", "sessionId": "s-1"}});
    let snapshot = json!({"type": "snapshot", "client": "c", "agents": [{"sessionId": "s-1", "name": "claude-code", "connected": true}],
        "questions": [{"id": "q", "status": "pending", "createdAt": 1, "request": request}]});
    let mut app = App::new(false);
    app.connection = (State::Open, 0);
    app.on_event(serde_json::from_value(snapshot).expect("a snapshot"));
    app
}

pub fn table(figures: &[Figures]) -> String {
    let mut out = String::from(
        "## Terminal dialog: key to frame\n\n\
         | terminal | options | keys | p50 ms | p90 ms | p99 ms | max ms | bytes out per key |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        let s = &f.keys;
        let _ = writeln!(
            out,
            "| {}×{} | {} | {} | {} | {} | {} | {} | {} |",
            f.width,
            f.height,
            f.options,
            s.n,
            ms(s.p50),
            ms(s.p90),
            ms(s.p99),
            ms(s.max),
            f.bytes
        );
    }
    out
}
