//! The index kept current by a live tail of the platform log, so that a posted message's
//! checks (its session, its agent, the turn's plan) need no store round trip:
//! [`Platform::read_current`].
//!
//! [`Platform::read`] is linearizable: it is caught up with every change recorded before it
//! was called, at the price of reading the log's end from the store under the index's lock, so
//! that reads arriving together queue behind each other's catch-ups. A post reads the index
//! as a tail of the log keeps it instead: a change this process writes is in it at once
//! (`write` folds it in), another process's within the tail's delay (a notification and one
//! read). What the post finds there it uses; what it does not find (an agent or a session
//! another replica created a moment ago) it looks up again with `read`, caught up. So a post
//! never misses a resource that exists. Within that delay it may see another replica's update
//! of an agent not yet (its previous prompt; not yet archived), as a post made that much
//! earlier would have.
//!
//! The tail runs as a task from the first such read until the platform is dropped. When it
//! fails (the store's tail ended with an error) the index stops counting as followed, and
//! reads catch up from the store as `read` does, until it follows the log again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Index, Inner, Platform};
use crate::error::PlatformError;

/// How long the tail waits before following the log again after it failed.
const RETRY: Duration = Duration::from_millis(200);

impl Platform {
    /// What `read` finds in the index as the log's live tail keeps it, when it finds it
    /// (`Ok`); otherwise, or while the tail does not follow the log, what it finds in the
    /// index caught up with the store ([`read`](Self::read)). See the module docs.
    pub(super) async fn read_current<T>(
        &self,
        read: impl Fn(&Index) -> Result<T, PlatformError>,
    ) -> Result<T, PlatformError> {
        self.follow_log();
        {
            let index = self.inner.index.lock().await;
            if index.followed
                && let Ok(found) = read(&index)
            {
                return Ok(found);
            }
        }
        self.read(read).await?
    }

    /// Starts the task that follows the log, once.
    fn follow_log(&self) {
        self.inner.follower.get_or_init(|| {
            let inner = Arc::downgrade(&self.inner);
            tokio::runtime::Handle::try_current()
                .ok()
                .map(|runtime| runtime.spawn(follow(inner)).abort_handle())
        });
    }
}

/// Follows the log for as long as the platform lives: again after a pause when the tail fails.
async fn follow(inner: Weak<Inner>) {
    loop {
        if let Err(err) = follow_once(&inner).await {
            tracing::warn!(error = %err, "the platform log's tail failed; reads catch up from the store until it follows again");
        }
        let Some(platform) = inner.upgrade() else {
            return;
        };
        platform.index.lock().await.followed = false;
        drop(platform);
        tokio::time::sleep(RETRY).await;
    }
}

/// Catches the index up, then folds in each event the log's tail delivers that it does not
/// hold yet. Holds the platform only while it folds, so dropping the platform ends it.
async fn follow_once(inner: &Weak<Inner>) -> Result<(), PlatformError> {
    let mut tail = {
        let Some(inner) = inner.upgrade() else {
            return Ok(());
        };
        let platform = Platform { inner };
        let mut index = platform.inner.index.lock().await;
        platform.catch_up(&mut index).await?;
        let tail = platform
            .inner
            .store
            .subscribe(&platform.inner.log, index.seq)
            .await?;
        index.followed = true;
        tail
    };
    while let Some(recorded) = tail.next().await {
        let recorded = recorded?;
        let Some(inner) = inner.upgrade() else {
            return Ok(());
        };
        let mut index = inner.index.lock().await;
        // Events this process wrote, or a catch-up read, are folded in already.
        if recorded.seq == index.seq {
            index.fold(&inner.log, &recorded.event)?;
        }
    }
    Ok(())
}
