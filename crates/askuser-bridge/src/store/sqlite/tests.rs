use super::*;
use crate::store::conformance::{answer, cancel, decision, done, ids, pending, request, rule};
use askuser_core::Status;
use std::sync::{Arc, Barrier};

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Sqlite>();
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
    assert_eq!(SCHEMA_VERSION, 9, "its own six steps, then the shared ones");
    store.add_heard("whatsapp:15551234567", 5_000).unwrap();
    assert_eq!(store.heard("whatsapp:15551234567").unwrap(), Some(5_000), "the shared step 9: when people last wrote");
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
