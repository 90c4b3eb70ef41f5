//! Alerts from the hooks (`loopguard.alerts` in the config file): the same alerts
//! `loopguard serve` sends (a loop's first block, a run ended, a budget spent; generic
//! JSON, Slack, PagerDuty Events v2, or a desktop notification), one per loop, without
//! delaying the agent.
//!
//! A hook process lives for one tool call and the agent waits for it, so it never talks to
//! a receiver itself:
//!
//! 1. **Once per loop**: each decision with a finding is folded into the loop history of
//!    the hook's own database ([`loopguard_guard::Store::record_loop`], in one immediate
//!    transaction), keyed as `serve` keys it. Exactly one invocation sees the step that
//!    first blocked a loop, even with the agent's parallel hooks, and that one alerts; a
//!    second blocked call of the same loop sends nothing.
//! 2. **Handed off durably**: the alert is written to the spool beside the database
//!    ([`crate::paths::alert_spool_for`], a [`loopguard_alerts::Spool`]): a file per alert
//!    and target, complete before it appears.
//! 3. **Delivered by a detached process**: the hook starts `loopguard alerts deliver
//!    --state DB` with no standard streams (the agent reads the hook's stdout to its end,
//!    which a child holding it open would delay) in a process group of its own (a host
//!    that kills the hook's group on a timeout leaves it alone), does not wait for it, and
//!    exits. The delivery process makes one try per alert and logs what became of it.
//! 4. **Retried at a later invocation**: a failed delivery stays in the spool under a later
//!    due time (1 s, 2 s, 4 s, … 10 min); every hook invocation looks at the spool's
//!    listing (one `open` of a directory that is usually absent) and starts a delivery
//!    process when something is due. After 8 tries it is given up, with the alert in the
//!    log line. Nothing leaves the spool without a line in the log.

use std::path::Path;
use std::process::{Command, Stdio};

use loopguard_alerts::{Alert, AlertTarget, Spool, SpoolOutcome};
use loopguard_core::OpenClawConfig;
use loopguard_guard::{LoopStep, Store};

use crate::paths::alert_spool_for;

/// The alert targets of a config file (`loopguard.alerts`).
pub(crate) fn targets(config: &OpenClawConfig) -> Vec<AlertTarget> {
    config
        .loopguard
        .as_ref()
        .and_then(|l| l.alerts.as_deref())
        .map(AlertTarget::from_configs)
        .unwrap_or_default()
}

/// Folds `steps` into the loop history of `store` and spools the alerts they call for.
/// `agent` labels alerts whose step names none. Returns how many were spooled; a failure
/// is a line for the log (the decision stands: alerts never change an answer).
pub(crate) fn spool_steps(
    store: &dyn Store,
    db: &Path,
    targets: &[AlertTarget],
    steps: Vec<LoopStep>,
    agent: &str,
    now_ms: u64,
    notes: &mut Vec<String>,
) -> usize {
    let spool = Spool::new(alert_spool_for(db));
    let mut spooled = 0;
    for mut step in steps {
        step.agent.get_or_insert_with(|| agent.to_string());
        let alerts = match Alert::of_step(store, &step) {
            Ok(a) => a,
            Err(e) => {
                notes.push(format!(
                    "loopguard: session {}: loop history (for alerts): {e}",
                    step.session
                ));
                continue;
            }
        };
        for alert in alerts {
            for target in targets.iter().filter(|t| t.on.contains(&alert.event)) {
                match spool.add(target, &alert, now_ms) {
                    Ok(()) => spooled += 1,
                    Err(e) => notes.push(format!(
                        "loopguard: session {}: the {} alert of {} could not be spooled in {}: {e}; it is not sent",
                        alert.session,
                        alert.event.as_str(),
                        alert.key,
                        spool.dir().display()
                    )),
                }
            }
        }
    }
    spooled
}

/// Starts a detached delivery process (`DELIVERER alerts deliver --state DB`;
/// `deliverer` `None`: this executable) when the spool of `db` has something due, or
/// `force` (right after spooling). Never waits for it. A line for the log when it cannot.
pub(crate) fn hand_off(
    db: &Path,
    deliverer: Option<&Path>,
    now_ms: u64,
    force: bool,
) -> Option<String> {
    if !force && !Spool::new(alert_spool_for(db)).due(now_ms) {
        return None;
    }
    let program = match deliverer {
        Some(p) => p.to_path_buf(),
        None => match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                return Some(format!(
                    "loopguard: alerts wait in {}: cannot find the loopguard executable to deliver them ({e})",
                    alert_spool_for(db).display()
                ));
            }
        },
    };
    let mut cmd = Command::new(&program);
    cmd.args(["alerts", "deliver", "--state"])
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    detach(&mut cmd);
    match cmd.spawn() {
        // Reaped by a thread where the caller lives on (a test, an embedder); a hook
        // process exits first, and the child is the system's to reap.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            None
        }
        Err(e) => Some(format!(
            "loopguard: alerts wait in {}: cannot start {} alerts deliver: {e}; a later hook invocation tries again",
            alert_spool_for(db).display(),
            program.display()
        )),
    }
}

#[cfg(unix)]
fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(windows)]
fn detach(cmd: &mut Command) {
    use std::os::windows::process::CommandExt;
    // DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP
    cmd.creation_flags(0x0000_0008 | 0x0000_0200);
}

#[cfg(not(any(unix, windows)))]
fn detach(_: &mut Command) {}

/// One try for every alert due in the spool of `db`; what became of each (see the module
/// doc). [`crate::deliver_alerts`] logs them.
pub fn deliver(db: &Path) -> Vec<SpoolOutcome> {
    Spool::new(alert_spool_for(db)).deliver(now_ms())
}

/// The system clock, which the spool's due times are on (another process reads them).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
