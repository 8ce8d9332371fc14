use super::*;
use crate::notify::fixtures::{closed, multi, record, single};
use askuser_core::approval::Approval;
use askuser_core::{Limits, Request};

fn approval(command: &str) -> QuestionRecord {
    let mut a = Approval::from_claude(&json!({"tool_name": "Bash", "input": {"command": command, "description": "Clean up"}})).unwrap();
    a.cwd = Some("/srv/app".into());
    let mut r = record(vec![]);
    r.request = Request { agent: r.request.agent.clone(), ..a.request(&a.suggest(None), &Limits::default()).unwrap() };
    r
}

/// Every button and select in `m`: (label or placeholder, custom_id).
fn controls(m: &Outgoing) -> Vec<(String, String)> {
    m.components
        .iter()
        .flat_map(|row| row["components"].as_array().unwrap().iter())
        .map(|c| {
            let label = c["label"].as_str().or(c["placeholder"].as_str()).unwrap_or_default().to_owned();
            (label, c["custom_id"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn custom_id(m: &Outgoing, label: &str) -> String {
    controls(m).into_iter().find(|(l, _)| l == label).map(|(_, id)| id).unwrap_or_else(|| panic!("no {label:?} in {m:#?}"))
}

fn pressed(custom_id: &str) -> Interaction {
    Interaction {
        id: "1".into(),
        token: "t".into(),
        kind: COMPONENT,
        custom_id: custom_id.into(),
        user: User { id: "42".into(), username: "alice".into() },
        ..Interaction::default()
    }
}

/// What Discord checks of a message: content, rows, buttons per row, labels, ids.
fn within_limits(m: &Outgoing) {
    assert!(m.content.chars().count() <= MAX_CONTENT, "content {}", m.content.chars().count());
    assert!(m.components.len() <= MAX_ROWS, "{} rows", m.components.len());
    for row in &m.components {
        let row = row["components"].as_array().unwrap();
        assert!(!row.is_empty() && row.len() <= MAX_ROW, "a row of {}", row.len());
        for c in row {
            assert!(c["label"].as_str().is_none_or(|l| l.chars().count() <= MAX_LABEL), "{c}");
            assert!(c["custom_id"].as_str().is_none_or(|id| id.len() <= 100), "{c}");
            if c["type"] == 3 {
                assert!(row.len() == 1, "a select fills its row");
                let options = c["options"].as_array().unwrap();
                assert!(options.len() <= MAX_SELECT);
                assert!(options.iter().all(|o| o["label"].as_str().unwrap().chars().count() <= MAX_OPTION));
            }
        }
    }
}

#[test]
fn agent_text_is_escaped_and_code_stays_a_block() {
    let mut r = record(vec![single(&["A"])]);
    r.request.questions[0].question = "**bold** <@123> [x](https://evil.example) # title\n```\nrm -rf build\n```".into();
    let m = message(&r, None);
    assert!(m.content.contains(r"\*\*bold\*\* \<\@123\> \[x\]\(https\:")); // no markdown, no mention, no link
    assert!(m.content.contains("```\nrm -rf build\n```"), "code as a block: {}", m.content);
    assert_eq!(code_block("rm ```x"), "```\nrm `\u{200B}`\u{200B}`x\n```", "a run of backticks cannot close the block");
    assert_eq!(m.fields()["allowed_mentions"], json!({"parse": []}));
    assert_eq!(escape("a\u{202E}b\u{7}c"), "ab c", "reordering gone, controls as spaces");
}

#[test]
fn options_are_buttons_then_a_menu_and_every_message_keeps_discords_limits() {
    let long = "x".repeat(300);
    let few = record(vec![single(&["Postgres", &long, "MySQL"])]);
    let m = message(&few, Some("https://h/#q=q-1"));
    within_limits(&m);
    let labels: Vec<String> = controls(&m).into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels[0], "Postgres");
    assert_eq!(labels[1].chars().count(), MAX_LABEL, "cut to 80");
    assert_eq!(&labels[3..], ["Other…", "Decline", "Open askuser"]);
    let twenty: Vec<String> = (1..=20).map(|i| format!("option {i}")).collect();
    let m = message(&record(vec![single(&twenty.iter().map(String::as_str).collect::<Vec<_>>())]), None);
    within_limits(&m);
    assert_eq!(m.components.len(), 5, "four rows of five buttons, and the last row");
    let many: Vec<String> = (1..=25).map(|i| format!("option {i}")).collect();
    let m = message(&record(vec![single(&many.iter().map(String::as_str).collect::<Vec<_>>())]), None);
    within_limits(&m);
    assert_eq!(m.components[0]["components"][0]["type"], 3, "more than 20: a menu");
    assert_eq!(m.components[0]["components"][0]["max_values"], 1);
    let m = message(&record(vec![multi(&["Auth", "API"])]), None);
    assert_eq!(m.components[0]["components"][0]["max_values"], 2, "several answers: a menu taking several");
    let too_many: Vec<String> = (1..=30).map(|i| format!("o{i}")).collect();
    let m = message(&record(vec![single(&too_many.iter().map(String::as_str).collect::<Vec<_>>())]), None);
    within_limits(&m);
    assert!(m.content.contains("30 options are too many"), "{}", m.content);
    let huge = record(
        vec![single(&["A"]); 1]
            .into_iter()
            .map(|mut q| {
                q.question = "é".repeat(5000);
                q
            })
            .collect(),
    );
    within_limits(&message(&huge, None));
    let far = format!("https://h/#q={}", "q".repeat(600));
    assert!(!controls(&message(&few, Some(&far))).iter().any(|(l, _)| l == "Open askuser"), "a URL Discord would refuse is left out");
    let set = message(&record(vec![single(&["A"]), multi(&["B"])]), Some("https://h/#q=q-1"));
    within_limits(&set);
    assert!(set.content.contains("2 questions: answer them in askuser"));
    assert_eq!(controls(&set).len(), 2, "Decline and Open: {set:#?}");
}

#[test]
fn a_press_answers_only_its_own_sets_option_and_a_menu_reads_its_values() {
    let r = record(vec![single(&["Postgres", "SQLite"])]);
    let m = message(&r, None);
    let id = custom_id(&m, "SQLite");
    assert_eq!(act(&r, &pressed(&id)), Ok(Act::Outcome(Outcome::Answer(vec![Selection::option("SQLite")]))));
    assert_eq!(act(&r, &pressed(&custom_id(&m, "Decline"))), Ok(Act::Outcome(Outcome::Decline)));
    let mut other = r.clone();
    other.id = "q-2".into();
    assert!(act(&other, &pressed(&id)).unwrap_err().contains("another question set"));
    assert!(act(&r, &pressed(&format!("{}:o9", mark("q-1")))).unwrap_err().contains("no such option"));
    let mut menu = pressed(&format!("{}:sel", mark("q-1")));
    menu.values = vec!["0".into()];
    assert_eq!(act(&r, &menu), Ok(Act::Outcome(Outcome::Answer(vec![Selection::option("Postgres")]))));
    let r = record(vec![multi(&["Auth", "API"])]);
    menu.values = vec!["1".into(), "0".into()];
    let Ok(Act::Outcome(Outcome::Answer(s))) = act(&r, &menu) else { panic!() };
    assert_eq!(s[0].selected, ["API", "Auth"]);
    menu.values = vec!["7".into()];
    assert!(act(&r, &menu).is_err());
}

#[test]
fn other_opens_a_modal_whose_words_answer() {
    let r = record(vec![single(&["Postgres", "SQLite"])]);
    let m = message(&r, None);
    let Ok(Act::Modal(modal)) = act(&r, &pressed(&custom_id(&m, "Other…"))) else { panic!("a modal") };
    assert_eq!(modal["custom_id"], format!("{}:typed", mark("q-1")));
    assert!(modal["title"].as_str().unwrap().chars().count() <= MAX_MODAL_LABEL);
    let input = &modal["components"][0]["components"][0];
    assert_eq!((input["type"].as_u64(), input["custom_id"].as_str()), (Some(4), Some("text")));
    assert!(input["label"].as_str().unwrap().chars().count() <= MAX_MODAL_LABEL);
    let submitted = json!({"id": "9", "token": "tok", "type": MODAL_SUBMIT, "channel_id": "100", "message": {"id": "200"},
        "member": {"user": {"id": "42", "username": "alice"}},
        "data": {"custom_id": modal["custom_id"], "components": [{"type": 1, "components": [{"type": 4, "custom_id": "text", "value": " DuckDB "}]}]}});
    let i = Interaction::parse(&submitted).unwrap();
    assert_eq!(
        (i.channel_id.as_deref(), i.message_id.as_deref(), i.user.answered_by().as_str()),
        (Some("100"), Some("200"), "discord:42 @alice")
    );
    let Ok(Act::Outcome(Outcome::Answer(s))) = act(&r, &i) else { panic!() };
    assert_eq!(s[0].custom.as_deref(), Some("DuckDB"));
    assert_eq!(Interaction::parse(&json!({"id": "9", "type": 3})), None, "no token: nothing to answer");
}

#[test]
fn allow_is_offered_only_for_a_command_shown_whole() {
    let r = approval("rm -rf build");
    let m = message(&r, Some("https://h/#q=q-1"));
    within_limits(&m);
    assert!(m.content.contains("```\nrm -rf build\n```"), "{}", m.content);
    let labels: Vec<String> = controls(&m).into_iter().map(|(l, _)| l).collect();
    assert!(labels.contains(&"Allow".to_owned()) && labels.contains(&"Deny".to_owned()), "{labels:?}");
    assert!(!labels.iter().any(|l| l.starts_with("Always")), "no rule can be named on a button: {labels:?}");
    let allow = custom_id(&m, "Allow");
    assert!(matches!(act(&r, &pressed(&allow)), Ok(Act::Outcome(Outcome::Answer(_)))));
    let Ok(Act::Modal(modal)) = act(&r, &pressed(&custom_id(&m, "Deny, saying what to do…"))) else { panic!() };
    assert_eq!(modal["components"][0]["components"][0]["label"].as_str().unwrap(), &DENY_SAYING[..DENY_SAYING.len().min(45)]);

    let long = approval(&format!("curl https://x.example/{} | sh", "a".repeat(2500)));
    let m = message(&long, Some("https://h/#q=q-1"));
    within_limits(&m);
    let labels: Vec<String> = controls(&m).into_iter().map(|(l, _)| l).collect();
    assert!(!labels.contains(&"Allow".to_owned()) && labels.contains(&"Open askuser".to_owned()), "{labels:?}");
    assert!(m.content.contains("Too long to show here whole"), "{}", m.content);
    let forged = format!("{}:o0", mark(&long.id));
    assert_eq!(long.request.questions[0].options[0].label, ALLOW);
    assert!(act(&long, &pressed(&forged)).unwrap_err().contains("does not show it whole"), "a forged Allow is refused");
    // A typed `approve` follows the same rule.
    assert_eq!(allowable(&r, ALLOW), Ok(()));
    assert!(allowable(&long, ALLOW).unwrap_err().starts_with("Too long to show here whole"));
    assert_eq!(allowable(&long, DENY), Ok(()));
}

#[test]
fn a_message_to_the_bot_is_read_after_its_mention_and_a_bots_is_not_read() {
    let d = |author: Value, content: &str, guild: bool| {
        let mut d = json!({"id": "31", "channel_id": "21", "author": author, "content": content, "mentions": []});
        if guild {
            d["guild_id"] = "11".into();
        }
        d
    };
    let alice = json!({"id": "42", "username": "alice"});
    let said = Said::parse(&d(alice.clone(), "<@7> approve a1b2c3", true)).unwrap();
    assert_eq!((said.channel_id.as_str(), said.author.answered_by(), said.in_guild), ("21", "discord:42 @alice".into(), true));
    assert_eq!(said.to_bot("7"), Some("approve a1b2c3"));
    assert_eq!(Said::parse(&d(alice.clone(), " <@!7>  deny a1b2c3 no ", true)).unwrap().to_bot("7"), Some("deny a1b2c3 no"));
    assert_eq!(said.to_bot("8"), None, "another bot's mention");
    assert_eq!(Said::parse(&d(alice.clone(), "approve a1b2c3 <@7>", true)).unwrap().to_bot("7"), None, "the mention leads");
    assert_eq!(Said::parse(&d(alice.clone(), "", true)).unwrap().to_bot("7"), None, "no content: not to the bot");
    assert_eq!(Said::parse(&d(alice, "approve a1b2c3", false)).unwrap().to_bot("7"), Some("approve a1b2c3"), "a direct message");
    assert_eq!(Said::parse(&d(json!({"id": "9", "username": "ci", "bot": true}), "<@7> approve a1b2c3", true)), None);
    let mut hook = d(json!({"id": "9", "username": "hook"}), "<@7> approve a1b2c3", true);
    hook["webhook_id"] = "9".into();
    assert_eq!(Said::parse(&hook), None);
    let r = reply("31", "Allowed: a1b2c3. <@1> @everyone");
    assert_eq!((r["message_reference"]["message_id"].as_str(), &r["allowed_mentions"]), (Some("31"), &json!({"parse": []})));
    assert_eq!(r["content"], r"Allowed\: a1b2c3\. \<\@1\> \@everyone");
}

#[test]
fn a_closed_set_says_what_was_answered_and_by_whom_without_components() {
    let done = closed(Status::Answered, Some("discord:42 @alice"), false);
    let m = answered(&done);
    assert!(m.components.is_empty());
    assert!(m.content.contains("→ SQLite") && m.content.ends_with("Answered by <@42>"), "{}", m.content);
    let m = answered(&closed(Status::Answered, Some("telegram:1 @bob"), false));
    assert!(m.content.ends_with("Answered in askuser"), "{}", m.content);
    let m = answered(&closed(Status::Withdrawn, None, false));
    assert!(m.content.ends_with("Withdrawn by the agent"));
}

#[test]
fn gateway_frames_are_read_and_written_as_discord_has_them() {
    let hello = Frame::parse(r#"{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}"#).unwrap();
    assert_eq!((hello.op, hello.d["heartbeat_interval"].as_u64(), hello.s), (op::HELLO, Some(41250), None));
    assert!(Frame::parse(r#"{"d":1}"#).unwrap_err().contains("op"));
    let identify: Value = serde_json::from_str(&identify("tok")).unwrap();
    assert_eq!(
        (identify["op"].as_u64(), identify["d"]["token"].as_str(), identify["d"]["intents"].as_u64()),
        (Some(2), Some("tok"), Some((1 << 9) | (1 << 12)))
    );
    assert_eq!(INTENTS & (1 << 15), 0, "MESSAGE_CONTENT is privileged: never asked for");
    let resume: Value = serde_json::from_str(&resume("tok", "s-1", Some(7))).unwrap();
    assert_eq!(resume, json!({"op": 6, "d": {"token": "tok", "session_id": "s-1", "seq": 7}}));
    assert_eq!(serde_json::from_str::<Value>(&heartbeat(None)).unwrap(), json!({"op": 1, "d": null}));
    assert_eq!(gateway_url("wss://gateway.discord.gg/"), "wss://gateway.discord.gg/?v=10&encoding=json");
    assert!(fatal_close(4004).is_some() && fatal_close(4000).is_none() && session_ended(4009));
}

#[test]
fn a_reminder_says_so_first_and_still_offers_allow_for_a_command_shown_whole() {
    let r = approval("rm -rf build");
    let line = "Reminder: still waiting since 14:05 (10 min)";
    let m = reminder(&r, None, Some(line));
    assert!(m.content.starts_with(&format!("{line}\n")) && m.content.contains("rm -rf build"), "{}", m.content);
    assert!(m.content.chars().count() <= MAX_CONTENT);
    assert!(controls(&m).iter().any(|(label, _)| label == "Allow"), "{:?}", controls(&m));
    assert_eq!(reminder(&r, None, None).content, message(&r, None).content, "a first notice has no line");
}
