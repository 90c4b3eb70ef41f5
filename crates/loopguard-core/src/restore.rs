//! Reading a snapshot back: [`Session::restore`] and [`Session::import_state`], for both
//! forms. The JSON form is [`crate::state`]'s, the binary form `state_binary`'s (which
//! builds on `state`); this module is the only one that knows both, so neither form imports
//! the other.

use crate::outcome::Hashing;
use crate::session::{Mode, Session};
use crate::state::StateError;

impl Session {
    /// Rebuilds a session from [`Session::export_state`]'s bytes; `id` labels it (the
    /// saved id is only informative). The outcome-hashing settings are the defaults: a
    /// runtime with its own (a custom [`crate::outcome::SendClassifier`]) restores with
    /// [`Session::restore`] and [`Restore::hashing`].
    pub fn import_state(bytes: &[u8], id: impl Into<String>) -> Result<Session, StateError> {
        Session::restore(bytes).id(id).build()
    }

    /// Starts restoring a session from [`Session::export_state`]'s (or
    /// [`Session::export_state_binary`]'s) bytes, with the settings
    /// that are not part of a snapshot (see [`Restore`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use loopguard_core::{Mode, Session};
    /// use loopguard_core::{Hashing, SendClassifier};
    /// use loopguard_core::Object;
    ///
    /// /// Every tool whose name starts with `send_` is a channel send.
    /// struct SendPrefix;
    /// impl SendClassifier for SendPrefix {
    ///     fn is_channel_send(&self, tool: &[u8], _args: &Object<'_>) -> bool {
    ///         tool.starts_with(b"send_")
    ///     }
    /// }
    ///
    /// let hashing = Hashing { sends: Arc::new(SendPrefix) };
    /// let saved = Session::new("s").with_hashing(hashing.clone()).export_state();
    /// let session = Session::restore(&saved)
    ///     .id("agent:main:main")
    ///     .hashing(hashing)
    ///     .mode(Mode::Observe)
    ///     .build()?;
    /// assert_eq!(session.id(), "agent:main:main");
    /// assert_eq!(session.mode(), Mode::Observe);
    /// # Ok::<(), loopguard_core::StateError>(())
    /// ```
    pub fn restore(bytes: &[u8]) -> Restore<'_> {
        Restore {
            bytes,
            id: None,
            mode: None,
            hashing: Hashing::default(),
        }
    }
}

/// A session being restored from a snapshot ([`Session::restore`]).
///
/// A snapshot holds what the session remembers; the outcome-hashing settings are code, not
/// state, so a runtime that replaced them gives them again here (else the defaults apply).
/// The id and mode default to the saved ones.
///
/// ```
/// use loopguard_core::{Mode, Session};
/// let saved = Session::new("agent:a").export_state_binary();
/// let restored = Session::restore(&saved).mode(Mode::Observe).build()?;
/// assert_eq!((restored.id(), restored.mode()), ("agent:a", Mode::Observe));
/// # Ok::<(), loopguard_core::StateError>(())
/// ```
#[derive(Debug)]
#[must_use = "call `build` to get the session"]
pub struct Restore<'b> {
    bytes: &'b [u8],
    id: Option<String>,
    mode: Option<Mode>,
    hashing: Hashing,
}

impl Restore<'_> {
    /// Labels the restored session (default: the id saved in the snapshot).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets enforce or observe mode (default: the saved mode).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sets the outcome-hashing settings (default: [`Hashing::default`]).
    pub fn hashing(mut self, hashing: Hashing) -> Self {
        self.hashing = hashing;
        self
    }
    /// Reads the snapshot.
    ///
    /// # Errors
    ///
    /// [`StateError`] when the bytes are not a snapshot this version reads, naming the
    /// field that is wrong.
    pub fn build(self) -> Result<Session, StateError> {
        if self.bytes.starts_with(crate::state_binary::MAGIC) {
            crate::state_binary::read(self.bytes, self.id, self.mode, self.hashing)
        } else {
            crate::state::read(self.bytes, self.id, self.mode, self.hashing)
        }
    }
}
