//! The web UI in headless Chromium: mount, act with real DOM events, `tick`, assert on
//! the DOM. Elements are found by role and accessible name, as a person finds them.
//!
//! Run: `CHROMEDRIVER=/usr/bin/chromedriver cargo test -p askuser-web --target wasm32-unknown-unknown`

#![cfg(target_arch = "wasm32")]

use askuser_core::{Request, Selection};
use askuser_web::{events, mount_dialog, App};
use serde_json::json;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement};

wasm_bindgen_test_configure!(run_in_browser);

// ----- helpers -----

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// A fresh element in the page to mount into.
fn container() -> HtmlElement {
    let el: HtmlElement = document().create_element("div").unwrap().unchecked_into();
    document().body().unwrap().append_child(&el).unwrap();
    el
}

fn request(value: serde_json::Value) -> Request {
    serde_json::from_value(value).unwrap()
}

/// Lets Leptos render and run effects.
async fn settle() {
    for _ in 0..3 {
        leptos::task::tick().await;
    }
}

fn all(root: &Element, selector: &str) -> Vec<Element> {
    let list = root.query_selector_all(selector).unwrap();
    (0..list.length()).filter_map(|i| list.item(i)?.dyn_into::<Element>().ok()).collect()
}

fn by_role(root: &Element, role: &str) -> Vec<Element> {
    all(root, &format!("[role=\"{role}\"]"))
}

/// The accessible name, roughly: aria-label, else the text.
fn name(el: &Element) -> String {
    el.get_attribute("aria-label").unwrap_or_else(|| el.text_content().unwrap_or_default())
}

fn find(root: &Element, role: &str, name_part: &str) -> Element {
    by_role(root, role)
        .into_iter()
        .find(|e| name(e).contains(name_part))
        .unwrap_or_else(|| panic!("no {role} named {name_part:?} in {}", root.inner_html()))
}

fn buttons(root: &Element, text: &str) -> Element {
    all(root, "button")
        .into_iter()
        .find(|b| b.text_content().unwrap_or_default().trim() == text)
        .unwrap_or_else(|| panic!("no button {text:?} in {}", root.inner_html()))
}

fn checked(el: &Element) -> bool {
    el.get_attribute("aria-checked").as_deref() == Some("true")
}

/// Dispatches a real `keydown` on `target`; returns whether the page prevented its default.
fn press(target: &Element, key: &str) -> bool {
    press_with(target, key, false)
}

fn press_with(target: &Element, key: &str, shift: bool) -> bool {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(key);
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_shift_key(shift);
    let ev = web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    target.dispatch_event(&ev).unwrap();
    ev.default_prevented()
}

fn dialog(root: &Element) -> Element {
    by_role(root, "dialog").into_iter().next().expect("a dialog")
}

type Submitted = Rc<RefCell<Vec<Vec<Selection>>>>;

/// Mounts a dialog; returns the container, what was submitted, how often it was cancelled
/// and the handle (keep it alive).
fn mount(req: Request) -> (HtmlElement, Submitted, Rc<RefCell<u32>>, askuser_web::DialogHandle) {
    let el = container();
    let submitted: Submitted = Rc::default();
    let cancelled = Rc::new(RefCell::new(0));
    let (s, c) = (submitted.clone(), cancelled.clone());
    let handle = mount_dialog(el.clone(), req, move |a| s.borrow_mut().push(a), move |_chat| *c.borrow_mut() += 1);
    (el, submitted, cancelled, handle)
}

fn databases() -> Request {
    request(json!({"questions": [{
        "question": "Which database?", "header": "DB",
        "options": [
            {"label": "PostgreSQL", "description": "Relational"},
            {"label": "SQLite", "description": "Embedded"},
            {"label": "DynamoDB"}
        ]
    }]}))
}

// ----- dialog -----

#[wasm_bindgen_test]
async fn single_select_with_arrow_keys_and_enter() {
    let (el, submitted, _, _h) = mount(databases());
    settle().await;
    let radios = by_role(&el, "radio");
    assert_eq!(radios.len(), 4, "three options and Other");
    assert!(name(&radios[3]).contains("Other (type your answer)"));
    assert!(by_role(&el, "radiogroup").len() == 1);
    assert!(el.text_content().unwrap().contains("DB"), "the header chip");
    assert!(find(&el, "radio", "PostgreSQL").text_content().unwrap().contains("Relational"));
    let focused = document().active_element().expect("something has focus");
    assert!(name(&focused).contains("PostgreSQL"), "the first row has the keyboard: {}", focused.outer_html());

    assert!(press(&dialog(&el), "ArrowDown"));
    settle().await;
    assert!(press(&dialog(&el), "Enter"));
    settle().await;
    assert_eq!(*submitted.borrow(), vec![vec![Selection::option("SQLite")]]);
}

/// A click chooses (issue 50 D4: it sent at once): a misclick is undone by the next
/// click, the note is still there to write, and only Submit sends.
#[wasm_bindgen_test]
async fn a_click_chooses_and_submit_sends() {
    let (el, submitted, _, _h) = mount(databases());
    settle().await;
    find(&el, "radio", "SQLite").unchecked_into::<HtmlElement>().click();
    settle().await;
    find(&el, "radio", "DynamoDB").unchecked_into::<HtmlElement>().click();
    settle().await;
    assert!(submitted.borrow().is_empty(), "a click sends nothing");
    let chosen: Vec<String> = by_role(&el, "radio").iter().filter(|r| checked(r)).map(name).collect();
    assert_eq!(chosen.len(), 1, "{chosen:?}");
    assert!(chosen[0].contains("DynamoDB"), "{chosen:?}");
    let notes = el.query_selector("textarea[data-notes]").unwrap().expect("the note is still there");
    notes.unchecked_ref::<web_sys::HtmlTextAreaElement>().set_value("for the cache");
    let input = web_sys::EventInit::new();
    input.set_bubbles(true);
    notes.dispatch_event(&web_sys::Event::new_with_event_init_dict("input", &input).unwrap()).unwrap();
    settle().await;
    assert!(submitted.borrow().is_empty());
    buttons(&el, "Submit").unchecked_into::<HtmlElement>().click();
    settle().await;
    let want = Selection { notes: Some("for the cache".into()), ..Selection::option("DynamoDB") };
    assert_eq!(*submitted.borrow(), vec![vec![want]]);
}

#[wasm_bindgen_test]
async fn multi_select_toggles_with_space() {
    let req = request(json!({"questions": [{
        "question": "Which features?", "multiSelect": true,
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}]
    }]}));
    let (el, submitted, _, _h) = mount(req);
    settle().await;
    assert_eq!(by_role(&el, "group").len(), 1);
    assert_eq!(by_role(&el, "checkbox").len(), 4);
    let d = dialog(&el);
    assert!(press(&d, " "));
    press(&d, "ArrowDown");
    press(&d, " ");
    settle().await;
    let states: Vec<bool> = by_role(&el, "checkbox").iter().map(checked).collect();
    assert_eq!(states, [true, true, false, false]);
    press(&d, " ");
    settle().await;
    assert!(!checked(&find(&el, "checkbox", "Billing")), "Space unchecks");
    press(&d, " ");
    press(&d, "Enter");
    settle().await;
    assert_eq!(submitted.borrow()[0], vec![Selection { selected: vec!["Auth".into(), "Billing".into()], ..Selection::default() }]);
}

#[wasm_bindgen_test]
async fn free_text_is_typed_and_sent_with_enter() {
    let req = request(json!({"questions": [{"question": "Anything else?"}]}));
    let (el, submitted, _, _h) = mount(req);
    settle().await;
    let area = all(&el, "textarea.askuser-other").pop().expect("a textarea");
    assert!(area.get_attribute("aria-label").is_some_and(|l| !l.is_empty()), "the textarea has a label");
    let textarea: web_sys::HtmlTextAreaElement = area.clone().unchecked_into();
    textarea.set_value("Ship it\non Friday");
    area.dispatch_event(
        &web_sys::Event::new_with_event_init_dict("input", &{
            let i = web_sys::EventInit::new();
            i.set_bubbles(true);
            i
        })
        .unwrap(),
    )
    .unwrap();
    settle().await;
    assert!(!press_with(&area, "Enter", true), "Shift+Enter is left to the textarea (a newline)");
    assert!(press(&area, "Enter"));
    settle().await;
    assert_eq!(*submitted.borrow(), vec![vec![Selection::custom("Ship it\non Friday")]]);
}

#[wasm_bindgen_test]
async fn other_row_opens_a_labelled_textarea() {
    let (el, submitted, _, _h) = mount(databases());
    settle().await;
    assert!(all(&el, "textarea.askuser-other").is_empty());
    press(&dialog(&el), "0");
    settle().await;
    let area = all(&el, "textarea.askuser-other").pop().expect("Other opens the textarea");
    assert!(checked(&find(&el, "radio", "Other")) || area.is_connected());
    let textarea: web_sys::HtmlTextAreaElement = area.clone().unchecked_into();
    textarea.set_value("CockroachDB");
    area.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    settle().await;
    press(&area, "Enter");
    settle().await;
    assert_eq!(*submitted.borrow(), vec![vec![Selection::custom("CockroachDB")]]);
}

fn two_questions() -> Request {
    request(json!({"questions": [
        {"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
        {"question": "Which cache?", "header": "Cache", "options": [{"label": "Redis"}, {"label": "None"}]}
    ]}))
}

#[wasm_bindgen_test]
async fn several_questions_use_tabs_and_a_review() {
    let (el, submitted, _, _h) = mount(two_questions());
    settle().await;
    let tabs = by_role(&el, "tab");
    assert_eq!(tabs.iter().map(name).collect::<Vec<_>>(), ["DB", "Cache", "Submit"]);
    assert_eq!(by_role(&el, "tablist").len(), 1);
    assert_eq!(by_role(&el, "tabpanel").len(), 1);
    assert_eq!(find(&el, "tab", "DB").get_attribute("aria-selected").as_deref(), Some("true"));

    let d = dialog(&el);
    press(&d, "2");
    settle().await;
    assert_eq!(find(&el, "tab", "Cache").get_attribute("aria-selected").as_deref(), Some("true"));
    let focused = document().active_element().unwrap();
    assert!(name(&focused).contains("Redis"), "focus follows to the next tab's row: {}", focused.outer_html());
    assert!(find(&el, "tab", "DB").text_content().unwrap().contains('✓'), "answered marker");

    // Go to the Submit tab by clicking it: it names what is unanswered.
    find(&el, "tab", "Submit").unchecked_into::<HtmlElement>().click();
    settle().await;
    let text = el.text_content().unwrap();
    assert!(text.contains("Not answered yet: Which cache?"), "{text}");
    assert!(text.contains("SQLite"));

    find(&el, "tab", "Cache").unchecked_into::<HtmlElement>().click();
    settle().await;
    press(&d, "1");
    settle().await;
    assert_eq!(find(&el, "tab", "Submit").get_attribute("aria-selected").as_deref(), Some("true"));
    let text = el.text_content().unwrap();
    assert!(text.contains("Review your answers") && text.contains("Redis") && !text.contains("Not answered yet"), "{text}");
    buttons(&el, "Submit answers").unchecked_into::<HtmlElement>().click();
    settle().await;
    assert_eq!(*submitted.borrow(), vec![vec![Selection::option("SQLite"), Selection::option("Redis")]]);
}

#[wasm_bindgen_test]
async fn escape_with_answers_asks_before_discarding() {
    let (el, submitted, cancelled, _h) = mount(two_questions());
    settle().await;
    let d = dialog(&el);
    press(&d, "1");
    settle().await;
    press(&d, "Escape");
    settle().await;
    let prompt = by_role(&el, "alertdialog").pop().expect("a confirm prompt");
    let said = prompt.text_content().unwrap();
    assert!(said.contains("Decline, and lose the answer you gave?") && said.contains("DB: PostgreSQL"), "{said}");
    // Enter keeps answering: that button is the primary one, and comes first.
    let primary = prompt.query_selector(".askuser-primary").unwrap().unwrap();
    assert_eq!(primary.text_content().unwrap(), "Keep answering");
    assert!(primary.has_attribute("data-default"));
    buttons(&prompt, "Decline").unchecked_into::<HtmlElement>().click();
    settle().await;
    assert_eq!(*cancelled.borrow(), 1);
    assert!(submitted.borrow().is_empty());
    assert!(by_role(&el, "alertdialog").is_empty());
}

#[wasm_bindgen_test]
async fn escape_prompt_no_keeps_the_dialog() {
    let (el, _, cancelled, _h) = mount(two_questions());
    settle().await;
    let d = dialog(&el);
    press(&d, "1");
    press(&d, "Escape");
    settle().await;
    press(&d, "n");
    settle().await;
    assert_eq!(*cancelled.borrow(), 0);
    assert!(by_role(&el, "alertdialog").is_empty());
    assert_eq!(by_role(&el, "radio").len(), 3);
}

#[wasm_bindgen_test]
async fn long_lists_show_how_many_more() {
    let options: Vec<_> = (1..=10).map(|i| json!({"label": format!("Option {i}")})).collect();
    let (el, _, _, _h) = mount(request(json!({"questions": [{"question": "Pick", "options": options}]})));
    settle().await;
    let text = el.text_content().unwrap();
    assert!(text.contains("↓ 4 more"), "{text}");
    assert_eq!(text.matches(" more").count(), 1, "nothing hidden above: {text}");
    let d = dialog(&el);
    press(&d, "End");
    settle().await;
    let text = el.text_content().unwrap();
    assert!(text.contains("↑ 4 more") && text.matches(" more").count() == 1, "{text}");
}

#[wasm_bindgen_test]
async fn previews_are_text_in_a_monospace_box_for_single_and_multi_select() {
    for multi in [false, true] {
        let req = request(json!({"questions": [{
            "question": "Which layout?", "multiSelect": multi,
            "options": [
                {"label": "Cards", "preview": "<div id=\"agent-preview\"><b>Cards</b><script>parent.__previewRan = 1</script></div>"},
                {"label": "Table", "preview": "+---+---+\n| a | b |\n+---+---+"}
            ]
        }]}));
        let (el, _, _, _h) = mount(req);
        settle().await;
        let boxes = all(&el, "pre.askuser-preview");
        assert_eq!(boxes.len(), 1, "multi={multi}");
        assert!(boxes[0].text_content().unwrap().contains("<script>parent.__previewRan = 1</script>"), "the preview's text, as text");
        assert!(boxes[0].get_attribute("aria-label").unwrap().contains("Cards"));
        assert!(document().get_element_by_id("agent-preview").is_none(), "agent HTML never becomes markup");
        assert!(all(&el, "b").is_empty() && all(&el, "script").is_empty() && all(&el, "iframe").is_empty());

        press(&dialog(&el), "ArrowDown");
        settle().await;
        let shown = all(&el, "pre.askuser-preview").pop().unwrap().text_content().unwrap();
        assert_eq!(shown, "+---+---+\n| a | b |\n+---+---+", "the focused option's preview keeps its lines");
        let ran = js_sys::Reflect::get(&web_sys::window().unwrap(), &"__previewRan".into()).unwrap();
        assert!(ran.is_undefined());
    }
}

#[wasm_bindgen_test]
async fn agent_text_is_never_html() {
    let xss = "<img src=x onerror=window.__xss=1>";
    let req = request(json!({"questions": [{
        "question": format!("Is {xss} fine? Run `rm -rf {xss}`:\n```sh\necho {xss}\n```"),
        "header": xss,
        "options": [{"label": xss, "description": xss}]
    }]}));
    let (el, _, _, _h) = mount(req);
    settle().await;
    // Give an injected image the time to fail and fire.
    wasm_bindgen_futures::JsFuture::from(js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 100).unwrap();
    }))
    .await
    .unwrap();
    assert!(all(&el, "img").is_empty());
    let text = el.text_content().unwrap();
    assert!(text.matches(xss).count() >= 5, "shown as literal text: {text}");
    let code = all(&el, "code");
    assert!(code.iter().any(|c| c.text_content().unwrap() == format!("rm -rf {xss}")), "inline code");
    assert!(all(&el, "pre").iter().any(|p| p.text_content().unwrap() == format!("echo {xss}")), "fenced block");
    let xss_flag = js_sys::Reflect::get(&web_sys::window().unwrap(), &"__xss".into()).unwrap();
    assert!(xss_flag.is_undefined());
}

#[wasm_bindgen_test]
async fn drafts_survive_a_remount() {
    let req = request(json!({"id": "draft-test-1", "questions": [{
        "question": "Which features?", "multiSelect": true,
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}]
    }]}));
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    storage.remove_item("askuser:draft:draft-test-1").unwrap();
    let (el, _, _, handle) = mount(req.clone());
    settle().await;
    let d = dialog(&el);
    press(&d, "ArrowDown");
    press(&d, "ArrowDown");
    press(&d, " ");
    settle().await;
    let saved = storage.get_item("askuser:draft:draft-test-1").unwrap().expect("a saved draft");
    assert!(saved.contains("\"selected\":[2]"), "{saved}");
    handle.unmount();
    assert!(by_role(&el, "dialog").is_empty(), "unmounted");

    let (el, submitted, _, _h) = mount(req);
    settle().await;
    let states: Vec<bool> = by_role(&el, "checkbox").iter().map(checked).collect();
    assert_eq!(states, [false, false, true, false], "restored from the draft");
    press(&dialog(&el), "Enter");
    settle().await;
    assert_eq!(submitted.borrow()[0], vec![Selection::option("Search")]);
    settle().await;
    assert!(storage.get_item("askuser:draft:draft-test-1").unwrap().is_none(), "a finished dialog forgets its draft");
}

// ----- the events seam -----

type Seen = Rc<RefCell<Vec<JsValue>>>;

/// Records the `detail` of every `name` event on window (while the closure lives).
fn capture(name: &str) -> (Seen, Closure<dyn FnMut(web_sys::Event)>) {
    let seen: Seen = Rc::default();
    let s = seen.clone();
    let cb = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
        s.borrow_mut().push(ev.unchecked_into::<web_sys::CustomEvent>().detail());
    });
    web_sys::window().unwrap().add_event_listener_with_callback(name, cb.as_ref().unchecked_ref()).unwrap();
    (seen, cb)
}

fn get(v: &JsValue, path: &[&str]) -> JsValue {
    path.iter().fold(v.clone(), |v, k| js_sys::Reflect::get(&v, &(*k).into()).unwrap())
}

#[wasm_bindgen_test]
fn bridge_updates_reach_subscribers_and_embedding_pages() {
    use askuser_core::client::State;
    use askuser_web::events::{dom_relay, FromBridge};
    let (asked, _a) = capture("askuser:asked");
    let (answered, _b) = capture("askuser:answered");
    let (conn, _c) = capture("askuser:connection");
    let heard: Rc<RefCell<Vec<FromBridge>>> = Rc::default();
    let h = heard.clone();
    let subscription = events::subscribe(move |u| h.borrow_mut().push(u.clone()));

    // The page's subscribers get the typed message; no DOM event fires for the page.
    let msg = json!({"type": "asked", "question": {"id": "q-9", "request": {"questions": [{"question": "Q?"}]}, "status": "pending", "createdAt": 1}});
    assert_eq!(events::dispatch_message(&msg.to_string()), Ok("askuser:asked"));
    let [FromBridge::Event(askuser_core::protocol::BrowserEvent::Asked { question })] = &heard.borrow()[..] else {
        panic!("{:?}", heard.borrow())
    };
    assert_eq!(question.id, "q-9");
    assert!(asked.borrow().is_empty(), "the page fires no DOM events");

    // An embedding page's relay fires each update as a CustomEvent with a plain object.
    let relay = dom_relay(web_sys::window().unwrap().into());
    relay(&heard.borrow()[0]);
    assert_eq!(asked.borrow().len(), 1);
    let detail = &asked.borrow()[0];
    assert_eq!(get(detail, &["type"]).as_string().as_deref(), Some("asked"));
    assert_eq!(get(detail, &["question", "id"]).as_string().as_deref(), Some("q-9"));
    assert!(answered.borrow().is_empty());
    relay(&FromBridge::Connection { state: State::Reconnecting, attempt: 3 });
    assert_eq!(get(&conn.borrow()[0], &["state"]).as_string().as_deref(), Some("reconnecting"));
    assert_eq!(get(&conn.borrow()[0], &["attempt"]).as_f64(), Some(3.0));

    assert!(events::dispatch_message("{nope").unwrap_err().starts_with("expected a JSON message"));
    assert_eq!(events::dispatch_message(r#"{"type":"explode"}"#).unwrap_err(), "unknown message type \"explode\"");
    for (kind, name) in [
        ("snapshot", "askuser:snapshot"),
        ("withdrawn", "askuser:withdrawn"),
        ("agent", "askuser:agent"),
        ("ack", "askuser:ack"),
        ("error", "askuser:error"),
    ] {
        assert_eq!(events::event_name(kind), Some(name));
    }
    drop(subscription);
    events::dispatch_message(&msg.to_string()).unwrap();
    assert_eq!(heard.borrow().len(), 1, "a dropped subscription hears nothing more");
}

// ----- the page -----

fn record(id: &str, agent: &str, session: &str, created: u64, question: &str) -> serde_json::Value {
    json!({"id": id, "status": "pending", "createdAt": created, "request": {
        "agent": {"name": agent, "sessionId": session},
        "questions": [{"question": question, "options": [{"label": "Yes"}, {"label": "No"}]}]
    }})
}

#[wasm_bindgen_test]
async fn the_page_follows_bridge_events() {
    web_sys::window().unwrap().session_storage().unwrap().unwrap().remove_item("askuser:token").unwrap();
    let el = container();
    let handle = leptos::mount::mount_to(el.clone(), App);
    settle().await;
    assert!(el.text_content().unwrap().contains("No bridge token"), "says how to connect");

    let now = js_sys::Date::now() as u64;
    let snapshot = json!({"type": "snapshot", "client": "c-1", "agents": [
        {"sessionId": "s-1", "name": "claude-code", "connected": true},
        {"sessionId": "s-2", "name": "researcher", "parentSessionId": "s-1", "connected": false}
    ], "questions": [
        record("q-1", "claude-code", "s-1", now - 150_000, "Deploy to staging?"),
        record("q-2", "researcher", "s-2", now - 60_000, "Use the cached index?")
    ]});
    events::dispatch_message(&snapshot.to_string()).unwrap();
    settle().await;
    let inbox = all(&el, "nav[aria-label=\"Pending questions\"]").pop().expect("the inbox");
    let text = inbox.text_content().unwrap();
    assert!(
        text.contains("claude-code") && text.contains("researcher") && text.contains("connected") && text.contains("disconnected"),
        "{text}"
    );
    assert!(
        text.find("Deploy to staging?").unwrap() < text.find("Use the cached index?").unwrap(),
        "oldest first, sub-agent under its parent"
    );
    assert!(text.contains("waiting 2 min"), "{text}");
    let d = dialog(&el);
    assert!(d.text_content().unwrap().contains("Deploy to staging?"), "the oldest is active");
    let focused = document().active_element().unwrap();
    assert!(d.contains(Some(&focused)), "the dialog has the keyboard: {}", focused.outer_html());

    // ] switches to the next question set.
    press(&d, "]");
    settle().await;
    assert!(dialog(&el).text_content().unwrap().contains("Use the cached index?"));
    press(&dialog(&el), "[");
    settle().await;
    assert!(dialog(&el).text_content().unwrap().contains("Deploy to staging?"));

    // A new question is announced politely.
    events::dispatch_message(
        &json!({"type": "asked", "question": record("q-3", "claude-code", "s-1", now, "Run the migrations?")}).to_string(),
    )
    .unwrap();
    settle().await;
    let live = all(&el, "[aria-live=\"polite\"]").pop().unwrap();
    assert_eq!(live.text_content().unwrap(), "New question from claude-code: Run the migrations?");

    // Answered in another window: it steps aside for the next one and says what was answered.
    let answered = json!({"type": "answered", "id": "q-1", "by": "c-2", "result": {
        "id": "q-1", "status": "answered", "answered": true, "answeredAt": now,
        "answers": [{"question": "Deploy to staging?", "answer": "Yes", "selectedOptions": ["Yes"], "custom": null, "wasCustom": false}]
    }});
    events::dispatch_message(&answered.to_string()).unwrap();
    settle().await;
    assert!(
        el.text_content().unwrap().contains("“Deploy to staging?” was answered in another window: Yes."),
        "{}",
        el.text_content().unwrap()
    );
    assert!(dialog(&el).text_content().unwrap().contains("Run the migrations?"), "the session's next question comes first, at once");
    buttons(&el, "OK").unchecked_into::<HtmlElement>().click();
    settle().await;
    assert!(!el.text_content().unwrap().contains("was answered in another window"));
    press(&dialog(&el), "]");
    settle().await;
    assert!(dialog(&el).text_content().unwrap().contains("Use the cached index?"));

    // Withdrawn while active.
    events::dispatch_message(&json!({"type": "withdrawn", "id": "q-2", "status": "withdrawn"}).to_string()).unwrap();
    settle().await;
    assert!(el.text_content().unwrap().contains("The agent withdrew “Use the cached index?”."), "{}", el.text_content().unwrap());
    assert!(buttons(&el, "History").is_connected());
    drop(handle);
}

#[wasm_bindgen_test]
async fn a_long_inbox_lists_a_hundred_and_counts_the_rest() {
    let el = container();
    let handle = leptos::mount::mount_to(el.clone(), App);
    let now = js_sys::Date::now() as u64;
    let questions: Vec<_> = (0..250)
        .map(|i| record(&format!("q-{i:03}"), "claude-code", &format!("s-{}", i / 10), now - 1_000_000 + i, &format!("Question {i}?")))
        .collect();
    events::dispatch_message(&json!({"type": "snapshot", "client": "c-1", "agents": [], "questions": questions}).to_string()).unwrap();
    settle().await;
    let items = all(&el, ".askuser-item");
    assert_eq!(items.len(), 100, "at most a hundred rows");
    assert!(items[0].text_content().unwrap().contains("Question 0?"), "oldest first");
    assert!(el.text_content().unwrap().contains("… and 150 more waiting"), "{}", el.text_content().unwrap());
    assert!(el.text_content().unwrap().contains("Waiting 250"));
    // The first row answered elsewhere: the next one moves up into the list.
    let answered = json!({"type": "answered", "id": "q-001", "by": "c-2", "result": {
        "id": "q-001", "status": "answered", "answered": true, "answeredAt": now, "answers": []
    }});
    events::dispatch_message(&answered.to_string()).unwrap();
    settle().await;
    let items = all(&el, ".askuser-item");
    assert_eq!(items.len(), 100);
    assert!(!el.text_content().unwrap().contains("Question 1?"));
    assert!(items[99].text_content().unwrap().contains("Question 100?"), "{}", items[99].text_content().unwrap());
    assert!(el.text_content().unwrap().contains("… and 149 more waiting"));
    drop(handle);
}

// ----- the bridge client -----

async fn sleep(ms: i32) {
    wasm_bindgen_futures::JsFuture::from(js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms).unwrap();
    }))
    .await
    .unwrap();
}

#[wasm_bindgen_test]
fn the_token_moves_from_the_address_to_session_storage() {
    let window = web_sys::window().unwrap();
    let session = window.session_storage().unwrap().unwrap();
    let before = window.location().href().unwrap();
    window.history().unwrap().replace_state_with_url(&JsValue::NULL, "", Some("#token=abc%2Bdef")).unwrap();
    assert_eq!(askuser_web::bridge::take_token().as_deref(), Some("abc+def"));
    assert_eq!(window.location().hash().unwrap(), "", "removed from the address bar");
    assert_eq!(session.get_item("askuser:token").unwrap().as_deref(), Some("abc+def"));
    assert_eq!(askuser_web::bridge::take_token().as_deref(), Some("abc+def"), "a reload reads it back");
    session.remove_item("askuser:token").unwrap();
    assert_eq!(askuser_web::bridge::take_token(), None);
    window.history().unwrap().replace_state_with_url(&JsValue::NULL, "", Some(&before)).unwrap();
}

#[wasm_bindgen_test]
async fn offline_answers_are_queued_and_reconnects_are_announced() {
    let (conn, _c) = capture("askuser:connection");
    // localStorage: an answer given offline outlives the tab (and goes out from the next one).
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    // Nothing listens on port 9: the socket fails and the client retries.
    let relay = events::dom_relay(web_sys::window().unwrap().into());
    let bridge = askuser_web::bridge::Bridge::start_on("ws://127.0.0.1:9/v1/ui?token=x".into(), relay);
    assert!(!bridge.answer("q-1", vec![Selection::option("Yes")]), "not sent while offline");
    assert_eq!(bridge.queued(), 1);
    // One outbox per bridge address (never with the token in its key).
    let key = "askuser:outbox:ws://127.0.0.1:9/v1/ui";
    let stored = storage.get_item(key).unwrap().expect("the outbox survives a reload");
    assert!(stored.contains("\\\"type\\\":\\\"answer\\\"") && stored.contains("q-1"), "{stored}");
    sleep(1200).await;
    let states: Vec<(String, f64)> =
        conn.borrow().iter().map(|d| (get(d, &["state"]).as_string().unwrap(), get(d, &["attempt"]).as_f64().unwrap())).collect();
    assert_eq!(states[0], ("connecting".to_owned(), 0.0));
    assert!(states.iter().any(|(s, a)| s == "reconnecting" && *a >= 1.0), "{states:?}");
    bridge.stop();
    assert_eq!(get(conn.borrow().last().unwrap(), &["state"]).as_string().as_deref(), Some("closed"));
    storage.remove_item(key).unwrap();
}

// ----- mouse and touch: every action has a button -----

fn click(el: &Element) {
    el.dyn_ref::<HtmlElement>().expect("an HTML element").click();
}

/// Mounts a dialog and records each decline's `chat` flag.
fn mount_recording(req: Request) -> (HtmlElement, Submitted, Rc<RefCell<Vec<bool>>>, askuser_web::DialogHandle) {
    let el = container();
    let submitted: Submitted = Rc::default();
    let declined: Rc<RefCell<Vec<bool>>> = Rc::default();
    let (s, d) = (submitted.clone(), declined.clone());
    let handle = mount_dialog(el.clone(), req, move |a| s.borrow_mut().push(a), move |chat| d.borrow_mut().push(chat));
    (el, submitted, declined, handle)
}

#[wasm_bindgen_test]
async fn a_lone_multi_select_is_sent_by_mouse_with_a_note() {
    let options: Vec<serde_json::Value> = (1..=10).map(|i| json!({"label": format!("Feature {i}")})).collect();
    let (el, submitted, _, _h) =
        mount_recording(request(json!({"questions": [{"question": "Which features?", "multiSelect": true, "options": options}]})));
    settle().await;
    click(&find(&el, "checkbox", "Feature 2"));
    settle().await;
    // Options past the visible rows are reached by clicking "↓ N more".
    let more = all(&el, "button.askuser-more").pop().expect("a ↓ more button");
    assert!(more.text_content().unwrap().starts_with('↓'));
    for _ in 0..4 {
        if let Some(more) = all(&el, "button.askuser-more").into_iter().find(|b| b.text_content().unwrap().starts_with('↓')) {
            click(&more);
            settle().await;
        }
    }
    click(&find(&el, "checkbox", "Feature 10"));
    settle().await;
    let notes = el.query_selector("textarea[data-notes]").unwrap().expect("a notes field");
    notes.unchecked_ref::<web_sys::HtmlTextAreaElement>().set_value("ship 10 last");
    notes
        .dispatch_event(
            &web_sys::Event::new_with_event_init_dict("input", &{
                let i = web_sys::EventInit::new();
                i.set_bubbles(true);
                i
            })
            .unwrap(),
        )
        .unwrap();
    assert!(!press(&notes, "1"), "keys in the notes field only type");
    settle().await;
    click(&buttons(&el, "Submit"));
    settle().await;
    let sent = submitted.borrow();
    assert_eq!(sent.len(), 1, "Submit sends without a key");
    assert_eq!(sent[0][0].selected, ["Feature 2", "Feature 10"]);
    assert_eq!(sent[0][0].notes.as_deref(), Some("ship 10 last"));
}

#[wasm_bindgen_test]
async fn decline_and_chat_about_this_are_buttons_and_ask_first_when_something_is_chosen() {
    let (el, _, declined, _h) = mount_recording(databases());
    settle().await;
    click(&buttons(&el, "Decline"));
    settle().await;
    assert_eq!(*declined.borrow(), [false]);

    let (el, _, declined2, _h2) = mount_recording(request(json!({"questions": [
        {"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}
    ]})));
    settle().await;
    click(&find(&el, "radio", "SQLite"));
    settle().await;
    click(&buttons(&el, "Chat about this"));
    settle().await;
    assert!(declined2.borrow().is_empty(), "something was chosen: ask first");
    let prompt = by_role(&el, "alertdialog").pop().expect("a prompt");
    assert!(prompt.text_content().unwrap().contains("Decline to talk it over, and lose the answer you gave?"));
    click(&buttons(&el, "Decline, to talk it over"));
    settle().await;
    assert_eq!(*declined2.borrow(), [true]);
}

// ----- keyboard and screen readers -----

#[wasm_bindgen_test]
async fn rows_and_tabs_follow_the_aria_practices() {
    let (el, _, _, _h) = mount(request(json!({"questions": [
        {"question": "Which database?", "options": [{"label": "PostgreSQL", "description": "Relational"}, {"label": "SQLite"}]},
        {"question": "Name?"}
    ]})));
    settle().await;
    let radios = by_role(&el, "radio");
    let reachable: Vec<_> = radios.iter().filter(|r| r.get_attribute("tabindex").as_deref() == Some("0")).collect();
    assert_eq!(reachable.len(), 1, "one row in the Tab order (roving tabindex)");
    assert_eq!(radios[0].get_attribute("aria-setsize").as_deref(), Some("3"));
    assert_eq!(radios[1].get_attribute("aria-posinset").as_deref(), Some("2"));
    let label = document().get_element_by_id(&radios[0].get_attribute("aria-labelledby").unwrap()).unwrap();
    assert_eq!(label.text_content().unwrap(), "PostgreSQL", "the description is not part of the name");
    let described = document().get_element_by_id(&radios[0].get_attribute("aria-describedby").unwrap()).unwrap();
    assert_eq!(described.text_content().unwrap(), "Relational");
    let tabs = by_role(&el, "tab");
    assert_eq!(tabs.iter().filter(|t| t.get_attribute("tabindex").as_deref() == Some("0")).count(), 1);
    // Tab is the browser's (the focus moves on to the note, the buttons, the inbox: no
    // trap); ← and → switch questions.
    assert!(!press(&dialog(&el), "Tab"), "Tab is the browser's");
    assert!(press(&dialog(&el), "ArrowRight"), "→ goes to the next question");
    settle().await;
    let free = all(&el, "textarea.askuser-other").pop().expect("the free-text field");
    assert_eq!(free.get_attribute("aria-label").as_deref(), Some("Your answer"), "a free-text question has no \"Other\"");
    assert!(!press(&dialog(&el), "Tab"), "nor while typing");
}
