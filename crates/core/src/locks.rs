//! One writer per session within a process: a turn holds its session's lock from the moment
//! it derives the state until its last event is recorded.
//!
//! Across processes the store's optimistic concurrency decides (an append at a seq another
//! writer took fails with a conflict, which the runtime reports as
//! [`Error::SessionBusy`](crate::Error::SessionBusy)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Mutex as TurnMutex, OwnedMutexGuard};

use crate::event::SessionId;

/// The locks of the sessions that have a turn running or waiting, shared by every clone of a
/// workflow. An entry lives only while someone holds or waits for it.
#[derive(Debug, Default)]
pub(crate) struct SessionLocks {
    locks: Mutex<HashMap<SessionId, Arc<TurnMutex<()>>>>,
}

/// A held session lock; dropping it lets the next turn on the session go.
#[derive(Debug)]
pub(crate) struct SessionGuard {
    locks: Arc<SessionLocks>,
    session: SessionId,
    guard: Option<OwnedMutexGuard<()>>,
}

impl SessionLocks {
    fn entry(&self, session: &SessionId) -> Arc<TurnMutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(locks.entry(session.clone()).or_default())
    }

    /// Waits until no other turn of this process holds `session`, then holds it.
    pub(crate) async fn lock(self: &Arc<Self>, session: &SessionId) -> SessionGuard {
        let guard = self.entry(session).lock_owned().await;
        SessionGuard {
            locks: Arc::clone(self),
            session: session.clone(),
            guard: Some(guard),
        }
    }

    /// Holds `session` if no other turn of this process does; `None` otherwise.
    pub(crate) fn try_lock(self: &Arc<Self>, session: &SessionId) -> Option<SessionGuard> {
        let entry = self.entry(session);
        match entry.try_lock_owned() {
            Ok(guard) => Some(SessionGuard {
                locks: Arc::clone(self),
                session: session.clone(),
                guard: Some(guard),
            }),
            Err(_) => {
                self.forget_if_unused(session);
                None
            }
        }
    }

    /// Removes the entry of `session` when nobody holds or waits for it.
    fn forget_if_unused(&self, session: &SessionId) {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if locks
            .get(session)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(session);
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.locks.forget_if_unused(&self.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_turn_waits_and_entries_go_away() {
        let locks = Arc::new(SessionLocks::default());
        let session = SessionId::new();
        let first = locks.lock(&session).await;
        assert!(locks.try_lock(&session).is_none());
        let waiter = {
            let locks = Arc::clone(&locks);
            let session = session.clone();
            tokio::spawn(async move { locks.lock(&session).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(first);
        let second = waiter.await.expect("the waiting turn gets the lock");
        drop(second);
        assert!(locks.locks.lock().expect("not poisoned").is_empty());
        assert!(locks.try_lock(&session).is_some());
    }
}
