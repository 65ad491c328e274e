//! Every descriptor the store opens is closed on exec: a child process (a predicate's
//! runner, git) must not inherit a descriptor that writes the index or the log. LMDB opens
//! `data.mdb` without close-on-exec, so the index sets it after opening the environment.
//! One test in its own binary: other tests' threads would open and close descriptors
//! meanwhile.

use crate::common;

use common::{graph, lib_add_all, lib_store, Keys};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Descriptors of this process without close-on-exec, with what they are open on.
fn inheritable() -> BTreeSet<(i32, PathBuf)> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            let target = std::fs::read_link(entry.path()).unwrap_or_default();
            out.insert((fd, target));
        }
    }
    out
}

#[test]
fn every_descriptor_the_store_opens_is_closed_on_exec() {
    // Standard streams and whatever the test runner passed down are not the store's.
    let before = inheritable();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let keys = Keys::new();
    let store = lib_store(&dir, &keys);
    lib_add_all(&store, &graph(&keys, 30, 2, "fds"));
    assert_eq!(store.count().unwrap(), 30);
    let _pin = store.pin().unwrap();
    assert!(store
        .get(&graph(&keys, 1, 2, "fds")[0].id)
        .unwrap()
        .is_some());
    let canonical = std::fs::canonicalize(&dir).unwrap();
    let open_on_store = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(&canonical)))
        .count();
    // data.mdb and lock.mdb at least.
    assert!(
        open_on_store >= 2,
        "{open_on_store} descriptors on the store"
    );
    let leaked: Vec<_> = inheritable().difference(&before).cloned().collect();
    assert!(leaked.is_empty(), "inheritable descriptors: {leaked:?}");
}
