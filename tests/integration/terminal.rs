//! `askuser tui` and `askuser ask --here` in a real terminal: tmux runs them, keys go
//! in with `send-keys`, the screen comes back with `capture-pane`, and a real bridge
//! (in this process, on 127.0.0.1) carries the questions of agents that wait for the
//! answers the person gives there.

use crate::support::{bridge, bridge_at, TestBridge, TOKEN};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// A tmux server of its own (so tests run side by side), with one window of the given
/// size running `command`; the server ends when this is dropped.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn start(width: u16, height: u16, command: &str) -> Tmux {
        crate::needs::Tool::Tmux.declared();
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux { socket: format!("askuser-test-{}-{n}", std::process::id()) };
        let (w, h) = (width.to_string(), height.to_string());
        // A shell runs the command, and then reports how the terminal was left.
        let script =
            format!("{command}; echo \"exit=$?\"; stty -a | tr ' ' '\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '; echo; sleep 600");
        let out = tmux.run(&["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", &w, "-y", &h, "sh", "-c", &script]);
        assert!(out.status.success(), "tmux starts: {}", String::from_utf8_lossy(&out.stderr));
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs (scripts/setup installs it)")
    }

    /// Keys by tmux's names ("Enter", "Escape", "Down", "C-w", "M-Enter") or literal text.
    pub(crate) fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.run(&["send-keys", "-t", "t", key]);
            // One key at a time, as a person types: each is its own read.
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Pastes `text` the way a terminal does (bracketed, when the program asked for it).
    fn paste(&self, text: &str) {
        self.run(&["set-buffer", "--", text]);
        self.run(&["paste-buffer", "-p", "-t", "t"]);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// The screen with its colour escapes.
    fn screen_with_escapes(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-e", "-p", "-t", "t"]).stdout).into_owned()
    }

    fn resize(&self, width: u16, height: u16) {
        self.run(&["resize-window", "-t", "t", "-x", &width.to_string(), "-y", &height.to_string()]);
    }

    /// Waits (10 s at most) until the screen shows every one of `want`.
    pub(crate) async fn wait_for(&self, want: &[&str]) -> String {
        self.wait_until(&format!("{want:?}"), |screen| want.iter().all(|w| screen.contains(w))).await
    }

    /// Waits for the program to end and the shell to report how it left the terminal.
    async fn ended(&self) -> String {
        self.wait_until("the program's end", |s| s.contains("exit=") && s.contains("icanon")).await
    }

    async fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let mut screen = String::new();
        for _ in 0..200 {
            screen = self.screen();
            if done(&screen) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the screen never showed {what}:\n{screen}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// Whether the shell found the terminal cooked and echoing after the program ended.
fn restored(screen: &str) -> bool {
    screen.lines().any(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.contains(&"icanon") && words.contains(&"echo")
    })
}

/// Whether a screen captured with its escapes sets a colour (SGR 30-38, 40-48, 90-107);
/// the defaults (39, 49) and bold or reverse are not colours.
fn sets_colour(escaped: &str) -> bool {
    escaped.split("\u{1b}[").skip(1).any(|sgr| {
        let params = sgr.split('m').next().unwrap_or_default();
        params.split(';').any(|p| matches!(p.parse::<u32>(), Ok(30..=38 | 40..=48 | 90..=107)))
    })
}

fn askuser() -> String {
    env!("CARGO_BIN_EXE_askuser").to_owned()
}

/// `askuser tui` against bridge `b`, in a terminal of the given size.
fn tui(b: &TestBridge, width: u16, height: u16, extra: &str) -> Tmux {
    let command = format!(
        "env -u ASKUSER_URL -u ASKUSER_TOKEN TERM=xterm-256color {} tui --url {} --token {TOKEN} --data-dir {} {extra}",
        askuser(),
        b.url,
        b.dir.path().display()
    );
    Tmux::start(width, height, &command)
}

/// An agent's blocking ask; the canonical result comes back.
fn ask(b: &TestBridge, body: Value) -> tokio::task::JoinHandle<Value> {
    let asking = b.ask(body, "canonical");
    tokio::spawn(async move {
        let response = tokio::time::timeout(Duration::from_secs(30), asking).await.expect("answered within 30 s").unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    })
}

fn db(id: &str, agent: &str, session: &str) -> Value {
    json!({"id": id, "agent": {"name": agent, "sessionId": session}, "questions": [{
        "question": "Which database?", "header": "DB",
        "options": [{"label": "PostgreSQL", "description": "relational, for production"}, {"label": "SQLite", "description": "one file"}]
    }]})
}

async fn result(asking: tokio::task::JoinHandle<Value>) -> Value {
    asking.await.unwrap()
}

#[tokio::test]
async fn a_single_choice_is_picked_with_the_arrows_and_the_agent_gets_it() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    t.wait_for(&["No questions waiting."]).await;
    let asking = ask(&b, db("t-single", "claude-code", "s-1"));
    let screen = t.wait_for(&["claude-code asks", "Which database?", "› 1. ( ) PostgreSQL", "relational, for production"]).await;
    assert!(screen.contains("1 waiting"), "{screen}");
    t.keys(&["Down", "Enter"]);
    let r = result(asking).await;
    assert_eq!((r["status"].as_str(), r["answers"][0]["answer"].as_str()), (Some("answered"), Some("SQLite")), "{r}");
    t.wait_for(&["No questions waiting.", "Sent."]).await;
    // Ctrl+C leaves, and the terminal is as it was: cooked, echoing, off the alternate screen.
    t.keys(&["C-c"]);
    let screen = t.ended().await;
    assert!(screen.contains("exit=0") && restored(&screen), "the terminal is restored: {screen}");
    assert!(!screen.contains("askuser · connected"), "the alternate screen is gone: {screen}");
}

#[tokio::test]
async fn multi_select_tabs_and_the_review_send_every_answer() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let asking = ask(
        &b,
        json!({"id": "t-multi", "agent": {"name": "claude-code", "sessionId": "s-1"}, "questions": [
            {"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]},
            {"question": "Which features?", "header": "Features", "multiSelect": true,
             "options": [{"label": "Auth"}, {"label": "Search"}, {"label": "Billing"}]}
        ]}),
    );
    t.wait_for(&["DB", "Features", "Submit", "Which database?"]).await;
    t.keys(&["1"]); // picks PostgreSQL and moves on
    t.wait_for(&["Which features?", "[ ] Auth"]).await;
    t.keys(&["BTab"]);
    t.wait_for(&["Which database?", "(•) PostgreSQL"]).await;
    t.keys(&["Tab"]);
    t.wait_for(&["Which features?"]).await;
    t.keys(&["Space", "Down", "Down", "Space"]);
    t.wait_for(&["[x] Auth", "[ ] Search", "[x] Billing"]).await;
    t.keys(&["Enter"]);
    let review =
        t.wait_for(&["Review your answers", "DB: Which database? → PostgreSQL", "Features: Which features? → Auth, Billing"]).await;
    assert!(review.contains("Enter submits"), "{review}");
    t.keys(&["Enter"]);
    let r = result(asking).await;
    assert_eq!(r["answers"][0]["answer"], "PostgreSQL", "{r}");
    assert_eq!(r["answers"][1]["selectedOptions"], json!(["Auth", "Billing"]), "{r}");
}

#[tokio::test]
async fn other_is_typed_with_a_real_line_editor() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let asking = ask(&b, db("t-other", "claude-code", "s-1"));
    t.wait_for(&["Which database?"]).await;
    t.keys(&["End", "Space"]);
    t.wait_for(&["Your answer"]).await;
    t.type_text("use Dynamo DB");
    t.keys(&["C-w", "C-w"]); // deletes "DB", then "Dynamo "
    t.type_text("Cassandra");
    t.keys(&["Home", "Right", "Right", "Right", "Right", "C-k"]); // keeps "use "
    t.wait_until("the answer cut to \"use \"", |s| s.contains("│use ") && !s.contains("Cassandra")).await;
    t.paste("Fauna, or Cassandra");
    t.keys(&["End", "Left", "Left", "BSpace"]); // "Cassandra" -> "Cassanra"
    t.wait_for(&["use Fauna, or Cassanra"]).await;
    t.type_text("d");
    t.keys(&["Enter"]);
    let r = result(asking).await;
    assert_eq!(r["answers"][0]["custom"], "use Fauna, or Cassandra", "{r}");
    assert_eq!(r["answers"][0]["wasCustom"], true);
}

#[tokio::test]
async fn escape_asks_first_and_a_declined_question_tells_the_agent() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let mut two = db("t-esc", "claude-code", "s-1");
    two["questions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"question": "Which cache?", "header": "Cache", "options": [{"label": "Redis"}, {"label": "None"}]}));
    let asking = ask(&b, two);
    t.wait_for(&["Which database?"]).await;
    t.keys(&["1"]); // an answer given, so Esc asks before throwing it away
    t.wait_for(&["Which cache?"]).await;
    t.keys(&["Escape"]);
    let prompt = t.wait_for(&["[y/N]"]).await;
    assert!(prompt.contains("Which cache?"), "the question stays behind the prompt: {prompt}");
    t.keys(&["n"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!t.screen().contains("[y/N]"), "n keeps the question: {}", t.screen());
    assert!(!asking.is_finished(), "nothing was sent");
    t.keys(&["Escape"]);
    t.wait_for(&["[y/N]"]).await;
    t.keys(&["y"]);
    let r = result(asking).await;
    assert_eq!((r["status"].as_str(), r["answered"].as_bool()), (Some("cancelled"), Some(false)), "{r}");
    t.wait_for(&["Declined"]).await;
}

#[tokio::test]
async fn a_30_option_list_scrolls_and_says_how_many_more() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 80, 24, "");
    let options: Vec<Value> = (1..=30).map(|i| json!({"label": format!("Region {i:02}")})).collect();
    let asking = ask(&b, json!({"id": "t-30", "questions": [{"question": "Which region?", "options": options}]}));
    let screen = t.wait_for(&["Which region?", "Region 01", "more"]).await;
    assert!(!screen.contains("Region 30"), "not all 30 fit in 24 rows: {screen}");
    t.keys(&["End"]); // Other, below the last option
    t.keys(&["Up"]);
    let screen = t.wait_for(&["› 30. ( ) Region 30"]).await;
    assert!(screen.contains("↑ ") && !screen.contains("Region 01"), "scrolled: {screen}");
    for _ in 0..5 {
        t.keys(&["Up"]);
    }
    t.wait_for(&["› 25. ( ) Region 25"]).await;
    t.keys(&["Enter"]);
    assert_eq!(result(asking).await["answers"][0]["answer"], "Region 25");
}

#[tokio::test]
async fn two_agents_share_the_inbox_and_each_gets_its_own_answer() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 120, 30, "");
    let first = ask(&b, db("t-a", "claude-code", "s-a"));
    t.wait_for(&["claude-code asks"]).await;
    let mut sub = db("t-b", "explorer", "s-b");
    sub["agent"]["parentSessionId"] = json!("s-a");
    sub["questions"][0]["question"] = json!("Which cache?");
    sub["questions"][0]["options"] = json!([{"label": "Redis"}, {"label": "Memcached"}]);
    let second = ask(&b, sub);
    let screen = t.wait_for(&["Waiting 2", "↳ explorer", "Which cache?"]).await;
    assert!(screen.contains("claude-code ● connected"), "presence: {screen}");
    t.keys(&["]"]);
    t.wait_for(&["explorer asks", "Redis"]).await;
    t.keys(&["2"]);
    assert_eq!(result(second).await["answers"][0]["answer"], "Memcached");
    t.wait_for(&["claude-code asks", "1 waiting"]).await;
    t.keys(&["1"]);
    assert_eq!(result(first).await["answers"][0]["answer"], "PostgreSQL");
}

#[tokio::test]
async fn an_answer_given_elsewhere_closes_the_question_here_and_says_so() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let asking = ask(&b, db("t-elsewhere", "claude-code", "s-1"));
    t.wait_for(&["Which database?"]).await;
    t.keys(&["End", "Space"]);
    t.type_text("half typed");
    t.wait_for(&["half typed"]).await;
    let r = b.post("/v1/questions/t-elsewhere/answer").header("x-askuser-client", "cli").json(&json!({"answers": ["SQLite"]}));
    assert_eq!(r.send().await.unwrap().status(), 200);
    let screen = t.wait_for(&["was answered via cli", "What you had typed here: half typed"]).await;
    assert!(screen.contains("No questions waiting."), "{screen}");
    assert_eq!(result(asking).await["answers"][0]["answer"], "SQLite");
}

#[tokio::test]
async fn resizing_to_80_by_24_keeps_the_dialog_usable() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 140, 40, "");
    let mut q = db("t-resize", "claude-code", "s-1");
    q["questions"][0]["question"] = json!("Which database should the billing service use? 名前は？ 🦀");
    q["questions"][0]["options"][0]["preview"] = json!("CREATE TABLE invoices (\n  id bigint primary key\n);");
    let asking = ask(&b, q);
    let wide = t.wait_for(&["Waiting 1", "Preview: PostgreSQL", "CREATE TABLE invoices"]).await;
    assert!(wide.lines().any(|l| l.contains("Which database?") && l.contains("PostgreSQL")) || wide.contains("› 1."), "{wide}");
    t.resize(80, 24);
    let narrow = t.wait_for(&["Preview: PostgreSQL", "› 1. ( ) PostgreSQL"]).await;
    assert!(!narrow.contains("Waiting 1"), "no room for the inbox column at 80: {narrow}");
    assert!(narrow.contains("名前は？ 🦀"), "wide characters drawn whole: {narrow}");
    for line in narrow.lines() {
        assert!(ratatui::text::Line::raw(line).width() <= 80, "line wider than the terminal: {line:?}");
    }
    t.keys(&["Down", "Enter"]);
    assert_eq!(result(asking).await["answers"][0]["answer"], "SQLite");
}

#[tokio::test]
async fn an_answer_given_while_the_bridge_restarts_reaches_the_agent_once() {
    needs!(Tmux);
    let b = bridge().await;
    let (url, addr) = (b.url.clone(), b.url.trim_start_matches("http://").to_owned());
    let t = tui(&b, 100, 30, "");
    // The agent is `askuser ask`, which asks again with the same id when the bridge comes back.
    let agent = tokio::process::Command::new(askuser())
        .env_remove("ASKUSER_URL")
        .env_remove("ASKUSER_TOKEN")
        .args(["ask", "--id", "t-restart", "--question", "Deploy now?", "--option", "Yes", "--option", "No"])
        .args(["--url", &url, "--token", TOKEN])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    t.wait_for(&["Deploy now?"]).await;
    t.keys(&["Down"]);
    let dir = b.stop().await;
    t.wait_for(&["reconnecting"]).await;
    t.keys(&["Enter"]);
    t.wait_for(&["Saved: it will be sent when the connection is back"]).await;
    let b = bridge_at(dir, &addr).await;
    let out = tokio::time::timeout(Duration::from_secs(30), agent.wait_with_output()).await.expect("the agent gets an answer").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["answers"][0]["answer"], "No", "{v}");
    t.wait_for(&["connected", "No questions waiting."]).await;
    // Sent once: the store holds the one answer, and nothing is left to send.
    let stored: Value = b.get("/v1/questions/t-restart").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["result"]["answers"][0]["answer"], "No");
    // The screen shows the question gone once it is sent; the outbox file goes with the
    // bridge's acknowledgement, a moment later.
    let outbox = b.dir.path().join("tui-outbox.json");
    for _ in 0..100 {
        if !outbox.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!outbox.exists(), "the outbox is empty once acknowledged");
}

#[tokio::test]
async fn sigterm_and_no_color_leave_the_terminal_clean() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    t.wait_for(&["No questions waiting."]).await;
    assert!(sets_colour(&t.screen_with_escapes()), "colours by default");
    drop(t);
    let t = Tmux::start(
        100,
        30,
        &format!("NO_COLOR=1 {} tui --url {} --token {TOKEN} --data-dir {}", askuser(), b.url, b.dir.path().display()),
    );
    let asking = ask(&b, db("t-term", "claude-code", "s-1"));
    t.wait_for(&["Which database?"]).await;
    let escapes = t.screen_with_escapes();
    assert!(!sets_colour(&escapes), "NO_COLOR: no colours: {escapes:?}");
    // The shell in the pane runs askuser as its child.
    let shell = String::from_utf8_lossy(&t.run(&["display", "-p", "-t", "t", "#{pane_pid}"]).stdout).trim().to_owned();
    let pid = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
    let pid = String::from_utf8_lossy(&pid.stdout).lines().next().expect("the tui runs").to_owned();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let screen = t.ended().await;
    assert!(restored(&screen), "restored after SIGTERM: {screen}");
    // The question still waits for someone else.
    assert!(!asking.is_finished());
    let r = b.post("/v1/questions/t-term/answer").json(&json!({"answers": ["SQLite"]})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(result(asking).await["answers"][0]["answer"], "SQLite");
}

#[tokio::test]
async fn ask_here_shows_the_dialog_inline_and_the_first_answer_wins() {
    needs!(Tmux);
    let b = bridge().await;
    let here = |id: &str, out: &Path| {
        format!(
            "env -u ASKUSER_URL -u ASKUSER_TOKEN {} ask --here --id {id} --question 'Deploy now?' --option Yes --option No --url {} --token {TOKEN} > {}",
            askuser(),
            b.url,
            out.display()
        )
    };
    let out = b.dir.path().join("here.json");
    // Answered here: the dialog is inline, and the result goes to stdout.
    let t = Tmux::start(90, 30, &here("t-here", &out));
    t.wait_for(&["Deploy now?", "› 1. ( ) Yes"]).await;
    t.keys(&["2"]);
    let screen = t.ended().await;
    assert!(screen.contains("exit=0") && restored(&screen), "{screen}");
    assert!(
        !screen.contains("( ) Yes") && screen.contains("askuser: Deploy now? → No"),
        "the inline dialog gives way to the answer: {screen}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["answers"][0]["answer"], "No", "{v}");
    let stored: Value = b.get("/v1/questions/t-here").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["answeredBy"], "terminal: the admin token", "{stored}");
    drop(t);

    // Answered in the inbox first: the inline dialog goes away.
    let t = Tmux::start(90, 30, &here("t-there", &out));
    t.wait_for(&["Deploy now?"]).await;
    let r = b.post("/v1/questions/t-there/answer").header("x-askuser-client", "cli").json(&json!({"answers": ["Yes"]}));
    assert_eq!(r.send().await.unwrap().status(), 200);
    let screen = t.ended().await;
    assert!(screen.contains("askuser: answered in the inbox") && screen.contains("exit=0") && restored(&screen), "{screen}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["answers"][0]["answer"], "Yes", "{v}");
}

#[tokio::test]
async fn one_ctrl_c_quits_ask_here_and_the_question_still_waits() {
    needs!(Tmux);
    let b = bridge().await;
    let out = b.dir.path().join("here.json");
    let command = format!(
        "env -u ASKUSER_URL -u ASKUSER_TOKEN {} ask --here --id t-quit --question 'Deploy now?' --option Yes --option No --url {} --token {TOKEN} > {}",
        askuser(),
        b.url,
        out.display()
    );
    let t = Tmux::start(90, 30, &command);
    t.wait_for(&["Deploy now?", "Ctrl+C quit"]).await;
    t.keys(&["C-c"]);
    // One press, as the header says: ask ends (130, as for an interrupted command).
    let screen = t.ended().await;
    assert!(screen.contains("exit=130") && restored(&screen), "{screen}");
    assert!(screen.contains("askuser: not answered; it still waits in the inbox (`askuser result t-quit --wait`"), "{screen}");
    assert!(!screen.contains("( ) Yes"), "the dialog is gone: {screen}");
    let stored: Value = b.get("/v1/questions/t-quit").send().await.unwrap().json().await.unwrap();
    assert_eq!(stored["status"], "pending", "{stored}");
}

/// Whether every line of `screen` fits `width` columns (CJK and emoji count two).
fn fits(screen: &str, width: usize) -> bool {
    screen.lines().all(|l| ratatui::text::Line::raw(l).width() <= width)
}

#[tokio::test]
async fn long_questions_labels_and_descriptions_wrap_instead_of_being_cut() {
    needs!(Tmux);
    let b = bridge().await;
    for (width, height) in [(80, 24), (120, 40)] {
        let t = tui(&b, width, height, "");
        let question = "Which storage engine should the billing service use for invoices, payments and \
            refunds, given that we expect a few thousand writes a second at peak and need point in time recovery? QUESTIONEND";
        let label = "PostgreSQL with logical replication to a warm standby in the second region and nightly base backups LABELEND";
        let description = "relational, mature, with the best tooling of all of them; the team knows it well and \
            the hosting provider runs it for us DESCEND";
        let cjk = "データベースは請求サービスの全ての書き込みを受け付ける必要があります CJKEND";
        let id = format!("t-long-{width}");
        let asking = ask(
            &b,
            json!({"id": id, "agent": {"name": "claude-code", "sessionId": "s-1"}, "questions": [{
                "question": question, "header": "DB",
                "options": [{"label": label, "description": description}, {"label": cjk}, {"label": "SQLite"}]
            }]}),
        );
        let screen = t.wait_for(&["QUESTIONEND", "LABELEND", "DESCEND", "CJKEND", "SQLite"]).await;
        assert!(fits(&screen, width.into()), "every line fits {width} columns: {screen}");
        t.keys(&["3"]);
        assert_eq!(result(asking).await["answers"][0]["answer"], "SQLite");
    }
}

#[tokio::test]
async fn a_status_line_goes_with_its_question() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let first = ask(&b, db("t-status-1", "claude-code", "s-1"));
    t.wait_for(&["Which database?"]).await;
    let mut cache = db("t-status-2", "claude-code", "s-1");
    cache["questions"][0]["question"] = json!("Which cache?");
    let second = ask(&b, cache);
    t.wait_for(&["2 waiting"]).await;
    t.keys(&["1"]);
    assert_eq!(result(first).await["answers"][0]["answer"], "PostgreSQL");
    let screen = t.wait_for(&["Which cache?", "1 waiting"]).await;
    assert!(!screen.contains("Sent."), "what was said of the first question is not shown under the second: {screen}");
    t.keys(&["2"]);
    assert_eq!(result(second).await["answers"][0]["answer"], "SQLite");
    t.wait_for(&["No questions waiting.", "Sent."]).await;
}

#[tokio::test]
async fn the_key_hints_say_what_the_keys_do_now() {
    needs!(Tmux);
    let b = bridge().await;
    let t = tui(&b, 100, 30, "");
    let mut two = db("t-hints", "claude-code", "s-1");
    two["questions"].as_array_mut().unwrap().push(json!({"question": "Anything else?", "header": "More"}));
    let asking = ask(&b, two);
    // Choosing: n and c are keys, and Tab goes to the next question.
    let screen = t.wait_for(&["Which database?", "Enter select"]).await;
    assert!(screen.contains("n note") && screen.contains("c chat about this") && screen.contains("Tab next question"), "{screen}");
    // Typing: n and c are letters; the new line is Alt+Enter, said once.
    t.keys(&["Tab"]);
    let screen = t.wait_for(&["Anything else?", "Your answer"]).await;
    assert!(!screen.contains("n note") && !screen.contains("c chat"), "typing: n and c are letters: {screen}");
    assert!(screen.contains("Alt+Enter new line") && !screen.contains("Shift+Enter"), "one newline key: {screen}");
    assert!(!screen.contains("[ ] other question"), "[ and ] are letters here too: {screen}");
    // A yes/no prompt: n is No, and nothing else.
    t.keys(&["BTab", "1", "Escape"]);
    let screen = t.wait_for(&["[y/N]"]).await;
    assert!(screen.contains("n/Enter/Esc no") && !screen.contains("n note"), "{screen}");
    t.keys(&["y"]);
    assert_eq!(result(asking).await["status"], "cancelled");
}

/// The lines of `screen` from the one holding `from` to the shell's "exit=" line.
fn lines_between<'s>(screen: &'s str, from: &str) -> Vec<&'s str> {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines.iter().position(|l| l.contains(from)).unwrap_or_else(|| panic!("no {from:?}: {screen}"));
    let end = lines.iter().position(|l| l.contains("exit=")).unwrap_or_else(|| panic!("no exit: {screen}"));
    lines[start..=end].to_vec()
}

#[tokio::test]
async fn ask_here_leaves_the_answer_and_the_prompt_on_a_fresh_line() {
    needs!(Tmux);
    let b = bridge().await;
    let out = b.dir.path().join("here.json");
    let here = |id: &str| {
        format!(
            "printf 'before\\n'; env -u ASKUSER_URL -u ASKUSER_TOKEN {} ask --here --id {id} --question 'Deploy now?' --option Yes --option No --url {} --token {TOKEN} > {}",
            askuser(),
            b.url,
            out.display()
        )
    };
    for (width, height) in [(80, 24), (120, 40)] {
        // Answered here: the dialog gives way to one line saying what was answered.
        let t = Tmux::start(width, height, &here(&format!("t-clean-{width}")));
        t.wait_for(&["Deploy now?", "› 1. ( ) Yes"]).await;
        t.keys(&["2"]);
        let screen = t.ended().await;
        assert!(screen.contains("exit=0") && restored(&screen), "{screen}");
        let lines = lines_between(&screen, "before");
        assert!(lines[1].starts_with("askuser: Deploy now? → No"), "the answer right below what was there: {screen}");
        assert!(lines.iter().all(|l| !l.trim().is_empty()), "no blank lines left behind: {screen}");
        assert!(lines.last().unwrap().starts_with("exit=0"), "the next output starts a fresh line: {screen}");
        assert!(!screen.contains("( ) Yes"), "the dialog is gone: {screen}");
        assert!(!screen.contains("answered in the inbox"), "it was answered here: {screen}");
        drop(t);

        // Answered in the inbox: the dialog goes, and ask says so on the next line.
        let t = Tmux::start(width, height, &here(&format!("t-clean-there-{width}")));
        t.wait_for(&["Deploy now?"]).await;
        let r = b.post(&format!("/v1/questions/t-clean-there-{width}/answer")).json(&json!({"answers": ["Yes"]}));
        assert_eq!(r.send().await.unwrap().status(), 200);
        let screen = t.ended().await;
        let lines = lines_between(&screen, "before");
        assert_eq!(lines[1], "askuser: answered in the inbox", "{screen}");
        assert!(lines[2].starts_with("exit=0"), "{screen}");
    }
}
