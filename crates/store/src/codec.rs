//! What every backend does the same way: decoding stored events (in parallel for long reads),
//! the order of a session listing, snapshot states as stored JSON text, and the error for a
//! snapshot past a session's end. A new backend uses these rather than writing its own.

use std::cmp::Ordering;

use openharness_core::{SessionId, SessionInfo, StoreError};

/// The order of [`Store::sessions`](openharness_core::Store::sessions): oldest first, ties
/// broken by id so listings are stable.
fn by_age(a: &SessionInfo, b: &SessionInfo) -> Ordering {
    a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id))
}

/// The error for a snapshot past the end of its session (or of a session with no events).
pub(crate) fn snapshot_beyond_end(session: &SessionId, position: u64, len: u64) -> StoreError {
    StoreError::Invalid(format!(
        "cannot save a snapshot of session {session} at position {position}: \
         the session has {len} events"
    ))
}

/// A state the caller wrote out already ([`Store::snapshot_json`]) as the JSON text a backend
/// stores: the text as it is, no value built and no second encoding.
///
/// [`Store::snapshot_json`]: openharness_core::Store::snapshot_json
pub(crate) fn raw_snapshot_text(state: Box<serde_json::value::RawValue>) -> String {
    String::from(Box::<str>::from(state))
}

/// Below this many events a read decodes on the calling thread.
const PARALLEL_DECODE: usize = 4096;

/// The machine's cores, asked once (for parallel decoding, and a PostgreSQL store's long
/// reads): `available_parallelism` reads the cgroup files on Linux at every call (an `open`
/// and two reads, a tenth of a loaded server's CPU when it was asked per read of a live tail).
pub(crate) static CORES: std::sync::LazyLock<usize> =
    std::sync::LazyLock::new(|| std::thread::available_parallelism().map_or(1, usize::from));

/// Decodes an event stored as its JSON envelope, or says what is wrong with it.
pub(crate) fn decode_json(bytes: &[u8]) -> Result<openharness_core::Envelope, String> {
    serde_json::from_slice(bytes).map_err(not_an_envelope)
}

/// What is wrong with a stored event that does not decode as an envelope.
pub(crate) fn not_an_envelope(err: impl std::fmt::Display) -> String {
    format!("stored event is not a valid envelope: {err}")
}

/// Decodes stored events (seq, bytes) with `decode` (which decodes one or says what is wrong
/// with it), in order. Large reads are split across
/// the machine's cores: decoding is most of the cost of loading a long session.
pub(crate) fn decode_all(
    session: &SessionId,
    records: &[(u64, &[u8])],
    decode: impl Fn(&[u8]) -> Result<openharness_core::Envelope, String> + Sync,
) -> Result<Vec<openharness_core::Envelope>, StoreError> {
    let decode = &decode;
    let decode_chunk = |chunk: &[(u64, &[u8])]| {
        chunk
            .iter()
            .map(|(seq, bytes)| {
                decode(bytes).map_err(|message| StoreError::Corrupt {
                    session: session.clone(),
                    seq: *seq,
                    message,
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let threads = *CORES;
    if records.len() < PARALLEL_DECODE || threads < 2 {
        return decode_chunk(records);
    }
    let size = records.len().div_ceil(threads);
    let parts = std::thread::scope(|scope| {
        let handles: Vec<_> = records
            .chunks(size)
            .map(|chunk| scope.spawn(move || decode_chunk(chunk)))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(StoreError::Invalid("a decoding thread panicked".to_owned()))
                })
            })
            .collect::<Vec<_>>()
    });
    let mut events = Vec::with_capacity(records.len());
    for part in parts {
        events.extend(part?);
    }
    Ok(events)
}

/// Sorts sessions into the order of [`Store::sessions`](openharness_core::Store::sessions).
pub(crate) fn sort_oldest_first(infos: &mut [SessionInfo]) {
    infos.sort_by(by_age);
}
