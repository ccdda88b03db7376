//! Unit tests of the store: values, separation of sessions, every bound, expiry, reopening.

use std::time::Duration;

use super::*;

fn open(limits: Limits) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&store_path(&dir.path().join("hookd")), limits).unwrap();
    (dir, store)
}

#[test]
fn set_get_delete_list_round_trip() {
    let (_dir, store) = open(Limits::default());
    assert_eq!(store.get("s1", "k").unwrap(), None);
    store.set("p", "s1", "k", "v1", 1).unwrap();
    store.set("p", "s1", "k", "v2", 2).unwrap();
    store.set("p", "s1", "a", "x", 3).unwrap();
    assert_eq!(store.get("s1", "k").unwrap().as_deref(), Some("v2"));
    assert_eq!(store.list("s1").unwrap(), ["a", "k"]);
    assert!(store.delete("s1", "k", 4).unwrap());
    assert!(!store.delete("s1", "k", 5).unwrap());
    assert_eq!(store.list("s1").unwrap(), ["a"]);
    assert_eq!(store.usage().unwrap(), (1, 2));
    assert!(store.delete("s1", "a", 6).unwrap());
    assert_eq!(store.usage().unwrap(), (0, 0));
}

#[test]
fn sessions_are_separate_even_when_one_id_prefixes_another() {
    let (_dir, store) = open(Limits::default());
    store.set("p", "s", "k", "short", 1).unwrap();
    store.set("p", "s1", "k", "long", 1).unwrap();
    store.set("p", "s1", "only-s1", "x", 1).unwrap();
    assert_eq!(store.get("s", "k").unwrap().as_deref(), Some("short"));
    assert_eq!(store.get("s1", "k").unwrap().as_deref(), Some("long"));
    assert_eq!(store.list("s").unwrap(), ["k"]);
    assert_eq!(store.get("s", "only-s1").unwrap(), None);
}

#[test]
fn every_bound_is_a_typed_error_and_changes_nothing() {
    let limits = Limits {
        max_session_bytes: 8,
        max_key_bytes: 4,
        max_value_bytes: 10,
        max_keys_per_session: 2,
        max_bytes_per_session: 16,
        max_sessions: 2,
        max_total_bytes: 24,
        ..Limits::default()
    };
    let (_dir, store) = open(limits);
    let invalid = |result: Result<(), StateError>, what: &str| match result {
        Err(StateError::Invalid { what: got, .. }) => assert_eq!(got, what),
        other => panic!("expected invalid {what}, got {other:?}"),
    };
    invalid(store.set("p", "", "k", "v", 1), "session id");
    invalid(store.set("p", "123456789", "k", "v", 1), "session id");
    invalid(store.set("p", "s", "", "v", 1), "key");
    invalid(store.set("p", "s", "12345", "v", 1), "key");
    invalid(store.set("p", "s", "a\nb", "v", 1), "key");
    assert!(matches!(
        store.set("p", "s", "k", "12345678901", 1),
        Err(StateError::ValueTooLarge { len: 11, max: 10 })
    ));
    store.set("p", "s", "a", "1234567", 1).unwrap(); // 8 bytes
    store.set("p", "s", "b", "1", 1).unwrap(); // 2 bytes
    assert!(matches!(
        store.set("p", "s", "c", "1", 1),
        Err(StateError::TooManyKeys { max: 2 })
    ));
    assert!(matches!(
        store.set("p", "s", "b", "12345678", 1),
        Err(StateError::SessionFull { max: 16 })
    ));
    store.set("p", "t", "a", "123456789", 1).unwrap(); // 10 bytes: 20 in all
    assert!(matches!(
        store.set("p", "u", "a", "1", 1),
        Err(StateError::TooManySessions { max: 2 })
    ));
    assert!(matches!(
        store.set("p", "t", "b", "1234", 1),
        Err(StateError::StoreFull { max: 24 })
    ));
    assert!(StateError::StoreFull { max: 1 }.is_limit());
    // Nothing a refused write tried is there.
    assert_eq!(store.get("s", "b").unwrap().as_deref(), Some("1"));
    assert_eq!(store.get("t", "b").unwrap(), None);
    assert_eq!(store.usage().unwrap(), (2, 20));
    // Overwriting with a smaller value is always allowed, and frees bytes.
    store.set("p", "s", "a", "1", 2).unwrap();
    assert_eq!(store.usage().unwrap(), (2, 14));
}

#[test]
fn ended_sessions_expire_after_the_grace_and_idle_ones_after_inactivity() {
    let limits = Limits {
        keep_after_end: Duration::from_millis(100),
        keep_inactive: Duration::from_millis(1_000),
        ..Limits::default()
    };
    let (_dir, store) = open(limits);
    store.set("p", "ended", "k", "v", 0).unwrap();
    store.set("p", "idle", "k", "v", 0).unwrap();
    store.set("p", "live", "k", "v", 950).unwrap();
    store.session_ended("ended", 10).unwrap();
    store.session_ended("never-wrote", 10).unwrap();
    assert_eq!(store.expire(50, 10).unwrap(), 0);
    assert_eq!(store.expire(110, 10).unwrap(), 1);
    assert_eq!(store.get("ended", "k").unwrap(), None);
    assert_eq!(store.get("idle", "k").unwrap().as_deref(), Some("v"));
    assert_eq!(store.expire(1_000, 10).unwrap(), 1);
    assert_eq!(store.get("idle", "k").unwrap(), None);
    assert_eq!(store.list("live").unwrap(), ["k"]);
    assert_eq!(store.usage().unwrap(), (1, 2));
}

#[test]
fn a_write_after_the_end_keeps_a_resumed_session() {
    let limits = Limits {
        keep_after_end: Duration::from_millis(100),
        ..Limits::default()
    };
    let (_dir, store) = open(limits);
    store.set("p", "s", "k", "v", 0).unwrap();
    store.session_ended("s", 10).unwrap();
    store.set("p", "s", "k", "again", 20).unwrap();
    assert_eq!(store.expire(500, 10).unwrap(), 0);
    assert_eq!(store.get("s", "k").unwrap().as_deref(), Some("again"));
}

#[test]
fn expiry_is_bounded_per_call() {
    let limits = Limits {
        keep_inactive: Duration::from_millis(1),
        ..Limits::default()
    };
    let (_dir, store) = open(limits);
    for session in 0..5 {
        for key in 0..3 {
            store
                .set("p", &format!("s{session}"), &format!("k{key}"), "v", 0)
                .unwrap();
        }
    }
    assert_eq!(store.expire(10, 2).unwrap(), 2);
    assert_eq!(store.expire(10, 2).unwrap(), 2);
    assert_eq!(store.expire(10, 2).unwrap(), 1);
    assert_eq!(store.expire(10, 2).unwrap(), 0);
    assert_eq!(store.usage().unwrap(), (0, 0));
}

#[test]
fn the_store_survives_reopening_with_private_modes() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state").join("hookd");
    let path = store_path(&state_dir);
    {
        let store = Store::open(&path, Limits::default()).unwrap();
        store.set("p", "s", "k", "kept", 1).unwrap();
    }
    let store = Store::open(&path, Limits::default()).unwrap();
    assert_eq!(store.get("s", "k").unwrap().as_deref(), Some("kept"));
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&state_dir), 0o700);
}

#[test]
fn a_second_open_of_a_held_store_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_path(dir.path());
    let _held = Store::open(&path, Limits::default()).unwrap();
    assert!(matches!(
        Store::open(&path, Limits::default()),
        Err(StateError::Database(_))
    ));
}

#[test]
fn a_file_that_is_not_a_store_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_path(dir.path());
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    assert!(Store::open(&path, Limits::default()).is_err());
}

#[test]
fn one_project_cannot_fill_the_store_for_the_others() {
    let limits = Limits {
        max_sessions: 10,
        max_total_bytes: 100,
        max_sessions_per_project: 3,
        max_bytes_per_project: 30,
        ..Limits::default()
    };
    let (_dir, store) = open(limits);
    // (project, session, key, value, accepted?)
    let steps: &[(&str, &str, &str, &str, bool)] = &[
        ("hostile", "h1", "k", "123456789", true), // 10 bytes
        ("hostile", "h2", "k", "123456789", true), // 20
        ("hostile", "h3", "k", "12345678", true),  // 29
        // Its fourth session, and more bytes, are past its share...
        ("hostile", "h4", "k", "1", false),
        ("hostile", "h1", "k2", "1", false),
        // ...but shrinking a value and overwriting within it still work.
        ("hostile", "h1", "k", "1", true),
        ("hostile", "h1", "k2", "1", true),
        // Other projects still write.
        ("other", "o1", "k", "123456789", true),
        ("third", "t1", "k", "123456789", true),
        // A session keeps the project of its first write, whoever writes it later.
        ("other", "h2", "k3", "123456789", false),
    ];
    for (i, (project, session, key, value, accepted)) in steps.iter().enumerate() {
        let result = store.set(project, session, key, value, 1);
        assert_eq!(result.is_ok(), *accepted, "step {i}: {result:?}");
        if let Err(error) = result {
            assert!(error.is_limit(), "step {i}: {error}");
        }
    }
    assert_eq!(store.project_usage("hostile").unwrap(), (3, 24));
    assert_eq!(store.project_usage("other").unwrap(), (1, 10));
    // Deleting and expiring give a project's share back.
    assert!(store.delete("h3", "k", 2).unwrap());
    assert_eq!(store.project_usage("hostile").unwrap(), (2, 15));
    store.set("hostile", "h4", "k", "1", 2).unwrap();
    store.session_ended("h4", 3).unwrap();
    let removed = store.expire(31 * 24 * 60 * 60 * 1000, 64).unwrap();
    assert_eq!(removed, 5);
    assert_eq!(store.project_usage("hostile").unwrap(), (0, 0));
    assert_eq!(store.usage().unwrap(), (0, 0));
}
