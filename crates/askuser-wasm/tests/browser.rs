//! The embed package in headless Chromium: every exported function called as a page
//! would (JS values in, JS values or a thrown `Error` out), the `Dialog` view model
//! after key sequences, the mounted dialog driven by real key events, and the bridge
//! client's events on a custom target.
//!
//! Run: `CHROMEDRIVER=/usr/bin/chromedriver cargo test -p askuser-wasm --target wasm32-unknown-unknown`

#![cfg(target_arch = "wasm32")]

use askuser_wasm::connect::{connect, socket_url};
use askuser_wasm::dialog::JsDialog;
use askuser_wasm::mount::{dialog_styles, mount_dialog, STYLE_ID};
use askuser_wasm::{format_result, normalize, validate};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement};

wasm_bindgen_test_configure!(run_in_browser);

// ----- helpers -----

/// A plain JS object (or array, string, ...) from JSON, as a page would pass it.
fn js(value: Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

fn opts<T: JsCast>(value: Value) -> Option<T> {
    Some(js(value).unchecked_into())
}

/// A JS value back as JSON, for assertions.
fn json(value: &JsValue) -> Value {
    serde_json::from_str(&js_sys::JSON::stringify(value).unwrap().as_string().unwrap()).unwrap()
}

/// The thrown value: an `Error`, with its message and its `errors` list.
fn thrown(result: Result<impl Sized, JsValue>) -> (String, Value) {
    let Err(error) = result.map(|_| ()) else { panic!("expected an Error to be thrown") };
    let error: js_sys::Error = error.dyn_into().expect("an Error instance");
    let errors = js_sys::Reflect::get(&error, &"errors".into()).unwrap();
    (error.message().into(), json(&errors))
}

/// A JS function that records its first argument (`undefined` for none).
fn recorder() -> (js_sys::Function, Rc<RefCell<Vec<Value>>>) {
    let calls: Rc<RefCell<Vec<Value>>> = Rc::default();
    let c = calls.clone();
    let f = Closure::<dyn Fn(JsValue)>::new(move |v: JsValue| {
        c.borrow_mut().push(if v.is_undefined() { Value::Null } else { json(&v) });
    });
    (f.into_js_value().unchecked_into(), calls)
}

fn with_callbacks<T: JsCast>(mut base: Value, pairs: &[(&str, &js_sys::Function)]) -> Option<T> {
    let o = js(base.take());
    for (k, f) in pairs {
        js_sys::Reflect::set(&o, &(*k).into(), f).unwrap();
    }
    Some(o.unchecked_into())
}

fn databases() -> Value {
    json!({"questions": [{"question": "Which database?", "header": "DB",
        "options": [{"label": "PostgreSQL", "description": "Relational"}, {"label": "SQLite"}, {"label": "MySQL"}]}]})
}

fn two_questions() -> Value {
    json!({"questions": [
        {"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
        {"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "API"}, {"label": "UI"}]}
    ]})
}

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

fn container() -> HtmlElement {
    let el: HtmlElement = document().create_element("div").unwrap().unchecked_into();
    document().body().unwrap().append_child(&el).unwrap();
    el
}

async fn settle() {
    for _ in 0..3 {
        leptos::task::tick().await;
    }
}

fn by_role(root: &Element, role: &str) -> Vec<Element> {
    let list = root.query_selector_all(&format!("[role=\"{role}\"]")).unwrap();
    (0..list.length()).filter_map(|i| list.item(i)?.dyn_into::<Element>().ok()).collect()
}

fn press(target: &Element, key: &str) -> bool {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(key);
    init.set_bubbles(true);
    init.set_cancelable(true);
    let ev = web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    target.dispatch_event(&ev).unwrap();
    ev.default_prevented()
}

fn state(d: &JsDialog) -> Value {
    json(&d.state().unwrap())
}

fn keys(d: &JsDialog, names: &[&str]) -> Vec<Value> {
    names.iter().map(|k| json(&d.key(k).unwrap())).collect()
}

// ----- normalize, validate -----

#[wasm_bindgen_test]
fn normalize_reads_every_dialect_into_the_canonical_request() {
    let claude = json(&normalize(js(databases())).unwrap());
    assert_eq!(claude["questions"][0]["options"][1], json!({"label": "SQLite"}));
    assert_eq!(claude["questions"][0]["multiSelect"], json!(false));

    let opal = json(&normalize(js(json!({"question": "Deploy now?", "choices": ["Yes", "No"]}))).unwrap());
    assert_eq!(
        opal,
        json!({"questions": [{"question": "Deploy now?", "options": [{"label": "Yes"}, {"label": "No"}], "multiSelect": false}]})
    );

    let roo = json(&normalize(js(json!({"question": "Which?", "follow_up": ["A", {"answer": "B"}]}))).unwrap());
    assert_eq!(roo["questions"][0]["options"], json!([{"label": "A"}, {"label": "B"}]));

    let text = json(
        &normalize(JsValue::from_str(r#"{"questions": [{"question": "Name?"}], "timeoutSeconds": 60, "metadata": {"k": 1}}"#)).unwrap(),
    );
    assert_eq!(text["timeoutSeconds"], json!(60));
    assert_eq!(text["metadata"], json!({"k": 1}), "metadata is a plain object, not a Map");
}

#[wasm_bindgen_test]
fn normalize_throws_an_error_listing_every_problem() {
    let (message, errors) = thrown(normalize(js(json!({"questions": [
        {"question": "", "options": [{"label": "A"}]},
        {"question": "Q2", "options": [{"label": ""}], "multiSelect": "yes"}
    ]}))));
    let paths: Vec<&str> = errors.as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"questions[0].question"), "{message}");
    assert!(paths.contains(&"questions[1].options[0].label"), "{message}");
    assert!(paths.contains(&"questions[1].multiSelect"), "{message}");
    for e in errors.as_array().unwrap() {
        let line = format!("{}: {}", e["path"].as_str().unwrap(), e["message"].as_str().unwrap());
        assert!(message.lines().any(|l| l == line), "{line:?} is a line of {message:?}");
    }

    let (message, _) = thrown(normalize(JsValue::from_str("{not json")));
    assert!(message.contains("expected JSON"), "{message}");
    let (message, _) = thrown(normalize(JsValue::from(42)));
    assert!(message.contains("expected a request"), "{message}");
    let f: JsValue = js_sys::Function::new_no_args("return 1").into();
    let (message, errors) = thrown(normalize(f));
    assert!(message.contains("expected a request"), "{message}");
    assert_eq!(errors[0]["path"], json!(""));
}

#[wasm_bindgen_test]
fn validate_reports_the_dialect_and_warnings_and_applies_a_profile() {
    let v = json(&validate(js(json!({"question": "Deploy?", "choices": ["Yes", "No", "Other"]})), None).unwrap());
    assert_eq!(v["dialect"], json!("opal"));
    assert_eq!(v["request"]["questions"][0]["options"].as_array().unwrap().len(), 2, "Other is dropped");
    assert!(!v["warnings"].as_array().unwrap().is_empty(), "with a warning: {v}");
    assert_eq!(json(&validate(js(databases()), None).unwrap())["dialect"], json!("claude"));

    let free = js(json!({"questions": [{"question": "Name?"}]}));
    assert_eq!(json(&validate(free.clone(), opts(json!({}))).unwrap())["dialect"], json!("pi"));
    let (message, _) = thrown(validate(free, opts(json!({"profile": "claude-code"}))));
    assert!(message.starts_with("questions[0]"), "{message}");
    let (message, errors) = thrown(validate(js(databases()), opts(json!({"profile": "strict"}))));
    assert_eq!(errors[0]["path"], json!("profile"), "{message}");
}

// ----- formatResult -----

fn result() -> Value {
    json!({"id": "q-1", "status": "answered", "answered": true, "answeredAt": 2000,
        "answers": [{"question": "Which database?", "header": "DB", "answer": "SQLite",
            "selectedOptions": ["SQLite"], "custom": null, "wasCustom": false}],
        "metadata": {"source": "ide"}})
}

#[wasm_bindgen_test]
fn format_result_gives_every_format() {
    let fmt = |f: &str| json(&format_result(js(result()), JsValue::from_str(f)).unwrap());
    assert_eq!(fmt("canonical"), result());
    let claude = fmt("claude");
    assert_eq!(claude["answers"], json!({"Which database?": "SQLite"}));
    assert!(claude["message"].as_str().unwrap().starts_with("User has answered your questions"));
    let pi = fmt("pi");
    assert_eq!(pi["answers"][0]["selectedOption"], json!("SQLite"));
    assert_eq!(pi["metadata"], json!({"source": "ide"}));
    assert!(fmt("text").as_str().unwrap().contains("SQLite"));

    let cancelled = json!({"id": "q-1", "status": "cancelled", "answered": false, "answers": [], "answeredAt": 1});
    let text = format_result(js(cancelled), JsValue::from_str("text")).unwrap().as_string().unwrap();
    assert!(text.contains("declined"), "{text}");
}

#[wasm_bindgen_test]
fn format_result_throws_for_a_bad_format_or_result() {
    let (message, errors) = thrown(format_result(js(result()), JsValue::from_str("xml")));
    assert_eq!(errors[0]["path"], json!("format"));
    assert!(message.contains("canonical, claude, pi or text"), "{message}");
    let (_, errors) = thrown(format_result(js(result()), JsValue::from(3)));
    assert_eq!(errors[0]["path"], json!("format"));
    let (message, _) = thrown(format_result(js(json!({"id": "q-1"})), JsValue::from_str("text")));
    assert!(message.contains("expected a canonical result") && message.contains("status"), "{message}");
}

// ----- new Dialog -----

#[wasm_bindgen_test]
fn dialog_view_model_follows_keys() {
    let d = JsDialog::new(js(databases()), None).unwrap();
    let s = state(&d);
    assert_eq!(s["tabs"], json!([{"label": "DB", "answered": false, "isSubmit": false}]));
    assert_eq!(s["question"]["text"], json!("Which database?"));
    assert_eq!(s["rows"].as_array().unwrap().len(), 4, "three options and Other");
    assert_eq!(s["rows"][3]["isOther"], json!(true));
    assert_eq!(s["rows"][3]["number"], json!(null), "absent values are null");
    assert_eq!(s["rows"][0]["focused"], json!(true));
    assert_eq!(s["prompt"], json!(null));
    assert_eq!(s["done"], json!(null));

    assert_eq!(keys(&d, &["ArrowDown", "j"])[0], json!({"handled": true, "effects": []}));
    let s = state(&d);
    let focused: Vec<bool> = s["rows"].as_array().unwrap().iter().map(|r| r["focused"].as_bool().unwrap()).collect();
    assert_eq!(focused, [false, false, true, false]);
    assert_eq!(json(&d.key("F5").unwrap()), json!({"handled": false, "effects": []}));

    // Other: typing goes to the text, Enter answers with it.
    keys(&d, &["0"]);
    assert_eq!(state(&d)["editing"], json!(true));
    assert_eq!(json(&d.event(js(json!({"type": "setText", "text": "CockroachDB"}))).unwrap()), json!([]));
    assert_eq!(state(&d)["otherText"], json!("CockroachDB"));
    let out = keys(&d, &["Enter"]);
    assert_eq!(out[0]["effects"], json!([{"type": "submitted", "answers": [{"custom": "CockroachDB"}]}]));
    assert_eq!(d.done().unwrap(), JsValue::from_str("submitted"));
    assert_eq!(state(&d)["done"], json!("submitted"));
}

#[wasm_bindgen_test]
fn dialog_tabs_multi_select_review_and_callbacks() {
    let (on_submit, submitted) = recorder();
    let d = JsDialog::new(js(two_questions()), with_callbacks(json!({}), &[("onSubmit", &on_submit)])).unwrap();
    assert_eq!(state(&d)["tabs"].as_array().unwrap().len(), 3, "two questions and Submit");
    keys(&d, &["2"]);
    let s = state(&d);
    assert_eq!(s["activeTab"], json!(1), "answering moves on");
    assert_eq!(s["tabs"][0]["answered"], json!(true));
    assert_eq!(s["question"]["multiSelect"], json!(true));
    keys(&d, &[" ", "ArrowDown", "ArrowDown", " "]);
    let selected: Vec<bool> = state(&d)["rows"].as_array().unwrap().iter().map(|r| r["selected"].as_bool().unwrap()).collect();
    assert_eq!(selected, [true, false, true, false]);
    keys(&d, &["Enter"]);
    let s = state(&d);
    assert_eq!(s["onSubmitTab"], json!(true));
    assert_eq!(s["review"][1]["answer"], json!("Auth, UI"));
    assert_eq!(s["unanswered"], json!([]));
    assert!(submitted.borrow().is_empty());
    let out = keys(&d, &["Enter"]);
    let answers = json!([{"selected": ["SQLite"]}, {"selected": ["Auth", "UI"]}]);
    assert_eq!(out[0]["effects"][0]["answers"], answers);
    assert_eq!(*submitted.borrow(), vec![answers], "onSubmit gets the same answers");
}

#[wasm_bindgen_test]
fn dialog_escape_prompts_scroll_window_and_cancel() {
    let (on_cancel, cancelled) = recorder();
    let many: Vec<Value> = (1..=12).map(|i| json!({"label": format!("Option {i}")})).collect();
    let request = json!({"questions": [{"question": "Pick", "options": many}, {"question": "Name?"}]});
    let d = JsDialog::new(js(request), with_callbacks(json!({"viewport": 4}), &[("onCancel", &on_cancel)])).unwrap();
    assert_eq!(state(&d)["window"], json!({"start": 0, "end": 4, "above": 0, "below": 9}));
    keys(&d, &["End"]);
    assert_eq!(state(&d)["window"], json!({"start": 9, "end": 13, "above": 9, "below": 0}));
    keys(&d, &["Home", "Enter"]);
    assert_eq!(state(&d)["activeTab"], json!(1));
    assert_eq!(keys(&d, &["Tab"])[0]["handled"], json!(false), "Tab moves the page's focus, not the dialog");
    keys(&d, &["Escape"]);
    let s = state(&d);
    assert_eq!(s["prompt"]["kind"], json!({"type": "discard", "count": 1}));
    assert_eq!(s["prompt"]["text"], json!("Decline, and lose the answer you gave?"));
    assert_eq!((s["prompt"]["yes"].as_str(), s["prompt"]["no"].as_str()), (Some("Decline"), Some("Keep answering")));
    assert_eq!(s["prompt"]["defaultYes"], json!(false));
    keys(&d, &["n"]);
    assert_eq!(state(&d)["prompt"], json!(null));
    keys(&d, &["Escape", "y"]);
    assert_eq!(cancelled.borrow().len(), 1, "onCancel ran once");
    assert_eq!(state(&d)["done"], json!("cancelled"));
    assert_eq!(json(&d.key("Enter").unwrap()), json!({"handled": false, "effects": []}), "a finished dialog ignores keys");
}

#[wasm_bindgen_test]
fn dialog_callbacks_may_read_the_state_and_drafts_resume() {
    let seen: Rc<RefCell<Option<Rc<JsDialog>>>> = Rc::default();
    let done_seen: Rc<RefCell<Option<Value>>> = Rc::default();
    let (s, out) = (seen.clone(), done_seen.clone());
    let f = Closure::<dyn Fn(JsValue)>::new(move |_answers: JsValue| {
        let d = s.borrow().clone().unwrap();
        *out.borrow_mut() = Some(json(&d.state().unwrap())["done"].clone());
    });
    let f: js_sys::Function = f.into_js_value().unchecked_into();
    let d = Rc::new(JsDialog::new(js(databases()), with_callbacks(json!({}), &[("onSubmit", &f)])).unwrap());
    *seen.borrow_mut() = Some(d.clone());
    d.key("1").unwrap();
    assert_eq!(*done_seen.borrow(), Some(json!("submitted")), "the callback runs after the state changed");
    seen.borrow_mut().take();

    let d = JsDialog::new(js(two_questions()), None).unwrap();
    keys(&d, &["2", " "]);
    let draft = json(&d.draft().unwrap());
    assert_eq!(draft["tab"], json!(1));
    assert_eq!(draft["questions"][1]["selected"], json!([0]));
    let resumed = JsDialog::new(js(two_questions()), opts(json!({"draft": draft}))).unwrap();
    assert_eq!(state(&resumed)["activeTab"], json!(1));
    assert_eq!(state(&resumed)["tabs"][0]["answered"], json!(true));
}

#[wasm_bindgen_test]
fn dialog_throws_for_bad_input() {
    let (message, _) = thrown(JsDialog::new(js(json!({"questions": []})), None));
    assert!(message.starts_with("questions"), "{message}");
    let (_, errors) = thrown(JsDialog::new(js(databases()), opts(json!({"viewport": -1}))));
    assert_eq!(errors[0]["path"], json!("viewport"));
    let (_, errors) = thrown(JsDialog::new(js(databases()), opts(json!({"onSubmit": "yes"}))));
    assert_eq!(errors[0]["path"], json!("onSubmit"));
    let (message, _) = thrown(JsDialog::new(js(databases()), opts(json!({"draft": {"tab": "x"}}))));
    assert!(message.contains("draft"), "{message}");
    let d = JsDialog::new(js(databases()), None).unwrap();
    let (message, _) = thrown(d.event(js(json!({"type": "jump"}))));
    assert!(message.contains("expected a dialog event") && message.contains("jump"), "{message}");
    let (message, _) = thrown(d.event(js(json!({"type": "pick"}))));
    assert!(message.contains("index"), "{message}");
}

// ----- mountDialog -----

#[wasm_bindgen_test]
async fn mounted_dialog_answers_by_keyboard_and_unmounts() {
    let el = container();
    let (on_answer, answered) = recorder();
    let mut handle = mount_dialog(el.clone().into(), js(databases()), with_callbacks(json!({}), &[("onAnswer", &on_answer)])).unwrap();
    settle().await;
    assert!(el.class_list().contains("askuser-embed"));
    let style = document().get_element_by_id(STYLE_ID).expect("the stylesheet is added");
    assert_eq!(style.text_content().unwrap(), dialog_styles());
    assert!(dialog_styles().contains("var(--askuser-accent,"), "colours are custom properties with defaults");
    let dialog = by_role(&el, "dialog").pop().expect("a dialog");
    assert_eq!(by_role(&el, "radio").len(), 4);
    let focused = document().active_element().expect("the dialog takes the keyboard");
    assert!(dialog.contains(Some(&focused)));

    assert!(press(&focused, "ArrowDown"));
    settle().await;
    let active = document().active_element().unwrap();
    assert!(active.text_content().unwrap().contains("SQLite"), "focus follows: {}", active.outer_html());
    assert!(press(&active, "Enter"));
    settle().await;
    assert_eq!(*answered.borrow(), vec![json!([{"selected": ["SQLite"]}])]);

    assert!(handle.mounted());
    handle.unmount();
    handle.unmount();
    assert!(!handle.mounted());
    assert!(by_role(&el, "dialog").is_empty(), "unmount removes the dialog");
    assert!(!el.class_list().contains("askuser-embed"));
}

/// A click chooses and Submit sends, in the embedded dialog as in the page (issue 50
/// D4: a click sent at once); a host's own UI does the same with `pick` and `commit`.
#[wasm_bindgen_test]
async fn mounted_dialog_a_click_chooses_and_submit_sends() {
    let el = container();
    let (on_answer, answered) = recorder();
    let mut handle = mount_dialog(el.clone().into(), js(databases()), with_callbacks(json!({}), &[("onAnswer", &on_answer)])).unwrap();
    settle().await;
    let click = |label: &str| {
        let row = by_role(&el, "radio").into_iter().find(|r| r.text_content().unwrap().contains(label)).expect("the row");
        row.unchecked_into::<HtmlElement>().click();
    };
    click("SQLite");
    settle().await;
    click("MySQL");
    settle().await;
    assert!(answered.borrow().is_empty(), "a click sends nothing");
    let checked: Vec<String> = by_role(&el, "radio")
        .iter()
        .filter(|r| r.get_attribute("aria-checked").as_deref() == Some("true"))
        .map(|r| r.text_content().unwrap())
        .collect();
    assert!(checked.len() == 1 && checked[0].contains("MySQL"), "{checked:?}");
    let submit = el.query_selector("[data-action=enter]").unwrap().expect("a Submit button");
    submit.unchecked_into::<HtmlElement>().click();
    settle().await;
    assert_eq!(*answered.borrow(), vec![json!([{"selected": ["MySQL"]}])]);
    handle.unmount();

    let d = JsDialog::new(js(databases()), None).unwrap();
    assert_eq!(json(&d.event(js(json!({"type": "pick", "index": 1}))).unwrap()), json!([]));
    assert_eq!(json(&d.event(js(json!({"type": "pick", "index": 2}))).unwrap()), json!([]));
    let sent = json(&d.event(js(json!({"type": "commit"}))).unwrap());
    assert_eq!(sent, json!([{"type": "submitted", "answers": [{"selected": ["MySQL"]}]}]));
}

#[wasm_bindgen_test]
async fn mounted_dialog_cancels_and_renders_agent_text_as_text() {
    let el = container();
    let (on_cancel, cancelled) = recorder();
    let request = json!({"question": "<img src=x onerror=alert(1)>Deploy?", "choices": ["<b>Yes</b>", "No"]});
    let mut handle =
        mount_dialog(el.clone().into(), js(request), with_callbacks(json!({"styles": false}), &[("onCancel", &on_cancel)])).unwrap();
    settle().await;
    assert!(el.query_selector("img, b").unwrap().is_none(), "no agent HTML: {}", el.inner_html());
    assert!(el.text_content().unwrap().contains("<img src=x onerror=alert(1)>Deploy?"));
    let focused = document().active_element().unwrap();
    press(&focused, "Escape");
    settle().await;
    assert_eq!(cancelled.borrow().len(), 1);
    handle.unmount();
}

#[wasm_bindgen_test]
fn mount_dialog_throws_for_bad_input() {
    let (_, errors) = thrown(mount_dialog(JsValue::NULL, js(databases()), None));
    assert!(errors[0]["message"].as_str().unwrap().contains("HTMLElement"));
    let (message, _) = thrown(mount_dialog(container().into(), js(json!({"questions": [{"question": ""}]})), None));
    assert!(message.starts_with("questions[0].question: "), "{message}");
    let (_, errors) = thrown(mount_dialog(container().into(), js(databases()), opts(json!({"onAnswer": 1}))));
    assert_eq!(errors[0]["path"], json!("onAnswer"));
}

// ----- connect -----

#[wasm_bindgen_test]
fn socket_urls_come_from_the_bridge_address() {
    assert_eq!(socket_url("http://127.0.0.1:7823", "a b").unwrap(), "ws://127.0.0.1:7823/v1/ui?token=a%20b");
    assert_eq!(socket_url("https://example.test/", "t").unwrap(), "wss://example.test/v1/ui?token=t");
    assert_eq!(socket_url("http://127.0.0.1:7823/#token=secret", "").unwrap(), "ws://127.0.0.1:7823/v1/ui?token=secret");
    let (message, errors) = thrown(socket_url("ftp://host/#token=secret", ""));
    assert_eq!(errors[0]["path"], json!("url"));
    assert!(!message.contains("secret"), "the token is never echoed: {message}");
    let (_, errors) = thrown(socket_url("http://127.0.0.1:7823/", ""));
    assert_eq!(errors[0]["path"], json!("token"));
}

/// Records every `askuser:*` event's name and detail on `target`.
fn listen(target: &web_sys::EventTarget) -> Rc<RefCell<Vec<(String, Value)>>> {
    let seen: Rc<RefCell<Vec<(String, Value)>>> = Rc::default();
    for name in ["askuser:connection", "askuser:asked", "askuser:snapshot"] {
        let s = seen.clone();
        let f = Closure::<dyn Fn(web_sys::Event)>::new(move |e: web_sys::Event| {
            let detail = e.dyn_ref::<web_sys::CustomEvent>().map(|c| json(&c.detail())).unwrap_or_default();
            s.borrow_mut().push((e.type_(), detail));
        });
        target.add_event_listener_with_callback(name, f.as_ref().unchecked_ref()).unwrap();
        f.forget();
    }
    seen
}

#[wasm_bindgen_test]
async fn connect_fires_events_on_the_target_and_queues_answers() {
    let target: web_sys::EventTarget = container().into();
    let seen = listen(&target);
    // Nothing listens on port 9: the client reports it is connecting, then retrying.
    let mut conn = connect("http://127.0.0.1:9", "t", Some(target.clone())).unwrap();
    assert_eq!(seen.borrow()[0], ("askuser:connection".into(), json!({"state": "connecting", "attempt": 0})));
    assert!(!conn.is_open());

    // This connection's events go to its target only: another client's (the page's, on
    // window) never reach it.
    let asked = r#"{"type":"asked","question":{"id":"q-1","request":{"questions":[{"question":"Q?"}]},"status":"pending","createdAt":1}}"#;
    askuser_web::events::dispatch_message(asked).unwrap();
    assert!(!seen.borrow().iter().any(|(n, _)| n == "askuser:asked"), "window's events stay on window");

    assert!(!conn.answer("q-1", js(json!([{"selected": ["SQLite"]}]))).unwrap(), "queued while offline");
    assert_eq!(conn.queued(), 1);
    let (message, _) = thrown(conn.answer("q-1", js(json!({"selected": "SQLite"}))));
    assert!(message.contains("answers"), "{message}");
    assert!(!conn.cancel("q-2", None));
    assert_eq!(conn.queued(), 2);

    conn.close();
    conn.close();
    let last = seen.borrow().last().cloned().unwrap();
    assert_eq!(last, ("askuser:connection".into(), json!({"state": "closed", "attempt": 0})));
    // The page's client keeps its outbox in sessionStorage; leave none behind.
    web_sys::window().unwrap().session_storage().unwrap().unwrap().clear().unwrap();
}

#[wasm_bindgen_test]
fn connect_defaults_to_window_and_throws_for_a_bad_address() {
    let window: web_sys::EventTarget = web_sys::window().unwrap().into();
    let seen = listen(&window);
    let mut conn = connect("http://127.0.0.1:9", "t", None).unwrap();
    assert!(seen.borrow().iter().any(|(n, d)| n == "askuser:connection" && d["state"] == json!("connecting")));
    conn.close();
    let (_, errors) = thrown(connect("mailto:someone@example.test", "t", None));
    assert_eq!(errors[0]["path"], json!("url"));
}
