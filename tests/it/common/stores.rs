//! Stores with the keys trusted: through the CLI ([`KeyedStore`], [`cli_store`],
//! [`store_with_remote`]) or the library ([`lib_store`]); [`have_git`] for the tests that
//! need git.

use super::cli::{command, elench, run, with_store};
use super::envelopes::Signed;
use super::keys::{make_keys, KeyPair, Keys};
use elench::store::Store;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A store at `DIR/store` (named with `--store`, never found by walking up) in a temporary
/// directory, trusting one key of each role (those of [`make_keys`], made in the same
/// directory). Dropping it removes the directory.
pub struct KeyedStore {
    pub tmp: tempfile::TempDir,
    pub store: PathBuf,
    pub keys: Keys,
}

impl Default for KeyedStore {
    fn default() -> Self {
        KeyedStore::new()
    }
}

impl KeyedStore {
    /// A fresh store `store` trusting a fresh harness, agent and human key.
    pub fn new() -> KeyedStore {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let keys = make_keys(tmp.path());
        let store = tmp.path().join("store");
        init_store_trusting(tmp.path(), &store, &keys.trusted_pairs());
        KeyedStore { tmp, store, keys }
    }

    /// The temporary directory (the working directory of every command).
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `elench --store STORE ARGS…` in [`KeyedStore::dir`].
    pub fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> (i32, Value) {
        elench(self.dir(), &with_store(&self.store, args))
    }

    /// The store's `export` bundle, byte for byte.
    pub fn export(&self) -> Vec<u8> {
        export_bundle(self.dir(), &self.store)
    }
}

/// `elench --store STORE init`, then `keys add` for each key (which needs its files);
/// asserts success.
pub fn init_store_trusting(dir: &Path, store: &Path, keys: &[&KeyPair]) {
    let (code, json) = elench(dir, &with_store(store, &["init"]));
    assert_eq!(code, 0, "init failed: {json}");
    for k in keys {
        let public = k.public.display().to_string();
        let (code, json) = elench(
            dir,
            &with_store(
                store,
                &["keys", "add", "--role", &k.role, "--name", &k.name, &public],
            ),
        );
        assert_eq!(code, 0, "keys add failed: {json}");
        assert_eq!(json["data"]["keyid"], json!(k.keyid), "{json}");
    }
}

/// `elench init` and `keys add` of the three trusted keys, through the binary, their
/// files written into `pem_dir`. Returns the keys with their files.
pub fn cli_store(store: &Path, keys: &Keys, pem_dir: &Path) -> Keys {
    let out = run(store, &["init"]);
    assert_eq!(out.code, 0, "init: {}", out.json);
    let keys = keys.write_files(pem_dir);
    for k in keys.trusted_pairs() {
        let pem = k.public.to_str().unwrap();
        let out = run(
            store,
            &["keys", "add", "--role", &k.role, "--name", &k.name, pem],
        );
        assert_eq!(out.code, 0, "keys add {}: {}", k.name, out.json);
    }
    keys
}

/// A store at `DIR/NAME` made by [`cli_store`] (its key files in `DIR/NAME-pems`), with
/// `origin` pointing at `remote`.
pub fn store_with_remote(dir: &Path, name: &str, keys: &Keys, remote: &Path) -> PathBuf {
    let store = dir.join(name);
    cli_store(&store, keys, &dir.join(format!("{name}-pems")));
    let out = run(
        &store,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "remote add: {}", out.json);
    store
}

/// Whether git is installed; says "skipped" on stderr when not, for the tests that need it
/// to return early.
pub fn have_git() -> bool {
    let ok = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: git is not installed");
    }
    ok
}

/// `elench --store STORE export` to stdout: the bundle's bytes (asserts exit 0). Used as a
/// snapshot of the whole store: bad input must leave it byte-identical.
pub fn export_bundle(dir: &Path, store: &Path) -> Vec<u8> {
    let out = command(dir)
        .args(with_store(store, &["export", "-o", "-"]))
        .output()
        .expect("elench runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `elench export -o FILE` and the file's bytes.
pub fn export(store: &Path, file: &Path) -> Vec<u8> {
    let out = run(store, &["export", "-o", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "export: {}", out.json);
    std::fs::read(file).unwrap()
}

/// A library store at `dir` with the three trusted keys of `keys`.
pub fn lib_store(dir: &Path, keys: &Keys) -> Store {
    let (store, _) = Store::init(dir, &elench::store::Options::new(Duration::from_secs(30)))
        .expect("store opens");
    for k in keys.trusted() {
        store.add_key(&k).expect("key added");
    }
    store
}

/// Verifies and adds envelopes to a library store, in the given order.
pub fn lib_add_all<'a>(store: &Store, envelopes: impl IntoIterator<Item = &'a Signed>) {
    let trust = store.trust_set().unwrap();
    for s in envelopes {
        let accepted = elench::ingest::verify_envelope(s.envelope.as_bytes(), &trust)
            .unwrap_or_else(|e| panic!("envelope {} rejected: {e:?}", s.id));
        store.add(&accepted, s.envelope.as_bytes()).unwrap();
    }
}

/// Holds the writer lock of the store at `store` (as another elench process writing would)
/// until the file is dropped.
pub fn hold_writer_lock(store: &std::path::Path) -> std::fs::File {
    let f = std::fs::File::open(store.join("LOCK")).unwrap();
    f.lock().unwrap();
    f
}

/// Copies a directory tree (a store, a corpus) file by file, so a test can damage the copy.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
