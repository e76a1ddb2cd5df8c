//! [`Claim`]: the right to run a session's turns, held among every process that shares a
//! store (see [`Store::claim`](crate::Store::claim)).

use std::fmt;

/// The right to run the turns of one session, among every process sharing the store that
/// granted it, until it is dropped (or the process holding it dies).
///
/// A store one process owns (memory, redb) grants every claim ([`Claim::unshared`]): it has no
/// other process to exclude. A shared store excludes the others: PostgreSQL holds a
/// session-level advisory lock on a connection of the claiming process, so the database
/// itself releases it when that process dies.
///
/// ```
/// use openharness_core::adapter::Claim;
/// let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let flag = released.clone();
/// let claim = Claim::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
/// drop(claim);
/// assert!(released.load(std::sync::atomic::Ordering::SeqCst));
/// ```
#[must_use = "the claim is released when dropped"]
pub struct Claim {
    release: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Claim {
    /// A claim that `release` gives up when dropped.
    pub fn new(release: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            release: Some(Box::new(release)),
        }
    }

    /// The claim of a store no other process shares: nothing to release.
    pub fn unshared() -> Self {
        Self { release: None }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim")
            .field("shared", &self.release.is_some())
            .finish()
    }
}
