//! The [`Handler`] trait: how a workflow's state reacts to its events.

use crate::emit::Emit;
use crate::event::EventSet;
use crate::undo::Undo;

/// A workflow's state together with the pure function that folds events into it.
///
/// `apply` must be deterministic and free of side effects: replays call it again on recorded
/// events and must reach the same state. Usually implemented by `#[handler(Events)]` on an
/// `impl` block, which generates an exhaustive `match` over the event enum.
///
/// ```
/// use openharness_core::{Emit, Event, EventSet, Handler, adapter::Decoded};
/// # #[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// # struct Tick;
/// # impl Event for Tick { const NAME: &'static str = "clock:ticked"; }
/// # enum Events { Tick(Tick) }
/// # impl EventSet for Events {
/// #     const NAMES: &'static [&'static str] = &["clock:ticked"];
/// #     fn name(&self) -> &'static str { "clock:ticked" }
/// #     fn decode(name: &str, p: &serde_json::Value) -> Result<Decoded<Self>, serde_json::Error> {
/// #         if name == "clock:ticked" { Ok(Decoded::Known(Events::Tick(serde_json::from_value(p.clone())?))) } else { Ok(Decoded::Unknown) }
/// #     }
/// #     fn to_payload(&self) -> Result<serde_json::Value, serde_json::Error> { Ok(serde_json::Value::Null) }
/// # }
/// #[derive(Clone, Default, serde::Serialize)]
/// struct Clock { ticks: u64 }
///
/// impl Handler for Clock {
///     type Events = Events;
///     fn apply(&mut self, event: &Events) -> Emit {
///         match event {
///             Events::Tick(_) => self.ticks += 1,
///         }
///         Emit::none()
///     }
/// }
/// ```
pub trait Handler: Clone + Send + Sync + 'static {
    /// The events this state reacts to.
    type Events: EventSet;

    /// A fingerprint of the handlers' code: `#[handler]` sets it to the SHA-256 (first 16 hex
    /// digits) of its `impl` block (or module) as tokens, doc comments left out, so a changed
    /// handler body changes the workflow's fingerprint and whitespace and comments do not. It
    /// sees the handlers, not the functions they call. Hand-written handlers leave it empty.
    const CODE: &'static str = "";

    /// Folds one event into the state and returns the events it causes.
    fn apply(&mut self, event: &Self::Events) -> Emit;

    /// Whether the state has a handler for `event`: always, unless `#[handler(Events,
    /// partial)]` left it without one. A fold skips an event without a handler (it would
    /// change nothing), and a tape steps back over it without copying the state.
    fn handles(event: &Self::Events) -> bool {
        let _ = event;
        true
    }

    /// Folds one event like [`Handler::apply`], recording in `undo` how to take the change
    /// back (see [`Undo`]). `#[handler]` generates it for handlers that take
    /// `undo: &mut Undo<Self>`; the default says the change cannot be undone, and a tape then
    /// steps back over the event by copying and folding.
    fn apply_undoable(&mut self, event: &Self::Events, undo: &mut Undo<Self>) -> Emit {
        undo.unsupported();
        self.apply(event)
    }
}

/// Marks that a state has a handler for the event `E`: `#[handler(Events)]` implements it for
/// each event it handles, and `#[event]` on the enum requires it of every variant, so a
/// missing handler is reported by name, on the attribute, with how to add one.
///
/// Generated code only; not part of the public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no handler for the event `{E}`",
    label = "no handler for `{E}`",
    note = "every event of the enum needs a handler: add one to the `#[handler]` block, such as `fn on_event(&mut self, event: &{E})` (in a module of functions, `fn on_event(state: &mut {Self}, event: &{E})`)",
    note = "an event this state ignores can be left out of its enum, or the block can say `#[handler(Events, partial)]` to ignore every event without a handler"
)]
pub trait HandlesEvent<E> {}
