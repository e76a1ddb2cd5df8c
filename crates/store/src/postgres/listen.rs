//! The listener task of a [`PostgresStore`](super::PostgresStore): one connection that
//! `LISTEN`s for appends and wakes the live tails, reconnecting when it is lost.

use openharness_core::SessionId;
use tokio_postgres::{AsyncMessage, NoTls};

use super::error::detail;
use super::{LISTENER_GRACE, RECONNECT_PAUSE, RECONNECT_PAUSE_MAX};
use crate::live::Notifier;

/// The listener task: keeps a connection `LISTEN`ing on `channel` and wakes the tails of the
/// sessions named in its notifications, reconnecting whenever the connection is lost (see the
/// module docs). `ready` gets the outcome of the first connection; when that fails, the task
/// ends.
pub(super) async fn listen(
    config: tokio_postgres::Config,
    channel: String,
    notifier: Notifier,
    store: String,
    ready: tokio::sync::oneshot::Sender<Result<(), Option<tokio_postgres::Error>>>,
) {
    let mut ready = Some(ready);
    let mut lost_at: Option<tokio::time::Instant> = None;
    let mut pause = RECONNECT_PAUSE;
    loop {
        let mut listening = || {
            if let Some(ready) = ready.take() {
                let _ = ready.send(Ok(()));
            } else {
                tracing::info!(store = %store, "the PostgreSQL listener reconnected");
                // Appends made while it was down were not announced: every tail re-reads.
                notifier.reopen();
                notifier.notify_all();
            }
            lost_at = None;
            pause = RECONNECT_PAUSE;
        };
        let err = listen_once(&config, &channel, &notifier, &mut listening).await;
        if let Some(ready) = ready.take() {
            let _ = ready.send(Err(err));
            return;
        }
        let reason = err
            .as_ref()
            .map_or_else(|| "the connection closed".to_owned(), detail);
        let lost = *lost_at.get_or_insert_with(tokio::time::Instant::now);
        tracing::warn!(store = %store, %reason, "the PostgreSQL listener connection was lost; reconnecting");
        if lost.elapsed() >= LISTENER_GRACE && notifier.closed().is_none() {
            notifier.close(format!(
                "the listener connection was lost and could not reconnect for {} s: {reason}",
                LISTENER_GRACE.as_secs()
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RECONNECT_PAUSE_MAX);
    }
}

/// One listener connection: connects, `LISTEN`s (then calls `listening`), and dispatches
/// notifications until the connection is lost; returns the error that ended it, if any.
async fn listen_once(
    config: &tokio_postgres::Config,
    channel: &str,
    notifier: &Notifier,
    listening: &mut (dyn FnMut() + Send),
) -> Option<tokio_postgres::Error> {
    let (client, mut connection) = match config.connect(NoTls).await {
        Ok(connected) => connected,
        Err(err) => return Some(err),
    };
    let sql = format!("LISTEN \"{channel}\"");
    let listen = client.batch_execute(&sql);
    tokio::pin!(listen);
    let mut listened = false;
    loop {
        tokio::select! {
            done = &mut listen, if !listened => match done {
                Ok(()) => {
                    listened = true;
                    listening();
                }
                Err(err) => return Some(err),
            },
            message = std::future::poll_fn(|cx| connection.poll_message(cx)) => match message {
                Some(Ok(AsyncMessage::Notification(note))) => {
                    if let Ok(session) = note.payload().parse::<SessionId>() {
                        notifier.notify(&session);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => return Some(err),
                None => return None,
            },
        }
    }
}
