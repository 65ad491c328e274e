//! Keys: one [`KeyPair`] type for every test, and [`Keys`], one key of each role and a
//! stranger.

use super::cli::elench;
use ed25519_dalek::{SigningKey, VerifyingKey};
use elench::keys::{keyid, public_key_pem, read_signing_key_pem, signing_key_pem};
use elench::keys::{Role, TrustSet, TrustedKey};
use std::path::{Path, PathBuf};

/// A signing key with the role and name a store trusts it under. `private` and `public`
/// are its PEM files (PKCS#8, SubjectPublicKeyInfo); both are empty paths until the files
/// are written ([`KeyPair::write_files`]), which only tests that hand keys to the CLI need.
#[derive(Debug, Clone)]
pub struct KeyPair {
    pub role: String,
    pub name: String,
    pub signing: SigningKey,
    pub keyid: String,
    pub private: PathBuf,
    pub public: PathBuf,
}

impl KeyPair {
    /// A key in memory, with no files.
    pub fn in_memory(role: &str, name: &str, signing: SigningKey) -> KeyPair {
        KeyPair {
            role: role.to_owned(),
            name: name.to_owned(),
            keyid: keyid(&signing.verifying_key()),
            signing,
            private: PathBuf::new(),
            public: PathBuf::new(),
        }
    }

    /// The key, with its files `NAME.key` and `NAME.pub` written into `dir`.
    pub fn write_files(&self, dir: &Path) -> KeyPair {
        std::fs::create_dir_all(dir).unwrap();
        let private = dir.join(format!("{}.key", self.name));
        let public = dir.join(format!("{}.pub", self.name));
        std::fs::write(&private, signing_key_pem(&self.signing).unwrap()).unwrap();
        std::fs::write(&public, public_key_pem(&self.verifying_key()).unwrap()).unwrap();
        KeyPair {
            private,
            public,
            ..self.clone()
        }
    }

    pub fn signing_key(&self) -> SigningKey {
        self.signing.clone()
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The key as a store trusts it.
    pub fn trusted(&self) -> TrustedKey {
        let role: Role = self.role.parse().expect("a key's role is a role");
        TrustedKey::new(role, &self.name, self.verifying_key()).expect("a valid trusted key")
    }

    /// `ROLE:NAME:PUB.pem`, the value of a `--trust` argument.
    pub fn trust_spec(&self) -> String {
        assert!(
            !self.public.as_os_str().is_empty(),
            "key {} has no files yet: write them with KeyPair::write_files",
            self.name
        );
        format!("{}:{}:{}", self.role, self.name, self.public.display())
    }
}

/// Makes a key with `role` and `name` in `dir` through `elench keys generate --pub-out`
/// (files `NAME.key` and `NAME.pub`).
pub fn make_key(dir: &Path, role: &str, name: &str) -> KeyPair {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let (code, out) = elench(
        dir,
        &[
            "keys",
            "generate",
            "--role",
            role,
            "--name",
            name,
            "--out",
            private.to_str().unwrap(),
            "--pub-out",
            public.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "keys generate failed: {out}");
    let keyid = out["data"]["keyid"]
        .as_str()
        .expect("keys generate reports data.keyid")
        .to_owned();
    let pem = std::fs::read_to_string(&private).expect("private key file");
    let signing = read_signing_key_pem(&pem).expect("elench reads its own private keys");
    KeyPair {
        role: role.to_owned(),
        name: name.to_owned(),
        signing,
        keyid,
        private,
        public,
    }
}

/// Who signs: the key's role decides what it may say (docs/claims.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    Harness,
    Agent,
    Human,
    /// A key no store trusts.
    Stranger,
}

/// One key of each role, and a stranger (an agent key that no store made here trusts).
#[derive(Debug, Clone)]
pub struct Keys {
    pub harness: KeyPair,
    pub agent: KeyPair,
    pub human: KeyPair,
    pub stranger: KeyPair,
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new()
    }
}

impl Keys {
    /// Four keys in memory, made from fixed bytes so runs are reproducible, each named as
    /// its role (the stranger: `stranger`). No files until [`Keys::write_files`].
    pub fn new() -> Keys {
        let fixed = |role: &str, name: &str, byte: u8| {
            KeyPair::in_memory(role, name, SigningKey::from_bytes(&[byte; 32]))
        };
        Keys {
            harness: fixed("harness", "harness", 0x11),
            agent: fixed("agent", "agent", 0x22),
            human: fixed("human", "human", 0x33),
            stranger: fixed("agent", "stranger", 0x44),
        }
    }

    pub fn key(&self, s: Signer) -> &KeyPair {
        match s {
            Signer::Harness => &self.harness,
            Signer::Agent => &self.agent,
            Signer::Human => &self.human,
            Signer::Stranger => &self.stranger,
        }
    }

    /// The keys with the files of all four written into `dir`.
    pub fn write_files(&self, dir: &Path) -> Keys {
        Keys {
            harness: self.harness.write_files(dir),
            agent: self.agent.write_files(dir),
            human: self.human.write_files(dir),
            stranger: self.stranger.write_files(dir),
        }
    }

    /// The three keys a store trusts (not the stranger).
    pub fn trusted_pairs(&self) -> [&KeyPair; 3] {
        [&self.harness, &self.agent, &self.human]
    }

    /// The three trusted keys (the stranger is not among them).
    pub fn trusted(&self) -> Vec<TrustedKey> {
        self.trusted_pairs().map(KeyPair::trusted).to_vec()
    }

    pub fn trust_set(&self) -> TrustSet {
        TrustSet::new(self.trusted())
    }

    /// `--trust` arguments for the three trusted keys.
    pub fn trust_all(&self) -> Vec<String> {
        trust_args(&self.trusted_pairs())
    }
}

/// Makes a harness key `ci`, an agent key `bot` and a human key `alice` in `dir` through
/// `elench keys generate`, and a random stranger in memory (no files: a test that needs
/// them writes them with [`KeyPair::write_files`]).
pub fn make_keys(dir: &Path) -> Keys {
    Keys {
        harness: make_key(dir, "harness", "ci"),
        agent: make_key(dir, "agent", "bot"),
        human: make_key(dir, "human", "alice"),
        stranger: KeyPair::in_memory("agent", "stranger", elench::keys::generate_signing_key()),
    }
}

/// `["--trust", "ROLE:NAME:PUB.pem", …]` for each key.
pub fn trust_args(keys: &[&KeyPair]) -> Vec<String> {
    keys.iter()
        .flat_map(|k| ["--trust".to_owned(), k.trust_spec()])
        .collect()
}

/// A key of `role` and `name` whose 32 secret bytes are all `byte`, its PEM files written
/// into `dir`.
pub fn fixed_key(dir: &Path, role: &str, name: &str, byte: u8) -> KeyPair {
    KeyPair::in_memory(role, name, SigningKey::from_bytes(&[byte; 32])).write_files(dir)
}

/// Writes the trust policy source (TOML) `path`: policy `name`, the `extra` lines, a root of
/// `roots` with `threshold`, and `keys` by role, name and public key file.
pub fn write_trust_toml(
    path: &Path,
    name: &str,
    roots: &[&KeyPair],
    threshold: u64,
    keys: &[&KeyPair],
    extra: &str,
) {
    let roots: Vec<String> = roots
        .iter()
        .map(|k| format!("{:?}", k.public.to_str().unwrap()))
        .collect();
    let mut t = format!(
        "name = \"{name}\"\n{extra}\n[root]\nthreshold = {threshold}\nkeys = [{}]\n",
        roots.join(", ")
    );
    for k in keys {
        t.push_str(&format!(
            "[[key]]\nrole = {:?}\nname = {:?}\nfile = {:?}\n",
            k.role,
            k.name,
            k.public.to_str().unwrap()
        ));
    }
    std::fs::write(path, t).unwrap();
}
