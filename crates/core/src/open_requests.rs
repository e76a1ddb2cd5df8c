//! [`OpenRequests`]: the `input:requested` events a session has not had answered, followed an
//! event at a time. The one bookkeeping shared by the runtime (as it records a turn) and by
//! recovery (as it reads a log back to resume or fork it).

use crate::builtin::{InputReceived, InputRequested, SessionForked};
use crate::event::{Envelope, Event, EventId};

/// The ids of the `input:requested` events still waiting for their `input:received`, oldest
/// first.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OpenRequests(Vec<EventId>);

impl OpenRequests {
    /// Requests known to be open (a turn's end or a fork point lists them).
    pub(crate) fn from_ids(ids: Vec<EventId>) -> Self {
        Self(ids)
    }

    /// Follows one event: a request opens, an answer closes its request, and a fork's first
    /// event (`first_of_session`, a `session:forked`) starts from the requests its parent had
    /// open. Events that do not decode change nothing.
    pub(crate) fn follow(&mut self, event: &Envelope, first_of_session: bool) {
        match event.name.as_ref() {
            InputRequested::NAME => self.0.push(event.id),
            InputReceived::NAME => {
                if let Ok(received) = event.decode::<InputReceived>() {
                    self.0.retain(|id| *id != received.request_id);
                }
            }
            SessionForked::NAME if first_of_session => {
                if let Ok(forked) = event.decode::<SessionForked>() {
                    self.0 = forked.open_requests;
                }
            }
            _ => {}
        }
    }

    /// The open requests, oldest first.
    pub(crate) fn ids(&self) -> &[EventId] {
        &self.0
    }

    /// Whether no request waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The open requests, oldest first.
    pub(crate) fn into_ids(self) -> Vec<EventId> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::Pending;

    fn envelope<E: Event>(event: &E) -> Envelope {
        let pending = Pending::of(event);
        Envelope::new(pending.name, pending.payload, None)
    }

    #[test]
    fn a_request_stays_open_until_its_answer() {
        let mut open = OpenRequests::default();
        let first = envelope(&InputRequested::new("which?"));
        let second = envelope(&InputRequested::new("and?"));
        open.follow(&first, false);
        open.follow(&second, false);
        assert_eq!(open.ids(), &[first.id, second.id]);
        let answer = InputReceived::new(first.id, "this");
        open.follow(&envelope(&answer), false);
        assert_eq!(open.ids(), &[second.id]);
        assert!(!open.is_empty());
    }
}
