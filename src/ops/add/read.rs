//! Where `add`'s envelopes come from: the inputs named (files, bundles, directories, stdin)
//! expanded into files, read on a thread of their own (a bundle line by line, never holding
//! more than one line's size limit), and handed to the operation in chunks.

use super::{GROUP, IDLE};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::ops::{Failure, Stop};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};

/// Where one envelope came from.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    pub(super) source: String,
    pub(super) line: Option<usize>,
}

/// One input as read.
pub(super) enum Item {
    Envelope {
        origin: Origin,
        bytes: Vec<u8>,
        /// Where `bytes` start in the file, as lines and bytes (whitespace cut from the
        /// front, a bundle's earlier lines), so that a position in them is the file's.
        lead: (usize, usize),
        /// The whitespace cut from the end of a file holding one envelope: text that ends
        /// early is reported where serde_json reads its end in the whole file (as `verify`
        /// and `sign` report it), past that whitespace.
        trail: Vec<u8>,
    },
    Refused {
        origin: Origin,
        rejection: Rejection,
    },
    /// A claim JSON (not an envelope) found in a directory: left alone, with a hint.
    Skipped { message: String },
}

/// One envelope's bytes as an input: refused when too large, else trimmed of surrounding
/// whitespace (positions in it stay the file's).
fn envelope_item(origin: Origin, all: &[u8]) -> Item {
    // The size is the file's, whitespace included: what `verify` would refuse, `add`
    // refuses too.
    if all.len() > MAX_ENVELOPE_BYTES {
        return Item::Refused {
            origin,
            rejection: too_large(),
        };
    }
    let bytes = all.trim_ascii();
    let lead = crate::json::offset_of(&all[..all.len() - all.trim_ascii_start().len()]);
    let trail = all.trim_ascii_start()[bytes.len()..].to_vec();
    Item::Envelope {
        origin,
        bytes: bytes.to_vec(),
        lead,
        trail,
    }
}

/// The envelopes read so far, handed out in chunks that grow from FIRST_GROUP to GROUP.
pub(super) struct Input {
    pub(super) rx: Receiver<Item>,
    pub(super) group: usize,
    /// Every input has been read.
    pub(super) done: bool,
}

impl Input {
    /// Reads what is available: up to the current group size, ending early after IDLE
    /// without input. Empty only when the inputs are done or an interrupt came.
    pub(super) fn next_chunk(&mut self, stop: &dyn Stop) -> Vec<Item> {
        let mut chunk = Vec::new();
        while chunk.len() < self.group && !self.done {
            match self.rx.recv_timeout(IDLE) {
                Ok(item) => chunk.push(item),
                Err(RecvTimeoutError::Timeout) => {
                    if !chunk.is_empty() || stop.received().is_some() {
                        break;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => self.done = true,
            }
        }
        self.group = (self.group * 2).min(GROUP);
        chunk
    }

    /// The first chunk, once one arrives; `None` when there is none (or an interrupt came).
    pub(super) fn first_chunk(&mut self, stop: &dyn Stop) -> Option<Vec<Item>> {
        let chunk = self.next_chunk(stop);
        (!chunk.is_empty()).then_some(chunk)
    }
}

/// One file to read, whether it is a bundle, and whether it was found in a directory
/// (where a claim JSON that is not yet signed is skipped rather than rejected).
pub(super) struct InputFile {
    pub(super) path: String,
    pub(super) bundle: bool,
    pub(super) from_dir: bool,
}

fn is_bundle_name(name: &str) -> bool {
    name.ends_with(".intoto.jsonl") || name.ends_with(".jsonl")
}

pub(super) fn expand_inputs(inputs: &[String]) -> Result<Vec<InputFile>, Failure> {
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

/// Reads every input on a thread of its own (stdin may block as long as its writer likes),
/// sending items as they are read.
pub(super) fn spawn_reader(files: Vec<InputFile>) -> Receiver<Item> {
    let (tx, rx) = sync_channel::<Item>(4 * GROUP);
    std::thread::spawn(move || {
        for f in files {
            if !read_input(&f, &mut |item| tx.send(item).is_ok()) {
                return;
            }
        }
    });
    rx
}

/// Reads one input, handing each item to `send`; false when the receiver is gone.
fn read_input(f: &InputFile, send: &mut dyn FnMut(Item) -> bool) -> bool {
    let source = display_source(&f.path);
    let io_refusal = |line: Option<usize>, message: &str| Item::Refused {
        origin: Origin {
            source: source.clone(),
            line,
        },
        rejection: Rejection::new(Code::Unreadable, format!("cannot read {source}: {message}")),
    };
    let reader: Box<dyn Read + Send> = if f.path == "-" {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(&f.path) {
            Ok(file) => Box::new(file),
            Err(e) => return send(io_refusal(None, &e.to_string())),
        }
    };
    if !f.bundle {
        let mut bytes = Vec::new();
        if let Err(e) = reader
            .take(MAX_ENVELOPE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
        {
            return send(io_refusal(None, &e.to_string()));
        }
        let origin = Origin { source, line: None };
        if f.from_dir && bytes.len() <= MAX_ENVELOPE_BYTES {
            if let Some(role) = unsigned_claim_role(bytes.trim_ascii()) {
                return send(Item::Skipped {
                    message: format!(
                        "skipped {}: a claim, not a signed envelope; {}",
                        origin.source,
                        sign_hint(&origin.source, role)
                    ),
                });
            }
        }
        return send(envelope_item(origin, &bytes));
    }
    let mut lines = Lines::new(reader);
    while let Some(item) = lines.next_line() {
        let origin = |line| Origin {
            source: source.clone(),
            line: Some(line),
        };
        let item = match item {
            LineRead::Envelope {
                line,
                bytes,
                indent,
            } => Item::Envelope {
                origin: origin(line),
                bytes,
                lead: (line - 1, indent),
                trail: Vec::new(),
            },
            LineRead::TooLarge { line } => Item::Refused {
                origin: origin(line),
                rejection: too_large(),
            },
            LineRead::Failed { line, message } => io_refusal(Some(line), &message),
        };
        if !send(item) {
            return false;
        }
    }
    true
}

/// When `bytes` are a claim's JSON rather than an envelope, the role of key that may sign
/// it (from its kind and origin, as the authority rules have it).
pub fn unsigned_claim_role(bytes: &[u8]) -> Option<&'static str> {
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
pub fn sign_hint(source: &str, role: &str) -> String {
    let a = if role.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!(
        "sign it first with `elench sign {source} ‹-key› KEY.pem`, using {a} {role} key, \
         then add the .dsse file it writes"
    )
}

/// How an input is named in output: `-` is `<stdin>`.
pub fn display_source(path: &str) -> String {
    if path == "-" {
        "<stdin>".to_owned()
    } else {
        path.to_owned()
    }
}

pub(super) fn origin_text(o: &Origin) -> String {
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
    /// `indent`: the bytes of whitespace cut from the front of the line.
    Envelope {
        line: usize,
        bytes: Vec<u8>,
        indent: usize,
    },
    TooLarge {
        line: usize,
    },
    Failed {
        line: usize,
        message: String,
    },
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
                    indent: content.len() - content.trim_ascii_start().len(),
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
