//! The event envelope, event ids, session ids and the traits typed events implement.
//!
//! Every fact in a run is an [`Envelope`]: an id (UUID v7, so ids sort by time), a `noun:verb`
//! name, a JSON payload, a UTC timestamp and the id of the event that caused it. Typed events
//! implement [`Event`] (usually through `#[event]`); an enum of them implements [`EventSet`],
//! which decodes envelopes by name and treats names it does not know as [`Decoded::Unknown`].

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

pub use crate::upcast::Event;
use crate::upcast::{DecodeError, Split};

/// The id of one event: a UUID v7, so ids created later sort later.
///
/// ```
/// use openharness_core::EventId;
/// let a = EventId::new();
/// let b = EventId::new();
/// assert!(a < b);
/// assert_eq!(a, a.to_string().parse().unwrap());
/// ```
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct EventId(#[schemars(with = "String")] Uuid);

impl EventId {
    /// A fresh, time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// Wraps an existing UUID (for importers and tests).
    pub const fn from_uuid(uuid: Uuid) -> Self {
        Self(uuid)
    }

    /// The underlying UUID.
    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl Default for EventId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventId({})", self.0)
    }
}

impl FromStr for EventId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

/// The id of one recorded session (one run, or one fork of a run).
///
/// New ids are UUID v7 strings, but any non-empty string without control characters is accepted
/// so that imported logs keep their ids.
///
/// ```
/// use openharness_core::SessionId;
/// let id: SessionId = "demo-1".parse().unwrap();
/// assert_eq!(id.as_str(), "demo-1");
/// assert!("".parse::<SessionId>().is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl schemars::JsonSchema for SessionId {
    fn schema_name() -> Cow<'static, str> {
        "SessionId".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

impl SessionId {
    /// A fresh, time-ordered session id.
    pub fn new() -> Self {
        Self(Uuid::now_v7().to_string())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SessionId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({})", self.0)
    }
}

/// Why a string is not a valid [`SessionId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id {0:?}: it must be 1 to 200 bytes of UTF-8 without control characters")]
pub struct InvalidSessionId(String);

impl FromStr for SessionId {
    type Err = InvalidSessionId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::try_from(s.to_owned())
    }
}

impl TryFrom<String> for SessionId {
    type Error = InvalidSessionId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        if s.is_empty() || s.len() > 200 || s.chars().any(char::is_control) {
            Err(InvalidSessionId(s))
        } else {
            Ok(Self(s))
        }
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

/// One recorded fact: the unit the store appends and every replay folds.
///
/// Serialized with the wire names `id`, `name`, `payload`, `timestamp`, `causedBy` and, on
/// the last event of a batch that changed the state, `stateHash`.
///
/// ```
/// use openharness_core::{Envelope, builtin::UserInput};
/// let input = Envelope::typed(&UserInput::new("plan a trip"), None).unwrap();
/// assert_eq!(input.name, "user:input");
/// let json = serde_json::to_value(&input).unwrap();
/// assert!(json.get("causedBy").is_some());
/// assert_eq!(input.decode::<UserInput>().unwrap().text, "plan a trip");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Envelope {
    /// Unique, time-ordered id.
    pub id: EventId,
    /// `noun:verb` name, such as `task:completed`.
    pub name: Cow<'static, str>,
    /// The event's data as JSON.
    pub payload: Value,
    /// When the event was created (UTC).
    pub timestamp: DateTime<Utc>,
    /// The event this one was derived from, if any.
    #[serde(rename = "causedBy", default)]
    pub caused_by: Option<EventId>,
    /// The hash of the workflow's state just after this event
    /// ([`state_hash`](crate::adapter::state_hash): SHA-256 of its canonical JSON), recorded
    /// on the last event of a committed batch that changed the state — every such batch while
    /// hashing stays within about 1% of the turn's time, fewer for a very large state, always
    /// the turn's last — when the state's JSON is reproducible (it comes back the same once
    /// decoded: no `HashSet`). Absent on other events and in recordings made before it was
    /// recorded. Checks that fold a recording
    /// through today's handlers compare their state with it
    /// ([`Workflow::check_state`](crate::Workflow::check_state)).
    #[serde(rename = "stateHash", default, skip_serializing_if = "Option::is_none")]
    pub state_hash: Option<String>,
    /// The version of the event's shape the payload was written at
    /// ([`Event::VERSION`]): 1, left out of the JSON, unless the event was declared with
    /// `#[event(version = N)]`. Reading an older version upcasts it
    /// ([`Upcast`](crate::adapter::Upcast)); the log keeps what was written.
    #[serde(default = "first_version", skip_serializing_if = "is_first_version")]
    #[schemars(range(min = 1))]
    pub version: u32,
}

/// The version of an event declared without one.
const fn first_version() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
const fn is_first_version(version: &u32) -> bool {
    *version == 1
}

impl Envelope {
    /// A new envelope with a fresh id and the current time.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        payload: Value,
        caused_by: Option<EventId>,
    ) -> Self {
        Self {
            id: EventId::new(),
            name: name.into(),
            payload,
            timestamp: Utc::now(),
            caused_by,
            state_hash: None,
            version: 1,
        }
    }

    /// A new envelope holding a typed event.
    pub fn typed<E: Event>(
        event: &E,
        caused_by: Option<EventId>,
    ) -> Result<Self, serde_json::Error> {
        let mut envelope = Self::new(E::NAME, serde_json::to_value(event)?, caused_by);
        envelope.version = E::VERSION;
        Ok(envelope)
    }

    /// Whether this envelope carries event `E`.
    pub fn is<E: Event>(&self) -> bool {
        self.name == E::NAME
    }

    /// Decodes the payload as event `E` (whatever the envelope's name), upcasting it when it
    /// was recorded at an older version of `E` (events an upcast split off it are dropped:
    /// [`EventSet::decode_versioned`] keeps them).
    ///
    /// # Errors
    /// The payload is not an `E`, or its version is newer than `E`'s or has no path to it.
    pub fn decode<E: Event>(&self) -> Result<E, serde_json::Error> {
        if self.version == E::VERSION {
            return E::deserialize(&self.payload);
        }
        E::read_recorded(self.version, &self.payload)
            .map(|upcasted| upcasted.into_parts().0)
            .map_err(|err| match err {
                DecodeError::Payload { source, .. } => source,
                other => <serde_json::Error as serde::de::Error>::custom(other),
            })
    }
}

/// What decoding an envelope against an [`EventSet`] gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded<E> {
    /// The name belongs to the set and the payload decoded.
    Known(E),
    /// The name is not part of the set (an event of another workflow version, a built-in event
    /// the workflow does not handle, ...). Replays skip these.
    Unknown,
    /// The name belongs to the set, the envelope was recorded at an older version, and its
    /// upcast split it: today's events, in the order they apply, all at the envelope's
    /// position.
    Several(Vec<E>),
}

/// A closed set of typed events: the enum a workflow's handlers dispatch over.
///
/// Implemented by `#[event]` on an enum whose variants each wrap one event type.
pub trait EventSet: Sized + Send + Sync + 'static {
    /// The names of every event in the set, in declaration order: every name
    /// [`decode`](Self::decode) knows. A state read loads the payloads of these names only
    /// (see [`Store::events_for_fold`](crate::Store::events_for_fold)), so a hand-written set
    /// must list each one (`#[event]` does).
    const NAMES: &'static [&'static str];

    /// The name of this event.
    fn name(&self) -> &'static str;

    /// Decodes a payload recorded under `name`.
    ///
    /// Returns [`Decoded::Unknown`] for names outside the set and an error only when the name is
    /// known but the payload does not match the event's type.
    fn decode(name: &str, payload: &Value) -> Result<Decoded<Self>, serde_json::Error>;

    /// Decodes a payload recorded under `name` at `version` ([`Envelope::version`]),
    /// upcasting an older version to today's events. `#[event]` reads every version its
    /// events declare; the default reads version 1 through [`decode`](Self::decode) and
    /// refuses others.
    ///
    /// # Errors
    /// A [`DecodeError`] when the payload does not decode, or its version is newer than the
    /// code or has no path to today's.
    fn decode_versioned(
        name: &str,
        version: u32,
        payload: &Value,
    ) -> Result<Decoded<Self>, DecodeError> {
        if version == 1 {
            return Self::decode(name, payload).map_err(|source| DecodeError::Payload {
                name: Cow::Owned(name.to_owned()),
                version,
                source,
            });
        }
        if !Self::contains(name) {
            return Ok(Decoded::Unknown);
        }
        Err(DecodeError::Newer {
            name: Cow::Owned(name.to_owned()),
            recorded: version,
            known: 1,
        })
    }

    /// The version today's code records the event `name` at ([`Event::VERSION`]), `None` for a
    /// name outside the set. The default says 1 for every name of the set.
    fn version_of(name: &str) -> Option<u32> {
        Self::contains(name).then_some(1)
    }

    /// [`decode_versioned`](Self::decode_versioned) for a recorded envelope.
    ///
    /// # Errors
    /// As [`decode_versioned`](Self::decode_versioned).
    fn decode_envelope(event: &Envelope) -> Result<Decoded<Self>, DecodeError> {
        Self::decode_versioned(&event.name, event.version, &event.payload)
    }

    /// Encodes the event's payload.
    fn to_payload(&self) -> Result<Value, serde_json::Error>;

    /// Whether `name` belongs to the set.
    fn contains(name: &str) -> bool {
        Self::NAMES.contains(&name)
    }
}

/// An event set's value for an upcast: `first` alone, or with the events split off it,
/// each decoded through the set at its current version. What `#[event]` on an enum generates
/// [`EventSet::decode_versioned`] with.
///
/// # Errors
/// [`DecodeError::SplitOutsideSet`] when a split-off event is not in the set, and whatever
/// decoding it gives.
pub fn decoded_with_splits<S: EventSet>(
    name: &str,
    first: S,
    splits: Vec<Split>,
) -> Result<Decoded<S>, DecodeError> {
    if splits.is_empty() {
        return Ok(Decoded::Known(first));
    }
    let mut events = vec![first];
    for split in splits {
        let payload = split
            .payload
            .map_err(|message| DecodeError::SplitUnencodable {
                name: Cow::Owned(name.to_owned()),
                split: Cow::Borrowed(split.name),
                message,
            })?;
        match S::decode_versioned(split.name, split.version, &payload)? {
            Decoded::Known(event) => events.push(event),
            Decoded::Several(more) => events.extend(more),
            Decoded::Unknown => {
                return Err(DecodeError::SplitOutsideSet {
                    name: Cow::Owned(name.to_owned()),
                    split: Cow::Borrowed(split.name),
                });
            }
        }
    }
    Ok(Decoded::Several(events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_limited_in_bytes_and_says_so() {
        // 100 two-byte characters are 200 bytes: allowed; one more is refused.
        assert!("é".repeat(100).parse::<SessionId>().is_ok());
        let Err(err) = "é".repeat(101).parse::<SessionId>() else {
            panic!("201 bytes were accepted");
        };
        assert!(err.to_string().contains("200 bytes"), "{err}");
    }

    #[test]
    fn the_wire_form_uses_the_seed_field_names() {
        let cause = EventId::new();
        let event = Envelope::new(
            "task:completed",
            serde_json::json!({ "id": 1 }),
            Some(cause),
        );
        let json = serde_json::to_value(&event).unwrap_or_default();
        let keys: Vec<_> = json
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["causedBy", "id", "name", "payload", "timestamp"]);
        assert_eq!(json["causedBy"], cause.to_string());
        let back: Envelope = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, event);
    }

    #[test]
    fn ids_are_uuid_v7_and_time_ordered() {
        let ids: Vec<_> = (0..1000).map(|_| EventId::new()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ids[0].as_uuid().get_version_num(), 7);
    }

    #[test]
    fn session_ids_reject_empty_and_control_characters() {
        assert!("".parse::<SessionId>().is_err());
        assert!("a\nb".parse::<SessionId>().is_err());
        assert!("x".repeat(201).parse::<SessionId>().is_err());
        assert!(serde_json::from_str::<SessionId>("\"\"").is_err());
        assert_eq!(
            "demo".parse::<SessionId>().map(|s| s.to_string()).ok(),
            Some("demo".to_owned())
        );
    }
}
