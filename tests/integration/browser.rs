//! The served page in a real headless Chromium, driven over WebDriver (chromedriver),
//! against a real bridge: an agent asks over HTTP, a person answers by keyboard.
//!
//! With `ASKUSER_SCREENSHOTS=DIR` set, the tests also save screenshots of the main
//! layouts there (the README's pictures come from this).

use crate::support::{bridge, bridge_at, browser, browser_with, touch_browser, Browser, TestBridge, TOKEN};
use fantoccini::key::Key;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::time::Duration;

async fn open(b: &TestBridge, browser: &Browser) {
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
}

/// The header's History button.
async fn history_button(browser: &Browser) -> fantoccini::elements::Element {
    // The app's header, shown: not the one the bridge wrote into the page before the app
    // took over (the app waits hidden behind it until then).
    for _ in 0..200 {
        if let Ok(button) = browser.find(Locator::XPath("//header//button[text()='History']")).await {
            if button.is_displayed().await.unwrap_or(false) {
                return button;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no History button shown within 10 s");
}

fn arrow_down() -> String {
    Key::Down.to_string()
}

fn enter() -> String {
    Key::Enter.to_string()
}

#[tokio::test]
async fn an_agent_asks_and_a_person_answers_by_keyboard() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let asking = b.ask(
        json!({"questions": [
            {"question": "Which database should we use?", "header": "Database",
             "options": [{"label": "PostgreSQL (Recommended)", "description": "Battle-tested relational DB"}, {"label": "SQLite", "description": "Lightweight, file-based"}]},
            {"question": "Which features should we include?", "header": "Features", "multiSelect": true,
             "options": [{"label": "Authentication", "description": "OAuth2 + JWT"}, {"label": "REST API"}, {"label": "Admin Dashboard"}]},
            {"question": "What should we name this service?", "header": "Name"}
        ], "agent": {"name": "claude-code", "sessionId": "s-1"}}),
        "canonical",
    );
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "SQLite").await;
    // The token left the address bar.
    assert!(browser.current_url().await.unwrap().fragment().is_none_or(|f| !f.contains(TOKEN)));
    browser.shot("single-select").await;

    browser.keys(&(arrow_down() + &enter())).await; // SQLite, then on to Features
    browser.row("checkbox", "REST API").await;
    browser.keys(" ").await; // Authentication
    browser.keys(&(arrow_down() + &arrow_down())).await;
    browser.keys(" ").await; // Admin Dashboard
    assert_eq!(browser.row("checkbox", "Admin Dashboard").await.attr("aria-checked").await.unwrap().as_deref(), Some("true"));
    browser.shot("multi-select").await;
    browser.keys(&enter()).await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("order-processor").await;
    browser.shot("free-text").await;
    browser.keys(&enter()).await; // on to the Submit tab's review
    let review = browser.wait_css("[role=tabpanel]").await.text().await.unwrap();
    assert!(review.contains("order-processor"), "{review}");
    browser.shot("submit-review").await;
    browser.keys(&enter()).await;

    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!(result["status"], "answered");
    assert_eq!(result["answers"][0]["answer"], "SQLite");
    assert_eq!(result["answers"][1]["answer"], json!(["Authentication", "Admin Dashboard"]));
    assert_eq!(result["answers"][2]["answer"], "order-processor");
}

#[tokio::test]
async fn a_reload_mid_answer_loses_nothing() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let asking = b.ask(
        json!({"questions": [{"question": "Which features?", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "API"}, {"label": "UI"}]}]}),
        "canonical",
    );
    let browser = browser(900, 600).await;
    open(&b, &browser).await;
    browser.row("checkbox", "API").await;
    browser.keys(" ").await; // Auth
    browser.keys("o").await; // Other, with a typed draft
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("Billing").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    browser.refresh().await.unwrap();
    let auth = browser.row("checkbox", "Auth").await;
    assert_eq!(auth.attr("aria-checked").await.unwrap().as_deref(), Some("true"), "the selection survives the reload");
    if browser.find(Locator::Css("textarea.askuser-other")).await.is_err() {
        browser.keys("o").await;
    }
    let textarea = browser.wait_css("textarea.askuser-other").await;
    assert_eq!(textarea.prop("value").await.unwrap().unwrap_or_default(), "Billing", "the typed draft survives the reload");
    textarea.click().await.unwrap();
    browser.keys(&enter()).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!(result["answers"][0]["answer"], json!(["Auth", "Billing"]));
}

#[tokio::test]
async fn the_inbox_shows_every_agent_and_a_long_list() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let options: Vec<Value> = (1..=12).map(|i| json!({"label": format!("Framework {i}")})).collect();
    let _long = b.ask(
        json!({"questions": [{"question": "Which framework?", "header": "Framework", "options": options}],
        "agent": {"name": "claude-code", "sessionId": "main"}}),
        "canonical",
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _helper = b.ask(
        json!({"question": "May I delete the build cache?", "choices": ["Yes", "No"],
        "agent": {"name": "test-runner", "sessionId": "sub-1", "parentSessionId": "main"}}),
        "canonical",
    );
    let _other = b.ask(json!({"question": "Which region?", "agent": {"name": "codex", "sessionId": "c-9"}}), "canonical");
    let browser = browser(1100, 760).await;
    open(&b, &browser).await;
    browser.row("radio", "Framework 1").await;
    let page = browser.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
    for name in ["claude-code", "test-runner", "codex", "May I delete the build cache?", "Which region?"] {
        assert!(page.contains(name), "{name} is in the inbox:\n{page}");
    }
    assert!(page.contains("more"), "a long list says how many more rows there are:\n{page}");
    browser.shot("inbox-long-list").await;
    browser.close().await;
}

#[tokio::test]
async fn a_snapshot_in_parts_reaches_the_page_whole() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    // 250 pending: the bridge sends the snapshot as three parts of at most 100.
    for i in 0..250 {
        let body = json!({"id": format!("q-{i:03}"), "question": format!("Question {i}?"), "choices": ["Yes", "No"],
            "agent": {"name": format!("agent-{}", i / 50), "sessionId": format!("s-{}", i / 50)}});
        let res = b.post("/v1/ask?wait=false").json(&body).send().await.unwrap();
        assert!(res.status().is_success(), "{}", res.status());
    }
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    let count = browser.wait_css(".askuser-count").await;
    for _ in 0..100 {
        if count.text().await.unwrap() == "250" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count.text().await.unwrap(), "250", "every part counted once");
    assert_eq!(browser.find_all(Locator::Css(".askuser-item")).await.unwrap().len(), 100, "the list shows a hundred");
    let page = browser.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
    assert!(page.contains("… and 150 more waiting"), "{page}");
    assert!(page.contains("agent-0") && page.contains("agent-1"), "{page}");
    browser.row("radio", "Yes").await;
    assert!(page.contains("Question 0?"), "the oldest is active:\n{page}");
    browser.close().await;
}

#[tokio::test]
async fn a_wrong_token_is_named_not_retried_forever() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let browser = browser(900, 600).await;
    browser.goto(&format!("{}/#token=not-the-token", b.url)).await.unwrap();
    let banner = browser.wait_css("[role=alert]").await;
    let mut text = String::new();
    for _ in 0..100 {
        text = banner.text().await.unwrap_or_default();
        if text.contains("refused") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(text.contains("The bridge refused this page's token"), "{text}");
    assert_eq!(browser.find(Locator::Css(".askuser-conn")).await.unwrap().text().await.unwrap(), "wrong token");
    // The right link still works in the same tab.
    browser.goto("about:blank").await.unwrap();
    open(&b, &browser).await;
    // The page mounts once its wasm has loaded: wait for it, then for the connection.
    let conn = browser.wait_css(".askuser-conn").await;
    for _ in 0..100 {
        if conn.text().await.unwrap_or_default() == "connected" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(conn.text().await.unwrap(), "connected");
    browser.close().await;
}

/// When the asking agent goes away, the dialog says that nobody waits for the answer.
#[tokio::test]
async fn the_dialog_says_when_nobody_waits_for_the_answer() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let asking =
        b.ask(json!({"question": "Deploy now?", "choices": ["Yes", "No"], "agent": {"name": "ci", "sessionId": "s-gone"}}), "canonical");
    let browser = browser(900, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "Yes").await;
    assert!(browser.find(Locator::Css(".askuser-nobody")).await.is_err(), "the agent is still waiting");
    asking.abort(); // the agent's connection closes
    let note = browser.wait_css(".askuser-nobody").await.text().await.unwrap();
    browser.close().await;
    assert!(note.contains("Nobody is waiting for this answer now"), "{note}");
}

/// On a 360 px phone, by taps alone: the question comes first, the inbox is a drawer, a
/// long list scrolls by tapping "↓ more", and Next, Submit and a note need no key.
#[tokio::test]
async fn a_phone_answers_by_taps_alone() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let options: Vec<Value> = (1..=10).map(|i| json!({"label": format!("Feature {i}")})).collect();
    let asking = b.ask(
        json!({"questions": [
            {"question": "Which features?", "header": "Features", "multiSelect": true, "options": options},
            {"question": "Which database?", "options": [{"label": "PostgreSQL", "preview": "CREATE TABLE t (id int);"}, {"label": "SQLite"}]}
        ], "agent": {"name": "phone-test", "sessionId": "p-1"}}),
        "canonical",
    );
    let browser = browser(360, 740).await;
    open(&b, &browser).await;
    let tap = |css: &'static str| {
        let browser = &browser;
        async move { browser.wait_css(css).await.click().await.unwrap() }
    };
    browser.row("checkbox", "Feature 2").await.click().await.unwrap();
    assert!(!browser.find(Locator::Css("#askuser-inbox")).await.unwrap().is_displayed().await.unwrap(), "the inbox is a drawer");
    for _ in 0..5 {
        match browser.find_all(Locator::Css("button.askuser-more")).await.unwrap().pop() {
            Some(more) if more.text().await.unwrap().starts_with('↓') => more.click().await.unwrap(),
            _ => break,
        }
    }
    browser.row("checkbox", "Feature 10").await.click().await.unwrap();
    tap("details.askuser-notes summary").await;
    browser.wait_css("textarea[data-notes]").await.send_keys("10 can wait").await.unwrap();
    tap("[data-action=enter]").await; // Next
    browser.row("radio", "SQLite").await.click().await.unwrap(); // chosen
    tap("[data-action=enter]").await; // Next: on to the review
    browser.shot("phone-review").await;
    tap("[data-submit]").await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    tap(".askuser-drawer-toggle").await;
    let shown = browser.find(Locator::Css("#askuser-inbox")).await.unwrap().is_displayed().await.unwrap();
    browser.close().await;
    assert!(shown, "the drawer opens");
    assert_eq!(result["answers"][0]["answer"], json!(["Feature 2", "Feature 10"]));
    assert_eq!(result["answers"][0]["notes"], "10 can wait");
    assert_eq!(result["answers"][1]["answer"], "SQLite");
}

/// A phone keeps the question near the top: one header row ("⋯" holds the tools), and
/// every control a finger can hit is at least 44 px high.
#[tokio::test]
async fn a_phone_shows_the_question_near_the_top_with_finger_sized_controls() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(
        json!({"questions": [
            {"question": "Which database?", "header": "DB", "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]},
            {"question": "Deploy now?", "options": [{"label": "Yes"}, {"label": "No"}]}
        ], "agent": {"name": "phone-top", "sessionId": "p-top"}}),
        "canonical",
    );
    let browser = touch_browser(360, 740).await;
    open(&b, &browser).await;
    browser.row("radio", "SQLite").await;
    let measure = r#"
        const top = document.querySelector('.askuser-top').getBoundingClientRect();
        const question = document.querySelector('.askuser-current').getBoundingClientRect();
        const small = [...document.querySelectorAll('button, [role=tab], [role=radio], [role=checkbox]')]
            .filter((e) => e.offsetParent !== null)
            .map((e) => [e.textContent.trim().slice(0, 20), Math.round(e.getBoundingClientRect().height)])
            .filter(([, h]) => h < 44);
        return [top.height, question.top, small];
    "#;
    let [header, question, small]: [Value; 3] = serde_json::from_value(browser.execute(measure, vec![]).await.unwrap()).unwrap();
    let history_hidden = !browser.find(Locator::XPath("//header//button[text()='History']")).await.unwrap().is_displayed().await.unwrap();
    browser.find(Locator::Css(".askuser-menu-toggle")).await.unwrap().click().await.unwrap();
    let history = browser.find(Locator::XPath("//header//button[text()='History']")).await.unwrap();
    let history_shown = history.is_displayed().await.unwrap();
    browser.close().await;
    assert!(header.as_f64().unwrap() <= 60.0, "one header row: {header} px high");
    assert!(question.as_f64().unwrap() <= 0.15 * 740.0, "the question starts at {question} px of 740");
    assert_eq!(small, json!([]), "controls under 44 px");
    assert!(history_hidden && history_shown, "the tools are behind ⋯");
}

/// A question answered elsewhere while this window shows it steps aside for the next one,
/// says what was answered, and keeps what was typed here.
#[tokio::test]
async fn answered_elsewhere_steps_aside_and_keeps_what_was_typed() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _first = b.ask(json!({"id": "first", "question": "Which region?", "choices": ["eu", "us"]}), "canonical");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _second = b.ask(json!({"id": "second", "question": "Deploy now?", "choices": ["Yes", "No"]}), "canonical");
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "eu").await;
    browser.keys("o").await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("ap-south, if allowed").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answered = b.post("/v1/questions/first/answer").json(&json!({"answers": ["us"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    browser.row("radio", "Yes").await; // the next question, at once
    let notice = browser.wait_css(".askuser-closed").await.text().await.unwrap();
    browser.close().await;
    assert!(notice.contains("“Which region?” was answered via http: the admin token: us."), "{notice}");
    assert!(notice.contains("What you had typed here: ap-south, if allowed"), "{notice}");
}

/// The history is the bridge's: what the agents received, searchable, paged, and still
/// there after a reload.
#[tokio::test]
async fn the_history_comes_from_the_bridge_and_survives_a_reload() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    for i in 0..25 {
        let q = if i == 7 { "Which database?".to_owned() } else { format!("Question number {i}?") };
        let asked = b
            .post("/v1/ask?wait=false")
            .json(&json!({"id": format!("h-{i}"), "question": q, "choices": ["Yes", "No"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(asked.status(), 202);
        let answered = b.post(&format!("/v1/questions/h-{i}/answer")).json(&json!({"answers": ["Yes"]})).send().await.unwrap();
        assert_eq!(answered.status(), 200);
    }
    let browser = browser(1000, 800).await;
    open(&b, &browser).await;
    let toggle = history_button(&browser).await;
    toggle.click().await.unwrap();
    browser.wait_css(".askuser-history li").await;
    assert_eq!(history_entries(&browser).await, 20, "a page of 20");
    let first = browser.wait_css(".askuser-history li").await.text().await.unwrap();
    assert!(first.contains("Question number 24?") && first.contains("answered via http"), "newest first: {first}");
    browser.wait_css(".askuser-history button").await.click().await.unwrap(); // Older
    for _ in 0..50 {
        if history_entries(&browser).await == 25 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(history_entries(&browser).await, 25, "the older ones appended");
    browser.wait_css("input.askuser-search").await.send_keys("database").await.unwrap();
    for _ in 0..50 {
        if history_entries(&browser).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(history_entries(&browser).await, 1, "searched");
    browser.refresh().await.unwrap();
    history_button(&browser).await.click().await.unwrap();
    let after = browser.wait_css(".askuser-history li").await.text().await.unwrap();
    browser.close().await;
    assert!(after.contains("Question number 24?"), "the history survives a reload: {after}");
}

async fn history_entries(browser: &crate::support::Browser) -> usize {
    browser.find_all(Locator::Css(".askuser-history li")).await.unwrap().len()
}

/// axe-core in the page, unless it is there already (from .tools/axe: scripts/setup).
async fn load_axe(browser: &crate::support::Browser) {
    if browser.execute("return typeof axe", vec![]).await.unwrap() != json!("object") {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.tools/axe/node_modules/axe-core/axe.min.js");
        let source = std::fs::read_to_string(path).expect("axe-core (scripts/setup installs it into .tools/axe)");
        browser.execute(&source, vec![]).await.unwrap();
    }
}

/// axe-core's audit of the page, as `id: targets` per violation.
pub(crate) async fn axe(browser: &crate::support::Browser) -> Vec<String> {
    load_axe(browser).await;
    let found = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']})
                .then(r => done(r.violations.map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))))
                .catch(e => done(['axe failed: ' + e]));",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(found).unwrap()
}

/// Every state of the page passes axe-core: questions of each kind with a preview and a
/// note, the review, the decline prompt, the history, and the phone layout with the drawer.
#[tokio::test]
async fn every_state_of_the_page_passes_an_axe_audit() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(
        json!({"questions": [
            {"question": "Which database should we use?", "header": "Database",
             "options": [{"label": "PostgreSQL", "description": "Relational", "preview": "CREATE TABLE t (id int);"}, {"label": "SQLite"}]},
            {"question": "Which features?", "header": "Features", "multiSelect": true, "options": [{"label": "Auth"}, {"label": "API"}]},
            {"question": "What should we name it?"}
        ], "agent": {"name": "claude-code", "sessionId": "s-axe"}}),
        "canonical",
    );
    let done =
        b.post("/v1/ask?wait=false").json(&json!({"id": "old", "question": "Earlier?", "choices": ["Yes", "No"]})).send().await.unwrap();
    assert_eq!(done.status(), 202);
    b.post("/v1/questions/old/answer").json(&json!({"answers": ["Yes"]})).send().await.unwrap();
    let browser = browser(1280, 900).await;
    open(&b, &browser).await;
    browser.row("radio", "SQLite").await;
    let mut found = vec![];
    let mut audit = |state: &str, violations: Vec<String>| found.extend(violations.into_iter().map(|v| format!("{state}: {v}")));
    audit("single select with a preview", axe(&browser).await);
    browser.keys(&enter()).await; // PostgreSQL, on to Features
    browser.row("checkbox", "Auth").await;
    browser.wait_css("details.askuser-notes summary").await.click().await.unwrap();
    audit("multi-select with the note open", axe(&browser).await);
    browser.row("checkbox", "Auth").await.click().await.unwrap();
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    browser.wait_css("textarea.askuser-other").await;
    audit("free text", axe(&browser).await);
    browser.keys("svc").await;
    browser.keys(&enter()).await;
    browser.wait_css("[data-submit]").await;
    audit("the review", axe(&browser).await);
    browser.wait_css("[data-action=decline]").await.click().await.unwrap();
    browser.wait_css("[role=alertdialog]").await;
    audit("the decline prompt", axe(&browser).await);
    browser.keys("n").await;
    history_button(&browser).await.click().await.unwrap();
    browser.wait_css(".askuser-history li").await;
    audit("the history", axe(&browser).await);
    browser.set_window_size(360, 740).await.unwrap();
    browser.wait_css(".askuser-drawer-toggle").await.click().await.unwrap();
    audit("a phone with the inbox drawer open", axe(&browser).await);
    browser.close().await;
    assert!(found.is_empty(), "axe-core found:\n{}", found.join("\n"));
}

/// The looks every state is audited in: name, page size, touch (`pointer: coarse`), scheme.
const LOOKS: [(&str, u32, u32, bool, &str); 4] = [
    ("desktop light", 1280, 800, false, "light"),
    ("desktop dark", 1280, 800, false, "dark"),
    ("phone light", 360, 740, true, "light"),
    ("phone dark", 360, 740, true, "dark"),
];

/// Gives the page one of [`LOOKS`] through DevTools' emulation (the same page, so a state
/// need not be walked to again), and checks that the page sees it.
async fn look(browser: &Browser, (name, width, height, touch, scheme): (&str, u32, u32, bool, &str)) {
    let metrics = json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": touch});
    browser.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    browser.cdp("Emulation.setTouchEmulationEnabled", json!({"enabled": touch, "maxTouchPoints": 5})).await;
    browser.cdp("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]})).await;
    let seen = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             requestAnimationFrame(() => requestAnimationFrame(() => done({width: innerWidth,
                 coarse: matchMedia('(pointer: coarse)').matches, dark: matchMedia('(prefers-color-scheme: dark)').matches})));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(seen, json!({"width": width, "coarse": touch, "dark": scheme == "dark"}), "{name}");
}

/// axe-core's violations, as `id (impact): target (why)` per node.
async fn axe_violations(browser: &Browser) -> Vec<String> {
    load_axe(browser).await;
    let found = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']})
                .then(r => done(r.violations.flatMap(v => v.nodes.map(n =>
                    v.id + ' (' + (n.impact || v.impact) + '): ' + n.target.join(' ') + ' ('
                        + [...n.any, ...n.all, ...n.none].map(c => c.message).join('; ') + ')'))))
                .catch(e => done(['axe failed (critical): ' + e]));",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(found).unwrap()
}

/// Audits the page as it is in each of `looks`, then gives it the first look back.
async fn audit_in(browser: &Browser, state: &str, looks: &[(&str, u32, u32, bool, &str)], found: &mut Vec<String>) {
    for &l in looks {
        look(browser, l).await;
        found.extend(axe_violations(browser).await.into_iter().map(|v| format!("{state}, {}: {v}", l.0)));
    }
    look(browser, LOOKS[0]).await;
}

/// Clicks the header's button named `text`, shown or behind "⋯".
async fn click_tool(browser: &Browser, text: &str) {
    let click = "const b = [...document.querySelectorAll('header button')].find(b => b.textContent === arguments[0]);
                 if (b) b.click(); return !!b;";
    assert_eq!(browser.execute(click, vec![json!(text)]).await.unwrap(), json!(true), "no header button {text:?}");
}

/// Issue 50: axe-core finds nothing (serious, critical nor lesser) in any of the page's main states
/// (the empty inbox, each panel, each kind of question and approval, Other being typed,
/// a markdown preview, the review, the decline prompt, the toast, a free-text question,
/// a set answered elsewhere, a list longer than the screen, the phone's drawer and menu,
/// the question before the app, a wrong token, the reconnecting banner), each at 1280×800
/// and at 360×740 with touch, light and dark.
#[tokio::test]
async fn axe_finds_nothing_in_any_state_light_or_dark_desktop_or_phone() {
    needs!(Chromium, Axe);
    let b = crate::support::bridge_configured(tempfile::tempdir().unwrap(), |opts| {
        opts.notify.push_services = askuser_bridge::notify::PushServices { hosts: vec!["127.0.0.1".into()], plain_http: true };
    })
    .await;
    // Something in History and in Rules.
    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(cargo test:*)", "project": "/srv/app"})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let call = json!({"tool_name": "Bash", "input": {"command": "cargo test --all"}, "cwd": "/srv/app"});
    let decided: Value = b.post("/v1/approve").json(&call).send().await.unwrap().json().await.unwrap();
    assert_eq!(decided["decidedBy"], "rule");
    let done = b
        .post("/v1/ask?wait=false")
        .json(&json!({"id": "old", "question": "Ship **it**?\n```\nmake ship\n```", "choices": ["Yes", "No"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    b.post("/v1/questions/old/answer").json(&json!({"answers": ["Yes"]})).send().await.unwrap();

    let browser = browser(1280, 800).await;
    look(&browser, LOOKS[0]).await;
    open(&b, &browser).await;
    let mut found = vec![];
    text_with(&browser, ".askuser-empty", "No questions waiting").await;
    audit_in(&browser, "the empty inbox", &LOOKS, &mut found).await;
    for (tool, shown, wanted) in [
        ("Pair a device", ".askuser-pair", "a phone cannot open it"),
        ("Push even when closed", ".askuser-push", "Send questions to this device"),
        ("Rules", ".askuser-rules-panel", "Bash(cargo test:*) in /srv/app"),
        ("History", ".askuser-history", "Ship"),
    ] {
        click_tool(&browser, tool).await;
        text_with(&browser, shown, wanted).await;
        audit_in(&browser, &format!("the {tool} panel"), &LOOKS, &mut found).await;
        click_tool(&browser, tool).await;
    }

    // A question set: single-select, a markdown preview, multi-select.
    let sidebar = "## Sidebar\n\nSections on the **left**, the page on the right:\n\n- General\n- Account\n\n\
        ```\n+---------+------------------------------------------------------------------------------+\n\
        | General | Theme: [dark v]   Font: [14]   Density: [comfortable v]   Language: [English v]  |\n\
        +---------+------------------------------------------------------------------------------+\n```\n\n\
        | Key | Value |\n|---|---|\n| Theme | dark |\n\n> Quoted `code` and a [link](https://example.com).";
    let asking = b.ask(
        json!({"questions": [
            {"question": "Which database should we use?", "header": "Database",
             "options": [{"label": "PostgreSQL (Recommended)", "description": "Battle-tested relational DB"}, {"label": "SQLite", "description": "Lightweight, file-based"}]},
            {"question": "Which layout for the settings page?", "header": "Layout",
             "options": [{"label": "Sidebar", "description": "Sections on the left", "preview": sidebar}, {"label": "Tabs"}]},
            {"question": "Which features should we include?", "header": "Features", "multiSelect": true,
             "options": [{"label": "Authentication", "description": "OAuth2 + JWT"}, {"label": "REST API"}, {"label": "Admin Dashboard"}]}
        ], "agent": {"name": "claude-code", "sessionId": "s-axe-all"}}),
        "canonical",
    );
    browser.row("radio", "SQLite").await;
    audit_in(&browser, "a single-select question", &LOOKS, &mut found).await;
    browser.keys(&Key::End.to_string()).await;
    browser.keys("cassandra").await;
    browser.wait_css("textarea.askuser-other").await;
    audit_in(&browser, "Other being typed", &LOOKS, &mut found).await;
    browser.keys(&enter()).await;
    browser.row("radio", "Sidebar").await;
    text_with(&browser, "pre.askuser-preview", "Sections on the").await;
    audit_in(&browser, "a markdown preview", &LOOKS, &mut found).await;
    browser.keys(&enter()).await;
    browser.row("checkbox", "Authentication").await;
    audit_in(&browser, "a multi-select question", &LOOKS, &mut found).await;
    browser.keys(" ").await;
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    browser.wait_css("[data-submit]").await;
    audit_in(&browser, "the review", &LOOKS, &mut found).await;
    browser.wait_css("[data-action=decline]").await.click().await.unwrap();
    browser.wait_css("[role=alertdialog]").await;
    audit_in(&browser, "the decline prompt", &LOOKS, &mut found).await;
    browser.wait_css("[role=alertdialog] [data-answer=yes]").await.click().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap();
    browser.wait_css(".askuser-toast").await;
    audit_in(&browser, "the toast after a decision", &LOOKS[..1], &mut found).await;

    // A free-text question, typed into and then answered elsewhere: the notice.
    let free = b.ask(
        json!({"id": "free", "question": "What should the release be called?", "agent": {"name": "codex", "sessionId": "s-free"}}),
        "canonical",
    );
    text_with(&browser, ".askuser-current", "What should the release be called?").await;
    browser.wait_css("textarea.askuser-other").await.send_keys("Auro").await.unwrap();
    audit_in(&browser, "a free-text question", &LOOKS, &mut found).await;
    let r = b.post("/v1/questions/free/answer").json(&json!({"answers": ["Borealis"]})).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    tokio::time::timeout(Duration::from_secs(10), free).await.unwrap().unwrap();
    text_with(&browser, ".askuser-closed", "Auro").await;
    audit_in(&browser, "answered elsewhere", &LOOKS, &mut found).await;
    browser.wait_css(".askuser-closed button").await.click().await.unwrap();

    // A list longer than a phone's screen: "↓ N more".
    let options: Vec<Value> = (1..=25).map(|i| json!({"label": format!("Region {i}")})).collect();
    let long = b.ask(
        json!({"id": "long", "questions": [{"question": "Which region?", "header": "Region", "options": options}],
        "agent": {"name": "codex", "sessionId": "s-long"}}),
        "canonical",
    );
    browser.row("radio", "Region 1").await;
    audit_in(&browser, "a 25-option list", &LOOKS, &mut found).await;
    let r = b.post("/v1/questions/long/answer").json(&json!({"answers": ["Region 2"]})).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    tokio::time::timeout(Duration::from_secs(10), long).await.unwrap().unwrap();
    browser.wait_css(".askuser-closed button").await.click().await.unwrap();

    // Approvals: a command too long for a phone's line, then an edit.
    let approve = |call: Value| {
        let request = b.post("/v1/approve").json(&call);
        tokio::spawn(async move { request.send().await.ok()?.json::<Value>().await.ok() })
    };
    let command = "rm -rf build && cargo build --release --workspace --all-features && ./scripts/deploy --region eu-west-1";
    let bash = approve(json!({"tool_name": "Bash", "cwd": "/srv/app", "agent": {"name": "claude-code"},
        "input": {"command": command, "description": "Rebuild and deploy"}}));
    text_with(&browser, ".askuser-command", "eu-west-1").await;
    audit_in(&browser, "an approval with a command", &LOOKS, &mut found).await;
    browser.keys("d").await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("not now").await;
    audit_in(&browser, "a deny message being typed", &LOOKS, &mut found).await;
    browser.keys(&enter()).await;
    let denied = tokio::time::timeout(Duration::from_secs(10), bash).await.unwrap().unwrap().expect("decided");
    assert_eq!(denied["behavior"], "deny", "{denied}");
    let _edit = approve(json!({"tool_name": "Edit", "cwd": "/srv/app", "agent": {"name": "claude-code"},
        "input": {"file_path": "/srv/app/src/db.rs",
            "old_string": "fn open() {\n    sqlite(\"/var/lib/app/data.db\", Options { journal: Wal, busy_timeout: 5000, foreign_keys: true });\n}",
            "new_string": "fn open() {\n    postgres(\"postgres://app@db.internal:5432/app\", Options { pool: 16, statement_timeout: 30000 });\n}"}}));
    text_with(&browser, ".askuser-diff", "postgres(").await;
    audit_in(&browser, "an approval with a diff", &LOOKS, &mut found).await;

    // The phone's inbox drawer and tools menu.
    let phone = &LOOKS[2..];
    for (toggle, state) in [(".askuser-drawer-toggle", "the phone's inbox drawer"), (".askuser-menu-toggle", "the phone's tools menu")] {
        let click = format!("document.querySelector('{toggle}').click()");
        browser.execute(&click, vec![]).await.unwrap();
        assert_eq!(browser.wait_css(toggle).await.attr("aria-expanded").await.unwrap().as_deref(), Some("true"), "{state}");
        audit_in(&browser, &format!("{state} open"), phone, &mut found).await;
        browser.execute(&click, vec![]).await.unwrap();
    }

    // The question before the app, as a phone on a slow connection keeps it (the edit
    // still waits): the bridge's own form.
    browser.slow_and_cold().await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    text_with(&browser, "#askuser-first", "src/db.rs").await;
    audit_in(&browser, "the question before the app", &LOOKS, &mut found).await;
    browser.fast(true).await;

    // A token the bridge does not take, on a device it does not know: the banner that says so.
    browser.delete_all_cookies().await.unwrap();
    browser.goto("about:blank").await.unwrap();
    browser.goto(&format!("{}/#token=not-the-token-0123456789", b.url)).await.unwrap();
    browser.wait_css("[role=alert]").await;
    audit_in(&browser, "a wrong token", &LOOKS, &mut found).await;
    open(&b, &browser).await;
    text_with(&browser, ".askuser-diff", "postgres(").await;

    // The bridge goes away: the reconnecting banner.
    let _dir = b.stop().await;
    browser.wait_css(".askuser-banner").await;
    audit_in(&browser, "the reconnecting banner", &LOOKS, &mut found).await;
    browser.close().await;
    // The serious and critical first.
    found.sort_by_key(|v| !(v.contains(" (serious): ") || v.contains(" (critical): ")));
    assert!(found.is_empty(), "axe-core found {}:\n{}", found.len(), found.join("\n"));
}

/// Dark mode is dark everywhere, the preview box too (it was a white frame), and the
/// preview sits beside the options on a wide screen.
#[tokio::test]
async fn dark_mode_keeps_the_preview_dark_and_beside_the_options() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(
        json!({"questions": [{"question": "Which layout for the settings page?", "header": "Layout", "options": [
            {"label": "Sidebar", "description": "Sections on the left", "preview": "+---------+------------------+\n| General | Theme: [dark v]  |\n| Account | Font:  [14   ]   |\n| Privacy |                  |\n+---------+------------------+"},
            {"label": "Tabs", "description": "Sections as tabs", "preview": "[General] [Account] [Privacy]\n------------------------------\nTheme: [dark v]   Font: [14]"}
        ]}], "agent": {"name": "claude-code", "sessionId": "s-dark"}}),
        "canonical",
    );
    let browser = browser_with(1280, 800, &["--force-dark-mode"]).await;
    open(&b, &browser).await;
    browser.row("radio", "Sidebar").await;
    let preview = browser.wait_css("pre.askuser-preview").await;
    let colours = browser
        .execute(
            "const bg = e => getComputedStyle(e).backgroundColor.match(/\\d+/g).slice(0, 3).map(Number);
             const list = document.querySelector('.askuser-list').getBoundingClientRect();
             const pre = document.querySelector('pre.askuser-preview').getBoundingClientRect();
             return {body: bg(document.body), preview: bg(arguments[0]), beside: pre.left >= list.right - 1};",
            vec![serde_json::to_value(&preview).unwrap()],
        )
        .await
        .unwrap();
    browser.shot("dark-preview").await;
    // On a phone the preview goes below the options.
    browser.set_window_size(360, 740).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let below = browser
        .execute(
            "const list = document.querySelector('.askuser-list').getBoundingClientRect();
             return document.querySelector('pre.askuser-preview').getBoundingClientRect().top >= list.bottom - 1;",
            vec![],
        )
        .await
        .unwrap();
    browser.shot("phone-dark-preview").await;
    browser.close().await;
    let dark = |v: &Value| v.as_array().unwrap().iter().all(|c| c.as_u64().unwrap() < 80);
    assert!(dark(&colours["body"]) && dark(&colours["preview"]), "dark page and preview: {colours}");
    assert_eq!(colours["beside"], true, "{colours}");
    assert_eq!(below, Value::Bool(true), "below the options on a narrow screen");
}

/// An answer given while the bridge is unreachable survives the tab closing: the next
/// tab of the page sends it.
#[tokio::test]
async fn an_answer_given_offline_survives_the_tab_closing() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let asked =
        b.post("/v1/ask?wait=false").json(&json!({"id": "off-1", "question": "Ship it?", "choices": ["Yes", "No"]})).send().await.unwrap();
    assert_eq!(asked.status(), 202);
    let addr = b.running().addr.to_string();
    let url = b.url.clone();
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "No").await;
    let dir = b.stop().await;
    browser.wait_css(".askuser-banner").await; // reconnecting
    browser.row("radio", "No").await.click().await.unwrap();
    browser.wait_css("[data-action=enter]").await.click().await.unwrap(); // answered offline: queued
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The tab closes; a new one opens the page once the bridge is back.
    let fresh = browser.new_window(true).await.unwrap();
    browser.close_window().await.unwrap();
    browser.switch_to_window(fresh.handle).await.unwrap();
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = addr;
    opts.token = Some(TOKEN.into());
    let running = askuser_bridge::start(opts).await.unwrap();
    browser.goto(&format!("{url}/#token={TOKEN}")).await.unwrap();
    let http = askuser_bridge::client::http_client(None);
    let mut status = Value::Null;
    for _ in 0..100 {
        let record: Value = http.get(format!("{url}/v1/questions/off-1")).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap();
        status = record["status"].clone();
        if status == "answered" {
            assert_eq!(record["result"]["answers"][0]["answer"], "No");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    browser.close().await;
    running.stop().await;
    assert_eq!(status, "answered", "the next tab sent the answer given offline");
}

/// Waits until the page's service worker controls it (so it opens without the bridge).
async fn wait_for_service_worker(browser: &Browser) {
    for _ in 0..100 {
        let c = browser.execute("return !!(navigator.serviceWorker && navigator.serviceWorker.controller)", vec![]).await.unwrap();
        if c == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the service worker never controlled the page");
}

/// Opened while the bridge is down, the page shows the questions as it last saw them,
/// with their drafts; an answer given then is queued, counted, kept across a reload, and
/// reaches the agent once the bridge is back.
#[tokio::test]
async fn offline_the_page_shows_the_last_questions_their_drafts_and_queued_answers() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let addr = b.url.trim_start_matches("http://").to_owned();
    let ship = json!({"id": "k-1", "question": "Ship it?", "choices": ["Yes", "No"]});
    let checks = json!({"id": "k-2", "questions": [{"question": "Which checks?", "multiSelect": true,
        "options": [{"label": "lint"}, {"label": "unit tests"}, {"label": "e2e"}]}]});
    for body in [ship, checks] {
        assert_eq!(b.post("/v1/ask?wait=false").json(&body).send().await.unwrap().status(), 202);
        tokio::time::sleep(Duration::from_millis(5)).await; // distinct ages: k-1 is older
    }
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "No").await;
    wait_for_service_worker(&browser).await;
    // A draft on the second question.
    browser.keys("]").await;
    browser.row("checkbox", "unit tests").await.click().await.unwrap();
    // The page keeps its inbox (at most twice a second).
    let kept = "return Object.keys(localStorage).some(k => k.startsWith('askuser:inbox:') && localStorage.getItem(k).includes('k-2'))";
    for _ in 0..100 {
        if browser.execute(kept, vec![]).await.unwrap() == Value::Bool(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let dir = b.stop().await;
    browser.refresh().await.unwrap();
    let banner = browser.wait_css(".askuser-banner").await;
    // The questions as last seen, opened on the one being answered, its draft back; the
    // first is answered offline and queued.
    let checked = browser.row("checkbox", "unit tests").await.attr("aria-checked").await.unwrap();
    assert_eq!(checked.as_deref(), Some("true"), "the draft is back");
    browser.keys("[").await;
    browser.row("radio", "No").await.click().await.unwrap();
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    let text = banner.text().await.unwrap();
    assert!(text.contains("as they were") && text.contains("1 answer waits to be sent"), "{text}");

    // Reloaded again, still offline: the queued answer is still counted and marked.
    browser.refresh().await.unwrap();
    browser.row("checkbox", "unit tests").await;
    let text = browser.wait_css(".askuser-banner").await.text().await.unwrap();
    assert!(text.contains("1 answer waits to be sent"), "{text}");
    let inbox = browser.wait_css(".askuser-inbox").await.text().await.unwrap();
    assert!(inbox.contains("Ship it?") && inbox.contains("sending…"), "{inbox}");

    // The bridge is back: the queued answer reaches it, the draft stays a draft.
    let b = bridge_at(dir, &addr).await;
    let mut record = Value::Null;
    for _ in 0..100 {
        record = b.get("/v1/questions/k-1").send().await.unwrap().json().await.unwrap();
        if record["status"] == "answered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(record["result"]["answers"][0]["answer"], "No", "{record}");
    let other: Value = b.get("/v1/questions/k-2").send().await.unwrap().json().await.unwrap();
    assert_eq!(other["status"], "pending");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(browser.find(Locator::Css(".askuser-banner")).await.is_err(), "connected again");
    browser.close().await;
}

/// A phone pairs: the page opened at the link `askuser pair` prints trades the code for
/// a device token, keeps it, forgets the code, and answers like any tab.
#[tokio::test]
async fn a_device_pairs_with_a_one_time_link_and_answers() {
    needs!(Chromium);
    let b = bridge().await;
    let r = b.post("/v1/pairings").json(&json!({"name": "phone"})).send().await.unwrap();
    let code = r.json::<Value>().await.unwrap()["code"].as_str().unwrap().to_owned();
    let browser = browser(400, 800).await;
    browser.goto(&format!("{}/#pair={code}", b.url)).await.unwrap();
    // Paired and reloaded: connected with a device token of its own, the code gone.
    browser.wait_css(".askuser-empty, [role=dialog]").await;
    let stored = browser.execute("return localStorage.getItem('askuser:device-token')", vec![]).await.unwrap();
    let token = stored.as_str().expect("the device token is kept").to_owned();
    assert_eq!(token.len(), 64);
    assert!(browser.current_url().await.unwrap().fragment().is_none_or(|f| !f.contains(&code)));
    let listed: Value = b.get("/v1/tokens").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed[0]["name"], "phone");
    assert_eq!(listed[0]["scope"], "device");
    let said = text_with(&browser, ".askuser-toast", "This device is paired").await;
    assert!(said.contains("as “phone”"), "{said}");

    let asking = b.ask(json!({"questions": [{"question": "Deploy now?", "options": [{"label": "Yes"}, {"label": "No"}]}]}), "canonical");
    browser.row("radio", "No").await;
    browser.keys(&(arrow_down() + &enter())).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "No");

    // A device cannot pair others: only the bridge's own link can.
    // At 400 px the tools are behind "⋯".
    browser.find(Locator::Css(".askuser-menu-toggle")).await.unwrap().click().await.unwrap();
    browser.find(Locator::XPath("//button[text()='Pair a device']")).await.unwrap().click().await.unwrap();
    let refusal = browser.wait_css(".askuser-pair .askuser-error").await.text().await.unwrap();
    assert!(refusal.contains("Only the bridge's own link"), "{refusal}");

    // Revoked (a lost phone): the page is cut off at once and forgets the token and the
    // questions it kept for offline use.
    let kept = "return Object.keys(localStorage).filter(k => k.startsWith('askuser:inbox:')).length";
    let mut kept_now = Value::Null;
    for _ in 0..100 {
        kept_now = browser.execute(kept, vec![]).await.unwrap(); // kept at most twice a second
        if kept_now == json!(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kept_now, json!(1), "the inbox is kept for offline use");
    let id = listed[0]["id"].as_str().unwrap();
    assert_eq!(b.http.delete(format!("{}/v1/tokens/{id}", b.url)).bearer_auth(TOKEN).send().await.unwrap().status(), 200);
    let mut forgotten = false;
    for _ in 0..100 {
        let kept = browser.execute("return localStorage.getItem('askuser:device-token')", vec![]).await.unwrap();
        if kept.is_null() {
            forgotten = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(forgotten, "the revoked token is dropped from the device");
    assert_eq!(browser.execute(kept, vec![]).await.unwrap(), json!(0), "and the kept questions");
    let page = browser.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
    assert!(page.contains("refused"), "{page}");

    // The same code again is refused, and the page says so.
    browser.goto("about:blank").await.unwrap();
    browser.goto(&format!("{}/#pair={code}", b.url)).await.unwrap();
    let alert = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(text) = browser.get_alert_text().await {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("an alert");
    assert!(alert.contains("Pairing failed") && alert.contains("used already"), "{alert}");
    browser.accept_alert().await.unwrap();
    browser.close().await;
}

/// The page is an installable app: a manifest with icons, and a service worker that
/// keeps the shell, so it opens with the bridge down and reconnects when it is back.
#[tokio::test]
async fn the_page_is_an_installable_app_that_opens_offline() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let addr = b.url.trim_start_matches("http://").to_owned();
    // The manifest, as an install prompt checks it.
    let r = b.http.get(format!("{}/manifest.webmanifest", b.url)).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/manifest+json");
    let manifest: Value = r.json().await.unwrap();
    assert_eq!((manifest["start_url"].as_str(), manifest["display"].as_str()), (Some("/"), Some("standalone")));
    assert!(manifest["name"].as_str().is_some() && manifest["short_name"] == "askuser");
    let icons = manifest["icons"].as_array().unwrap();
    for (size, purpose) in [("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")] {
        let icon = icons.iter().find(|i| i["sizes"] == size && i["purpose"] == purpose).expect("the icons an install needs");
        let png = b.http.get(format!("{}{}", b.url, icon["src"].as_str().unwrap())).send().await.unwrap();
        assert_eq!(png.headers()["content-type"], "image/png");
        let bytes = png.bytes().await.unwrap();
        let (w, h) = (u32::from_be_bytes(bytes[16..20].try_into().unwrap()), u32::from_be_bytes(bytes[20..24].try_into().unwrap()));
        assert_eq!(format!("{w}x{h}"), size, "{}", icon["src"]);
    }

    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.wait_css(".askuser-empty").await;
    // The service worker is in charge of the page (its CSP allows it: same-origin script).
    wait_for_service_worker(&browser).await;
    // Chromium itself finds nothing that stops an install (and does find something on a
    // page of the same origin without the manifest: the check can fail).
    let errors = browser.cdp("Page.getInstallabilityErrors", json!({})).await;
    assert_eq!(errors["installabilityErrors"], json!([]), "{errors}");
    browser.goto(&format!("{}/icon-192.png", b.url)).await.unwrap();
    let errors = browser.cdp("Page.getInstallabilityErrors", json!({})).await;
    assert_ne!(errors["installabilityErrors"], json!([]), "{errors}");
    open(&b, &browser).await;
    browser.wait_css(".askuser-empty").await;

    // The bridge goes away; the page still opens, from the cache, and says it is waiting.
    let dir = b.stop().await;
    browser.refresh().await.unwrap();
    let empty = browser.wait_css(".askuser-empty").await.text().await.unwrap();
    assert!(empty.contains("Waiting for the bridge"), "{empty}");
    // Back at the same address: the page reconnects by itself.
    let b = bridge_at(dir, &addr).await;
    let asking = b.ask(json!({"questions": [{"question": "Back?", "options": [{"label": "Yes"}, {"label": "No"}]}]}), "canonical");
    browser.row("radio", "Yes").await;
    browser.keys(&enter()).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "Yes");
    browser.close().await;
}

/// The page opened with the bridge's own link shows a QR code to pair another device.
#[tokio::test]
async fn the_page_shows_a_qr_code_to_pair_another_device() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let browser = browser(1000, 800).await;
    open(&b, &browser).await;
    // The first screen says how an agent comes to ask.
    let empty = text_with(&browser, ".askuser-empty", "No questions waiting").await;
    assert!(empty.contains("To let an agent ask, run askuser setup claude-code"), "{empty}");
    browser.find(Locator::XPath("//button[text()='Pair a device']")).await.unwrap().click().await.unwrap();
    let qr = browser.wait_css(".askuser-pair img.askuser-qr").await;
    assert!(qr.attr("src").await.unwrap().unwrap().starts_with("data:image/svg+xml"));
    let link = browser.wait_css(".askuser-pair-link").await.text().await.unwrap();
    let code = link.strip_prefix(&format!("{}/#pair=", b.url)).unwrap_or_else(|| panic!("a link on this origin: {link}"));
    // The bridge listens on 127.0.0.1: the page says a phone cannot open it, and how to listen on the network.
    let local = text_with(&browser, ".askuser-pair-local", "a phone cannot open it").await;
    assert!(local.contains("127.0.0.1") && local.contains("askuser serve --tls --addr 0.0.0.0:7823"), "{local}");
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found:\n{}", violations.join("\n"));
    browser.shot("pair-device").await;
    // The code in it works once, for a device.
    let r = b.http.post(format!("{}/v1/pair", b.url)).json(&json!({"code": code})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["credential"]["scope"], "device");
    browser.close().await;
}

/// The button in the page whose text is `text`, once it is there.
async fn button(browser: &Browser, text: &str) -> fantoccini::elements::Element {
    let path = format!("//button[text()='{text}']");
    tokio::time::timeout(Duration::from_secs(10), browser.wait().forever().for_element(Locator::XPath(&path)))
        .await
        .unwrap_or_else(|_| panic!("no button {text:?}"))
        .unwrap()
}

/// Waits until `css`'s text contains `wanted`; the text.
async fn text_with(browser: &Browser, css: &str, wanted: &str) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        text = browser.wait_css(css).await.text().await.unwrap_or_default();
        if text.contains(wanted) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{css} never said {wanted:?}: {text}");
}

/// This browser's push subscription, stubbed: headless Chromium reaches no push service.
/// Only the browser's subscribe call is replaced (with a real P-256 key, RFC 8291's
/// example, so the bridge checks what the page sends as it would a real one); the page,
/// the bridge and the permission are real. What the page subscribed with is kept.
const PUSH_STUB: &str = r#"
    const key = arguments[0];
    let current = null;
    const made = {
        toJSON: () => ({endpoint: "http://127.0.0.1:9/push/test-device", expirationTime: null, keys: {p256dh: key, auth: "BTBZMqHH6r4Tts7J_aSIgg"}}),
        unsubscribe: async () => { current = null; return true; },
    };
    PushManager.prototype.subscribe = async function (options) {
        const k = new Uint8Array(options.applicationServerKey);
        window.askuserSubscribedWith = {userVisibleOnly: options.userVisibleOnly,
            key: btoa(String.fromCharCode(...k)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")};
        current = made;
        return made;
    };
    PushManager.prototype.getSubscription = async function () { return current; };
"#;

/// The "Push even when closed" panel sends questions to this device with rules (a refusal from
/// the bridge is shown), and stops.
#[tokio::test]
async fn the_notifications_panel_subscribes_this_device_with_rules_and_stops() {
    needs!(Chromium, Axe);
    let b = crate::support::bridge_configured(tempfile::tempdir().unwrap(), |opts| {
        opts.notify.push_services = askuser_bridge::notify::PushServices { hosts: vec!["127.0.0.1".into()], plain_http: true };
    })
    .await;
    let subscriptions = async || -> Value { b.get("/v1/push").send().await.unwrap().json().await.unwrap() };
    let browser = browser(1000, 800).await;
    browser.cdp("Browser.grantPermissions", json!({"origin": b.url, "permissions": ["notifications"]})).await;
    open(&b, &browser).await;
    browser.wait_css(".askuser-empty").await;
    let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    browser.execute(PUSH_STUB, vec![json!(p256dh)]).await.unwrap();
    // Named apart from "Notify while open" (the open page's notifications): push reaches a closed page.
    button(&browser, "Push even when closed").await.click().await.unwrap();
    assert!(text_with(&browser, ".askuser-push", "even when no askuser page is open").await.contains("Notify while open"));
    let start = button(&browser, "Send questions to this device").await;
    assert!(text_with(&browser, ".askuser-push", "gets no questions").await.contains("gets no questions"));
    let agents = browser.wait_css(".askuser-push input[name=agents]").await;
    agents.send_keys("ci").await.unwrap();
    let delay = browser.wait_css(".askuser-push input[name=delay]").await;
    delay.send_keys("9000000").await.unwrap();
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found:\n{}", violations.join("\n"));

    // The bridge refuses more than a week; the page says what it said.
    start.click().await.unwrap();
    let refusal = text_with(&browser, ".askuser-push [role=alert].askuser-error", "rules.delaySeconds").await;
    assert!(refusal.contains("at most a week"), "{refusal}");
    assert_eq!(subscriptions().await["subscriptions"], json!([]));

    delay.send_keys(&(Key::Backspace.to_string().repeat(7) + "30")).await.unwrap();
    start.click().await.unwrap();
    button(&browser, "Stop").await;
    let mut stored = Value::Null;
    for _ in 0..100 {
        stored = subscriptions().await;
        if stored["subscriptions"].as_array().is_some_and(|s| !s.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mine = &stored["subscriptions"];
    assert_eq!(mine.as_array().map(Vec::len), Some(1), "{stored}");
    assert_eq!(mine[0]["endpoint"], "http://127.0.0.1:9/push/test-device");
    assert_eq!(mine[0]["rules"], json!({"agents": ["ci"], "delaySeconds": 30}), "{stored}");
    // Subscribed as the bridge says: its key, every message shown.
    let with = browser.execute("return window.askuserSubscribedWith", vec![]).await.unwrap();
    assert_eq!(with, json!({"userVisibleOnly": true, "key": stored["publicKey"]}));
    assert!(text_with(&browser, ".askuser-push", "gets questions").await.contains("gets questions pushed"));
    assert!(browser.find(Locator::Css(".askuser-push .askuser-error")).await.is_err(), "the refusal is gone");
    browser.shot("notifications").await;
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found:\n{}", violations.join("\n"));

    // Quiet hours, saved as new rules for the same subscription.
    browser.wait_css(".askuser-push input[name=quiet]").await.click().await.unwrap();
    button(&browser, "Save rules").await.click().await.unwrap();
    for _ in 0..100 {
        stored = subscriptions().await;
        if !stored["subscriptions"][0]["rules"]["quiet"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let quiet = &stored["subscriptions"][0]["rules"]["quiet"];
    assert_eq!((quiet["from"].as_str(), quiet["to"].as_str()), (Some("22:00"), Some("07:00")), "{stored}");
    assert_eq!(stored["subscriptions"][0]["rules"]["agents"], json!(["ci"]));

    button(&browser, "Stop").await.click().await.unwrap();
    button(&browser, "Send questions to this device").await;
    assert_eq!(subscriptions().await["subscriptions"], json!([]), "forgotten by the bridge");
    let left = browser.execute("return navigator.serviceWorker.ready.then(r => r.pushManager.getSubscription())", vec![]).await.unwrap();
    assert_eq!(left, Value::Null, "and by the browser");
    browser.close().await;
}

/// A tapped notification opens the page at `#q=ID` (with the token, or on a page already
/// open): that question is the one shown, also when it arrives only later.
#[tokio::test]
async fn a_question_named_in_the_address_is_the_one_shown() {
    needs!(Chromium);
    let b = bridge().await;
    let ask = async |id: &str, question: &str| {
        let body = json!({"id": id, "question": question, "choices": ["Yes", "No"]});
        assert_eq!(b.post("/v1/ask?wait=false").json(&body).send().await.unwrap().status(), 202);
        tokio::time::sleep(Duration::from_millis(5)).await; // distinct ages: the first is older
    };
    ask("n-1", "Which region first?").await;
    ask("n-2", "Deploy now?").await;
    let browser = browser(1000, 700).await;
    browser.goto(&format!("{}/#token={TOKEN}&q=n-2", b.url)).await.unwrap();
    text_with(&browser, ".askuser-current", "Deploy now?").await;
    let fragment = browser.current_url().await.unwrap().fragment().map(str::to_owned);
    assert!(fragment.as_deref().is_none_or(|f| !f.contains("q=") && !f.contains(TOKEN)), "{fragment:?}");

    // A page already open: only its hash changes.
    browser.execute("location.hash = 'q=n-1'", vec![]).await.unwrap();
    text_with(&browser, ".askuser-current", "Which region first?").await;
    // A question not there yet is shown once it comes.
    browser.execute("location.hash = 'q=n-3'", vec![]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(browser.current_url().await.unwrap().fragment().is_none_or(|f| !f.contains("q=")), "the address is clean");
    ask("n-3", "Rotate the keys?").await;
    text_with(&browser, ".askuser-current", "Rotate the keys?").await;

    // A reload opens the question set being answered, not the first one listed.
    browser.refresh().await.unwrap();
    browser.wait_css(".askuser-current").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    text_with(&browser, ".askuser-current", "Rotate the keys?").await;
    browser.close().await;
}

/// An approval shows what will happen (an edit as a diff, a command as a command), its
/// rows name their keys, a keystroke decides it, and the page says the decision aloud.
#[tokio::test]
async fn an_approval_shows_the_diff_and_a_keystroke_decides_it() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let approve = |call: Value| {
        let request = b.post("/v1/approve").json(&call);
        tokio::spawn(async move { request.send().await.unwrap().json::<Value>().await.unwrap() })
    };
    let edit = approve(json!({"tool_name": "Edit", "tool_use_id": "toolu_e", "cwd": "/srv/app", "agent": {"name": "claude-code"},
        "input": {"file_path": "/srv/app/src/db.rs", "old_string": "fn open() {\n    sqlite();\n}", "new_string": "fn open() {\n    postgres();\n}"}}));
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    let diff = text_with(&browser, ".askuser-diff", "postgres();").await;
    assert!(diff.contains("- ") && diff.contains("sqlite();") && diff.contains("+ "), "{diff}");
    let title = browser.wait_css(".askuser-approval-title").await.text().await.unwrap();
    assert_eq!(title, "Edit src/db.rs?");
    // A screen reader hears which lines go and which come.
    let spoken = browser.wait_css(".askuser-removed .askuser-sr").await.html(true).await.unwrap();
    // Text and no markup; the empty comment is where Leptos's type-erased views
    // (`--cfg erase_components`, scripts/build-ui) mark a child's place: not read aloud.
    assert_eq!(spoken.replace("<!---->", ""), "removed: ");
    assert_eq!(browser.row("radio", "Always allow").await.text().await.unwrap().split_whitespace().next(), Some("A"));
    assert!(browser.wait_css(".askuser-footer").await.text().await.unwrap().contains("a allow • A always allow • d deny"));
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found: {violations:?}");
    browser.shot("approval-diff").await;

    // d, a word for the agent, Enter: denied, with it.
    browser.keys("d").await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("keep sqlite").await;
    browser.keys(&enter()).await;
    let decided = tokio::time::timeout(Duration::from_secs(10), edit).await.unwrap().unwrap();
    assert_eq!(decided["behavior"], "deny", "{decided}");
    assert!(decided["message"].as_str().unwrap().contains("keep sqlite"), "{decided}");
    text_with(&browser, ".askuser-toast", "Denied: keep sqlite").await;

    // A command, allowed with a.
    let bash = approve(json!({"tool_name": "Bash", "tool_use_id": "toolu_b", "agent": {"name": "claude-code"},
        "input": {"command": "cargo test --all", "description": "Run the tests"}}));
    let command = text_with(&browser, ".askuser-command", "cargo test --all").await;
    assert_eq!(command, "$ cargo test --all");
    text_with(&browser, ".askuser-why", "Why: Run the tests").await;
    browser.row("radio", "Allow").await;
    browser.keys("a").await;
    let decided = tokio::time::timeout(Duration::from_secs(10), bash).await.unwrap().unwrap();
    assert_eq!(decided["behavior"], "allow", "{decided}");
    text_with(&browser, ".askuser-toast", "Allowed.").await;
    browser.close().await;
}

/// The Rules panel lists what "Always allow" kept and the latest decisions, and removes
/// a rule.
#[tokio::test]
async fn the_rules_panel_lists_rules_and_decisions_and_removes_a_rule() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(cargo test:*)", "project": "/srv/app"})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let call = json!({"tool_name": "Bash", "input": {"command": "cargo test --all"}, "cwd": "/srv/app"});
    let decided: Value = b.post("/v1/approve").json(&call).send().await.unwrap().json().await.unwrap();
    assert_eq!(decided["decidedBy"], "rule");
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    button(&browser, "Rules").await.click().await.unwrap();
    let panel = text_with(&browser, ".askuser-rules-panel", "Bash(cargo test:*) in /srv/app").await;
    assert!(panel.contains("allow Bash: cargo test --all"), "{panel}");
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found: {violations:?}");
    button(&browser, "Remove").await.click().await.unwrap();
    text_with(&browser, ".askuser-rules-panel", "No rules").await;
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert!(rules.is_empty(), "{rules:?}");
    browser.close().await;
}

/// Issue 45: where "Always allow" keeps a prefix, the page also offers "Always allow
/// exactly", naming the exact command's rule, and keeps that; a wide rule (as an earlier
/// version kept from `rm -rf build`) is shown in the Rules panel for review, and removed.
#[tokio::test]
async fn an_approval_can_be_narrowed_to_the_exact_command_and_wide_rules_are_shown_for_review() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let call =
        json!({"tool_name": "Bash", "cwd": "/srv/app", "agent": {"name": "claude-code"}, "input": {"command": "git status --short"}});
    let request = b.post("/v1/approve").json(&call);
    let waiting = tokio::spawn(async move { request.send().await.unwrap().json::<Value>().await.unwrap() });
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    let always = browser.row("radio", "Always allow").await.text().await.unwrap();
    assert!(always.contains("Do not ask again for Bash(git status:*) in /srv/app"), "{always}");
    let exactly = browser.row("radio", "Always allow exactly").await.text().await.unwrap();
    assert_eq!(exactly.split_whitespace().next(), Some("e"), "{exactly}");
    assert!(exactly.contains("Do not ask again for Bash(git status --short) in /srv/app"), "{exactly}");
    let mut buttons = Vec::new();
    for b in browser.find_all(Locator::Css(".askuser-actions button")).await.unwrap() {
        buttons.push(b.text().await.unwrap());
    }
    assert_eq!(buttons, ["Allow", "Always allow", "Always allow exactly", "Deny"]);
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found: {violations:?}");
    browser.shot("approval-exactly").await;
    button(&browser, "Always allow exactly").await.click().await.unwrap();
    let decided = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
    assert_eq!(decided["behavior"], "allow", "{decided}");
    text_with(&browser, ".askuser-toast", "this exact call").await;
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    let kept: Vec<&str> = rules.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(kept, ["Bash(git status --short) in /srv/app"]);

    let r = b.post("/v1/rules").json(&json!({"rule": "Bash(rm:*)"})).send().await.unwrap();
    assert_eq!(r.status(), 201);
    button(&browser, "Rules").await.click().await.unwrap();
    let panel = text_with(&browser, ".askuser-rules-panel", "Bash(rm:*)").await;
    assert!(
        panel.contains("Review: wider than \"Always allow\" keeps now: any command that begins `rm`; for every agent everywhere"),
        "{panel}"
    );
    assert_eq!(panel.matches("Review:").count(), 1, "the exact rule is not: {panel}");
    let violations = axe(&browser).await;
    assert!(violations.is_empty(), "axe-core found: {violations:?}");
    browser.find(Locator::Css("button[aria-label='Remove Bash(rm:*)']")).await.unwrap().click().await.unwrap();
    for _ in 0..100 {
        if !browser.wait_css(".askuser-rules-panel").await.text().await.unwrap_or_default().contains("Bash(rm:*)") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rules: Vec<Value> = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    let left: Vec<&str> = rules.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(left, ["Bash(git status --short) in /srv/app"]);
    browser.close().await;
}

/// c is "Chat about this" in the page too (it took five keys: Tab to the button).
#[tokio::test]
async fn c_declines_to_talk_it_over() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let asking = b.ask(json!({"questions": [{"question": "Which one?", "options": [{"label": "A"}, {"label": "B"}]}]}), "canonical");
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.row("radio", "B").await;
    browser.keys("c").await;
    // A letter alone never ends a question: c asks first.
    let asked = browser.wait_css(".askuser-prompt").await.text().await.unwrap();
    assert!(asked.contains("talk it over"), "{asked}");
    browser.keys("y").await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!((result["status"].as_str(), result["chat"].as_bool()), (Some("cancelled"), Some(true)), "{result}");
}

/// The dialog never answers for the person (issue 50): a pointer resting on the page
/// while a new approval is drawn under it moves nothing (Enter allows once, as the first
/// row says, not "Always allow" under the pointer); an approval's buttons say what they
/// do; Submit with nothing chosen asks for a choice; typing on the Other row types.
#[tokio::test]
async fn the_dialog_never_answers_for_the_person() {
    needs!(Chromium, Axe);
    use fantoccini::actions::{InputSource, MouseActions, PointerAction};
    let b = bridge().await;
    let approve = |command: &str| {
        let call = json!({"tool_name": "Bash", "cwd": "/srv/app", "agent": {"name": "claude-code"}, "input": {"command": command}});
        let request = b.post("/v1/approve").json(&call);
        tokio::spawn(async move { request.send().await.unwrap().json::<Value>().await.unwrap() })
    };
    let first = approve("rm -rf build");
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    // The mouse moves onto "Always allow" and rests there.
    let always = browser.row("radio", "Always allow").await;
    let onto = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement { element: always.clone(), duration: None, x: -20.0, y: 0.0 })
        .then(PointerAction::MoveToElement { element: always, duration: None, x: 0.0, y: 0.0 });
    let record = "document.addEventListener('pointermove', (e) => { window.resting = [e.clientX, e.clientY] }, true)";
    browser.execute(record, vec![]).await.unwrap();
    browser.perform_actions(onto).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        browser.wait_css(".askuser-row.focused").await.text().await.unwrap().split_whitespace().next(),
        Some("A"),
        "a moving pointer moves the highlight"
    );
    // An approval's buttons say what they do, with one "no".
    let mut buttons = Vec::new();
    for b in browser.find_all(Locator::Css(".askuser-actions button")).await.unwrap() {
        buttons.push(b.text().await.unwrap());
    }
    assert_eq!(buttons, ["Allow", "Always allow", "Deny"]);
    // Denied by keyboard; the next approval is drawn under the resting pointer.
    let second = approve("rm -rf build && cargo build --release");
    browser.keys("d").await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys(&enter()).await;
    let decided = tokio::time::timeout(Duration::from_secs(10), first).await.unwrap().unwrap();
    assert_eq!(decided["behavior"], "deny", "{decided}");
    text_with(&browser, ".askuser-command", "cargo build --release").await;
    // A browser tells the page what is now under a resting pointer (Chromium's "fake
    // mouse move" after a layout): a move to where it already is.
    let at = browser.execute("return window.resting", vec![]).await.unwrap();
    let resting = json!({"type": "mouseMoved", "x": at[0], "y": at[1]});
    browser.cdp("Input.dispatchMouseEvent", resting).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let focused = browser.wait_css(".askuser-row.focused").await.text().await.unwrap();
    browser.keys(&enter()).await;
    let decided = tokio::time::timeout(Duration::from_secs(10), second).await.unwrap().unwrap();
    assert_eq!(focused.split_whitespace().next(), Some("a"), "a new approval starts on its first row: {focused:?}");
    assert_eq!(decided["behavior"], "allow", "{decided}");
    let rules: Value = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules.as_array().map(Vec::len), Some(0), "no rule was kept: {rules}");

    // A question: End, then "cassandra 1" types; c is not "Chat about this", 1 is not option 1.
    let asking = b.ask(
        json!({"questions": [{"question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]}),
        "canonical",
    );
    browser.row("radio", "SQLite").await;
    // Submit with nothing chosen: nothing is sent, the hint asks for a choice.
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    text_with(&browser, ".askuser-hint", "Choose an option first").await;
    assert!(!asking.is_finished(), "an empty Submit answers nothing");
    browser.keys(&Key::End.to_string()).await;
    browser.keys("cassandra 1").await;
    let typed = browser.wait_css("textarea.askuser-other").await.prop("value").await.unwrap();
    browser.keys(&enter()).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!(typed.as_deref(), Some("cassandra 1"));
    assert_eq!(result["answers"][0]["answer"], "cassandra 1", "{result}");
}

/// The preview box shows the highlighted option's preview only: moving to an option
/// without one leaves no other option's preview under it (it showed the first one's).
/// On a wide screen the preview's column stays, so the options do not move sideways; on
/// a narrow one the box goes away.
#[tokio::test]
async fn the_preview_is_the_highlighted_options_or_none() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(
        json!({"questions": [{"question": "Which plan?", "header": "Plan", "options": [
            {"label": "Alpha", "preview": "ALPHA-PREVIEW-TEXT\nsecond line"}, {"label": "Beta"}
        ]}], "agent": {"name": "claude-code", "sessionId": "s-none"}}),
        "canonical",
    );
    let browser = browser(1280, 800).await;
    open(&b, &browser).await;
    browser.row("radio", "Beta").await;
    // What a person sees: the text shown (not hidden), the preview boxes shown.
    let state = r#"
        const list = document.querySelector('.askuser-list').getBoundingClientRect();
        const dialog = document.querySelector('.askuser-dialog');
        const boxes = [...document.querySelectorAll('.askuser-preview')]
            .filter(e => getComputedStyle(e).visibility === 'visible' && e.getBoundingClientRect().height > 0);
        return {
            text: dialog.innerText,
            label: boxes.map(b => b.getAttribute('aria-label')),
            left: list.left, width: list.width, height: dialog.getBoundingClientRect().height,
        };
    "#;
    let on_alpha = browser.execute(state, vec![]).await.unwrap();
    assert!(on_alpha["text"].as_str().unwrap().contains("ALPHA-PREVIEW-TEXT"), "Alpha's preview: {on_alpha}");
    assert_eq!(on_alpha["label"], json!(["Preview of Alpha"]), "{on_alpha}");
    browser.keys(&arrow_down()).await; // Beta, which has no preview
    let on_beta = browser.execute(state, vec![]).await.unwrap();
    browser.shot("preview-none").await;
    assert!(!on_beta["text"].as_str().unwrap().contains("ALPHA-PREVIEW-TEXT"), "Alpha's preview left under Beta: {on_beta}");
    assert_eq!(on_beta["label"], json!([]), "no preview box for Beta: {on_beta}");
    assert!(on_beta["text"].as_str().unwrap().contains("No preview for this option"), "{on_beta}");
    let place = |s: &Value| (s["left"].clone(), s["width"].clone(), s["height"].clone());
    assert_eq!(place(&on_beta), place(&on_alpha), "the options stay put, the dialog keeps its size");
    let audit = axe(&browser).await;
    // A narrow screen: no box, and no other option's text.
    browser.set_window_size(360, 740).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let narrow = browser.execute(state, vec![]).await.unwrap();
    browser.close().await;
    assert!(audit.is_empty(), "axe-core found:\n{}", audit.join("\n"));
    assert_eq!(narrow["label"], json!([]), "no preview box on a narrow screen: {narrow}");
    assert!(!narrow["text"].as_str().unwrap().contains("ALPHA-PREVIEW-TEXT"), "{narrow}");
}

/// At 360 px a long preview scrolls inside its box, which keeps the Submit button on
/// the screen (the box pushed it far below).
#[tokio::test]
async fn a_long_preview_on_a_phone_keeps_submit_on_screen() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let long: String = (1..=60).map(|i| format!("line {i} of the plan\n")).collect();
    let _asking = b.ask(
        json!({"questions": [{"question": "Which plan?", "header": "Plan", "options": [
            {"label": "Long", "preview": long}, {"label": "Short", "preview": "one line"}, {"label": "None"}
        ]}], "agent": {"name": "claude-code", "sessionId": "s-long"}}),
        "canonical",
    );
    let browser = touch_browser(360, 740).await;
    open(&b, &browser).await;
    browser.row("radio", "Long").await;
    browser.wait_css(".askuser-preview").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let found = browser
        .execute(
            "const box = document.querySelector('.askuser-preview');
             const submit = document.querySelector('[data-action=enter]').getBoundingClientRect();
             return {submit: submit.bottom, height: innerHeight, scrolled: scrollY,
                     scrolls: box.scrollHeight > box.clientHeight, text: box.textContent.includes('line 60 of the plan')};",
            vec![],
        )
        .await
        .unwrap();
    browser.shot("phone-long-preview").await;
    browser.close().await;
    assert!(found["submit"].as_f64().unwrap() <= found["height"].as_f64().unwrap(), "Submit below the window: {found}");
    assert_eq!(found["scrolled"].as_f64(), Some(0.0), "{found}");
    assert_eq!((&found["scrolls"], &found["text"]), (&Value::Bool(true), &Value::Bool(true)), "the box scrolls its whole text: {found}");
}

/// History shows agent text as the dialog does: a fenced block as code, never its
/// fences, and markup as text.
#[tokio::test]
async fn the_history_shows_code_as_code_without_its_fences() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let question = "May I run this? <b>bold</b>\n```sh\nrm -rf build\n```";
    let asked =
        b.post("/v1/ask?wait=false").json(&json!({"id": "fenced", "question": question, "choices": ["Yes", "No"]})).send().await.unwrap();
    assert_eq!(asked.status(), 202);
    let answered =
        b.post("/v1/questions/fenced/answer").json(&json!({"answers": ["Use `make clean`:\n```\nmake clean\n```"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let browser = browser(1000, 800).await;
    open(&b, &browser).await;
    history_button(&browser).await.click().await.unwrap();
    let entry = browser.wait_css(".askuser-history li").await.text().await.unwrap();
    let code: Vec<String> = {
        let mut out = vec![];
        for e in browser.find_all(Locator::Css(".askuser-history pre code")).await.unwrap() {
            out.push(e.text().await.unwrap());
        }
        out
    };
    let inline = browser.find(Locator::Css(".askuser-history dd code")).await.unwrap().text().await.unwrap();
    let bold = browser.find_all(Locator::Css(".askuser-history b")).await.unwrap().len();
    let violations = axe(&browser).await;
    browser.close().await;
    assert!(!entry.contains("```"), "no fences: {entry}");
    assert_eq!(code, ["rm -rf build", "make clean"], "{entry}");
    assert_eq!(inline, "make clean", "an inline code span: {entry}");
    assert!(entry.contains("<b>bold</b>") && bold == 0, "markup is text: {entry}");
    assert!(violations.is_empty(), "axe-core found:\n{}", violations.join("\n"));
}

/// The Submit tab reviews and sends: it never reads as answered, whatever is. No key
/// hint sits inside a text field (the footer says the keys).
#[tokio::test]
async fn the_submit_tab_is_not_answered_and_fields_hold_no_key_hints() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(
        json!({"questions": [
            {"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
            {"question": "What should we name it?", "header": "Name"}
        ]}),
        "canonical",
    );
    let browser = browser(1000, 800).await;
    open(&b, &browser).await;
    browser.row("radio", "SQLite").await;
    browser.keys("1").await; // PostgreSQL, on to Name
    let field = browser.wait_css("textarea.askuser-other").await;
    let placeholder = field.attr("placeholder").await.unwrap().unwrap_or_default();
    browser.keys("svc").await;
    browser.keys(&enter()).await;
    browser.wait_css("[data-submit]").await;
    let mut tabs = vec![];
    for t in browser.find_all(Locator::Css(".askuser-tab")).await.unwrap() {
        tabs.push((t.text().await.unwrap(), t.attr("class").await.unwrap().unwrap_or_default()));
    }
    browser.close().await;
    assert!(!placeholder.contains("Enter"), "{placeholder}");
    assert_eq!(tabs.len(), 3, "{tabs:?}");
    assert!(tabs[0].0.starts_with("✓ DB") && tabs[1].0.starts_with("✓ Name"), "{tabs:?}");
    let (submit, class) = &tabs[2];
    assert!(submit.trim() == "Submit" && !class.split(' ').any(|c| c == "answered"), "{tabs:?}");
}

/// A lost connection is announced once, and its return once, not every attempt between.
#[tokio::test]
async fn a_lost_connection_is_announced_once_and_its_return_once() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let addr = b.running().addr.to_string();
    let browser = browser(1000, 700).await;
    open(&b, &browser).await;
    browser.wait_css(".askuser-empty").await;
    browser
        .execute(
            "window.said = [];
             const live = '[role=alert],[role=status],[aria-live]';
             new MutationObserver(ms => { for (const m of ms) {
                 const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
                 const region = el && el.closest(live);
                 if (region && region.textContent) window.said.push(region.textContent);
                 for (const n of m.addedNodes) if (n.nodeType === 1 && n.matches(live) && n.textContent) window.said.push(n.textContent);
             } }).observe(document.body, {subtree: true, childList: true, characterData: true});",
            vec![],
        )
        .await
        .unwrap();
    let dir = b.stop().await;
    text_with(&browser, ".askuser-banner", "attempt 3").await;
    let mut opts = askuser_bridge::ServeOptions::new(dir.path().to_path_buf());
    opts.addr = addr;
    opts.token = Some(TOKEN.into());
    let running = askuser_bridge::start(opts).await.unwrap();
    for _ in 0..200 {
        if browser.find(Locator::Css(".askuser-conn.open")).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let said: Vec<String> = serde_json::from_value(browser.execute("return window.said", vec![]).await.unwrap()).unwrap();
    browser.close().await;
    running.stop().await;
    let mut heard: Vec<&String> = said.iter().filter(|t| t.to_lowercase().contains("connect")).collect();
    heard.dedup();
    assert_eq!(
        heard,
        ["Connection to the bridge lost. Answers you give now are kept and sent when it is back.", "Connected to the bridge again."],
        "{said:?}"
    );
}

/// The option list of `question` on a phone (360×740, touch), shown after the question
/// before it was answered elsewhere and the notice saying so was dismissed: rows shown,
/// the "more" markers, a row's pitch and where the list, the buttons and the dialog end.
async fn phone_list(question: Value, shot: &str) -> Value {
    let b = bridge().await;
    let _first = b.ask(json!({"id": "first", "question": "Deploy now?", "choices": ["Yes", "No"]}), "canonical");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _asking = b.ask(question, "canonical");
    let browser = touch_browser(360, 740).await;
    open(&b, &browser).await;
    browser.row("radio", "Yes").await;
    browser.keys("o").await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("after the release").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answered = b.post("/v1/questions/first/answer").json(&json!({"answers": ["No"]})).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let ok = browser.wait_css(".askuser-closed button").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    ok.click().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let found = browser.execute(PHONE_LIST, vec![]).await.unwrap();
    browser.shot(shot).await;
    browser.close().await;
    found
}

/// What [`phone_list`] measures.
const PHONE_LIST: &str = r#"
        const rows = [...document.querySelectorAll('.askuser-app .askuser-list .askuser-row')];
        const box = css => document.querySelector(css).getBoundingClientRect();
        return {
            rows: rows.length,
            more: [...document.querySelectorAll('.askuser-app .askuser-more')].map(m => m.textContent),
            pitch: rows[1].getBoundingClientRect().top - rows[0].getBoundingClientRect().top,
            listBottom: box('.askuser-app .askuser-list').bottom,
            actionsBottom: box('.askuser-app .askuser-actions').bottom,
            dialogBottom: box('.askuser-app .askuser-dialog').bottom,
            height: innerHeight,
            scrolled: scrollY,
        };
    "#;

/// On a phone (360×740, touch) the option list uses the room it has (issue 50 D12:
/// "↓ 1 more" hid the Other row with 130 px empty below, and 25 options showed 3 rows):
/// a 4-option question shows every row and Other with no "more" marker; a 25-option
/// list shows as many rows as fit above its buttons.
#[tokio::test]
async fn a_phone_list_uses_the_room_it_has() {
    needs!(Chromium, Axe);
    let four = phone_list(
        json!({"questions": [{"question": "Which database should we use for the new service?", "header": "DB", "options": [
            {"label": "PostgreSQL (Recommended)", "description": "Battle-tested relational DB"},
            {"label": "SQLite", "description": "Lightweight, file-based"},
            {"label": "MySQL", "description": "Widely hosted"},
            {"label": "MongoDB", "description": "Documents, no fixed schema"}
        ]}], "agent": {"name": "claude-code", "sessionId": "r-1"}}),
        "phone-four-options",
    )
    .await;
    let options: Vec<Value> = (1..=25).map(|i| json!({"label": format!("region-{i}")})).collect();
    let many = phone_list(
        json!({"questions": [{"question": "Which region?", "header": "Region", "options": options}],
            "agent": {"name": "claude-code", "sessionId": "r-2"}}),
        "phone-many-options",
    )
    .await;
    assert_eq!((four["rows"].as_u64(), &four["more"]), (Some(5), &json!([])), "every row and Other, no more marker: {four}");
    assert!(four["actionsBottom"].as_f64().unwrap() <= four["height"].as_f64().unwrap(), "the buttons on screen: {four}");
    // As many rows as fit: under the dialog there is not room for two more (one is kept
    // for "↑ N more", which shows once the list has moved). It showed 3, 194 px left empty.
    let (height, pitch) = (many["height"].as_f64().unwrap(), many["pitch"].as_f64().unwrap());
    assert_eq!(many["scrolled"].as_f64(), Some(0.0), "{many}");
    assert!(many["actionsBottom"].as_f64().unwrap() <= height, "the buttons on screen: {many}");
    assert!(height - many["dialogBottom"].as_f64().unwrap() < 2.0 * pitch + 16.0, "room for more rows left empty: {many}");
    assert!(many["rows"].as_u64().unwrap() > 3, "{many}");
}
