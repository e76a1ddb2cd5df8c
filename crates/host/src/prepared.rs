//! [`PreparedFork`]: a fork point found and its state derived once, then run any number of
//! times: the repeats and variants of an eval start from it without deriving it again, and
//! without a model call for anything before it.

use async_trait::async_trait;
use openharness_core::{RunOptions, SessionId, WorkflowState};
use openharness_tape::Fork;
use serde_json::Value;

use crate::error::HostError;
use crate::wire::TurnOutcome;
use crate::wire::{encode, outcome};

/// A fork point of a recorded session, ready to run, with its state type erased
/// ([`crate::Hosted::prepare_fork`]).
///
/// Each [`PreparedFork::run`] records a new session whose first event is `session:forked`
/// with [`PreparedFork::state_hash`]: runs with equal hashes started from identical state.
///
/// ```
/// # async fn demo(host: &openharness_host::Host, parent: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
/// use openharness_core::RunOptions;
/// use openharness_host::ForkPoint;
/// let fork = host.prepare_fork(&parent, ForkPoint::Nth { name: "task:started".into(), n: 1 }).await?;
/// let warmer = fork.edit_state(&serde_json::json!({ "temperature": 0.9 }))?;
/// for _ in 0..3 {
///     let outcome = warmer.run(RunOptions::new()).await?;
///     println!("{} started from {}", outcome.session, fork.state_hash());
/// }
/// # Ok(()) }
/// ```
#[async_trait]
pub trait PreparedFork: Send + Sync {
    /// The session forked from.
    fn parent(&self) -> &SessionId;
    /// The parent's position the fork starts from.
    fn position(&self) -> u64;
    /// The SHA-256 of the parent's state at [`PreparedFork::position`], as canonical JSON.
    fn state_hash(&self) -> &str;
    /// How many agent calls the fork point cuts (they run again from their start).
    fn cut_calls(&self) -> usize;
    /// The `input:requested` events open at the fork point (their ids).
    fn open_requests(&self) -> &[openharness_core::EventId];
    /// The state the fork starts from, as JSON.
    fn state(&self) -> Result<Value, HostError>;
    /// The same fork starting from its state changed by a JSON merge patch (RFC 7396).
    fn edit_state(&self, patch: &Value) -> Result<Box<dyn PreparedFork>, HostError>;
    /// Runs the fork into a new session (or `options`' session).
    async fn run(&self, options: RunOptions) -> Result<TurnOutcome, HostError>;
}

/// The [`PreparedFork`] of a typed workflow.
pub(crate) struct TypedFork<S: WorkflowState>(pub(crate) Fork<S>);

#[async_trait]
impl<S: WorkflowState> PreparedFork for TypedFork<S> {
    fn parent(&self) -> &SessionId {
        self.0.parent()
    }

    fn position(&self) -> u64 {
        self.0.position()
    }

    fn state_hash(&self) -> &str {
        self.0.state_hash()
    }

    fn cut_calls(&self) -> usize {
        self.0.cut_calls()
    }

    fn open_requests(&self) -> &[openharness_core::EventId] {
        self.0.open_requests()
    }

    fn state(&self) -> Result<Value, HostError> {
        encode(self.0.parent(), self.0.position(), self.0.state())
    }

    fn edit_state(&self, patch: &Value) -> Result<Box<dyn PreparedFork>, HostError> {
        Ok(Box::new(TypedFork(self.0.clone().edit_state(patch)?)))
    }

    async fn run(&self, options: RunOptions) -> Result<TurnOutcome, HostError> {
        outcome(
            self.0
                .run(options)
                .await
                .map_err(openharness_core::Error::from),
        )
    }
}
