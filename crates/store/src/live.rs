//! Live tails: the [`Notifier`] that wakes subscribers when a session grows, and [`tail`], the
//! task behind every backend's [`Store::subscribe`].
//!
//! The rule that makes a tail lose nothing and repeat nothing: the task marks the session's
//! notifications as seen *before* it reads, reads from the next seq it has not delivered until
//! it is caught up, and only then waits. An append committed before the read is in the read; one
//! committed after it notifies, and the wait returns. The task tracks the next seq itself, so a
//! spurious wake-up only costs an empty read. For the same reason a tail survives a gap in
//! notifications: when the source of changes comes back (a PostgreSQL listener that
//! reconnected), waking every tail makes each re-read from its own next seq, and it delivers
//! what was appended meanwhile, once. A read that fails with an error the backend calls
//! transient (a dropped connection) is retried for a while before the tail ends with it.
//!
//! A backend that knows what it just committed (redb, memory) announces it with
//! [`Notifier::appended`]: the notification carries the batch, and a tail whose next seq the
//! batch holds delivers from it without a read (every follower of a session re-read each
//! batch from the store before). Announcements may arrive out of commit order (they are made
//! by the appending task after its commit returns), so the notifier keeps the batch that
//! reaches furthest, and a tail uses it only when it holds the tail's next seq; any other wake
//! reads as before. A session's batches commit in seq order (each append names the length it
//! expects), so a batch's events are committed whenever it is announced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use openharness_core::{
    Envelope, SessionId, Store, StoreError,
    adapter::{Recorded, Subscription, SubscriptionSender},
};
use tokio::sync::watch;

/// How many events a tail reads per query, so catching up on a long session streams it in pages.
const PAGE: u64 = 512;

/// How many events may wait in a subscription's channel before the tail task pauses.
const BUFFER: usize = 256;

/// How long a tail pauses before it retries a read that failed with a transient error.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// Wakes the tails of sessions that have grown (or were cleared).
///
/// Clones share the same subscribers. A closed notifier (its source of changes is gone, such as
/// a lost PostgreSQL listener connection) ends every tail with an error.
#[derive(Debug, Clone, Default)]
pub(crate) struct Notifier {
    inner: Arc<Mutex<Senders>>,
    /// Read errors a tail waits out (retrying with a pause) rather than ending on, for how
    /// long: a backend whose connections can drop and come back says which errors those are.
    transient: Option<(std::time::Duration, Transient)>,
}

/// Tells whether a read error may pass (see `Notifier::with_transient_errors`, with the
/// `postgres` feature).
type Transient = fn(&StoreError) -> bool;

#[derive(Debug, Default)]
struct Senders {
    sessions: HashMap<SessionId, watch::Sender<Latest>>,
    closed: Option<String>,
}

/// What a session's tails are told on a wake: the committed batch that reaches furthest, when
/// the last announcement carried one (`None`: read to learn what changed).
type Latest = Option<Arc<Batch>>;

/// Events a session committed together, from seq `first`.
#[derive(Debug)]
struct Batch {
    first: u64,
    events: Vec<Envelope>,
}

impl Batch {
    /// The seq after the batch's last event.
    fn end(&self) -> u64 {
        self.first + self.events.len() as u64
    }

    /// The batch's events from seq `next` on, when it holds `next`.
    fn from(&self, next: u64) -> Option<&[Envelope]> {
        let skip = usize::try_from(next.checked_sub(self.first)?).ok()?;
        self.events.get(skip..).filter(|rest| !rest.is_empty())
    }
}

impl Notifier {
    fn lock(&self) -> std::sync::MutexGuard<'_, Senders> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver woken by every later [`notify`](Self::notify) and
    /// [`appended`](Self::appended) of `session`; the reason instead when the notifier is
    /// closed.
    fn watch(&self, session: &SessionId) -> Result<watch::Receiver<Latest>, String> {
        let mut senders = self.lock();
        if let Some(reason) = &senders.closed {
            return Err(reason.clone());
        }
        Ok(senders
            .sessions
            .entry(session.clone())
            .or_insert_with(|| watch::channel(None).0)
            .subscribe())
    }

    /// Wakes the tails of `session`; each reads to learn what changed.
    pub(crate) fn notify(&self, session: &SessionId) {
        let mut senders = self.lock();
        if let Some(sender) = senders.sessions.get(session) {
            if sender.receiver_count() == 0 {
                senders.sessions.remove(session);
            } else {
                sender.send_replace(None);
            }
        }
    }

    /// Wakes the tails of `session` with the batch it just committed, `events` from seq
    /// `first`: a tail whose next seq it holds delivers it without reading. Copied only when
    /// the session has tails; an empty batch changed nothing and wakes no one.
    pub(crate) fn appended(&self, session: &SessionId, first: u64, events: &[Envelope]) {
        if events.is_empty() {
            return;
        }
        let mut senders = self.lock();
        let Some(sender) = senders.sessions.get(session) else {
            return;
        };
        if sender.receiver_count() == 0 {
            senders.sessions.remove(session);
            return;
        }
        let end = first + events.len() as u64;
        sender.send_modify(|latest| {
            // An announcement overtaken by a later batch's wakes the tails but leaves the
            // later batch in place: they read what they miss.
            if latest.as_ref().is_none_or(|batch| batch.end() < end) {
                *latest = Some(Arc::new(Batch {
                    first,
                    events: events.to_vec(),
                }));
            }
        });
    }

    /// Ends every tail: their next wait fails with `reason`, and new watches fail too.
    #[cfg(feature = "postgres")]
    pub(crate) fn close(&self, reason: String) {
        let mut senders = self.lock();
        senders.closed = Some(reason);
        senders.sessions.clear();
    }

    /// A notifier whose tails retry a failed read for up to `grace` when `transient` says the
    /// error may pass (a dropped connection being replaced), instead of ending at once.
    #[cfg(feature = "postgres")]
    pub(crate) fn with_transient_errors(grace: std::time::Duration, transient: Transient) -> Self {
        Self {
            transient: Some((grace, transient)),
            ..Self::default()
        }
    }

    /// Wakes every tail, so each re-reads from the next seq it has not delivered: after the
    /// source of changes was down (a PostgreSQL listener reconnecting), when appends may have
    /// gone unannounced.
    #[cfg(feature = "postgres")]
    pub(crate) fn notify_all(&self) {
        let mut senders = self.lock();
        senders
            .sessions
            .retain(|_, sender| sender.receiver_count() > 0);
        for sender in senders.sessions.values() {
            sender.send_replace(None);
        }
    }

    /// Accepts new watches again after [`close`](Self::close): the source of changes is back.
    #[cfg(feature = "postgres")]
    pub(crate) fn reopen(&self) {
        self.lock().closed = None;
    }

    /// Why the notifier was closed, if it was.
    pub(crate) fn closed(&self) -> Option<String> {
        self.lock().closed.clone()
    }
}

/// Starts the task that feeds a [`Subscription`] to `session` from `from_seq`, reading through
/// (a clone of) `store` and woken by `notifier`: a backend's whole [`Store::subscribe`].
pub(crate) fn tail<S: Store + Clone>(
    store: &S,
    notifier: &Notifier,
    session: &SessionId,
    from_seq: u64,
) -> Result<Subscription, StoreError> {
    let (store, notifier, session) = (store.clone(), notifier.clone(), session.clone());
    let mut changes = notifier.watch(&session).map_err(|reason| {
        StoreError::backend(LiveError {
            store: store.describe(),
            session: session.clone(),
            reason,
        })
    })?;
    let (sender, subscription) = Subscription::channel(BUFFER);
    tokio::spawn(async move {
        let mut next = from_seq;
        // The first pass reads: the tail starts wherever its caller asked.
        let mut first_pass = true;
        loop {
            // Seen before reading: a change committed after the read wakes the wait below.
            let latest = changes.borrow_and_update().clone();
            let announced = latest.filter(|batch| !first_pass && batch.first <= next);
            first_pass = false;
            let delivering = match announced {
                // The furthest batch holds the next seq (or ends before it: a wake overtaken
                // by what this tail already read), so nothing committed before it is missed.
                Some(batch) => {
                    let events = batch.from(next).unwrap_or_default();
                    deliver(&sender, &mut next, events.iter().cloned()).await
                }
                None => read_to_end(&store, &notifier, &session, &mut next, &sender).await,
            };
            if !delivering {
                return;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        let reason = notifier
                            .closed()
                            .unwrap_or_else(|| "the store stopped notifying".to_owned());
                        let _ = sender
                            .send(Err(StoreError::backend(LiveError {
                                store: store.describe(),
                                session: session.clone(),
                                reason,
                            })))
                            .await;
                        return;
                    }
                }
                () = sender.closed() => return,
            }
        }
    });
    Ok(subscription)
}

/// Delivers `session`'s events from `next` to the end of what is committed, page by page,
/// waiting out transient read errors; false when the tail is done (unsubscribed, or an error
/// was sent).
async fn read_to_end<S: Store>(
    store: &S,
    notifier: &Notifier,
    session: &SessionId,
    next: &mut u64,
    sender: &SubscriptionSender,
) -> bool {
    let mut failing_since = None;
    loop {
        let page = match store
            .events(session, *next..next.saturating_add(PAGE))
            .await
        {
            Ok(page) => page,
            Err(err) => {
                let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                match notifier.transient {
                    Some((grace, transient)) if transient(&err) && since.elapsed() < grace => {
                        tokio::select! {
                            () = tokio::time::sleep(RETRY_PAUSE) => continue,
                            () = sender.closed() => return false,
                        }
                    }
                    _ => {
                        let _ = sender.send(Err(err)).await;
                        return false;
                    }
                }
            }
        };
        failing_since = None;
        let count = page.len() as u64;
        if !deliver(sender, next, page).await {
            return false;
        }
        if count < PAGE {
            return true;
        }
    }
}

/// Sends `events` as seqs `next`, `next + 1`, …, advancing `next`; false once unsubscribed.
async fn deliver(
    sender: &SubscriptionSender,
    next: &mut u64,
    events: impl IntoIterator<Item = Envelope>,
) -> bool {
    for event in events {
        let recorded = Recorded { seq: *next, event };
        *next += 1;
        if sender.send(Ok(recorded)).await.is_err() {
            return false;
        }
    }
    true
}

/// A live tail stopped because the store can no longer tell it about new events.
#[derive(Debug, Clone, thiserror::Error)]
#[error("store {store}: the live tail of session {session} stopped: {reason}")]
pub struct LiveError {
    /// The store, as [`Store::describe`] gives it.
    pub store: String,
    /// The session being tailed.
    pub session: SessionId,
    /// Why it stopped.
    pub reason: String,
}
