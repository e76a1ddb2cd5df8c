//! Unit tests of the runtime's parts.

#![allow(clippy::unwrap_used)]

use super::snapshots::event_bytes;
use super::*;

#[test]
fn the_first_snapshot_of_a_session_comes_after_the_tail_then_they_are_spaced_by_size() {
    let mut snapshots = Snapshots::after(0, None, 0);
    assert!(!snapshots.mid_turn_due(SNAPSHOT_TAIL - 1));
    assert!(snapshots.mid_turn_due(SNAPSHOT_TAIL));
    snapshots.tried(SNAPSHOT_TAIL, 1_000);
    snapshots.at = SNAPSHOT_TAIL;
    // Enough events but not enough bytes, then both.
    let len = SNAPSHOT_TAIL + MIN_SNAPSHOT_EVENTS;
    snapshots.recorded_bytes = 1_000 * SNAPSHOT_SPACING - 1;
    assert!(!snapshots.mid_turn_due(len));
    snapshots.recorded_bytes += 1;
    assert!(snapshots.mid_turn_due(len));
    // Enough bytes but too few events: a tiny state is not saved every few events.
    assert!(!snapshots.mid_turn_due(len - 1));
    // A turn that saved one mid-turn also saves one at its end, however short the tail.
    assert!(!snapshots.turn_end_due(SNAPSHOT_TAIL + 1));
    snapshots.saved_mid_turn = true;
    assert!(snapshots.turn_end_due(SNAPSHOT_TAIL + 1));
    assert!(!snapshots.turn_end_due(SNAPSHOT_TAIL));
}

#[test]
fn a_turn_counts_only_what_it_recorded_and_knows_the_size_it_started_from() {
    // Continuing a session whose latest snapshot is 10 events back, of 500 bytes.
    let mut snapshots = Snapshots::after(90, Some(500), 100);
    assert!(!snapshots.mid_turn_due(100 + MIN_SNAPSHOT_EVENTS));
    let event = Envelope::new("x:happened", serde_json::json!({ "n": 1 }), None);
    let per_event = event_bytes(&event);
    assert_eq!(per_event, 7 + 10 + ENVELOPE_BYTES);
    let events = vec![event; usize::try_from(500 * SNAPSHOT_SPACING / per_event + 1).unwrap()];
    snapshots.recorded(&events);
    assert!(snapshots.mid_turn_due(100 + MIN_SNAPSHOT_EVENTS));
    // No size known: bytes are not counted at all.
    let mut unknown = Snapshots::after(0, None, 100);
    unknown.recorded(&events);
    assert_eq!(unknown.recorded_bytes, 0);
    assert!(!unknown.mid_turn_due(100 + SNAPSHOT_TAIL - 1));
    assert!(unknown.mid_turn_due(100 + SNAPSHOT_TAIL));
    // A state that does not serialize turns mid-turn snapshots off.
    unknown.off = true;
    assert!(!unknown.mid_turn_due(u64::MAX / 2));
}
