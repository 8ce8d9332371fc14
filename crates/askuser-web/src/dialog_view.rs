//! The dialog for one question set: renders [`Dialog::state`] and feeds it keys and
//! clicks. No dialog rule lives here; every decision is `askuser_core::dialog`'s.
//!
//! Keys: the root element gets every `keydown` (from a row, the textarea or a button)
//! and hands `KeyboardEvent.key` to [`Dialog::key`], calling `preventDefault` only when
//! the dialog used it (so Shift+Enter still types a newline). Tab is the browser's; on
//! the question tabs, ←/→/Home/End move between them (the WAI-ARIA tabs pattern), and
//! Enter or Space on a button presses it. Focus follows the dialog's focused row
//! (roving focus), the textarea while editing, and the prompt's default button.
//!
//! Each region (tabs, question, options, text, note, preview, actions, review, prompt)
//! is a small component over the same [`Ctx`].
//!
//! Agent text is only ever rendered as text nodes, an option's `preview` too: read as
//! markdown by `askuser_core::markdown` (in the bridge, which sends the parsed form) and
//! drawn as elements of text nodes in a monospace box, as Claude Code shows it.

use askuser_core::approval::{self, ApprovalView, Change, Shown};
use askuser_core::dialog::{Dialog, DialogOptions, Draft, Effect as DialogEffect, Event, PromptKind, RowView, View};
use askuser_core::markdown::{Align, Block, Doc, Inline};
use askuser_core::text::{segments, Segment};
use askuser_core::{Request, Selection};
use leptos::callback::UnsyncCallback;
use leptos::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use wasm_bindgen::JsCast;

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// The key string [`Dialog::key`] expects: `KeyboardEvent.key`, with a "Shift+" prefix
/// for Shift+Tab and Shift+Enter. `None` for chords the dialog leaves to the browser.
pub fn key_name(ev: &web_sys::KeyboardEvent) -> Option<String> {
    if ev.ctrl_key() || ev.meta_key() || ev.alt_key() || ev.is_composing() {
        return None;
    }
    let key = ev.key();
    Some(if ev.shift_key() && (key == "Tab" || key == "Enter") { format!("Shift+{key}") } else { key })
}

/// What every region of one dialog shares: its state, how to change it, its ids.
#[derive(Clone, Copy)]
struct Ctx {
    dialog: RwSignal<Dialog>,
    view: Memo<View>,
    on_submit: UnsyncCallback<Vec<Selection>>,
    on_cancel: UnsyncCallback<bool>,
    uid: StoredValue<String>,
    /// Notified when something the view does not say changes the room the options have
    /// (the note opened or closed): the list measures it again.
    relayout: Trigger,
}

impl Ctx {
    /// Applies `event` and runs what it ends in (a submit or a decline).
    fn apply(self, event: Event) {
        self.perform(self.dialog.try_update(|d| d.apply(event)).unwrap_or_default());
    }

    fn perform(self, effects: Vec<DialogEffect>) {
        for effect in effects {
            match effect {
                DialogEffect::Submitted { answers } => self.on_submit.run(answers),
                DialogEffect::Cancelled { chat } => self.on_cancel.run(chat),
            }
        }
    }

    fn id(self, part: &str) -> String {
        format!("{}-{part}", self.uid.get_value())
    }

    fn tab_id(self, i: usize) -> String {
        self.id(&format!("tab{i}"))
    }

    fn has_tabs(self) -> bool {
        self.view.with(|v| v.tabs.len() >= 2)
    }
}

fn element(target: Option<web_sys::EventTarget>) -> Option<web_sys::Element> {
    target.and_then(|t| t.dyn_into::<web_sys::Element>().ok())
}

fn is_tab(e: &web_sys::Element) -> bool {
    e.get_attribute("role").as_deref() == Some("tab")
}

/// One question set as an interactive dialog.
///
/// - `draft_id`: when set, the draft is restored from and saved to `localStorage`
///   (`askuser:draft:{id}`) on every change, and removed when the dialog ends.
/// - `footer_extra`: key help the host adds (the inbox's question switching).
/// - `autofocus`: take the keyboard focus when mounted (default true).
/// - `fit`: show as many option rows as the window has room for (the page's own
///   dialog); else [`DialogOptions`]' fixed number (an embedding page's, whose
///   dialog need not be laid out against the window).
#[component]
pub fn DialogView(
    request: Request,
    #[prop(into)] on_submit: UnsyncCallback<Vec<Selection>>,
    /// Runs when the person declines; `true` for "Chat about this".
    #[prop(into)]
    on_cancel: UnsyncCallback<bool>,
    #[prop(optional)] draft_id: Option<String>,
    #[prop(optional, into)] footer_extra: Option<String>,
    #[prop(default = true)] autofocus: bool,
    #[prop(optional)] fit: bool,
) -> impl IntoView {
    let saved = draft_id.as_deref().and_then(crate::drafts::load);
    let dialog = RwSignal::new(match saved {
        Some(d) => Dialog::restore(&request, DialogOptions::default(), d),
        None => Dialog::new(&request, DialogOptions::default()),
    });
    let ctx = Ctx {
        dialog,
        view: Memo::new(move |_| dialog.with(|d| d.state())),
        on_submit,
        on_cancel,
        uid: StoredValue::new(format!("askuser-d{}", NEXT_ID.fetch_add(1, Ordering::Relaxed))),
        relayout: Trigger::new(),
    };
    let view = ctx.view;
    keep_draft(dialog, draft_id);
    track_pointer();
    let root = NodeRef::<leptos::html::Div>::new();

    // Whether the keyboard is on the question tabs: then ←/→/Home/End move between tabs
    // and the focus stays there, even on a free-text question whose arrows move the caret.
    let on_tabs = StoredValue::new(false);
    let on_keydown = move |ev: web_sys::KeyboardEvent| {
        let target = element(ev.target());
        // The notes field is the person's own: keys there only type.
        if target.as_ref().is_some_and(|e| e.has_attribute("data-notes")) {
            return;
        }
        let timing = crate::perf::begin();
        let Some(key) = key_name(&ev) else { return };
        let tab_event = match key.as_str() {
            _ if !target.as_ref().is_some_and(is_tab) => None,
            "ArrowRight" => Some(Event::NextTab),
            "ArrowLeft" => Some(Event::PrevTab),
            "Home" => Some(Event::GoTab { index: 0 }),
            "End" => Some(Event::GoTab { index: view.with_untracked(|v| v.tabs.len().saturating_sub(1)) }),
            _ => None,
        };
        if let Some(event) = tab_event {
            ev.prevent_default();
            on_tabs.set_value(true);
            return ctx.apply(event);
        }
        // Enter and Space on a button or a summary are the browser's: they press it (the
        // Decline button declines rather than confirming the question).
        let pressable = target.as_ref().is_some_and(|e| matches!(e.tag_name().as_str(), "BUTTON" | "SUMMARY"));
        if pressable && (key == "Enter" || key == " ") {
            return;
        }
        let outcome = dialog.try_update(|d| d.key(&key)).unwrap_or_default();
        if outcome.handled {
            ev.prevent_default();
        }
        ctx.perform(outcome.effects);
        if let Some(timing) = timing {
            timing.end("askuser:key");
        }
    };
    follow_focus(view, root, on_tabs, autofocus);

    let docs = StoredValue::new(request.preview_docs.clone());
    let previews = Memo::new(move |_| {
        view.with(|v| {
            docs.with_value(|d| {
                let question = v.question.as_ref().map(|q| q.index);
                option_previews(&v.rows, d.as_ref().zip(question).and_then(|(d, q)| d.get(q)))
            })
        })
    });
    let focused = Memo::new(move |_| view.with(|v| v.rows.iter().find(|r| r.focused).map(|r| r.index)));
    if fit {
        fit_rows(ctx, root);
    }
    let hint = Memo::new(move |_| view.with(|v| v.hint.clone()));
    let outcome = Memo::new(move |_| view.with(|v| v.outcome.clone()));
    let footer = Memo::new(move |_| view.with(|v| v.footer.clone()));
    let panel_label = move || ctx.has_tabs().then(|| ctx.tab_id(view.with(|v| v.active_tab)));
    view! {
        <div class="askuser-dialog" role="dialog" aria-label="Question"
            aria-describedby=move || view.with(|v| v.question.is_some()).then(|| ctx.id("text"))
            node_ref=root on:keydown=on_keydown
            on:focusin=move |ev| on_tabs.set_value(element(ev.target()).is_some_and(|e| is_tab(&e)))>
            <TabBar ctx />
            <div role=move || ctx.has_tabs().then_some("tabpanel") id=ctx.id("panel") aria-labelledby=panel_label
                class="askuser-panel" class:with-preview=move || previews.with(|p| !p.is_empty())>
                <div class="askuser-main">
                    <QuestionText ctx />
                    <OptionList ctx />
                    <AnswerText ctx />
                    <Notes ctx />
                    <Review ctx />
                </div>
                {move || previews.with(|p| !p.is_empty()).then(|| view! { <PreviewSlot previews focused /> })}
            </div>
            <Prompt ctx />
            <Actions ctx />
            <p class="askuser-hint" role="status">{move || hint.get()}</p>
            {move || outcome.get().map(|said| view! { <p class="askuser-done" role="status">{said}</p> })}
            <p class="askuser-footer">{move || footer.get()}{footer_extra.map(|f| format!(" • {f}"))}</p>
        </div>
    }
}

/// Persists the draft on every change; forgets it once the dialog has ended.
fn keep_draft(dialog: RwSignal<Dialog>, draft_id: Option<String>) {
    let Some(id) = draft_id else { return };
    let last_saved = StoredValue::new(None::<Draft>);
    Effect::new(move |_| {
        let (draft, done) = dialog.with(|d| (d.draft(), d.done()));
        if done.is_some() {
            crate::drafts::remove(&id);
        } else if last_saved.with_value(|l| l.as_ref() != Some(&draft)) {
            crate::drafts::save(&id, &draft);
            last_saved.set_value(Some(draft));
        }
    });
}

/// Focus follows the dialog: the active tab while the keyboard is on the tabs, the
/// prompt's default button, the textarea while editing, the Submit button on the review
/// tab, else the focused row. It only moves focus that is already inside the dialog or
/// nowhere (or on first render with `autofocus`), and never out of the notes field.
fn follow_focus(view: Memo<View>, root: NodeRef<leptos::html::Div>, on_tabs: StoredValue<bool>, autofocus: bool) {
    let first = StoredValue::new(autofocus);
    Effect::new(move |_| {
        let v = view.get();
        let Some(root) = root.get() else { return };
        let document = document();
        // A re-render can remove the focused element (a new tab's rows), which drops the
        // focus to <body>: that counts as the dialog's too.
        let body: Option<web_sys::Element> = document.body().map(Into::into);
        let active = document.active_element();
        let inside = active.as_ref().is_none_or(|a| root.contains(Some(a)) || Some(a) == body.as_ref());
        if (!inside && !first.get_value()) || active.is_some_and(|a| a.has_attribute("data-notes")) {
            return;
        }
        first.set_value(false);
        let selector = if v.done.is_some() {
            return;
        } else if on_tabs.get_value() && v.prompt.is_none() {
            "[role=tab][aria-selected=true]".to_owned()
        } else if v.prompt.is_some() {
            "[data-default]".to_owned()
        } else if v.editing {
            "textarea.askuser-other".to_owned()
        } else if v.on_submit_tab {
            "[data-submit]".to_owned()
        } else {
            match v.rows.iter().find(|r| r.focused) {
                Some(r) => format!("[data-row=\"{}\"]", r.index),
                None => return,
            }
        };
        if let Ok(Some(el)) = root.query_selector(&selector) {
            if document.active_element().as_ref() != Some(&el) {
                if let Some(el) = el.dyn_ref::<web_sys::HtmlElement>() {
                    let _ = el.focus();
                }
            }
        }
    });
}

/// The fewest option rows a long list shows, however little room there is.
const MIN_ROWS: usize = 3;
/// The room kept free under the dialog's buttons, in CSS pixels.
const BOTTOM_MARGIN: f64 = 12.0;
/// The preview box's tallest on a narrow screen, as a share of the window's height:
/// web/style.css's `max-height: 25vh` for `.askuser-preview` there.
const NARROW_PREVIEW: f64 = 0.25;
/// How tall a "↑/↓ N more" button is when none is drawn to measure: web/style.css's
/// `min-height` for `.askuser-more` (a row's height stood in for it: 66 to 130 px for
/// an option with a description on a phone).
const MORE_HEIGHT: f64 = 44.0;

/// The list shows as many option rows as the room the dialog has on the screen holds
/// (the terminal does the same with its lines): measured in the page once the dialog is
/// drawn, again when the window changes size, the question or its answer box or preview
/// changes, the note opens or closes, or anything else changes the page's height (a
/// notice above the dialog dismissed, a banner gone: issue 50 D12, where the list kept
/// the 3 rows it had been measured with and left the room they freed empty), and
/// handed to the dialog as [`Event::Resize`]. Never fewer than [`MIN_ROWS`].
fn fit_rows(ctx: Ctx, root: NodeRef<leptos::html::Div>) {
    let sent = StoredValue::new(0usize);
    // Every row's height as last drawn, by (tab, row), so the list decides from the rows'
    // own heights, also of rows it does not show now (a short Other row under options
    // with a description). Forgotten when the window's size changes.
    let known = StoredValue::new(std::collections::HashMap::<(usize, usize), f64>::new());
    let fit = move || {
        let Some(Some(root)) = root.try_get_untracked() else { return };
        let Some((tab, total, previews)) = ctx.view.try_with_untracked(|v| (v.active_tab, v.rows.len(), has_previews(&v.rows))) else {
            return;
        };
        let Some(rows) = known.try_update_value(|k| rows_that_fit(&root, tab, total, previews, k)).flatten() else { return };
        if sent.try_get_value().is_some_and(|s| s != rows) {
            sent.try_set_value(rows);
            ctx.apply(Event::Resize { viewport: rows });
        }
    };
    // Measured once the browser has laid the page out.
    let later = move || request_animation_frame(fit);
    // What changes the room the rows have: the question shown, its answer box, whether
    // it has a preview, a prompt in place of the buttons.
    let layout = Memo::new(move |_| {
        ctx.view.with(|v| {
            let answer_box = v.editing || v.rows.last().is_some_and(|r| r.is_other && r.selected);
            (v.active_tab, answer_box, has_previews(&v.rows), v.prompt.is_some())
        })
    });
    Effect::new(move |_| {
        layout.track();
        ctx.relayout.track();
        later();
    });
    let resized = window_event_listener(leptos::ev::resize, move |_| {
        known.update_value(|k| k.clear());
        later();
    });
    // The page's height changes with anything above or below the list that grows or
    // shrinks (and with the list itself: measured again, it sends nothing new).
    let on_change = wasm_bindgen::closure::Closure::<dyn Fn()>::new(later);
    let observer = web_sys::ResizeObserver::new(on_change.as_ref().unchecked_ref()).ok();
    if let (Some(observer), Some(body)) = (&observer, document().body()) {
        observer.observe(&body);
    }
    let observing = StoredValue::new_local((observer, on_change));
    on_cleanup(move || {
        resized.remove();
        observing.with_value(|(observer, _)| observer.as_ref().map(web_sys::ResizeObserver::disconnect));
    });
}

fn rect(e: &web_sys::Element) -> web_sys::DomRect {
    e.get_bounding_client_rect()
}

fn elements(root: &web_sys::Element, css: &str) -> Vec<web_sys::Element> {
    let Ok(nodes) = root.query_selector_all(css) else { return Vec::new() };
    (0..nodes.length()).filter_map(|i| nodes.item(i)?.dyn_into().ok()).collect()
}

/// A length property of `e` as laid out (`row-gap`), in pixels; 0 if it is none.
fn computed_px(e: &web_sys::Element, property: &str) -> f64 {
    let style = window().get_computed_style(e).ok().flatten();
    let value = style.and_then(|s| s.get_property_value(property).ok()).unwrap_or_default();
    value.trim().trim_end_matches("px").parse().unwrap_or(0.0)
}

/// How many of the question's `total` rows (on tab `tab`) the list can show with
/// everything below it down to the buttons still inside the window (the page at the
/// top), or `None` when there is no list to measure (free text, the review, a prompt,
/// the dialog hidden). `known` keeps the rows' heights as drawn (see [`fit_rows`]).
///
/// Every row is shown when all of them, each as tall as it was drawn (one never drawn
/// as the tallest), take no more room than the window, or than the rows a windowed list
/// would show (no "↓ 1 more" in place of the one row it hides). A windowed list's rows
/// are as tall as the tallest, and it keeps room for both "↑ N more" and "↓ N more", so
/// moving through it never pushes the buttons down. A preview beside the options lets
/// the list grow as tall as it; one below them (a narrow screen) is given the room of
/// its box at its tallest, whichever option is highlighted.
fn rows_that_fit(
    root: &web_sys::Element,
    tab: usize,
    total: usize,
    previews: bool,
    known: &mut std::collections::HashMap<(usize, usize), f64>,
) -> Option<usize> {
    let height = window().inner_height().ok()?.as_f64()?;
    let list = root.query_selector(".askuser-list").ok()??;
    let actions = root.query_selector(".askuser-actions").ok()??;
    let rows = elements(&list, ".askuser-row");
    let (first, last) = (rect(rows.first()?), rect(rows.last()?));
    for row in &rows {
        let drawn = rect(row).height();
        if let Some(index) = row.get_attribute("data-row").and_then(|i| i.parse().ok()).filter(|_| drawn >= 1.0) {
            known.insert((tab, index), drawn);
        }
    }
    let drawn = |i: usize| known.get(&(tab, i)).copied();
    let tallest = (0..total).filter_map(drawn).fold(0.0, f64::max);
    if tallest < 1.0 {
        return None;
    }
    let gap = computed_px(&list, "row-gap");
    let pitch = tallest + gap;
    let more = elements(&list, ".askuser-more");
    let more_pitch = more.first().map_or(MORE_HEIGHT, |m| rect(m).height()) + gap;
    let list_box = rect(&list);
    // The list's own padding and borders.
    let frame = (list_box.height() - (last.bottom() - first.top()) - more.len() as f64 * more_pitch).max(0.0);
    let mut below = rect(&actions).bottom() - list_box.bottom();
    if let (Ok(Some(panel)), Ok(Some(main))) = (root.query_selector(".askuser-panel"), root.query_selector(".askuser-main")) {
        below -= (rect(&panel).bottom() - rect(&main).bottom()).max(0.0);
        let columns = window()
            .get_computed_style(&panel)
            .ok()
            .flatten()
            .and_then(|s| s.get_property_value("grid-template-columns").ok())
            .map_or(1, |c| c.split_whitespace().count());
        if previews && columns < 2 {
            below += computed_px(&panel, "row-gap") + NARROW_PREVIEW * height;
        }
    }
    let top = list_box.top() + window().scroll_y().unwrap_or(0.0);
    let room = height - BOTTOM_MARGIN - top - below - frame;
    let fit = (((room - 2.0 * more_pitch + gap) / pitch).floor().max(0.0) as usize).max(MIN_ROWS);
    let windowed = fit as f64 * pitch + 2.0 * more_pitch - gap;
    let every: f64 = (0..total).map(|i| drawn(i).unwrap_or(tallest) + gap).sum::<f64>() - gap;
    Some(if every <= room.max(windowed) { total } else { fit })
}

fn has_previews(rows: &[RowView]) -> bool {
    rows.iter().any(|r| r.preview.is_some())
}

/// An option's preview: its text, and its markdown as the bridge parsed it.
#[derive(Clone, PartialEq)]
struct Preview {
    index: usize,
    label: String,
    text: String,
    doc: Option<Doc>,
}

/// The previews of the question's options, with their parsed forms (`docs`, the
/// question's row of [`askuser_core::Request::preview_docs`]) when the request has them.
fn option_previews(rows: &[RowView], docs: Option<&Vec<Option<Doc>>>) -> Vec<Preview> {
    rows.iter()
        .filter_map(|r| {
            let doc = docs.and_then(|d| d.get(r.index)).cloned().flatten();
            Some(Preview { index: r.index, label: r.label.clone(), text: r.preview.clone()?, doc })
        })
        .collect()
}

/// The highlighted option's preview, and only its: an option without one shows none
/// (never another option's under the wrong label), and says so.
///
/// Every preview of the question is also drawn unseen in the same place (hidden from
/// eyes, screen readers and the keyboard), so the place is as tall as the tallest:
/// moving through the options (a mouse passing over them too) never changes the page's
/// height, and nothing jumps under the pointer. Beside the options (a wide screen) it
/// keeps its column; under them (a narrow one) a touch screen drops it when there is
/// nothing to show.
#[component]
fn PreviewSlot(previews: Memo<Vec<Preview>>, focused: Memo<Option<usize>>) -> impl IntoView {
    let shown = Memo::new(move |_| {
        let f = focused.get()?;
        previews.with(|p| p.iter().find(|p| p.index == f).cloned())
    });
    view! {
        <div class="askuser-preview-slot" class:none=move || shown.with(Option::is_none)>
            {move || match shown.get() {
                Some(p) => view! {
                    <pre class="askuser-preview askuser-md" tabindex="0" role="region" aria-label=format!("Preview of {}", p.label) use:preview_markdown=p></pre>
                }.into_any(),
                None => view! { <p class="askuser-preview-none">"No preview for this option"</p> }.into_any(),
            }}
            {move || previews.get().into_iter().map(|p| view! {
                <pre class="askuser-preview-sizer askuser-md" aria-hidden="true" use:preview_markdown=p></pre>
            }).collect_view()}
        </div>
    }
}

/// The question tabs (with two or more questions), and Submit.
#[component]
fn TabBar(ctx: Ctx) -> impl IntoView {
    let tabs = Memo::new(move |_| ctx.view.with(|v| (v.tabs.clone(), v.active_tab)));
    move || {
        let (list, active) = tabs.get();
        (list.len() >= 2).then(|| {
            let buttons = list
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    // Submit is where the answers are reviewed and sent, never itself
                    // "answered" (the core's flag there says every question is).
                    let answered = t.answered && !t.is_submit;
                    let mark = if answered { "✓ " } else { "" };
                    view! {
                        <button type="button" role="tab" id=ctx.tab_id(i) class="askuser-tab"
                            class:submit=t.is_submit class:answered=answered
                            aria-selected=if i == active { "true" } else { "false" }
                            aria-controls=ctx.id("panel") tabindex=if i == active { "0" } else { "-1" }
                            on:click=move |_| ctx.apply(Event::GoTab { index: i })>
                            <span aria-hidden="true">{mark}</span>{t.label}
                            {answered.then(|| view! { <span class="askuser-sr">" (answered)"</span> })}
                        </button>
                    }
                })
                .collect_view();
            view! { <div role="tablist" class="askuser-tabs" aria-label="Questions">{buttons}</div> }
        })
    }
}

/// The question's chip, kind and text; an approval's tool, what it asks and what will
/// happen.
#[component]
fn QuestionText(ctx: Ctx) -> impl IntoView {
    let question = Memo::new(move |_| ctx.view.with(|v| v.question.clone()));
    let approval = ctx.view.with_untracked(|v| v.approval.clone());
    if let Some(approval) = approval {
        return approval_text(ctx, approval).into_any();
    }
    (move || {
        question.get().map(|q| {
            let kind = q.kind();
            view! {
                <div class="askuser-question">
                    <div class="askuser-meta">
                        {q.header.map(|h| view! { <span class="askuser-chip">{h}</span> })}
                        <span class="askuser-kind">{kind}</span>
                    </div>
                    <div class="askuser-text" id=ctx.id("text")>{rich_text(&q.text)}</div>
                </div>
            }
        })
    })
    .into_any()
}

/// An approval as what will happen: a command, a diff whose lines a screen reader hears
/// as added or removed, a new file's head, or the arguments by name. Text nodes only.
fn approval_text(ctx: Ctx, a: ApprovalView) -> impl IntoView {
    let shown = match a.shown {
        Shown::Command { command, .. } => {
            view! { <pre class="askuser-command"><code><span aria-hidden="true">"$ "</span>{command}</code></pre> }.into_any()
        }
        Shown::Diff { file, lines } => {
            let lines = lines
                .into_iter()
                .map(|line| {
                    let class = match line.change {
                        Change::Added => "askuser-added",
                        Change::Removed => "askuser-removed",
                        Change::Same => "askuser-same",
                        Change::Gap => "askuser-gap",
                    };
                    let mark = match line.change {
                        Change::Added => "+ ",
                        Change::Removed => "- ",
                        Change::Same => "  ",
                        Change::Gap => "…",
                    };
                    let spoken = line.spoken().map(|s| view! { <span class="askuser-sr">{format!("{s}: ")}</span> });
                    view! { <span class=class>{spoken}<span aria-hidden="true">{mark}</span>{line.text}</span> }
                })
                .collect_view();
            view! { <pre class="askuser-diff" tabindex="0" aria-label=format!("Changes to {file}")><code>{lines}</code></pre> }.into_any()
        }
        Shown::Write { head, total, .. } => {
            let more =
                (total > head.len()).then(|| view! { <p class="askuser-more-lines">{format!("… {} more lines", total - head.len())}</p> });
            view! { <pre class="askuser-file" tabindex="0" aria-label="The file's first lines"><code>{head.join("\n")}</code></pre>{more} }
                .into_any()
        }
        Shown::Fetch { .. } => ().into_any(),
        Shown::Call { args } => {
            let args = args.into_iter().map(|(name, value)| view! { <dt>{name}</dt><dd>{value}</dd> }).collect_view();
            view! { <dl class="askuser-args">{args}</dl> }.into_any()
        }
    };
    view! {
        <div class="askuser-question askuser-approval">
            <div class="askuser-meta">
                <span class="askuser-chip">{a.tool}</span>
                <span class="askuser-kind">"Approval"</span>
            </div>
            <div class="askuser-text" id=ctx.id("text")>
                <p class="askuser-approval-title">{a.title}</p>
                {shown}
                {a.reason.map(|r| view! { <p class="askuser-why">"Why: "{r}</p> })}
            </div>
        </div>
    }
}

/// The options: a window of rows that the keys, the wheel and a finger's swipe move a
/// row at a time, and the "↑/↓ N more" buttons a page. Rows are keyed by (question,
/// row), so focus and hover survive re-renders.
#[component]
fn OptionList(ctx: Ctx) -> impl IntoView {
    let view = ctx.view;
    let visible = Memo::new(move |_| {
        view.with(|v| match &v.question {
            Some(q) if !q.free_text => {
                let end = v.window.end.min(v.rows.len());
                v.rows[v.window.start.min(end)..end].iter().map(|r| (q.index, r.index)).collect()
            }
            _ => Vec::new(),
        })
    });
    let window = Memo::new(move |_| view.with(|v| (v.window.above, v.window.below)));
    // The row to focus to scroll one row down (`true`) or up, if the list can move.
    let step = move |down: bool| {
        let (above, below) = window.get_untracked();
        view.with_untracked(|v| match down {
            true if below > 0 => Some(v.window.end),
            false if above > 0 => Some(v.window.start.saturating_sub(1)),
            _ => None,
        })
    };
    const ROW: f64 = 40.0;
    // The wheel (and a touchpad) scrolls the list as far as it turned, a row per 40 px:
    // a mouse's notch (100-120 px) about three rows, a touchpad's small steps adding up.
    // At the list's end the page scrolls instead.
    let turned = StoredValue::new(0.0_f64);
    let on_wheel = move |ev: web_sys::WheelEvent| {
        let dy = match ev.delta_mode() {
            web_sys::WheelEvent::DOM_DELTA_LINE => ev.delta_y() * ROW,
            web_sys::WheelEvent::DOM_DELTA_PAGE => ev.delta_y() * ROW * 5.0,
            _ => ev.delta_y(),
        };
        if dy == 0.0 || step(dy > 0.0).is_none() {
            turned.set_value(0.0);
            return;
        }
        ev.prevent_default();
        let total = turned.get_value() + dy;
        let rows = (total / ROW).trunc();
        turned.set_value(total - rows * ROW);
        let index = view.with_untracked(|v| {
            let (w, last) = (v.window, v.rows.len().saturating_sub(1));
            match rows as i64 {
                0 => None,
                n if n > 0 => Some((w.end.saturating_sub(1) + n as usize).min(last)),
                n => Some(w.start.saturating_sub(n.unsigned_abs() as usize)),
            }
        });
        if let Some(index) = index {
            ctx.apply(Event::Focus { index });
        }
    };
    // A finger swiping on the list scrolls it a row per row height it travels (the list
    // shows a window of rows, so the browser has nothing to scroll natively).
    let swipe = StoredValue::new(None::<(i32, f64)>);
    let on_pointerdown = move |ev: web_sys::PointerEvent| {
        if ev.pointer_type() == "touch" {
            swipe.set_value(Some((ev.pointer_id(), f64::from(ev.client_y()))));
        }
    };
    let on_pointermove = move |ev: web_sys::PointerEvent| {
        let Some((id, from)) = swipe.get_value().filter(|(id, _)| *id == ev.pointer_id()) else { return };
        let dy = f64::from(ev.client_y()) - from;
        // Finger up: later rows come into view.
        if let Some(index) = step(dy < 0.0).filter(|_| dy.abs() >= ROW) {
            swipe.set_value(Some((id, from + ROW * dy.signum())));
            ctx.apply(Event::Focus { index });
        }
    };
    let end_swipe = move |_: web_sys::PointerEvent| swipe.set_value(None);
    let multi = Memo::new(move |_| view.with(|v| v.question.as_ref().is_some_and(|q| q.multi_select)));
    let listed = Memo::new(move |_| view.with(|v| v.question.as_ref().is_some_and(|q| !q.free_text)));
    // The row to focus to move the list a page down (`true`) or up, as Page Down does:
    // the rows shown less one, so one row stays in view.
    let page = move |down: bool| {
        view.with_untracked(|v| {
            let w = v.window;
            let page = (w.end - w.start).saturating_sub(1).max(1);
            match down {
                true if w.below > 0 => Some((w.end - 1 + page).min(v.rows.len().saturating_sub(1))),
                false if w.above > 0 => Some(w.start.saturating_sub(page)),
                _ => None,
            }
        })
    };
    let more = move |down: bool| {
        let count = move || if down { window.get().1 } else { window.get().0 };
        move || {
            (count() > 0).then(|| {
                let arrow = if down { "↓" } else { "↑" };
                view! {
                    <button type="button" class="askuser-more" tabindex="-1"
                        on:click=move |_| if let Some(index) = page(down) { ctx.apply(Event::Focus { index }) }>
                        {format!("{arrow} {} more", count())}
                    </button>
                }
            })
        }
    };
    move || {
        listed.get().then(|| {
            view! {
                <div class="askuser-list" role=move || if multi.get() { "group" } else { "radiogroup" }
                    aria-labelledby=ctx.id("text") on:wheel=on_wheel on:pointerdown=on_pointerdown
                    on:pointermove=on_pointermove on:pointerup=end_swipe on:pointercancel=end_swipe>
                    {more(false)}
                    <For each=move || visible.get() key=|k| *k let((q, i))><OptionRow ctx q i multi=multi.get_untracked() /></For>
                    {more(true)}
                </div>
            }
        })
    }
}

/// Option `i` of question `q`: a radio or a checkbox.
#[component]
fn OptionRow(ctx: Ctx, q: usize, i: usize, multi: bool) -> impl IntoView {
    let view = ctx.view;
    let (label, description, number, count) = view.with_untracked(|v| {
        let count = v.rows.len();
        // An approval's rows show their keys (a, A, d); a question's their numbers.
        let number = |r: &RowView| match v.approval {
            Some(_) => r.key.clone(),
            None => r.number.map(|n| format!("{n}.")),
        };
        v.rows.get(i).map(|r| (r.label.clone(), r.description.clone(), number(r), count)).unwrap_or_default()
    });
    let row_id = ctx.id(&format!("q{q}-r{i}"));
    let (label_id, desc_id) = (format!("{row_id}-l"), format!("{row_id}-d"));
    let described = description.is_some().then(|| desc_id.clone());
    let flag = move |f: fn(&RowView) -> bool| {
        move || view.with(|v| v.question.as_ref().is_some_and(|qv| qv.index == q) && v.rows.get(i).is_some_and(f))
    };
    let focused = flag(|r| r.focused);
    let selected = flag(|r| r.selected);
    view! {
        <div role=if multi { "checkbox" } else { "radio" } class="askuser-row" data-row=i.to_string()
            tabindex=move || if focused() { "0" } else { "-1" } aria-checked=move || if selected() { "true" } else { "false" }
            // Radios may say where they sit in a long list; checkboxes may not (ARIA).
            aria-setsize=(!multi).then(|| count.to_string()) aria-posinset=(!multi).then(|| (i + 1).to_string())
            aria-labelledby=label_id.clone() aria-describedby=described
            class:focused=focused class:selected=selected
            on:click=move |_| ctx.apply(Event::Pick { index: i })
            on:pointermove=move |ev: web_sys::PointerEvent| {
                if moved(&ev) {
                    ctx.apply(Event::Focus { index: i });
                }
            }>
            <span class="askuser-mark" aria-hidden="true"></span>
            <span class="askuser-num" aria-hidden="true">{number}</span>
            <span class="askuser-label" id=label_id.clone()>{label}</span>
            {description.map(|d| view! { <span class="askuser-desc" id=desc_id>{d}</span> })}
        </div>
    }
}

thread_local! {
    /// Where the pointer was on the screen at the page's last `pointermove`, and whether
    /// that event moved it (see [`moved`]).
    static POINTER: std::cell::Cell<(Option<(i32, i32)>, bool)> = const { std::cell::Cell::new((None, false)) };
}

/// Whether a mouse or pen really moved: only a moving pointer moves the highlight. A
/// pointer resting on the page while a new question set is drawn under it (a browser
/// then reports a move to the row it is over, where it already was) must not move the
/// focus, or Enter would answer with the row under it (issue 50: "Always allow"). Each
/// `pointermove` anywhere in the page is compared, on the screen (a scroll moves
/// nothing), with the one before it; the first one knows no other and moves nothing.
/// Touch moves nothing either (a finger scrolls the list).
fn moved(ev: &web_sys::PointerEvent) -> bool {
    track_pointer();
    ev.pointer_type() != "touch" && POINTER.get().1
}

/// Listens (once, in the capture phase, so before any row) to every `pointermove`.
fn track_pointer() {
    thread_local!(static ON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if ON.replace(true) {
        return;
    }
    let record = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::PointerEvent)>::new(|ev: web_sys::PointerEvent| {
        let at = (ev.screen_x(), ev.screen_y());
        let (before, _) = POINTER.get();
        POINTER.set((Some(at), before.is_some_and(|b| b != at)));
    });
    _ = document().add_event_listener_with_callback_and_bool("pointermove", record.as_ref().unchecked_ref(), true);
    record.forget();
}

/// The typed answer: shown while editing, whenever it holds text, and always for free text.
#[component]
fn AnswerText(ctx: Ctx) -> impl IntoView {
    let view = ctx.view;
    let shown = Memo::new(move |_| {
        view.with(|v| {
            v.question.as_ref().is_some_and(|q| q.free_text || v.editing || v.rows.last().is_some_and(|r| r.is_other && r.selected))
        })
    });
    let free_text = Memo::new(move |_| view.with(|v| v.question.as_ref().is_some_and(|q| q.free_text)));
    let approval = view.with_untracked(|v| v.approval.is_some());
    let (label, placeholder) = if approval {
        ("Why you deny it (the agent reads this)", "What should the agent do instead? (optional)")
    } else {
        // Keys are the footer's to say, not the field's: a placeholder is read as content.
        ("", "Type your answer")
    };
    move || {
        shown.get().then(|| {
            view! {
                <textarea class="askuser-other" rows="3"
                    aria-label=move || match (approval, free_text.get()) {
                        (true, _) => label,
                        (false, true) => "Your answer",
                        (false, false) => "Your answer (Other)",
                    }
                    placeholder=placeholder
                    prop:value=move || view.with(|v| v.other_text.clone())
                    on:focus=move |_| {
                        if !view.with_untracked(|v| v.editing) {
                            ctx.apply(Event::Other);
                        }
                    }
                    on:input=move |ev| ctx.apply(Event::SetText { text: event_target_value(&ev) })></textarea>
            }
        })
    }
}

/// A note for the agent about the current question (Claude Code's per-question notes).
#[component]
fn Notes(ctx: Ctx) -> impl IntoView {
    let view = ctx.view;
    let has_question = Memo::new(move |_| view.with(|v| v.question.is_some()));
    move || {
        has_question.get().then(|| {
            let open = view.with_untracked(|v| !v.notes.is_empty());
            view! {
                <details class="askuser-notes" open=open on:toggle=move |ev| {
                    ctx.relayout.notify();
                    focus_note(ev);
                }>
                    <summary>"Add a note for the agent"</summary>
                    <textarea data-notes="" rows="2" aria-label="Note for the agent (optional)"
                        placeholder="Anything the agent should know about this answer"
                        prop:value=move || view.with(|v| v.notes.clone())
                        on:input=move |ev| ctx.apply(Event::Notes { text: event_target_value(&ev) })></textarea>
                </details>
            }
        })
    }
}

/// Opening the note from its summary (Enter, Space, a click or a tap) puts the caret in
/// it, so the keys that follow are the note's and never a shortcut: typing "use v2" must
/// not pick option 2 and send it (issue 29). A note opened by a restored draft does not
/// take the focus.
fn focus_note(ev: web_sys::Event) {
    let Some(details) = element(ev.target()) else { return };
    let active = document().active_element();
    let from_summary = active.is_some_and(|a| a.tag_name() == "SUMMARY" && details.contains(Some(a.as_ref())));
    if !details.has_attribute("open") || !from_summary {
        return;
    }
    if let Ok(Some(note)) = details.query_selector("textarea[data-notes]") {
        if let Some(note) = note.dyn_ref::<web_sys::HtmlElement>() {
            let _ = note.focus();
        }
    }
}

/// Every action has a button: the mouse and touch need no key.
#[component]
fn Actions(ctx: Ctx) -> impl IntoView {
    let actions = Memo::new(move |_| ctx.view.with(|v| (v.done.is_none() && v.prompt.is_none(), v.on_submit_tab, v.tabs.len() >= 2)));
    let approval = ctx.view.with_untracked(|v| v.approval.is_some());
    // An approval's choices, as its rows have them: Allow, Always allow, Always allow
    // exactly (where the rule is a prefix), Deny.
    let choices: Vec<String> = ctx.view.with_untracked(|v| v.rows.iter().filter(|r| !r.is_other).map(|r| r.label.clone()).collect());
    move || {
        let (open, on_submit_tab, several) = actions.get();
        if approval {
            // An approval's buttons say what they do: one "no" (Deny, with what was typed
            // under it), and each "Always" described by the row that names its rule.
            let choices = choices.clone();
            return open
                .then(|| {
                    let buttons = choices
                        .into_iter()
                        .enumerate()
                        .map(|(i, label)| {
                            let action = match label.as_str() {
                                approval::ALLOW => "allow",
                                approval::ALWAYS => "always",
                                approval::ALWAYS_EXACTLY => "always-exactly",
                                _ => "deny",
                            };
                            let described = action.starts_with("always").then(|| ctx.id(&format!("q0-r{i}-d")));
                            view! {
                                <button type="button" class:askuser-primary=(action == "allow") data-action=action
                                    aria-describedby=described on:click=move |_| ctx.apply(Event::Quick { number: i + 1 })>{label}</button>
                            }
                        })
                        .collect_view();
                    view! { <div class="askuser-actions">{buttons}</div> }
                })
                .into_any();
        }
        open.then(|| {
            let primary = (!on_submit_tab).then(|| {
                let label = if several { "Next" } else { "Submit" };
                view! { <button type="button" class="askuser-primary" data-action="enter" on:click=move |_| ctx.apply(Event::Commit)>{label}</button> }
            });
            view! {
                <div class="askuser-actions">
                    {primary}
                    <button type="button" data-action="decline" on:click=move |_| ctx.apply(Event::Decline)>"Decline"</button>
                    <button type="button" data-action="chat" aria-keyshortcuts="c"
                        title="Decline and talk the question over with the agent instead (c)"
                        on:click=move |_| ctx.apply(Event::Chat)>"Chat about this"</button>
                </div>
            }
        })
        .into_any()
    }
}

/// The Submit tab: every answer, what is missing, and Submit.
#[component]
fn Review(ctx: Ctx) -> impl IntoView {
    let review = Memo::new(move |_| ctx.view.with(|v| v.on_submit_tab.then(|| (v.review.clone(), v.unanswered.clone()))));
    move || {
        review.get().map(|(items, unanswered)| {
            let list = items
                .into_iter()
                .map(|item| {
                    let (index, unanswered) = (item.index, item.answer.is_none());
                    view! {
                        <li class:unanswered=unanswered>
                            <button type="button" class="askuser-link"
                                on:click=move |_| ctx.apply(Event::GoTab { index })>{item.label}</button>
                            <span class="askuser-review-q">{item.question}</span>
                            <span class="askuser-review-a">{item.answer.unwrap_or_else(|| "Not answered".into())}</span>
                        </li>
                    }
                })
                .collect_view();
            let missing = (!unanswered.is_empty()).then(|| {
                view! { <p class="askuser-missing">"Not answered yet: " {unanswered.join("; ")}</p> }
            });
            view! {
                <div class="askuser-review">
                    <h2 class="askuser-h">"Review your answers"</h2>
                    <ul>{list}</ul>
                    {missing}
                    <button type="button" class="askuser-primary" data-submit=""
                        on:click=move |_| ctx.apply(Event::Enter)>"Submit answers"</button>
                </div>
            }
        })
    }
}

/// A confirmation ("Discard 2 answers?", "Answer is long…") with its two buttons.
#[component]
fn Prompt(ctx: Ctx) -> impl IntoView {
    let prompt = Memo::new(move |_| ctx.view.with(|v| v.prompt.clone()));
    move || {
        prompt.get().map(|p| {
            let kind = match p.kind {
                PromptKind::Discard { .. } => "discard",
                PromptKind::LongAnswer { .. } => "long",
            };
            view! {
                <div role="alertdialog" aria-modal="true" class="askuser-prompt" data-kind=kind aria-labelledby=ctx.id("prompt")>
                    <p id=ctx.id("prompt")>{p.text}</p>
                    {(!p.lost.is_empty()).then(|| view! {
                        <ul class="askuser-lost" aria-label="What would be lost">
                            {p.lost.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}
                        </ul>
                    })}
                    // The button Enter presses is the primary one, and comes first.
                    <div class="askuser-buttons" class:no-first=!p.default_yes>
                        <button type="button" class:askuser-primary=p.default_yes data-default=p.default_yes.then_some("")
                            data-answer="yes" on:click=move |_| ctx.apply(Event::Confirm { yes: true })>{p.yes}</button>
                        <button type="button" class:askuser-primary=!p.default_yes data-default=(!p.default_yes).then_some("")
                            data-answer="no" on:click=move |_| ctx.apply(Event::Confirm { yes: false })>{p.no}</button>
                    </div>
                </div>
            }
        })
    }
}

/// An option's preview read as markdown: headings, paragraphs (their lines kept), code
/// blocks, lists, quotes and tables as elements whose every string is a text node; a
/// link is its text and its URL, not a link (nothing in a preview is followed).
///
/// The markdown is parsed by the bridge ([`askuser_core::Request::preview_docs`]): the
/// parser is not in the page (it was 150 KB of its wasm; issue 51). A request without
/// them (mounted by hand, from an older bridge) shows the preview's text as it is.
fn preview_markdown(el: web_sys::Element, preview: Preview) {
    // Drawn with the DOM's own calls, not views: a preview is drawn once and never
    // updated in place, and views for every block and inline kind cost 20 KB of wasm.
    // Run again on the same element, it draws afresh.
    el.set_text_content(None);
    let Some(doc) = preview.doc else { return add_text(&el, &preview.text) };
    md_blocks(&el, &doc.blocks);
    if doc.truncated {
        add(&el, "p", Some("askuser-md-more")).set_text_content(Some("… (the rest of the preview is too long to show)"));
    }
}

/// A new `tag` element, with `class` if any, appended to `parent`.
fn add(parent: &web_sys::Element, tag: &str, class: Option<&str>) -> web_sys::Element {
    let el = parent.owner_document().and_then(|d| d.create_element(tag).ok()).expect("a document makes elements");
    if let Some(class) = class {
        el.set_class_name(class);
    }
    let _ = parent.append_child(&el);
    el
}

/// `text` as a text node appended to `parent` (never parsed as HTML).
fn add_text(parent: &web_sys::Element, text: &str) {
    let _ = parent.append_with_str_1(text);
}

fn md_blocks(parent: &web_sys::Element, blocks: &[Block]) {
    for block in blocks {
        md_block(parent, block);
    }
}

fn md_block(parent: &web_sys::Element, block: &Block) {
    match block {
        Block::Heading { level, content } => {
            let p = add(parent, "p", Some(&format!("askuser-md-h askuser-md-h{level}")));
            md_inlines(&add(&p, "strong", None), content);
        }
        Block::Paragraph(content) => md_inlines(&add(parent, "p", Some("askuser-md-p")), content),
        Block::Code { lang, text } => {
            let pre = add(parent, "pre", Some("askuser-md-code"));
            if let Some(lang) = lang {
                let _ = pre.set_attribute("data-lang", lang);
            }
            add_text(&add(&pre, "code", None), text);
        }
        Block::List { start, items } => {
            let list = add(parent, if start.is_some() { "ol" } else { "ul" }, Some("askuser-md-list"));
            if let Some(n) = start {
                let _ = list.set_attribute("start", &n.to_string());
            }
            for item in items {
                md_blocks(&add(&list, "li", None), item);
            }
        }
        Block::Quote(blocks) => md_blocks(&add(parent, "blockquote", Some("askuser-md-quote")), blocks),
        Block::Rule => {
            add(parent, "hr", Some("askuser-md-rule"));
        }
        Block::Table(table) => {
            let class = |i: usize| match table.align.get(i) {
                Some(Align::Left) => Some("askuser-md-left"),
                Some(Align::Center) => Some("askuser-md-center"),
                Some(Align::Right) => Some("askuser-md-right"),
                Some(Align::None) | None => None,
            };
            let t = add(&add(parent, "div", Some("askuser-md-table")), "table", None);
            let head = add(&add(&t, "thead", None), "tr", None);
            for (i, cell) in table.head.iter().enumerate() {
                md_inlines(&add(&head, "th", class(i)), cell);
            }
            let body = add(&t, "tbody", None);
            for row in &table.rows {
                let tr = add(&body, "tr", None);
                for (i, cell) in row.iter().enumerate() {
                    md_inlines(&add(&tr, "td", class(i)), cell);
                }
            }
        }
    }
}

fn md_inlines(parent: &web_sys::Element, inlines: &[Inline]) {
    for inline in inlines {
        match inline {
            Inline::Text(text) => add_text(parent, text),
            Inline::Strong(c) => md_inlines(&add(parent, "strong", None), c),
            Inline::Emphasis(c) => md_inlines(&add(parent, "em", None), c),
            Inline::Strike(c) => md_inlines(&add(parent, "s", None), c),
            Inline::Code(code) => add_text(&add(parent, "code", Some("askuser-md-inline")), code),
            Inline::Link { content, url } => {
                md_inlines(&add(parent, "span", Some("askuser-md-link")), content);
                if !Inline::is_bare_link(content, url) {
                    add_text(&add(parent, "span", Some("askuser-md-url")), &format!(" ({url})"));
                }
            }
            // A new line as text: the paragraph keeps its lines (white-space: pre-wrap),
            // and the box's text is the preview's own.
            Inline::Break => add_text(parent, "\n"),
        }
    }
}

/// Question text with `code` and ```blocks``` as elements; every piece is a text node.
pub fn rich_text(text: &str) -> impl IntoView {
    segments(text)
        .into_iter()
        .map(|s| match s {
            Segment::Text(t) => view! { <span>{t}</span> }.into_any(),
            Segment::Code(c) => view! { <code>{c}</code> }.into_any(),
            Segment::Block(b) => view! { <pre><code>{b}</code></pre> }.into_any(),
        })
        .collect_view()
}

/// A mounted [`DialogView`]; dropping it (or [`DialogHandle::unmount`]) removes the
/// dialog and its reactive state.
#[must_use = "dropping the handle unmounts the dialog"]
pub struct DialogHandle {
    _inner: Box<dyn std::any::Any>,
}

impl DialogHandle {
    pub fn unmount(self) {}
}

/// Mounts one dialog for `request` into `element` (the embed package's entry point).
/// The draft is kept in `localStorage` under the request's `id`, when it has one.
pub fn mount_dialog(
    element: web_sys::HtmlElement,
    request: Request,
    on_submit: impl Fn(Vec<Selection>) + 'static,
    on_cancel: impl Fn(bool) + 'static,
) -> DialogHandle {
    let draft_id = request.id.clone();
    let on_submit = UnsyncCallback::new(on_submit);
    let on_cancel = UnsyncCallback::new(on_cancel);
    let handle = leptos::mount::mount_to(element, move || match draft_id {
        Some(id) => view! { <DialogView request on_submit on_cancel draft_id=id /> }.into_any(),
        None => view! { <DialogView request on_submit on_cancel /> }.into_any(),
    });
    DialogHandle { _inner: Box::new(handle) }
}
