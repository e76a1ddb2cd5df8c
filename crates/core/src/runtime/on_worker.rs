//! Where the loop runs: on one of the tokio runtime's worker threads, beside its agents.
//!
//! The loop and its agent tasks hand work to each other on every agent call (the loop starts
//! the task, the task sends its events back). When the loop runs where its caller awaits it,
//! and that is `#[tokio::main]`'s `block_on` (the usual first program), the loop is on the
//! main thread and every agent task on a worker: each hand-off wakes the other thread, two
//! cross-thread wake-ups per call. Measured on the race bench's 5,000 executor calls with an
//! in-memory store: 485–498 ms with the loop on the main thread, 142–190 ms with it on a worker,
//! where tokio runs a task a worker spawns or wakes next on that same worker.
//!
//! So on a multi-thread runtime the loop is spawned as a task of its own and awaited. Nothing
//! the caller sees changes: dropping the returned future aborts the task (the run stops at
//! its next await, as it did when the future was dropped), a panic in the loop is resumed in
//! the caller, and the caller's tracing span is the task's. On a current-thread runtime
//! everything already shares one thread, and the loop runs in place.

use std::future::Future;
use std::panic::resume_unwind;

use tracing::Instrument;

use crate::error::Error;

/// Runs `run` on a worker thread of the current multi-thread runtime (in place on any other),
/// returning its result as if it had been awaited here.
pub(super) async fn on_worker<T, F>(run: F) -> Result<T, Error>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
{
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle
        }
        _ => return run.await,
    };
    let mut task = AbortOnDrop(handle.spawn(run.instrument(tracing::Span::current())));
    match (&mut task.0).await {
        Ok(result) => result,
        Err(err) if err.is_panic() => resume_unwind(err.into_panic()),
        Err(err) => Err(Error::Other(
            format!("the run's task ended before the run did: {err}").into(),
        )),
    }
}

/// A spawned task that is aborted when its handle is dropped, so dropping the caller's future
/// stops the run as it stopped when the loop ran in that future.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
