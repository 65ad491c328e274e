//! Content identity of a directory: the "elench tree OID", and the one list of the files
//! that make a directory's tree.
//!
//! [`list`] says which files of a directory are in its tree, and [`Listing::oid`] computes
//! the object id that git (with SHA-256 object format) would give them, i.e. exactly what
//!
//! ```text
//! git init --object-format=sha256 && git add -A && git write-tree
//! ```
//!
//! prints when run inside that directory, or, for a directory inside a git work tree, the
//! subtree git would commit there:
//!
//! ```text
//! git rev-parse "$(git add -A && git write-tree):SUB"
//! ```
//!
//! Claims can therefore name a source tree by an id that anyone can reproduce with stock
//! git, without elench, and without the directory having to be a git checkout at all.
//! `tree`, `anchor`, `claim`, `status --at`, `gate --at` and `check` (its evaluation view and
//! its sandbox copy) all take their files from [`list`], so they see one set.
//!
//! Which files (with [`Selection::Committed`], the default):
//!
//! * what `git add -A` would commit: a path that the ignore rules exclude is left out, and so
//!   is everything under an excluded directory (a negation cannot re-include a file whose
//!   directory is excluded, as in git). The rules are, highest precedence first: the
//!   `.gitignore` files of the path's directory and of every directory above it up to the
//!   top of the work tree DIR lies in (the nearest decides; within a file the last matching
//!   line decides; negations, `/` anchors, `**` and trailing-`/` directory patterns as git
//!   reads them, each file's patterns relative to its own directory), then that work tree's
//!   `.git/info/exclude` (the common git directory's, for a linked work tree), then the
//!   user's global excludes file (`core.excludesFile` in the user's git configuration, else
//!   `$XDG_CONFIG_HOME/git/ignore` or `~/.config/git/ignore`); the last two are matched from
//!   the work tree's top;
//! * the work tree DIR lies in is found as git finds it, from DIR with its symbolic links
//!   resolved: the nearest directory at or above it holding `.git` (a git directory with a
//!   `HEAD`, or a `gitdir:` file). Outside any work tree (or inside a `.git` directory) only
//!   the `.gitignore` files at or below DIR count, as for a repository made in DIR, and the
//!   global excludes are matched from DIR;
//! * when the rules leave DIR itself out, or a directory between it and the work tree's top,
//!   git commits nothing of it: there is no tree, and [`list`] answers
//!   [`TreeError::Ignored`] naming the rule, never an empty tree;
//! * elench never reads git's index: a file that git already tracks but that the rules
//!   exclude is left out, which is what `git add -A` in a fresh repository gives;
//! * a `.gitignore` that is a symbolic link is not read (git refuses them too);
//! * with [`Selection::All`] (`--no-ignore`) no rule is read and every file counts (this
//!   matches `git add -A --force`).
//!
//! How they are hashed, following git's rules:
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
//! * `core.excludesFile` set in the repository's own `.git/config`, and `.gitignore` lines
//!   that are not UTF-8 (the rest of that file is then not read);
//! * git's environment (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`) and its
//!   refusal to look for `.git` across a file system boundary: the work tree is the nearest
//!   `.git` above DIR, wherever it is;
//! * `.gitattributes`, `core.autocrlf` and clean filters are not applied:
//!   blobs are the bytes on disk;
//! * a subdirectory that is itself a git repository (which git would record
//!   as a submodule entry) is hashed as a plain directory, minus its `.git`;
//! * names that `git add` refuses (e.g. `.GIT`, or NTFS-reserved names under
//!   git's default `core.protectNTFS`) are hashed instead of rejected;
//! * Unicode names are used as stored (no macOS-style precomposition).
//!
//! Only Unix is supported (git's modes come from Unix permission bits); on
//! other platforms [`list`] returns [`TreeError::Unsupported`].
//!
//! The walk is iterative, so very deep trees cannot overflow the stack, and
//! every error names the path it concerns. The files are hashed on every core; a
//! regular file is opened without following a link (one found where the walk saw a
//! file means it changed), and [`Listing::ids_keeping`] keeps the bytes it hashed, so
//! that what reads the files next does not read them again.

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
    /// An ignore file's patterns cannot be put together into a matcher.
    #[error("cannot use the ignore rules in {}: {message}", path.display())]
    Rules {
        /// The ignore file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The directory lies in a git work tree whose ignore rules leave it out (it, or a
    /// directory between it and the work tree's top): git commits nothing of it, so it has
    /// no tree.
    #[error(
        "{} is left out of what git commits: the ignore rule `{rule}` in {} matches {}, so \
         there is no tree to hash; read it with --no-ignore (where the command has it) to \
         hash every file, or change the rule",
        path.display(),
        rules_file.display(),
        excluded.display()
    )]
    Ignored {
        /// The directory that was asked about.
        path: PathBuf,
        /// The directory the rule matched: `path` itself or one above it.
        excluded: PathBuf,
        /// The rule as written.
        rule: String,
        /// The file the rule is in.
        rules_file: PathBuf,
    },
    /// Tree OIDs are only computed on Unix.
    #[error("tree OIDs are only supported on Unix: {}", path.display())]
    Unsupported {
        /// The path that was asked about.
        path: PathBuf,
    },
}

impl TreeError {
    /// The path the error concerns.
    pub fn path(&self) -> &Path {
        match self {
            TreeError::NotADirectory { path }
            | TreeError::Io { path, .. }
            | TreeError::Changed { path }
            | TreeError::Rules { path, .. }
            | TreeError::Ignored { path, .. }
            | TreeError::Unsupported { path } => path,
        }
    }
}

/// Which files of a directory make its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// What `git add -A` would commit: ignore rules honoured (the default).
    #[default]
    Committed,
    /// Every file, ignore rules or not (`--no-ignore`; `git add -A --force`).
    All,
}

impl Selection {
    /// `--no-ignore` given or not.
    pub fn from_no_ignore(no_ignore: bool) -> Selection {
        if no_ignore {
            Selection::All
        } else {
            Selection::Committed
        }
    }
}

/// What a tree entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A symbolic link (recorded as its target, never followed).
    Symlink,
}

/// One file of a tree.
#[derive(Debug, Clone)]
pub struct TreeFile {
    /// Its path relative to the directory (never empty, no `.` or `..`).
    pub rel: PathBuf,
    /// Its path on disk (the directory joined with `rel`).
    pub path: PathBuf,
    /// Regular file or symbolic link.
    pub kind: FileKind,
}

/// The files of a directory's tree, and what the ignore rules left out.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Every file of the tree, sorted by path (component by component, bytewise).
    pub files: Vec<TreeFile>,
    /// The topmost paths (relative to the directory) that the ignore rules left out: an
    /// excluded directory stands for everything under it. `.git` and `.elench` are not
    /// listed here. Empty with [`Selection::All`].
    pub ignored: Vec<PathBuf>,
}

/// The files of the tree of `dir` (see the module documentation for which).
pub fn list(dir: &Path, selection: Selection) -> Result<Listing, TreeError> {
    #[cfg(unix)]
    {
        unix::list(dir, selection)
    }
    #[cfg(not(unix))]
    {
        let _ = selection;
        Err(TreeError::Unsupported {
            path: dir.to_path_buf(),
        })
    }
}

impl Listing {
    /// The git SHA-256 tree id of these files, 64 lowercase hex chars.
    pub fn oid(&self) -> Result<String, TreeError> {
        #[cfg(unix)]
        {
            unix::hash_listing(&self.files, None, None).map(hex::encode)
        }
        #[cfg(not(unix))]
        {
            Err(TreeError::Unsupported {
                path: PathBuf::new(),
            })
        }
    }

    /// The tree id and the object id of every file and directory in it, from one pass of
    /// hashing (what [`Listing::oid`] computes, kept by path).
    pub fn ids(&self) -> Result<TreeIds, TreeError> {
        self.ids_with(None)
    }

    /// [`Listing::ids`], also keeping the bytes each regular file was hashed from, by
    /// position in [`Listing::files`] (None for a link, and for a file larger than 8 MiB or
    /// read after 256 MiB were kept): what reads the files next (anchor resolution) takes
    /// them from here instead of reading them again.
    pub fn ids_keeping(&self) -> Result<(TreeIds, Kept), TreeError> {
        let mut kept = Vec::new();
        let ids = self.ids_with(Some(&mut kept))?;
        Ok((ids, kept))
    }

    fn ids_with(&self, kept: Option<&mut Kept>) -> Result<TreeIds, TreeError> {
        #[cfg(unix)]
        {
            let mut entries = std::collections::HashMap::with_capacity(self.files.len() * 2);
            let root = unix::hash_listing(&self.files, Some(&mut entries), kept)?;
            entries.insert(Vec::new(), (MODE_TREE, root));
            Ok(TreeIds {
                oid: hex::encode(root),
                entries,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = kept;
            Err(TreeError::Unsupported {
                path: PathBuf::new(),
            })
        }
    }

    /// Whether a regular file of the tree has this path (`/`-separated, relative).
    pub fn has_file(&self, rel: &str) -> bool {
        let rel = Path::new(rel);
        self.files
            .binary_search_by(|f| f.rel.as_path().cmp(rel))
            .is_ok_and(|i| self.files[i].kind == FileKind::File)
    }
}

/// The bytes a tree's hashing kept of its files, by position in [`Listing::files`] (None
/// where it kept none: a link, a file too large or read past the budget).
pub type Kept = Vec<Option<Vec<u8>>>;

/// A tree's id and the git object id of each of its entries, by path: what a predicate's
/// inputs are read from (`anchor::inputs`), so judging a claim at a tree never reads a file
/// a second time.
#[derive(Debug, Clone)]
pub struct TreeIds {
    oid: String,
    /// `/`-separated path (empty for the root) → git mode and object id.
    entries: std::collections::HashMap<Vec<u8>, (&'static str, Oid)>,
}

impl TreeIds {
    /// The tree's id (64 lowercase hex).
    pub fn oid(&self) -> &str {
        &self.oid
    }

    /// The entry at `path` (`/`-separated, relative, no `.` or empty parts; `""` is the
    /// root): its git mode (`100644`, `100755`, `120000`, `40000`) and object id.
    pub fn entry(&self, path: &str) -> Option<(&'static str, [u8; 32])> {
        self.entries.get(path.as_bytes()).copied()
    }

    /// A tree given by its entries, for tests of what reads it: `files` maps paths to their
    /// bytes; directories and the tree id are computed as git would.
    pub fn of_files(files: &[(&str, &[u8])]) -> TreeIds {
        let mut entries = std::collections::HashMap::new();
        let mut dirs: std::collections::BTreeMap<Vec<u8>, Vec<Entry>> = Default::default();
        dirs.insert(Vec::new(), Vec::new());
        let mut sorted: Vec<&(&str, &[u8])> = files.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (path, bytes) in sorted {
            let oid = object_oid("blob", bytes);
            entries.insert(path.as_bytes().to_vec(), ("100644", oid));
            let parts: Vec<&str> = path.split('/').collect();
            for i in 1..parts.len() {
                dirs.entry(parts[..i].join("/").into_bytes()).or_default();
            }
            let parent = parts[..parts.len() - 1].join("/").into_bytes();
            dirs.entry(parent).or_default().push(Entry {
                name: parts[parts.len() - 1].as_bytes().to_vec(),
                mode: "100644",
                oid,
            });
        }
        // Deepest directories first, so each is finished before its parent takes it.
        let mut names: Vec<Vec<u8>> = dirs.keys().cloned().collect();
        names.sort_by_key(|n| {
            std::cmp::Reverse(n.iter().filter(|&&b| b == b'/').count() + usize::from(!n.is_empty()))
        });
        let mut root = [0u8; 32];
        for name in names {
            let mut kids = dirs.remove(&name).unwrap_or_default();
            let oid = tree_object_oid(&mut kids);
            entries.insert(name.clone(), (MODE_TREE, oid));
            if name.is_empty() {
                root = oid;
                continue;
            }
            let (parent, leaf) = match name.iter().rposition(|&b| b == b'/') {
                Some(i) => (name[..i].to_vec(), name[i + 1..].to_vec()),
                None => (Vec::new(), name.clone()),
            };
            dirs.entry(parent).or_default().push(Entry {
                name: leaf,
                mode: MODE_TREE,
                oid,
            });
        }
        TreeIds {
            oid: hex::encode(root),
            entries,
        }
    }
}

/// The files git's index in `dir` (when `dir` is a git work tree) tracks although this
/// listing leaves them out as ignored: git keeps committing a tracked file whatever the
/// rules say, so the commit holds files this tree does not. Empty when there are none or
/// when no index can be read.
pub fn tracked_but_ignored(dir: &Path, listing: &Listing) -> Vec<PathBuf> {
    #[cfg(unix)]
    {
        unix::tracked_but_ignored(dir, &listing.ignored).unwrap_or_default()
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, listing);
        Vec::new()
    }
}

/// Computes the git SHA-256 tree id of the directory `dir`, ignore rules honoured (see the
/// module documentation for the exact rules).
///
/// Returns 64 lowercase hex chars.
pub fn tree_oid(dir: &Path) -> Result<String, TreeError> {
    tree_oid_with(dir, Selection::Committed)
}

/// [`tree_oid`] with a choice of files.
pub fn tree_oid_with(dir: &Path, selection: Selection) -> Result<String, TreeError> {
    list(dir, selection)?.oid()
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
mod unix;

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
        fn tree_listing_names_the_topmost_ignored_paths() {
            let dir = tmp();
            let d = dir.path();
            fs::create_dir_all(d.join("build/a")).unwrap();
            fs::create_dir_all(d.join("src")).unwrap();
            fs::write(d.join(".gitignore"), "build/\n*.o\n!keep.o\n").unwrap();
            fs::write(d.join("build/a/b.txt"), "").unwrap();
            fs::write(d.join("src/x.o"), "").unwrap();
            fs::write(d.join("src/keep.o"), "").unwrap();
            fs::write(d.join("src/x.rs"), "").unwrap();
            let names = |l: &Listing| -> Vec<String> {
                l.files
                    .iter()
                    .map(|f| f.rel.display().to_string())
                    .collect()
            };
            let l = list(d, Selection::Committed).unwrap();
            assert_eq!(names(&l), [".gitignore", "src/keep.o", "src/x.rs"]);
            assert_eq!(
                l.ignored,
                [PathBuf::from("build"), PathBuf::from("src/x.o")]
            );
            assert!(l.has_file("src/x.rs"));
            assert!(!l.has_file("src/x.o"));
            assert!(!l.has_file("build/a/b.txt"));
            assert_eq!(l.oid().unwrap(), tree_oid(d).unwrap());
            let all = list(d, Selection::All).unwrap();
            assert!(all.ignored.is_empty());
            assert_eq!(all.files.len(), 5);
            assert_ne!(all.oid().unwrap(), l.oid().unwrap());
        }

        #[test]
        fn tree_index_paths_reads_entries_and_never_panics_on_damage() {
            use super::super::unix::index_paths;
            // A version 2 index by hand: two entries, SHA-1 ids, NUL-padded to 8 bytes.
            let mut data = b"DIRC\0\0\0\x02\0\0\0\x02".to_vec();
            for name in [&b"a/b"[..], b"gen/out.rs"] {
                let start = data.len();
                data.extend_from_slice(&[0u8; 40 + 20]);
                data.extend_from_slice(&(name.len() as u16).to_be_bytes());
                data.extend_from_slice(name);
                let len = data.len() - start;
                data.resize(start + ((len + 8) & !7), 0);
            }
            assert_eq!(
                index_paths(&data, 20),
                Some(vec![b"a/b".to_vec(), b"gen/out.rs".to_vec()])
            );
            for cut in 0..data.len() {
                let _ = index_paths(&data[..cut], 20);
            }
            let mut x: u32 = 7;
            for _ in 0..2000 {
                let mut damaged = data.clone();
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let at = (x as usize >> 4) % damaged.len();
                damaged[at] ^= (x >> 24) as u8 | 1;
                let _ = index_paths(&damaged, 20);
                let _ = index_paths(&damaged, 32);
            }
            // A count larger than the file could hold is refused before any allocation.
            let mut huge = data.clone();
            huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
            assert_eq!(index_paths(&huge, 20), None);
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
