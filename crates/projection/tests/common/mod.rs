//! What the projection suites share: events with fixed ids and times, so projections and
//! their snapshots are the same on every run.

#![allow(clippy::unwrap_used, dead_code)]

use chrono::DateTime;
use openharness_core::{Envelope, Event, EventId};
use uuid::Uuid;

/// The id of event number `n`.
pub(crate) fn id(n: u128) -> EventId {
    EventId::from_uuid(Uuid::from_u128(n))
}

/// Event number `n`: a fixed id, a fixed time `n` seconds into the session, caused by event
/// number `cause`.
pub(crate) fn ev<E: Event>(n: u128, event: E, cause: Option<u128>) -> Envelope {
    Envelope {
        id: id(n),
        name: E::NAME.into(),
        payload: serde_json::to_value(&event).unwrap(),
        timestamp: DateTime::from_timestamp(1_750_000_000 + i64::try_from(n).unwrap(), 0).unwrap(),
        caused_by: cause.map(id),
        state_hash: None,
        version: E::VERSION,
    }
}
