//! One live tail per session, shared by all of its event streams: the native event stream and
//! the platform's `/v1` notification streams alike.
//!
//! A thousand browsers watching one session should not mean a thousand store tails. They
//! should not mean a thousand JSON encodings of every event either. So the first stream of a
//! session starts a [`Hub`]: one [`Store::subscribe`] from the session's current length. The
//! hub encodes each new event once, as a finished native SSE frame, and broadcasts it (a
//! reference-counted `Bytes`, with the event itself behind an `Arc`) to every stream of the
//! session; a stream that shows events another way (the `/v1` notifications) reads the event
//! ([`Follower::next_event`]). It stops when its last stream goes away.
//!
//! The store stays the truth. A [`Follower`] (one per stream) does the following:
//!
//! 1. It subscribes to the hub first, and only then reads the history from the store, page by
//!    page. So any event appended after the read is in the broadcast.
//! 2. It delivers frames in seq order. A frame it has already sent is skipped.
//! 3. It reads any gap back from the store before the frame that revealed it. A gap can come
//!    from a hub that started later than the follower's position, or from frames it missed by
//!    lagging behind the broadcast.
//! 4. If the hub ends (its tail failed), the follower carries on with a store subscription of
//!    its own.
//!
//! Every step is safe to cancel: state changes only after an await returns. So the heartbeat
//! can interrupt a step without losing an event or sending one twice.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use axum::body::Bytes;
use openharness_core::{
    SessionId, Store, StoreError,
    adapter::{Recorded, Subscription},
};
use tokio::sync::broadcast::{self, error::RecvError};

/// Frames a hub keeps for streams that fall behind. A stream further behind reads the gap from
/// the store. The ring is allocated whole when the hub starts (about 80 bytes a slot), so it
/// stays small: 256 slots are ten turns of a chatty agent and 20 KiB per followed session,
/// where 4,096 were 320 KiB. (Tiny in tests, so that they lag.)
const CAPACITY: usize = if cfg!(test) { 8 } else { 256 };

/// Events a follower reads from the store per request while catching up.
const PAGE: u64 = 512;

/// A frame of the broadcast: the event and its native SSE frame (encoded once by the hub, or
/// when a follower that read the event from the store first needs it). `seq` is `u64::MAX`
/// for the hub's last word: its tail ended.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    seq: u64,
    recorded: Option<Arc<Recorded>>,
    bytes: Option<Bytes>,
}

impl Frame {
    /// The event read from the store, encoded when first asked for.
    fn read(recorded: Recorded) -> Self {
        Self {
            seq: recorded.seq,
            recorded: Some(Arc::new(recorded)),
            bytes: None,
        }
    }

    /// The native SSE frame.
    fn bytes(self) -> Bytes {
        match (self.bytes, self.recorded) {
            (Some(bytes), _) => bytes,
            (None, Some(recorded)) => frame(&recorded),
            (None, None) => Bytes::new(),
        }
    }
}

const ENDED: u64 = u64::MAX;

/// The live hubs, by session.
#[derive(Debug, Default)]
pub(crate) struct Hubs {
    live: Mutex<HashMap<SessionId, Weak<Hub>>>,
}

/// A session's shared tail. Dropping the last handle stops it.
#[derive(Debug)]
pub(crate) struct Hub {
    sender: broadcast::Sender<Frame>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hubs {
    /// A follower of `session` from seq `from`, joining the session's hub (or starting one).
    pub(crate) async fn follow(
        &self,
        store: &Arc<dyn Store>,
        session: &SessionId,
        from: u64,
    ) -> Result<Follower, StoreError> {
        let (hub, receiver) = match self.join(session) {
            Some(joined) => joined,
            None => {
                let len = store.session(session).await?.map_or(0, |info| info.count);
                let tail = store.subscribe(session, len).await?;
                let (sender, receiver) = broadcast::channel(CAPACITY);
                let task = tokio::spawn(forward(tail, sender.clone()));
                let started = Arc::new(Hub { sender, task });
                // Another stream may have started one meanwhile: join the older one and let
                // ours go.
                match self.adopt(session, &started) {
                    Some(joined) => joined,
                    None => (started, receiver),
                }
            }
        };
        Ok(Follower {
            store: Arc::clone(store),
            session: session.clone(),
            expected: from,
            caught_up: false,
            receiver: Some(receiver),
            _hub: Some(hub),
            held: None,
            pending: VecDeque::new(),
            own_tail: None,
            ended: false,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Weak<Hub>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn join(&self, session: &SessionId) -> Option<(Arc<Hub>, broadcast::Receiver<Frame>)> {
        let hub = self.lock().get(session)?.upgrade()?;
        let receiver = hub.sender.subscribe();
        Some((hub, receiver))
    }

    /// Records `started` as the session's hub, unless a live one is there: then joins that.
    fn adopt(
        &self,
        session: &SessionId,
        started: &Arc<Hub>,
    ) -> Option<(Arc<Hub>, broadcast::Receiver<Frame>)> {
        let mut live = self.lock();
        if let Some(hub) = live.get(session).and_then(Weak::upgrade) {
            let receiver = hub.sender.subscribe();
            return Some((hub, receiver));
        }
        live.retain(|_, hub| hub.strong_count() > 0);
        live.insert(session.clone(), Arc::downgrade(started));
        None
    }
}

/// The hub's task: each new event of the tail, encoded once, to every stream.
async fn forward(mut tail: Subscription, sender: broadcast::Sender<Frame>) {
    while let Some(Ok(recorded)) = tail.next().await {
        // No receiver right now is fine: a stream may join in a moment.
        let bytes = frame(&recorded);
        let _ = sender.send(Frame {
            seq: recorded.seq,
            recorded: Some(Arc::new(recorded)),
            bytes: Some(bytes),
        });
    }
    let _ = sender.send(Frame {
        seq: ENDED,
        recorded: None,
        bytes: None,
    });
}

/// What a follower has to deliver next: an event, or why its stream ends.
enum Pending {
    Event(Frame),
    Failed(StoreError),
}

/// One event as an SSE frame: `event: <name>`, `id: <seq>`, `data: <the event with its seq>`
/// (see [`crate::sse::frame`]).
pub(crate) fn frame(recorded: &Recorded) -> Bytes {
    match serde_json::to_string(recorded) {
        Ok(data) => crate::sse::frame(
            Some(recorded.event.name.as_ref()),
            Some(&recorded.seq.to_string()),
            &data,
        ),
        Err(err) => error_frame(&format!("event {} does not encode: {err}", recorded.seq)),
    }
}

/// An `error` frame; the stream ends after it.
pub(crate) fn error_frame(message: &str) -> Bytes {
    crate::sse::error_frame("stream_failed", message)
}

/// One stream's view of its session: history from the store, then the hub's frames, in seq
/// order, each once.
pub(crate) struct Follower {
    store: Arc<dyn Store>,
    session: SessionId,
    /// The next seq to deliver.
    expected: u64,
    /// Whether the history before the broadcast has been read.
    caught_up: bool,
    receiver: Option<broadcast::Receiver<Frame>>,
    /// Keeps the hub running while this stream lives.
    _hub: Option<Arc<Hub>>,
    /// A frame received ahead of a gap, delivered once the gap is read.
    held: Option<Frame>,
    pending: VecDeque<Pending>,
    /// The follower's own store tail, once the hub has ended.
    own_tail: Option<Subscription>,
    ended: bool,
}

impl Follower {
    /// The next native SSE frame, or `None` once the stream has ended (after an error frame).
    /// Safe to cancel between calls.
    pub(crate) async fn next(&mut self) -> Option<Bytes> {
        match self.next_pending().await? {
            Pending::Event(frame) => Some(frame.bytes()),
            Pending::Failed(err) => {
                Some(error_frame(&format!("the store stopped the stream: {err}")))
            }
        }
    }

    /// The next event, or why the stream cannot go on (its last item), or `None` after that.
    /// Safe to cancel between calls. (The `/v1` streams read events; the native ones, frames.)
    #[cfg(any(feature = "platform", feature = "eval"))]
    pub(crate) async fn next_event(&mut self) -> Option<Result<Arc<Recorded>, StoreError>> {
        match self.next_pending().await? {
            Pending::Event(frame) => frame.recorded.map(Ok),
            Pending::Failed(err) => Some(Err(err)),
        }
    }

    async fn next_pending(&mut self) -> Option<Pending> {
        loop {
            if let Some(pending) = self.pending.pop_front() {
                return Some(pending);
            }
            if self.ended {
                return None;
            }
            if let Err(err) = self.step().await {
                self.ended = true;
                return Some(Pending::Failed(err));
            }
        }
    }

    /// Moves the stream on by one read or one received frame.
    async fn step(&mut self) -> Result<(), StoreError> {
        if !self.caught_up {
            let read = self.read_up_to(u64::MAX).await?;
            self.caught_up = read == 0;
            if self.caught_up {
                // The history went out (steps run only once `pending` is empty): let go of
                // the buffer that held it, which an idle stream would keep for its life.
                self.pending = VecDeque::new();
            }
            return Ok(());
        }
        if let Some(held) = &self.held {
            if held.seq > self.expected {
                return self.read_up_to(held.seq).await.map(drop);
            }
            if let Some(held) = self.held.take() {
                self.deliver(held);
            }
            return Ok(());
        }
        if let Some(tail) = &mut self.own_tail {
            return match tail.next().await {
                Some(Ok(recorded)) => {
                    if recorded.seq >= self.expected {
                        self.expected = recorded.seq + 1;
                        self.pending
                            .push_back(Pending::Event(Frame::read(recorded)));
                    }
                    Ok(())
                }
                Some(Err(err)) => Err(err),
                None => Err(StoreError::Backend("the store's tail ended".into())),
            };
        }
        let Some(receiver) = &mut self.receiver else {
            return self.start_own_tail().await;
        };
        match receiver.recv().await {
            Ok(frame) if frame.seq == ENDED => self.start_own_tail().await,
            Ok(frame) => {
                self.held = Some(frame);
                Ok(())
            }
            // Frames were missed: the next one's seq shows the gap, read from the store.
            Err(RecvError::Lagged(_)) => Ok(()),
            Err(RecvError::Closed) => self.start_own_tail().await,
        }
    }

    fn deliver(&mut self, frame: Frame) {
        if frame.seq == self.expected {
            self.expected += 1;
            self.pending.push_back(Pending::Event(frame));
        }
    }

    /// Reads one page of stored events from `expected`, below `end`; how many it read.
    async fn read_up_to(&mut self, end: u64) -> Result<u64, StoreError> {
        let to = end.min(self.expected.saturating_add(PAGE));
        let events = self.store.events(&self.session, self.expected..to).await?;
        let read = events.len() as u64;
        for (seq, event) in (self.expected..).zip(events) {
            self.pending
                .push_back(Pending::Event(Frame::read(Recorded { seq, event })));
        }
        self.expected += read;
        if read == 0 && end != u64::MAX {
            // The store has fewer events than a frame's seq says: never deliver out of order.
            return Err(StoreError::Backend(
                format!(
                    "event {end} was broadcast but the store has only {} events",
                    self.expected
                )
                .into(),
            ));
        }
        Ok(read)
    }

    async fn start_own_tail(&mut self) -> Result<(), StoreError> {
        self.receiver = None;
        self._hub = None;
        self.own_tail = Some(self.store.subscribe(&self.session, self.expected).await?);
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use openharness_core::{Envelope, Store};
    use openharness_store::MemoryStore;
    use serde_json::json;

    use super::*;

    fn seq_of(bytes: &Bytes) -> Option<u64> {
        let text = std::str::from_utf8(bytes).ok()?;
        let line = text.lines().find(|line| line.starts_with("id: "))?;
        line[4..].parse().ok()
    }

    async fn append(store: &Arc<dyn Store>, session: &SessionId, at: u64, n: u64) {
        let events: Vec<Envelope> = (0..n)
            .map(|i| Envelope::new("tick:counted", json!({ "n": at + i }), None))
            .collect();
        store.append(session, &events, at).await.unwrap();
    }

    /// Followers from different positions, one of them slow enough to lag behind the tiny
    /// broadcast, each see every event from their position once, in order, while a writer
    /// appends in batches; the hub stops once the last one goes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn followers_see_every_event_once_in_order_even_when_they_lag() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let session = SessionId::new();
        append(&store, &session, 0, 10).await;
        let hubs = Arc::new(Hubs::default());
        let total = 10 + 40 * 25;
        let mut readers = Vec::new();
        for (from, slow) in [(0, false), (5, false), (10, true), (3, true)] {
            let mut follower = hubs.follow(&store, &session, from).await.unwrap();
            readers.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                while seen.last() != Some(&(total - 1)) {
                    let bytes = follower.next().await.unwrap();
                    seen.push(seq_of(&bytes).unwrap());
                    if slow && seen.len() % 50 == 0 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                (from, seen)
            }));
        }
        assert_eq!(hubs.lock().len(), 1, "one hub for the session");
        let mut at = 10;
        for _ in 0..40 {
            append(&store, &session, at, 25).await;
            at += 25;
            tokio::task::yield_now().await;
        }
        for reader in readers {
            let (from, seen) = reader.await.unwrap();
            assert_eq!(seen, (from..total).collect::<Vec<_>>(), "from {from}");
        }
        // A follower joining now gets the history, then what comes next.
        let mut late = hubs.follow(&store, &session, total - 2).await.unwrap();
        assert_eq!(seq_of(&late.next().await.unwrap()), Some(total - 2));
        assert_eq!(seq_of(&late.next().await.unwrap()), Some(total - 1));
        append(&store, &session, total, 1).await;
        assert_eq!(seq_of(&late.next().await.unwrap()), Some(total));
        drop(late);
        assert!(
            hubs.lock().values().all(|hub| hub.strong_count() == 0),
            "the hub stops with its last stream"
        );
    }

    #[test]
    fn a_name_with_a_line_break_is_left_out_of_the_frame() {
        let event = Envelope::new("bad\nname", json!({}), None);
        let bytes = frame(&Recorded { seq: 3, event });
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(text.starts_with("id: 3\ndata: {"), "{text}");
        assert!(text.ends_with("}\n\n"));
        assert_eq!(text.matches('\n').count(), 3, "{text}");
    }
}
