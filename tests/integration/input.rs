//! Every flow by keyboard only, by mouse only and by touch only, at 1280 px and at
//! 360 px, in a real headless Chromium against a real bridge: three questions (a long
//! multi-select with a note, a single select, free text) answered and reviewed, a
//! question declined, and one declined to "chat about this". The agent must get exactly
//! what the person chose each time.

use crate::support::{bridge, browser, touch_browser, Browser, TestBridge, TOKEN};
use fantoccini::actions::{InputSource, PointerAction, TouchActions, WheelAction, WheelActions, MOUSE_BUTTON_LEFT};
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Input {
    Keyboard,
    Mouse,
    Touch,
}

async fn person(input: Input, width: u32) -> Browser {
    let height = if width < 600 { 740 } else { 800 };
    match input {
        Input::Touch => touch_browser(width, height).await,
        _ => browser(width, height).await,
    }
}

/// Whether the focused element matches `css`.
async fn focused(browser: &Browser, css: &str) -> bool {
    browser.execute("return document.activeElement.matches(arguments[0])", vec![json!(css)]).await.unwrap() == json!(true)
}

/// [`focused`] within a second.
async fn focused_soon(browser: &Browser, css: &str) -> bool {
    for _ in 0..50 {
        if focused(browser, css).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn press(browser: &Browser, key: Key) {
    browser.keys(&key.to_string()).await;
}

/// Tab (forward) until the focus is on `css`: the keyboard reaches every control.
async fn tab_to(browser: &Browser, css: &str) {
    for _ in 0..20 {
        if focused(browser, css).await {
            return;
        }
        press(browser, Key::Tab).await;
    }
    panic!("Tab never reached {css}");
}

/// A tap: a touch pointer down and up on the element's centre.
async fn tap(browser: &Browser, element: &Element) {
    let touch = TouchActions::new("finger".into())
        .then(PointerAction::MoveToElement { element: element.clone(), duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    browser.perform_actions(touch).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// A click or a tap, as `input` does it.
async fn point(browser: &Browser, input: Input, element: &Element) {
    match input {
        Input::Touch => tap(browser, element).await,
        _ => {
            element.click().await.unwrap();
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
    }
}

/// Scrolls the option list one notch down: the wheel for a mouse, a swipe up for a finger.
async fn scroll_list(browser: &Browser, input: Input) {
    let list = browser.wait_css(".askuser-list").await;
    match input {
        Input::Touch => {
            let swipe = TouchActions::new("finger".into())
                .then(PointerAction::MoveToElement { element: list, duration: None, x: 0.0, y: 60.0 })
                .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
                .then(PointerAction::MoveBy { duration: Some(Duration::from_millis(250)), x: 0.0, y: -150.0 })
                .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
            browser.perform_actions(swipe).await.unwrap();
        }
        _ => {
            // The wheel turns where the pointer is: over the list, in the viewport.
            browser.execute("arguments[0].scrollIntoView({block: 'center'})", vec![serde_json::to_value(&list).unwrap()]).await.unwrap();
            let rect = browser
                .execute(
                    "const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height]",
                    vec![serde_json::to_value(&list).unwrap()],
                )
                .await
                .unwrap();
            let [x, y, w, h] = [0, 1, 2, 3].map(|i| rect[i].as_f64().unwrap());
            let (x, y) = ((x + w / 2.0) as i64, (y + h / 2.0) as i64);
            let wheel = WheelActions::new("wheel".into()).then(WheelAction::Scroll { duration: None, x, y, delta_x: 0, delta_y: 120 });
            browser.perform_actions(wheel).await.unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The row named `name`, scrolling the list (by `input`) until it is shown.
async fn reach(browser: &Browser, input: Input, role: &str, name: &str) -> Element {
    for _ in 0..20 {
        for e in browser.find_all(Locator::Css(&format!("[role={role}]"))).await.unwrap() {
            if e.text().await.unwrap_or_default().trim_start().trim_start_matches(|c: char| c.is_ascii_digit() || c == '.').trim() == name
                && e.is_displayed().await.unwrap()
            {
                return e;
            }
        }
        scroll_list(browser, input).await;
    }
    panic!("{input:?}: the list never showed {name:?}");
}

async fn result_of(asking: tokio::task::JoinHandle<reqwest::Response>) -> Value {
    tokio::time::timeout(Duration::from_secs(10), asking).await.expect("the agent gets its answer").unwrap().json().await.unwrap()
}

fn three_questions() -> Value {
    let features: Vec<Value> = (1..=10).map(|i| json!({"label": format!("Feature {i}")})).collect();
    json!({"questions": [
        {"question": "Which features?", "header": "Features", "multiSelect": true, "options": features},
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "PostgreSQL", "preview": "CREATE TABLE t (id int);"}, {"label": "SQLite"}]},
        {"question": "What should the service be called?", "header": "Name"}
    ], "agent": {"name": "input-test", "sessionId": "i-1"}})
}

/// Answers the three questions with `input` alone.
async fn answer_three(b: &Browser, input: Input) {
    b.row("checkbox", "Feature 1").await;
    if input == Input::Keyboard {
        press(b, Key::Down).await;
        b.keys(" ").await; // Feature 2
        for _ in 0..8 {
            press(b, Key::Down).await;
        }
        b.keys(" ").await; // Feature 10
        tab_to(b, "details.askuser-notes summary").await;
        press(b, Key::Enter).await;
        // The caret moves on the details' `toggle` event, which browsers fire in a task of
        // its own after the key: looked for until then (it failed once, looked at at once).
        assert!(focused_soon(b, "textarea[data-notes]").await, "opening the note puts the caret in it");
        b.keys("10 can wait").await;
        tab_to(b, "[data-action=enter]").await;
        press(b, Key::Enter).await; // Next
        b.row("radio", "SQLite").await;
        press(b, Key::Down).await;
        press(b, Key::Enter).await; // SQLite, on to the name
        b.wait_css("textarea.askuser-other").await;
        // Back to the question tabs: ← and → move between them there, even from a
        // free-text question, and the focus stays on the tabs.
        for _ in 0..20 {
            if focused(b, "[role=tab]").await {
                break;
            }
            b.keys(&format!("{}{}{}", Key::Shift, Key::Tab, Key::Null)).await;
        }
        assert!(focused(b, "[role=tab][aria-selected=true]").await, "Shift+Tab reaches the active tab");
        press(b, Key::Left).await;
        assert!(focused(b, "[role=tab][aria-selected=true]").await && b.row("radio", "SQLite").await.is_displayed().await.unwrap());
        press(b, Key::Right).await;
        assert!(focused(b, "[role=tab][aria-selected=true]").await);
        press(b, Key::Tab).await;
        assert!(focused(b, "textarea.askuser-other").await, "Tab goes from the tabs into the question");
        b.keys("billing").await;
        press(b, Key::Enter).await; // on to the review
        b.wait_css("[data-submit]").await;
        press(b, Key::Enter).await;
        return;
    }
    let feature2 = reach(b, input, "checkbox", "Feature 2").await;
    point(b, input, &feature2).await;
    let feature10 = reach(b, input, "checkbox", "Feature 10").await;
    point(b, input, &feature10).await;
    point(b, input, &b.wait_css("details.askuser-notes summary").await).await;
    b.wait_css("textarea[data-notes]").await.send_keys("10 can wait").await.unwrap();
    point(b, input, &b.wait_css("[data-action=enter]").await).await; // Next
    point(b, input, &b.row("radio", "SQLite").await).await; // chosen
    point(b, input, &b.wait_css("[data-action=enter]").await).await; // Next: on to the name
    let name = b.wait_css("textarea.askuser-other").await;
    point(b, input, &name).await;
    name.send_keys("billing").await.unwrap();
    point(b, input, &b.wait_css("[data-action=enter]").await).await; // on to the review
    point(b, input, &b.wait_css("[data-submit]").await).await;
}

/// Declines (or, with `chat`, declines to talk it over) with `input` alone.
async fn decline(b: &Browser, input: Input, chat: bool) {
    b.row("radio", "Yes").await;
    let button = if chat { "[data-action=chat]" } else { "[data-action=decline]" };
    match input {
        Input::Keyboard if !chat => press(b, Key::Escape).await,
        Input::Keyboard => {
            tab_to(b, button).await;
            press(b, Key::Enter).await;
        }
        _ => point(b, input, &b.wait_css(button).await).await,
    }
}

async fn every_flow(input: Input, width: u32) {
    let bridge: TestBridge = bridge().await;
    let b = person(input, width).await;
    b.goto(&format!("{}/#token={TOKEN}", bridge.url)).await.unwrap();

    let asking = bridge.ask(three_questions(), "canonical");
    answer_three(&b, input).await;
    let result = result_of(asking).await;
    let what = format!("{input:?} at {width} px: {result}");
    assert_eq!(result["status"], "answered", "{what}");
    assert_eq!(result["answers"][0]["answer"], json!(["Feature 2", "Feature 10"]), "{what}");
    assert_eq!(result["answers"][0]["notes"], "10 can wait", "{what}");
    assert_eq!(result["answers"][1]["answer"], "SQLite", "{what}");
    assert_eq!(result["answers"][2]["answer"], "billing", "{what}");

    for chat in [false, true] {
        let asking = bridge.ask(json!({"question": "Deploy now?", "choices": ["Yes", "No"]}), "canonical");
        decline(&b, input, chat).await;
        let result = result_of(asking).await;
        assert_eq!(result["status"], "cancelled", "{input:?} at {width} px, chat {chat}: {result}");
        assert_eq!(result.get("chat").and_then(Value::as_bool).unwrap_or(false), chat, "{input:?} at {width} px: {result}");
    }
    b.close().await;
}

/// Opening the note from its summary by keyboard puts the caret in it: a note typed at
/// once ("use v2 please") is the note's, and its "2" does not pick option 2 and send it
/// (issue 29: it did, with no note); the answer then goes with the note.
#[tokio::test]
async fn a_note_opened_by_keyboard_takes_the_keys_typed_next() {
    needs!(Chromium);
    let bridge: TestBridge = bridge().await;
    let b = person(Input::Keyboard, 1280).await;
    b.goto(&format!("{}/#token={TOKEN}", bridge.url)).await.unwrap();
    let asking = bridge.ask(json!({"question": "Which API?", "choices": ["v1", "v2", "v3"]}), "canonical");
    b.row("radio", "v1").await;
    tab_to(&b, "details.askuser-notes summary").await;
    press(&b, Key::Enter).await;
    b.keys("use v2 please").await;
    assert!(focused(&b, "textarea[data-notes]").await, "the note has the caret");
    let note = b.execute("return document.querySelector('textarea[data-notes]').value", vec![]).await.unwrap();
    assert_eq!(note, "use v2 please");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!asking.is_finished(), "typing the note sent nothing");
    point(&b, Input::Keyboard, &b.row("radio", "v3").await).await;
    point(&b, Input::Keyboard, &b.wait_css("[data-action=enter]").await).await;
    let result = result_of(asking).await;
    assert_eq!(
        (result["answers"][0]["answer"].as_str(), result["answers"][0]["notes"].as_str()),
        (Some("v3"), Some("use v2 please")),
        "{result}"
    );
    b.close().await;
}

/// A click or a tap chooses an option and only Submit sends it (issue 50 D4: the click
/// sent at once, so a misclick could not be undone, nor a note written after choosing):
/// option 2, then option 3, then Submit answers option 3, with the note written between.
async fn a_click_chooses_and_submit_sends(input: Input, width: u32) {
    let bridge: TestBridge = bridge().await;
    let b = person(input, width).await;
    b.goto(&format!("{}/#token={TOKEN}", bridge.url)).await.unwrap();
    let asking = bridge.ask(json!({"question": "Which API?", "choices": ["v1", "v2", "v3"]}), "canonical");
    point(&b, input, &b.row("radio", "v2").await).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!asking.is_finished(), "{input:?}: the click on v2 sent it");
    point(&b, input, &b.row("radio", "v3").await).await;
    point(&b, input, &b.wait_css("details.askuser-notes summary").await).await;
    b.wait_css("textarea[data-notes]").await.send_keys("v2 is deprecated").await.unwrap();
    let mut chosen = vec![];
    for name in ["v1", "v2", "v3"] {
        chosen.push(b.row("radio", name).await.attr("aria-checked").await.unwrap().unwrap_or_default());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!asking.is_finished(), "{input:?}: sent before Submit");
    point(&b, input, &b.wait_css("[data-action=enter]").await).await;
    let result = result_of(asking).await;
    b.close().await;
    assert_eq!(chosen, ["false", "false", "true"], "{input:?}: shown as chosen");
    assert_eq!(
        (result["answers"][0]["answer"].as_str(), result["answers"][0]["notes"].as_str()),
        (Some("v3"), Some("v2 is deprecated")),
        "{input:?}: {result}"
    );
}

#[tokio::test]
async fn a_click_chooses_and_submit_sends_at_1280_px() {
    needs!(Chromium);
    a_click_chooses_and_submit_sends(Input::Mouse, 1280).await;
}

#[tokio::test]
async fn a_tap_chooses_and_submit_sends_at_360_px() {
    needs!(Chromium);
    a_click_chooses_and_submit_sends(Input::Touch, 360).await;
}

#[tokio::test]
async fn every_flow_by_keyboard_alone_at_1280_px() {
    needs!(Chromium);
    every_flow(Input::Keyboard, 1280).await;
}

#[tokio::test]
async fn every_flow_by_keyboard_alone_at_360_px() {
    needs!(Chromium);
    every_flow(Input::Keyboard, 360).await;
}

#[tokio::test]
async fn every_flow_by_mouse_alone_at_1280_px() {
    needs!(Chromium);
    every_flow(Input::Mouse, 1280).await;
}

#[tokio::test]
async fn every_flow_by_mouse_alone_at_360_px() {
    needs!(Chromium);
    every_flow(Input::Mouse, 360).await;
}

#[tokio::test]
async fn every_flow_by_touch_alone_at_1280_px() {
    needs!(Chromium);
    every_flow(Input::Touch, 1280).await;
}

#[tokio::test]
async fn every_flow_by_touch_alone_at_360_px() {
    needs!(Chromium);
    every_flow(Input::Touch, 360).await;
}

/// What a long list shows: the visible rows, the first one's index, where the last row,
/// the buttons and the dialog end, the window's height, the page's scroll and a row's
/// pitch.
async fn list_layout(b: &Browser) -> Value {
    let measure = r#"
        const rows = [...document.querySelectorAll('.askuser-list .askuser-row')];
        const bottom = css => document.querySelector(css).getBoundingClientRect().bottom;
        return {
            rows: rows.length,
            first: Number(rows[0].dataset.row),
            lastBottom: rows[rows.length - 1].getBoundingClientRect().bottom,
            submitBottom: bottom('[data-action=enter]'),
            actionsBottom: bottom('.askuser-actions'),
            dialogBottom: bottom('.askuser-dialog'),
            height: window.innerHeight,
            scrolled: window.scrollY,
            pitch: rows[1].getBoundingClientRect().top - rows[0].getBoundingClientRect().top,
        };
    "#;
    b.execute(measure, vec![]).await.unwrap()
}

fn long_list(n: usize) -> Value {
    let options: Vec<Value> = (1..=n).map(|i| json!({"label": format!("Option {i}")})).collect();
    json!({"questions": [{"question": "Which option?", "header": "Long", "options": options}],
           "agent": {"name": "list-test", "sessionId": "l-1"}})
}

/// The "↓ N more" button, pressed as `input` does it; the first visible row before and after.
async fn more_down(b: &Browser, input: Input) -> (u64, u64) {
    let before = list_layout(b).await["first"].as_u64().unwrap();
    let more = b.find_all(Locator::Css("button.askuser-more")).await.unwrap();
    let mut down = None;
    for m in more {
        if m.text().await.unwrap().starts_with('↓') {
            down = Some(m);
        }
    }
    point(b, input, &down.expect("a ↓ more button")).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    (before, list_layout(b).await["first"].as_u64().unwrap())
}

/// Everything shown fits in the window without scrolling the page: the last row and
/// the dialog's buttons end inside it.
fn assert_on_screen(l: &Value, what: &str) {
    let height = l["height"].as_f64().unwrap();
    assert!(l["lastBottom"].as_f64().unwrap() <= height, "{what}: the last row is below the window: {l}");
    assert!(l["submitBottom"].as_f64().unwrap() <= height, "{what}: Submit is below the window: {l}");
    assert!(l["actionsBottom"].as_f64().unwrap() <= height, "{what}: Decline or Chat is below the window: {l}");
    assert_eq!(l["scrolled"].as_f64(), Some(0.0), "{what}: the page had to scroll: {l}");
}

/// The list uses the room it has: under the dialog (or, when the key help does not
/// fit, under its buttons) there is not room for two more rows (one is kept for
/// "↑ N more", which shows once the list has moved).
fn assert_fills(l: &Value, what: &str) {
    let (height, pitch) = (l["height"].as_f64().unwrap(), l["pitch"].as_f64().unwrap());
    let end = match l["dialogBottom"].as_f64().unwrap() {
        bottom if bottom <= height => bottom,
        _ => l["actionsBottom"].as_f64().unwrap(),
    };
    assert!(height - end < 2.0 * pitch + 16.0, "{what}: {} px left unused under the dialog: {l}", height - end);
}

/// Sets the page's size (not the window's, whose frame takes some), as a person's
/// screen or a resized window would; the page hears a `resize`.
async fn page_size(b: &Browser, width: u32, height: u32) {
    let metrics = json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false});
    b.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// A long list shows as many rows as the page has room for (it showed 7, with empty
/// space below), never pushing Submit off the screen, and follows the window's size;
/// "↓ N more" moves a page, as Page Down does, not one row.
#[tokio::test]
async fn a_long_list_shows_the_rows_that_fit_and_more_moves_a_page_at_1280_px() {
    needs!(Chromium);
    let bridge: TestBridge = bridge().await;
    let b = person(Input::Mouse, 1280).await;
    page_size(&b, 1280, 800).await;
    b.goto(&format!("{}/#token={TOKEN}", bridge.url)).await.unwrap();
    let _asking = bridge.ask(long_list(40), "canonical");
    b.row("radio", "Option 1").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let l = list_layout(&b).await;
    b.shot("long-list-1280").await;
    let shown = l["rows"].as_u64().unwrap();
    assert!(shown > 7, "more than the 7 rows it showed: {l}");
    assert_on_screen(&l, "1280×800");
    assert_fills(&l, "1280×800");
    let (before, after) = more_down(&b, Input::Mouse).await;
    assert_eq!(after - before, shown - 1, "↓ more moves by the visible rows minus one ({shown} shown)");
    assert_on_screen(&list_layout(&b).await, "1280×800 after ↓ more");

    // A taller window shows more rows; a shorter one fewer, its buttons still on screen.
    page_size(&b, 1280, 1080).await;
    let tall = list_layout(&b).await;
    assert!(tall["rows"].as_u64().unwrap() >= shown + 5, "1080 px high: {tall}");
    assert_on_screen(&tall, "1280×1080");
    assert_fills(&tall, "1280×1080");
    page_size(&b, 1280, 600).await;
    let short = list_layout(&b).await;
    assert!((3..shown).contains(&short["rows"].as_u64().unwrap()), "600 px high: {short}");
    assert_on_screen(&short, "1280×600");
    b.close().await;
}

/// On a phone too: as many rows as fit, Submit on screen, also once "↑ N more" shows
/// above the rows; a tap on "↓ N more" moves a page.
#[tokio::test]
async fn a_long_list_on_a_phone_shows_the_rows_that_fit_with_submit_on_screen() {
    needs!(Chromium);
    let bridge: TestBridge = bridge().await;
    let b = person(Input::Touch, 360).await;
    b.goto(&format!("{}/#token={TOKEN}", bridge.url)).await.unwrap();
    let _asking = bridge.ask(long_list(40), "canonical");
    b.row("radio", "Option 1").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let l = list_layout(&b).await;
    b.shot("long-list-phone").await;
    assert_on_screen(&l, "360×740");
    assert_fills(&l, "360×740");
    let shown = l["rows"].as_u64().unwrap();
    assert!(shown >= 3, "{l}");
    let (before, after) = more_down(&b, Input::Touch).await;
    assert_eq!(after - before, shown - 1, "a tap on ↓ more moves by the visible rows minus one ({shown} shown)");
    let moved = list_layout(&b).await;
    b.shot("long-list-phone-moved").await;
    assert_on_screen(&moved, "360×740 after ↓ more");
    b.close().await;
}
