//! Argument values that parse themselves (clap value parsers): what a value must look like
//! is said once, where the argument is defined.

use std::time::Duration;

/// `--timeout`: non-negative seconds, fractions allowed.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!(
            "{s:?} is not between 0 (no limit) and 1000000000 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}
