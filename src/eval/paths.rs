//! Confinement of predicate paths to the tree under check.
//!
//! A path in a predicate is relative and `/`-separated. It may not be absolute and may not
//! contain `..`; symbolic links met on the way are followed only while they stay inside the
//! tree (a link to an absolute target, or one whose `..` climbs above the tree, is refused).
//! What the tree id leaves out is invisible here too: `.git` at any depth and `.elench` at
//! the top, plus any path the caller hides (a store or key that happens to sit in the tree),
//! and any file that is a secret the caller names (the harness key), whatever its name: the
//! same file (a hard link) or the same bytes (a copy).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How many symbolic links one path may pass through (as the kernel's limit, roughly).
const MAX_LINKS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{0:?} is absolute; predicate paths are relative to the tree")]
    Absolute(String),
    #[error("{0:?} contains `..`; predicate paths may not leave the tree")]
    Parent(String),
    #[error("{0:?} contains a NUL byte")]
    Nul(String),
    #[error("{path:?} passes through a symbolic link that leads out of the tree ({link})")]
    SymlinkEscape { path: String, link: String },
    #[error("{0:?} passes through more than 40 symbolic links")]
    TooManyLinks(String),
    #[error("{path:?}: {message}")]
    Io { path: String, message: String },
}

/// A directory whose contents predicates may read.
#[derive(Debug, Clone)]
pub struct Tree {
    root: PathBuf,
    /// Relative paths (component lists) that are not part of the tree.
    hidden: Vec<Vec<OsString>>,
    /// Files never read or copied, under whatever name.
    secrets: Vec<Secret>,
}

/// A file that must not be seen from the tree under any name: its identity (device and
/// inode) and its bytes.
#[derive(Debug, Clone)]
struct Secret {
    id: (u64, u64),
    bytes: Vec<u8>,
}

/// A secret longer than this is known by its identity alone (a key file is a few hundred
/// bytes).
const SECRET_BYTES: u64 = 64 << 10;

impl Tree {
    pub fn new(root: &Path) -> Tree {
        Tree {
            root: root.to_path_buf(),
            hidden: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// Also hides every file that is `file` (wherever it is): a hard link to it, or a file
    /// holding the same bytes. Err when `file` cannot be read.
    pub fn hide_file(mut self, file: &Path) -> std::io::Result<Tree> {
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let f = std::fs::File::open(file)?;
        let m = f.metadata()?;
        let mut bytes = Vec::new();
        if m.len() <= SECRET_BYTES {
            f.take(SECRET_BYTES + 1).read_to_end(&mut bytes)?;
        }
        self.secrets.push(Secret {
            id: (m.dev(), m.ino()),
            bytes,
        });
        Ok(self)
    }

    /// Whether the regular file at `path` (its metadata `meta`, read without following a
    /// link) is a secret given to [`Tree::hide_file`]: the same file, or the same bytes.
    /// A file that cannot be read to compare counts as one (nothing is shown that might be).
    pub fn is_secret(&self, path: &Path, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() {
            return false;
        }
        let id = (meta.dev(), meta.ino());
        let same_size = |s: &Secret| !s.bytes.is_empty() && s.bytes.len() as u64 == meta.len();
        if self.secrets.iter().any(|s| s.id == id) {
            return true;
        }
        if !self.secrets.iter().any(same_size) {
            return false;
        }
        match std::fs::read(path) {
            Ok(b) => self.secrets.iter().any(|s| same_size(s) && s.bytes == b),
            Err(_) => true,
        }
    }

    /// Also hides `rel` (a path relative to the root) from every read.
    pub fn hide(mut self, rel: &Path) -> Tree {
        let parts: Vec<OsString> = rel
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_os_string()),
                _ => None,
            })
            .collect();
        if !parts.is_empty() {
            self.hidden.push(parts);
        }
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the entry at these components (relative to the root) is outside the tree's
    /// content: `.git` anywhere, `.elench` at the top, or a hidden path.
    pub fn is_hidden(&self, parts: &[OsString]) -> bool {
        if parts.iter().any(|p| p == ".git") {
            return true;
        }
        if parts.first().is_some_and(|p| p == ".elench") {
            return true;
        }
        self.hidden.iter().any(|h| parts.starts_with(h))
    }

    /// Resolves a predicate path to a real path inside the tree: `Ok(None)` when nothing is
    /// there (or what is there is hidden), an error when the path tries to leave the tree.
    pub fn resolve(&self, rel: &str) -> Result<Option<(PathBuf, Vec<OsString>)>, PathError> {
        let err_path = || rel.to_owned();
        if rel.as_bytes().contains(&0) {
            return Err(PathError::Nul(err_path()));
        }
        if rel.starts_with('/') {
            return Err(PathError::Absolute(err_path()));
        }
        let mut pending: VecDeque<OsString> = VecDeque::new();
        for part in rel.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(PathError::Parent(err_path())),
                p => pending.push_back(OsString::from(p)),
            }
        }
        let mut stack: Vec<OsString> = Vec::new();
        let mut links = 0usize;
        while let Some(part) = pending.pop_front() {
            if part == ".." {
                // Only a symbolic link's target brings `..` here; it climbs from where the
                // link was, and never above the root.
                if stack.pop().is_none() {
                    return Err(PathError::SymlinkEscape {
                        path: err_path(),
                        link: "a link climbs above the tree".to_owned(),
                    });
                }
                continue;
            }
            stack.push(part);
            if self.is_hidden(&stack) {
                return Ok(None);
            }
            let real = self.real(&stack);
            let meta = match std::fs::symlink_metadata(&real) {
                Ok(m) => m,
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    return Ok(None)
                }
                Err(e) => {
                    return Err(PathError::Io {
                        path: err_path(),
                        message: e.to_string(),
                    })
                }
            };
            if meta.file_type().is_symlink() {
                links += 1;
                if links > MAX_LINKS {
                    return Err(PathError::TooManyLinks(err_path()));
                }
                let target = std::fs::read_link(&real).map_err(|e| PathError::Io {
                    path: err_path(),
                    message: e.to_string(),
                })?;
                let shown = || PathError::SymlinkEscape {
                    path: err_path(),
                    link: format!("{} -> {}", real.display(), target.display()),
                };
                if target.is_absolute() {
                    return Err(shown());
                }
                stack.pop();
                // The target's components replace the link, in front of what is left.
                let parts: Vec<&[u8]> = target
                    .as_os_str()
                    .as_bytes()
                    .split(|&b| b == b'/')
                    .filter(|c| !c.is_empty() && *c != b".")
                    .collect();
                for c in parts.into_iter().rev() {
                    pending.push_front(OsStr::from_bytes(c).to_os_string());
                }
                continue;
            }
            if !pending.is_empty() && !meta.is_dir() {
                return Ok(None);
            }
            if pending.is_empty() && self.is_secret(&real, &meta) {
                return Ok(None);
            }
        }
        Ok(Some((self.real(&stack), stack)))
    }

    fn real(&self, parts: &[OsString]) -> PathBuf {
        let mut p = self.root.clone();
        for c in parts {
            p.push(c);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (crate::scratch::ScratchDir, Tree) {
        let s = crate::scratch::ScratchDir::new("elench-paths");
        let r = s.path().join("t");
        std::fs::create_dir_all(r.join("src/deep")).unwrap();
        std::fs::create_dir_all(r.join(".git")).unwrap();
        std::fs::create_dir_all(r.join(".elench")).unwrap();
        std::fs::write(r.join("src/a.rs"), "a").unwrap();
        std::fs::write(r.join(".git/config"), "x").unwrap();
        std::fs::write(r.join(".elench/FORMAT"), "x").unwrap();
        std::fs::write(s.path().join("outside.txt"), "secret").unwrap();
        symlink("../outside.txt", r.join("up")).unwrap();
        symlink("/etc/passwd", r.join("abs")).unwrap();
        symlink("src", r.join("srclink")).unwrap();
        symlink("../a.rs", r.join("src/deep/back")).unwrap();
        symlink("../../..", r.join("src/deep/climb")).unwrap();
        symlink("loop", r.join("loop")).unwrap();
        let t = Tree::new(&r);
        (s, t)
    }

    fn found(t: &Tree, p: &str) -> bool {
        t.resolve(p).unwrap().is_some()
    }

    #[test]
    fn plain_paths_resolve_inside_the_tree() {
        let (_s, t) = tree();
        assert!(found(&t, "src/a.rs"));
        assert!(found(&t, "./src//a.rs"));
        assert!(found(&t, ""));
        assert!(!found(&t, "src/missing"));
        assert!(!found(&t, "src/a.rs/below_a_file"));
    }

    #[test]
    fn leaving_the_tree_is_refused() {
        let (_s, t) = tree();
        assert!(matches!(
            t.resolve("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            t.resolve("../outside.txt"),
            Err(PathError::Parent(_))
        ));
        assert!(matches!(t.resolve("src/../a"), Err(PathError::Parent(_))));
        assert!(matches!(
            t.resolve("up"),
            Err(PathError::SymlinkEscape { .. })
        ));
        assert!(matches!(
            t.resolve("abs"),
            Err(PathError::SymlinkEscape { .. })
        ));
        assert!(matches!(
            t.resolve("src/deep/climb/outside.txt"),
            Err(PathError::SymlinkEscape { .. })
        ));
        assert!(matches!(t.resolve("loop"), Err(PathError::TooManyLinks(_))));
        assert!(matches!(t.resolve("a\0b"), Err(PathError::Nul(_))));
    }

    #[test]
    fn links_that_stay_inside_are_followed() {
        let (_s, t) = tree();
        let (real, parts) = t.resolve("srclink/a.rs").unwrap().unwrap();
        assert_eq!(real, t.root().join("src/a.rs"));
        assert_eq!(parts, vec![OsString::from("src"), OsString::from("a.rs")]);
        let (real, _) = t.resolve("src/deep/back").unwrap().unwrap();
        assert_eq!(real, t.root().join("src/a.rs"));
    }

    #[test]
    fn a_secret_file_is_not_there_under_any_name() {
        let (s, t) = tree();
        let key = s.path().join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nabc\n").unwrap();
        let r = t.root().to_path_buf();
        std::fs::hard_link(&key, r.join("src/linked")).unwrap();
        std::fs::copy(&key, r.join("src/copied")).unwrap();
        // The same size, other bytes: an ordinary file.
        std::fs::write(
            r.join("src/same-size"),
            "-----BEGIN PRIVATE KEY-----\nabd\n",
        )
        .unwrap();
        symlink("linked", r.join("src/to-linked")).unwrap();
        let t = t.hide_file(&key).unwrap();
        for p in ["src/linked", "src/copied", "src/to-linked"] {
            assert!(!found(&t, p), "{p}");
        }
        assert!(found(&t, "src/same-size"));
        assert!(found(&t, "src/a.rs"));
    }

    #[test]
    fn what_the_tree_id_leaves_out_is_not_there() {
        let (_s, t) = tree();
        assert!(!found(&t, ".git/config"));
        assert!(!found(&t, ".elench/FORMAT"));
        let t = t.hide(Path::new("src/a.rs"));
        assert!(!found(&t, "src/a.rs"));
        assert!(!found(&t, "srclink/a.rs"));
    }
}
