//! The served page in a real headless Chromium, driven over WebDriver (chromedriver),
//! against a real bridge: an agent asks over HTTP, a person answers by keyboard.
//!
//! With `ASKUSER_SCREENSHOTS=DIR` set, the tests also save screenshots of the main
//! layouts there (the README's pictures come from this).

use crate::support::{bridge, browser, Browser, TestBridge, TOKEN};
use fantoccini::key::Key;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::time::Duration;

async fn open(b: &TestBridge, browser: &Browser) {
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
}

fn arrow_down() -> String {
    Key::Down.to_string()
}

fn enter() -> String {
    Key::Enter.to_string()
}

#[tokio::test]
async fn an_agent_asks_and_a_person_answers_by_keyboard() {
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
    browser.wait_css("textarea").await;
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
    browser.wait_css("textarea").await;
    browser.keys("Billing").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    browser.refresh().await.unwrap();
    let auth = browser.row("checkbox", "Auth").await;
    assert_eq!(auth.attr("aria-checked").await.unwrap().as_deref(), Some("true"), "the selection survives the reload");
    if browser.find(Locator::Css("textarea")).await.is_err() {
        browser.keys("o").await;
    }
    let textarea = browser.wait_css("textarea").await;
    assert_eq!(textarea.prop("value").await.unwrap().unwrap_or_default(), "Billing", "the typed draft survives the reload");
    textarea.click().await.unwrap();
    browser.keys(&enter()).await;
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!(result["answers"][0]["answer"], json!(["Auth", "Billing"]));
}

#[tokio::test]
async fn the_inbox_shows_every_agent_and_a_long_list() {
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
    let conn = browser.find(Locator::Css(".askuser-conn")).await.unwrap();
    for _ in 0..100 {
        if conn.text().await.unwrap_or_default() == "connected" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(conn.text().await.unwrap(), "connected");
    browser.close().await;
}
