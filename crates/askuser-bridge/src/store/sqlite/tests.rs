use super::*;
use askuser_core::{resolve, Agent, Choice, Question, Request, Selection, Status};
use std::sync::{Arc, Barrier};

fn request(id: &str, question: &str) -> Request {
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

fn pending(id: &str, created_at: u64) -> QuestionRecord {
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

fn answer(id: &str, label: &str, at: u64) -> AskResult {
    let r = request(id, "Which database?");
    AskResult::answered(id, &r, resolve(&r.questions, &[Selection::option(label)]).unwrap(), at)
}

fn cancel(id: &str, at: u64) -> AskResult {
    AskResult::unanswered(id, &request(id, "Which database?"), Status::Cancelled, at)
}

fn ids(records: &[QuestionRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

fn done(f: Finished) -> QuestionRecord {
    match f {
        Finished::Done(r) => r,
        Finished::AlreadyFinal(r) => panic!("expected Done, got AlreadyFinal({r:?})"),
    }
}

#[test]
fn an_answer_link_is_used_once_and_not_after_it_expires() {
    let store = Sqlite::open_in_memory().unwrap();
    let link = |hash: &str, expires_at| StoredLink {
        hash: hash.into(),
        question_id: "q1".into(),
        option: 1,
        channel: "webhook".into(),
        credential: None,
        expires_at,
    };
    store.add_links(&[link("a", 1_000), link("b", 1_000)]).unwrap();
    assert_eq!(store.use_link("a", 999).unwrap(), LinkUse::Fresh(link("a", 1_000)));
    assert_eq!(store.use_link("a", 999).unwrap(), LinkUse::Used, "once");
    assert_eq!(store.link("a").unwrap(), Some((link("a", 1_000), true)));
    assert_eq!(store.use_link("b", 1_000).unwrap(), LinkUse::Expired);
    assert_eq!(store.link("b").unwrap(), Some((link("b", 1_000), false)), "an expired link is not marked used");
    assert_eq!(store.use_link("zz", 1).unwrap(), LinkUse::Unknown);
}

/// F8: the condition is in the write itself, so another credential's subscription of
/// an endpoint one holds (two first subscriptions racing past the handler's check) is
/// not taken and changes nothing, while its maker's again replaces keys and rules.
#[test]
fn a_push_endpoint_is_replaced_only_by_the_credential_that_made_it() {
    let store = Sqlite::open_in_memory().unwrap();
    let sub = |endpoint: &str, credential: Option<&str>, key: &str, at| StoredSubscription {
        endpoint: endpoint.into(),
        credential: credential.map(str::to_owned),
        p256dh: format!("p256dh-{key}"),
        auth: format!("auth-{key}"),
        rules: format!("{{\"agents\": [\"{key}\"]}}"),
        created_at: at,
    };
    let (phone, admins) = ("https://push.example/phone", "https://push.example/admins");
    assert!(store.add_subscription(&sub(phone, Some("device-a"), "a1", 1)).unwrap(), "a new endpoint is taken");
    assert!(!store.add_subscription(&sub(phone, Some("device-b"), "b1", 2)).unwrap(), "another credential's is not taken");
    assert!(!store.add_subscription(&sub(phone, None, "admin", 3)).unwrap(), "nor the admin token's");
    assert_eq!(store.subscriptions().unwrap(), [sub(phone, Some("device-a"), "a1", 1)], "the first is kept as it was");
    assert!(store.add_subscription(&sub(phone, Some("device-a"), "a2", 4)).unwrap(), "its maker's again is taken");
    assert_eq!(store.subscriptions().unwrap(), [sub(phone, Some("device-a"), "a2", 4)], "with its new keys and rules");
    // One the admin token made (no credential) is the admin token's alike.
    assert!(store.add_subscription(&sub(admins, None, "x1", 5)).unwrap());
    assert!(!store.add_subscription(&sub(admins, Some("device-a"), "a3", 6)).unwrap(), "a device's is not taken");
    assert!(store.add_subscription(&sub(admins, None, "x2", 7)).unwrap(), "the admin token's again is taken");
    assert_eq!(store.subscriptions().unwrap(), [sub(phone, Some("device-a"), "a2", 4), sub(admins, None, "x2", 7)]);
}

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Sqlite>();
}

#[test]
fn insert_get_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Sqlite::open(&dir.path().join("askuser.db"), Durability::Normal).unwrap();
    let rec = pending("q-1", 1_000);
    assert_eq!(store.insert(&rec).unwrap(), Inserted::New);
    assert_eq!(store.get("q-1").unwrap(), Some(rec));
    assert_eq!(store.get("q-2").unwrap(), None);
    assert_eq!(store.counts().unwrap(), (1, 0));
}

#[test]
fn resume_with_same_questions_returns_the_stored_record() {
    let store = Sqlite::open_in_memory().unwrap();
    let rec = pending("q-1", 1_000);
    store.insert(&rec).unwrap();
    // A resume may come later, with other metadata: only the questions must match.
    let mut again = pending("q-1", 5_000);
    again.request.metadata = None;
    assert_eq!(store.insert(&again).unwrap(), Inserted::Existing(rec.clone()));
    // A resume after the answer sees the final record.
    let first = done(store.finish("q-1", &answer("q-1", "SQLite", 2_000), Some("c-1")).unwrap());
    assert_eq!(store.insert(&again).unwrap(), Inserted::Existing(first));
    assert_eq!(store.counts().unwrap(), (0, 1));
}

#[test]
fn history_pages_newest_final_first_and_searches() {
    let store = Sqlite::open_in_memory().unwrap();
    for (i, q) in ["Which database?", "Which cache?", "Which 100%_db?"].iter().enumerate() {
        let id = format!("q-{i}");
        let mut rec = pending(&id, 1_000 + i as u64);
        rec.request = request(&id, q);
        store.insert(&rec).unwrap();
    }
    store.insert(&pending("still-pending", 5_000)).unwrap();
    for (id, at) in [("q-1", 3_000), ("q-0", 4_000), ("q-2", 6_000)] {
        store.finish(id, &answer(id, "SQLite", at), None).unwrap();
    }
    let ids = |r: Vec<QuestionRecord>| r.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(store.history(None, 0, 10).unwrap()), ["q-2", "q-0", "q-1"], "finished last comes first; pending never");
    assert_eq!(ids(store.history(None, 1, 1).unwrap()), ["q-0"]);
    assert_eq!(ids(store.history(Some("CACHE"), 0, 10).unwrap()), ["q-1"], "ignoring case");
    assert_eq!(ids(store.history(Some("100%_"), 0, 10).unwrap()), ["q-2"], "% and _ are literal");
    assert_eq!(ids(store.history(Some("%"), 0, 10).unwrap()), ["q-2"]);
}

#[test]
fn pending_pages_are_bounded_by_count_and_bytes() {
    let store = Sqlite::open_in_memory().unwrap();
    for i in 0..5 {
        store.insert(&pending(&format!("q-{i}"), 1_000 + i)).unwrap();
    }
    store.finish("q-1", &answer("q-1", "SQLite", 2_000), None).unwrap();
    let ids = |r: &[QuestionRecord]| r.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let (page, last, more) = store.pending_page(0, 2, usize::MAX).unwrap();
    assert_eq!((ids(&page), more), (vec!["q-0".to_owned(), "q-2".to_owned()], true), "answered ones are skipped");
    let (page, _, more) = store.pending_page(last, 2, usize::MAX).unwrap();
    assert_eq!((ids(&page), more), (vec!["q-3".to_owned(), "q-4".to_owned()], false));
    let (page, last, more) = store.pending_page(0, 100, 1).unwrap();
    assert_eq!((ids(&page), more), (vec!["q-0".to_owned()], true), "one per page when each passes the byte budget");
    let (page, _, _) = store.pending_page(last, 100, 1).unwrap();
    assert_eq!(ids(&page), ["q-2"]);
    assert_eq!(store.pending_page(i64::MAX, 10, 10).unwrap(), (vec![], i64::MAX, false));
}

#[test]
fn conflict_leaves_the_stored_question_unchanged() {
    let store = Sqlite::open_in_memory().unwrap();
    let rec = pending("q-1", 1_000);
    store.insert(&rec).unwrap();
    let mut other = pending("q-1", 2_000);
    other.request = request("q-1", "Which language?");
    let err = store.insert(&other).unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { id } if id == "q-1"), "{err:?}");
    assert!(err.to_string().contains("\"q-1\""), "{err}");
    assert_eq!(store.get("q-1").unwrap(), Some(rec));
    assert_eq!(store.counts().unwrap(), (1, 0));
}

#[test]
fn first_finish_wins() {
    let store = Sqlite::open_in_memory().unwrap();
    store.insert(&pending("q-1", 1_000)).unwrap();
    let first = answer("q-1", "SQLite", 2_000);
    let rec = done(store.finish("q-1", &first, Some("c-1")).unwrap());
    assert_eq!(rec.status, Status::Answered);
    assert_eq!(rec.answered_at, Some(2_000));
    assert_eq!(rec.answered_by.as_deref(), Some("c-1"));
    assert_eq!(rec.result.as_ref(), Some(&first));
    assert_eq!(rec.created_at, 1_000);
    assert_eq!(store.get("q-1").unwrap(), Some(rec.clone()));

    for second in [answer("q-1", "PostgreSQL", 3_000), cancel("q-1", 3_000)] {
        match store.finish("q-1", &second, Some("c-2")).unwrap() {
            Finished::AlreadyFinal(now) => assert_eq!(now, rec),
            other => panic!("expected AlreadyFinal, got {other:?}"),
        }
    }
    assert_eq!(store.get("q-1").unwrap(), Some(rec));
}

#[test]
fn finish_without_a_client_and_with_every_final_status() {
    let store = Sqlite::open_in_memory().unwrap();
    for (i, status) in [Status::Cancelled, Status::TimedOut, Status::Withdrawn].into_iter().enumerate() {
        let id = format!("q-{i}");
        store.insert(&pending(&id, 1_000)).unwrap();
        let result = AskResult::unanswered(&id, &request(&id, "Which database?"), status, 2_000);
        let rec = done(store.finish(&id, &result, None).unwrap());
        assert_eq!((rec.status, rec.answered_by, rec.result), (status, None, Some(result)));
    }
}

#[test]
fn finish_refuses_a_pending_result() {
    let store = Sqlite::open_in_memory().unwrap();
    store.insert(&pending("q-1", 1_000)).unwrap();
    let mut result = cancel("q-1", 2_000);
    result.status = Status::Pending;
    assert!(matches!(store.finish("q-1", &result, None), Err(StoreError::Db { .. })));
    assert_eq!(store.get("q-1").unwrap().unwrap().status, Status::Pending);
}

#[test]
fn finish_unknown_id_is_not_found() {
    let store = Sqlite::open_in_memory().unwrap();
    let err = store.finish("nope", &cancel("nope", 1), None).unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { id } if id == "nope"), "{err:?}");
    assert_eq!(err.to_string(), "no question with id \"nope\"");
}

#[test]
fn list_orders_each_filter_and_respects_limit() {
    let store = Sqlite::open_in_memory().unwrap();
    // Created in this order; created_at deliberately disagrees with insertion order.
    for (i, id) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        store.insert(&pending(id, 10_000 - i as u64)).unwrap();
    }
    // Finished in the order d, b; answered_at deliberately disagrees with finish order.
    store.finish("d", &answer("d", "SQLite", 9_000), None).unwrap();
    store.finish("b", &cancel("b", 5_000), None).unwrap();

    assert_eq!(ids(&store.list(Filter::Pending, 100).unwrap()), ["a", "c", "e"]);
    assert_eq!(ids(&store.list(Filter::Final, 100).unwrap()), ["b", "d"]);
    assert_eq!(ids(&store.list(Filter::All, 100).unwrap()), ["e", "d", "c", "b", "a"]);

    assert_eq!(ids(&store.list(Filter::Pending, 2).unwrap()), ["a", "c"]);
    assert_eq!(ids(&store.list(Filter::Final, 1).unwrap()), ["b"]);
    assert_eq!(ids(&store.list(Filter::All, 3).unwrap()), ["e", "d", "c"]);
    assert!(store.list(Filter::All, 0).unwrap().is_empty());
    assert_eq!(store.list(Filter::All, usize::MAX).unwrap().len(), 5);

    // Records come back whole.
    assert_eq!(store.list(Filter::Pending, 1).unwrap()[0], pending("a", 10_000));
    assert_eq!(store.list(Filter::Final, 1).unwrap()[0], store.get("b").unwrap().unwrap());
    assert_eq!(store.counts().unwrap(), (3, 2));
}

#[test]
fn prune_removes_only_old_final_questions() {
    let store = Sqlite::open_in_memory().unwrap();
    for id in ["old", "new", "waiting", "boundary"] {
        store.insert(&pending(id, 0)).unwrap();
    }
    store.finish("old", &answer("old", "SQLite", 1_000), None).unwrap();
    store.finish("boundary", &cancel("boundary", 5_000), None).unwrap();
    store.finish("new", &cancel("new", 9_000), None).unwrap();

    assert_eq!(store.prune(5_000).unwrap(), 1); // strictly before the cutoff
    assert_eq!(store.get("old").unwrap(), None);
    assert!(store.get("boundary").unwrap().is_some());
    assert_eq!(store.prune(u64::MAX).unwrap(), 2);
    assert_eq!(ids(&store.list(Filter::All, 10).unwrap()), ["waiting"]);
    assert_eq!(store.counts().unwrap(), (1, 0));
    assert_eq!(store.prune(u64::MAX).unwrap(), 0);

    // A pruned id is free again, and insertion order keeps growing.
    store.insert(&pending("old", 20_000)).unwrap();
    assert_eq!(ids(&store.list(Filter::Pending, 10).unwrap()), ["waiting", "old"]);
}

/// Writes a pending question, an answered one and a cancelled one.
fn write_sample(store: &Sqlite) {
    store.insert(&pending("p", 1)).unwrap();
    store.insert(&pending("a", 2)).unwrap();
    store.insert(&pending("c", 3)).unwrap();
    done(store.finish("a", &answer("a", "SQLite", 10), Some("c-1")).unwrap());
    done(store.finish("c", &cancel("c", 11), Some("cli")).unwrap());
}

fn check_sample(store: &Sqlite) {
    assert_eq!(store.get("p").unwrap(), Some(pending("p", 1)));
    let a = store.get("a").unwrap().unwrap();
    assert_eq!((a.status, a.answered_by.as_deref(), a.result), (Status::Answered, Some("c-1"), Some(answer("a", "SQLite", 10))));
    assert_eq!(store.get("c").unwrap().unwrap().status, Status::Cancelled);
    assert_eq!(ids(&store.list(Filter::Pending, 10).unwrap()), ["p"]);
    assert_eq!(ids(&store.list(Filter::Final, 10).unwrap()), ["c", "a"]);
    assert_eq!(store.counts().unwrap(), (1, 2));
    // Still first-wins after the reopen.
    assert!(matches!(store.finish("a", &cancel("a", 99), None).unwrap(), Finished::AlreadyFinal(_)));
}

#[test]
fn reopen_after_a_clean_close_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    for durability in [Durability::Normal, Durability::Full] {
        let _ = std::fs::remove_file(&path);
        let store = Sqlite::open(&path, durability).unwrap();
        write_sample(&store);
        drop(store);
        check_sample(&Sqlite::open(&path, durability).unwrap());
    }
}

#[test]
fn reopen_without_closing_keeps_everything() {
    // The first store never closes (as if the process died): no checkpoint, the WAL
    // file stays, and a second store on the same file sees every commit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    let first = Sqlite::open(&path, Durability::Normal).unwrap();
    write_sample(&first);
    let second = Sqlite::open(&path, Durability::Normal).unwrap();
    check_sample(&second);
    std::mem::forget(first); // never closed, like a killed process
    drop(second);
    check_sample(&Sqlite::open(&path, Durability::Normal).unwrap());
}

/// Not a test on its own: the child process of `killed_bridge_loses_nothing`.
#[test]
fn sigkill_child() {
    let Some(path) = std::env::var_os("ASKUSER_STORE_SIGKILL_CHILD") else { return };
    let store = Sqlite::open(Path::new(&path), Durability::Normal).unwrap();
    write_sample(&store);
    println!("STORE-READY");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
#[cfg(unix)]
fn killed_bridge_loses_nothing() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["sigkill_child", "--nocapture", "--test-threads=1"])
        .env("ASKUSER_STORE_SIGKILL_CHILD", &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let ready = stdout.lines().map_while(Result::ok).any(|line| line.contains("STORE-READY"));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(ready, "the child process never wrote its questions");
    // The child never closed the store, so its commits are still only in the WAL.
    assert!(dir.path().join("askuser.db-wal").exists());
    check_sample(&Sqlite::open(&path, Durability::Normal).unwrap());
}

#[test]
fn open_in_a_missing_directory_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("askuser.db");
    let err = Sqlite::open(&path, Durability::Normal).unwrap_err();
    assert!(matches!(&err, StoreError::Open { path: p, .. } if *p == path), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.ends_with(": unable to open database file; check that the directory exists and is writable"), "{text}");
    assert!(!path.parent().unwrap().exists(), "open must not create the directory");
}

#[test]
#[cfg(unix)]
fn open_in_a_read_only_directory_fails_at_open() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
    // Root ignores permissions; then test a directory that cannot be written for any
    // user: a path whose parent is a regular file.
    let path = if std::fs::write(ro.join("probe"), b"").is_err() {
        ro.join("askuser.db")
    } else {
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        file.join("askuser.db")
    };
    let err = Sqlite::open(&path, Durability::Normal).unwrap_err();
    assert!(matches!(&err, StoreError::Open { path: p, .. } if *p == path), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
#[cfg(unix)]
fn open_refuses_a_read_only_store() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    drop(Sqlite::open(&path, Durability::Normal).unwrap());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    if std::fs::OpenOptions::new().append(true).open(&path).is_ok() {
        return; // root ignores permissions: nothing to check
    }
    let err = Sqlite::open(&path, Durability::Normal).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    // A writable store in a directory that became read-only cannot get its WAL file.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
    let err = Sqlite::open(&path, Durability::Normal);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(matches!(err, Err(StoreError::Open { .. })), "{err:?}");
}

#[test]
fn open_refuses_a_file_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    std::fs::write(&path, "this is not a database, just some text that is long enough to have a header").unwrap();
    let err = Sqlite::open(&path, Durability::Normal).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("not an askuser store"), "{err}");
}

#[test]
fn open_refuses_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    drop(Sqlite::open(&path, Durability::Normal).unwrap());
    Connection::open(&path).unwrap().pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    let err = Sqlite::open(&path, Durability::Normal).unwrap_err();
    assert!(err.to_string().contains("newer askuser"), "{err}");
}

#[test]
fn open_on_a_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = Sqlite::open(dir.path(), Durability::Normal).unwrap_err();
    assert!(err.to_string().contains("it is a directory"), "{err}");
}

#[test]
fn concurrent_finishes_have_exactly_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Sqlite::open(&dir.path().join("askuser.db"), Durability::Normal).unwrap());
    race_to_finish(&[store]);
}

#[test]
fn concurrent_finishes_from_separate_connections_have_exactly_one_winner() {
    // As if two processes shared the file: SQLite's locking, not the mutex, decides.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    let stores: Vec<_> = (0..8).map(|_| Arc::new(Sqlite::open(&path, Durability::Normal).unwrap())).collect();
    race_to_finish(&stores);
}

/// Eight threads, spread over `stores`, answer the same question at once.
fn race_to_finish(stores: &[Arc<Sqlite>]) {
    let store = &stores[0];
    store.insert(&pending("q-1", 1)).unwrap();
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (store, barrier) = (Arc::clone(&stores[i as usize % stores.len()]), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let label = if i % 2 == 0 { "SQLite" } else { "PostgreSQL" };
                let by = format!("c-{i}");
                barrier.wait();
                store.finish("q-1", &answer("q-1", label, 100 + i), Some(&by)).unwrap()
            })
        })
        .collect();
    let outcomes: Vec<Finished> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<&QuestionRecord> = outcomes.iter().filter_map(|f| if let Finished::Done(r) = f { Some(r) } else { None }).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let stored = store.get("q-1").unwrap().unwrap();
    assert_eq!(&stored, winners[0]);
    for f in &outcomes {
        if let Finished::AlreadyFinal(r) = f {
            assert_eq!(r, &stored);
        }
    }
}

fn rule(id: &str, at: u64) -> StoredRule {
    StoredRule {
        id: id.into(),
        rule: format!("{{\"tool\": \"Bash\", \"prefix\": \"cargo {id}\"}}"),
        created_at: at,
        created_by: Some("c-phone".into()),
    }
}

fn decision(summary: &str, at: u64) -> StoredDecision {
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

fn summaries(decisions: &[StoredDecision]) -> Vec<&str> {
    decisions.iter().map(|d| d.summary.as_str()).collect()
}

#[test]
fn approval_rules_are_listed_oldest_first_and_removed_once() {
    let store = Sqlite::open_in_memory().unwrap();
    assert_eq!(store.rules().unwrap(), []);
    let by_rule = StoredRule { created_by: None, ..rule("r-00000000000c", 3_000) };
    for r in [rule("r-00000000000b", 2_000), by_rule.clone(), rule("r-00000000000a", 1_000)] {
        store.add_rule(&r).unwrap();
    }
    assert!(matches!(store.add_rule(&rule("r-00000000000a", 9_000)), Err(StoreError::Db { .. })), "an id is kept once");
    assert_eq!(store.rules().unwrap(), [rule("r-00000000000a", 1_000), rule("r-00000000000b", 2_000), by_rule.clone()]);
    assert!(store.remove_rule("r-00000000000b").unwrap());
    assert!(!store.remove_rule("r-00000000000b").unwrap(), "already gone");
    assert!(!store.remove_rule("r-ffffffffffff").unwrap(), "never there");
    assert_eq!(store.rules().unwrap(), [rule("r-00000000000a", 1_000), by_rule]);
    assert_eq!(store.health(), Ok(()));
}

#[test]
fn approval_decisions_come_newest_first_up_to_the_limit() {
    let store = Sqlite::open_in_memory().unwrap();
    assert_eq!(store.decisions(10).unwrap(), []);
    // A rule's decision: no question, no person, the rule named.
    let by_rule = StoredDecision { question: None, rule: Some("r-00000000000a".into()), by: None, ..decision("ruled", 2_000) };
    for d in [decision("first", 1_000), decision("tie-1", 3_000), by_rule.clone(), decision("tie-2", 3_000), decision("early", 500)] {
        store.add_decision(&d).unwrap();
    }
    let all = store.decisions(10).unwrap();
    assert_eq!(summaries(&all), ["tie-2", "tie-1", "ruled", "first", "early"], "ties: the later added first");
    assert_eq!(all[2], by_rule, "kept whole");
    assert_eq!(summaries(&store.decisions(2).unwrap()), ["tie-2", "tie-1"]);
    assert_eq!(store.decisions(0).unwrap(), []);
    assert_eq!(store.decisions(usize::MAX).unwrap().len(), 5);
}

#[test]
fn prune_drops_old_approval_decisions_and_keeps_rules() {
    let store = Sqlite::open_in_memory().unwrap();
    store.add_rule(&rule("r-00000000000a", 1)).unwrap();
    for (summary, at) in [("old", 1_000), ("boundary", 5_000), ("new", 9_000)] {
        store.add_decision(&decision(summary, at)).unwrap();
    }
    assert_eq!(store.prune(5_000).unwrap(), 0, "the count is of questions");
    assert_eq!(summaries(&store.decisions(10).unwrap()), ["new", "boundary"], "strictly before the cutoff");
    store.prune(u64::MAX).unwrap();
    assert_eq!(store.decisions(10).unwrap(), []);
    assert_eq!(store.rules().unwrap(), [rule("r-00000000000a", 1)], "rules are never pruned");
}

#[test]
fn approvals_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    let first = Sqlite::open(&path, Durability::Normal).unwrap();
    first.add_rule(&rule("r-00000000000a", 1_000)).unwrap();
    first.add_rule(&rule("r-00000000000b", 2_000)).unwrap();
    first.remove_rule("r-00000000000a").unwrap();
    first.add_decision(&decision("one", 1_000)).unwrap();
    first.add_decision(&decision("two", 2_000)).unwrap();
    // Another store on the file, the first never closed (as if killed), then a clean reopen.
    let second = Sqlite::open(&path, Durability::Normal).unwrap();
    std::mem::forget(first);
    for store in [second, Sqlite::open(&path, Durability::Normal).unwrap()] {
        assert_eq!(store.rules().unwrap(), [rule("r-00000000000b", 2_000)]);
        assert_eq!(store.decisions(10).unwrap(), [decision("two", 2_000), decision("one", 1_000)]);
    }
}

/// A store written before approvals (schema version 5) opens, keeps what it had and
/// takes rules and decisions.
#[test]
fn a_store_from_before_approvals_is_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askuser.db");
    {
        let conn = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..5] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 5).unwrap();
    }
    {
        let old = Connection::open(&path).unwrap();
        old.execute(
            "INSERT INTO questions (id, status, created_at, request) VALUES ('q-1', 'pending', 1, ?1)",
            [serde_json::to_string(&request("q-1", "Which database?")).unwrap()],
        )
        .unwrap();
    }
    let store = Sqlite::open(&path, Durability::Normal).unwrap();
    assert_eq!(store.get("q-1").unwrap(), Some(pending("q-1", 1)));
    assert_eq!((store.rules().unwrap(), store.decisions(10).unwrap()), (vec![], vec![]));
    store.add_rule(&rule("r-00000000000a", 1)).unwrap();
    store.add_decision(&decision("one", 1)).unwrap();
    assert_eq!(store.rules().unwrap().len(), 1);
    assert_eq!(store.decisions(10).unwrap().len(), 1);
    let version: i64 = store.lock().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 7, "its own six steps, then the shared ones");
    // The shared step: a notification keeps its message's id, and finds its question.
    store.add_notified("q-1", "slack:C1", 2, None).unwrap();
    store.add_notified("q-1", "slack:C1", 3, Some("1700000000.000001")).unwrap();
    assert_eq!(store.notified_by_message("slack:C1", "1700000000.000001").unwrap().as_deref(), Some("q-1"));
    assert_eq!(store.notified().unwrap()[0].message.as_deref(), Some("1700000000.000001"), "added to the row the claim made");
}

/// A locked file passes; a full disk, a damaged file or a bad row does not: only the
/// first is worth trying again, and the error says which by its source.
#[test]
fn a_locked_store_is_transient_and_a_full_disk_is_not() {
    let failure =
        |code| db_error("cannot store question \"q\"".into(), rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None));
    let busy = failure(rusqlite::ffi::SQLITE_BUSY);
    assert!(busy.is_transient(), "{busy}");
    assert!(std::error::Error::source(&busy).is_some_and(|s| s.is::<rusqlite::Error>()), "the driver's error is kept");
    assert!(busy.to_string().contains("another process holds the store locked"), "{busy}");
    for code in [rusqlite::ffi::SQLITE_FULL, rusqlite::ffi::SQLITE_CORRUPT, rusqlite::ffi::SQLITE_READONLY] {
        assert!(!failure(code).is_transient(), "{}", failure(code));
    }
    assert!(!StoreError::db("question \"q\" has an invalid stored request").is_transient());
    assert!(!StoreError::Conflict { id: "q".into() }.is_transient());
    assert!(StoreError::Unavailable("the database did not answer within 5 s".into()).is_transient());
}
