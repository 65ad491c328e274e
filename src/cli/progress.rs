//! Progress on stderr, only on a terminal: the bar of `fsck` and `reindex`, the spinner for
//! rebuilds the store starts on open, and the list of what is still drawn, which the report
//! clears before it is written.

use indicatif::ProgressDrawTarget;
use std::time::Duration;

/// Progress bars and spinners on stderr that are still drawn. Each clears itself when its
/// work ends; a command stopped in the middle of that work (SIGINT, the time limit) is
/// answered while its bar still stands, so the report clears what is left first.
static PROGRESS: std::sync::Mutex<Vec<indicatif::WeakProgressBar>> =
    std::sync::Mutex::new(Vec::new());

/// Records a progress bar that the report must clear if it is still drawn then.
pub fn progress_shown(bar: &indicatif::ProgressBar) {
    let mut shown = PROGRESS.lock().unwrap_or_else(|p| p.into_inner());
    shown.retain(|b| b.upgrade().is_some());
    shown.push(bar.downgrade());
}

pub fn clear_progress() {
    let shown = std::mem::take(&mut *PROGRESS.lock().unwrap_or_else(|p| p.into_inner()));
    for bar in shown.iter().filter_map(indicatif::WeakProgressBar::upgrade) {
        bar.finish_and_clear();
    }
}

/// Runs `walk` with a progress callback that moves a bar on stderr over the log's `total`
/// records (`fsck`, `reindex`), only when stderr is a terminal: piped or scripted runs get
/// the final report alone. The bar is cleared when the walk ends, however it ends.
pub fn with_records_bar<R>(
    verb: &str,
    total: u64,
    walk: impl FnOnce(Option<&(dyn Fn(u64) + Sync)>) -> R,
) -> R {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return walk(None);
    }
    let bar = show_bar(
        indicatif::ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden()),
        "{msg} {bar:30} {pos}/{len} records ({eta} left)",
        verb,
    );
    let result = walk(Some(&|n| bar.set_position(n)));
    bar.finish_and_clear();
    result
}

/// A listener that moves a bar on stderr over `total` records, only when stderr is a
/// terminal; the bar is cleared when the listener is dropped (the work ended, however).
pub fn records_bar(verb: &str, total: u64) -> Option<elench::ops::Progress> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = show_bar(
        indicatif::ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
            .with_finish(indicatif::ProgressFinish::AndClear),
        "{msg} {bar:30} {pos}/{len} records ({eta} left)",
        verb,
    );
    Some(Box::new(move |n| bar.set_position(n)))
}

/// A rebuild or catch-up that lasts longer than this gets a spinner: quick ones stay silent.
const SPINNER_AFTER: Duration = Duration::from_millis(500);

/// The listener for rebuilds the store starts by itself on open ([`elench::store::Progress`]):
/// on a terminal, once the work has taken [`SPINNER_AFTER`], a spinner on stderr counts the
/// records applied (how many there are is unknown while the index is missing); it is
/// cleared when the listener is dropped at the end of the work.
pub fn rebuild_spinner(what: &str) -> Option<elench::ops::Progress> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let what = what.to_owned();
    let started = std::time::Instant::now();
    let spinner = std::sync::OnceLock::<indicatif::ProgressBar>::new();
    Some(Box::new(move |n| {
        if started.elapsed() < SPINNER_AFTER {
            return;
        }
        let bar = spinner.get_or_init(|| {
            let bar = indicatif::ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
                .with_finish(indicatif::ProgressFinish::AndClear);
            bar.set_position(n);
            show_bar(bar, "{msg} {spinner} {pos} records", &what)
        });
        bar.set_position(n);
    }))
}

/// Shows a bar made hidden on stderr, ticking, with its style and message set first (so its
/// first frame is whole), and registered so that the report of a command stopped in the
/// middle of its work clears it.
fn show_bar(bar: indicatif::ProgressBar, template: &str, message: &str) -> indicatif::ProgressBar {
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(message.to_owned());
    bar.set_draw_target(ProgressDrawTarget::stderr());
    progress_shown(&bar);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
