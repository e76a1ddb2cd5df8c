//! [`Recorded`] events and [`Subscription`]s: a live tail of one session, as
//! [`Store::subscribe`](crate::Store::subscribe) gives it.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::event::Envelope;

/// An event with its seq in the session, as a [`Subscription`] or an [`EventStream`](crate::adapter::EventStream) yields it
/// and as the wire carries it: the envelope's fields with `seq` beside them.
///
/// ```
/// use openharness_core::{Envelope, adapter::Recorded};
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// let json = serde_json::to_value(Recorded { seq: 0, event: event.clone() }).unwrap();
/// assert_eq!(json["seq"], 0);
/// assert_eq!(json["name"], "user:input");
/// let back: Recorded = serde_json::from_value(json).unwrap();
/// assert_eq!(back.event, event);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recorded {
    /// The event's position in its session (0-based).
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Envelope,
}

/// A live tail of one session, from [`Store::subscribe`](crate::Store::subscribe): the stored events from the requested
/// seq, then each new one as it is appended, each exactly once and in order.
///
/// It ends (returns `None`) only when the store side stops, after yielding an error that says
/// why; drop it to unsubscribe.
///
/// Read it with [`next`](Subscription::next), or use it as a [`Stream`] with the combinators of
/// `futures_util::StreamExt` (take, filter, timeout wrappers, `select` with other streams).
///
/// Backends build one with [`Subscription::channel`] and feed it from a task:
///
/// ```
/// use openharness_core::{Envelope, adapter::{Recorded, Subscription}};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (tx, mut subscription) = Subscription::channel(16);
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// tx.send(Ok(Recorded { seq: 0, event: event.clone() })).await.unwrap();
/// drop(tx);
/// let first = subscription.next().await.unwrap().unwrap();
/// assert_eq!((first.seq, first.event), (0, event));
/// assert!(subscription.next().await.is_none());
/// # });
/// ```
#[derive(Debug)]
pub struct Subscription {
    receiver: tokio::sync::mpsc::Receiver<Result<Recorded, StoreError>>,
}

/// The sending half of a [`Subscription`], held by the backend's task.
pub type SubscriptionSender = tokio::sync::mpsc::Sender<Result<Recorded, StoreError>>;

impl Subscription {
    /// A subscription fed through a bounded channel of `capacity` items (at least 1): the
    /// backend's task waits when the subscriber falls behind, so nothing piles up in memory.
    pub fn channel(capacity: usize) -> (SubscriptionSender, Self) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity.max(1));
        (sender, Self { receiver })
    }

    /// The next event, waiting until one is appended. `None` once the backend has stopped
    /// (after an `Err` saying why).
    pub async fn next(&mut self) -> Option<Result<Recorded, StoreError>> {
        self.receiver.recv().await
    }
}

/// The same items as [`Subscription::next`], for stream combinators:
///
/// ```
/// use futures_util::StreamExt;
/// use openharness_core::{Envelope, adapter::{Recorded, Subscription}};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (tx, subscription) = Subscription::channel(16);
/// for seq in 0..4 {
///     let event = Envelope::new("user:input", serde_json::json!({ "n": seq }), None);
///     tx.send(Ok(Recorded { seq, event })).await.unwrap();
/// }
/// // A live tail never ends by itself: take what is needed.
/// let seqs: Vec<u64> = subscription
///     .filter_map(|item| async move { item.ok().map(|recorded| recorded.seq) })
///     .take(3)
///     .collect()
///     .await;
/// assert_eq!(seqs, [0, 1, 2]);
/// # });
/// ```
impl Stream for Subscription {
    type Item = Result<Recorded, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_recv(cx)
    }
}
