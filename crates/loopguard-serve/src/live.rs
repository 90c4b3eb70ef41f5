//! The dashboard's live side (`dashboard.rs` serves it): what the event path tells it, and
//! what it keeps.
//!
//! - **Changes.** Every decision request marks the fleet changed ([`Live::changed`]): an
//!   atomic swap, and on the first change since the last push a wake-up of one debouncer
//!   task. That task waits [`DEBOUNCE`], then publishes a new generation on a `watch`
//!   channel, which keeps the latest value only: a stream that has not read the last
//!   generation sees the newest one, never a backlog. The event path never waits for a
//!   stream, and a stuck stream holds nothing but its receiver.
//! - **Decisions per minute.** Every loop step (a warn, block, would-block or abort) is
//!   counted in its minute ([`Live::step`]), per tenant, agent and service, for the last hour.
//!   The counts are this process's: replicas behind a load balancer each count the
//!   decisions they made.
//! - **Streams.** At most [`MAX_STREAMS`] at once; each ends after [`STREAM_LIFETIME`] (the
//!   page opens a new one, authenticating again).
//! - **Tickets.** `EventSource` cannot send an `Authorization` header, and a token in a URL
//!   ends up in proxies' and browsers' logs. With `--tokens` the page trades its token
//!   (sent as a header) for a ticket: random, for one stream, valid for [`TICKET_TTL`].
//! - **The session keys** of a store that lists them over I/O (SQLite, Redis), kept for
//!   [`KEYS_TTL`]: a dashboard request or push reads the copy, and at most one listing
//!   runs at a time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use loopguard_guard::{LoopAction, LoopStep, Store, StoreError};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};

/// Dashboard streams open at once, at most; past it a stream is answered 503 and the page
/// polls.
pub(crate) const MAX_STREAMS: usize = 64;
/// How long changes are gathered before the streams are told.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(500);
/// A stream pushes at least this often, changes or not (ages, the keys' copy).
pub(crate) const REFRESH: Duration = Duration::from_secs(15);
/// A stream ends after this long; the page opens another.
pub(crate) const STREAM_LIFETIME: Duration = Duration::from_secs(600);
/// How long a ticket can be used.
pub(crate) const TICKET_TTL: Duration = Duration::from_secs(60);
/// Tickets not yet used, at most (the oldest is forgotten past it).
const MAX_TICKETS: usize = 1024;
/// How long a listing of the store's session keys is used.
pub(crate) const KEYS_TTL: Duration = Duration::from_secs(5);
/// Series (tenant, agent, service) counted per minute, at most; past it, and when none is
/// an hour old to forget, a step is counted in its tenant's series without agent and
/// service (in the totals, not under a filter).
const MAX_SERIES: usize = 10_000;

type Series = (Option<String>, Option<String>, Option<String>);
/// Tickets not yet used: their tenant and when they were made.
type Tickets = HashMap<String, (Option<Arc<str>>, Instant)>;
/// The last listing of the session keys, and when it was made.
type Listing = Option<(Instant, Arc<Vec<String>>)>;

#[derive(Clone, Copy, Default, Debug)]
struct Slot {
    minute: u64,
    warnings: u64,
    blocks: u64,
}

/// The dashboard's live state (see the module's documentation).
pub(crate) struct Live {
    dirty: AtomicBool,
    wake: Notify,
    generation: watch::Sender<u64>,
    streams: Arc<Semaphore>,
    minutes: Mutex<HashMap<Series, [Slot; 60]>>,
    tickets: Mutex<Tickets>,
    keys: tokio::sync::Mutex<Listing>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("streams", &(MAX_STREAMS - self.streams.available_permits()))
            .finish_non_exhaustive()
    }
}

impl Default for Live {
    fn default() -> Self {
        Live {
            dirty: AtomicBool::new(false),
            wake: Notify::new(),
            generation: watch::Sender::new(0),
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
            minutes: Mutex::new(HashMap::new()),
            tickets: Mutex::new(HashMap::new()),
            keys: tokio::sync::Mutex::new(None),
        }
    }
}

impl Live {
    /// Something was decided. Costs an atomic swap; the first change after a push also
    /// wakes the debouncer.
    pub(crate) fn changed(&self) {
        if !self.dirty.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }

    /// Counts a loop step in its minute.
    pub(crate) fn step(&self, step: &LoopStep) {
        let minute = step.ts_ms / 60_000;
        let block = !matches!(step.action, LoopAction::Warn);
        let mut series = (
            step.tenant.clone(),
            step.agent.clone(),
            step.service.clone(),
        );
        let mut map = self.minutes.lock().unwrap_or_else(PoisonError::into_inner);
        if !map.contains_key(&series) && map.len() >= MAX_SERIES {
            map.retain(|_, slots| slots.iter().any(|s| s.minute + 60 > minute));
            if map.len() >= MAX_SERIES {
                series = (step.tenant.clone(), None, None);
            }
        }
        let slots = map.entry(series).or_insert([Slot::default(); 60]);
        let slot = &mut slots[(minute % 60) as usize];
        // The slot holds a minute an hour or more later: this step is out of the window.
        if slot.minute > minute {
            return;
        }
        if slot.minute < minute {
            *slot = Slot {
                minute,
                ..Slot::default()
            };
        }
        if block {
            slot.blocks += 1;
        } else {
            slot.warnings += 1;
        }
        drop(map);
        self.changed();
    }

    /// The tenant's warnings and blocks per minute for the hour up to `now_ms`, oldest
    /// minute first (the last is the current minute), only an agent's or a service's
    /// when asked.
    pub(crate) fn per_minute(
        &self,
        tenant: Option<&str>,
        agent: Option<&str>,
        service: Option<&str>,
        now_ms: u64,
    ) -> (Vec<u64>, Vec<u64>) {
        let now = now_ms / 60_000;
        let (mut warnings, mut blocks) = (vec![0u64; 60], vec![0u64; 60]);
        let map = self.minutes.lock().unwrap_or_else(PoisonError::into_inner);
        for ((t, a, s), slots) in map.iter() {
            if t.as_deref() != tenant
                || agent.is_some_and(|f| a.as_deref() != Some(f))
                || service.is_some_and(|f| s.as_deref() != Some(f))
            {
                continue;
            }
            for slot in slots {
                if slot.minute <= now && now - slot.minute < 60 {
                    let i = 59 - (now - slot.minute) as usize;
                    warnings[i] += slot.warnings;
                    blocks[i] += slot.blocks;
                }
            }
        }
        (warnings, blocks)
    }

    /// Tells the streams, at most once per [`DEBOUNCE`], that something changed; runs
    /// until the server stops (started by `Server::serve`).
    pub(crate) async fn debounce(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            tokio::time::sleep(DEBOUNCE).await;
            // Cleared before the streams are told: a change from now on wakes us again,
            // and every change before it is in what the streams read next.
            self.dirty.store(false, Ordering::Release);
            self.generation.send_modify(|g| *g = g.wrapping_add(1));
        }
    }

    /// A receiver of the generations, for one stream.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// A place for one more stream, if there is one.
    pub(crate) fn stream_permit(&self) -> Option<OwnedSemaphorePermit> {
        self.streams.clone().try_acquire_owned().ok()
    }

    /// A new ticket for `tenant`'s next stream.
    pub(crate) fn ticket(&self, tenant: Option<Arc<str>>) -> Result<String, getrandom::Error> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes)?;
        let ticket: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        tickets.retain(|_, (_, at)| now.duration_since(*at) < TICKET_TTL);
        if tickets.len() >= MAX_TICKETS {
            if let Some(oldest) = tickets
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
            {
                tickets.remove(&oldest);
            }
        }
        tickets.insert(ticket.clone(), (tenant, now));
        Ok(ticket)
    }

    /// The tenant of a ticket, which is used up; `None` for an unknown or expired one.
    pub(crate) fn redeem(&self, ticket: &str) -> Option<Option<Arc<str>>> {
        let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        let (tenant, at) = tickets.remove(ticket)?;
        (at.elapsed() < TICKET_TTL).then_some(tenant)
    }

    /// The store's session keys, listed at most once per [`KEYS_TTL`] (callers wait for a
    /// listing under way rather than start another).
    pub(crate) async fn keys(&self, store: Arc<dyn Store>) -> Result<Arc<Vec<String>>, StoreError> {
        let mut cached = self.keys.lock().await;
        if let Some((at, keys)) = cached.as_ref() {
            if at.elapsed() < KEYS_TTL {
                return Ok(keys.clone());
            }
        }
        let keys = tokio::task::spawn_blocking(move || store.keys())
            .await
            .map_err(|e| StoreError::Remote(format!("listing the sessions: {e}")))??;
        let keys = Arc::new(keys);
        *cached = Some((Instant::now(), keys.clone()));
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(agent: &str, action: LoopAction, ts_ms: u64) -> LoopStep {
        let mut s = LoopStep::new("s", "read", "generic_repeat", "k", action, ts_ms);
        s.agent = Some(agent.to_string());
        s
    }

    #[test]
    fn every_step_is_counted_in_its_minute_for_an_hour() {
        let live = Live::default();
        let now = 100 * 60_000 + 5;
        for _ in 0..3 {
            live.step(&step("a", LoopAction::Warn, now));
        }
        live.step(&step("a", LoopAction::Block, now));
        live.step(&step("b", LoopAction::Abort, now - 60_000));
        // An hour ago: forgotten.
        live.step(&step("a", LoopAction::Warn, now - 60 * 60_000));
        let (w, b) = live.per_minute(None, None, None, now);
        assert_eq!((w[59], b[59], b[58]), (3, 1, 1));
        assert_eq!((w.iter().sum::<u64>(), b.iter().sum::<u64>()), (3, 2));
        let (w, b) = live.per_minute(None, Some("b"), None, now);
        assert_eq!((w.iter().sum::<u64>(), b.iter().sum::<u64>()), (0, 1));
        let (w, _) = live.per_minute(Some("acme"), None, None, now);
        assert_eq!(w.iter().sum::<u64>(), 0, "another tenant's steps");
    }

    #[test]
    fn a_ticket_is_for_one_stream_and_its_tenant() {
        let live = Live::default();
        let t = live.ticket(Some(Arc::from("acme"))).unwrap();
        assert_eq!(t.len(), 48);
        assert_eq!(live.redeem(&t), Some(Some(Arc::from("acme"))));
        assert_eq!(live.redeem(&t), None, "used up");
        assert_eq!(live.redeem("guess"), None);
    }
}
