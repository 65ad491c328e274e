//! Why an input was refused: a stable code, a message that names the field, and a JSON pointer.
//!
//! Every validation layer (envelope, statement, claim, keys) reports a [`Rejection`]. The codes
//! are part of the CLI contract (docs/output.md): agents branch on them, so a code is never
//! renamed. [`Code`] holds every code elench reports, each with its exit class and what to
//! do about it.

use std::fmt;

/// What a code does to the exit code of the command that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// The command exits with this code.
    Status(i32),
    /// 130 when stopped by SIGINT, 143 by SIGTERM.
    Signal,
    /// A warning: the command's exit code is what it would be without it.
    Unchanged,
    /// Listed inside the data of another failure (a problem `fsck` found, a violation of a
    /// conformance report), which is the one reported, with this exit code.
    Within(i32, Code),
}

impl fmt::Display for Exit {
    /// As the `exit` column of docs/errors.md gives it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Status(n) => write!(f, "{n}"),
            Exit::Signal => f.write_str("130 / 143"),
            Exit::Unchanged => f.write_str("unchanged"),
            Exit::Within(n, code) => write!(f, "{n} (`{code}`)"),
        }
    }
}

/// Declares [`Code`]: each code's variant, its UPPER_SNAKE name, its exit class and what to
/// do about it (`error.suggestion`).
///
/// A new code gets a row here and one in docs/errors.md, in the same place and with the same
/// exit class and "what to do" (links reduced to their text); `tests/it/docs.rs` says where
/// the two differ.
macro_rules! codes {
    ($( $variant:ident = $name:literal, $exit:expr, $suggestion:literal; )*) => {
        /// Every stable, UPPER_SNAKE code elench reports: errors, warnings, the problems `fsck`
        /// lists and the violations of a conformance report. docs/errors.md documents each,
        /// with the same exit class and suggestion (tests/docs.rs holds the two together).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $variant, )*
        }

        impl Code {
            /// Every code, in the order docs/errors.md lists them.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Code::$variant => $name, )*
                }
            }

            /// What reporting it does to the exit code.
            pub const fn exit(self) -> Exit {
                match self {
                    $( Code::$variant => $exit, )*
                }
            }

            /// What to do about it: `error.suggestion`, and the manual's "what to do".
            pub const fn suggestion(self) -> &'static str {
                match self {
                    $( Code::$variant => $suggestion, )*
                }
            }
        }
    };
}

codes! {
    // Errors
    BadJson = "BAD_JSON", Exit::Status(2),
        r#"Fix the text at the position given; write JSON with a JSON library, not by hand"#;
    BadEnvelope = "BAD_ENVELOPE", Exit::Status(2),
        r#"Produce the envelope with `elench sign`, or check the producer against the envelope format"#;
    BadSignature = "BAD_SIGNATURE", Exit::Status(2),
        r#"Re-sign the unaltered claim; if the signer is legitimate, trust its public key with `elench keys add`"#;
    UntrustedSigner = "UNTRUSTED_SIGNER", Exit::Status(2),
        r#"If the envelope is as it was signed and its signer should be trusted, trust the key with `elench keys add --role ROLE --name NAME KEY.pub`; else sign again with a key that is trusted and not retired; see `elench keys list`"#;
    UnsupportedPayloadType = "UNSUPPORTED_PAYLOAD_TYPE", Exit::Status(2),
        r#"Wrap the claim in an in-toto Statement (`elench sign` does)"#;
    BadStatement = "BAD_STATEMENT", Exit::Status(2),
        r#"Build the Statement as described in the envelope"#;
    UnsupportedPredicateType = "UNSUPPORTED_PREDICATE_TYPE", Exit::Status(2),
        r#"Use the elench claim predicate type; other attestations do not belong in this log"#;
    SubjectMismatch = "SUBJECT_MISMATCH", Exit::Status(2),
        r#"Put `{"gitTree": "<anchor.tree>"}` in the Statement's subject (`elench sign` does)"#;
    SchemaViolation = "SCHEMA_VIOLATION", Exit::Status(2),
        r#"Fix each field named by its pointer; see the claim format"#;
    DuplicateKey = "DUPLICATE_KEY", Exit::Status(2),
        r#"Remove the duplicate member; serialise with a JSON library, not by hand"#;
    IdMismatch = "ID_MISMATCH", Exit::Status(2),
        r#"Let `elench sign` compute the id, or recompute it as in the claim id"#;
    PredicateWithoutExpression = "PREDICATE_WITHOUT_EXPRESSION", Exit::Status(2),
        r#"Give an `elench-predicate-v1` expression, or use `"form": "annotation"` for prose"#;
    UnknownPredicateLanguage = "UNKNOWN_PREDICATE_LANGUAGE", Exit::Status(2),
        r#"Write the predicate in `elench-predicate-v1` (the predicate language)"#;
    PredicateParseError = "PREDICATE_PARSE_ERROR", Exit::Status(2),
        r#"Fix the expression at the position given; see the grammar"#;
    PredicateDigestMismatch = "PREDICATE_DIGEST_MISMATCH", Exit::Status(2),
        r#"Recompute the digest over the exact `source` bytes, or leave `digest` out"#;
    RoleViolation = "ROLE_VIOLATION", Exit::Status(2),
        r#"Sign with a key of the role named in who may sign what"#;
    TooLarge = "TOO_LARGE", Exit::Status(2),
        r#"Keep claims small; put large evidence in a file and cite its digest"#;
    BadKey = "BAD_KEY", Exit::Status(2),
        r#"Pass the right file: `--pub-out` of `elench keys generate` or `openssl pkey -pubout` for public keys"#;
    WeakKey = "WEAK_KEY", Exit::Status(2),
        r#"Generate a fresh key with `elench keys generate`"#;
    StdinTooLarge = "STDIN_TOO_LARGE", Exit::Status(2),
        r#"Write the input to a file and give it as `--input-file PATH` (or as the path in place of `-`); `add -` reads a bundle line by line and has no such cap"#;
    Unreadable = "IO_ERROR", Exit::Status(2),
        r#"Check the path and its permissions, then rerun"#;
    BadArguments = "BAD_ARGUMENTS", Exit::Status(2),
        r#"Read the message and `elench COMMAND --help`"#;
    InvalidAgentInput = "INVALID_AGENT_INPUT", Exit::Status(2),
        r#"Give the identifier exactly as elench showed it (`elench log`, `elench keys list`, `elench remote list`), not a path or a URL"#;
    AllRejected = "ALL_REJECTED", Exit::Status(2),
        r#"Fix the inputs named in `data.rejections`"#;
    AmbiguousId = "AMBIGUOUS_ID", Exit::Status(2),
        r#"Give more hex digits after `cl_`"#;
    NotFound = "NOT_FOUND", Exit::Status(5),
        r#"List what there is with `elench status --all` or `elench log`; check the id or prefix"#;
    KeyNotFound = "KEY_NOT_FOUND", Exit::Status(5),
        r#"List the keys with `elench keys list`"#;
    StoreNotFound = "STORE_NOT_FOUND", Exit::Status(4),
        r#"Run `elench init`, or point `--store` at the store"#;
    StoreInvalid = "STORE_INVALID", Exit::Status(4),
        r#"Check the path and permissions; run `elench fsck`"#;
    StoreReadOnly = "STORE_READ_ONLY", Exit::Status(4),
        r#"Copy the store somewhere writable, or run the command where the store can be written"#;
    StoreFormatTooNew = "STORE_FORMAT_TOO_NEW", Exit::Status(4),
        r#"Upgrade elench"#;
    StoreMigrationUnavailable = "STORE_MIGRATION_UNAVAILABLE", Exit::Status(4),
        r#"Migrate once with a build that has it: `cargo install elench --features layout1` (or `cargo run --release --features layout1 -- fsck --store PATH` in the source tree); every build opens the store afterwards"#;
    StoreCorrupt = "STORE_CORRUPT", Exit::Status(4),
        r#"Run `elench fsck`, then `elench fsck --repair` to quarantine from the first bad record on; pull the lost envelopes again from a remote or an export"#;
    IndexDamaged = "INDEX_DAMAGED", Exit::Status(4),
        r#"Run the command again: the next command rebuilds the index from the log into fresh files (`INDEX_REBUILT`); or run `elench reindex`"#;
    IndexUnavailable = "INDEX_UNAVAILABLE", Exit::Status(4),
        r#"Give elench more memory or address space and rerun"#;
    StoreBusy = "STORE_BUSY", Exit::Status(12),
        r#"Retry, or raise `--wait SECONDS`"#;
    FsckProblems = "FSCK_PROBLEMS", Exit::Status(4),
        r#"`elench reindex` rebuilds the index from the log; see the fsck problems below"#;
    BadCheckpoint = "BAD_CHECKPOINT", Exit::Status(2),
        r#"Pass the file `elench checkpoint -o FILE` wrote"#;
    ConfirmationRequired = "CONFIRMATION_REQUIRED", Exit::Status(2),
        r#"Pass `--confirm-destructive` (or `--yes`) to retire (it cannot be undone), or `--dry-run` to see what would happen"#;
    PartialFailure = "PARTIAL_FAILURE", Exit::Status(3),
        r#"Fix the inputs named in `data.rejections`; the accepted ones are stored. After a pull: trust the key with `elench keys add` if it should be trusted (the next pull offers them again); a `BAD_SIGNATURE` or junk stays refused"#;
    BinaryFile = "BINARY_FILE", Exit::Status(2),
        r#"Anchor a text file"#;
    RangeOutOfBounds = "RANGE_OUT_OF_BOUNDS", Exit::Status(2),
        r#"Give a range inside the file, or no range for the whole file"#;
    BadTree = "BAD_TREE", Exit::Status(2),
        r#"Point `--at` at the checkout to evaluate, or at a directory git commits; `--no-ignore` (where the command has it) hashes every file of an ignored one"#;
    RemoteNotFound = "REMOTE_NOT_FOUND", Exit::Status(5),
        r#"`elench remote list`; add it with `elench remote add NAME URL`"#;
    RemoteExists = "REMOTE_EXISTS", Exit::Status(2),
        r#"Choose another name, or keep the existing remote"#;
    GitNotFound = "GIT_NOT_FOUND", Exit::Status(4),
        r#"Install git"#;
    GitFailed = "GIT_FAILED", Exit::Status(12),
        r#"Check the URL and your access, then retry"#;
    RemoteUnreachable = "REMOTE_UNREACHABLE", Exit::Status(12),
        r#"Check that the remote is up and reachable from here (its address, the network, a firewall or VPN), then retry; `--connect-timeout SECONDS` gives it longer (`0`: no limit)"#;
    RemoteNotALog = "REMOTE_NOT_A_LOG", Exit::Status(2),
        r#"Whoever keeps the remote points the ref at a log commit again, or deletes it (`git update-ref -d refs/elench/log` in the remote); the next push writes a fresh log"#;
    PushRejected = "PUSH_REJECTED", Exit::Status(12),
        r#"Retry"#;
    PushRefused = "PUSH_REFUSED", Exit::Status(4),
        r#"Get write access to `refs/elench/log` on the remote (a token or key that may write; on GitHub Actions, `permissions: contents: write`), or have its hook or ref protection accept the ref; then push again"#;
    SyncBusy = "SYNC_BUSY", Exit::Status(12),
        r#"Retry when it has finished"#;
    RemoteRewound = "REMOTE_REWOUND", Exit::Status(3),
        r#"Someone moved the remote's log back or rewrote it: find out who (the remote's reflog, its access log); `elench push` writes the lost envelopes back (`sync` already did), and stores that pulled meanwhile see them on their next pull"#;
    PolicyUnpinned = "POLICY_UNPINNED", Exit::Status(2),
        r#"Pin your team's root public key with `elench trust pin ROOT.pub` (or `elench init --root-key ROOT.pub`), obtained from the team itself, never from the remote"#;
    PolicyRootUnpinned = "POLICY_ROOT_UNPINNED", Exit::Status(2),
        r#"If this is your team's chain, pin one of its root keys (`elench trust pin ROOT.pub`); else it is another team's policy"#;
    PolicyThreshold = "POLICY_THRESHOLD", Exit::Status(2),
        r#"Have more of the root keys named sign it: `elench trust sign POLICY --key ROOT.pem` adds a signature"#;
    PolicyPreviousMismatch = "POLICY_PREVIOUS_MISMATCH", Exit::Status(2),
        r#"Build the version from this chain (`elench trust sign trust.toml` takes `previous` from the policy in force)"#;
    PolicyChainMismatch = "POLICY_CHAIN_MISMATCH", Exit::Status(2),
        r#"It belongs to another chain: use your team's policies, or build this version on your chain"#;
    PolicyInvalid = "POLICY_INVALID", Exit::Status(2),
        r#"Fix the member named by the pointer; build policies with `elench trust sign trust.toml`"#;
    PolicyEquivocation = "POLICY_EQUIVOCATION", Exit::Status(2),
        r#"The root keys signed two different policies of one version: find out how (a compromised root key?), then publish the next version signed by the roots"#;
    CheckpointMismatch = "CHECKPOINT_MISMATCH", Exit::Status(3),
        r#"Someone wrote a checkpoint that does not describe the log beside it; push again with the log key to write a true one, and find out who wrote that one"#;
    NoCheckpoint = "NO_CHECKPOINT", Exit::Status(3),
        r#"Push with `--log-key` (and the witness policy) to write one; or pull without a witness policy if this remote is not witnessed"#;
    WitnessQuorum = "WITNESS_QUORUM", Exit::Status(3),
        r#"Check the witnesses named (up, reachable, trusting the log's key for this origin), then push again: a push asks the missing witnesses again, even with nothing new"#;
    GateFailed = "GATE_FAILED", Exit::Status(79),
        r#"Read `data.violations`: falsify, verify or accept the claims named, or change the policy; see the gate"#;
    BadPolicy = "BAD_POLICY", Exit::Status(2),
        r#"Fix the policy (policy format)"#;
    SandboxUnavailable = "SANDBOX_UNAVAILABLE", Exit::Status(4),
        r#"Install bubblewrap (`bwrap`), or pass `--no-sandbox` knowingly (records then say `hermeticity: none`)"#;
    Cancelled = "CANCELLED", Exit::Signal,
        r#"Rerun; re-adding what was already stored is a no-op"#;
    Timeout = "TIMEOUT", Exit::Status(10),
        r#"Rerun with a larger `--timeout SECONDS` (on `check`: `--command-timeout SECONDS`; `0` for none), or give the command less to do; re-adding what was already stored is a no-op"#;
    InputRequired = "INPUT_REQUIRED", Exit::Status(4),
        r#"Pass `--confirm-destructive` (or `--yes`) to go ahead, or `--dry-run` to see what it would do"#;
    CommandNotFound = "COMMAND_NOT_FOUND", Exit::Status(5),
        r#"List the commands with `elench manifest`"#;
    Internal = "INTERNAL", Exit::Status(1),
        r#"Report it with the command and its output"#;
    BadReport = "BAD_REPORT", Exit::Status(2),
        r#"Pass the report file the runner wrote"#;
    BadCaseList = "BAD_CASE_LIST", Exit::Status(2),
        r#"Pass the corpus's `manifest.json` or a plain list of case ids"#;
    UnknownReportFormat = "UNKNOWN_REPORT_FORMAT", Exit::Status(2),
        r#"Check that the file is the report and not something else"#;
    UnsoundReport = "UNSOUND_REPORT", Exit::Status(2),
        r#"Fix the runner that produced it; an unsound report attests nothing"#;
    NotAMeasurement = "NOT_A_MEASUREMENT", Exit::Status(4),
        r#"Run the corpus and attest the generated declaration"#;
    Inconclusive = "INCONCLUSIVE", Exit::Status(4),
        r#"Make the erroring cases runnable, then attest again"#;
    LevelIncomplete = "LEVEL_INCOMPLETE", Exit::Status(4),
        r#"Run the skipped checks, or attest a lower level with `--level`"#;
    BadCorpus = "BAD_CORPUS", Exit::Status(2),
        r#"Check the corpus directory against the corpus format"#;
    ConformanceCasesFailed = "CONFORMANCE_CASES_FAILED", Exit::Status(4),
        r#"Read `data.failed_cases` and `data.error_cases`"#;
    // Warnings
    MissingPremise = "MISSING_PREMISE", Exit::Unchanged,
        r#"Add the premise when you have it (until then `status` lists it in `missing_premises`); if the id was mistyped, make the claim again with the right one"#;
    DanglingReference = "DANGLING_REFERENCE", Exit::Unchanged,
        r#"Add the missing claim when you have it; until then `status` lists it as a missing premise"#;
    UnverifiedSignature = "UNVERIFIED_SIGNATURE", Exit::Unchanged,
        r#"Nothing, if the trusted signature is the one that matters; trust the other signer if it should count"#;
    DecidedByRevokedRecord = "DECIDED_BY_REVOKED_RECORD", Exit::Unchanged,
        r#"Review the claim; to disarm the record, falsify it (status)"#;
    HandMaintained = "HAND_MAINTAINED", Exit::Unchanged,
        r#"Prefer a generated declaration; `attest` refuses this one"#;
    TornTail = "TORN_TAIL", Exit::Unchanged,
        r#"Nothing; what was acknowledged is intact. Re-add the envelope if the producer did not see it acknowledged"#;
    SkippedUnsignedClaim = "SKIPPED_UNSIGNED_CLAIM", Exit::Unchanged,
        r#"Sign it with `elench sign CLAIM.json --key KEY.pem` and add the `.dsse` it writes"#;
    TrackedIgnored = "TRACKED_IGNORED", Exit::Unchanged,
        r#"Untrack them (`git rm --cached PATH`) or change the rule; or pass `--no-ignore` to count every file"#;
    RemoteConflict = "REMOTE_CONFLICT", Exit::Unchanged,
        r#"Find out who writes to the remote besides elench; nothing to do for the log"#;
    MemoryForgotten = "MEMORY_FORGOTTEN", Exit::Unchanged,
        r#"Nothing, if the remote's new history is the one to keep; the next exchange starts remembering again"#;
    ForeignStatement = "FOREIGN_STATEMENT", Exit::Unchanged,
        r#"Nothing"#;
    EmptyScope = "EMPTY_SCOPE", Exit::Unchanged,
        r#"Check the policy's `[scope]` and that the claims' anchors apply at this tree (`elench status --all --at DIR`)"#;
    NoContentDigest = "NO_CONTENT_DIGEST", Exit::Unchanged,
        r#"Fill the anchor with `elench sign --anchor PATH[:START-END]`, or paste the object `elench anchor` prints"#;
    IndexRebuilt = "INDEX_REBUILT", Exit::Unchanged,
        r#"Nothing; if it recurs, run `elench fsck` and check the disk"#;
    ResponseTruncated = "RESPONSE_TRUNCATED", Exit::Unchanged,
        r#"Run the command in `meta.truncation_hint` (the next page, or the same command with a larger cap)"#;
    PageCut = "PAGE_CUT", Exit::Unchanged,
        r#"Pass a larger `--limit` (up to 10,000), or `--cursor` for the next page; for a verdict over every claim use `elench gate`"#;
    CheckpointUnverified = "CHECKPOINT_UNVERIFIED", Exit::Unchanged,
        r#"Pass `--key PUB.pem`, the public key you expect to have signed it"#;
    PolicyWaiting = "POLICY_WAITING", Exit::Unchanged,
        r#"Add the missing version (`elench trust show` names it); the waiting one applies then"#;
    PolicyExpired = "POLICY_EXPIRED", Exit::Unchanged,
        r#"Have the root keys sign the next version with a later `expires` (`elench trust sign trust.toml`), then add or pull it"#;
    BadEnvironment = "BAD_ENVIRONMENT", Exit::Unchanged,
        r#"Set it to a valid value, or unset it"#;
    // fsck problems
    IndexDisagrees = "INDEX_DISAGREES", Exit::Within(4, Code::FsckProblems),
        r#"`elench reindex`"#;
    CheckpointSignature = "CHECKPOINT_SIGNATURE", Exit::Within(4, Code::FsckProblems),
        r#"Use the checkpoint file as it was written; check who signed it"#;
    // Conformance report violations
    DenominatorIntact = "DENOMINATOR_INTACT", Exit::Within(2, Code::UnsoundReport),
        r#"Count every case exactly once"#;
    EnumerationMissing = "ENUMERATION_MISSING", Exit::Within(2, Code::UnsoundReport),
        r#"Name every non-passing case"#;
    EnumerationLength = "ENUMERATION_LENGTH", Exit::Within(2, Code::UnsoundReport),
        r#"Make the list and the count agree"#;
    EnumerationDuplicate = "ENUMERATION_DUPLICATE", Exit::Within(2, Code::UnsoundReport),
        r#"List each case once"#;
    EnumerationOverlap = "ENUMERATION_OVERLAP", Exit::Within(2, Code::UnsoundReport),
        r#"Give each case one verdict"#;
    TotalMatchesCorpus = "TOTAL_MATCHES_CORPUS", Exit::Within(2, Code::UnsoundReport),
        r#"Run every case of the corpus"#;
    CaseNotInCorpus = "CASE_NOT_IN_CORPUS", Exit::Within(2, Code::UnsoundReport),
        r#"Check the corpus version the runner used"#;
    CheckStatusInvalid = "CHECK_STATUS_INVALID", Exit::Within(2, Code::UnsoundReport),
        r#"Use one of the three"#;
    PassWithFailures = "PASS_WITH_FAILURES", Exit::Within(2, Code::UnsoundReport),
        r#"A check with failures fails"#;
    FailWithoutFailures = "FAIL_WITHOUT_FAILURES", Exit::Within(2, Code::UnsoundReport),
        r#"List at least one failure"#;
    SkippedReason = "SKIPPED_REASON", Exit::Within(2, Code::UnsoundReport),
        r#"Give the reason exactly on skipped checks"#;
    SummaryMismatch = "SUMMARY_MISMATCH", Exit::Within(2, Code::UnsoundReport),
        r#"Compute the summary from the checks"#;
    LevelMismatch = "LEVEL_MISMATCH", Exit::Within(2, Code::UnsoundReport),
        r#"Compute levels from the checks"#;
    NotAResult = "NOT_A_RESULT", Exit::Within(2, Code::UnsoundReport),
        r#"Check the file"#;
    EnvelopeExitCode = "ENVELOPE_EXIT_CODE", Exit::Within(2, Code::UnsoundReport),
        r#"Fix the runner's exit code"#;
    EnvelopeOk = "ENVELOPE_OK", Exit::Within(2, Code::UnsoundReport),
        r#"`ok` is true exactly when the exit code is 0"#;
}

impl Code {
    /// The code of this name, if elench has one.
    pub fn from_name(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

/// A code travels as a `Code`; only its JSON is its name.
impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason an input was refused. `details` holds further violations of the same code
/// (a schema check reports every offending field, not only the first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Rejection {
    pub code: Code,
    pub message: String,
    pub pointer: Option<String>,
    pub details: Vec<Violation>,
}

/// One offending field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

impl Rejection {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Rejection {
            code,
            message: message.into(),
            pointer: None,
            details: Vec::new(),
        }
    }

    pub fn at(code: Code, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Rejection {
            code,
            message: message.into(),
            pointer: Some(pointer.into()),
            details: Vec::new(),
        }
    }

    /// Prefixes the pointer, for a rejection found inside a nested document
    /// (the claim sits at `/predicate` of the statement).
    pub fn within(mut self, prefix: &str) -> Self {
        self.pointer = self.pointer.map(|p| format!("{prefix}{p}"));
        for d in &mut self.details {
            d.pointer = format!("{prefix}{}", d.pointer);
        }
        self
    }
}
