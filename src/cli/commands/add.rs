//! `elench add FILE…|DIR|-`: verify envelopes and append the accepted ones to the log.
//!
//! Each envelope is judged on its own; one bad envelope never stops the others. Each accepted
//! one is stored in its own transaction and flushed before it is reported (on stderr, as
//! progress, for batches), so an acknowledged envelope is durable even if the batch is killed.
//! With `-` among the inputs the store is opened (and locked) only when the first envelope
//! arrives, so a slow producer does not keep other writers waiting.

use crate::cli::failure::Failure;
use crate::cli::files::display_source;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{Report, Warning};
use crate::cli::Globals;
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::ingest::verify_envelope;
use crate::keys::TrustSet;
use crate::store::{locate, Effect, Store};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Envelopes (.dsse, .json), bundles (.intoto.jsonl: one envelope a line), directories
    /// (searched recursively for those), or `-` for a bundle on stdin
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// Verify every envelope and report what would be added, without storing anything
    #[arg(long)]
    pub dry_run: bool,
}

/// Where one envelope came from.
struct Origin {
    source: String,
    line: Option<usize>,
}

struct Batch {
    root: PathBuf,
    wait: Duration,
    /// Opened on first need; with it, the trust set read from it.
    store: Option<Store>,
    trust: TrustSet,
    claims: Vec<Value>,
    rejections: Vec<Value>,
    warnings: Vec<Warning>,
    created: usize,
    noop: usize,
    /// Unsigned claim JSONs found in directories and left alone.
    skipped: usize,
    last_rejection: Option<Failure>,
    progress: bool,
    interrupt: Interrupt,
    /// `--dry-run`: judge, never store; the ids this run would have created so far.
    dry_run: Option<std::collections::HashSet<String>>,
}

pub fn run(a: AddArgs, g: &Globals) -> Result<Report, Failure> {
    let root = locate(g.store.as_deref())?;
    Store::check(&root)?;
    let files = expand_inputs(&a.inputs)?;
    let mut batch = Batch {
        root,
        wait: Duration::from_secs(g.wait),
        store: None,
        trust: TrustSet::default(),
        claims: Vec::new(),
        rejections: Vec::new(),
        warnings: Vec::new(),
        created: 0,
        noop: 0,
        skipped: 0,
        last_rejection: None,
        progress: files.len() > 1 || files.iter().any(|f| f.bundle),
        interrupt: Interrupt::install(),
        dry_run: a.dry_run.then(Default::default),
    };
    // Files are there already: take the store now, so that waiting for it comes first.
    if files.iter().all(|f| f.path != "-") {
        batch.open()?;
    }
    // A store failure part-way still reports what was stored before it.
    let mut fatal = None;
    for f in &files {
        if batch.interrupt.received().is_some() {
            break;
        }
        if let Err(e) = batch.read_input(f) {
            fatal = Some(e);
            break;
        }
    }
    let as_of = match batch.store.as_ref().map(Store::count).transpose() {
        Ok(n) => n,
        Err(e) => {
            fatal.get_or_insert(e.into());
            None
        }
    };
    batch.finish(as_of, fatal)
}

/// One file to read, whether it is a bundle, and whether it was found in a directory
/// (where a claim JSON that is not yet signed is skipped rather than rejected).
struct InputFile {
    path: String,
    bundle: bool,
    from_dir: bool,
}

fn is_bundle_name(name: &str) -> bool {
    name.ends_with(".intoto.jsonl") || name.ends_with(".jsonl")
}

fn expand_inputs(inputs: &[String]) -> Result<Vec<InputFile>, Failure> {
    let mut out = Vec::new();
    for input in inputs {
        if input == "-" {
            out.push(InputFile {
                path: "-".into(),
                bundle: true,
                from_dir: false,
            });
            continue;
        }
        let p = Path::new(input);
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            found.sort();
            for f in found {
                let name = f.to_string_lossy().into_owned();
                out.push(InputFile {
                    bundle: is_bundle_name(&name),
                    path: name,
                    from_dir: true,
                });
            }
        } else {
            out.push(InputFile {
                bundle: is_bundle_name(input),
                path: input.clone(),
                from_dir: false,
            });
        }
    }
    Ok(out)
}

/// Envelope and bundle files under `dir`, recursively (symlinked directories not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| Failure::io(dir.display(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Failure::io(dir.display(), e))?;
        let path = entry.path();
        let ft = entry
            .file_type()
            .map_err(|e| Failure::io(path.display(), e))?;
        if ft.is_dir() {
            walk(&path, out)?;
        } else {
            let name = path.to_string_lossy();
            if name.ends_with(".dsse") || name.ends_with(".json") || is_bundle_name(&name) {
                out.push(path);
            }
        }
    }
    Ok(())
}

impl Batch {
    /// Opens the store (waiting up to --wait for it) and reads its trusted keys, once.
    fn open(&mut self) -> Result<&Store, Failure> {
        if self.store.is_none() {
            let store = Store::open(&self.root, self.wait)?;
            self.trust = store.trust_set()?;
            self.store = Some(store);
        }
        self.store
            .as_ref()
            .ok_or_else(|| Failure::Internal("the store did not stay open".into()))
    }

    fn read_input(&mut self, f: &InputFile) -> Result<(), Failure> {
        let source = display_source(&f.path);
        if f.path == "-" {
            // Stdin may block for as long as its writer likes: read it on a thread, so that
            // a signal is answered while waiting.
            let (tx, rx) = std::sync::mpsc::sync_channel::<LineRead>(64);
            std::thread::spawn(move || {
                let mut lines = Lines::new(Box::new(std::io::stdin()));
                while let Some(item) = lines.next_line() {
                    if tx.send(item).is_err() {
                        break;
                    }
                }
            });
            loop {
                if self.interrupt.received().is_some() {
                    return Ok(());
                }
                match rx.recv_timeout(std::time::Duration::from_millis(100)) {
                    Ok(item) => self.line(item, &source)?,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                }
            }
        }
        let file = match std::fs::File::open(&f.path) {
            Ok(file) => file,
            Err(e) => {
                self.reject_io(&source, None, &e.to_string());
                return Ok(());
            }
        };
        if !f.bundle {
            let mut bytes = Vec::new();
            if let Err(e) = file
                .take(MAX_ENVELOPE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
            {
                self.reject_io(&source, None, &e.to_string());
                return Ok(());
            }
            // The size is the file's, whitespace included: what `verify` would refuse, `add`
            // refuses too.
            if bytes.len() > MAX_ENVELOPE_BYTES {
                self.reject(too_large(), Origin { source, line: None });
                return Ok(());
            }
            let bytes = bytes.trim_ascii();
            if f.from_dir {
                if let Some(role) = unsigned_claim_role(bytes) {
                    self.skipped += 1;
                    self.warnings.push(Warning::new(
                        "SKIPPED_UNSIGNED_CLAIM",
                        format!(
                            "skipped {source}: a claim, not a signed envelope; {}",
                            sign_hint(&source, role)
                        ),
                    ));
                    return Ok(());
                }
            }
            return self.one(bytes, Origin { source, line: None });
        }
        let mut lines = Lines::new(Box::new(file));
        while let Some(item) = lines.next_line() {
            if self.interrupt.received().is_some() {
                break;
            }
            self.line(item, &source)?;
        }
        Ok(())
    }

    /// Handles one line of a bundle.
    fn line(&mut self, item: LineRead, source: &str) -> Result<(), Failure> {
        let origin = |line| Origin {
            source: source.to_owned(),
            line: Some(line),
        };
        match item {
            LineRead::Envelope { line, bytes } => self.one(&bytes, origin(line)),
            LineRead::TooLarge { line } => {
                self.reject(too_large(), origin(line));
                Ok(())
            }
            LineRead::Failed { line, message } => {
                self.reject_io(source, Some(line), &message);
                Ok(())
            }
        }
    }

    /// Judges and stores one envelope.
    fn one(&mut self, bytes: &[u8], origin: Origin) -> Result<(), Failure> {
        self.open()?;
        let accepted = match verify_envelope(bytes, &self.trust) {
            Ok(a) => a,
            Err(mut r) => {
                if r.code == Code::BadEnvelope {
                    if let Some(role) = unsigned_claim_role(bytes) {
                        r.message = format!(
                            "this is a claim, not a signed envelope; {}",
                            sign_hint(&origin.source, role)
                        );
                    }
                }
                self.reject(r, origin);
                return Ok(());
            }
        };
        let claim = &accepted.claim;
        // Checked before the add (a claim may name itself only by forgery, which ingest
        // refused), reported only for a claim this add created.
        let dry_run = self.dry_run.is_some();
        let store = self.open()?;
        let mut dangling = Vec::new();
        for (field, ids) in [("target", &claim.target), ("dependsOn", &claim.depends_on)] {
            for other in ids {
                if !store.contains(other)? {
                    dangling.push(Warning::new(
                        "DANGLING_REFERENCE",
                        format!(
                            "{} names {other} in {field}, which the store has not seen yet",
                            claim.id
                        ),
                    ));
                }
            }
        }
        let effect = if !dry_run {
            store.add(&accepted, bytes)?
        } else {
            let present = store.contains(&claim.id)?;
            let first_in_run = self
                .dry_run
                .as_mut()
                .is_some_and(|seen| seen.insert(claim.id.clone()));
            if present || !first_in_run {
                Effect::Noop
            } else {
                Effect::Created
            }
        };
        let word = match effect {
            Effect::Created => {
                self.created += 1;
                self.warnings.append(&mut dangling);
                "created"
            }
            Effect::Noop => {
                self.noop += 1;
                "noop"
            }
        };
        if self.progress {
            let would = if self.dry_run.is_some() {
                "would be "
            } else {
                ""
            };
            eprintln!("{would}{word} {} {}", claim.id, origin_text(&origin));
        }
        self.warnings
            .extend(super::verify::ingest_warnings(&accepted));
        self.claims.push(json!({
            "id": claim.id,
            "effect": word,
            "source": origin.source,
            "line": origin.line,
        }));
        Ok(())
    }

    fn reject(&mut self, r: Rejection, origin: Origin) {
        if self.progress {
            eprintln!(
                "rejected {} {}: {}",
                origin_text(&origin),
                r.code,
                r.message
            );
        }
        self.rejections.push(json!({
            "source": origin.source,
            "line": origin.line,
            "code": r.code.as_str(),
            "message": r.message,
            "pointer": r.pointer,
        }));
        self.last_rejection = Some(Failure::Rejected {
            rejection: r,
            input: Some(origin.source),
            line: origin.line,
        });
    }

    fn reject_io(&mut self, source: &str, line: Option<usize>, message: &str) {
        let r = Rejection::new(Code::Unreadable, format!("cannot read {source}: {message}"));
        self.reject(
            r,
            Origin {
                source: source.to_owned(),
                line,
            },
        );
    }

    fn finish(self, as_of: Option<u64>, fatal: Option<Failure>) -> Result<Report, Failure> {
        let rejected = self.rejections.len();
        let accepted = self.created + self.noop;
        let failure = if fatal.is_some() {
            fatal
        } else if let Some(signal) = self.interrupt.received() {
            Some(Failure::Interrupted { signal })
        } else if accepted == 0 && rejected == 0 && self.skipped > 0 {
            Some(Failure::Usage(format!(
                "no envelopes found in the inputs, only {} unsigned claim(s): sign each with \
                 `elench sign CLAIM.json --key KEY.pem` (see the warnings), then add the .dsse files",
                self.skipped
            )))
        } else if accepted == 0 && rejected == 0 {
            Some(Failure::Usage("no envelopes found in the inputs".into()))
        } else if accepted == 0 && rejected == 1 {
            self.last_rejection
        } else if accepted == 0 {
            Some(Failure::AllRejected(format!(
                "all {rejected} envelopes were rejected; see data.rejections"
            )))
        } else if rejected > 0 {
            Some(Failure::Partial(format!(
                "{rejected} of {} envelopes were rejected (see data.rejections); the other {accepted} {}",
                accepted + rejected,
                if self.dry_run.is_some() { "would be stored" } else { "are stored" }
            )))
        } else {
            None
        };
        let mut text = format!(
            "{}{} created, {} already present, {} rejected{}\n",
            if self.dry_run.is_some() {
                "dry run, nothing stored: would be "
            } else {
                ""
            },
            self.created,
            self.noop,
            rejected,
            if self.skipped > 0 {
                format!(", {} unsigned claim(s) skipped", self.skipped)
            } else {
                String::new()
            }
        );
        // A batch already listed each envelope on stderr as it was acknowledged.
        let listed = if self.progress {
            &[][..]
        } else {
            &self.claims[..]
        };
        for c in listed {
            text.push_str(&format!(
                "  {} {} {}\n",
                c["effect"].as_str().unwrap_or_default(),
                c["id"].as_str().unwrap_or_default(),
                c["source"].as_str().unwrap_or_default()
            ));
        }
        for r in &self.rejections {
            let line = r["line"]
                .as_u64()
                .map(|l| format!(" line {l}"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  rejected {}{line}: {} {}\n",
                r["source"].as_str().unwrap_or_default(),
                r["code"].as_str().unwrap_or_default(),
                r["message"].as_str().unwrap_or_default()
            ));
        }
        Ok(Report {
            data: json!({
                "created": self.created,
                "noop": self.noop,
                "rejected": rejected,
                "skipped": self.skipped,
                "dry_run": self.dry_run.is_some(),
                "claims": self.claims,
                "rejections": self.rejections,
                "as_of": as_of,
            }),
            text,
            warnings: self.warnings,
            partial: accepted > 0 && rejected > 0,
            failure,
            ..Report::default()
        })
    }
}

/// When `bytes` are a claim's JSON rather than an envelope, the role of key that may sign
/// it (from its kind and origin, as the authority rules have it).
pub(crate) fn unsigned_claim_role(bytes: &[u8]) -> Option<&'static str> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let obj = v.as_object()?;
    if obj.contains_key("payloadType") || obj.contains_key("signatures") {
        return None;
    }
    if !obj.contains_key("kind") || !(obj.contains_key("origin") || obj.contains_key("assertion")) {
        return None;
    }
    let kind = obj.get("kind").and_then(Value::as_str);
    let origin = v.pointer("/origin/kind").and_then(Value::as_str);
    Some(match (kind, origin) {
        (Some("verification"), _) | (_, Some("harness-observed")) => "harness",
        (Some("residue-acceptance"), _) | (_, Some("human-asserted")) => "human",
        (_, Some("agent-asserted")) => "agent (or harness)",
        _ => "harness, agent or human (as its origin.kind needs)",
    })
}

/// What to do with an unsigned claim.
pub(crate) fn sign_hint(source: &str, role: &str) -> String {
    format!(
        "sign it first with `elench sign {source} --key KEY.pem`, using a {role} key, \
         then add the .dsse file it writes"
    )
}

fn origin_text(o: &Origin) -> String {
    match o.line {
        Some(l) => format!("{}:{l}", o.source),
        None => o.source.clone(),
    }
}

fn too_large() -> Rejection {
    Rejection::new(
        Code::TooLarge,
        format!("envelope is larger than the limit of {MAX_ENVELOPE_BYTES} bytes (1 MiB)"),
    )
}

/// One line of a bundle, as read.
enum LineRead {
    Envelope { line: usize, bytes: Vec<u8> },
    TooLarge { line: usize },
    Failed { line: usize, message: String },
}

/// Reads a bundle line by line, never holding more than the size limit of one line; blank
/// lines are skipped, surrounding whitespace trimmed.
struct Lines {
    reader: BufReader<Box<dyn Read + Send>>,
    line: usize,
    done: bool,
}

impl Lines {
    fn new(reader: Box<dyn Read + Send>) -> Lines {
        Lines {
            reader: BufReader::new(reader),
            line: 0,
            done: false,
        }
    }

    fn next_line(&mut self) -> Option<LineRead> {
        let mut buf = Vec::new();
        while !self.done {
            buf.clear();
            self.line += 1;
            let line = self.line;
            // At most the limit, plus the newline, plus one byte to tell an oversized line.
            let cap = MAX_ENVELOPE_BYTES as u64 + 2;
            let n = match (&mut self.reader).take(cap).read_until(b'\n', &mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(LineRead::Failed {
                        line,
                        message: e.to_string(),
                    });
                }
            };
            if n == 0 {
                self.done = true;
                return None;
            }
            let content = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let content = content.strip_suffix(b"\r").unwrap_or(content);
            if content.len() > MAX_ENVELOPE_BYTES {
                if !buf.ends_with(b"\n") {
                    if let Err(e) = skip_line(&mut self.reader) {
                        self.done = true;
                        return Some(LineRead::Failed {
                            line,
                            message: e.to_string(),
                        });
                    }
                }
                return Some(LineRead::TooLarge { line });
            }
            let trimmed = content.trim_ascii();
            if !trimmed.is_empty() {
                return Some(LineRead::Envelope {
                    line,
                    bytes: trimmed.to_vec(),
                });
            }
        }
        None
    }
}

fn skip_line<R: BufRead>(r: &mut R) -> std::io::Result<()> {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        let n = r.by_ref().take(64 * 1024).read_until(b'\n', &mut sink)?;
        if n == 0 || sink.ends_with(b"\n") {
            return Ok(());
        }
    }
}
