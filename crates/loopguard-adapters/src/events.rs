//! loopguard's own event stream (events.md) as a [`LineAdapter`], so event files can sit
//! in a directory of transcripts and go through the same reader.

use loopguard_events::parse_event;

use crate::{Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// Reads events.md lines as they are. A session or agent named in the line wins; the
/// reader's context fills them in only when the event has none.
///
/// ```
/// use loopguard_adapters::{events::EventsAdapter, LineAdapter};
/// let mut a = EventsAdapter::default();
/// let mut out = Vec::new();
/// a.line(1, br#"{"type":"call","tool":"read","ts":5}"#, &mut out).unwrap();
/// assert_eq!(out[0].event.timestamp_ms, 5);
/// assert!(a.line(2, b"nope", &mut out).is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventsAdapter {
    session: Option<String>,
    agent: Option<String>,
}

impl EventsAdapter {
    /// Events without a `session` get `session`; without an `agent`, `agent`.
    pub fn with_defaults(session: Option<String>, agent: Option<String>) -> Self {
        EventsAdapter { session, agent }
    }
}

impl LineAdapter for EventsAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let mut event = parse_event(text, no)
            .map_err(|e| {
                let kind = if e.field.is_some() {
                    DiagnosticKind::BadField
                } else {
                    DiagnosticKind::NotJson
                };
                Diagnostic::new(no, kind, e.message)
            })?
            .into_owned();
        if event.session.is_none() {
            event.session = self.session.clone().map(Into::into);
        }
        if event.agent.is_none() {
            event.agent = self.agent.clone().map(Into::into);
        }
        out.push(SourcedEvent {
            event,
            line: no,
            tokens: None,
            profile: None,
        });
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        Vec::new()
    }
}
