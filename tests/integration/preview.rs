//! An option's preview read as markdown, as Claude Code shows it (issue 29): in the page
//! (headings, bold, code, lists and tables as elements made of text nodes, raw HTML as
//! literal text) and in `askuser tui` (no `##` or `**`, a table's columns aligned).

use crate::support::{bridge, browser, TestBridge, TOKEN};
use crate::terminal::Tmux;
use serde_json::{json, Value};
use std::time::Duration;

/// A preview with a heading, bold, inline code, a fenced block, a list, a table, a
/// script tag that must stay text and a link that must not be one.
const PREVIEW: &str = "## Plan\n\n**bold** and `code`\n\n```rust\nfn main() {}\n```\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n\n> see [the docs](https://example.com/docs)";

fn question(id: &str) -> Value {
    json!({"id": id, "agent": {"name": "claude-code", "sessionId": "s-preview"}, "questions": [{
        "question": "Which plan?", "header": "Plan",
        "options": [{"label": "Fast", "description": "the quick one", "preview": PREVIEW}, {"label": "Slow"}]
    }]})
}

#[tokio::test]
async fn the_page_renders_a_markdown_preview_as_text_nodes() {
    needs!(Chromium, Axe);
    let b = bridge().await;
    let _asking = b.ask(question("p-web"), "canonical");
    let browser = browser(1280, 800).await;
    browser.goto(&format!("{}/#token={TOKEN}", b.url)).await.unwrap();
    browser.row("radio", "Fast").await;
    browser.wait_css(".askuser-preview").await;
    let found = browser
        .execute(
            "const box = document.querySelector('.askuser-preview');
             const texts = css => [...box.querySelectorAll(css)].map(e => e.textContent.trim());
             const heading = [...box.querySelectorAll('h1, h2, h3, h4, h5, h6, .askuser-md-h')]
                 .find(e => e.textContent.trim() === 'Plan');
             return {
                 heading: heading ? Number(getComputedStyle(heading).fontWeight) : 0,
                 strong: texts('strong, b'),
                 code: texts('code'),
                 blocks: texts('pre, .askuser-md-code'),
                 items: texts('li'),
                 cells: texts('td'),
                 heads: texts('th'),
                 scripts: box.querySelectorAll('script').length,
                 links: box.querySelectorAll('a').length,
                 text: box.textContent,
                 role: box.getAttribute('role'), label: box.getAttribute('aria-label'), tabindex: box.getAttribute('tabindex'),
             };",
            vec![],
        )
        .await
        .unwrap();
    browser.shot("markdown-preview").await;
    let audit = crate::browser::axe(&browser).await;
    browser.close().await;
    assert!(audit.is_empty(), "axe-core found:\n{}", audit.join("\n"));
    let has = |key: &str, want: &str| found[key].as_array().unwrap().iter().any(|v| v.as_str().is_some_and(|s| s.contains(want)));
    assert!(found["heading"].as_f64().unwrap() >= 600.0, "a bold heading \"Plan\": {found}");
    assert!(has("strong", "bold"), "**bold** is a bold element: {found}");
    assert!(has("code", "code"), "`code` is a code element: {found}");
    assert!(has("blocks", "fn main() {}"), "the fence is a code block: {found}");
    assert_eq!(found["items"], json!(["one", "two"]), "{found}");
    assert!(has("heads", "a") && has("heads", "b") && has("cells", "2"), "the table is a table: {found}");
    let text = found["text"].as_str().unwrap();
    assert!(text.contains("<script>alert(1)</script>"), "raw HTML is literal text: {found}");
    assert!(!text.contains("**") && !text.contains("```") && !text.contains("## "), "no markdown syntax left: {found}");
    assert_eq!(found["scripts"], 0, "no script element made from the preview: {found}");
    assert!(text.contains("the docs (https://example.com/docs)") && found["links"] == 0, "a link is text, not followed: {found}");
    assert_eq!((found["role"].as_str(), found["tabindex"].as_str()), (Some("region"), Some("0")), "{found}");
    assert_eq!(found["label"], "Preview of Fast", "{found}");
}

/// `askuser tui` against `b`, as a shell command line.
fn tui(b: &TestBridge) -> String {
    format!(
        "env -u ASKUSER_URL -u ASKUSER_TOKEN TERM=xterm-256color {} tui --url {} --token {TOKEN} --data-dir {}",
        env!("CARGO_BIN_EXE_askuser"),
        b.url,
        b.dir.path().display()
    )
}

/// The display column where `needle` starts in `line`, if it is there.
fn column(line: &str, needle: &str) -> Option<usize> {
    line.find(needle).map(|at| ratatui::text::Line::raw(&line[..at]).width())
}

#[tokio::test]
async fn the_terminal_renders_a_markdown_preview_with_aligned_table_columns() {
    needs!(Tmux);
    let b = bridge().await;
    let t = Tmux::start(160, 40, &tui(&b));
    t.wait_for(&["No questions waiting."]).await;
    let asking = b.ask(question("p-tui"), "canonical");
    let screen = t.wait_for(&["Preview: Fast", "Plan", "bold", "fn main() {}", "one", "two"]).await;
    assert!(
        !screen.contains("## Plan") && !screen.contains("**bold**") && !screen.contains("```"),
        "markdown is drawn, not shown: {screen}"
    );
    assert!(screen.contains("<script>alert(1)</script>"), "raw HTML stays text: {screen}");
    assert!(screen.contains("│ see the docs (https://example.com/docs)"), "a quote, and a link as text: {screen}");
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains(" 1 ") && l.contains(" 2 ")).unwrap_or_else(|| panic!("the table's row: {screen}"));
    let above = lines[..at].iter().rev().find(|l| l.contains(" a ") && l.contains(" b "));
    let (head, row) = (above.unwrap_or_else(|| panic!("the table's head: {screen}")), lines[at]);
    assert_eq!(column(head, " a "), column(row, " 1 "), "the first column lines up:\n{head}\n{row}");
    assert_eq!(column(head, " b "), column(row, " 2 "), "the second column lines up:\n{head}\n{row}");
    t.keys(&["Enter"]);
    let r = tokio::time::timeout(Duration::from_secs(30), asking).await.expect("answered").unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["answers"][0]["answer"], "Fast");
}

#[tokio::test]
async fn at_120_by_40_the_terminal_shows_the_preview_beside_the_options_and_the_inbox() {
    needs!(Tmux);
    let b = bridge().await;
    let t = Tmux::start(120, 40, &tui(&b));
    t.wait_for(&["No questions waiting."]).await;
    let asking = b.ask(question("p-wide"), "canonical");
    t.wait_for(&["Preview: Fast"]).await;
    let other =
        json!({"id": "p-other", "agent": {"name": "claude-code", "sessionId": "s-preview"}, "questions": [{"question": "Another one?"}]});
    let _other = b.ask(other, "canonical");
    let screen = t.wait_for(&["Waiting 2", "Another one?", "Preview: Fast", "bold"]).await;
    // Beside the options, not below them: the pane starts above the first option, and
    // its text is to the right of the options' rows.
    let lines: Vec<&str> = screen.lines().collect();
    let row = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {screen}"));
    assert!(row("Preview: Fast") < row("( ) Fast") && row("bold") <= row("( ) Slow"), "{screen}");
    assert!(column(lines[row("bold")], "bold") > column(lines[row("( ) Fast")], "Fast"), "{screen}");
    t.keys(&["Enter"]);
    let r = tokio::time::timeout(Duration::from_secs(30), asking).await.expect("answered").unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["answers"][0]["answer"], "Fast");
}
