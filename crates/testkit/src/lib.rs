//! What Open Harness's own tests share (a dev-only crate, never published): one way to wait
//! for something to become true, with one timeout policy and one failure message, one HTTP
//! client, and the fixture workflows.
//!
//! A test that waits for a background task (a turn to end, a tail to catch up, a claim to be
//! given up) polls with [`eventually`] instead of writing its own loop: every wait then has
//! the same interval, a limit that says how long it waited, and a panic that names what it
//! waited for and what it saw last. A test that talks to a server on a socket uses the one
//! client in [`http`]; a synchronous test runs either through [`block_on`].
//!
//! # Modules
//!
//! - This file: [`eventually`], its [`LIMIT`] and [`INTERVAL`], and [`block_on`].
//! - [`http`]: [`http::Client`] for a socket address, its [`http::Response`]s and event streams.
//! - `events` (feature `fixtures`): a log's event names, and its first event of a type.
//! - `notes` (feature `fixtures`): the note-taking workflow's events, state and agent, which
//!   several suites build workflows from.
//! - `inbox` (feature `fixtures`): a workflow whose model holds a call until the test lets it
//!   go, for what happens while a turn runs (second inputs, steers, stops).
//! - [`openapi`]: that every `$ref` of an OpenAPI document resolves.
//! - [`python`]: pinned PyPI packages in virtualenvs under `target/`, installed on first use.
//! - [`random`]: [`random::SplitMix`], a seeded generator for tests that must be repeatable.

#[cfg(feature = "fixtures")]
pub mod events;
pub mod http;
#[cfg(feature = "fixtures")]
pub mod inbox;
#[cfg(feature = "fixtures")]
pub mod notes;
pub mod openapi;
pub mod python;
pub mod random;

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a wait lasts unless the test says otherwise: long enough for a loaded CI machine,
/// short enough that a hang fails the test rather than the run.
pub const LIMIT: Duration = Duration::from_secs(10);

/// How often [`eventually`] polls.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// Polls `poll` every [`INTERVAL`] until it returns `Ok`, and returns that value; after
/// `limit`, panics with `what` and the last `Err` it returned (what the test saw instead).
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let polls = AtomicU32::new(0);
/// let seen = openharness_testkit::eventually(Duration::from_secs(1), "three polls", || async {
///     let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
///     if n == 3 { Ok(n) } else { Err(n) }
/// })
/// .await;
/// assert_eq!(seen, 3);
/// # }
/// ```
///
/// # Panics
///
/// When `poll` has not returned `Ok` within `limit`: that is the test failing.
pub async fn eventually<T, E, F, Fut>(limit: Duration, what: &str, mut poll: F) -> T
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    loop {
        let last = match poll().await {
            Ok(value) => return value,
            Err(last) => last,
        };
        if started.elapsed() >= limit {
            panic!("waited {limit:?} for {what}; the last poll saw {last:?}");
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// Runs `future` to its end on a fresh current-thread runtime (time and I/O enabled) and
/// returns its output: the blocking front of this kit, for a synchronous `#[test]` that
/// starts a child process and talks to it with [`http::Client`], or waits with
/// [`eventually`]. What the future opens lives only as long as this call (the runtime ends
/// with it): open an event stream and read it within the same `block_on`.
///
/// ```
/// use std::time::Duration;
///
/// let seen = openharness_testkit::block_on(openharness_testkit::eventually(
///     Duration::from_secs(1),
///     "a value",
///     || async { Ok::<_, ()>(7) },
/// ));
/// assert_eq!(seen, 7);
/// ```
///
/// # Panics
///
/// When called from inside a runtime (an async test awaits instead), or when `future` panics.
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_that_never_ends_names_what_it_waited_for() {
        let waited = tokio::spawn(eventually(
            Duration::from_millis(30),
            "the moon to turn blue",
            || async { Err::<(), _>("grey") },
        ))
        .await;
        let panic = waited.expect_err("the wait panics");
        let message = panic
            .into_panic()
            .downcast::<String>()
            .map(|message| *message)
            .unwrap_or_default();
        assert!(message.contains("the moon to turn blue"), "{message}");
        assert!(message.contains("\"grey\""), "{message}");
    }
}
