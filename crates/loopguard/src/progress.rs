//! The progress bar of a replay of several files (printing only).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr for more than one file (hidden when stderr is not a
/// terminal).
pub fn bar(files: u64) -> ProgressBar {
    if files <= 1 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(files), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} files {wide_msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
