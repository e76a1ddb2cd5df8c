//! Forks: start a new session from any point of a recorded one and run on from there, with
//! the same workflow or a variant of it (another provider, other prompts).
//!
//! The child's first event is `session:forked {parent, position, openRequests}`; its state at
//! position 0 is the parent's state at `position`, derived from the parent's events. A fork
//! point is treated like the end of a session a crash cut there, and the fork finishes what
//! was under way as a resume would ([`Workflow::continuation_at`]): what handlers had emitted
//! and not recorded yet is recorded (forking right after `user:input` runs the planner, right
//! after `task:started` runs that task), an agent call cut between its `agent:started` and its
//! `agent:completed` (among its deltas and tool calls) is closed as `interrupted` and run again
//! from its start, a call completed before the fork point keeps its output and is never sent
//! to a model again, and requests open at the fork point stay open (answering one continues
//! the fork). So every position gives a session that finishes: none is left idle with work
//! to do.
//!
//! In the child's log, the re-run call's `agent:completed {outcome: interrupted}` and its new
//! `agent:started` are caused by the parent's event that triggered the call (event ids are
//! unique across sessions), so the record says which call was cut and why it ran again.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use openharness_core::builtin::SessionForked;
use openharness_core::{
    RunOptions, RunOutcome, SessionId, Workflow, WorkflowState,
    adapter::{Continuation, Fold, Pending},
};

use crate::error::TapeError;
use crate::tape::{LoadTape, Tape};
use openharness_core::adapter::state_hash;

type StatePredicate<S> = Arc<dyn Fn(&S) -> bool + Send + Sync>;

/// Where to fork a session.
///
/// ```
/// use openharness_tape::At;
/// # #[derive(Clone, serde::Serialize, serde::Deserialize)] struct S { done: bool }
/// # impl openharness_core::Handler for S { type Events = E; fn apply(&mut self, _: &E) -> openharness_core::Emit { openharness_core::Emit::none() } }
/// # enum E {}
/// # impl openharness_core::EventSet for E { const NAMES: &'static [&'static str] = &[];
/// #   fn name(&self) -> &'static str { match *self {} }
/// #   fn decode(_: &str, _: &serde_json::Value) -> Result<openharness_core::adapter::Decoded<Self>, serde_json::Error> { Ok(openharness_core::adapter::Decoded::Unknown) }
/// #   fn to_payload(&self) -> Result<serde_json::Value, serde_json::Error> { match *self {} } }
/// let after_five: At<S> = At::position(5);
/// let second_task: At<S> = At::nth("task:started", 2);
/// let once_done: At<S> = At::state(|state: &S| state.done);
/// # let _ = (after_five, second_task, once_done);
/// ```
pub enum At<S> {
    /// A position of the parent (clamped to its length).
    Position(u64),
    /// The first position whose state satisfies the predicate.
    State(StatePredicate<S>),
    /// Right after the `n`th event (1-based) with this name.
    Nth {
        /// The event name.
        name: String,
        /// Which occurrence, from 1.
        n: usize,
    },
}

impl<S> At<S> {
    /// At position `position`.
    pub fn position(position: u64) -> Self {
        Self::Position(position)
    }

    /// At the first position whose state satisfies `pred`.
    pub fn state(pred: impl Fn(&S) -> bool + Send + Sync + 'static) -> Self {
        Self::State(Arc::new(pred))
    }

    /// Right after the `n`th (1-based) event named `name`.
    pub fn nth(name: impl Into<String>, n: usize) -> Self {
        Self::Nth {
            name: name.into(),
            n,
        }
    }

    /// Finds the position in `tape`, if any.
    fn locate(&self, tape: &Tape<S>) -> Option<u64>
    where
        S: WorkflowState,
    {
        match self {
            Self::Position(position) => Some((*position).min(tape.len())),
            Self::State(pred) => {
                if pred(tape.initial_state()) {
                    return Some(0);
                }
                let events = tape.events();
                let mut fold = Fold::new(tape.initial_state().clone()).restoring().quiet();
                events.iter().find_map(|event| {
                    fold.apply(event, events);
                    pred(fold.state()).then_some(fold.position())
                })
            }
            Self::Nth { name, n } => tape
                .events()
                .iter()
                .enumerate()
                .filter(|(_, e)| e.name == name.as_str())
                .nth(n.checked_sub(1)?)
                .map(|(index, _)| index as u64 + 1),
        }
    }
}

impl<S> fmt::Debug for At<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Position(p) => write!(f, "position {p}"),
            Self::State(_) => f.write_str("a predicate on the state"),
            Self::Nth { name, n } => write!(f, "occurrence {n} of `{name}`"),
        }
    }
}

/// A fork point, ready to run: the parent, the position, the state there and what was under
/// way there.
///
/// Cheap to clone; running it twice gives two sibling sessions that start from identical
/// state.
pub struct Fork<S: WorkflowState> {
    workflow: Workflow<S>,
    parent: SessionId,
    position: u64,
    from: Continuation<S>,
    /// [`state_hash`] of the parent's state at `position`.
    state_hash: String,
    /// The merge patch [`Fork::edit_state`] applied, if any.
    state_edit: Option<serde_json::Value>,
    /// The state before the first edit, as JSON (to record one patch for several edits).
    state_before_edits: Option<serde_json::Value>,
}

impl<S: WorkflowState> Clone for Fork<S> {
    fn clone(&self) -> Self {
        Self {
            workflow: self.workflow.clone(),
            parent: self.parent.clone(),
            position: self.position,
            from: self.from.clone(),
            state_hash: self.state_hash.clone(),
            state_edit: self.state_edit.clone(),
            state_before_edits: self.state_before_edits.clone(),
        }
    }
}

impl<S: WorkflowState> fmt::Debug for Fork<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fork")
            .field("parent", &self.parent)
            .field("position", &self.position)
            .field("from", &self.from)
            .field("state_hash", &self.state_hash)
            .field("state_edit", &self.state_edit)
            .finish_non_exhaustive()
    }
}

impl<S: WorkflowState> Fork<S> {
    /// The session forked from.
    pub fn parent(&self) -> &SessionId {
        &self.parent
    }

    /// The parent's position the fork starts from.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The state the fork starts from (the parent's state at [`Fork::position`]).
    pub fn state(&self) -> &S {
        self.from.state()
    }

    /// The SHA-256 of the parent's state at [`Fork::position`] as canonical JSON
    /// ([`state_hash`]), recorded in the fork's `session:forked`: forks with equal hashes
    /// started from identical state (before any [`Fork::edit_state`]).
    pub fn state_hash(&self) -> &str {
        &self.state_hash
    }

    /// The fork starting from its state changed by `patch`, a JSON merge patch (RFC 7396:
    /// objects merge key by key, `null` removes a key, anything else replaces): an eval's
    /// variant that changes the state at the fork point. The patch is recorded in the
    /// fork's `session:forked` (`stateEdit`) beside the hash of the state before it. Fails
    /// with [`TapeError::StateEdit`] when the patched state no longer decodes as `S`.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(fork: openharness_tape::Fork<S>) -> Result<(), openharness_tape::TapeError> {
    /// let cautious = fork.edit_state(&serde_json::json!({ "temperature": 0.2 }))?;
    /// cautious.run(openharness_core::RunOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn edit_state(mut self, patch: &serde_json::Value) -> Result<Self, TapeError> {
        let edit_error = |source| TapeError::StateEdit {
            session: self.parent.clone(),
            position: self.position,
            source,
        };
        let before = serde_json::to_value(self.from.state()).map_err(edit_error)?;
        let mut after = before.clone();
        json_patch::merge(&mut after, patch);
        let state: S = serde_json::from_value(after.clone()).map_err(edit_error)?;
        self.from = self.from.with_state(state);
        self.state_edit = Some(match self.state_edit.take() {
            // Merge patches do not compose by merging them: record one patch from the
            // parent's state to the final one.
            Some(earlier) => match &self.state_before_edits {
                Some(original) => merge_patch_between(original, &after),
                None => earlier,
            },
            None => {
                self.state_before_edits = Some(before);
                patch.clone()
            }
        });
        Ok(self)
    }

    /// How many agent calls the fork point cuts (started, not completed): the fork runs them
    /// again from their start.
    pub fn cut_calls(&self) -> usize {
        self.from.cut_calls()
    }

    /// The `input:requested` events open at the fork point (their ids): the fork waits for
    /// them as its parent did there, and an answer to one continues it (a different answer
    /// than the parent got, say).
    pub fn open_requests(&self) -> &[openharness_core::EventId] {
        self.from.open_requests()
    }

    /// Runs the fork with the workflow it was made with, into a new session (or
    /// `options`' session) whose first event is `session:forked`.
    pub async fn run(&self, options: RunOptions) -> Result<RunOutcome<S>, TapeError> {
        self.run_on(&self.workflow, options).await
    }

    /// Runs the fork with another variant of the workflow (other agents' provider, model or
    /// prompts), recording to that workflow's store.
    pub async fn run_on(
        &self,
        workflow: &Workflow<S>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, TapeError> {
        let first = Pending::of(&SessionForked {
            parent: self.parent.clone(),
            position: self.position,
            workflow: Some(workflow.name().to_owned()),
            open_requests: self.from.open_requests().to_vec(),
            state_hash: Some(self.state_hash.clone()),
            state_edit: self.state_edit.clone(),
        });
        let from = self.from.clone().first(first);
        Ok(workflow.run_from(from, options).await?)
    }
}

/// Forking a recorded session: `workflow.fork(&session, At::position(5))`.
///
/// ```
/// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, parent: openharness_core::SessionId, other: impl openharness_core::Provider) -> Result<(), openharness_tape::TapeError> {
/// use openharness_core::RunOptions;
/// use openharness_tape::{At, ForkSession};
/// // Run the second task again with another model.
/// let fork = workflow.with_provider(other).fork(&parent, At::nth("task:started", 2)).await?;
/// let outcome = fork.run(RunOptions::new()).await?;
/// println!("forked {} at {} into {}", fork.parent(), fork.position(), outcome.session);
/// # Ok(()) }
/// ```
pub trait ForkSession<S: WorkflowState> {
    /// Finds the fork point in `session` and derives the state there, ready to
    /// [`Fork::run`]. Fails with [`TapeError::NoForkPoint`] when nothing matches `at`.
    fn fork(
        &self,
        session: &SessionId,
        at: At<S>,
    ) -> impl Future<Output = Result<Fork<S>, TapeError>> + Send;
}

impl<S: WorkflowState> ForkSession<S> for Workflow<S> {
    async fn fork(&self, session: &SessionId, at: At<S>) -> Result<Fork<S>, TapeError> {
        let tape = self.load(session).await?;
        fork_at(self, &tape, &at).await
    }
}

/// The fork of `tape` at `at`.
async fn fork_at<S: WorkflowState>(
    workflow: &Workflow<S>,
    tape: &Tape<S>,
    at: &At<S>,
) -> Result<Fork<S>, TapeError> {
    let position = at.locate(tape).ok_or_else(|| TapeError::NoForkPoint {
        session: tape.session().clone(),
        at: format!("{at:?}"),
    })?;
    let from = workflow.continuation_at(tape.session(), position).await?;
    let state_hash =
        state_hash(from.state()).map_err(|source| TapeError::Encode { position, source })?;
    Ok(Fork {
        workflow: workflow.clone(),
        parent: tape.session().clone(),
        position,
        from,
        state_hash,
        state_edit: None,
        state_before_edits: None,
    })
}

/// A JSON merge patch (RFC 7396) that turns `from` into `to`: changed keys with their new
/// values (objects patched key by key), removed keys as `null`. (A `null` inside `to`'s
/// objects cannot be said by a merge patch; such a key is removed instead.)
fn merge_patch_between(from: &serde_json::Value, to: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (from, to) {
        (Value::Object(before), Value::Object(after)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in after {
                match before.get(key) {
                    Some(old) if old == value => {}
                    Some(old @ Value::Object(_)) if value.is_object() => {
                        patch.insert(key.clone(), merge_patch_between(old, value));
                    }
                    _ => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in before.keys().filter(|key| !after.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => to.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::merge_patch_between;

    #[test]
    fn the_patch_between_two_states_turns_one_into_the_other() {
        let from = json!({ "k": { "x": 1, "y": 2 }, "gone": true, "same": [1] });
        for to in [
            json!({ "k": { "y": 2 }, "same": [1] }),
            json!({ "k": 3, "same": [1, 2], "new": { "a": "b" } }),
            json!({ "k": { "x": 1, "y": 5 }, "gone": true, "same": [1] }),
        ] {
            let patch = merge_patch_between(&from, &to);
            let mut applied = from.clone();
            json_patch::merge(&mut applied, &patch);
            assert_eq!(applied, to, "{patch}");
        }
    }
}
