//! [`Event`], the trait every typed event implements, with what reading one recorded at an
//! older version of its shape takes: event versions and upcasters.
//!
//! An event's shape has a version ([`Event::VERSION`], `#[event(version = N)]`, 1 by default)
//! and every envelope records the version it was written at ([`Envelope::version`]). When a
//! field is renamed, changes type, or moves to an event of its own, the old shape is kept as a
//! type of its own and today's type says how to read it: [`Upcast`] names the previous
//! version's type and turns one into [`Upcasted`] — today's event, plus any events split off
//! it. Reading upcasts; the log is never rewritten, so a recording keeps its bytes (and its
//! hashes) and is read again, the same way, by every later version.
//!
//! A version above 1 without an `Upcast` does not compile, an `Upcast` whose previous type is
//! not the version just below (or is recorded under another name) does not compile, and an
//! envelope newer than the code is refused with [`DecodeError::Newer`].
//!
//! One limit: a turn a crash cut off, resumed by a build whose upcast splits an event that turn
//! recorded, matches what is left to record by event name only, so an event split off by the
//! new build may be recorded again by the resume. Finish cut-off turns before deploying a split.
//!
//! [`Envelope::version`]: crate::Envelope::version

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A typed event: a serializable value with a fixed `noun:verb` name.
///
/// Implemented by `#[event]`, which also checks the name at compile time.
///
/// ```
/// use openharness_core::Event;
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct TaskCompleted { id: u32 }
/// impl Event for TaskCompleted { const NAME: &'static str = "task:completed"; }
/// assert_eq!(TaskCompleted::NAME, "task:completed");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an event",
    label = "not an event",
    note = "add `#[event]` (or `#[event(\"noun:verb\")]`) to the definition of `{Self}`"
)]
pub trait Event:
    Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static
{
    /// The `noun:verb` name this event is recorded under.
    const NAME: &'static str;

    /// The version of this event's shape, recorded in every envelope
    /// ([`Envelope::version`](crate::Envelope::version)): 1 until a field is renamed, retyped or split off, then one
    /// more each time, with an [`Upcast`] from the previous version.
    const VERSION: u32 = 1;

    /// Reads a payload recorded at `version` as today's event (with any events an upcast
    /// split off it). The default reads the current version only; `#[event(version = N)]`
    /// reads every older one through its [`Upcast`]s
    /// ([`read_upcasting`](crate::adapter::read_upcasting)).
    ///
    /// # Errors
    /// [`DecodeError::Newer`] for a version above [`VERSION`](Self::VERSION),
    /// [`DecodeError::NoPath`] for one without an upcast, [`DecodeError::Payload`] for a
    /// payload that is not this event.
    fn read_recorded(version: u32, payload: &Value) -> Result<Upcasted<Self>, DecodeError>
    where
        Self: Sized,
    {
        read_current(version, payload)
    }
}

/// How events recorded at the previous version of `Self` read today.
///
/// `Previous` is the previous version's type: recorded under the same name, with
/// [`VERSION`](Event::VERSION) one less than `Self`'s. A chain of them reaches every older
/// version (version 1 read through 2, then 3, ...), so each step is written once.
///
/// `#[event(version = N)]` writes the [`Event`] side; by hand, a field whose type changed
/// (cents as an integer, then an amount as a float) reads like this:
///
/// ```
/// use openharness_core::{Event, Upcast, Upcasted, adapter::{DecodeError, read_upcasting}};
/// use serde::{Deserialize, Serialize};
///
/// /// Version 1 of `refund:issued`, as recordings before the change hold it.
/// #[derive(Serialize, Deserialize, schemars::JsonSchema)]
/// pub struct RefundIssuedV1 { pub cents: u64 }
/// impl Event for RefundIssuedV1 { const NAME: &'static str = "refund:issued"; }
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
/// pub struct RefundIssued { pub amount: f64 }
/// impl Event for RefundIssued {
///     const NAME: &'static str = "refund:issued";
///     const VERSION: u32 = 2;
///     fn read_recorded(version: u32, payload: &serde_json::Value) -> Result<Upcasted<Self>, DecodeError> {
///         read_upcasting(version, payload)
///     }
/// }
///
/// impl Upcast for RefundIssued {
///     type Previous = RefundIssuedV1;
///     fn upcast(old: RefundIssuedV1) -> Upcasted<Self> {
///         RefundIssued { amount: old.cents as f64 / 100.0 }.into()
///     }
/// }
///
/// let old = serde_json::json!({ "cents": 1250 });
/// let read = RefundIssued::read_recorded(1, &old).unwrap();
/// assert_eq!(read.event(), &RefundIssued { amount: 12.5 });
/// let newer = RefundIssued::read_recorded(3, &old).unwrap_err();
/// assert!(newer.is_newer(), "{newer}");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has a version above 1 but no path from the previous one",
    label = "version above 1 without an upcast",
    note = "implement `Upcast` for `{Self}`: `type Previous` is the type of the previous version (`#[event(\"name\", version = N - 1)]`) and `fn upcast` turns one into today's event"
)]
pub trait Upcast: Event {
    /// The previous version's type: the same name, [`VERSION`](Event::VERSION) one less.
    type Previous: Event;

    /// Today's event for one recorded at the previous version, with any events split off it.
    fn upcast(previous: Self::Previous) -> Upcasted<Self>;
}

/// What an upcast gives: today's event, then any events split off it (in order).
///
/// ```
/// use openharness_core::{Upcasted, builtin::UserInput};
/// let one: Upcasted<UserInput> = UserInput::new("a").into();
/// let split = Upcasted::from(UserInput::new("a")).and(UserInput::new("b"));
/// assert_eq!(one.split_off().len(), 0);
/// assert_eq!(split.split_off().len(), 1);
/// assert_eq!(split.event().text, "a");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Upcasted<E> {
    event: E,
    also: Vec<Split>,
}

/// An event split off an upcast one ([`Upcasted::and`]), encoded at its current version.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Its name.
    pub name: &'static str,
    /// Its version ([`Event::VERSION`]).
    pub version: u32,
    /// Its payload, or why it does not encode.
    pub payload: Result<Value, String>,
}

impl<E> From<E> for Upcasted<E> {
    fn from(event: E) -> Self {
        Self {
            event,
            also: Vec::new(),
        }
    }
}

impl<E> Upcasted<E> {
    /// Adds an event split off the recorded one: it is applied right after today's event, at
    /// the same position of the log. It must be an event of the workflows that read it.
    #[must_use]
    pub fn and<F: Event>(mut self, split: F) -> Self {
        self.also.push(Split {
            name: F::NAME,
            version: F::VERSION,
            payload: serde_json::to_value(&split).map_err(|err| err.to_string()),
        });
        self
    }

    /// Today's event.
    pub fn event(&self) -> &E {
        &self.event
    }

    /// The events split off it, encoded at their current versions.
    pub fn split_off(&self) -> &[Split] {
        &self.also
    }

    /// Today's event and the events split off it.
    pub fn into_parts(self) -> (E, Vec<Split>) {
        (self.event, self.also)
    }
}

/// Why a recorded event does not read under today's code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The payload does not match the event's type at the version it was recorded at.
    #[error("the payload is not a `{name}` (version {version}): {source}")]
    Payload {
        /// The event's name.
        name: Cow<'static, str>,
        /// The version it was read at.
        version: u32,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The event was recorded by newer code than this, at a version it does not know.
    #[error(
        "`{name}` was recorded at version {recorded}, but this code knows it only up to version {known}: read this session with the build that recorded it or a later one (nothing in the log was changed)"
    )]
    Newer {
        /// The event's name.
        name: Cow<'static, str>,
        /// The version in the envelope.
        recorded: u32,
        /// The newest version this code reads.
        known: u32,
    },
    /// No upcast leads from the recorded version to today's (version 0, or a hand-written
    /// [`Event`] with a version above 1 and no way to read older ones).
    #[error(
        "`{name}` was recorded at version {recorded}, and nothing in this code reads that version as version {known}"
    )]
    NoPath {
        /// The event's name.
        name: Cow<'static, str>,
        /// The version in the envelope.
        recorded: u32,
        /// Today's version.
        known: u32,
    },
    /// An upcast split off an event the reading workflow does not know.
    #[error("upcasting `{name}` split off `{split}`, which is not an event of this workflow")]
    SplitOutsideSet {
        /// The upcast event's name.
        name: Cow<'static, str>,
        /// The name of the event split off it.
        split: Cow<'static, str>,
    },
    /// An upcast split off an event that does not encode as JSON.
    #[error("upcasting `{name}` split off `{split}`, which does not encode: {message}")]
    SplitUnencodable {
        /// The upcast event's name.
        name: Cow<'static, str>,
        /// The name of the event split off it.
        split: Cow<'static, str>,
        /// What serde said.
        message: String,
    },
}

impl DecodeError {
    /// Whether the event was recorded by newer code than this.
    pub fn is_newer(&self) -> bool {
        matches!(self, Self::Newer { .. })
    }
}

/// Reads a payload recorded at `version` as `E`'s current version, exactly: the
/// default [`Event::read_recorded`], for events without older versions.
///
/// # Errors
/// [`DecodeError::Newer`] above `E::VERSION`, [`DecodeError::NoPath`] below it,
/// [`DecodeError::Payload`] when the payload is not an `E`.
pub fn read_current<E: Event>(version: u32, payload: &Value) -> Result<Upcasted<E>, DecodeError> {
    if version == E::VERSION {
        return deserialize::<E>(version, payload).map(Upcasted::from);
    }
    Err(refusal::<E>(version))
}

/// Reads a payload recorded at any version up to `E::VERSION`, upcasting through
/// [`Upcast::Previous`] one version at a time: what `#[event(version = N)]` generates
/// [`Event::read_recorded`] as.
///
/// # Errors
/// As [`read_current`], and whatever reading the previous version gives.
pub fn read_upcasting<E: Upcast>(
    version: u32,
    payload: &Value,
) -> Result<Upcasted<E>, DecodeError> {
    if version == E::VERSION {
        return deserialize::<E>(version, payload).map(Upcasted::from);
    }
    if version > E::VERSION || version == 0 {
        return Err(refusal::<E>(version));
    }
    let (previous, mut older_splits) = E::Previous::read_recorded(version, payload)?.into_parts();
    let Upcasted { event, mut also } = E::upcast(previous);
    also.append(&mut older_splits);
    Ok(Upcasted { event, also })
}

fn deserialize<E: Event>(version: u32, payload: &Value) -> Result<E, DecodeError> {
    E::deserialize(payload).map_err(|source| DecodeError::Payload {
        name: Cow::Borrowed(E::NAME),
        version,
        source,
    })
}

fn refusal<E: Event>(version: u32) -> DecodeError {
    let name = Cow::Borrowed(E::NAME);
    if version > E::VERSION {
        DecodeError::Newer {
            name,
            recorded: version,
            known: E::VERSION,
        }
    } else {
        DecodeError::NoPath {
            name,
            recorded: version,
            known: E::VERSION,
        }
    }
}

/// Whether two names are equal, in a `const` context (the compile-time checks `#[event]`
/// generates for an upcast).
#[doc(hidden)]
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
