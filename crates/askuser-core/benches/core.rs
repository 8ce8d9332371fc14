//! The core's per-request costs, measured with criterion:
//! `cargo bench -p askuser-core --bench core` (figures in BENCHMARKS.md).
//!
//! - `normalize/<dialect>`: read + validate one request in each dialect of `examples/`,
//!   from parsed JSON (what the bridge does per ask) and from text (what `askuser
//!   validate` and the agent socket's frame decoding add).
//! - `resolve`: a browser's selection checked against the questions and turned into
//!   answers (what the bridge does per answer).
//! - `dialog/*`: one key event on the dialog state machine, and its `View`.
//! - `format/*`: the canonical result in each output format.

use askuser_core::dialog::{Dialog, DialogOptions};
use askuser_core::{normalize, resolve, AskResult, Format, Limits, Selection};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::Value;
use std::hint::black_box;

const EXAMPLES: [(&str, &str); 4] = [
    ("claude", include_str!("../../../examples/claude.json")),
    ("pi", include_str!("../../../examples/pi.json")),
    ("opal", include_str!("../../../examples/opal.json")),
    ("roo", include_str!("../../../examples/roo.json")),
];
const RESULT: &str = include_str!("../../../examples/result.json");

fn normalize_each_dialect(c: &mut Criterion) {
    let limits = Limits::default();
    let mut group = c.benchmark_group("normalize");
    for (name, text) in EXAMPLES {
        let value: Value = serde_json::from_str(text).expect("the example is JSON");
        normalize(&value, &limits).expect("the example is valid");
        group.bench_function(name, |b| b.iter(|| normalize(black_box(&value), &limits)));
        group.bench_function(format!("{name}_from_text"), |b| b.iter(|| askuser_core::dialect::normalize_str(black_box(text), &limits)));
    }
    group.finish();
}

fn resolve_selection(c: &mut Criterion) {
    let value: Value = serde_json::from_str(EXAMPLES[0].1).expect("the example is JSON");
    let request = normalize(&value, &Limits::default()).expect("valid").request;
    let selections = vec![Selection::option("Jest"), Selection::option("Auth")];
    resolve(&request.questions, &selections).expect("the selection fits");
    c.bench_function("resolve", |b| b.iter(|| resolve(black_box(&request.questions), black_box(&selections))));
}

fn dialog_key(c: &mut Criterion) {
    let value: Value = serde_json::from_str(EXAMPLES[0].1).expect("the example is JSON");
    let request = normalize(&value, &Limits::default()).expect("valid").request;
    let fresh = Dialog::new(&request, DialogOptions::default());
    let mut group = c.benchmark_group("dialog");
    group.bench_function("new", |b| b.iter(|| Dialog::new(black_box(&request), DialogOptions::default())));
    group.bench_function("key_arrow_down", |b| {
        b.iter_batched_ref(|| fresh.clone(), |d| d.key(black_box("ArrowDown")), BatchSize::SmallInput)
    });
    group.bench_function("key_enter_pick", |b| b.iter_batched_ref(|| fresh.clone(), |d| d.key(black_box("Enter")), BatchSize::SmallInput));
    group.bench_function("state_view", |b| b.iter(|| black_box(&fresh).state()));
    group.finish();
}

fn format_result(c: &mut Criterion) {
    let result: AskResult = serde_json::from_str(RESULT).expect("the example result parses");
    let mut group = c.benchmark_group("format");
    for format in [Format::Canonical, Format::Claude, Format::Pi, Format::Text] {
        group.bench_function(format!("{format}_json"), |b| b.iter(|| black_box(&result).to_json(format)));
    }
    group.bench_function("claude_message", |b| b.iter(|| black_box(&result).claude_message()));
    group.bench_function("canonical_to_string", |b| b.iter(|| serde_json::to_string(black_box(&result))));
    group.finish();
}

criterion_group!(benches, normalize_each_dialect, resolve_selection, dialog_key, format_result);
criterion_main!(benches);
