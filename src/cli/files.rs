//! Files the CLI reads and writes: inputs (standard input only when the argument is `-`),
//! and outputs written atomically.

use super::failure::Failure;
use elench::error::{Code, Rejection};
use std::io::Read;
use std::path::Path;

/// The most a command reads whole from stdin unless `ELENCH_MAX_STDIN_BYTES` says otherwise:
/// a larger input goes in a file, whose path the command takes in place of `-`.
pub const DEFAULT_MAX_STDIN_BYTES: usize = 64 * 1024;

fn stdin_cap() -> usize {
    std::env::var("ELENCH_MAX_STDIN_BYTES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_STDIN_BYTES)
}

/// Reads at most `limit` bytes (one more is read to detect an oversized input, which is then
/// refused with TOO_LARGE rather than loaded whole). From stdin (`-`) at most the stdin cap
/// is read: more is STDIN_TOO_LARGE, and the input belongs in a file (a writer that fills a
/// pipe while its reader waits for the end is how pipelines deadlock).
pub fn read_limited(path: &str, limit: usize) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    let cap = limit as u64 + 1;
    let result = if path == "-" {
        let stdin_limit = stdin_cap();
        let result = std::io::stdin()
            .lock()
            .take(stdin_limit as u64 + 1)
            .read_to_end(&mut buf);
        if result.is_ok() && buf.len() > stdin_limit {
            return Err(Failure::Invalid {
                code: elench::error::Code::StdinTooLarge,
                message: format!(
                    "stdin holds more than {stdin_limit} bytes (ELENCH_MAX_STDIN_BYTES): write \
                     the input to a file and give it as --input-file PATH (or as the path in \
                     place of -)"
                ),
            });
        }
        result
    } else {
        std::fs::File::open(path).and_then(|f| f.take(cap).read_to_end(&mut buf))
    };
    result.map_err(|e| Failure::io(display_source(path), e))?;
    if buf.len() > limit {
        return Err(Failure::rejected(
            Rejection::new(
                Code::TooLarge,
                format!(
                    "{} is larger than the limit of {limit} bytes",
                    display_source(path)
                ),
            ),
            Some(display_source(path)),
        ));
    }
    Ok(buf)
}

pub use elench::ops::add::display_source;
pub use elench::ops::keys::{read_key_file, read_signing_key_file};

/// The one input of `sign` or `verify`: the path argument, or `--input-file PATH` (the CLI
/// Agent Spec's name for it; clap lets only one of them through). `-` is stdin either way.
pub fn one_input(
    positional: Option<String>,
    input_file: Option<String>,
) -> Result<String, Failure> {
    match (positional, input_file) {
        (Some(p), None) | (None, Some(p)) => Ok(p),
        (Some(_), Some(_)) => Err(Failure::usage(
            None,
            "give the input once: as the path argument or as --input-file PATH".into(),
        )),
        (None, None) => Err(Failure::usage(
            None,
            "no input: give its path (or - for stdin), or --input-file PATH".into(),
        )),
    }
}

/// Format names, which a path flag refuses: `-o json` is `--format json` mistyped, and
/// would otherwise leave a file named `json` and nothing to read.
const FORMAT_NAMES: [&str; 9] = [
    "json", "jsonl", "tsv", "text", "plain", "table", "id", "yaml", "csv",
];

/// The value of `-o`/`--output` (a file, or `-` where stdout may take the product): never a
/// bare format name (`./json` is a file named json).
pub fn output_path(s: &str) -> Result<String, String> {
    if FORMAT_NAMES.contains(&s) {
        return Err(format!(
            "{s:?} is a format name, not a file: to choose the format give --format {s}; for a \
             file of that name give ./{s}"
        ));
    }
    Ok(s.to_owned())
}

/// [`output_path`] for path-typed arguments.
pub fn output_path_buf(s: &str) -> Result<std::path::PathBuf, String> {
    output_path(s).map(std::path::PathBuf::from)
}

/// Writes a command's product (`-o -`) to stdout. A reader that stopped reading (`| head`)
/// is no failure: the rest is dropped and the command still succeeds, quietly.
pub fn product_to_stdout(bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::io("<stdout>", e)),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path` atomically (see `atomic_file`), naming the path on failure.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    elench::atomic_file::write(path, bytes).map_err(|e| Failure::io(path.display(), e))
}
