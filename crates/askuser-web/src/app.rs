//! The whole page: the inbox of pending question sets grouped by agent session, the
//! active one as a [`DialogView`], connection state, notifications and history.
//!
//! The page state ([`Inbox`]) changes only from the bridge client's [`FromBridge`]s
//! ([`crate::events`]), never from the socket directly; [`Bridge`] carries answers back.
//! Each region is a small component over the same few signals ([`Page`]).

use crate::bridge::{self, Bridge};
use crate::dialog_view::DialogView;
use crate::events::{self, FromBridge};
use crate::history::HistoryPanel;
use crate::notify;
use askuser_core::client::State;
use askuser_core::inbox::{agent_name, assignee, first_rows, waited, Fate, Inbox, Notice, Show};
use askuser_core::protocol::{BrowserEvent, Refused};
use askuser_core::Selection;
use leptos::callback::UnsyncCallback;
use leptos::prelude::*;
use std::time::Duration;
use wasm_bindgen::JsCast;

const SWITCH_HELP: &str = "[ ] or Alt+↑/↓ other questions";

/// Question sets the inbox lists at most; the rest are counted (and reached with `]`).
const LISTED: usize = 100;

fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

/// The page's state, shared by its regions (every field is a `Copy` signal handle).
#[derive(Clone, Copy)]
struct Page {
    inbox: RwSignal<Inbox>,
    connection: RwSignal<(State, u32)>,
    /// Now, in ms, refreshed every few seconds for the waiting times.
    now: RwSignal<u64>,
    toast: RwSignal<Option<String>>,
    /// What a screen reader announces (new questions).
    live: RwSignal<String>,
    show_history: RwSignal<bool>,
    /// The inbox drawer on narrow screens.
    drawer: RwSignal<bool>,
    sound: RwSignal<bool>,
    snapshot_seen: RwSignal<bool>,
    /// When the inbox shown was kept (ms), while no snapshot came from the bridge yet.
    kept_at: RwSignal<Option<u64>>,
    has_token: bool,
    /// The page's token, for its own requests (pairing a device).
    token: StoredValue<Option<String>>,
    show_pair: RwSignal<bool>,
    /// The "Push even when closed" panel (Web Push to this device).
    show_push: RwSignal<bool>,
    show_rules: RwSignal<bool>,
    /// The page's notification permission ("granted", ...: [`notify::permission`]).
    permission: RwSignal<&'static str>,
    bridge: StoredValue<Option<Bridge>, LocalStorage>,
}

impl Page {
    /// Shows `text` for five seconds.
    fn say(self, text: String) {
        let toast = self.toast;
        toast.set(Some(text.clone()));
        set_timeout(
            move || {
                if toast.try_get_untracked().flatten().as_deref() == Some(text.as_str()) {
                    _ = toast.try_set(None);
                }
            },
            Duration::from_secs(5),
        );
    }

    /// Applies one update from the bridge client.
    fn apply(self, update: &FromBridge) {
        let msg = match update {
            FromBridge::Connection { state, attempt } => {
                _ = self.connection.try_set((*state, *attempt));
                return;
            }
            FromBridge::Event(msg) => msg,
        };
        match msg {
            BrowserEvent::Snapshot { .. } => {
                _ = self.snapshot_seen.try_set(true);
                _ = self.kept_at.try_set(None);
            }
            BrowserEvent::Error(Refused { error, .. }) => self.say(format!("The bridge refused: {}", error.message)),
            _ => {}
        }
        // What this window had typed for a question that closed elsewhere.
        let closing = match msg {
            BrowserEvent::Answered { id, .. } | BrowserEvent::Withdrawn { id, .. } => Some(id.clone()),
            _ => None,
        };
        let typed = closing.as_deref().and_then(crate::drafts::load).and_then(|d| d.typed());
        if let Some(id) = &closing {
            crate::drafts::remove(id);
        }
        let notices = self
            .inbox
            .try_update(|i| {
                let notices = i.apply(msg);
                if let Some(closed) = i.closed.as_mut().filter(|c| Some(&c.id) == closing.as_ref()) {
                    closed.typed = typed;
                }
                notices
            })
            .unwrap_or_default();
        for Notice::NewQuestion { agent, text } in notices {
            _ = self.live.try_set(format!("New question from {agent}: {text}"));
            if notify::hidden() {
                notify::notify(&format!("{agent} asks"), &text);
                if self.sound.try_get_untracked().unwrap_or(false) {
                    notify::beep();
                }
            }
        }
    }

    /// Sends an answer (`Ok`) or a decline (`Err(chat)`) and says what became of it.
    fn send(self, id: &str, answers: Result<Vec<Selection>, bool>) {
        let declined = answers.is_err();
        // An approval says what it decided ("Allowed.", "Denied: …"), for the eye and the ear.
        let approval =
            self.inbox.with_untracked(|i| i.get(id).is_some_and(|q| q.record.request.approval.as_ref().is_some_and(|a| a.is_permission())));
        let decided = match &answers {
            Ok(a) if approval => a.first().map(askuser_core::approval::said),
            _ => None,
        };
        let sent = self.bridge.with_value(|b| {
            b.as_ref().map(|b| match answers {
                Ok(a) => b.answer(id, a),
                Err(chat) => b.cancel(id, chat),
            })
        });
        self.inbox.update(|i| i.mark_sent(id));
        self.say(match sent {
            Some(true) if declined => "Declined: the agent was told not to assume an answer.".into(),
            Some(true) => decided.unwrap_or_else(|| "Sent.".into()),
            Some(false) => "Saved: it will be sent when the connection is back.".into(),
            None => "Not sent: this page has no bridge token. Open the link `askuser serve` printed.".into(),
        });
    }
}

#[component]
pub fn App() -> impl IntoView {
    // Before the token: `#token=…&q=ID` keeps the token for `take_token`.
    let wanted = RwSignal::new(take_question().or_else(last_active));
    let token = bridge::take_token();
    let page = Page {
        inbox: RwSignal::new(Inbox::default()),
        connection: RwSignal::new((if token.is_some() { State::Connecting } else { State::Closed }, 0)),
        now: RwSignal::new(now_ms()),
        toast: RwSignal::new(None),
        live: RwSignal::new(String::new()),
        show_history: RwSignal::new(false),
        drawer: RwSignal::new(false),
        sound: RwSignal::new(notify::sound_enabled()),
        snapshot_seen: RwSignal::new(false),
        kept_at: RwSignal::new(None),
        has_token: token.is_some(),
        token: StoredValue::new(token.clone()),
        show_pair: RwSignal::new(false),
        show_push: RwSignal::new(false),
        show_rules: RwSignal::new(false),
        permission: RwSignal::new(notify::permission()),
        bridge: StoredValue::new_local(None),
    };
    set_interval(move || _ = page.now.try_set(now_ms()), Duration::from_secs(5));

    // The bridge may have written the waiting question into the page: the app takes it
    // over (what was chosen there, and that question open) once it has an inbox to show,
    // and the person is not pressing or typing in it: until then the bridge's updates wait,
    // in order, so a tap never lands on a form that is being replaced.
    let held: StoredValue<Option<Vec<FromBridge>>, LocalStorage> = StoredValue::new_local(None);
    let subscription = events::subscribe(move |update| {
        let snapshot = matches!(update, FromBridge::Event(BrowserEvent::Snapshot { .. }));
        let holding = held.with_value(Option::is_some);
        if holding || (snapshot && crate::first::busy()) {
            held.update_value(|h| h.get_or_insert_with(Vec::new).push(update.clone()));
            if !holding {
                release_when_idle(page, wanted, held);
            }
            return;
        }
        if snapshot {
            // What the person started answering there; else the question set this tab
            // showed before a reload, if any.
            adopt_first(wanted);
        }
        page.apply(update)
    });
    if let Some(token) = token.clone() {
        crate::first::open_session(token);
    }
    on_cleanup(move || drop(subscription));

    if let Some(said) = crate::pairing::just_paired() {
        page.say(said);
    }
    // A reload opens the question set being answered, not the first one listed.
    Effect::new(move |_| {
        if let Some(id) = page.inbox.with(|i| i.active.clone()) {
            remember_active(&id);
        }
    });

    // The title counts pending question sets.
    Effect::new(move |_| notify::set_title(&notify::title(page.inbox.with(|i| i.pending_count()))));

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
        page.inbox.update(|i| i.step(forward));
    });
    on_cleanup(move || handle.remove());

    // `#q=ID` (a tapped notification opens the page there, or changes an open page's
    // hash): that question, as soon as the inbox has it.
    Effect::new(move |_| {
        let Some(id) = wanted.get() else { return };
        if page.inbox.with(|i| i.get(&id).is_some()) {
            wanted.set(None);
            page.inbox.update(|i| i.select(&id));
        }
    });
    let handle = window_event_listener(leptos::ev::hashchange, move |_| {
        if let Some(id) = take_question() {
            wanted.set(Some(id));
        }
    });
    on_cleanup(move || handle.remove());

    // Connect last, so no update can come before the subscription.
    let url = token.and_then(|t| bridge::socket_url(&t));
    page.bridge.set_value(url.clone().map(Bridge::start));
    if let Some(url) = url {
        keep_inbox(page, bridge::storage_key(&url).to_owned());
    }

    let client = Signal::derive(move || page.inbox.with(|i| i.client.clone()));
    let bridge = page.bridge;
    view! {
        <div class="askuser-app">
            <Header page />
            <Banner page />
            <Announce page />
            <div class="askuser-sr" aria-live="polite">{move || page.live.get()}</div>
            <div class="askuser-toast" role="status">{move || page.toast.get()}</div>
            <div class="askuser-layout" class:inbox-open=move || page.drawer.get()>
                <main class="askuser-active"><ClosedNotice page /><ActiveQuestion page /></main>
                <nav class="askuser-inbox" id="askuser-inbox" aria-label="Pending questions"><InboxList page /></nav>
            </div>
            {move || page.show_history.get().then(|| view! { <HistoryPanel bridge client /> })}
            {move || page.show_pair.get().then(|| {
                let on_close = Callback::new(move |()| page.show_pair.set(false));
                view! { <crate::pairing::PairPanel token=page.token.get_value() on_close /> }
            })}
            {move || page.show_push.get().then(|| {
                let on_close = Callback::new(move |()| page.show_push.set(false));
                view! { <crate::push::PushPanel token=page.token.get_value() permission=page.permission on_close /> }
            })}
            {move || page.show_rules.get().then(|| {
                let on_close = Callback::new(move |()| page.show_rules.set(false));
                view! { <crate::rules::RulesPanel token=page.token.get_value() on_close /> }
            })}
        </div>
    }
}

/// Where this tab keeps the question set it shows, for a reload.
const ACTIVE_KEY: &str = "askuser:active";

fn remember_active(id: &str) {
    if let Some(session) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
        let _ = session.set_item(ACTIVE_KEY, id);
    }
}

/// The question set this tab showed before it was reloaded.
fn last_active() -> Option<String> {
    web_sys::window()?.session_storage().ok()??.get_item(ACTIVE_KEY).ok()?
}

/// The question `#q=ID` names, taken out of the address (the rest of the hash stays).
fn take_question() -> Option<String> {
    let window = web_sys::window()?;
    let location = window.location();
    let hash = location.hash().ok()?;
    let (wanted, rest): (Vec<&str>, Vec<&str>) = hash.trim_start_matches('#').split('&').partition(|kv| kv.starts_with("q="));
    let id = wanted.last()?.trim_start_matches("q=");
    let id = js_sys::decode_uri_component(id).ok().and_then(|s| s.as_string()).unwrap_or_else(|| id.to_owned());
    let rest = rest.join("&");
    let hash = if rest.is_empty() { String::new() } else { format!("#{rest}") };
    let clean = format!("{}{}{hash}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&clean));
    }
    Some(id).filter(|id| !id.is_empty())
}

/// Once the person stops pressing or typing in the bridge's form: takes it over, then
/// applies the updates held meanwhile, in order.
fn release_when_idle(page: Page, wanted: RwSignal<Option<String>>, held: StoredValue<Option<Vec<FromBridge>>, LocalStorage>) {
    if crate::first::busy() {
        set_timeout(move || release_when_idle(page, wanted, held), Duration::from_millis(150));
        return;
    }
    adopt_first(wanted);
    for update in held.try_update_value(Option::take).flatten().unwrap_or_default() {
        page.apply(&update);
    }
}

/// Takes over the bridge's first-paint form (see `first.rs`): what was chosen or typed
/// there becomes its question's draft, and that question opens.
fn adopt_first(wanted: RwSignal<Option<String>>) {
    if let Some((id, engaged)) = crate::first::adopt() {
        if engaged || wanted.get_untracked().is_none() {
            wanted.set(Some(id));
        }
    }
}

/// Shows the inbox kept from the last visit until the bridge sends its own (nothing from
/// the socket arrives before this returns), and keeps the inbox shown from then on, at
/// most twice a second.
fn keep_inbox(page: Page, key: String) {
    let kept = if crate::first::present() { None } else { crate::kept::load(&key) };
    if let Some((saved, kept)) = kept {
        page.inbox.update(|i| {
            i.apply(&kept);
            for id in page.bridge.with_value(|b| b.as_ref().map(Bridge::queued_ids).unwrap_or_default()) {
                i.mark_sent(&id);
            }
        });
        page.kept_at.set(Some(saved));
    }
    let waiting = StoredValue::new(false);
    Effect::new(move |_| {
        page.inbox.track();
        if !page.snapshot_seen.get_untracked() || waiting.get_value() {
            return;
        }
        waiting.set_value(true);
        let key = key.clone();
        set_timeout(
            move || {
                waiting.set_value(false);
                page.inbox.with_untracked(|i| crate::kept::save(&key, i));
            },
            Duration::from_millis(500),
        );
    });
}

/// The title, the connection, and the page's buttons.
#[component]
fn Header(page: Page) -> impl IntoView {
    let permission = page.permission;
    let label = move || match page.connection.get().0 {
        State::Open => "connected",
        State::Connecting => "connecting…",
        State::Reconnecting => "reconnecting…",
        State::Unauthorized => "wrong token",
        State::Closed => "offline",
    };
    let pressed = |on: bool| if on { "true" } else { "false" };
    // On a phone the tools hide behind one button: the question stays near the top.
    let menu = RwSignal::new(false);
    view! {
        <header class="askuser-top">
            <h1 class="askuser-title">"askuser"</h1>
            <span class=move || format!("askuser-conn {}", page.connection.get().0.as_str())>{label}</span>
            <span class="askuser-spacer"></span>
            // On a narrow screen the inbox is a drawer behind this button.
            <button type="button" class="askuser-drawer-toggle" aria-controls="askuser-inbox"
                aria-expanded=move || pressed(page.drawer.get())
                on:click=move |_| page.drawer.update(|d| *d = !*d)>
                {move || format!("Waiting ({})", page.inbox.with(|i| i.pending_count()))}
            </button>
            <button type="button" class="askuser-menu-toggle" aria-label="More" aria-controls="askuser-tools"
                aria-expanded=move || pressed(menu.get()) on:click=move |_| menu.update(|m| *m = !*m)>
                "⋯"
            </button>
            <div id="askuser-tools" class="askuser-tools" class:open=move || menu.get()>
            {move || (permission.get() == "default").then(|| view! {
                // Notifications from this page while it is open (in another tab or behind a
                // window); Web Push below reaches the device with no page open.
                <button type="button" on:click=move |_| notify::request_permission(move |p| _ = permission.try_set(p))>
                    "Notify while open"
                </button>
            })}
            <button type="button" aria-pressed=move || pressed(page.sound.get())
                on:click=move |_| {
                    let on = !page.sound.get_untracked();
                    if on {
                        notify::unlock_audio();
                        notify::beep();
                    }
                    notify::set_sound_enabled(on);
                    page.sound.set(on);
                }>
                "Sound"
            </button>
            <button type="button" aria-pressed=move || pressed(page.show_history.get())
                on:click=move |_| page.show_history.update(|h| *h = !*h)>
                "History"
            </button>
            <button type="button" aria-pressed=move || pressed(page.show_pair.get())
                on:click=move |_| page.show_pair.update(|p| *p = !*p)>
                "Pair a device"
            </button>
            <button type="button" aria-pressed=move || pressed(page.show_push.get())
                on:click=move |_| page.show_push.update(|p| *p = !*p)>
                "Push even when closed"
            </button>
            <button type="button" aria-pressed=move || pressed(page.show_rules.get())
                on:click=move |_| page.show_rules.update(|r| *r = !*r)>
                "Rules"
            </button>
            </div>
        </header>
    }
}

/// What is wrong with the connection, and what to do about it.
#[component]
fn Banner(page: Page) -> impl IntoView {
    let link = || view! { "Open the link " <code>"askuser serve"</code> " printed (it ends in " <code>"#token=…"</code> ")." };
    move || {
        let (state, attempt) = page.connection.get();
        let text = if !page.has_token {
            view! { "No bridge token. " {link()} }.into_any()
        } else {
            match state {
                State::Reconnecting => {
                    let kept = page
                        .kept_at
                        .get()
                        .map(|at| format!(" Showing the questions as they were {} ago.", waited(page.now.get().saturating_sub(at))));
                    let queued = match page.inbox.with(|i| i.sent_count()) {
                        0 => String::new(),
                        1 => " 1 answer waits to be sent.".into(),
                        n => format!(" {n} answers wait to be sent."),
                    };
                    view! {
                        {format!("Reconnecting… (attempt {attempt})")}
                        {kept}
                        " Answers you give now are kept and sent when the connection is back."
                        {queued}
                    }
                    .into_any()
                }
                State::Unauthorized => {
                    view! { "The bridge refused this page's token (was it restarted with a new data directory?). " {link()} }.into_any()
                }
                State::Closed => view! { "Disconnected from the bridge." }.into_any(),
                State::Connecting | State::Open => return None,
            }
        };
        // Reconnecting is announced once, by `Announce`; the banner, redrawn on every
        // attempt, is read when visited. A refused token or a closed connection, once.
        // A named section, so the banner is in a landmark as the rest of the page is.
        let reconnecting = state == State::Reconnecting && page.has_token;
        Some(view! {
            <section class="askuser-banner" aria-label="Connection" role=(!reconnecting).then_some("alert")>{text}</section>
        })
    }
}

/// What a screen reader hears of the connection: once when it is lost and once when
/// it is back, not on every attempt in between.
#[component]
fn Announce(page: Page) -> impl IntoView {
    let said = RwSignal::new(String::new());
    let lost = StoredValue::new(false);
    Effect::new(move |_| {
        let state = page.connection.get().0;
        match state {
            State::Reconnecting if !lost.get_value() => {
                lost.set_value(true);
                said.set("Connection to the bridge lost. Answers you give now are kept and sent when it is back.".into());
            }
            State::Open if lost.get_value() => {
                lost.set_value(false);
                said.set("Connected to the bridge again.".into());
            }
            _ => {}
        }
    });
    view! { <div class="askuser-sr askuser-announce" role="status">{move || said.get()}</div> }
}

/// A question that closed elsewhere while shown: said beside the next one, with the
/// answer given and anything typed here.
#[component]
fn ClosedNotice(page: Page) -> impl IntoView {
    let closed = Memo::new(move |_| page.inbox.with(|i| i.closed.clone()));
    move || {
        closed.get().map(|c| {
            view! {
                <div class="askuser-closed" role="status">
                    <p>{c.text}</p>
                    {c.typed.map(|t| view! { <p class="askuser-muted">"What you had typed here: " {t}</p> })}
                    <button type="button" on:click=move |_| page.inbox.update(|i| i.dismiss())>"OK"</button>
                </div>
            }
        })
    }
}

/// The active question set: who asks, since when, and its dialog.
#[component]
fn ActiveQuestion(page: Page) -> impl IntoView {
    let inbox = page.inbox;
    let active_id = Memo::new(move |_| inbox.with(|i| i.active.clone()));
    move || {
        let Some(id) = active_id.get() else {
            return view! {
                <div class="askuser-empty">
                    <p>{move || if page.snapshot_seen.get() { "No questions waiting." } else { "Waiting for the bridge…" }}</p>
                    <p class="askuser-muted">"When an agent asks, its question appears here."</p>
                    <p class="askuser-muted askuser-next">
                        "To let an agent ask, run " <code>"askuser setup claude-code"</code>
                        " (or " <code>"codex"</code> ", " <code>"gemini-cli"</code> ", " <code>"cursor"</code> ") and start it again."
                    </p>
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
        let request = record.request;
        let schedule = {
            let request = request.clone();
            move || askuser_core::remind::schedule_line(&request, created, page.now.get())
        };
        let body = move || {
            (fate.get() == Some(Fate::Pending)).then(|| {
                let (a, c) = (id.clone(), id.clone());
                view! {
                    <DialogView request=request.clone() draft_id=id.clone() footer_extra=SWITCH_HELP fit=true
                        on_submit=UnsyncCallback::new(move |answers| page.send(&a, Ok(answers)))
                        on_cancel=UnsyncCallback::new(move |chat| page.send(&c, Err(chat))) />
                }
            })
        };
        view! {
            <section class="askuser-current" aria-label=format!("Question from {agent}")>
                <p class="askuser-from">
                    <span class="askuser-agent">{agent.clone()}</span>
                    // And when its next reminder goes out and its default applies, if it
                    // asked for them (in the same text: a node of its own costs the wasm more).
                    <span class="askuser-muted">{move || {
                        let mut line = format!(" asks · waiting {}", waited(page.now.get().saturating_sub(created)));
                        if let Some(schedule) = schedule() {
                            line.push_str(" · ");
                            line.push_str(&schedule);
                        }
                        line
                    }}</span>
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
    }
}

/// Every waiting question set, grouped by agent session (sub-agents under parents).
/// At most [`LISTED`] rows, keyed: an event re-creates only the rows it changed, and a
/// thousand waiting questions cost what a hundred do.
#[component]
fn InboxList(page: Page) -> impl IntoView {
    let inbox = page.inbox;
    let listed = Memo::new(move |_| inbox.with(|i| first_rows(i.groups(), LISTED)));
    view! {
        <h2 class="askuser-h">"Waiting " <span class="askuser-count">{move || inbox.with(|i| i.pending_count())}</span></h2>
        // A person's page lists what is for them, their teams, or everything.
        {move || inbox.with(|i| i.viewer.is_some()).then(|| view! {
            <div class="askuser-show" role="group" aria-label="Show">
                {Show::ALL.into_iter().enumerate().map(|(n, show)| view! {
                    <button type="button" class="askuser-chip-btn"
                        aria-pressed=move || (inbox.with(|i| i.show) == show).to_string()
                        on:click=move |_| inbox.update(|i| i.show = show)>
                        {move || format!("{} ({})", show.label(), inbox.with(|i| i.show_counts()[n]))}
                    </button>
                }).collect_view()}
            </div>
        })}
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
                        <ul><For each=ids key=|id| id.clone() let(id)><InboxItem page id /></For></ul>
                    </section>
                }
            }
        </For>
        {move || {
            let hidden = listed.with(|l| l.1);
            (hidden > 0).then(|| view! { <p class="askuser-muted">{format!("… and {hidden} more waiting (] goes on to them)")}</p> })
        }}
    }
}

/// One question set in the inbox.
#[component]
fn InboxItem(page: Page, id: String) -> impl IntoView {
    let inbox = page.inbox;
    let (record, _) = inbox.with_untracked(|i| i.get(&id).map(|x| (x.record.clone(), x.fate)))?;
    let first = askuser_core::inbox::headline(&record.request);
    let more = record.request.questions.len().saturating_sub(1);
    let to = assignee(&record).map(|to| format!("for {to}"));
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
                {to.map(|to| view! { <span class="askuser-for">{to}</span> })}
                // A ticking "waiting N s" is not part of the button's name.
                <span class="askuser-item-meta" aria-hidden="true">
                    {move || match state.get().1 {
                        Fate::Sent => "sending…".to_owned(),
                        Fate::Pending => format!("waiting {}", waited(page.now.get().saturating_sub(created))),
                    }}
                </span>
            </button>
        </li>
    })
}
