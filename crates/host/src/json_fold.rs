//! [`JsonFold`]: a workflow's fold with its state type erased, fed events one at a time and
//! read back as JSON. [`crate::Host::compare`] folds both sessions while it reads them with
//! it, so each event is read once.

use openharness_core::{Envelope, WorkflowState, adapter::StreamedFold};
use serde_json::Value;

/// A fold of one workflow's events whose state comes out as JSON
/// ([`crate::Hosted::fold_from`]).
pub trait JsonFold: Send {
    /// Applies the next event (skipped, as a tape skips it, when the workflow does not know
    /// it or it does not decode).
    fn apply(&mut self, event: Envelope);
    /// Changes the state by a JSON merge patch (RFC 7396), as a fork's `stateEdit` does;
    /// `false` (state unchanged) when the patched state no longer decodes.
    fn edit(&mut self, patch: &Value) -> bool;
    /// The state now, as JSON.
    fn state(&self) -> Result<Value, serde_json::Error>;
}

/// The typed fold behind a [`JsonFold`].
pub(crate) struct TypedFold<S: WorkflowState>(StreamedFold<S>);

impl<S: WorkflowState> TypedFold<S> {
    /// A fold starting from `state`; `None` when it does not decode as `S`.
    pub(crate) fn from_json(state: Value) -> Option<Self> {
        let state: S = serde_json::from_value(state).ok()?;
        Some(Self(StreamedFold::at(state, 0).restoring()))
    }
}

impl<S: WorkflowState> JsonFold for TypedFold<S> {
    fn apply(&mut self, event: Envelope) {
        self.0.apply(event);
    }

    fn edit(&mut self, patch: &Value) -> bool {
        let Ok(mut value) = serde_json::to_value(self.0.state()) else {
            return false;
        };
        json_patch::merge(&mut value, patch);
        match serde_json::from_value::<S>(value) {
            Ok(state) => {
                self.0 = StreamedFold::at(state, self.0.position()).restoring();
                true
            }
            Err(_) => false,
        }
    }

    fn state(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self.0.state())
    }
}
