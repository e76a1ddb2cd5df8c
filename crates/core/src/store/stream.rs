//! [`EventStream`]: a session's stored events as a stream that holds one page in memory, as
//! [`Store::stream_events`](crate::Store::stream_events) gives it.

use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::{Recorded, Store, StoreError};
use crate::event::{Envelope, SessionId};

/// How many events the default [`Store::stream_events`] reads per call of [`Store::events`]:
/// the most a stream holds in memory at once.
pub const EVENT_PAGE: usize = 1024;

/// A session's stored events in order, each with its seq, from [`Store::stream_events`].
///
/// A [`Stream`] of `Result<Recorded, StoreError>`: read it with [`next`](EventStream::next) or
/// with the combinators of `futures_util::StreamExt`. It ends after the last event of the
/// requested range that the session holds; a failed read is yielded once, and then the stream
/// ends. Once ended it stays ended (it is a `FusedStream`).
///
/// Backends that can stream rows natively build one with [`EventStream::new`]; the default
/// implementation is [`EventStream::paged`].
///
/// ```
/// use futures_util::{StreamExt, stream};
/// use openharness_core::{Envelope, adapter::{EventStream, Recorded}};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let events = (0..3).map(|seq| {
///     let event = Envelope::new("user:input", serde_json::json!({ "n": seq }), None);
///     Ok(Recorded { seq, event })
/// });
/// let stream = EventStream::new(stream::iter(events.collect::<Vec<_>>()));
/// let seqs: Vec<u64> = stream.map(|item| item.map_or(u64::MAX, |r| r.seq)).collect().await;
/// assert_eq!(seqs, [0, 1, 2]);
/// # });
/// ```
pub struct EventStream<'a> {
    inner: Pin<Box<dyn Stream<Item = Result<Recorded, StoreError>> + Send + 'a>>,
    /// The inner stream has ended: it is not polled again.
    ended: bool,
}

impl<'a> EventStream<'a> {
    /// Wraps any stream of recorded events, such as a backend's own row stream.
    pub fn new(stream: impl Stream<Item = Result<Recorded, StoreError>> + Send + 'a) -> Self {
        Self {
            inner: Box::pin(stream),
            ended: false,
        }
    }

    /// The events of `session` with seqs in `range`, read through [`Store::events`] at most
    /// `page` events at a time (at least 1), so no more than one page is held in memory.
    ///
    /// A page shorter than requested means the session ends there: the stream stops without
    /// another read. This is what [`Store::stream_events`] does unless a backend overrides it.
    ///
    /// ```
    /// use openharness_core::{SessionId, Store, StoreError, adapter::EventStream};
    ///
    /// /// Counts a session's tool calls reading 256 events at a time.
    /// async fn tool_calls(store: &dyn Store, session: &SessionId) -> Result<u64, StoreError> {
    ///     let mut events = EventStream::paged(store, session, 0..u64::MAX, 256);
    ///     let mut calls = 0;
    ///     while let Some(recorded) = events.next().await {
    ///         calls += u64::from(recorded?.event.name == "tool:called");
    ///     }
    ///     Ok(calls)
    /// }
    /// ```
    pub fn paged<S: Store + ?Sized>(
        store: &'a S,
        session: &SessionId,
        range: Range<u64>,
        page: usize,
    ) -> Self {
        let paging = Paging {
            store,
            session: session.clone(),
            next: range.start,
            end: range.end,
            page_size: u64::try_from(page.max(1)).unwrap_or(u64::MAX),
            page: Vec::new().into_iter(),
            finished: false,
        };
        Self::new(futures_util::stream::unfold(paging, Paging::advance))
    }

    /// The next event, or `None` at the end of the range (or after an error), and `None` again
    /// if asked after that.
    pub async fn next(&mut self) -> Option<Result<Recorded, StoreError>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for EventStream<'_> {
    type Item = Result<Recorded, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let item = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(None) = item {
            self.ended = true;
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.ended {
            (0, Some(0))
        } else {
            self.inner.size_hint()
        }
    }
}

/// Once ended, an [`EventStream`] stays ended.
impl futures_core::FusedStream for EventStream<'_> {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

impl fmt::Debug for EventStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

/// The state of [`EventStream::paged`]: the page being yielded and where the next one starts.
struct Paging<'a, S: ?Sized> {
    store: &'a S,
    session: SessionId,
    /// The seq of the next event to yield.
    next: u64,
    /// The end of the requested range (exclusive).
    end: u64,
    page_size: u64,
    /// The rest of the current page; its first event has seq `next`.
    page: std::vec::IntoIter<Envelope>,
    /// No read is left to do: the last page was short, or a read failed.
    finished: bool,
}

impl<S: Store + ?Sized> Paging<'_, S> {
    /// Yields the next event, reading the next page first when the current one is used up.
    async fn advance(mut self) -> Option<(Result<Recorded, StoreError>, Self)> {
        loop {
            if let Some(event) = self.page.next() {
                let seq = self.next;
                self.next += 1;
                return Some((Ok(Recorded { seq, event }), self));
            }
            if self.finished || self.next >= self.end {
                return None;
            }
            let to = self.next.saturating_add(self.page_size).min(self.end);
            let wanted = to - self.next;
            match self.store.events(&self.session, self.next..to).await {
                Ok(mut page) => {
                    if (page.len() as u64) < wanted {
                        self.finished = true;
                    }
                    // A backend returning more than asked must not shift the seqs.
                    page.truncate(usize::try_from(wanted).unwrap_or(usize::MAX));
                    self.page = page.into_iter();
                }
                Err(err) => {
                    self.finished = true;
                    return Some((Err(err), self));
                }
            }
        }
    }
}
