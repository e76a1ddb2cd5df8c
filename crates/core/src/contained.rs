//! Running the workflow's own code (a handler; an agent's `when`, `prompt` or `on_output`)
//! with its panics contained: caught, kept out of stderr, and reported once as the typed
//! error or `error:occurred` the caller records.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Whether a panic on this thread is the workflow's code's, caught by [`quietly`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs the workflow's own code (a handler; an agent's `when`, `prompt` or `on_output`),
/// catching its panic without the panic hook's print to stderr: the run reports the panic
/// once, as the `error:occurred` it records (its message names the event or agent and the
/// panic's message). Where it panicked is logged at debug level (`OPENHARNESS_LOG=debug`).
///
/// The process's panic hook is wrapped once: a panic outside a handler, or on another
/// thread, reaches the hook that was installed before, as it would have.
pub(crate) fn quietly<R>(code: impl FnOnce() -> R) -> std::thread::Result<R> {
    catch_quietly(code)
}

/// Runs `code`, catching its panic without the panic hook's print to stderr (on this thread;
/// a panic elsewhere reaches the hook as before): for code whose panics the caller contains
/// and reports as a typed error, such as a store reading a damaged file through a library that
/// panics on bad bytes. The workflow's own code runs this way too.
///
/// ```
/// let caught = openharness_core::adapter::catch_quietly(|| -> u32 { panic!("bad bytes") });
/// assert!(caught.is_err());
/// assert_eq!(openharness_core::adapter::catch_quietly(|| 7).ok(), Some(7));
/// ```
pub fn catch_quietly<R>(code: impl FnOnce() -> R) -> std::thread::Result<R> {
    static WRAP_HOOK: Once = Once::new();
    WRAP_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                tracing::debug!(
                    location = %info.location().map(ToString::to_string).unwrap_or_default(),
                    panic = %panic_message(info.payload()),
                    "a contained panic (the workflow's code, or a library on bad input)"
                );
            } else {
                previous(info);
            }
        }));
    });
    let outer = QUIET.with(|quiet| quiet.replace(true));
    let result = catch_unwind(AssertUnwindSafe(code));
    QUIET.with(|quiet| quiet.set(outer));
    result
}

/// The text of a panic payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// Awaits `future` with its panics contained as [`quietly`] contains a handler's: each poll
/// runs under [`catch_quietly`], and a panic ends the wait with the panic's payload (the
/// future is not polled again). For a provider's call, whose panic would otherwise end the
/// agent's task without the loop hearing of it.
pub(crate) async fn quietly_awaited<F: Future + Unpin>(
    mut future: F,
) -> std::thread::Result<F::Output> {
    std::future::poll_fn(
        |cx| match catch_quietly(|| std::pin::Pin::new(&mut future).poll(cx)) {
            Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready(Ok(output)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        },
    )
    .await
}
