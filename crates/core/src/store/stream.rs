//! [`EventStream`]: a session's stored events as a stream that holds one page in memory, as
//! [`Store::stream_events`](crate::Store::stream_events) gives it.

use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::{Folded, Recorded, Store, StoreError};
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
    /// An event [`start`](EventStream::start) found ready, yielded next.
    ready: Option<Result<Recorded, StoreError>>,
}

impl<'a> EventStream<'a> {
    /// Wraps any stream of recorded events, such as a backend's own row stream.
    pub fn new(stream: impl Stream<Item = Result<Recorded, StoreError>> + Send + 'a) -> Self {
        Self {
            inner: Box::pin(stream),
            ended: false,
            ready: None,
        }
    }

    /// The events of `session` with seqs in `range`, read through [`Store::events`] at most
    /// `page` events at a time (at least 1), so no more than two pages are held in memory.
    ///
    /// While the consumer takes one page's events, the next page is already being read: a
    /// backend that reads on another thread (the default store does) decodes it while the
    /// consumer folds (a fold of a 20,000-event session from the default store took 44–57 ms
    /// this way, 61–84 ms page after page). A consumer that stops early has had at most one
    /// page read for nothing.
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
        Self::new(Paging::new(store, session, range, page))
    }

    /// [`EventStream::paged`] for a fold: its pages are read through
    /// [`Store::events_for_fold`], so the events whose name `folds` refuses may come without
    /// their payload. This is what [`Store::stream_events_for_fold`] does unless a backend
    /// overrides it.
    ///
    /// ```
    /// use openharness_core::{SessionId, Store, StoreError, adapter::EventStream};
    ///
    /// /// The seqs of a session's user inputs, reading 256 events at a time.
    /// async fn inputs(store: &dyn Store, session: &SessionId) -> Result<Vec<u64>, StoreError> {
    ///     let is_input = |name: &str| name == "user:input";
    ///     let mut events = EventStream::paged_for_fold(store, session, 0..u64::MAX, 256, is_input);
    ///     let mut seqs = Vec::new();
    ///     while let Some(recorded) = events.next().await {
    ///         let recorded = recorded?;
    ///         if recorded.event.name == "user:input" {
    ///             seqs.push(recorded.seq);
    ///         }
    ///     }
    ///     Ok(seqs)
    /// }
    /// ```
    pub fn paged_for_fold<S: Store + ?Sized>(
        store: &'a S,
        session: &SessionId,
        range: Range<u64>,
        page: usize,
        folds: Folded,
    ) -> Self {
        let mut paging = Paging::new(store, session, range, page);
        paging.folds = Some(folds);
        Self::new(paging)
    }

    /// Starts reading without waiting: polls the stream once, so a backend that reads on
    /// another thread (the default store does) begins its first page while the caller does
    /// something else, such as decoding the snapshot the events are folded onto. An event
    /// already available is kept and yielded by the next [`next`](EventStream::next).
    ///
    /// ```
    /// use openharness_core::{SessionId, Store, StoreError};
    ///
    /// async fn count_while(store: &impl Store, session: &SessionId, other: impl FnOnce()) -> Result<u64, StoreError> {
    ///     let mut events = store.stream_events(session, 0..u64::MAX);
    ///     events.start();
    ///     other(); // the first page is being read meanwhile
    ///     let mut count = 0;
    ///     while let Some(recorded) = events.next().await {
    ///         recorded?;
    ///         count += 1;
    ///     }
    ///     Ok(count)
    /// }
    /// ```
    pub fn start(&mut self) {
        if self.ended || self.ready.is_some() {
            return;
        }
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match self.inner.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(item)) => self.ready = Some(item),
            Poll::Ready(None) => self.ended = true,
            Poll::Pending => {}
        }
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
        if let Some(item) = self.ready.take() {
            return Poll::Ready(Some(item));
        }
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
        let ready = usize::from(self.ready.is_some());
        if self.ended {
            (ready, Some(ready))
        } else {
            let (low, high) = self.inner.size_hint();
            (
                low.saturating_add(ready),
                high.and_then(|high| high.checked_add(ready)),
            )
        }
    }
}

/// Once ended, an [`EventStream`] stays ended.
impl futures_core::FusedStream for EventStream<'_> {
    fn is_terminated(&self) -> bool {
        self.ended && self.ready.is_none()
    }
}

impl fmt::Debug for EventStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

/// A read of one page in flight.
type PageRead<'a> = Pin<Box<dyn Future<Output = Result<Vec<Envelope>, StoreError>> + Send + 'a>>;

/// The stream behind [`EventStream::paged`]: the page being yielded, the read of the next one,
/// and where the read after that starts.
struct Paging<'a, S: ?Sized> {
    store: &'a S,
    /// For a fold: the names whose payloads are read (see [`Store::events_for_fold`]).
    folds: Option<Folded>,
    session: SessionId,
    /// The seq of the next event to yield.
    next: u64,
    /// Where the next read starts.
    asked: u64,
    /// The end of the requested range (exclusive).
    end: u64,
    /// How many events one read asks for.
    page_size: u64,
    /// The rest of the current page; its first event has seq `next`.
    page: std::vec::IntoIter<Envelope>,
    /// The read in flight, with how many events it asked for.
    reading: Option<(u64, PageRead<'a>)>,
    /// A finished read not yet yielded from, with how many events it asked for.
    read: Option<(u64, Result<Vec<Envelope>, StoreError>)>,
    /// No read is left to do: a page came back short, or a read failed.
    read_all: bool,
}

impl<'a, S: Store + ?Sized> Paging<'a, S> {
    /// Paging through `range` of `session`, `page` events at a time (at least 1).
    fn new(store: &'a S, session: &SessionId, range: Range<u64>, page: usize) -> Self {
        Self {
            store,
            folds: None,
            session: session.clone(),
            next: range.start,
            asked: range.start,
            end: range.end,
            page_size: u64::try_from(page.max(1)).unwrap_or(u64::MAX),
            page: Vec::new().into_iter(),
            reading: None,
            read: None,
            read_all: false,
        }
    }

    /// Starts the next read, unless the range is read or the session ended; whether it did.
    fn start_read(&mut self) -> bool {
        if self.read_all || self.asked >= self.end {
            return false;
        }
        let to = self.asked.saturating_add(self.page_size).min(self.end);
        let range = self.asked..to;
        let (store, session, folds) = (self.store, self.session.clone(), self.folds);
        let read: PageRead<'a> = Box::pin(async move {
            match folds {
                Some(folds) => store.events_for_fold(&session, range, folds).await,
                None => store.events(&session, range).await,
            }
        });
        self.reading = Some((to - self.asked, read));
        self.asked = to;
        true
    }

    /// Polls the read in flight, keeping its result once it is done.
    fn poll_reading(&mut self, cx: &mut Context<'_>) {
        if let Some((wanted, reading)) = &mut self.reading
            && let Poll::Ready(result) = reading.as_mut().poll(cx)
        {
            self.read = Some((*wanted, result));
            self.reading = None;
        }
    }
}

impl<S: Store + ?Sized> Stream for Paging<'_, S> {
    type Item = Result<Recorded, StoreError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            this.poll_reading(cx);
            if let Some(event) = this.page.next() {
                let seq = this.next;
                this.next += 1;
                // Read the next page while this one is taken.
                if this.reading.is_none() && this.read.is_none() && this.start_read() {
                    this.poll_reading(cx);
                }
                return Poll::Ready(Some(Ok(Recorded { seq, event })));
            }
            match this.read.take() {
                Some((wanted, Ok(mut page))) => {
                    if (page.len() as u64) < wanted {
                        this.read_all = true;
                    }
                    // A backend returning more than asked must not shift the seqs.
                    page.truncate(usize::try_from(wanted).unwrap_or(usize::MAX));
                    this.page = page.into_iter();
                }
                Some((_, Err(err))) => {
                    this.read_all = true;
                    return Poll::Ready(Some(Err(err)));
                }
                None if this.reading.is_some() => return Poll::Pending,
                None => {
                    if !this.start_read() {
                        return Poll::Ready(None);
                    }
                }
            }
        }
    }
}
