//! A durable spool of alerts: one file per delivery (an alert and its target) in a
//! directory, for front ends that cannot keep a delivery task running. A hook process
//! lives for one tool call; it must not wait for a receiver, and what it hands off must
//! outlive it. So the hook writes the file ([`Spool::add`]: written aside, then renamed
//! in, so a reader never sees half of one) and starts a detached delivery process, which
//! calls [`Spool::deliver`].
//!
//! - A file's name starts with the time it is due (ms since the epoch, zero-padded), so
//!   [`Spool::due`] answers from the directory listing alone (a hook asks it on every
//!   invocation; an absent directory is one failed `open`).
//! - A delivery process **claims** a file by renaming it to `NAME.sending` (a rename
//!   succeeds once: two processes never deliver the same file), then posts it.
//! - Delivered: the file is removed. Failed and retryable (no connection, a timeout, a 5xx
//!   or 429): it goes back under a later due time (1 s, 2 s, 4 s, … up to
//!   [`SpoolOptions::max_backoff`]) with its try counted, for a later delivery process
//!   (the next hook invocation after that time starts one). Out of tries, or not
//!   retryable (a 4xx, a missing desktop notifier): removed, and said in the outcome the
//!   caller logs ([`SpoolOutcome::log_line`]); nothing leaves the spool unsaid.
//! - A claim whose process died (the file unchanged for [`SpoolOptions::stale`]) is taken
//!   back. A delivery that succeeded but whose process died before removing the file is
//!   sent again: at least once, never silently lost.
//!
//! ```
//! use loopguard_alerts::{Alert, AlertEvent, AlertTarget, Spool, SpoolOutcome};
//! # fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let spool = Spool::new(dir.path().join("alerts"));
//! assert!(!spool.due(u64::MAX)); // no directory yet: nothing to do
//! // Port 9 on loopback: nobody listens, the connection is refused.
//! let target = AlertTarget::webhook("http://127.0.0.1:9/alerts");
//! spool.add(&target, &Alert::new(AlertEvent::Block, "s#read:1", "s"), 1_000)?;
//! assert!(spool.due(1_000));
//! let outcomes = spool.deliver(1_000);
//! assert!(matches!(outcomes[..], [SpoolOutcome::Retrying { attempt: 1, .. }]));
//! // Kept for a later try, due after the first pause.
//! assert_eq!(spool.pending(), 1);
//! assert!(!spool.due(1_000) && spool.due(2_000));
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::{Alert, AlertFormat, AlertTarget, DeliveryError};

/// How a spool retries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpoolOptions {
    /// Tries per delivery before it is given up (default 8: over about four minutes of
    /// pauses, more when no hook runs in between).
    pub attempts: u32,
    /// The pause before the first retry, doubled each time (default 1 s).
    pub backoff: Duration,
    /// The longest pause (default 10 min).
    pub max_backoff: Duration,
    /// One try's time limit, connection included (default 10 s).
    pub timeout: Duration,
    /// A claimed file untouched for this long belongs to a delivery process that died
    /// (default 10 min).
    pub stale: Duration,
}

impl Default for SpoolOptions {
    fn default() -> Self {
        SpoolOptions {
            attempts: 8,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(600),
            timeout: Duration::from_secs(10),
            stale: Duration::from_secs(600),
        }
    }
}

/// What became of one spooled delivery in [`Spool::deliver`]: each is a line for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpoolOutcome {
    /// The receiver took it (or the notifier showed it).
    Delivered {
        /// The alert.
        alert: Box<Alert>,
        /// Its URL, or `desktop`.
        target: String,
        /// Tries it took.
        attempts: u32,
    },
    /// It failed and stays in the spool for a later try.
    Retrying {
        /// The alert.
        alert: Box<Alert>,
        /// Its URL.
        target: String,
        /// The try that failed (1 for the first).
        attempt: u32,
        /// Tries at most.
        attempts: u32,
        /// Why.
        error: String,
        /// When it is due again (ms since the epoch).
        next_ms: u64,
    },
    /// It failed for good: out of tries, or not retryable. Removed from the spool.
    GaveUp {
        /// The alert.
        alert: Box<Alert>,
        /// Its URL, or `desktop`.
        target: String,
        /// Tries made.
        attempts: u32,
        /// The last error.
        error: String,
    },
    /// A spool file that could not be read (moved aside as `NAME.bad`, kept for a person).
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// A delivery that could not be tried or put back (no async runtime, a spool that
    /// cannot be written): its file is put back, or stays claimed and is taken back when
    /// stale.
    Stuck {
        /// The file (or the spool).
        path: PathBuf,
        /// Why.
        error: String,
    },
}

impl SpoolOutcome {
    /// The outcome as one log line.
    pub fn log_line(&self) -> String {
        match self {
            SpoolOutcome::Delivered {
                alert,
                target,
                attempts,
            } => format!(
                "loopguard: alert {} of {} delivered to {target} (try {attempts})",
                alert.event.as_str(),
                alert.key
            ),
            SpoolOutcome::Retrying {
                alert,
                attempt,
                attempts,
                error,
                next_ms,
                ..
            } => format!(
                "loopguard: alert {} of {} not delivered (try {attempt} of {attempts}): {error}; kept in the spool and tried again by a hook invocation {} s from now or later",
                alert.event.as_str(),
                alert.key,
                next_ms.saturating_sub(now_ms()).div_ceil(1000),
            ),
            SpoolOutcome::GaveUp {
                alert,
                target,
                attempts,
                error,
            } => format!(
                "loopguard: alert {} of {} given up after {attempts} tries to {target}: {error}. The alert was: {}",
                alert.event.as_str(),
                alert.key,
                alert.summary()
            ),
            SpoolOutcome::Unreadable { path, error } => format!(
                "loopguard: alert spool file {} unreadable ({error}); moved aside as .bad",
                path.display()
            ),
            SpoolOutcome::Stuck { path, error } => format!(
                "loopguard: alert spool {}: {error}; tried again later",
                path.display()
            ),
        }
    }

    /// `true` for a warning (given up, unreadable, stuck) rather than news.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            SpoolOutcome::GaveUp { .. }
                | SpoolOutcome::Unreadable { .. }
                | SpoolOutcome::Stuck { .. }
        )
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// One spooled delivery, as its file holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    url: String,
    format: String,
    alert: Alert,
    /// Tries made so far.
    attempts: u32,
}

/// The suffix of a file waiting to be delivered.
const WAITING: &str = ".alert";
/// The suffix of a claimed one.
const SENDING: &str = ".sending";

/// A spool directory (created when the first alert is added).
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
    opts: SpoolOptions,
}

impl Spool {
    /// The spool in `dir`, with the default options.
    pub fn new(dir: impl Into<PathBuf>) -> Spool {
        Spool {
            dir: dir.into(),
            opts: SpoolOptions::default(),
        }
    }

    /// The same spool with other options.
    pub fn with_options(mut self, opts: SpoolOptions) -> Spool {
        self.opts = opts;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a delivery of `alert` to `target`, due at `now_ms`. The file is complete
    /// before it appears (written aside, then renamed).
    pub fn add(&self, target: &AlertTarget, alert: &Alert, now_ms: u64) -> std::io::Result<()> {
        let entry = Entry {
            url: target.url.clone(),
            format: target.format.as_str().to_string(),
            alert: alert.clone(),
            attempts: 0,
        };
        self.write(&entry, now_ms)
    }

    fn write(&self, entry: &Entry, due_ms: u64) -> std::io::Result<()> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir)?;
        let name = format!(
            "{due_ms:020}-{}-{}-{}",
            std::process::id(),
            now_ms(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let text = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, self.dir.join(format!("{name}{WAITING}")))
    }

    /// Whether a delivery process has anything to do at `now_ms`: a file due, or a claim
    /// left by a process that died. From the listing alone (and a claim's age).
    pub fn due(&self, now_ms: u64) -> bool {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        dir.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(WAITING) {
                due_of(&name).is_some_and(|d| d <= now_ms)
            } else {
                name.ends_with(SENDING) && self.is_stale(&e.path())
            }
        })
    }

    /// Deliveries in the spool (waiting or being sent).
    pub fn pending(&self) -> usize {
        std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.ends_with(WAITING) || n.ends_with(SENDING)
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    fn is_stale(&self, path: &Path) -> bool {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= self.opts.stale)
    }

    /// Delivers every file due at `now_ms` that this process claims, in parallel, one try
    /// each; what became of each, to be logged. Blocks until every try has ended (each is
    /// bounded by [`SpoolOptions::timeout`]): run it in a process of its own.
    pub fn deliver(&self, now_ms: u64) -> Vec<SpoolOutcome> {
        let mut outcomes = Vec::new();
        let claimed = self.claim(now_ms, &mut outcomes);
        if claimed.is_empty() {
            return outcomes;
        }
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                // Unclaimed again: a later process tries.
                for (path, _) in &claimed {
                    let _ = std::fs::rename(path, waiting_name(path));
                }
                outcomes.push(SpoolOutcome::Stuck {
                    path: self.dir.clone(),
                    error: format!("no async runtime: {e}"),
                });
                return outcomes;
            }
        };
        let client = crate::client(self.opts.timeout);
        let results: Vec<(PathBuf, Entry, Result<(), DeliveryError>)> = runtime.block_on(async {
            let tasks: Vec<_> = claimed
                .into_iter()
                .map(|(path, entry)| {
                    let client = client.clone();
                    tokio::spawn(async move {
                        let target = AlertTarget {
                            url: entry.url.clone(),
                            format: AlertFormat::parse(&entry.format).unwrap_or(AlertFormat::Json),
                            on: vec![entry.alert.event],
                        };
                        let r = crate::post(&client, &target, &entry.alert).await;
                        (path, entry, r)
                    })
                })
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                if let Ok(r) = t.await {
                    out.push(r);
                }
            }
            out
        });
        for (path, mut entry, result) in results {
            entry.attempts += 1;
            let target = if entry.format == "desktop" {
                "desktop".to_string()
            } else {
                entry.url.clone()
            };
            match result {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                    outcomes.push(SpoolOutcome::Delivered {
                        alert: Box::new(entry.alert),
                        target,
                        attempts: entry.attempts,
                    });
                }
                Err(e) if e.is_retryable() && entry.attempts < self.opts.attempts => {
                    let pause = self
                        .opts
                        .backoff
                        .saturating_mul(1 << (entry.attempts - 1).min(20))
                        .min(self.opts.max_backoff);
                    let next_ms =
                        now_ms.saturating_add(u64::try_from(pause.as_millis()).unwrap_or(u64::MAX));
                    match self.write(&entry, next_ms) {
                        Ok(()) => {
                            let _ = std::fs::remove_file(&path);
                        }
                        // Left claimed: taken back when stale, and tried then.
                        Err(w) => outcomes.push(SpoolOutcome::Stuck {
                            path: path.clone(),
                            error: format!("cannot reschedule: {w}"),
                        }),
                    }
                    outcomes.push(SpoolOutcome::Retrying {
                        alert: Box::new(entry.alert),
                        target,
                        attempt: entry.attempts,
                        attempts: self.opts.attempts,
                        error: e.to_string(),
                        next_ms,
                    });
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&path);
                    outcomes.push(SpoolOutcome::GaveUp {
                        alert: Box::new(entry.alert),
                        target,
                        attempts: entry.attempts,
                        error: e.to_string(),
                    });
                }
            }
        }
        outcomes
    }

    /// Claims the files due (and stale claims): renamed to `.sending`, their time touched
    /// (the claim's age is the file's), read.
    fn claim(&self, now_ms: u64, outcomes: &mut Vec<SpoolOutcome>) -> Vec<(PathBuf, Entry)> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut due = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(WAITING) && due_of(&name).is_some_and(|d| d <= now_ms) {
                due.push(e.path());
            } else if name.ends_with(SENDING) && self.is_stale(&e.path()) {
                // Its process died: taken back, due now.
                let back = waiting_name(&e.path());
                if std::fs::rename(e.path(), &back).is_ok() {
                    due.push(back);
                }
            }
        }
        due.sort();
        let mut claimed = Vec::new();
        for path in due {
            let mut sending = path.clone().into_os_string();
            sending.push(SENDING);
            let sending = PathBuf::from(sending);
            // Another delivery process took it first.
            if std::fs::rename(&path, &sending).is_err() {
                continue;
            }
            if let Ok(f) = std::fs::File::options().write(true).open(&sending) {
                let _ = f.set_modified(SystemTime::now());
            }
            let entry = std::fs::read(&sending)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Entry>(&b).map_err(|e| e.to_string()));
            match entry {
                Ok(entry) => claimed.push((sending, entry)),
                Err(error) => {
                    let mut bad = path.clone().into_os_string();
                    bad.push(".bad");
                    let _ = std::fs::rename(&sending, &bad);
                    outcomes.push(SpoolOutcome::Unreadable { path, error });
                }
            }
        }
        claimed
    }
}

/// The due time a file's name starts with.
fn due_of(name: &str) -> Option<u64> {
    name.split('-').next()?.parse().ok()
}

/// `NAME.alert.sending` → `NAME.alert`.
fn waiting_name(path: &Path) -> PathBuf {
    let s = path.to_string_lossy();
    PathBuf::from(s.strip_suffix(SENDING).unwrap_or(&s).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AlertEvent;

    #[test]
    fn a_claim_is_taken_once_and_a_stale_one_is_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path()).with_options(SpoolOptions {
            stale: Duration::ZERO,
            ..SpoolOptions::default()
        });
        spool
            .add(
                &AlertTarget::webhook("http://127.0.0.1:9/"),
                &Alert::new(AlertEvent::Block, "k", "s"),
                5,
            )
            .unwrap();
        let mut out = Vec::new();
        let first = spool.claim(5, &mut out);
        assert_eq!(first.len(), 1);
        // The claim is stale at once here (stale: 0): a second process takes it back.
        let again = spool.claim(5, &mut out);
        assert_eq!(again.len(), 1);
        assert!(out.is_empty());
        // A file that is not a spool entry is moved aside and said.
        std::fs::write(dir.path().join(format!("{:020}-x{WAITING}", 1)), "nope").unwrap();
        let spool = Spool::new(dir.path());
        let claimed = spool.claim(5, &mut out);
        assert!(claimed.is_empty());
        assert!(
            matches!(out[..], [SpoolOutcome::Unreadable { .. }]),
            "{out:?}"
        );
    }

    #[test]
    fn a_receiver_that_refuses_is_given_up_after_the_last_try() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path()).with_options(SpoolOptions {
            attempts: 2,
            ..SpoolOptions::default()
        });
        let target = AlertTarget::webhook("http://127.0.0.1:9/");
        spool
            .add(&target, &Alert::new(AlertEvent::EndRun, "k", "s"), 0)
            .unwrap();
        let first = spool.deliver(0);
        assert!(
            matches!(first[..], [SpoolOutcome::Retrying { attempt: 1, .. }]),
            "{first:?}"
        );
        assert!(spool.deliver(500).is_empty(), "not due yet");
        let second = spool.deliver(1_000);
        assert!(
            matches!(second[..], [SpoolOutcome::GaveUp { attempts: 2, .. }]),
            "{second:?}"
        );
        assert!(second[0].log_line().contains("given up after 2 tries"));
        assert_eq!(spool.pending(), 0);
    }
}
