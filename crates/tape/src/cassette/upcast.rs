//! A recording as today's code reads it: each event recorded at an older version of its shape
//! replaced by what its upcast gives (one event, or several where it was split), encoded at
//! today's versions, so a re-execution compares today's events with the recording's read the
//! same way. The recorded log is not touched; seqs map back to it.

use openharness_core::adapter::Decoded;
use openharness_core::{Envelope, EventId, EventSet};

/// The recording upcast, with the recorded seq of each of its events; `None` when no event is
/// older than today's version (the recording is compared as it is).
pub(super) fn upcast_recording<E: EventSet>(
    events: &[Envelope],
) -> Option<(Vec<Envelope>, Vec<u64>)> {
    let older =
        |event: &Envelope| E::version_of(&event.name).is_some_and(|today| event.version < today);
    if !events.iter().any(older) {
        return None;
    }
    let mut upcast = Vec::with_capacity(events.len() + 8);
    let mut seqs = Vec::with_capacity(events.len() + 8);
    for (event, seq) in events.iter().zip(0u64..) {
        let today = if older(event) {
            read_today::<E>(event)
        } else {
            None
        };
        match today {
            Some(read) => {
                let last = read.len() - 1;
                for (index, typed) in read.into_iter().enumerate() {
                    upcast.push(today_envelope(event, &typed, index, index == last));
                    seqs.push(seq);
                }
            }
            None => {
                upcast.push(event.clone());
                seqs.push(seq);
            }
        }
    }
    Some((upcast, seqs))
}

/// Today's events for an older one, `None` when it does not read (the re-execution then
/// parts there, as it would have).
fn read_today<E: EventSet>(event: &Envelope) -> Option<Vec<E>> {
    match E::decode_envelope(event).ok()? {
        Decoded::Known(typed) => Some(vec![typed]),
        Decoded::Several(typed) if !typed.is_empty() => Some(typed),
        Decoded::Several(_) | Decoded::Unknown => None,
    }
}

/// The envelope of one of today's events read from `recorded`: the first keeps its id, each
/// event split off it gets one of its own; all keep its time and cause, and the last keeps its
/// state hash (the state after the recorded event is the state after all of them).
fn today_envelope<E: EventSet>(
    recorded: &Envelope,
    typed: &E,
    index: usize,
    last: bool,
) -> Envelope {
    let name = typed.name();
    let payload = typed.to_payload().unwrap_or(serde_json::Value::Null);
    Envelope {
        id: if index == 0 {
            recorded.id
        } else {
            EventId::new()
        },
        name: name.into(),
        payload,
        timestamp: recorded.timestamp,
        caused_by: recorded.caused_by,
        state_hash: if last {
            recorded.state_hash.clone()
        } else {
            None
        },
        version: E::version_of(name).unwrap_or(1),
    }
}
