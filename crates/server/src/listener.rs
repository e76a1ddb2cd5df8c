//! A listener that keeps a server answering when clients misbehave: [`GuardedListener`], what
//! [`serve`](crate::serve) (and `openharness serve`) accept connections with.
//!
//! - **Idle connections close.** A connection on which the server has written nothing for
//!   [`ConnectionLimits::idle`] is closed: a keep-alive connection nobody uses, a client that
//!   drips a request's head or body a byte at a time (slow loris), one that never sends
//!   anything. A response being written resets the clock, so an event stream (whose heartbeat
//!   writes every 15 s by default) lives as long as its client.
//! - **A cap on connections.** At most [`ConnectionLimits::max_connections`] are open; a new
//!   one past the cap closes the one that has been silent longest instead of waiting, so a
//!   flood of idle connections cannot starve a real client (and the process never runs out of
//!   file descriptors).
//! - **No Nagle delay.** Each accepted socket has `TCP_NODELAY` set, as axum's own listener
//!   leaves to `tap_io`: an event stream writes one small frame at a time, and Nagle's
//!   algorithm would hold each behind the client's delayed acknowledgement (up to 40 ms on
//!   Linux) whenever the previous one is unacknowledged.

use std::collections::HashMap;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// How many connections a server keeps open, and how long one may stay silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// The most connections open at once (default 512, below the usual limit of 1,024 open
    /// files); one more closes the longest-silent one.
    pub max_connections: usize,
    /// How long a connection may go without the server writing to it (default 60 s: longer
    /// than the request timeout and twice the event streams' heartbeat).
    pub idle: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            idle: Duration::from_secs(60),
        }
    }
}

impl ConnectionLimits {
    /// Sets [`ConnectionLimits::max_connections`] (at least 1).
    ///
    /// ```
    /// use std::time::Duration;
    /// use openharness_server::ConnectionLimits;
    /// let limits = ConnectionLimits::default().max_connections(64).idle(Duration::from_secs(5));
    /// assert_eq!((limits.max_connections, limits.idle.as_secs()), (64, 5));
    /// ```
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets [`ConnectionLimits::idle`].
    #[must_use]
    pub fn idle(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }
}

/// What the listener knows of one open connection.
#[derive(Debug)]
struct Watch {
    /// When the server last wrote to it, in milliseconds since the listener started.
    last_write: AtomicU64,
    /// Set to close it (the cap was reached and it was the longest silent).
    evicted: AtomicBool,
    /// Wakes its pending read or write when it is evicted.
    waker: AtomicWaker,
}

#[derive(Debug, Default)]
struct Open {
    next_id: u64,
    connections: HashMap<u64, Arc<Watch>>,
}

/// A TCP listener with [`ConnectionLimits`], for `axum::serve`.
#[derive(Debug)]
pub struct GuardedListener {
    inner: TcpListener,
    limits: ConnectionLimits,
    started: Instant,
    open: Arc<Mutex<Open>>,
}

impl GuardedListener {
    /// Guards `inner` with `limits`.
    pub fn new(inner: TcpListener, limits: ConnectionLimits) -> Self {
        Self {
            inner,
            limits,
            started: Instant::now(),
            open: Arc::default(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Registers a new connection, closing the longest-silent one when at the cap.
    fn admit(&self) -> (u64, Arc<Watch>) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.connections.len() >= self.limits.max_connections
            && let Some(oldest) = open
                .connections
                .iter()
                // The longest silent; among as silent (the clock counts milliseconds), the oldest.
                .min_by_key(|(id, watch)| (watch.last_write.load(Ordering::Relaxed), **id))
                .map(|(id, _)| *id)
            && let Some(watch) = open.connections.remove(&oldest)
        {
            watch.evicted.store(true, Ordering::Relaxed);
            watch.waker.wake();
        }
        let watch = Arc::new(Watch {
            last_write: AtomicU64::new(self.now()),
            evicted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        open.next_id += 1;
        let id = open.next_id;
        open.connections.insert(id, Arc::clone(&watch));
        (id, watch)
    }
}

impl axum::serve::Listener for GuardedListener {
    type Io = GuardedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    if let Err(err) = stream.set_nodelay(true) {
                        // The connection still works, only its small writes may wait.
                        tracing::debug!(error = %err, "setting TCP_NODELAY failed");
                    }
                    let (id, watch) = self.admit();
                    let sleep = Box::pin(tokio::time::sleep(self.limits.idle));
                    let io = GuardedStream {
                        inner: stream,
                        id,
                        watch,
                        open: Arc::clone(&self.open),
                        started: self.started,
                        idle: self.limits.idle,
                        deadline: sleep,
                    };
                    return (io, addr);
                }
                Err(err) => {
                    // Out of descriptors or a connection reset before it was taken: wait a
                    // moment rather than spin, as axum's own listener does.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// One connection of a [`GuardedListener`]: closed when idle too long or evicted.
#[derive(Debug)]
pub struct GuardedStream {
    inner: TcpStream,
    id: u64,
    watch: Arc<Watch>,
    open: Arc<Mutex<Open>>,
    started: Instant,
    idle: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl Drop for GuardedStream {
    fn drop(&mut self) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .connections
            .remove(&self.id);
    }
}

impl GuardedStream {
    /// An error when the connection must close (evicted, or silent past its deadline);
    /// otherwise registers the task to be woken at the deadline or on eviction.
    fn closing(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        self.watch.waker.register(cx.waker());
        if self.watch.evicted.load(Ordering::Relaxed) {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed: the server is at its cap of connections and this one was the longest silent",
            ));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Some(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: nothing was written to this connection for its idle timeout",
            ));
        }
        None
    }

    fn wrote(&mut self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.watch.last_write.store(now, Ordering::Relaxed);
        let next = tokio::time::Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }
}

impl AsyncRead for GuardedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(err) = self.closing(cx) {
            return Poll::Ready(Err(err));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for GuardedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.watch.evicted.load(Ordering::Relaxed) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed: evicted at the cap of connections",
            )));
        }
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.wrote();
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.watch.evicted.load(Ordering::Relaxed) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed: evicted at the cap of connections",
            )));
        }
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.wrote();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Serves `app` on `listener` with `limits` until `shutdown` completes (see the module docs):
/// what `openharness serve` runs.
///
/// ```no_run
/// # async fn demo(host: openharness_host::Host) -> std::io::Result<()> {
/// use openharness_server::{ConnectionLimits, ServerOptions, router, serve};
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let app = router(host, ServerOptions::default());
/// // Stops when `stop` is sent (or dropped); `tokio::signal::ctrl_c()` is the usual signal.
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// # drop(stop);
/// serve(listener, app, ConnectionLimits::default(), async {
///     let _ = stopped.await;
/// })
/// .await
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // Through `into_make_service`, each connection gets a clone of the router, a reference
    // count. Handing axum the router itself rebuilds its route table for every connection
    // (`Router::with_state`, to convert the routes eagerly): about 50 KiB per connection with
    // this server's routes, kept for as long as the connection lives.
    axum::serve(
        GuardedListener::new(listener, limits),
        app.into_make_service(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener as _;

    use super::*;

    #[tokio::test]
    async fn accepted_sockets_send_small_writes_at_once() -> io::Result<()> {
        let inner = TcpListener::bind("127.0.0.1:0").await?;
        let addr = inner.local_addr()?;
        let mut listener = GuardedListener::new(inner, ConnectionLimits::default());
        let client = TcpStream::connect(addr).await?;
        assert!(
            !client.nodelay()?,
            "a fresh socket has Nagle's algorithm on"
        );
        let (accepted, _) = listener.accept().await;
        assert!(accepted.inner.nodelay()?);
        Ok(())
    }
}
