//! `elench add FILE…|DIR|-`: verify envelopes and append the accepted ones to the log.
//!
//! Each envelope is judged on its own; one bad envelope never stops the others. Each accepted
//! one is stored in its own transaction and flushed before it is reported (on stderr, as
//! progress, for batches), so an acknowledged envelope is durable even if the batch is killed.

use super::common::open_store;
use crate::cli::failure::Failure;
use crate::cli::input::display_source;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{Report, Warning};
use crate::cli::Globals;
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::ingest::verify_envelope;
use crate::keys::TrustSet;
use crate::store::{Effect, Store};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Envelopes (.dsse, .json), bundles (.intoto.jsonl: one envelope a line), directories
    /// (searched recursively for those), or `-` for a bundle on stdin
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// Where one envelope came from.
struct Origin {
    source: String,
    line: Option<usize>,
}

struct Batch<'a> {
    store: &'a Store,
    trust: TrustSet,
    claims: Vec<Value>,
    rejections: Vec<Value>,
    warnings: Vec<Warning>,
    created: usize,
    noop: usize,
    last_rejection: Option<Failure>,
    progress: bool,
    interrupt: Interrupt,
}

pub fn run(a: AddArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    let trust = store.trust_set()?;
    let files = expand_inputs(&a.inputs)?;
    let mut batch = Batch {
        store: &store,
        trust,
        claims: Vec::new(),
        rejections: Vec::new(),
        warnings: Vec::new(),
        created: 0,
        noop: 0,
        last_rejection: None,
        progress: files.len() > 1 || files.iter().any(|f| f.bundle),
        interrupt: Interrupt::install(),
    };
    for f in &files {
        if batch.interrupt.received().is_some() {
            break;
        }
        batch.read_input(f)?;
    }
    batch.finish(store.count()?)
}

/// One file to read, and whether it is a bundle.
struct InputFile {
    path: String,
    bundle: bool,
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
                });
            }
        } else {
            out.push(InputFile {
                bundle: is_bundle_name(input),
                path: input.clone(),
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

impl Batch<'_> {
    fn read_input(&mut self, f: &InputFile) -> Result<(), Failure> {
        let source = display_source(&f.path);
        let reader: Box<dyn Read> = if f.path == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            match std::fs::File::open(&f.path) {
                Ok(file) => Box::new(file),
                Err(e) => {
                    self.reject_io(&source, None, &e.to_string());
                    return Ok(());
                }
            }
        };
        if !f.bundle {
            let mut bytes = Vec::new();
            if let Err(e) = reader
                .take(MAX_ENVELOPE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
            {
                self.reject_io(&source, None, &e.to_string());
                return Ok(());
            }
            let trimmed = bytes.trim_ascii();
            return self.one(trimmed, Origin { source, line: None });
        }
        let mut lines = BufReader::new(reader);
        let mut line_no = 0;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            line_no += 1;
            // Read at most the size limit plus one byte of a line, then skip the rest.
            let n = match (&mut lines)
                .take(MAX_ENVELOPE_BYTES as u64 + 2)
                .read_until(b'\n', &mut buf)
            {
                Ok(n) => n,
                Err(e) => {
                    self.reject_io(&source, Some(line_no), &e.to_string());
                    return Ok(());
                }
            };
            if n == 0 || self.interrupt.received().is_some() {
                break;
            }
            if !buf.ends_with(b"\n") && n as u64 == MAX_ENVELOPE_BYTES as u64 + 2 {
                let _ = skip_line(&mut lines);
            }
            let line = buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            self.one(
                line,
                Origin {
                    source: source.clone(),
                    line: Some(line_no),
                },
            )?;
        }
        Ok(())
    }

    /// Judges and stores one envelope.
    fn one(&mut self, bytes: &[u8], origin: Origin) -> Result<(), Failure> {
        let accepted = match verify_envelope(bytes, &self.trust) {
            Ok(a) => a,
            Err(r) => {
                self.reject(r, origin);
                return Ok(());
            }
        };
        let claim = &accepted.claim;
        for (field, ids) in [("target", &claim.target), ("dependsOn", &claim.depends_on)] {
            for other in ids {
                if !self.store.contains(other)? {
                    self.warnings.push(Warning::new(
                        "DANGLING_REFERENCE",
                        format!(
                            "{} names {other} in {field}, which the store has not seen yet",
                            claim.id
                        ),
                    ));
                }
            }
        }
        let effect = self.store.add(&accepted, bytes)?;
        let (word, counter) = match effect {
            Effect::Created => ("created", &mut self.created),
            Effect::Noop => ("noop", &mut self.noop),
        };
        *counter += 1;
        let source = origin_text(&origin);
        if self.progress {
            eprintln!("{word} {} {source}", claim.id);
        }
        self.claims
            .push(json!({"id": claim.id, "effect": word, "source": source}));
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
        let r = Rejection::new(
            Code::BadEnvelope,
            format!("cannot read {source}: {message}"),
        );
        self.reject(
            r,
            Origin {
                source: source.to_owned(),
                line,
            },
        );
    }

    fn finish(self, as_of: u64) -> Result<Report, Failure> {
        let rejected = self.rejections.len();
        let accepted = self.created + self.noop;
        let failure = if let Some(signal) = self.interrupt.received() {
            Some(Failure::Interrupted { signal })
        } else if accepted == 0 && rejected == 0 {
            Some(Failure::Usage("no envelopes found in the inputs".into()))
        } else if accepted == 0 && rejected == 1 {
            self.last_rejection
        } else if accepted == 0 {
            Some(Failure::AllRejected(format!(
                "all {rejected} envelopes were rejected; see data.rejections"
            )))
        } else {
            None
        };
        let mut text = format!(
            "{} created, {} already present, {} rejected ({} claims in the log)\n",
            self.created, self.noop, rejected, as_of
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

fn origin_text(o: &Origin) -> String {
    match o.line {
        Some(l) => format!("{}:{l}", o.source),
        None => o.source.clone(),
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
