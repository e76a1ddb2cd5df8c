//! The append contract every backend shares: deciding, from a session's length and where the
//! batch's event ids are already stored, whether an append writes, is a no-op retry, or fails.
//!
//! Backends call [`plan_append`] inside whatever makes their append atomic (a lock, a write
//! transaction) and then either write the batch or return early, so the rules live in one place.

use std::collections::HashSet;

use openharness_core::{Envelope, EventId, SessionId, StoreError};

/// What an append must do, decided by [`plan_append`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Write the batch at the session's current length.
    Write,
    /// Write nothing and succeed with this length: the batch is empty, or it is a retry of a
    /// batch that is already stored.
    Done(u64),
}

/// Decides what appending `events` to `session` (currently `len` events long) at
/// `expected_seq` must do.
///
/// `stored_seq` looks up the seq an event id is stored at in this session, if any.
///
/// The rules, in order:
/// 1. an empty batch writes nothing and succeeds with the current length;
/// 2. a batch that repeats an id is [`StoreError::Invalid`];
/// 3. a batch whose ids are all stored at consecutive seqs starting at `expected_seq` is a
///    retry after a lost acknowledgement: it writes nothing and succeeds with
///    `expected_seq + events.len()`, the length the original append returned;
/// 4. a batch with any other id already stored in the session is [`StoreError::Invalid`];
/// 5. a session whose length is not `expected_seq` is a [`StoreError::Conflict`];
/// 6. otherwise the batch is written.
pub(crate) fn plan_append<E: From<StoreError>>(
    session: &SessionId,
    events: &[Envelope],
    expected_seq: u64,
    len: u64,
    mut stored_seq: impl FnMut(&EventId) -> Result<Option<u64>, E>,
) -> Result<Plan, E> {
    if events.is_empty() {
        return Ok(Plan::Done(len));
    }
    if events.len() > 1 {
        let mut seen = HashSet::with_capacity(events.len());
        if let Some(repeated) = events.iter().find(|event| !seen.insert(event.id)) {
            return Err(StoreError::Invalid(format!(
                "event {} appears more than once in one append to session {session}",
                repeated.id
            ))
            .into());
        }
    }

    let mut stored = Vec::with_capacity(events.len());
    for event in events {
        stored.push(stored_seq(&event.id)?);
    }
    let first_stored = events
        .iter()
        .zip(&stored)
        .find_map(|(event, seq)| seq.map(|seq| (event, seq)));
    if let Some((event, seq)) = first_stored {
        let is_retry = stored
            .iter()
            .zip(expected_seq..)
            .all(|(seq, wanted)| *seq == Some(wanted));
        if is_retry {
            return Ok(Plan::Done(expected_seq.saturating_add(events.len() as u64)));
        }
        return Err(StoreError::Invalid(format!(
            "event {} is already stored in session {session} at seq {seq}; \
             a retried append must repeat the same events at the same seq ({expected_seq})",
            event.id
        ))
        .into());
    }

    if len == expected_seq {
        Ok(Plan::Write)
    } else {
        Err(StoreError::Conflict {
            session: session.clone(),
            expected: expected_seq,
            actual: len,
        }
        .into())
    }
}
