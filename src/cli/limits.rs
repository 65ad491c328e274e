//! A command's time limit: its default, and the one the line (or `ELENCH_TIMEOUT`) sets.

use crate::cli::failure::ArgError;
use crate::cli::values::parse_seconds;
use std::time::Duration;

/// The time limit of a command run without `--timeout`: an hour for the commands whose run
/// time grows with their input (a bulk add, a check of many claims, fsck or reindex of a
/// large log, an export, an exchange with a remote, the conformance corpus), five minutes
/// for the rest, which answer in well under a second on a log of 100,000 claims.
pub fn default_timeout(command: &str) -> Duration {
    match command {
        "add" | "check" | "fsck" | "reindex" | "export" | "push" | "pull" | "sync"
        | "conformance run" => Duration::from_secs(3600),
        _ => Duration::from_secs(300),
    }
}

/// The whole command's time limit (`None`: none): `--command-timeout`, else `--timeout`
/// (except on `check`, where `--timeout` is the limit of one claim's evaluation), else
/// `ELENCH_TIMEOUT`, else the command's default.
pub fn command_limit(
    name: &str,
    timeout: Option<Duration>,
    command_timeout: Option<Duration>,
) -> Result<Option<Duration>, ArgError> {
    let timeout = if name == "check" { None } else { timeout };
    let chosen = match (command_timeout, timeout) {
        (Some(c), Some(t)) if c != t => {
            let given = c.as_secs_f64().to_string();
            return Err(ArgError::new(
                "--command-timeout",
                Some(&given),
                format!(
                    "--command-timeout ({} s) and --timeout ({} s) both set the time limit of \
                     `{name}`; give one",
                    c.as_secs_f64(),
                    t.as_secs_f64()
                ),
            ));
        }
        (Some(c), _) => Some(c),
        (None, Some(t)) => Some(t),
        // ELENCH_TIMEOUT bounds one-shot commands; a server lives as long as its client
        // keeps it, so only a limit on its own command line ends it.
        (None, None) if name == "mcp" => None,
        (None, None) => match std::env::var("ELENCH_TIMEOUT") {
            Err(std::env::VarError::NotPresent) => None,
            Ok(v) if v.trim().is_empty() => None,
            Ok(v) => Some(parse_seconds(&v).map_err(|e| {
                ArgError::new(
                    "ELENCH_TIMEOUT",
                    Some(&v),
                    format!("ELENCH_TIMEOUT: {e}; unset it or give seconds"),
                )
            })?),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(ArgError::new(
                    "ELENCH_TIMEOUT",
                    None,
                    "ELENCH_TIMEOUT is not text: unset it or give seconds",
                ))
            }
        },
    };
    Ok(match chosen {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
        // A server lives as long as its client keeps it: no limit unless one is given.
        None if name == "mcp" => None,
        None => Some(default_timeout(name)),
    })
}
