//! The whole page: the inbox of pending question sets grouped by agent session, the
//! active one as a [`DialogView`], connection state, notifications and history.
//!
//! The page state ([`Inbox`]) changes only from `askuser:*` events on `window`, never
//! from the socket directly; [`Bridge`] fires those events and carries answers back.

use crate::bridge::{self, Bridge};
use crate::dialog_view::DialogView;
use crate::events;
use crate::history::HistoryPanel;
use crate::inbox::{agent_name, first_rows, waited, Fate, Inbox, Notice};
use crate::notify;
use askuser_core::protocol::{BrowserEvent, Refused};
use askuser_core::Selection;
use leptos::callback::UnsyncCallback;
use leptos::prelude::*;
use serde::Deserialize;
use std::time::Duration;
use wasm_bindgen::JsCast;

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct Connection {
    state: String,
    #[serde(default)]
    attempt: u32,
}

const SWITCH_HELP: &str = "[ ] or Alt+↑/↓ other questions";

/// Question sets the inbox lists at most; the rest are counted (and reached with `]`).
const LISTED: usize = 100;

fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

#[component]
pub fn App() -> impl IntoView {
    let inbox = RwSignal::new(Inbox::default());
    let conn = RwSignal::new(Connection { state: "connecting".into(), attempt: 0 });
    let now = RwSignal::new(now_ms());
    let toast = RwSignal::new(None::<String>);
    let live = RwSignal::new(String::new());
    let show_history = RwSignal::new(false);
    let drawer = RwSignal::new(false);
    let permission = RwSignal::new(notify::permission());
    let sound = RwSignal::new(notify::sound_enabled());
    let snapshot_seen = RwSignal::new(false);

    set_interval(move || _ = now.try_set(now_ms()), Duration::from_secs(5));

    let say = move |text: String| {
        toast.set(Some(text.clone()));
        set_timeout(
            move || {
                if toast.try_get_untracked().flatten().as_deref() == Some(text.as_str()) {
                    _ = toast.try_set(None);
                }
            },
            Duration::from_secs(5),
        );
    };

    // Bridge messages, as window events.
    for name in events::MESSAGE_EVENTS {
        let handle = window_event_listener_untyped(name, move |ev| {
            let Some(msg) = events::detail::<BrowserEvent>(&ev) else { return };
            match &msg {
                BrowserEvent::Snapshot { .. } => _ = snapshot_seen.try_set(true),
                BrowserEvent::Error(Refused { error, .. }) => say(format!("The bridge refused: {}", error.message)),
                _ => {}
            }
            // What this window had typed for a question that closed elsewhere.
            let closing = match &msg {
                BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => Some(id.clone()),
                _ => None,
            };
            let typed = closing.as_deref().and_then(crate::drafts::load).and_then(|d| {
                let texts: Vec<String> = d
                    .questions
                    .iter()
                    .flat_map(|q| [q.other_text.trim(), q.notes.trim()])
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect();
                (!texts.is_empty()).then(|| texts.join(" / "))
            });
            if let Some(id) = &closing {
                crate::drafts::remove(id);
            }
            let notices = inbox
                .try_update(|i| {
                    let notices = i.apply(msg);
                    if let Some(closed) = i.closed.as_mut().filter(|c| Some(&c.id) == closing.as_ref()) {
                        closed.typed = typed;
                    }
                    notices
                })
                .unwrap_or_default();
            for notice in notices {
                let Notice::NewQuestion { agent, text } = notice;
                _ = live.try_set(format!("New question from {agent}: {text}"));
                if notify::hidden() {
                    notify::notify(&format!("{agent} asks"), &text);
                    if sound.try_get_untracked().unwrap_or(false) {
                        notify::beep();
                    }
                }
            }
        });
        on_cleanup(move || handle.remove());
    }
    let handle = window_event_listener_untyped(events::CONNECTION, move |ev| {
        if let Some(c) = events::detail::<Connection>(&ev) {
            _ = conn.try_set(c);
        }
    });
    on_cleanup(move || handle.remove());

    // The title counts pending question sets.
    Effect::new(move |_| {
        let pending = inbox.with(|i| i.pending_count());
        notify::set_title(&notify::title(pending));
    });

    // Switching question sets: [ and ] (outside text fields), Alt+↑ and Alt+↓ anywhere.
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.default_prevented() || ev.ctrl_key() || ev.meta_key() {
            return;
        }
        let in_text = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|e| matches!(e.tag_name().as_str(), "TEXTAREA" | "INPUT"));
        let forward = match (ev.key().as_str(), ev.alt_key()) {
            ("ArrowDown", true) => true,
            ("ArrowUp", true) => false,
            ("]", false) if !in_text => true,
            ("[", false) if !in_text => false,
            _ => return,
        };
        ev.prevent_default();
        inbox.update(|i| i.step(forward));
    });
    on_cleanup(move || handle.remove());

    // Connect last, so no message can arrive before the listeners.
    let token = bridge::take_token();
    let has_token = token.is_some();
    let bridge = StoredValue::new_local(token.and_then(|t| bridge::socket_url(&t)).map(Bridge::start));
    if !has_token {
        conn.set(Connection { state: "closed".into(), attempt: 0 });
    }

    // `Err(chat)`: the person declined (with chat: to talk it over instead).
    let send = move |id: String, answers: Result<Vec<Selection>, bool>| {
        let declined = answers.is_err();
        let sent = bridge.with_value(|b| {
            b.as_ref().map(|b| match answers {
                Ok(a) => b.answer(&id, a),
                Err(chat) => b.cancel(&id, chat),
            })
        });
        inbox.update(|i| i.mark_sent(&id));
        say(match sent {
            Some(true) if declined => "Declined: the agent was told not to assume an answer.".into(),
            Some(true) => "Sent.".into(),
            Some(false) => "Saved: it will be sent when the connection is back.".into(),
            None => "Not sent: this page has no bridge token. Open the link `askuser serve` printed.".into(),
        });
    };

    // A question that closed elsewhere while shown: said beside the next one, with the
    // answer given and anything typed here.
    let closed = Memo::new(move |_| inbox.with(|i| i.closed.clone()));
    let closed_notice = move || {
        closed.get().map(|c| {
            view! {
                <div class="askuser-closed" role="status">
                    <p>{c.text}</p>
                    {c.typed.map(|t| view! { <p class="askuser-muted">"What you had typed here: " {t}</p> })}
                    <button type="button" on:click=move |_| inbox.update(|i| i.dismiss())>"OK"</button>
                </div>
            }
        })
    };

    let active_id = Memo::new(move |_| inbox.with(|i| i.active.clone()));
    let active_panel = move || {
        let Some(id) = active_id.get() else {
            return view! {
                <div class="askuser-empty">
                    <p>{move || if snapshot_seen.get() { "No questions waiting." } else { "Waiting for the bridge…" }}</p>
                    <p class="askuser-muted">"When an agent asks, its question appears here."</p>
                </div>
            }
            .into_any();
        };
        let Some(record) = inbox.with_untracked(|i| i.get(&id).map(|x| x.record.clone())) else { return ().into_any() };
        let fate = {
            let id = id.clone();
            Memo::new(move |_| inbox.with(|i| i.get(&id).map(|x| x.fate)))
        };
        let agent = agent_name(&record);
        let created = record.created_at;
        let nobody_waits = {
            let record = record.clone();
            Memo::new(move |_| inbox.with(|i| i.agent_waiting(&record)) == Some(false))
        };
        let request = record.request.clone();
        let body = move || {
            let id = id.clone();
            match fate.get() {
                Some(Fate::Pending) => {
                    let (a, c) = (id.clone(), id.clone());
                    view! {
                        <DialogView request=request.clone() draft_id=id footer_extra=SWITCH_HELP
                            on_submit=UnsyncCallback::new(move |answers| send(a.clone(), Ok(answers)))
                            on_cancel=UnsyncCallback::new(move |chat| send(c.clone(), Err(chat))) />
                    }
                    .into_any()
                }
                _ => ().into_any(),
            }
        };
        view! {
            <section class="askuser-current" aria-label=format!("Question from {agent}")>
                <p class="askuser-from">
                    <span class="askuser-agent">{agent.clone()}</span>
                    <span class="askuser-muted">{move || format!(" asks · waiting {}", waited(now.get().saturating_sub(created)))}</span>
                </p>
                {move || nobody_waits.get().then(|| view! {
                    <p class="askuser-nobody" role="note">
                        "Nobody is waiting for this answer now: the agent that asked has gone away. Your answer is kept: \
                         the agent gets it if it asks again, and a late-answer hook passes it on if the bridge runs one; \
                         otherwise it reaches nobody, and the question is withdrawn after a while."
                    </p>
                })}
                {body}
            </section>
        }
        .into_any()
    };

    // At most LISTED rows, keyed: an event re-creates only the rows it changed, and a
    // thousand waiting questions cost what a hundred do.
    let listed = Memo::new(move |_| inbox.with(|i| first_rows(i.groups(), LISTED)));
    let inbox_row = move |id: String| {
        let (record, _) = inbox.with_untracked(|i| i.get(&id).map(|x| (x.record.clone(), x.fate)))?;
        let first = record.request.questions.first().map(|q| crate::text::summary(&q.question)).unwrap_or_default();
        let more = record.request.questions.len().saturating_sub(1);
        let created = record.created_at;
        let state = {
            let id = id.clone();
            Memo::new(move |_| inbox.with(|i| (i.active.as_deref() == Some(id.as_str()), i.get(&id).map_or(Fate::Sent, |x| x.fate))))
        };
        let current = move || state.get().0;
        Some(view! {
            <li>
                <button type="button" class="askuser-item" class:current=current
                    aria-current=move || current().then_some("true") disabled=move || state.get().1 == Fate::Sent
                    on:click=move |_| inbox.update(|i| i.select(&id))>
                    <span class="askuser-item-text">{first}</span>
                    {(more > 0).then(|| view! { <span class="askuser-muted">{format!(" +{more} more")}</span> })}
                    // A ticking "waiting N s" is not part of the button's name.
                    <span class="askuser-item-meta" aria-hidden="true">
                        {move || match state.get().1 {
                            Fate::Sent => "sending…".to_owned(),
                            Fate::Pending => format!("waiting {}", waited(now.get().saturating_sub(created))),
                        }}
                    </span>
                </button>
            </li>
        })
    };
    let inbox_list = move || {
        view! {
            <h2 class="askuser-h">"Waiting " <span class="askuser-count">{move || inbox.with(|i| i.pending_count())}</span></h2>
            <For each=move || listed.with(|l| l.0.clone()) key=|g| (g.session.clone(), g.name.clone(), g.connected, g.depth) let(g)>
                {
                    let status = g.connected.map(|c| if c { "connected" } else { "disconnected" });
                    let session = g.session.clone();
                    let ids = move || listed.with(|(gs, _)| gs.iter().find(|x| x.session == session).map(|x| x.items.clone()).unwrap_or_default());
                    view! {
                        <section class="askuser-group" data-depth=g.depth.to_string()>
                            <h3 class="askuser-group-h">
                                {(g.depth > 0).then_some("↳ ")}{g.name}
                                {status.map(|s| view! { <span class=format!("askuser-presence {s}")>{s}</span> })}
                            </h3>
                            <ul><For each=ids key=|id| id.clone() children=inbox_row /></ul>
                        </section>
                    }
                }
            </For>
            {move || {
                let hidden = listed.with(|l| l.1);
                (hidden > 0).then(|| view! { <p class="askuser-muted">{format!("… and {hidden} more waiting (] goes on to them)")}</p> })
            }}
        }
    };

    let client = Signal::derive(move || inbox.with(|i| i.client.clone()));
    let history = move || show_history.get().then(|| view! { <HistoryPanel bridge client /> });

    let banner =
        move || {
            let c = conn.get();
            if !has_token {
                return Some(view! {
                <div class="askuser-banner" role="alert">
                    "No bridge token. Open the link " <code>"askuser serve"</code> " printed (it ends in " <code>"#token=…"</code> ")."
                </div>
            }
            .into_any());
            }
            match c.state.as_str() {
                "reconnecting" => Some(
                    view! {
                        <div class="askuser-banner" role="alert">
                            {format!("Reconnecting… (attempt {})", c.attempt)}
                            " Answers you give now are kept and sent when the connection is back."
                        </div>
                    }
                    .into_any(),
                ),
                "unauthorized" => Some(
                    view! {
                        <div class="askuser-banner" role="alert">
                            "The bridge refused this page's token (was it restarted with a new data directory?). Open the link "
                            <code>"askuser serve"</code> " printed (it ends in " <code>"#token=…"</code> ")."
                        </div>
                    }
                    .into_any(),
                ),
                "closed" => Some(view! { <div class="askuser-banner" role="alert">"Disconnected from the bridge."</div> }.into_any()),
                _ => None,
            }
        };

    let conn_label = move || match conn.get().state.as_str() {
        "open" => "connected",
        "connecting" => "connecting…",
        "reconnecting" => "reconnecting…",
        "unauthorized" => "wrong token",
        _ => "offline",
    };

    view! {
        <div class="askuser-app">
            <header class="askuser-top">
                <h1 class="askuser-title">"askuser"</h1>
                <span class=move || format!("askuser-conn {}", conn.get().state)>{conn_label}</span>
                <span class="askuser-spacer"></span>
                {move || (permission.get() == "default").then(|| view! {
                    <button type="button" on:click=move |_| notify::request_permission(move |p| _ = permission.try_set(p))>
                        "Enable notifications"
                    </button>
                })}
                <button type="button" aria-pressed=move || if sound.get() { "true" } else { "false" }
                    on:click=move |_| {
                        let on = !sound.get_untracked();
                        if on {
                            notify::unlock_audio();
                            notify::beep();
                        }
                        notify::set_sound_enabled(on);
                        sound.set(on);
                    }>
                    "Sound"
                </button>
                // On a narrow screen the inbox is a drawer behind this button.
                <button type="button" class="askuser-drawer-toggle" aria-controls="askuser-inbox"
                    aria-expanded=move || if drawer.get() { "true" } else { "false" }
                    on:click=move |_| drawer.update(|d| *d = !*d)>
                    {move || format!("Waiting ({})", inbox.with(|i| i.pending_count()))}
                </button>
                <button type="button" aria-pressed=move || if show_history.get() { "true" } else { "false" }
                    on:click=move |_| show_history.update(|h| *h = !*h)>
                    "History"
                </button>
            </header>
            {banner}
            <div class="askuser-sr" aria-live="polite">{move || live.get()}</div>
            <div class="askuser-toast" role="status">{move || toast.get()}</div>
            <div class="askuser-layout" class:inbox-open=move || drawer.get()>
                <main class="askuser-active">{closed_notice}{active_panel}</main>
                <nav class="askuser-inbox" id="askuser-inbox" aria-label="Pending questions">{inbox_list}</nav>
            </div>
            {history}
        </div>
    }
}
