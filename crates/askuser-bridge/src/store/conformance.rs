//! What every store must do, checked against each: SQLite (in memory), and PostgreSQL
//! when `ASKUSER_TEST_POSTGRES` names a server (scripts/with-postgres makes one; each
//! test gets a database of its own). A backend's own concerns (SQLite's files, damage
//! and locking; PostgreSQL's sharing, in tests/integration/shared.rs) are tested beside it.

use super::*;
use askuser_core::{resolve, Agent, Choice, Question, Request, Selection, Status};
use std::sync::Arc;

/// The stores to check: SQLite in memory, and a fresh PostgreSQL database when there
/// is a server to make one on.
async fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> = vec![("sqlite", Arc::new(Sqlite::open_in_memory().unwrap()))];
    if let Ok(admin) = std::env::var("ASKUSER_TEST_POSTGRES") {
        let name = format!("conformance_{}", crate::files::random_hex(6));
        let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.expect("the test server is up");
        tokio::spawn(connection);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("a database of its own");
        let url = admin.replacen("/postgres?", &format!("/{name}?"), 1);
        assert_ne!(url, admin, "ASKUSER_TEST_POSTGRES names the postgres database: {admin}");
        stores.push(("postgres", Postgres::connect(&url).await.expect("the new database")));
    }
    stores
}

pub(crate) fn request(id: &str, question: &str) -> Request {
    Request {
        id: Some(id.into()),
        questions: vec![Question {
            question: question.into(),
            header: Some("DB".into()),
            options: vec![
                Choice { label: "PostgreSQL".into(), description: Some("Relational".into()), preview: None },
                Choice::new("SQLite"),
            ],
            multi_select: false,
        }],
        metadata: Some(serde_json::json!({"ticket": 42, "tags": ["a", "b"]}).as_object().unwrap().clone()),
        agent: Some(Agent { name: "claude-code".into(), session_id: Some("s-1".into()), ..Default::default() }),
        timeout_seconds: Some(60),
        ..Request::default()
    }
}
pub(crate) fn pending(id: &str, created_at: u64) -> QuestionRecord {
    QuestionRecord {
        id: id.into(),
        request: request(id, "Which database?"),
        status: Status::Pending,
        created_at,
        answered_at: None,
        result: None,
        answered_by: None,
    }
}
pub(crate) fn answer(id: &str, label: &str, at: u64) -> AskResult {
    let r = request(id, "Which database?");
    AskResult::answered(id, &r, resolve(&r.questions, &[Selection::option(label)]).unwrap(), at)
}
pub(crate) fn cancel(id: &str, at: u64) -> AskResult {
    AskResult::unanswered(id, &request(id, "Which database?"), Status::Cancelled, at)
}
pub(crate) fn ids(records: &[QuestionRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}
pub(crate) fn done(f: Finished) -> QuestionRecord {
    match f {
        Finished::Done(r) => r,
        Finished::AlreadyFinal(r) => panic!("expected Done, got AlreadyFinal({r:?})"),
    }
}
pub(crate) fn rule(id: &str, at: u64) -> StoredRule {
    StoredRule {
        id: id.into(),
        rule: format!("{{\"tool\": \"Bash\", \"prefix\": \"cargo {id}\"}}"),
        created_at: at,
        created_by: Some("c-phone".into()),
    }
}
pub(crate) fn decision(summary: &str, at: u64) -> StoredDecision {
    StoredDecision {
        question: Some(format!("q-{summary}")),
        tool: "Bash".into(),
        summary: summary.into(),
        decision: "allow".into(),
        rule: None,
        by: Some("c-phone".into()),
        agent: Some("claude-code (s-1)".into()),
        at,
    }
}
pub(crate) fn summaries(decisions: &[StoredDecision]) -> Vec<&str> {
    decisions.iter().map(|d| d.summary.as_str()).collect()
}

#[tokio::test]
async fn an_answer_link_is_used_once_and_not_after_it_expires() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let link = |hash: &str, expires_at| StoredLink {
            hash: hash.into(),
            question_id: "q1".into(),
            option: 1,
            channel: "webhook".into(),
            credential: None,
            expires_at,
        };
        store.add_links(&[link("a", 1_000), link("b", 1_000)]).await.unwrap();
        assert_eq!(store.use_link("a", 999).await.unwrap(), LinkUse::Fresh(link("a", 1_000)));
        assert_eq!(store.use_link("a", 999).await.unwrap(), LinkUse::Used, "once");
        assert_eq!(store.link("a").await.unwrap(), Some((link("a", 1_000), true)));
        assert_eq!(store.use_link("b", 1_000).await.unwrap(), LinkUse::Expired);
        assert_eq!(store.link("b").await.unwrap(), Some((link("b", 1_000), false)), "an expired link is not marked used");
        assert_eq!(store.use_link("zz", 1).await.unwrap(), LinkUse::Unknown);
    }
}

/// F8: the condition is in the write itself, so another credential's subscription of
/// an endpoint one holds (two first subscriptions racing past the handler's check) is
/// not taken and changes nothing, while its maker's again replaces keys and rules.
#[tokio::test]
async fn a_push_endpoint_is_replaced_only_by_the_credential_that_made_it() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let sub = |endpoint: &str, credential: Option<&str>, key: &str, at| StoredSubscription {
            endpoint: endpoint.into(),
            credential: credential.map(str::to_owned),
            p256dh: format!("p256dh-{key}"),
            auth: format!("auth-{key}"),
            rules: format!("{{\"agents\": [\"{key}\"]}}"),
            created_at: at,
        };
        let (phone, admins) = ("https://push.example/phone", "https://push.example/admins");
        assert!(store.add_subscription(&sub(phone, Some("device-a"), "a1", 1)).await.unwrap(), "a new endpoint is taken");
        assert!(!store.add_subscription(&sub(phone, Some("device-b"), "b1", 2)).await.unwrap(), "another credential's is not taken");
        assert!(!store.add_subscription(&sub(phone, None, "admin", 3)).await.unwrap(), "nor the admin token's");
        assert_eq!(store.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a1", 1)], "the first is kept as it was");
        assert!(store.add_subscription(&sub(phone, Some("device-a"), "a2", 4)).await.unwrap(), "its maker's again is taken");
        assert_eq!(store.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a2", 4)], "with its new keys and rules");
        // One the admin token made (no credential) is the admin token's alike.
        assert!(store.add_subscription(&sub(admins, None, "x1", 5)).await.unwrap());
        assert!(!store.add_subscription(&sub(admins, Some("device-a"), "a3", 6)).await.unwrap(), "a device's is not taken");
        assert!(store.add_subscription(&sub(admins, None, "x2", 7)).await.unwrap(), "the admin token's again is taken");
        assert_eq!(store.subscriptions().await.unwrap(), [sub(phone, Some("device-a"), "a2", 4), sub(admins, None, "x2", 7)]);
    }
}

#[tokio::test]
async fn insert_get_round_trip() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let rec = pending("q-1", 1_000);
        assert_eq!(store.insert(&rec).await.unwrap(), Inserted::New);
        assert_eq!(store.get("q-1").await.unwrap(), Some(rec));
        assert_eq!(store.get("q-2").await.unwrap(), None);
        assert_eq!(store.counts().await.unwrap(), (1, 0));
    }
}

#[tokio::test]
async fn resume_with_same_questions_returns_the_stored_record() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let rec = pending("q-1", 1_000);
        store.insert(&rec).await.unwrap();
        // A resume may come later, with other metadata: only the questions must match.
        let mut again = pending("q-1", 5_000);
        again.request.metadata = None;
        assert_eq!(store.insert(&again).await.unwrap(), Inserted::Existing(rec.clone()));
        // A resume after the answer sees the final record.
        let first = done(store.finish("q-1", &answer("q-1", "SQLite", 2_000), Some("c-1")).await.unwrap());
        assert_eq!(store.insert(&again).await.unwrap(), Inserted::Existing(first));
        assert_eq!(store.counts().await.unwrap(), (0, 1));
    }
}

#[tokio::test]
async fn history_pages_newest_final_first_and_searches() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        for (i, q) in ["Which database?", "Which cache?", "Which 100%_db?"].iter().enumerate() {
            let id = format!("q-{i}");
            let mut rec = pending(&id, 1_000 + i as u64);
            rec.request = request(&id, q);
            store.insert(&rec).await.unwrap();
        }
        store.insert(&pending("still-pending", 5_000)).await.unwrap();
        for (id, at) in [("q-1", 3_000), ("q-0", 4_000), ("q-2", 6_000)] {
            store.finish(id, &answer(id, "SQLite", at), None).await.unwrap();
        }
        let ids = |r: Vec<QuestionRecord>| r.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(store.history(None, 0, 10).await.unwrap()), ["q-2", "q-0", "q-1"], "finished last comes first; pending never");
        assert_eq!(ids(store.history(None, 1, 1).await.unwrap()), ["q-0"]);
        assert_eq!(ids(store.history(Some("CACHE"), 0, 10).await.unwrap()), ["q-1"], "ignoring case");
        assert_eq!(ids(store.history(Some("100%_"), 0, 10).await.unwrap()), ["q-2"], "% and _ are literal");
        assert_eq!(ids(store.history(Some("%"), 0, 10).await.unwrap()), ["q-2"]);
    }
}

#[tokio::test]
async fn pending_pages_are_bounded_by_count_and_bytes() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        for i in 0..5 {
            store.insert(&pending(&format!("q-{i}"), 1_000 + i)).await.unwrap();
        }
        store.finish("q-1", &answer("q-1", "SQLite", 2_000), None).await.unwrap();
        let ids = |r: &[QuestionRecord]| r.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        let (page, last, more) = store.pending_page(0, 2, usize::MAX).await.unwrap();
        assert_eq!((ids(&page), more), (vec!["q-0".to_owned(), "q-2".to_owned()], true), "answered ones are skipped");
        let (page, _, more) = store.pending_page(last, 2, usize::MAX).await.unwrap();
        assert_eq!((ids(&page), more), (vec!["q-3".to_owned(), "q-4".to_owned()], false));
        let (page, last, more) = store.pending_page(0, 100, 1).await.unwrap();
        assert_eq!((ids(&page), more), (vec!["q-0".to_owned()], true), "one per page when each passes the byte budget");
        let (page, _, _) = store.pending_page(last, 100, 1).await.unwrap();
        assert_eq!(ids(&page), ["q-2"]);
        assert_eq!(store.pending_page(i64::MAX, 10, 10).await.unwrap(), (vec![], i64::MAX, false));
    }
}

#[tokio::test]
async fn conflict_leaves_the_stored_question_unchanged() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let rec = pending("q-1", 1_000);
        store.insert(&rec).await.unwrap();
        let mut other = pending("q-1", 2_000);
        other.request = request("q-1", "Which language?");
        let err = store.insert(&other).await.unwrap_err();
        assert!(matches!(&err, StoreError::Conflict { id } if id == "q-1"), "{err:?}");
        assert!(err.to_string().contains("\"q-1\""), "{err}");
        assert_eq!(store.get("q-1").await.unwrap(), Some(rec));
        assert_eq!(store.counts().await.unwrap(), (1, 0));
    }
}

#[tokio::test]
async fn first_finish_wins() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        store.insert(&pending("q-1", 1_000)).await.unwrap();
        let first = answer("q-1", "SQLite", 2_000);
        let rec = done(store.finish("q-1", &first, Some("c-1")).await.unwrap());
        assert_eq!(rec.status, Status::Answered);
        assert_eq!(rec.answered_at, Some(2_000));
        assert_eq!(rec.answered_by.as_deref(), Some("c-1"));
        assert_eq!(rec.result.as_ref(), Some(&first));
        assert_eq!(rec.created_at, 1_000);
        assert_eq!(store.get("q-1").await.unwrap(), Some(rec.clone()));

        for second in [answer("q-1", "PostgreSQL", 3_000), cancel("q-1", 3_000)] {
            match store.finish("q-1", &second, Some("c-2")).await.unwrap() {
                Finished::AlreadyFinal(now) => assert_eq!(now, rec),
                other => panic!("expected AlreadyFinal, got {other:?}"),
            }
        }
        assert_eq!(store.get("q-1").await.unwrap(), Some(rec));
    }
}

#[tokio::test]
async fn finish_without_a_client_and_with_every_final_status() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        for (i, status) in [Status::Cancelled, Status::TimedOut, Status::Withdrawn].into_iter().enumerate() {
            let id = format!("q-{i}");
            store.insert(&pending(&id, 1_000)).await.unwrap();
            let result = AskResult::unanswered(&id, &request(&id, "Which database?"), status, 2_000);
            let rec = done(store.finish(&id, &result, None).await.unwrap());
            assert_eq!((rec.status, rec.answered_by, rec.result), (status, None, Some(result)));
        }
    }
}

#[tokio::test]
async fn finish_refuses_a_pending_result() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        store.insert(&pending("q-1", 1_000)).await.unwrap();
        let mut result = cancel("q-1", 2_000);
        result.status = Status::Pending;
        assert!(matches!(store.finish("q-1", &result, None).await, Err(StoreError::Db { .. })));
        assert_eq!(store.get("q-1").await.unwrap().unwrap().status, Status::Pending);
    }
}

#[tokio::test]
async fn finish_unknown_id_is_not_found() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        let err = store.finish("nope", &cancel("nope", 1), None).await.unwrap_err();
        assert!(matches!(&err, StoreError::NotFound { id } if id == "nope"), "{err:?}");
        assert_eq!(err.to_string(), "no question with id \"nope\"");
    }
}

#[tokio::test]
async fn list_orders_each_filter_and_respects_limit() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        // Created in this order; created_at deliberately disagrees with insertion order.
        for (i, id) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
            store.insert(&pending(id, 10_000 - i as u64)).await.unwrap();
        }
        // Finished in the order d, b; answered_at deliberately disagrees with finish order.
        store.finish("d", &answer("d", "SQLite", 9_000), None).await.unwrap();
        store.finish("b", &cancel("b", 5_000), None).await.unwrap();

        assert_eq!(ids(&store.list(Filter::Pending, 100).await.unwrap()), ["a", "c", "e"]);
        assert_eq!(ids(&store.list(Filter::Final, 100).await.unwrap()), ["b", "d"]);
        assert_eq!(ids(&store.list(Filter::All, 100).await.unwrap()), ["e", "d", "c", "b", "a"]);

        assert_eq!(ids(&store.list(Filter::Pending, 2).await.unwrap()), ["a", "c"]);
        assert_eq!(ids(&store.list(Filter::Final, 1).await.unwrap()), ["b"]);
        assert_eq!(ids(&store.list(Filter::All, 3).await.unwrap()), ["e", "d", "c"]);
        assert!(store.list(Filter::All, 0).await.unwrap().is_empty());
        assert_eq!(store.list(Filter::All, usize::MAX).await.unwrap().len(), 5);

        // Records come back whole.
        assert_eq!(store.list(Filter::Pending, 1).await.unwrap()[0], pending("a", 10_000));
        assert_eq!(store.list(Filter::Final, 1).await.unwrap()[0], store.get("b").await.unwrap().unwrap());
        assert_eq!(store.counts().await.unwrap(), (3, 2));
    }
}

#[tokio::test]
async fn prune_removes_only_old_final_questions() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        for id in ["old", "new", "waiting", "boundary"] {
            store.insert(&pending(id, 0)).await.unwrap();
        }
        store.finish("old", &answer("old", "SQLite", 1_000), None).await.unwrap();
        store.finish("boundary", &cancel("boundary", 5_000), None).await.unwrap();
        store.finish("new", &cancel("new", 9_000), None).await.unwrap();

        assert_eq!(store.prune(5_000).await.unwrap(), 1); // strictly before the cutoff
        assert_eq!(store.get("old").await.unwrap(), None);
        assert!(store.get("boundary").await.unwrap().is_some());
        assert_eq!(store.prune(u64::MAX).await.unwrap(), 2);
        assert_eq!(ids(&store.list(Filter::All, 10).await.unwrap()), ["waiting"]);
        assert_eq!(store.counts().await.unwrap(), (1, 0));
        assert_eq!(store.prune(u64::MAX).await.unwrap(), 0);

        // A pruned id is free again, and insertion order keeps growing.
        store.insert(&pending("old", 20_000)).await.unwrap();
        assert_eq!(ids(&store.list(Filter::Pending, 10).await.unwrap()), ["waiting", "old"]);
    }
}

#[tokio::test]
async fn approval_rules_are_listed_oldest_first_and_removed_once() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        assert_eq!(store.rules().await.unwrap(), []);
        let by_rule = StoredRule { created_by: None, ..rule("r-00000000000c", 3_000) };
        for r in [rule("r-00000000000b", 2_000), by_rule.clone(), rule("r-00000000000a", 1_000)] {
            store.add_rule(&r).await.unwrap();
        }
        assert!(matches!(store.add_rule(&rule("r-00000000000a", 9_000)).await, Err(StoreError::Db { .. })), "an id is kept once");
        assert_eq!(store.rules().await.unwrap(), [rule("r-00000000000a", 1_000), rule("r-00000000000b", 2_000), by_rule.clone()]);
        assert!(store.remove_rule("r-00000000000b").await.unwrap());
        assert!(!store.remove_rule("r-00000000000b").await.unwrap(), "already gone");
        assert!(!store.remove_rule("r-ffffffffffff").await.unwrap(), "never there");
        assert_eq!(store.rules().await.unwrap(), [rule("r-00000000000a", 1_000), by_rule]);
        assert_eq!(store.health().await, Ok(()));
    }
}

#[tokio::test]
async fn approval_decisions_come_newest_first_up_to_the_limit() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        assert_eq!(store.decisions(10).await.unwrap(), []);
        // A rule's decision: no question, no person, the rule named.
        let by_rule = StoredDecision { question: None, rule: Some("r-00000000000a".into()), by: None, ..decision("ruled", 2_000) };
        for d in [decision("first", 1_000), decision("tie-1", 3_000), by_rule.clone(), decision("tie-2", 3_000), decision("early", 500)] {
            store.add_decision(&d).await.unwrap();
        }
        let all = store.decisions(10).await.unwrap();
        assert_eq!(summaries(&all), ["tie-2", "tie-1", "ruled", "first", "early"], "ties: the later added first");
        assert_eq!(all[2], by_rule, "kept whole");
        assert_eq!(summaries(&store.decisions(2).await.unwrap()), ["tie-2", "tie-1"]);
        assert_eq!(store.decisions(0).await.unwrap(), []);
        assert_eq!(store.decisions(usize::MAX).await.unwrap().len(), 5);
    }
}

#[tokio::test]
async fn prune_drops_old_approval_decisions_and_keeps_rules() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let store = &*store;
        store.add_rule(&rule("r-00000000000a", 1)).await.unwrap();
        for (summary, at) in [("old", 1_000), ("boundary", 5_000), ("new", 9_000)] {
            store.add_decision(&decision(summary, at)).await.unwrap();
        }
        assert_eq!(store.prune(5_000).await.unwrap(), 0, "the count is of questions");
        assert_eq!(summaries(&store.decisions(10).await.unwrap()), ["new", "boundary"], "strictly before the cutoff");
        store.prune(u64::MAX).await.unwrap();
        assert_eq!(store.decisions(10).await.unwrap(), []);
        assert_eq!(store.rules().await.unwrap(), [rule("r-00000000000a", 1)], "rules are never pruned");
    }
}

#[tokio::test]
async fn a_notification_keeps_its_message_and_finds_its_question() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        store.insert(&pending("q-1", 1)).await.unwrap();
        // The claim's row first (bridges sharing a store), then the message it became.
        store.add_notified("q-1", "slack:C1", 2, None).await.unwrap();
        store.add_notified("q-1", "slack:C1", 3, Some("1700000000.000001")).await.unwrap();
        store.add_notified("q-1", "webhook", 3, None).await.unwrap();
        let mut sent = store.notified().await.unwrap();
        sent.sort_by(|a, b| a.target.cmp(&b.target));
        let slack = Notified { id: "q-1".into(), target: "slack:C1".into(), waits: true, message: Some("1700000000.000001".into()) };
        let webhook = Notified { id: "q-1".into(), target: "webhook".into(), waits: true, message: None };
        assert_eq!(sent, [slack, webhook]);
        assert_eq!(store.notified_by_message("slack:C1", "1700000000.000001").await.unwrap().as_deref(), Some("q-1"));
        assert_eq!(store.notified_by_message("slack:C2", "1700000000.000001").await.unwrap(), None, "another channel's");
        assert_eq!(store.posted("q-1").await.unwrap(), [("slack:C1".to_owned(), "1700000000.000001".to_owned())], "messages only");
        assert_eq!(store.posted("q-2").await.unwrap(), []);
        store.finish("q-1", &cancel("q-1", 4), None).await.unwrap();
        assert!(store.notified().await.unwrap().iter().all(|n| !n.waits), "no longer waiting");
        store.forget_notified("q-1").await.unwrap();
        assert_eq!(store.notified().await.unwrap(), []);
        assert_eq!(store.notified_by_message("slack:C1", "1700000000.000001").await.unwrap(), None);
    }
}

/// When each person last wrote (WhatsApp's 24-hour window): kept per place, a later time
/// never replaced by an earlier one (two bridges hearing out of order), and kept after a
/// question's notifications are forgotten.
#[tokio::test]
async fn when_a_person_last_wrote_is_kept_the_latest_first() {
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let place = "whatsapp:15551234567";
        assert_eq!(store.heard(place).await.unwrap(), None, "never wrote");
        store.add_heard(place, 5_000).await.unwrap();
        store.add_heard(place, 4_000).await.unwrap();
        assert_eq!(store.heard(place).await.unwrap(), Some(5_000), "an earlier time does not replace a later one");
        store.add_heard(place, 6_000).await.unwrap();
        store.forget_notified("q-1").await.unwrap();
        assert_eq!(store.heard(place).await.unwrap(), Some(6_000));
        assert_eq!(store.heard("whatsapp:15557654321").await.unwrap(), None, "per place");
    }
}

#[tokio::test]
async fn credentials_are_kept_hashed_revoked_once_and_people_have_teams() {
    use super::{Credential, Scope};
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let phone = Credential {
            id: "device-1".into(),
            name: "phone".into(),
            scope: Scope::Device,
            hash: "ab".repeat(32),
            created_at: 1,
            revoked_at: None,
            person: Some("alice".into()),
        };
        let ci = Credential { id: "agent-1".into(), name: "ci".into(), scope: Scope::Agent, person: None, created_at: 2, ..phone.clone() };
        store.add_credential(&phone).await.unwrap();
        store.add_credential(&Credential { hash: "cd".repeat(32), ..ci.clone() }).await.unwrap();
        let kept = store.credentials().await.unwrap();
        assert_eq!(
            kept.iter().map(|c| (c.id.as_str(), c.hash.as_str(), c.person.as_deref())).collect::<Vec<_>>(),
            [("device-1", "ab".repeat(32).as_str(), Some("alice")), ("agent-1", "cd".repeat(32).as_str(), None)],
            "oldest first, with the hash and the person"
        );
        assert!(store.revoke_credential("device-1", 5).await.unwrap());
        assert!(!store.revoke_credential("device-1", 6).await.unwrap(), "once");
        assert!(!store.revoke_credential("nobody", 6).await.unwrap());
        assert_eq!(store.credentials().await.unwrap()[0].revoked_at, Some(5));
        store.set_teams("alice", &["db".into(), "web".into()]).await.unwrap();
        store.set_teams("bob", &["db".into()]).await.unwrap();
        store.set_teams("alice", &["db".into()]).await.unwrap();
        let mut teams = store.teams().await.unwrap();
        teams.sort();
        assert_eq!(teams, [("alice".to_owned(), "db".to_owned()), ("bob".to_owned(), "db".to_owned())], "the last set replaces");
    }
}

#[tokio::test]
async fn page_sessions_are_found_by_hash_removed_once_and_with_their_credential() {
    use super::{Credential, Scope};
    for (backend, store) in stores().await {
        eprintln!("checking the {backend} store");
        let session = |id: &str, hash: &str, credential: Option<&str>, at: u64| StoredSession {
            id: id.into(),
            hash: hash.repeat(32),
            credential: credential.map(str::to_owned),
            created_at: at,
            expires_at: at + 100,
        };
        store.add_session(&session("session-1", "ab", Some("device-1"), 1)).await.unwrap();
        store.add_session(&session("session-2", "cd", Some("device-1"), 2)).await.unwrap();
        store.add_session(&session("session-3", "ef", None, 3)).await.unwrap();
        assert_eq!(store.session(&"cd".repeat(32)).await.unwrap(), Some(session("session-2", "cd", Some("device-1"), 2)));
        assert_eq!(store.session("cd").await.unwrap(), None, "the whole hash or nothing");
        let kept = store.sessions().await.unwrap();
        assert_eq!(kept.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["session-1", "session-2", "session-3"], "oldest first");
        assert!(store.add_session(&session("session-4", "ab", None, 4)).await.is_err(), "a hash is kept once");
        assert!(store.remove_session("session-3").await.unwrap());
        assert!(!store.remove_session("session-3").await.unwrap(), "once");
        assert_eq!(store.session(&"ef".repeat(32)).await.unwrap(), None);
        // Revoking a device forgets its sessions and push subscriptions with it, at once.
        let device = Credential {
            id: "device-1".into(),
            name: "phone".into(),
            scope: Scope::Device,
            hash: "0f".repeat(32),
            created_at: 1,
            revoked_at: None,
            person: None,
        };
        store.add_credential(&device).await.unwrap();
        let sub = |endpoint: &str, credential: Option<&str>| StoredSubscription {
            endpoint: endpoint.into(),
            credential: credential.map(str::to_owned),
            p256dh: "p".into(),
            auth: "a".into(),
            rules: "{}".into(),
            created_at: 4,
        };
        store.add_subscription(&sub("https://push.example/phone", Some("device-1"))).await.unwrap();
        store.add_subscription(&sub("https://push.example/admins", None)).await.unwrap();
        assert!(store.revoke_credential("device-1", 9).await.unwrap());
        assert_eq!(store.sessions().await.unwrap(), [], "a revoked device's sessions go with it");
        assert_eq!(store.subscriptions().await.unwrap(), [sub("https://push.example/admins", None)], "and its subscriptions");
        // Expired sessions are forgotten as new ones come.
        store.add_session(&session("session-5", "12", Some("device-2"), 10)).await.unwrap();
        store.add_session(&session("session-6", "34", Some("device-2"), 110)).await.unwrap();
        assert_eq!(store.sessions().await.unwrap().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["session-6"]);
    }
}
