//! The editor extension (editors/vscode) in a real web IDE: code-server from npm (scripts/setup
//! editor) with the `.vsix` installed by its own `--install-extension`, the workbench driven by
//! headless Chromium, against a bridge here that the extension finds through `bridge.json`.
//! It runs in a network namespace of its own (`unshare -n`): nothing reaches beyond loopback.

use crate::support::*;
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child this test runs itself as, inside the namespace.
const INSIDE: &str = "ASKUSER_TEST_NETNS";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// code-server with its own settings, user data and extensions, serving `folder`; killed
/// with its children (the extension host) when dropped.
struct CodeServer {
    child: Child,
    url: String,
    user_data: PathBuf,
}

impl Drop for CodeServer {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process_group(rustix::process::Pid::from_child(&self.child), rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

fn code_server(home: &Path, vsix: &Path, folder: &Path, data_dir: &Path) -> CodeServer {
    let exe = repo(".tools/editor/node_modules/.bin/code-server");
    let (user_data, extensions) = (home.join("user-data"), home.join("extensions"));
    std::fs::create_dir_all(user_data.join("User")).unwrap();
    // A first start that shows the workbench and nothing else.
    let settings = json!({
        "workbench.startupEditor": "none", "workbench.tips.enabled": false, "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": false, "extensions.autoUpdate": false,
        "update.mode": "none", "workbench.enableExperiments": false, "chat.commandCenter.enabled": false,
        // The askuser under test (the extension host's PATH is the login shell's).
        "askuser.path": env!("CARGO_BIN_EXE_askuser"),
    });
    std::fs::write(user_data.join("User/settings.json"), settings.to_string()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = home.join("config.yaml");
    std::fs::write(&config, format!("bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")).unwrap();
    let base = |cmd: &mut Command| {
        cmd.arg("--config").arg(&config).arg("--user-data-dir").arg(&user_data).arg("--extensions-dir").arg(&extensions);
        cmd.env("HOME", home).env("EXTENSIONS_GALLERY", "{}").env("ASKUSER_DATA_DIR", data_dir);
    };
    let mut install = Command::new(&exe);
    base(&mut install);
    let out = install.arg("--install-extension").arg(vsix).output().expect("code-server runs");
    assert!(out.status.success(), "--install-extension failed: {}{}", text(&out.stdout), text(&out.stderr));
    let mut serve = Command::new(&exe);
    base(&mut serve);
    serve.args(["--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override"]);
    let log = std::fs::File::create(home.join("code-server.log")).unwrap();
    let child = std::os::unix::process::CommandExt::process_group(&mut serve, 0)
        .arg(folder)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("code-server starts");
    CodeServer { child, url: format!("http://127.0.0.1:{port}"), user_data }
}

/// Waits for code-server's `/healthz`.
async fn healthy(url: &str) {
    let http = askuser_bridge::client::http_client(None);
    for _ in 0..300 {
        if http.get(format!("{url}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("code-server did not answer /healthz within 30 s");
}

/// The `.vsix` as scripts/build-vsix packs it from editors/vscode, into `dir`.
fn vsix(dir: &Path) -> PathBuf {
    let out = Command::new(repo("scripts/build-vsix")).arg(dir).output().expect("scripts/build-vsix runs");
    assert!(out.status.success(), "scripts/build-vsix failed: {}", text(&out.stderr));
    PathBuf::from(text(&out.stdout).trim())
}

/// The first element `css` matches whose text contains `want`, once there (within `secs`).
async fn with_text(browser: &Browser, css: &str, want: &str, secs: u64) -> Element {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        for e in browser.find_all(Locator::Css(css)).await.unwrap_or_default() {
            let shown = e.text().await.unwrap_or_default();
            let label = e.attr("aria-label").await.ok().flatten().unwrap_or_default();
            if shown.contains(want) || label.contains(want) {
                return e;
            }
        }
        if Instant::now() > until {
            let all: Vec<String> = futures_util::future::join_all(
                browser
                    .find_all(Locator::Css(css))
                    .await
                    .unwrap_or_default()
                    .iter()
                    .map(|e| async move { e.text().await.unwrap_or_default() }),
            )
            .await;
            panic!("no {css} with {want:?} within {secs} s; there were {all:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// askuser's status bar item's accessible name.
async fn status_label(browser: &Browser) -> String {
    let item = with_text(browser, ".part.statusbar .statusbar-item", "askuser", 30).await;
    item.attr("aria-label").await.unwrap().unwrap_or_default()
}

async fn until_status(browser: &Browser, want: &str) {
    for _ in 0..200 {
        if status_label(browser).await.contains(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the status bar never said {want:?}: {:?}", status_label(browser).await);
}

/// A notification's button: the toast naming `about`, its button `label` (read as its
/// `textContent`: a toast still sliding in has no rendered text yet).
async fn notification_button(browser: &Browser, about: &str, label: &str) -> Element {
    let toast = with_text(browser, ".notification-toast", about, 15).await;
    for _ in 0..100 {
        for b in toast.find_all(Locator::Css(".monaco-button")).await.unwrap() {
            if b.prop("textContent").await.ok().flatten().unwrap_or_default().trim() == label {
                return b;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the notification about {about:?} has no {label:?} button: {:?}", toast.text().await);
}

/// Clicks `element` once it can be (a toast slides in; a button waits for its layout).
async fn press(element: Element) {
    for _ in 0..100 {
        match element.click().await {
            Ok(()) => return,
            Err(e) if e.to_string().contains("not interactable") || e.to_string().contains("click intercepted") => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("clicking failed: {e}"),
        }
    }
    panic!("the element never became clickable");
}

/// Into the askuser panel's page: the webview's outer frame, then its active frame.
async fn enter_panel(browser: &Browser) {
    browser.wait_css("iframe.webview.ready").await.enter_frame().await.unwrap();
    browser.wait_css("iframe#active-frame").await.enter_frame().await.unwrap();
}

async fn leave_panel(browser: &Browser) {
    browser.enter_parent_frame().await.unwrap();
    browser.enter_parent_frame().await.unwrap();
}

/// Runs an askuser command against the test bridge (found through bridge.json), off the
/// test's one thread, which serves that bridge meanwhile.
async fn cli(data_dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = askuser();
    cmd.args(args).env("ASKUSER_DATA_DIR", data_dir);
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

/// The extension's own log (its output channel, as code-server keeps it).
fn extension_log(user_data: &Path) -> String {
    let mut found = String::new();
    let mut stack = vec![user_data.join("logs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("askuser.log")) {
                found.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    found
}

/// Outside the namespace: runs test `name` again in a network namespace of its own with
/// loopback alone (`unshare -n`), checks it passed, and says so (true: the caller returns).
/// Inside: checks there is nothing but loopback (false: the caller goes on).
fn outside(name: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
        let links = text(&links.stdout);
        assert_eq!(links.lines().count(), 1, "a network namespace with loopback alone: {links}");
        assert!(links.contains(": lo:"), "{links}");
        return false;
    }
    let started = Instant::now();
    // Root may make a network namespace; anyone else, in a user namespace of their own.
    let user = if rustix::process::geteuid().is_root() { None } else { Some("--map-root-user") };
    let status = Command::new("unshare")
        .args(user)
        .args(["--net", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args([&format!("editor::{name}"), "--exact", "--nocapture", "--test-threads", "1"])
        .env(INSIDE, "1")
        .status()
        .expect("unshare runs (util-linux)");
    assert!(status.success(), "editor::{name} inside its network namespace failed (its output is above)");
    eprintln!("editor::{name}: {:.1} s in all", started.elapsed().as_secs_f64());
    true
}

/// The whole extension in code-server: the count follows `askuser ask --no-wait`; a
/// notification's button answers (`askuser result` has it); a command's approval shows the
/// command whole beside Allow, or offers no Allow; the panel answers a four-question set by
/// keyboard and passes axe; an edit approval opens the diff view and its Allow reaches the
/// agent; Always allow names its rule first; a set answered in askuser's page (another tab)
/// leaves the panel. In a network namespace of its own (see [`outside`]).
#[tokio::test]
async fn the_extension_answers_in_code_server() {
    needs!(Chromium, Axe, CodeServer);
    if outside("the_extension_answers_in_code_server") {
        return;
    }
    let b = bridge().await;
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("app");
    std::fs::create_dir_all(folder.join("src")).unwrap();
    let db_rs = folder.join("src/db.rs");
    std::fs::write(&db_rs, "fn open() {\n    sqlite();\n}\n").unwrap();
    let started = Instant::now();
    let vsix = vsix(home.path());
    let vsix_bytes = std::fs::metadata(&vsix).unwrap().len();
    let packed = started.elapsed();
    let ide = code_server(home.path(), &vsix, &folder, b.dir.path());
    eprintln!("editor: installed in code-server at {:.1} s", started.elapsed().as_secs_f64());
    healthy(&ide.url).await;
    eprintln!("editor: code-server up at {:.1} s", started.elapsed().as_secs_f64());
    let browser = browser(1400, 900).await;
    let opened = Instant::now();
    browser.goto(&format!("{}/?folder={}", ide.url, folder.display())).await.unwrap();
    browser.wait_css(".part.statusbar").await;
    eprintln!("editor: workbench at {:.1} s", started.elapsed().as_secs_f64());
    until_status(&browser, "0 question sets waiting").await;
    let count_shown = opened.elapsed();
    eprintln!("editor: count shown at {:.1} s", started.elapsed().as_secs_f64());

    // 1. The count follows `askuser ask --no-wait`, and a notification's button answers.
    let asked = Instant::now();
    let out = cli(
        b.dir.path(),
        &["ask", "--no-wait", "--question", "Deploy now?", "--option", "Yes", "--option", "No", "--agent-name", "deployer"],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let deploy = text(&out.stdout).trim().to_owned();
    let yes = notification_button(&browser, "deployer asks: Deploy now?", "Yes").await;
    let notified = asked.elapsed();
    until_status(&browser, "1 question set waiting").await;
    browser.shot("editor-notification").await;
    press(yes).await;
    until_status(&browser, "0 question sets waiting").await;
    let out = cli(b.dir.path(), &["result", &deploy, "-f", "text"]).await;
    assert!(out.status.success(), "askuser result: {}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("Yes"), "{}", text(&out.stdout));

    // A command's approval shows the command whole beside Allow; one that cannot be shown
    // whole in a notification (two lines) gets no Allow there, only Deny and Open.
    let run = |command: &str| {
        let call = json!({"tool_name": "Bash", "input": {"command": command}, "cwd": "/srv/app", "agent": {"name": "claude-code"}});
        let req = b.post("/v1/approve").json(&call);
        tokio::spawn(async move { req.send().await.unwrap().json::<Value>().await.unwrap() })
    };
    let approving = run("cargo test --workspace");
    press(notification_button(&browser, "claude-code asks to run: cargo test --workspace (in /srv/app)", "Allow").await).await;
    let decision = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("the agent hears back").unwrap();
    assert_eq!(decision["behavior"], "allow", "{decision:#}");
    let approving = run("rm -rf build\necho done");
    let toast = with_text(&browser, ".notification-toast", "claude-code asks to run a command a notification cannot show whole", 15).await;
    notification_button(&browser, "claude-code asks to run a command a notification cannot show whole", "Open").await;
    let labels = toast.find_all(Locator::Css(".monaco-button")).await.unwrap();
    let labels: Vec<String> = futures_util::future::join_all(
        labels.iter().map(|b| async move { b.prop("textContent").await.ok().flatten().unwrap_or_default() }),
    )
    .await;
    assert_eq!(labels, ["Deny", "Open"], "no Allow where the command is not shown whole");
    press(notification_button(&browser, "claude-code asks to run a command a notification cannot show whole", "Deny").await).await;
    let decision = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("the agent hears back").unwrap();
    assert_eq!(decision["behavior"], "deny", "{decision:#}");

    // 2. The panel answers a four-question set by keyboard, and axe finds nothing in it.
    let four = json!({"id": "four", "questions": [
        {"question": "Which database should we use?", "header": "Database",
         "options": [{"label": "PostgreSQL", "description": "Relational", "preview": "CREATE TABLE t (id int);"}, {"label": "SQLite", "description": "A file"}]},
        {"question": "Which cache?", "header": "Cache", "options": [{"label": "Redis"}, {"label": "None"}]},
        {"question": "Which features should we include?", "header": "Features", "multiSelect": true,
         "options": [{"label": "Authentication"}, {"label": "REST API"}, {"label": "Admin Dashboard"}]},
        {"question": "What should we name this service?", "header": "Name"}
    ], "agent": {"name": "claude-code", "sessionId": "s-1"}});
    assert_eq!(b.post("/v1/ask?wait=false").json(&four).send().await.unwrap().status(), 202);
    press(notification_button(&browser, "claude-code asks 4 questions", "Open").await).await;
    enter_panel(&browser).await;
    browser.row("radio", "SQLite").await;
    let panel_axe = crate::browser::axe(&browser).await;
    assert!(panel_axe.is_empty(), "axe in the panel: {panel_axe:#?}");
    // The package's stylesheet lays the preview out as the page does: one shown, the
    // sizer that holds the place for the tallest hidden.
    let sizer =
        browser.execute("return getComputedStyle(document.querySelector('.askuser-preview-sizer')).visibility", vec![]).await.unwrap();
    assert_eq!(sizer, json!("hidden"), "the preview's sizer shows: a second copy of the preview");
    leave_panel(&browser).await;
    browser.shot("editor-panel").await;
    enter_panel(&browser).await;
    browser.keys(&format!("{}{}", Key::Down, Key::Enter)).await; // SQLite
    browser.row("radio", "Redis").await;
    browser.keys(&Key::Enter.to_string()).await; // Redis
    browser.row("checkbox", "REST API").await;
    browser.keys(" ").await; // Authentication
    browser.keys(&format!("{}{}", Key::Down, Key::Down)).await;
    browser.keys(" ").await; // Admin Dashboard
    browser.keys(&Key::Enter.to_string()).await;
    browser.wait_css("textarea.askuser-other").await;
    browser.keys("order-processor").await;
    browser.keys(&Key::Enter.to_string()).await; // the review
    browser.keys(&Key::Enter.to_string()).await; // sent
    let record = b.until_status("four", "answered").await;
    let answers = &record["result"]["answers"];
    assert_eq!(answers[0]["answer"], "SQLite");
    assert_eq!(answers[1]["answer"], "Redis");
    assert_eq!(answers[2]["answer"], json!(["Authentication", "Admin Dashboard"]));
    assert_eq!(answers[3]["answer"], "order-processor");
    leave_panel(&browser).await;

    // 3. An edit approval opens the editor's diff view; its Allow reaches the agent.
    let edit = json!({"tool_name": "Edit", "cwd": folder, "agent": {"name": "claude-code", "sessionId": "s-1"},
        "input": {"file_path": db_rs, "old_string": "    sqlite();", "new_string": "    postgres();"}});
    let approve = b.post("/v1/approve").json(&edit);
    let approving = tokio::spawn(async move { approve.send().await.unwrap().json::<Value>().await.unwrap() });
    press(notification_button(&browser, "claude-code asks to edit", "Show diff").await).await;
    with_text(&browser, ".monaco-diff-editor .editor.modified .view-lines", "postgres();", 15).await;
    with_text(&browser, ".monaco-diff-editor .editor.original .view-lines", "sqlite();", 5).await;
    browser.shot("editor-diff").await;
    press(browser.wait_css(".editor-actions a.action-label[aria-label^='Allow this edit']").await).await;
    let decision = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("the agent hears back").unwrap();
    assert_eq!(decision["behavior"], "allow", "{decision:#}");
    assert_eq!(decision["updatedInput"]["new_string"], "    postgres();", "{decision:#}");
    assert_eq!(decision["decidedBy"], "person", "{decision:#}");
    // The diff view closes with its answer.
    for _ in 0..100 {
        if browser.find_all(Locator::Css(".monaco-diff-editor")).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(browser.find_all(Locator::Css(".monaco-diff-editor")).await.unwrap().is_empty(), "the diff view is still open");

    // A new file's Always allow names the rule it keeps, whole, before it is kept.
    let new_rs = folder.join("src/new.rs");
    let write = json!({"tool_name": "Write", "cwd": folder, "agent": {"name": "claude-code", "sessionId": "s-1"},
        "input": {"file_path": new_rs, "content": "fn new() {}\n"}});
    let approve = b.post("/v1/approve").json(&write);
    let approving = tokio::spawn(async move { approve.send().await.unwrap().json::<Value>().await.unwrap() });
    press(notification_button(&browser, "claude-code asks to write", "Show diff").await).await;
    with_text(&browser, ".monaco-diff-editor .editor.modified .view-lines", "fn new() {}", 15).await;
    press(browser.wait_css(".editor-actions a.action-label[aria-label^='Always allow']").await).await;
    let dialog = with_text(&browser, ".monaco-dialog-box", "Do not ask again for", 10).await;
    let named = dialog.text().await.unwrap();
    let rules: Value = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    assert_eq!(rules.as_array().map(Vec::len), Some(0), "no rule before the person confirms: {rules:#}");
    for button in dialog.find_all(Locator::Css(".monaco-button")).await.unwrap() {
        if button.text().await.unwrap_or_default().trim() == "Always allow" {
            press(button).await;
            break;
        }
    }
    let decision = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("the agent hears back").unwrap();
    assert_eq!(decision["behavior"], "allow", "{decision:#}");
    let rules: Value = b.get("/v1/rules").send().await.unwrap().json().await.unwrap();
    let rule = &rules[0]["rule"];
    let kept = format!(
        "{}({}) in {}",
        rule["tool"].as_str().unwrap(),
        rule["pattern"].as_str().unwrap(),
        rule["scope"]["project"].as_str().unwrap()
    );
    assert!(named.contains(&format!("Do not ask again for {kept}")), "the dialog named {named:?}; the rule kept is {rules:#}");
    assert_eq!(rules.as_array().map(Vec::len), Some(1), "{rules:#}");

    // 4. A set answered elsewhere (askuser's own page, in another tab) leaves the panel.
    // Its text carries markup, which the notification and the panel show as text.
    let payload = "<img src=x onerror=\"window.pwned=1\">";
    let port =
        json!({"id": "port", "question": format!("Which port? {payload}"), "choices": ["8080", "9090"], "agent": {"name": "claude-code"}});
    assert_eq!(b.post("/v1/ask?wait=false").json(&port).send().await.unwrap().status(), 202);
    press(notification_button(&browser, "Which port?", "Open").await).await;
    enter_panel(&browser).await;
    browser.row("radio", "9090").await;
    with_text(&browser, "#dialog", &format!("Which port? {payload}"), 5).await;
    with_text(&browser, "#sets", "Which port?", 5).await;
    let markup = browser.execute("return [document.querySelectorAll('img').length, typeof window.pwned]", vec![]).await.unwrap();
    assert_eq!(markup, json!([0, "undefined"]), "agent text became markup in the panel");
    let workbench = browser.window().await.unwrap();
    let tab = browser.new_window(true).await.unwrap();
    browser.switch_to_window(tab.handle).await.unwrap();
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
    browser.row("radio", "8080").await;
    browser.keys(&Key::Enter.to_string()).await; // 8080, sent from the page
    b.until_status("port", "answered").await;
    browser.switch_to_window(workbench).await.unwrap();
    enter_panel(&browser).await;
    with_text(&browser, "#status", "answered elsewhere", 10).await;
    with_text(&browser, "#sets", "No questions are waiting.", 5).await;
    assert!(browser.find_all(Locator::Css("[role=radio]")).await.unwrap().is_empty(), "the answered set left the dialog");
    leave_panel(&browser).await;

    let log = extension_log(&ide.user_data);
    let activation = log.lines().find(|l| l.contains("activated in")).map(str::to_owned);
    let raised = log.lines().find(|l| l.contains(&format!("notified {deploy} "))).map(str::to_owned);
    eprintln!(
        "editor: .vsix {vsix_bytes} B (packed in {:.1} s); workbench opened → askuser's count shown {:.2} s; \
         `askuser ask` → its notification {:.2} s; extension log: {activation:?}, {raised:?}",
        packed.as_secs_f64(),
        count_shown.as_secs_f64(),
        notified.as_secs_f64(),
    );
    assert!(activation.is_some(), "the extension logged its activation: {log}");
    browser.close().await;
}

/// A bridge the extension started, stopped when the test ends.
struct Started(Option<u32>);

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
}

/// With no bridge running and askuser runnable (`askuser.path`), the extension starts `askuser serve`
/// (found then by its bridge.json), and "askuser: Set up Claude Code for this workspace"
/// runs `askuser setup claude-code` for the folder's own files; "askuser: Connect to a
/// bridge" then reaches another bridge by its URL, its token in the secret storage.
#[tokio::test]
async fn the_extension_starts_the_bridge_and_sets_up_claude_code() {
    needs!(Chromium, CodeServer);
    if outside("the_extension_starts_the_bridge_and_sets_up_claude_code") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let data_dir = home.path().join("askuser-data");
    let folder = home.path().join("app");
    std::fs::create_dir_all(&folder).unwrap();
    let vsix = vsix(home.path());
    let ide = code_server(home.path(), &vsix, &folder, &data_dir);
    healthy(&ide.url).await;
    let browser = browser(1200, 800).await;
    browser.goto(&format!("{}/?folder={}", ide.url, folder.display())).await.unwrap();
    browser.wait_css(".part.statusbar").await;
    let mut started = Started(None);
    for _ in 0..300 {
        if let Ok(written) = std::fs::read_to_string(data_dir.join("bridge.json")) {
            let written: Value = serde_json::from_str(&written).unwrap();
            started.0 = written["pid"].as_u64().map(|p| p as u32);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let Some(pid) = started.0 else {
        panic!("the extension started no askuser serve that wrote bridge.json; its log:\n{}", extension_log(&ide.user_data));
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(text(&cmdline).contains("serve"), "{}", text(&cmdline));
    until_status(&browser, "0 question sets waiting").await;

    palette(&browser, "askuser: Set up Claude Code", "Set up Claude Code for this workspace").await;
    with_text(&browser, ".notification-toast", "Claude Code asks you through askuser in this workspace", 20).await;
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(folder.join(".mcp.json")).unwrap()).unwrap();
    let server = &mcp["mcpServers"]["askuser"];
    assert!(server["args"].to_string().contains("mcp"), "{mcp:#}");
    assert!(folder.join(".claude/settings.json").exists(), "Claude Code's project settings");

    // "Connect to a bridge": another bridge's URL, and its token kept in the secret storage.
    let other = bridge().await;
    let asked = json!({"id": "elsewhere", "question": "From the other bridge?", "choices": ["Yes", "No"]});
    assert_eq!(other.post("/v1/ask?wait=false").json(&asked).send().await.unwrap().status(), 202);
    palette(&browser, "askuser: Connect to a bridge", "Connect to a bridge (URL and token)").await;
    let url = browser.wait_css(".quick-input-widget input").await;
    with_text(&browser, ".quick-input-widget", "the bridge's address", 10).await;
    url.send_keys(&format!("{}{}", other.url, Key::Enter)).await.unwrap();
    with_text(&browser, ".quick-input-widget", "its token", 10).await;
    let token = browser.wait_css(".quick-input-widget input[type=password]").await;
    token.send_keys(&format!("{TOKEN}{}", Key::Enter)).await.unwrap();
    until_status(&browser, "1 question set waiting").await;
    with_text(&browser, ".notification-toast", "From the other bridge?", 10).await;
    browser.close().await;
}

/// Runs `command` from the command palette (F1), picking the row that says `row`.
async fn palette(browser: &Browser, command: &str, row: &str) {
    browser.active_element().await.unwrap().send_keys(&Key::F1.to_string()).await.unwrap();
    let input = browser.wait_css(".quick-input-widget input").await;
    input.send_keys(command).await.unwrap();
    with_text(browser, ".quick-input-list .monaco-list-row", row, 10).await;
    input.send_keys(&Key::Enter.to_string()).await.unwrap();
}
