//! [`Emit`]: the events a handler or an agent's `on_output` produces.

use std::borrow::Cow;

use serde_json::Value;

use crate::builtin::ErrorOccurred;
use crate::event::Event;

/// An event that has been produced but not yet recorded: a name and a payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// `noun:verb` name.
    pub name: Cow<'static, str>,
    /// JSON payload.
    pub payload: Value,
    /// The version of the event's shape ([`Event::VERSION`]).
    pub version: u32,
}

impl Pending {
    /// Encodes a typed event. An event that cannot be encoded (a map with non-string keys, for
    /// example) becomes an `error:occurred` event that says so, so nothing is lost silently.
    pub fn of<E: Event>(event: &E) -> Self {
        match serde_json::to_value(event) {
            Ok(payload) => Self {
                name: Cow::Borrowed(E::NAME),
                payload,
                version: E::VERSION,
            },
            Err(err) => Self::error(ErrorOccurred::recoverable(
                "encode",
                format!("could not encode event `{}`: {err}", E::NAME),
                None,
            )),
        }
    }

    /// An `error:occurred` event.
    pub(crate) fn error(error: ErrorOccurred) -> Self {
        let payload = serde_json::to_value(&error).unwrap_or(Value::Null);
        Self {
            name: Cow::Borrowed(<ErrorOccurred as Event>::NAME),
            payload,
            version: <ErrorOccurred as Event>::VERSION,
        }
    }
}

/// The events a handler (or an agent's `on_output`) emits, in order.
///
/// ```
/// use openharness_core::{Emit, builtin::UserInput};
/// let emit = Emit::one(UserInput::new("a")).and(UserInput::new("b"));
/// assert_eq!(emit.len(), 2);
/// assert!(Emit::none().is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Emit(Vec<Pending>);

impl Emit {
    /// No events.
    pub const fn none() -> Self {
        Self(Vec::new())
    }

    /// Exactly one event.
    pub fn one<E: Event>(event: E) -> Self {
        Self(vec![Pending::of(&event)])
    }

    /// Adds an event at the end.
    pub fn push<E: Event>(&mut self, event: E) {
        self.0.push(Pending::of(&event));
    }

    /// Adds an event at the end (builder style).
    #[must_use]
    pub fn and<E: Event>(mut self, event: E) -> Self {
        self.push(event);
        self
    }

    /// Adds `other`'s events at the end.
    pub(crate) fn append(&mut self, other: Self) {
        self.0.extend(other.0);
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The events, in order.
    pub fn pending(&self) -> &[Pending] {
        &self.0
    }

    /// Takes the events out.
    pub fn into_pending(self) -> Vec<Pending> {
        self.0
    }
}

impl<E: Event> FromIterator<E> for Emit {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        Self(iter.into_iter().map(|e| Pending::of(&e)).collect())
    }
}

impl<E: Event> Extend<E> for Emit {
    fn extend<I: IntoIterator<Item = E>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(|e| Pending::of(&e)));
    }
}

/// What a handler may return: `()`, one event, or an [`Emit`].
#[diagnostic::on_unimplemented(
    message = "a handler must return `()`, an event or `Emit`, not `{Self}`",
    label = "this handler returns `{Self}`",
    note = "return `Emit::none()`, `Emit::one(event)` or a type marked with `#[event]`"
)]
pub trait IntoEmit {
    /// Converts into the emitted events.
    fn into_emit(self) -> Emit;
}

impl IntoEmit for () {
    fn into_emit(self) -> Emit {
        Emit::none()
    }
}

impl IntoEmit for Emit {
    fn into_emit(self) -> Emit {
        self
    }
}

impl<E: Event> IntoEmit for E {
    fn into_emit(self) -> Emit {
        Emit::one(self)
    }
}
