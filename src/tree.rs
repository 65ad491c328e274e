//! Content identity of a directory: the "elench tree OID".
//!
//! [`tree_oid`] computes the object id that git (with SHA-256 object format)
//! would give the directory's contents, i.e. exactly what
//!
//! ```text
//! git init --object-format=sha256 && git add -A && git write-tree
//! ```
//!
//! prints when run inside that directory. Claims can therefore name a source
//! tree by an id that anyone can reproduce with stock git, without elench, and
//! without the directory having to be a git checkout at all.
//!
//! The id is computed purely from the file system, following git's rules:
//!
//! * a blob object is `blob <len>\0<content>`; a tree object is
//!   `tree <len>\0` followed by one entry `<mode> <name>\0<32 raw bytes>` per
//!   child; an object's id is the SHA-256 of the whole object;
//! * modes: `100644` for a regular file, `100755` if the owner-execute bit is
//!   set (git looks at `mode & 0o100` only), `120000` for a symbolic link
//!   (whose blob is the link target's bytes; links are never followed) and
//!   `40000` for a directory;
//! * entries are sorted byte-wise by name, a directory's name comparing as if
//!   it ended in `/` (so the file `a.b`, the directory `a` and the file `a0`
//!   appear in that order);
//! * directories that contain no files, directly or further down, are left
//!   out, since git does not track directories;
//! * entries named `.git` are skipped at every level, and an entry named
//!   `.elench` is skipped at the top level (elench's own state);
//! * names are taken as raw bytes, so names that are not UTF-8 are fine;
//! * sockets, FIFOs and device nodes are skipped, as `git add` skips them.
//!
//! Deliberately **not** modelled, so the id matches git only without them:
//!
//! * `.gitignore`, `.git/info/exclude` and `core.excludesFile` are not
//!   honoured: every file counts (this matches `git add -A --force`);
//! * `.gitattributes`, `core.autocrlf` and clean filters are not applied:
//!   blobs are the bytes on disk;
//! * a subdirectory that is itself a git repository (which git would record
//!   as a submodule entry) is hashed as a plain directory, minus its `.git`;
//! * names that `git add` refuses (e.g. `.GIT`, or NTFS-reserved names under
//!   git's default `core.protectNTFS`) are hashed instead of rejected;
//! * Unicode names are used as stored (no macOS-style precomposition).
//!
//! Only Unix is supported (git's modes come from Unix permission bits); on
//! other platforms [`tree_oid`] returns [`TreeError::Unsupported`].
//!
//! The walk is iterative, so very deep trees cannot overflow the stack, and
//! every error names the path it concerns.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Why a tree OID could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The path given to [`tree_oid`] exists but is not a directory.
    #[error("not a directory: {}", path.display())]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
    },
    /// Reading the file system failed at `path`.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path being read (a directory, file or symbolic link).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file changed type or size while it was being hashed.
    #[error("file changed while it was being hashed: {}", path.display())]
    Changed {
        /// The file that changed.
        path: PathBuf,
    },
    /// Tree OIDs are only computed on Unix.
    #[error("tree OIDs are only supported on Unix: {}", path.display())]
    Unsupported {
        /// The path that was asked about.
        path: PathBuf,
    },
}

/// Computes the git SHA-256 tree id of the directory `dir` (see the module
/// documentation for the exact rules).
///
/// Returns 64 lowercase hex chars.
pub fn tree_oid(dir: &Path) -> Result<String, TreeError> {
    #[cfg(unix)]
    {
        unix::tree_oid(dir).map(hex::encode)
    }
    #[cfg(not(unix))]
    {
        Err(TreeError::Unsupported {
            path: dir.to_path_buf(),
        })
    }
}

/// Raw SHA-256 object id.
type Oid = [u8; 32];

/// Object id of the git object `<kind> <len>\0<body>`.
#[cfg_attr(not(unix), allow(dead_code))]
fn object_oid(kind: &str, body: &[u8]) -> Oid {
    let mut hasher = object_hasher(kind, body.len() as u64);
    hasher.update(body);
    hasher.finalize().into()
}

/// A hasher already fed the header `<kind> <len>\0`.
#[cfg_attr(not(unix), allow(dead_code))]
fn object_hasher(kind: &str, len: u64) -> Sha256 {
    let mut hasher = Sha256::new();
    hasher.update(format!("{kind} {len}\0").as_bytes());
    hasher
}

/// Git's tree-entry mode for a directory (git writes it without a leading 0).
#[cfg_attr(not(unix), allow(dead_code))]
const MODE_TREE: &str = "40000";

/// One entry of a tree object.
#[cfg_attr(not(unix), allow(dead_code))]
struct Entry {
    name: Vec<u8>,
    mode: &'static str,
    oid: Oid,
}

#[cfg_attr(not(unix), allow(dead_code))]
impl Entry {
    /// The bytes git sorts on: the name, plus `/` for a directory.
    fn sort_key(&self) -> impl Iterator<Item = u8> + '_ {
        let slash = (self.mode == MODE_TREE).then_some(b'/');
        self.name.iter().copied().chain(slash)
    }
}

/// Sorts `entries` the way git does and returns the tree object's id.
#[cfg_attr(not(unix), allow(dead_code))]
fn tree_object_oid(entries: &mut [Entry]) -> Oid {
    entries.sort_by(|a, b| a.sort_key().cmp(b.sort_key()));
    let mut body = Vec::with_capacity(entries.len() * (8 + 16 + 1 + 32));
    for entry in entries.iter() {
        body.extend_from_slice(entry.mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(&entry.name);
        body.push(0);
        body.extend_from_slice(&entry.oid);
    }
    object_oid("tree", &body)
}

#[cfg(unix)]
mod unix {
    use std::fs::{self, File};
    use std::io::{ErrorKind, Read};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::{object_hasher, object_oid, tree_object_oid, Entry, Oid, TreeError, MODE_TREE};

    fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + '_ {
        move |source| TreeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A directory being walked.
    struct Frame {
        /// This directory's name in its parent (empty for the root).
        name: Vec<u8>,
        /// Children not yet visited: (name, full path).
        pending: std::vec::IntoIter<(Vec<u8>, PathBuf)>,
        /// Entries of the children already hashed.
        done: Vec<Entry>,
    }

    impl Frame {
        fn open(path: &Path, name: Vec<u8>, top: bool) -> Result<Frame, TreeError> {
            let mut children = Vec::new();
            for entry in fs::read_dir(path).map_err(io_error(path))? {
                let entry = entry.map_err(io_error(path))?;
                let child_name = entry.file_name().as_bytes().to_vec();
                if child_name == b".git" || (top && child_name == b".elench") {
                    continue;
                }
                children.push((child_name, entry.path()));
            }
            // Visit in name order so that any error reported is deterministic.
            children.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            Ok(Frame {
                name,
                pending: children.into_iter(),
                done: Vec::new(),
            })
        }
    }

    pub(super) fn tree_oid(dir: &Path) -> Result<Oid, TreeError> {
        // The root itself may be reached through a symbolic link.
        let meta = fs::metadata(dir).map_err(io_error(dir))?;
        if !meta.is_dir() {
            return Err(TreeError::NotADirectory {
                path: dir.to_path_buf(),
            });
        }
        let mut parents: Vec<Frame> = Vec::new();
        let mut current = Frame::open(dir, Vec::new(), true)?;
        loop {
            match current.pending.next() {
                Some((name, path)) => {
                    let meta = fs::symlink_metadata(&path).map_err(io_error(&path))?;
                    let kind = meta.file_type();
                    if kind.is_dir() {
                        let child = Frame::open(&path, name, false)?;
                        parents.push(std::mem::replace(&mut current, child));
                    } else if kind.is_symlink() {
                        let target = fs::read_link(&path).map_err(io_error(&path))?;
                        current.done.push(Entry {
                            name,
                            mode: "120000",
                            oid: object_oid("blob", target.as_os_str().as_bytes()),
                        });
                    } else if kind.is_file() {
                        let (oid, executable) = hash_file(&path)?;
                        current.done.push(Entry {
                            name,
                            mode: if executable { "100755" } else { "100644" },
                            oid,
                        });
                    }
                    // Anything else (socket, FIFO, device) is not tracked by git.
                }
                None => {
                    let oid = tree_object_oid(&mut current.done);
                    let Some(parent) = parents.pop() else {
                        return Ok(oid);
                    };
                    let finished = std::mem::replace(&mut current, parent);
                    // Git does not record directories without files.
                    if !finished.done.is_empty() {
                        current.done.push(Entry {
                            name: finished.name,
                            mode: MODE_TREE,
                            oid,
                        });
                    }
                }
            }
        }
    }

    /// Streams a regular file into a blob id; also reports the owner-exec bit.
    fn hash_file(path: &Path) -> Result<(Oid, bool), TreeError> {
        let mut file = File::open(path).map_err(io_error(path))?;
        // Use the opened file's own metadata, so size and mode belong to the
        // bytes actually read even if the path was swapped meanwhile.
        let meta = file.metadata().map_err(io_error(path))?;
        if !meta.is_file() {
            return Err(TreeError::Changed {
                path: path.to_path_buf(),
            });
        }
        let len = meta.len();
        let executable = meta.permissions().mode() & 0o100 != 0;
        let mut hasher = object_hasher("blob", len);
        let mut buf = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(path)(e)),
            };
            total = total.saturating_add(n as u64);
            if total > len {
                break;
            }
            sha2::Digest::update(&mut hasher, &buf[..n]);
        }
        if total != len {
            return Err(TreeError::Changed {
                path: path.to_path_buf(),
            });
        }
        Ok((sha2::Digest::finalize(hasher).into(), executable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_BLOB: &str = "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813";
    const EMPTY_TREE: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

    #[test]
    fn tree_known_object_ids() {
        // Values printed by git 2.47 (`git hash-object`, `git write-tree`)
        // in a repository made with `git init --object-format=sha256`.
        assert_eq!(hex::encode(object_oid("blob", b"")), EMPTY_BLOB);
        assert_eq!(hex::encode(object_oid("tree", b"")), EMPTY_TREE);
        assert_eq!(
            hex::encode(object_oid("blob", b"hello\n")),
            "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
        );
        // A symbolic link's blob is its target.
        assert_eq!(
            hex::encode(object_oid("blob", b"nowhere")),
            "6e06345153599bb6c3c688ab489906f666e15d8540c0d2eb20dc2a53b344e4ff"
        );
    }

    #[test]
    fn tree_sort_puts_directory_between_dot_and_zero() {
        let blob = object_oid("blob", b"");
        let mut entries = vec![
            Entry {
                name: b"a0".to_vec(),
                mode: "100644",
                oid: blob,
            },
            Entry {
                name: b"a".to_vec(),
                mode: MODE_TREE,
                oid: blob,
            },
            Entry {
                name: b"a.b".to_vec(),
                mode: "100644",
                oid: blob,
            },
        ];
        tree_object_oid(&mut entries);
        let names: Vec<&[u8]> = entries.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(names, [&b"a.b"[..], b"a", b"a0"]);
    }

    #[cfg(unix)]
    mod fs {
        use super::*;
        use std::fs;
        use std::os::unix::fs::{symlink, PermissionsExt};

        fn tmp() -> tempfile::TempDir {
            tempfile::tempdir().expect("tempdir")
        }

        #[test]
        fn tree_empty_directory_is_empty_tree() {
            let dir = tmp();
            assert_eq!(tree_oid(dir.path()).unwrap(), EMPTY_TREE);
        }

        #[test]
        fn tree_directories_without_files_are_omitted() {
            let dir = tmp();
            fs::create_dir_all(dir.path().join("x/y/z")).unwrap();
            fs::create_dir_all(dir.path().join("w")).unwrap();
            assert_eq!(tree_oid(dir.path()).unwrap(), EMPTY_TREE);
        }

        #[test]
        fn tree_single_file_matches_git() {
            let dir = tmp();
            fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
            assert_eq!(
                tree_oid(dir.path()).unwrap(),
                "c7187e8fdb691b3a692e5f3f0bbcb6359e5046285225f18f9773d4fe54268c55"
            );
        }

        #[test]
        fn tree_git_sort_order_matches_git() {
            // git write-tree for: a.b (empty file), a/x (empty file), a0 (empty file).
            let dir = tmp();
            fs::write(dir.path().join("a.b"), "").unwrap();
            fs::create_dir(dir.path().join("a")).unwrap();
            fs::write(dir.path().join("a/x"), "").unwrap();
            fs::write(dir.path().join("a0"), "").unwrap();
            assert_eq!(
                tree_oid(dir.path()).unwrap(),
                "c663b7a4eb41fd929ac790ff5d2633fe59faff70c59bf60e614175f019d8b828"
            );
        }

        #[test]
        fn tree_skips_dot_git_everywhere_and_dot_elench_at_top() {
            let dir = tmp();
            let base = tree_oid(dir.path()).unwrap();
            fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
            fs::write(dir.path().join(".git/HEAD"), "ref").unwrap();
            fs::create_dir(dir.path().join(".elench")).unwrap();
            fs::write(dir.path().join(".elench/state"), "x").unwrap();
            fs::create_dir(dir.path().join("sub")).unwrap();
            fs::write(dir.path().join("sub/.git"), "gitdir: elsewhere").unwrap();
            assert_eq!(tree_oid(dir.path()).unwrap(), base);
            // `.elench` below the top level is ordinary content.
            fs::create_dir(dir.path().join("sub/.elench")).unwrap();
            fs::write(dir.path().join("sub/.elench/state"), "x").unwrap();
            assert_ne!(tree_oid(dir.path()).unwrap(), base);
        }

        #[test]
        fn tree_only_owner_exec_bit_counts() {
            let dir = tmp();
            let f = dir.path().join("f");
            fs::write(&f, "x").unwrap();
            fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
            let plain = tree_oid(dir.path()).unwrap();
            fs::set_permissions(&f, fs::Permissions::from_mode(0o655)).unwrap();
            assert_eq!(tree_oid(dir.path()).unwrap(), plain);
            fs::set_permissions(&f, fs::Permissions::from_mode(0o744)).unwrap();
            let exec = tree_oid(dir.path()).unwrap();
            assert_ne!(exec, plain);
            fs::set_permissions(&f, fs::Permissions::from_mode(0o700)).unwrap();
            assert_eq!(tree_oid(dir.path()).unwrap(), exec);
        }

        #[test]
        fn tree_symlinks_are_not_followed() {
            let dir = tmp();
            // Dangling link, and a link to its own directory (a cycle).
            symlink("nowhere", dir.path().join("dangling")).unwrap();
            symlink(".", dir.path().join("self")).unwrap();
            let oid = tree_oid(dir.path()).unwrap();
            let mut entries = vec![
                Entry {
                    name: b"dangling".to_vec(),
                    mode: "120000",
                    oid: object_oid("blob", b"nowhere"),
                },
                Entry {
                    name: b"self".to_vec(),
                    mode: "120000",
                    oid: object_oid("blob", b"."),
                },
            ];
            assert_eq!(oid, hex::encode(tree_object_oid(&mut entries)));
        }

        #[test]
        fn tree_root_may_be_a_symlink_to_a_directory() {
            let dir = tmp();
            fs::create_dir(dir.path().join("real")).unwrap();
            fs::write(dir.path().join("real/hello.txt"), "hello\n").unwrap();
            symlink("real", dir.path().join("link")).unwrap();
            assert_eq!(
                tree_oid(&dir.path().join("link")).unwrap(),
                tree_oid(&dir.path().join("real")).unwrap()
            );
        }

        #[test]
        fn tree_non_utf8_names_are_hashed_as_bytes() {
            use std::ffi::OsStr;
            use std::os::unix::ffi::OsStrExt;
            let dir = tmp();
            let name = OsStr::from_bytes(b"bad\xffname");
            if fs::write(dir.path().join(name), "").is_err() {
                eprintln!("skipped: file system rejects non-UTF-8 names");
                return;
            }
            let mut entries = vec![Entry {
                name: b"bad\xffname".to_vec(),
                mode: "100644",
                oid: object_oid("blob", b""),
            }];
            assert_eq!(
                tree_oid(dir.path()).unwrap(),
                hex::encode(tree_object_oid(&mut entries))
            );
        }

        #[test]
        fn tree_errors_name_the_path() {
            let dir = tmp();
            let file = dir.path().join("file");
            fs::write(&file, "").unwrap();
            match tree_oid(&file) {
                Err(TreeError::NotADirectory { path }) => assert_eq!(path, file),
                other => panic!("expected NotADirectory, got {other:?}"),
            }
            let missing = dir.path().join("missing");
            match tree_oid(&missing) {
                Err(e @ TreeError::Io { .. }) => {
                    assert!(e.to_string().contains("missing"), "{e}");
                }
                other => panic!("expected Io, got {other:?}"),
            }
        }

        #[test]
        fn tree_unreadable_directory_is_an_error_naming_it() {
            let dir = tmp();
            let locked = dir.path().join("locked");
            fs::create_dir(&locked).unwrap();
            fs::write(locked.join("f"), "").unwrap();
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
            let enforced = fs::read_dir(&locked).is_err();
            let result = tree_oid(dir.path());
            fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
            if !enforced {
                eprintln!("skipped: permissions are not enforced (running as root?)");
                return;
            }
            match result {
                Err(TreeError::Io { path, .. }) => assert_eq!(path, locked),
                other => panic!("expected Io error, got {other:?}"),
            }
        }

        #[test]
        fn tree_deep_nesting_does_not_overflow() {
            let dir = tmp();
            // Deep enough to hurt a recursive walk with big frames, yet
            // within PATH_MAX for the absolute paths used.
            let mut path = dir.path().to_path_buf();
            for _ in 0..1000 {
                path.push("d");
            }
            fs::create_dir_all(&path).unwrap();
            fs::write(path.join("leaf"), "").unwrap();
            let oid = tree_oid(dir.path()).unwrap();
            assert_eq!(oid.len(), 64);
            assert_ne!(oid, EMPTY_TREE);
        }
    }
}
