//! Desktop notifications (`format: "desktop"`): the machine's own notifier, run as a
//! command, so loopguard links no desktop library and a machine without one costs nothing.
//!
//! - Linux and the other Unix systems: `notify-send --app-name=loopguard TITLE BODY`
//!   (libnotify's command, on every desktop that shows notifications);
//! - macOS: `osascript -e 'display notification "BODY" with title "TITLE"'`.
//!
//! A missing command (a server, a container) is a warning, not a failure to retry: the
//! machine has no desktop to notify.

use std::process::{Command, Stdio};

use crate::{Alert, AlertEvent, DeliveryError};

/// The notification's title.
pub(crate) fn title(alert: &Alert) -> &'static str {
    match (alert.event, alert.observe) {
        (AlertEvent::Block, false) => "loopguard blocked a loop",
        (AlertEvent::Block, true) => "loopguard would have blocked a loop",
        (AlertEvent::EndRun, _) => "loopguard ended a run",
        (AlertEvent::Budget, _) => "loopguard: a budget was spent",
    }
}

/// The command that shows `alert` on this machine.
fn command(alert: &Alert) -> Command {
    let body = alert.summary();
    if cfg!(target_os = "macos") {
        // AppleScript string literals escape `\` and `"`.
        let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut c = Command::new("osascript");
        c.arg("-e").arg(format!(
            "display notification {} with title {}",
            quote(&body),
            quote(title(alert))
        ));
        c
    } else {
        let mut c = Command::new("notify-send");
        c.arg("--app-name=loopguard").arg(title(alert)).arg(body);
        c
    }
}

/// Shows `alert` (blocking until the notifier returns, which it does at once).
pub(crate) fn notify(alert: &Alert) -> Result<(), DeliveryError> {
    let mut cmd = command(alert);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(DeliveryError::Notifier {
            command: program,
            message: format!(
                "{}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DeliveryError::Notifier {
            command: program,
            message: "not found on PATH: this machine has no desktop notifier".to_string(),
        }),
        Err(e) => Err(DeliveryError::Notifier {
            command: program,
            message: e.to_string(),
        }),
    }
}
