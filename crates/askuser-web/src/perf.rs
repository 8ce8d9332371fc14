//! User Timing entries for the benchmark harness (`askuser-bench --only browser`), on
//! only when the page's address has `perf` in its query (`/?perf#token=…`), so a
//! normal page never grows its performance timeline.
//!
//! For a bridge message or a key, [`begin`] marks the moment it arrived and
//! [`Timing::end`] measures `{name}:paint` from there until a zero-delay timer set in
//! the next animation frame fires: the handler ran, the reactive updates it queued
//! changed the DOM, and that frame was rendered (so it includes waiting for the frame).
//!
//! The harness reads them back with `performance.getEntriesByName(…)` over WebDriver.

use leptos::prelude::{request_animation_frame, set_timeout, window};
use std::cell::Cell;
use std::time::Duration;

thread_local! {
    static ENABLED: bool = window().location().search().is_ok_and(|q| q.contains("perf"));
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

/// The start of something to time.
pub struct Timing {
    start: String,
}

/// Marks now, if timing is on.
pub fn begin() -> Option<Timing> {
    if !ENABLED.with(|on| *on) {
        return None;
    }
    let start = format!("askuser#{}", NEXT.with(|n| n.replace(n.get() + 1)));
    window().performance()?.mark(&start).ok()?;
    Some(Timing { start })
}

impl Timing {
    /// Measures `{name}:paint` from the mark (see the module docs).
    pub fn end(self, name: &str) {
        let name = format!("{name}:paint");
        request_animation_frame(move || set_timeout(move || self.measure(&name), Duration::ZERO));
    }

    fn measure(&self, name: &str) {
        if let Some(perf) = window().performance() {
            let _ = perf.measure_with_start_mark(name, &self.start);
            perf.clear_marks_with_mark_name(&self.start);
        }
    }
}
