//! How the redb store encodes one event: a compact binary record, about 100 bytes smaller
//! than the event's JSON and decoded without parsing an id or a timestamp from text.
//!
//! | bytes      | field                                                    |
//! |------------|----------------------------------------------------------|
//! | 1          | [`BINARY`], the record's tag                             |
//! | 16         | the event id (a UUID, big-endian)                        |
//! | 8 + 4      | the timestamp: seconds since 1970 (i64) and nanoseconds (u32), little-endian |
//! | 1 (+ 16)   | flags: bit 0 set, followed by the id of the event it was caused by |
//! | (2 + n)    | with flag bit 1: the state hash's length (u16, little-endian) and its UTF-8 |
//! | (4)        | with flag bit 2: the event's version (u32, little-endian); without it, 1 |
//! | 4 + n      | the name's length (u32, little-endian) and its UTF-8     |
//! | the rest   | the payload as JSON                                      |
//!
//! Files of format 2 hold each event as its JSON envelope, which starts with `{`: [`decode`]
//! reads both, so a file written before this encoding (or by an import that copied its
//! records) stays readable as it is.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use openharness_core::adapter::Folded;
use openharness_core::builtin::WorkflowCompleted;
use openharness_core::{Envelope, Event as _, EventId, SessionStatus};
use serde_json::Value;
use uuid::Uuid;

/// The first byte of a binary record. A JSON envelope starts with `{` instead.
const BINARY: u8 = 0x01;

/// Encodes `event` as a binary record.
pub(super) fn encode(event: &Envelope) -> Result<Vec<u8>, serde_json::Error> {
    let name = event.name.as_bytes();
    let mut out = Vec::with_capacity(64 + name.len());
    out.push(BINARY);
    out.extend_from_slice(event.id.as_uuid().as_bytes());
    out.extend_from_slice(&event.timestamp.timestamp().to_le_bytes());
    out.extend_from_slice(&event.timestamp.timestamp_subsec_nanos().to_le_bytes());
    let versioned = event.version != 1;
    let flags = u8::from(event.caused_by.is_some())
        | (u8::from(event.state_hash.is_some()) << 1)
        | (u8::from(versioned) << 2);
    out.push(flags);
    if let Some(cause) = event.caused_by {
        out.extend_from_slice(cause.as_uuid().as_bytes());
    }
    if let Some(hash) = &event.state_hash {
        let len = u16::try_from(hash.len()).map_err(|_| {
            <serde_json::Error as serde::ser::Error>::custom("a state hash longer than 64 KiB")
        })?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(hash.as_bytes());
    }
    if versioned {
        out.extend_from_slice(&event.version.to_le_bytes());
    }
    let name_len = u32::try_from(name.len()).map_err(|_| {
        <serde_json::Error as serde::ser::Error>::custom("an event name longer than 4 GiB")
    })?;
    out.extend_from_slice(&name_len.to_le_bytes());
    out.extend_from_slice(name);
    serde_json::to_writer(&mut out, &event.payload)?;
    Ok(out)
}

/// Decodes a stored event, binary or JSON; `Err` says what is wrong with it.
pub(super) fn decode(bytes: &[u8]) -> Result<Envelope, String> {
    decode_for_fold(bytes, |_| true)
}

/// [`decode`] for a fold: a binary record whose name `folds` refuses comes with
/// [`Value::Null`] for a payload, which is not parsed (nor checked). A JSON envelope is
/// decoded whole.
pub(super) fn decode_for_fold(bytes: &[u8], folds: Folded) -> Result<Envelope, String> {
    match bytes.first() {
        Some(&BINARY) => {
            let head = Head::read(bytes)?;
            let payload: Value = if folds(head.name) {
                serde_json::from_slice(head.rest)
                    .map_err(|err| format!("its payload is not JSON: {err}"))?
            } else {
                Value::Null
            };
            Ok(Envelope {
                id: head.id,
                name: Cow::Owned(head.name.to_owned()),
                payload,
                timestamp: head.timestamp,
                caused_by: head.caused_by,
                state_hash: head.state_hash.map(str::to_owned),
                version: head.version,
            })
        }
        _ => crate::decode_json(bytes),
    }
}

/// The id of a stored event, decoding nothing else.
pub(super) fn id(bytes: &[u8]) -> Result<EventId, String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: EventId,
    }
    match bytes.first() {
        Some(&BINARY) => Ok(Head::read(bytes)?.id),
        _ => serde_json::from_slice::<Id>(bytes)
            .map(|id| id.id)
            .map_err(crate::not_an_envelope),
    }
}

/// The timestamp of a stored event and the status it leaves its session in, decoding its
/// payload only when the status depends on it.
pub(super) fn summary(bytes: &[u8]) -> Result<(DateTime<Utc>, SessionStatus), String> {
    match bytes.first() {
        Some(&BINARY) => {
            let head = Head::read(bytes)?;
            // Only a completion's payload says how the session stands.
            let status = if head.name == WorkflowCompleted::NAME {
                let payload: Value = serde_json::from_slice(head.rest)
                    .map_err(|err| format!("its payload is not JSON: {err}"))?;
                SessionStatus::after(head.name, &payload)
            } else {
                SessionStatus::Running
            };
            Ok((head.timestamp, status))
        }
        _ => openharness_core::adapter::last_event_summary(bytes).map_err(crate::not_an_envelope),
    }
}

/// A binary record's fields before the payload, borrowed from it.
struct Head<'a> {
    id: EventId,
    timestamp: DateTime<Utc>,
    caused_by: Option<EventId>,
    state_hash: Option<&'a str>,
    version: u32,
    name: &'a str,
    /// The payload's JSON.
    rest: &'a [u8],
}

impl<'a> Head<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self, String> {
        let mut reader = Reader { bytes, at: 1 };
        let id = reader.id()?;
        let seconds = i64::from_le_bytes(reader.array()?);
        let nanos = u32::from_le_bytes(reader.array()?);
        let timestamp = DateTime::from_timestamp(seconds, nanos)
            .ok_or_else(|| format!("its timestamp ({seconds} s, {nanos} ns) is out of range"))?;
        let [flags] = reader.array::<1>()?;
        if flags > 0b111 {
            return Err(format!(
                "its flags are {flags:#05b}: only bits 0 to 2 are known (a newer build wrote it)"
            ));
        }
        let caused_by = if flags & 1 == 1 {
            Some(reader.id()?)
        } else {
            None
        };
        let state_hash = if flags & 0b10 == 0b10 {
            let len = usize::from(u16::from_le_bytes(reader.array()?));
            let hash = std::str::from_utf8(reader.take(len)?)
                .map_err(|err| format!("its state hash is not UTF-8: {err}"))?;
            Some(hash)
        } else {
            None
        };
        let version = if flags & 0b100 == 0b100 {
            u32::from_le_bytes(reader.array()?)
        } else {
            1
        };
        let name_len = usize::try_from(u32::from_le_bytes(reader.array()?))
            .map_err(|_| "its name is longer than this machine can address".to_owned())?;
        let name = std::str::from_utf8(reader.take(name_len)?)
            .map_err(|err| format!("its name is not UTF-8: {err}"))?;
        Ok(Self {
            id,
            timestamp,
            caused_by,
            state_hash,
            version,
            name,
            rest: reader.rest(),
        })
    }
}

/// Reads a binary record's fields in order, refusing a record that ends early.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| format!("the record ends early ({} bytes)", self.bytes.len()))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn id(&mut self) -> Result<EventId, String> {
        Ok(EventId::from_uuid(Uuid::from_bytes(self.array()?)))
    }

    fn rest(self) -> &'a [u8] {
        &self.bytes[self.at..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(caused_by: Option<EventId>) -> Envelope {
        Envelope::new(
            "task:completed",
            json!({"index": 3, "result": "ok ☃"}),
            caused_by,
        )
    }

    #[test]
    fn a_binary_record_decodes_to_the_event_it_encodes() {
        let hashed = |cause| Envelope {
            state_hash: Some(openharness_core::adapter::json_hash(&json!({"n": 1}))),
            ..event(cause)
        };
        let versioned = |cause| Envelope {
            version: 3,
            ..hashed(cause)
        };
        for original in [
            event(None),
            event(Some(EventId::new())),
            hashed(None),
            hashed(Some(EventId::new())),
            versioned(None),
            Envelope {
                version: u32::MAX,
                ..event(Some(EventId::new()))
            },
        ] {
            let bytes = encode(&original).expect("encodes");
            assert_eq!(bytes.first(), Some(&BINARY));
            assert_eq!(decode(&bytes).expect("decodes"), original);
            assert_eq!(id(&bytes).expect("id"), original.id);
            let json = serde_json::to_vec(&original).expect("json");
            assert!(
                bytes.len() + 80 < json.len(),
                "{} vs {}",
                bytes.len(),
                json.len()
            );
        }
    }

    #[test]
    fn a_json_record_of_format_2_still_decodes() {
        let original = event(Some(EventId::new()));
        let json = serde_json::to_vec(&original).expect("json");
        assert_eq!(decode(&json).expect("decodes"), original);
        assert_eq!(id(&json).expect("id"), original.id);
        assert_eq!(
            summary(&json).expect("summary"),
            (original.timestamp, SessionStatus::Running)
        );
    }

    #[test]
    fn the_summary_reads_the_status_a_completion_leaves() {
        let done = Envelope::new(WorkflowCompleted::NAME, json!({"reason": "until"}), None);
        let binary = encode(&done).expect("encodes");
        let json = serde_json::to_vec(&done).expect("json");
        assert_eq!(summary(&binary), summary(&json).map_err(|err| err.clone()));
        assert_ne!(summary(&binary).expect("summary").1, SessionStatus::Running);
    }

    #[test]
    fn a_truncated_or_damaged_record_is_an_error_not_a_panic() {
        let bytes = encode(&event(Some(EventId::new()))).expect("encodes");
        for len in 0..bytes.len() {
            let _ = decode(&bytes[..len]);
            let _ = id(&bytes[..len]);
            let _ = summary(&bytes[..len]);
        }
        let mut bad_marker = bytes.clone();
        bad_marker[29] = 8;
        assert!(decode(&bad_marker).expect_err("refused").contains("flags"));
        // A state hash whose length runs past the record's end.
        let hashed = Envelope {
            state_hash: Some("ab".repeat(32)),
            ..event(None)
        };
        let mut long_hash = encode(&hashed).expect("encodes");
        long_hash[30] = 0xff;
        long_hash[31] = 0xff;
        assert!(
            decode(&long_hash)
                .expect_err("refused")
                .contains("ends early")
        );
        assert!(
            decode(&bytes[..20])
                .expect_err("refused")
                .contains("ends early")
        );
    }
}
