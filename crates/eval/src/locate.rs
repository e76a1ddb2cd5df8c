//! Finding a [`ForkAt`] in a recorded session, one way for everything that forks: [`locate`]
//! gives the host's fork point as an experiment's runs fork it (an event point as it is,
//! phase and state points found by stepping through the session's states), and [`position`]
//! goes on to the concrete position, as a dataset records it when a case is added (a
//! production session keeps growing; a dataset must fork where it forked when it was made).

use openharness_core::{SessionId, Store};
use openharness_host::{ForkPoint, Hosted};

use crate::case::ForkAt;
use crate::error::EvalError;
use crate::fork_spec::END;

/// Where `at` is in `session` as the host forks it (`None` for a case without one: the
/// session's end); `Ok(None)` when no position of the session matches a phase or state
/// point.
pub(crate) async fn locate(
    owner: &dyn Hosted,
    at: Option<&ForkAt>,
    session: &SessionId,
) -> Result<Option<ForkPoint>, EvalError> {
    match at {
        None => Ok(Some(ForkPoint::Position { position: END })),
        Some(ForkAt::Position { position }) => Ok(Some(ForkPoint::Position {
            position: *position,
        })),
        Some(ForkAt::Event { event, n }) => Ok(Some(ForkPoint::Nth {
            name: event.clone(),
            n: *n,
        })),
        Some(ForkAt::Phase {
            phase,
            occurrence,
            field,
        }) => {
            let mut tape = owner.tape(session).await?;
            let mut entries = Vec::new();
            let mut inside = false;
            for position in 0..=tape.len() {
                tape.step_to(position);
                let now = tape.state()?.pointer(field) == Some(phase);
                if now && !inside {
                    entries.push(position);
                }
                inside = now;
            }
            Ok(occurrence
                .pick(&entries)
                .map(|position| ForkPoint::Position { position }))
        }
        Some(ForkAt::State(pred)) => {
            let mut tape = owner.tape(session).await?;
            for position in 0..=tape.len() {
                tape.step_to(position);
                if pred(&tape.state()?) {
                    return Ok(Some(ForkPoint::Position { position }));
                }
            }
            Ok(None)
        }
    }
}

/// Where [`position`] found a fork point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// At this position.
    At(u64),
    /// A position past the session's end (`len` events).
    Beyond {
        /// The position asked.
        position: u64,
        /// The session's length.
        len: u64,
    },
    /// Nowhere: no such event, or no position where the phase or state is so.
    Nowhere,
}

/// The concrete position of `at` in `session` (`len` events long): `end` is `len`, an event
/// point the position right after that event (as the tape forks it), a position past the
/// end is [`Found::Beyond`] rather than clamped.
pub(crate) async fn position(
    owner: &dyn Hosted,
    store: &dyn Store,
    at: &ForkAt,
    session: &SessionId,
    len: u64,
) -> Result<Found, EvalError> {
    let Some(point) = locate(owner, Some(at), session).await? else {
        return Ok(Found::Nowhere);
    };
    match point {
        ForkPoint::Position { position: END } => Ok(Found::At(len)),
        ForkPoint::Position { position } if position > len => Ok(Found::Beyond { position, len }),
        ForkPoint::Position { position } => Ok(Found::At(position)),
        ForkPoint::Nth { name, n } => {
            // Names only: no payload is read.
            let mut events = store.stream_events_for_fold(session, 0..len, |_| false);
            let mut seen = 0;
            while let Some(recorded) = events.next().await {
                let recorded = recorded?;
                if recorded.event.name == name.as_str() {
                    seen += 1;
                    if seen == n {
                        return Ok(Found::At(recorded.seq + 1));
                    }
                }
            }
            Ok(Found::Nowhere)
        }
        other => Err(EvalError::Definition {
            experiment: String::new(),
            message: format!(
                "the fork point {other:?} is of a kind this version cannot turn into a position"
            ),
        }),
    }
}
