//! The question before the app (issue 34): a device the bridge knows gets the waiting
//! question written into the page as a plain form; it answers with scripts off, and the
//! app, once loaded, takes over whatever was chosen or typed there.

use crate::support::{bridge, touch_browser, Browser, TestBridge};
use fantoccini::Locator;
use serde_json::{json, Value};
use std::time::Duration;

/// A client that shows redirects rather than following them.
fn plain() -> reqwest::Client {
    askuser_bridge::client::notify_client()
}

/// A device token's session cookie, as `POST /v1/session` sets it: (`name=value`, the whole header).
async fn session(b: &TestBridge, token: &str) -> (String, String) {
    let r = plain().post(format!("{}/v1/session", b.url)).bearer_auth(token).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    (set.split(';').next().unwrap().to_owned(), set)
}

/// A form body, as a browser posts it (the values here need no escaping).
trait Form {
    fn form(self, fields: &[(&str, &str)]) -> Self;
}

impl Form for reqwest::RequestBuilder {
    fn form(self, fields: &[(&str, &str)]) -> Self {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", v.replace(' ', "+"))).collect();
        self.header("content-type", "application/x-www-form-urlencoded").body(body.join("&"))
    }
}

fn database_question(name: &str) -> Value {
    json!({"questions": [{"question": "Which <b>database</b>?", "header": "DB", "options": [
        {"label": "SQLite", "description": "one file"}, {"label": "PostgreSQL", "description": "a server"}]}],
        "agent": {"name": name, "sessionId": name}})
}

async fn wait_pending(b: &TestBridge, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let list: Vec<Value> = b.get("/v1/questions").send().await.unwrap().json().await.unwrap();
        if list.len() >= n {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{n} questions did not arrive");
}

#[tokio::test]
async fn a_known_device_gets_the_waiting_question_in_the_page_and_answers_it_by_form() {
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let token = device["token"].as_str().unwrap();
    let asking = b.ask(database_question("planner"), "canonical");
    let id = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();

    let (cookie, set) = session(&b, token).await;
    let port = b.url.rsplit(':').next().unwrap();
    assert!(cookie.starts_with(&format!("askuser{port}=")), "named by the port: {set}");
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/"), "{set}");
    assert!(!set.contains("Secure"), "plain HTTP: a Secure cookie would never come back: {set}");
    // An agent's token opens no session; the API never takes the cookie for a token.
    let agent = b.post("/v1/tokens").json(&json!({"scope": "agent", "name": "bot"})).send().await.unwrap().json::<Value>().await.unwrap();
    let refused = plain().post(format!("{}/v1/session", b.url)).bearer_auth(agent["token"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let api = plain().get(format!("{}/v1/questions", b.url)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(api.status(), 401, "the API wants the bearer token, not the cookie");

    let bare = plain().get(format!("{}/", b.url)).send().await.unwrap().text().await.unwrap();
    assert!(!bare.contains("id=\"askuser-first\""), "no cookie, no question in the page");
    let page = plain().get(format!("{}/", b.url)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    assert!(html.contains("Which &lt;b&gt;database&lt;/b&gt;?") && !html.contains("<b>database"), "escaped: {html}");
    assert!(html.contains(&format!("action=\"/answer/{id}\"")), "{html}");

    // Another site's page may not post the form; nor may a browser without the cookie.
    let form = [("q0", "1"), ("q0-text", ""), ("do", "answer")];
    let foreign = plain().post(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).header("origin", "https://evil.example");
    assert_eq!(foreign.form(&form).send().await.unwrap().status(), 403);
    let stranger = plain().post(format!("{}/answer/{id}", b.url)).header("origin", &b.url).form(&form).send().await.unwrap();
    assert_eq!(stranger.status(), 401);

    let sent = plain().post(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).header("origin", &b.url).form(&form);
    let sent = sent.send().await.unwrap();
    assert_eq!(sent.status(), 303);
    assert!(sent.headers()["location"].to_str().unwrap().starts_with("/?sent="));
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "PostgreSQL");
    let record: Value = b.get(&format!("/v1/questions/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(record["answeredBy"], "page: phone (device)", "who answered, for the audit");

    // The first answer won: the same form again says so and changes nothing.
    let again = plain().post(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).form(&[("q0", "0"), ("do", "answer")]);
    let again = again.send().await.unwrap();
    assert_eq!(again.status(), 409);
    assert!(again.text().await.unwrap().contains("answered or closed elsewhere already"));
    let after = plain().get(format!("{}/?sent={id}", b.url)).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    assert!(after.contains("Sent. The agent has your answer.") && after.contains("No questions are waiting."), "{after}");

    // A revoked device's cookie opens nothing and is cleared.
    let credential = device["credential"]["id"].as_str().or(device["credential"].as_str()).unwrap().to_owned();
    assert!(b
        .http
        .delete(format!("{}/v1/tokens/{credential}", b.url))
        .bearer_auth(crate::support::TOKEN)
        .send()
        .await
        .unwrap()
        .status()
        .is_success());
    let revoked = plain().get(format!("{}/", b.url)).header("cookie", &cookie).send().await.unwrap();
    assert!(revoked.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert!(!revoked.text().await.unwrap().contains("id=\"askuser-first\""));
}

/// The page session's cookie reaches every server on 127.0.0.1 the browser visits
/// (issue 45): it must be no token, open nothing of the API, and end when revoked.
#[tokio::test]
async fn the_session_cookie_is_no_token_and_opens_only_the_page() {
    let b = bridge().await;
    let device = b.device_token("phone", Some("alice")).await;
    let (token, device_id) = (device["token"].as_str().unwrap(), device["credential"]["id"].as_str().unwrap());
    let _asking = b.ask(database_question("cookie"), "canonical");
    let id = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();
    let port = b.url.rsplit(':').next().unwrap();
    let bearer = |path: &str, value: &str| plain().get(format!("{}{path}", b.url)).bearer_auth(value).send();
    let page = |cookie: &str| plain().get(format!("{}/", b.url)).header("cookie", cookie).send();

    for (opener, secret) in [("the device", token), ("the admin token", crate::support::TOKEN)] {
        let (cookie, set) = session(&b, secret).await;
        let value = cookie.split_once('=').unwrap().1;
        assert!(!set.contains(secret) && value != secret, "{opener}'s cookie holds no token: {set}");
        assert_eq!(value.len(), 64, "a random value: {set}");
        for path in ["/v1/questions", "/v1/tokens", "/v1/health"] {
            assert_eq!(bearer(path, value).await.unwrap().status(), 401, "{opener}'s cookie value as a bearer token on {path}");
            let with_cookie = plain().get(format!("{}{path}", b.url)).header("cookie", &cookie).send().await.unwrap();
            assert_eq!(with_cookie.status(), 401, "{opener}'s cookie on {path}");
        }
        let create = plain().post(format!("{}/v1/tokens", b.url)).header("cookie", &cookie).json(&json!({"scope": "admin", "name": "x"}));
        assert_eq!(create.send().await.unwrap().status(), 401, "{opener}'s cookie makes no token");
        let html = page(&cookie).await.unwrap().text().await.unwrap();
        assert!(html.contains(&format!("action=\"/answer/{id}\"")), "{opener}'s page session shows the waiting set: {html}");
    }

    // Listed with its device (and the admin token's), with no cookie in the list.
    let sessions: Vec<Value> = b.get("/v1/sessions").send().await.unwrap().json().await.unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(sessions[0]["credential"], device_id);
    assert_eq!(sessions[1]["credential"], Value::Null, "the admin token's");
    assert!(sessions.iter().all(|s| s["id"].as_str().unwrap().starts_with("session-") && s.get("hash").is_none()));
    let url = b.url.clone();
    let devices = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_askuser"))
            .env_remove("ASKUSER_URL")
            .env_remove("ASKUSER_TOKEN")
            .args(["devices", "--url", &url, "--token", crate::support::TOKEN])
            .output()
            .unwrap()
    });
    let devices = devices.await.unwrap();
    let listed = String::from_utf8_lossy(&devices.stdout);
    let device_session = sessions[0]["id"].as_str().unwrap();
    assert!(listed.contains(&format!("phone  (paired, page session {device_session})")), "{listed}");

    // The app opens a session on each start: the one its cookie held ends in its place.
    let (first, _) = session(&b, token).await;
    let again = plain().post(format!("{}/v1/session", b.url)).bearer_auth(token).header("cookie", &first).send().await.unwrap();
    assert_eq!(again.status(), 204);
    let second = again.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    assert_ne!(first, second);
    let old = page(&first).await.unwrap();
    assert!(old.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"), "the replaced session is gone");

    // Ending a session by its id: its cookie opens nothing and is cleared.
    let live: Vec<Value> = b.get("/v1/sessions").send().await.unwrap().json().await.unwrap();
    let newest = live.iter().filter(|s| s["credential"] == device_id).map(|s| s["id"].as_str().unwrap()).next_back().unwrap().to_owned();
    let ended = b.http.delete(format!("{}/v1/tokens/{newest}", b.url)).bearer_auth(crate::support::TOKEN).send().await.unwrap();
    assert_eq!(ended.status(), 200);
    let gone = page(&second).await.unwrap();
    assert!(gone.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert!(!gone.text().await.unwrap().contains("id=\"askuser-first\""));
    let watch = plain().get(format!("{}/answer/{id}", b.url)).header("cookie", &second).send().await.unwrap();
    assert_eq!(watch.status(), 401);

    // A cookie holding a token, as bridges before page sessions set it, opens nothing and is cleared.
    for old in [token, crate::support::TOKEN] {
        let cookie = format!("askuser{port}={old}");
        let r = page(&cookie).await.unwrap();
        assert!(r.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
        assert!(!r.text().await.unwrap().contains("id=\"askuser-first\""), "a raw token in the cookie shows nothing");
        let form = plain().post(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).header("origin", &b.url);
        assert_eq!(form.form(&[("q0", "0"), ("do", "answer")]).send().await.unwrap().status(), 401);
    }
    assert_eq!(b.record(&id).await["status"], "pending", "nothing was answered");
}

/// Opens the page once with `token` (the app opens the session) and waits for the cookie.
async fn known(b: &TestBridge, browser: &Browser, token: &str) {
    browser.goto(&format!("{}/#token={token}", b.url)).await.unwrap();
    browser.wait_css(".askuser-top").await;
    for _ in 0..100 {
        let cookies = browser.get_all_cookies().await.unwrap();
        if let Some(c) = cookies.iter().find(|c| c.name().starts_with("askuser")) {
            assert_eq!(c.http_only(), Some(true), "no script may read it");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the app did not open a session");
}

/// The app's answer box, once the app has taken over the form, and the text it holds
/// (what was typed in the form, when it has arrived).
async fn app_text(browser: &Browser) -> (fantoccini::elements::Element, String) {
    let typed = browser.wait_css(".askuser-app .askuser-dialog textarea.askuser-other").await;
    for _ in 0..100 {
        let value = typed.prop("value").await.unwrap().unwrap_or_default();
        if !value.is_empty() {
            return (typed, value);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (typed, String::new())
}

/// A finger's tap on `element`, as touch events (WebDriver's click waits on the page's
/// scripts, and here there are none).
async fn tap(browser: &Browser, element: &fantoccini::elements::Element) {
    let (x, y, w, h) = element.rectangle().await.unwrap();
    let point = json!([{"x": x + w / 2.0, "y": y + h / 2.0}]);
    browser.cdp("Input.dispatchTouchEvent", json!({"type": "touchStart", "touchPoints": point})).await;
    browser.cdp("Input.dispatchTouchEvent", json!({"type": "touchEnd", "touchPoints": []})).await;
}

#[tokio::test]
async fn a_phone_with_scripts_off_answers_the_question_written_into_the_page() {
    needs!(Chromium);
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let browser = touch_browser(360, 740).await;
    known(&b, &browser, device["token"].as_str().unwrap()).await;
    let asking = b.ask(database_question("scripts-off"), "canonical");
    wait_pending(&b, 1).await;

    browser.cdp("Emulation.setScriptExecutionDisabled", json!({"value": true})).await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    let text = browser.wait_css("#askuser-first .askuser-text").await.text().await.unwrap();
    let submit = browser.find(Locator::Css("#askuser-first button[value=answer]")).await.unwrap();
    let (_, y, _, height) = submit.rectangle().await.unwrap();
    browser.shot("first-paint-phone").await;
    tap(&browser, &browser.find(Locator::XPath("//label[contains(., 'SQLite')]")).await.unwrap()).await;
    tap(&browser, &submit).await;
    let sent = browser.wait_css(".askuser-first-sent").await.text().await.unwrap();
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();
    browser.close().await;
    assert_eq!(text, "Which <b>database</b>?", "agent text as text");
    assert_eq!(result["answers"][0]["answer"], "SQLite");
    assert!(sent.starts_with("Sent."), "{sent}");
    assert!(y + height <= 740.0, "Submit is on screen at 360×740 without scrolling: its bottom at {}", y + height);
}

#[tokio::test]
async fn the_app_takes_over_the_form_and_keeps_what_was_chosen_and_typed() {
    needs!(Chromium);
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let browser = touch_browser(360, 740).await;
    known(&b, &browser, device["token"].as_str().unwrap()).await;
    let asking = b.ask(database_question("hand-over"), "canonical");
    wait_pending(&b, 1).await;

    // The page as a slow phone has it before the app: only the form. A person starts answering.
    browser.cdp("Emulation.setScriptExecutionDisabled", json!({"value": true})).await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    tap(&browser, &browser.find(Locator::XPath("//label[contains(., 'Other')]")).await.unwrap()).await;
    browser.wait_css("#askuser-first textarea[name=q0-text]").await.send_keys("MariaDB, half typ").await.unwrap();
    // Then the app arrives: its loader runs as the page would have run it.
    browser.cdp("Emulation.setScriptExecutionDisabled", json!({"value": false})).await;
    browser
        .execute_async("import('/askuser-init.js').then(() => arguments[0](true), (e) => arguments[0](String(e)))", vec![])
        .await
        .unwrap();
    let (typed, value) = app_text(&browser).await;
    let form_left = browser.find_all(Locator::Css("#askuser-first")).await.unwrap().len();
    typed.send_keys("ed").await.unwrap();
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), asking).await;
    browser.close().await;
    assert_eq!(value, "MariaDB, half typ", "the text typed before the app loaded");
    assert_eq!(form_left, 0, "the form is gone");
    let result: Value = result.unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "MariaDB, half typed");
}

/// A finger on the form holds the app back: it takes the form over only once the
/// finger has lifted, and keeps what the tap chose (a tap never lands on a form that is
/// being replaced).
#[tokio::test]
async fn the_app_waits_for_a_finger_on_the_form_before_taking_it_over() {
    needs!(Chromium);
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let browser = touch_browser(360, 740).await;
    known(&b, &browser, device["token"].as_str().unwrap()).await;
    let _asking = b.ask(database_question("pressed"), "canonical");
    wait_pending(&b, 1).await;

    // The page's script runs, but the app cannot load yet.
    browser.cdp("Network.enable", json!({})).await;
    browser.cdp("Network.setBlockedURLs", json!({"urls": ["*askuser-init.js*"]})).await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    browser.wait_css("#askuser-first .askuser-text").await;
    let label = browser.find(Locator::XPath("//label[contains(., 'SQLite')]")).await.unwrap();
    let (x, y, w, h) = label.rectangle().await.unwrap();
    let point = json!([{"x": x + w / 2.0, "y": y + h / 2.0}]);
    browser.cdp("Input.dispatchTouchEvent", json!({"type": "touchStart", "touchPoints": point})).await;
    // The finger is down when the app arrives.
    browser.cdp("Network.setBlockedURLs", json!({"urls": []})).await;
    browser
        .execute_async("import('/askuser-init.js?again').then(() => arguments[0](true), (e) => arguments[0](String(e)))", vec![])
        .await
        .unwrap();
    browser.wait_css(".askuser-top").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let held = browser.find_all(Locator::Css("#askuser-first")).await.unwrap().len();
    browser.cdp("Input.dispatchTouchEvent", json!({"type": "touchEnd", "touchPoints": []})).await;
    let mut left = 1;
    for _ in 0..100 {
        left = browser.find_all(Locator::Css("#askuser-first")).await.unwrap().len();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let checked = browser.wait_css(".askuser-app .askuser-row[aria-checked=true]").await.text().await.unwrap();
    browser.close().await;
    assert_eq!(held, 1, "the form stays while the finger is on it");
    assert_eq!(left, 0, "the app takes it over once the finger lifts");
    assert!(checked.contains("SQLite"), "the tap's choice is kept: {checked:?}");
}

#[tokio::test]
async fn the_page_hears_when_its_question_set_is_answered_elsewhere() {
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let (cookie, _) = session(&b, device["token"].as_str().unwrap()).await;
    let _asking = b.ask(database_question("watched"), "canonical");
    let id = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();
    let watch = |id: &str| plain().get(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).send();

    let held = tokio::spawn(watch(&id));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "the request holds while the set waits");
    let answered = b.post(&format!("/v1/questions/{id}/answer")).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert!(answered.status().is_success(), "{}", answered.status());
    let held = tokio::time::timeout(Duration::from_secs(5), held).await.expect("answered elsewhere ends the wait").unwrap().unwrap();
    assert_eq!(held.status(), 200);
    assert_eq!(held.headers()["cache-control"], "no-store");
    assert_eq!(watch(&id).await.unwrap().status(), 200, "an answered set says so at once");
    assert_eq!(watch("no-such-set").await.unwrap().status(), 404);
    let anonymous = plain().get(format!("{}/answer/{id}", b.url)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "only a device the bridge knows may ask");
}

/// Resource URLs the page has had a response for (a request refused before the
/// network, as `only-if-cached` with nothing cached, has no status).
async fn fetched(browser: &Browser) -> Vec<String> {
    let script = "return performance.getEntriesByType('resource').filter((e) => e.responseStatus > 0).map((e) => e.name)";
    let names = browser.execute(script, vec![]).await.unwrap();
    serde_json::from_value(names).unwrap()
}

#[tokio::test]
async fn a_slow_phone_keeps_the_form_until_the_inbox_is_opened() {
    needs!(Chromium);
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let browser = touch_browser(360, 740).await;
    known(&b, &browser, device["token"].as_str().unwrap()).await;
    let _first = b.ask(database_question("first-set"), "canonical");
    let first = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = b.ask(json!({"question": "Which region?", "agent": {"name": "second-set", "sessionId": "second-set"}}), "canonical");
    wait_pending(&b, 2).await;

    // A slow connection, as the page measures its own request (a 1 s round trip: Chromium's
    // Network Information says "4g" under DevTools' emulation whatever the latency, and other
    // browsers have none), and the app kept nowhere on this device (no HTTP cache, the
    // service worker bypassed).
    browser.slow_and_cold().await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    browser.wait_css("#askuser-first .askuser-text").await;
    let open = browser.wait_css(".askuser-first-open").await;
    for _ in 0..100 {
        if open.is_displayed().await.unwrap() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(open.is_displayed().await.unwrap(), "the page offers the inbox");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let wasm: Vec<String> = fetched(&browser).await.into_iter().filter(|u| u.contains("askuser-web-")).collect();
    assert!(wasm.is_empty(), "the app is not loaded on a slow connection: {wasm:?}");
    assert!(browser.find_all(Locator::Css(".askuser-app")).await.unwrap().is_empty(), "the app has not started");

    // Answered elsewhere: the page shows the next set, and says why.
    let answered = b.post(&format!("/v1/questions/{first}/answer")).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert!(answered.status().is_success(), "{}", answered.status());
    let mut text = String::new();
    for _ in 0..100 {
        text = match browser.find(Locator::Css("#askuser-first .askuser-text")).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if text == "Which region?" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(text, "Which region?", "the next set replaces the one answered elsewhere");
    let said = browser.wait_css(".askuser-first-sent").await.text().await.unwrap();
    assert!(said.contains("answered or closed elsewhere"), "{said}");

    // A half-typed answer, then the inbox: the app loads and keeps it.
    browser.wait_css("#askuser-first textarea[name=q0-text]").await.send_keys("eu-west, half typ").await.unwrap();
    browser.fast(false).await;
    tap(&browser, &browser.wait_css(".askuser-first-open").await).await;
    let (typed, value) = app_text(&browser).await;
    typed.send_keys("ed").await.unwrap();
    browser.wait_css("[data-action=enter]").await.click().await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), second).await;
    browser.close().await;
    assert_eq!(value, "eu-west, half typ", "the text typed before the app loaded");
    let result: Value = result.unwrap().unwrap().json().await.unwrap();
    assert_eq!(result["answers"][0]["answer"], "eu-west, half typed");
}

/// A page session learns nothing of a question set that is not its person's: not that
/// it exists, nor that it closed (issue 45: `GET /answer/ID` said 200 for anyone's
/// closed set, and the form's post 409).
/// A phone that has never opened the bridge, on a slow connection, opening the link
/// `askuser serve` prints (`/#token=…`): the page's script sends the token once and
/// draws the form it gets back, with no app loaded; the token leaves the address bar;
/// the form answers; and the bridge now knows the device (the next load has the form
/// written in).
#[tokio::test]
async fn a_new_phone_opening_the_printed_link_gets_the_form_one_request_after_the_page() {
    needs!(Chromium);
    let b = bridge().await;
    let device = b.device_token("new phone", None).await;
    let token = device["token"].as_str().unwrap();
    let asking = b.ask(database_question("new-phone"), "canonical");
    wait_pending(&b, 1).await;
    let browser = touch_browser(360, 740).await;
    browser.slow_and_cold().await;

    browser.goto(&format!("{}/#token={token}", b.url)).await.unwrap();
    let text = browser.wait_css("#askuser-first .askuser-text").await.text().await.unwrap();
    let address = browser.current_url().await.unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let wasm: Vec<String> = fetched(&browser).await.into_iter().filter(|u| u.contains("askuser-web-")).collect();
    let app = browser.find_all(Locator::Css(".askuser-app")).await.unwrap().len();
    let layout_shift: f64 = browser
        .execute("return performance.getEntriesByType('layout-shift').reduce((sum, e) => sum + e.value, 0)", vec![])
        .await
        .unwrap()
        .as_f64()
        .unwrap_or(-1.0);
    tap(&browser, &browser.find(Locator::XPath("//label[contains(., 'PostgreSQL')]")).await.unwrap()).await;
    tap(&browser, &browser.find(Locator::Css("#askuser-first button[value=answer]")).await.unwrap()).await;
    let sent = browser.wait_css(".askuser-first-sent").await.text().await.unwrap();
    let result: Value = tokio::time::timeout(Duration::from_secs(10), asking).await.unwrap().unwrap().json().await.unwrap();

    // Known now: the next question is in the page as it loads, with no token sent.
    let _next = b.ask(json!({"question": "Which region?", "agent": {"name": "new-phone", "sessionId": "new-phone"}}), "canonical");
    wait_pending(&b, 1).await;
    browser.cdp("Emulation.setScriptExecutionDisabled", json!({"value": true})).await;
    browser.goto(&format!("{}/", b.url)).await.unwrap();
    let next = browser.wait_css("#askuser-first .askuser-text").await.text().await.unwrap();
    browser.close().await;

    assert_eq!(text, "Which <b>database</b>?", "agent text as text");
    assert!(!address.contains(token), "the token is taken out of the address bar: {address}");
    assert!(wasm.is_empty(), "the app is not loaded on a slow connection: {wasm:?}");
    assert_eq!(app, 0, "the app has not started");
    assert_eq!(layout_shift, 0.0, "nothing on the page moved");
    assert!(sent.starts_with("Sent."), "{sent}");
    assert_eq!(result["answers"][0]["answer"], "PostgreSQL");
    assert_eq!(next, "Which region?");
}

/// What `POST /v1/session?form` answers: the first waiting set's form (and the cookie),
/// nothing for an agent's token, and 204 when nothing waits.
#[tokio::test]
async fn a_session_opened_with_form_answers_with_the_waiting_sets_form() {
    let b = bridge().await;
    let device = b.device_token("phone", None).await;
    let token = device["token"].as_str().unwrap();
    let open = || plain().post(format!("{}/v1/session?form", b.url)).bearer_auth(token).send();
    let none = open().await.unwrap();
    assert_eq!(none.status(), 204, "nothing waits");
    assert!(none.headers().contains_key("set-cookie"), "the session opens all the same");

    let _asking = b.ask(database_question("form-part"), "canonical");
    wait_pending(&b, 1).await;
    let r = open().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert!(r.headers()["set-cookie"].to_str().unwrap().contains("HttpOnly"));
    let part = r.text().await.unwrap();
    assert!(part.starts_with("<div id=\"askuser-first\""), "{part}");
    assert!(part.contains("Which &lt;b&gt;database&lt;/b&gt;?"), "agent text escaped: {part}");

    let agent = b.post("/v1/tokens").json(&json!({"scope": "agent", "name": "ci"})).send().await.unwrap();
    let agent: Value = agent.json().await.unwrap();
    let refused = plain().post(format!("{}/v1/session?form", b.url)).bearer_auth(agent["token"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(refused.status(), 403, "an agent's token opens no page and reads no form");
}

/// `GET /` for a device the bridge does not know is the page as built with `first.js`
/// for its loader, and no cache keeps it; `/index.html` is the page as built, which the
/// service worker keeps.
#[tokio::test]
async fn a_stranger_gets_the_loader_that_asks_for_the_form() {
    let b = bridge().await;
    let page = plain().get(format!("{}/", b.url)).send().await.unwrap();
    assert_eq!(page.headers()["cache-control"], "no-store");
    let page = page.text().await.unwrap();
    let first_js = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/first.js")).unwrap();
    assert!(page.contains(&format!("<script type=\"module\">{first_js}</script>")), "first.js written in: {page}");
    assert!(!page.contains("src=\"/askuser-init.js\""), "the app's loader waits for first.js: {page}");
    assert!(page.contains("<style>"), "the style is written in");
    let built = plain().get(format!("{}/index.html", b.url)).send().await.unwrap().text().await.unwrap();
    assert!(built.contains("src=\"/askuser-init.js\""), "the shell loads the app: {built}");
}

#[tokio::test]
async fn the_page_learns_nothing_of_a_set_that_is_not_its_persons() {
    let b = bridge().await;
    let alice = b.device_token("phone", Some("alice")).await;
    let (cookie, _) = session(&b, alice["token"].as_str().unwrap()).await;
    let watch = |id: String| plain().get(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).send();
    let post = |id: String| {
        let form = plain().post(format!("{}/answer/{id}", b.url)).header("cookie", &cookie).header("origin", &b.url);
        form.form(&[("q0", "1"), ("do", "answer")]).send()
    };
    let for_ = |to: &str| {
        let mut q = database_question(to);
        q["agent"]["assignee"] = to.into();
        q
    };
    let _bobs = b.ask(for_("bob"), "canonical");
    let bobs = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(watch(bobs.clone()).await.unwrap().status(), 404, "bob's, waiting");
    assert_eq!(post(bobs.clone()).await.unwrap().status(), 404);
    let answered = b.post(&format!("/v1/questions/{bobs}/answer")).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert!(answered.status().is_success(), "{}", answered.status());
    assert_eq!(watch(bobs.clone()).await.unwrap().status(), 404, "bob's, closed: as unknown as one that never was");
    assert_eq!(post(bobs.clone()).await.unwrap().status(), 404, "not 409, which says it closed");
    assert_eq!(watch("no-such-set".into()).await.unwrap().status(), 404);

    // Her own set, closed elsewhere, still says so.
    let _hers = b.ask(for_("alice"), "canonical");
    let hers = wait_pending(&b, 1).await[0]["id"].as_str().unwrap().to_owned();
    let answered = b.post(&format!("/v1/questions/{hers}/answer")).json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert!(answered.status().is_success(), "{}", answered.status());
    assert_eq!(watch(hers.clone()).await.unwrap().status(), 200);
    assert_eq!(post(hers).await.unwrap().status(), 409, "another answer than the one that won");
}
