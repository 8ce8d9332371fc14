use super::*;
use crate::notify::fixtures::{multi, record, single};
use crate::notify::{LinkedOption, Message};
use askuser_core::approval::Approval;
use askuser_core::{Limits, Request};

fn notice(record: QuestionRecord, links: &[&str]) -> Notice {
    let options =
        links.iter().enumerate().map(|(i, l)| LinkedOption { label: l.to_string(), link: format!("https://h/a/{i:032}") }).collect();
    let message = Message {
        id: record.id.clone(),
        agent: "claude-code".into(),
        header: None,
        question: String::new(),
        options,
        more: true,
        open: "https://h/#q=q-1".into(),
        reminder: None,
    };
    Notice { record, message, reminder: None }
}

fn approval(command: &str) -> QuestionRecord {
    let mut a = Approval::from_claude(&serde_json::json!({"tool_name": "Bash", "input": {"command": command}})).unwrap();
    a.cwd = Some("/srv/app".into());
    let mut r = record(vec![]);
    r.request = Request { agent: r.request.agent.clone(), ..a.request(&a.suggest(None), &Limits::default()).unwrap() };
    r
}

#[test]
fn a_mail_numbers_the_options_and_its_html_holds_agent_text_only_escaped() {
    let mut r = record(vec![single(&["Postgres", "<b>SQLite</b>", "MySQL"])]);
    r.request.questions[0].question = "Which one? <script>alert(1)</script> & <a href=\"https://evil.example\">here</a>".into();
    let m = mail(&notice(r, &["Postgres", "<b>SQLite</b>"]), "https://h/#q=q-1");
    assert_eq!(m.subject, format!("claude-code asks · DB · id {}", crate::notify::command::short_id("q-1")));
    assert!(m.text.contains("1. Postgres\n2. <b>SQLite</b>\n3. MySQL\n"), "{}", m.text);
    assert!(m.text.contains("Reply with an option's number (like 2)"), "{}", m.text);
    assert!(m.text.contains("<b>SQLite</b>: https://h/a/00000000000000000000000000000001"), "{}", m.text);
    assert!(m.text.contains("Open askuser: https://h/#q=q-1"), "{}", m.text);
    assert!(!m.html.contains("<script") && !m.html.contains("<b>") && !m.html.contains("href=\"https://evil"), "{}", m.html);
    assert!(m.html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;a href=&quot;https://evil.example&quot;&gt;"), "{}", m.html);
    // askuser's own links are the only anchors.
    let anchors: Vec<&str> = m.html.split("<a href=\"").skip(1).map(|a| a.split('"').next().unwrap()).collect();
    assert_eq!(
        anchors,
        ["https://h/a/00000000000000000000000000000000", "https://h/a/00000000000000000000000000000001", "https://h/#q=q-1"]
    );
}

#[test]
fn an_approval_mail_shows_the_command_whole_however_long() {
    let command = format!("rm -rf build && {}", "x".repeat(5_000));
    let m = mail(&notice(approval(&command), &["Deny"]), "https://h/#q=q-1");
    assert!(m.text.contains(&command), "whole in the text");
    assert!(m.html.contains(&format!("<pre style=\"white-space:pre-wrap\">{}</pre>", escape(&command))), "whole in <pre>");
    assert!(m.text.contains("Reply \"allow\" or \"deny\""), "{}", m.text);
}

#[test]
fn several_questions_are_each_shown_and_answered_in_askuser() {
    let r = record(vec![single(&["A", "B"]), multi(&["X", "Y"])]);
    let m = mail(&notice(r.clone(), &[]), "https://h/#q=q-1");
    assert!(m.text.contains("Question 1 of 2 · DB\nWhich database?\n1. A\n2. B\n"), "{}", m.text);
    assert!(m.text.contains("Question 2 of 2 · DB\nWhich features?\n1. X\n2. Y\n"), "{}", m.text);
    assert_eq!(replied(&r, "1", "https://h/#q=q-1").unwrap_err(), "This set has 2 questions: answer them in askuser: https://h/#q=q-1");
}

#[test]
fn a_reply_is_read_by_number_name_or_words() {
    let one = record(vec![single(&["Postgres", "SQLite", "MySQL"])]);
    let open = "https://h/#q=q-1";
    assert_eq!(replied(&one, "2", open).unwrap(), vec![Selection::option("SQLite")]);
    assert_eq!(replied(&one, " mysql ", open).unwrap(), vec![Selection::option("MySQL")]);
    assert_eq!(replied(&one, "Whatever runs", open).unwrap(), vec![Selection::custom("Whatever runs")]);
    assert!(replied(&one, "7", open).unwrap_err().contains("There is no option 7"));
    assert!(replied(&one, "1,3", open).unwrap_err().contains("takes one answer"));
    let many = record(vec![multi(&["Auth", "API", "UI"])]);
    assert_eq!(replied(&many, "1,3", open).unwrap()[0].selected, ["Auth", "UI"]);
    assert!(replied(&one, "", open).unwrap_err().contains("no words above the quoted mail"));
}

#[test]
fn an_approval_reply_allows_denies_or_denies_with_words_but_never_always() {
    let r = approval("rm -rf build");
    let open = "https://h/#q=q-1";
    assert_eq!(replied(&r, "Allow", open).unwrap(), vec![Selection::option(ALLOW)]);
    assert_eq!(replied(&r, "deny", open).unwrap(), vec![Selection::option(DENY)]);
    assert_eq!(replied(&r, "use make clean", open).unwrap(), vec![Selection::custom("use make clean")]);
    let always = r.request.questions[0].options.iter().find(|o| o.label != ALLOW && o.label != DENY).unwrap().label.clone();
    assert!(replied(&r, &always, open).unwrap_err().contains("Always allow is in askuser"));
}

const TOKEN: &str = "0123456789abcdef01234567";

fn raw(from: &str, to: &str, in_reply_to: &str, body: &str) -> Vec<u8> {
    format!(
        "From: Alice <{from}>\r\nTo: {to}\r\nSubject: Re: claude-code asks\r\nMessage-ID: <r1@alice.example>\r\n\
         In-Reply-To: {in_reply_to}\r\nReferences: <other@x> {in_reply_to}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}"
    )
    .into_bytes()
}

#[test]
fn a_reply_names_its_mail_by_the_token_in_both_its_address_and_in_reply_to() {
    let body = "2\r\n\r\nOn Sat, 28 Nov 2026 at 21:00, askuser <bridge@mail.test> wrote:\r\n> claude-code asks\r\n> 1. Postgres\r\n";
    let r = Reply::read(
        &raw("ALICE@Example.org", &format!("bridge+q-{TOKEN}@mail.test"), &format!("<askuser.{TOKEN}@mail.test>"), body),
        "bridge",
        "mail.test",
    )
    .unwrap();
    assert_eq!(r.from.as_deref(), Some("alice@example.org"));
    assert_eq!((r.token(), r.text.as_str(), r.automatic), (Some(TOKEN), "2", false));
    assert_eq!(r.message_id.as_deref(), Some("r1@alice.example"));
    // The token in the address alone, or in In-Reply-To alone, names no mail.
    let other = "fedcba9876543210fedcba98";
    let r = Reply::read(
        &raw("a@x", &format!("bridge+q-{TOKEN}@mail.test"), &format!("<askuser.{other}@mail.test>"), "2"),
        "bridge",
        "mail.test",
    )
    .unwrap();
    assert_eq!(r.token(), None);
    let r = Reply::read(&raw("a@x", "bridge@mail.test", &format!("<askuser.{TOKEN}@mail.test>"), "2"), "bridge", "mail.test").unwrap();
    assert_eq!(r.token(), None);
    // Another domain's plus address is not askuser's.
    let r = Reply::read(
        &raw("a@x", &format!("bridge+q-{TOKEN}@evil.test"), &format!("<askuser.{TOKEN}@mail.test>"), "2"),
        "bridge",
        "mail.test",
    )
    .unwrap();
    assert!(r.to_tokens.is_empty());
}

#[test]
fn an_automatic_reply_is_known_as_one() {
    let mut mail = raw("a@x", &format!("bridge+q-{TOKEN}@mail.test"), &format!("<askuser.{TOKEN}@mail.test>"), "I am away");
    mail.splice(0..0, b"Auto-Submitted: auto-replied\r\n".iter().copied());
    assert!(Reply::read(&mail, "bridge", "mail.test").unwrap().automatic);
}

#[test]
fn only_the_words_above_the_quote_and_signature_are_read() {
    assert_eq!(fresh("1,3\n\nOn Mon, 1 Jan 2026, askuser <b@x>\nwrote:\n> 1. A"), "1,3");
    assert_eq!(fresh("Postgres please\n> quoted"), "Postgres please");
    assert_eq!(fresh("deny\n-- \nAlice\nCEO"), "deny");
    assert_eq!(fresh("Use make clean\n\n-----Original Message-----\nFrom: askuser"), "Use make clean");
    assert_eq!(fresh("allow\n\nFrom: askuser <b@x>\nSent: Monday\nTo: a@x"), "allow");
    assert_eq!(fresh("two lines\nof words\n"), "two lines\nof words");
}

#[test]
fn a_reminder_says_so_in_its_subject_and_first_line() {
    let r = record(vec![single(&["Postgres", "SQLite"])]);
    let first = mail(&notice(r.clone(), &[]), "https://h/#q=q-1");
    let reminded = mail(&notice(r, &[]).reminder(r_created_plus_ten_minutes(), 0), "https://h/#q=q-1");
    assert!(reminded.subject.starts_with("Reminder: ") && reminded.subject.ends_with(&first.subject), "{}", reminded.subject);
    assert!(reminded.text.starts_with("Reminder: still waiting since "), "{}", reminded.text);
    assert!(reminded.text.ends_with(&first.text), "the same mail below the line");
}

/// Ten minutes after the fixtures' question was asked.
fn r_created_plus_ten_minutes() -> u64 {
    record(vec![]).created_at + 600_000
}
