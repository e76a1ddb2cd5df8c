//! Reading tapes from the store ([`LoadTape`]), in chunks folded while the next is read, and
//! writing their snapshots back.

use std::future::Future;

use openharness_core::builtin::Builtin;
use openharness_core::{
    Envelope, SessionId, Store, Workflow, WorkflowState,
    adapter::{Fold, Snapshot},
};

use super::Tape;
use crate::error::TapeError;
use crate::snapshots::Calibration;

/// Loading a recorded session as a [`Tape`]: `workflow.load(&session_id)`.
pub trait LoadTape<S: WorkflowState> {
    /// Reads the session from the workflow's store and returns a tape at position 0.
    ///
    /// A forked session starts from its parent's state at the fork point (read from the
    /// same store), so its position 0 is that state.
    ///
    /// A chain of forks deeper than 64 sessions (or a cycle of them, which only a corrupt
    /// store holds) fails with [`openharness_core::Error::Store`] and
    /// [`openharness_core::StoreError::Corrupt`].
    fn load(
        &self,
        session: &SessionId,
    ) -> impl Future<Output = Result<Tape<S>, openharness_core::Error>> + Send;

    /// The state at `position` (clamped) of a stored session, read from the store without
    /// loading the whole session: the store's latest persisted snapshot at or before
    /// `position` (see [`Tape::persist_snapshots`]) and the events after it. Without a
    /// usable snapshot (none saved, or one that no longer decodes into `S`), folds from the
    /// start.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_tape::LoadTape;
    /// let state = workflow.load_state_at(&id, 100_000).await?;
    /// # let _ = state; Ok(()) }
    /// ```
    fn load_state_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> impl Future<Output = Result<S, openharness_core::Error>> + Send;

    /// The states of a stored session at several positions (each clamped), in the order
    /// asked, as `(position, state)`, read as [`LoadTape::load_state_at`] reads one: from the
    /// latest persisted snapshot at or before the smallest position through the events up to
    /// the largest, in one pass.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_tape::LoadTape;
    /// let around = workflow.load_states_at(&id, &[41, 42, 43]).await?;
    /// assert_eq!(around.len(), 3);
    /// # Ok(()) }
    /// ```
    fn load_states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> impl Future<Output = Result<Vec<(u64, S)>, openharness_core::Error>> + Send;
}

impl<S: WorkflowState> LoadTape<S> for Workflow<S> {
    async fn load(&self, session: &SessionId) -> Result<Tape<S>, openharness_core::Error> {
        // Read in chunks and fold each chunk while the store reads the next one, so a replay
        // costs little more than the read itself.
        let store = self.store();
        let failed = |source| openharness_core::Error::Store {
            store: store.describe(),
            session: Some(session.clone()),
            source,
        };
        let first = store.events(session, 0..LOAD_CHUNK).await.map_err(failed)?;
        if first.is_empty() {
            return Err(openharness_core::Error::SessionNotFound(session.clone()));
        }
        check_workflow(self, session, &first)?;
        // Position 0: the initial state, or for a fork its parent's state at the fork point
        // (derived by core, which also refuses a missing parent and a cycle of forks).
        let initial = self.state_at(session, 0).await?;
        // Each chunk is indexed on a blocking thread while the store reads the next one.
        let mut more = first.len() as u64 == LOAD_CHUNK;
        let calibration = Calibration::measure(&initial, &first);
        let interval = calibration.interval();
        let mut tape = Tape::unindexed(
            self.clone(),
            session.clone(),
            first,
            initial,
            calibration,
            interval,
        );
        loop {
            let start = tape.len();
            let indexing = tokio::task::spawn_blocking(move || {
                tape.index();
                tape
            });
            if !more {
                tape = join(indexing).await;
                break;
            }
            let (indexed, next) = tokio::join!(
                join(indexing),
                store.events(session, start..start + LOAD_CHUNK)
            );
            tape = indexed;
            let next = next.map_err(failed)?;
            more = next.len() as u64 == LOAD_CHUNK;
            if next.is_empty() {
                break;
            }
            tape.events.extend(next);
        }
        Ok(tape)
    }

    async fn load_state_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<S, openharness_core::Error> {
        check_recorded(self, session).await?;
        // The latest snapshot at or before `position` and the events between, streamed.
        self.state_at(session, position).await
    }

    async fn load_states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> Result<Vec<(u64, S)>, openharness_core::Error> {
        check_recorded(self, session).await?;
        self.states_at(session, positions).await
    }
}

/// Fails unless `session` is in the store and, when it names its workflow, names `workflow`.
async fn check_recorded<S: WorkflowState>(
    workflow: &Workflow<S>,
    session: &SessionId,
) -> Result<(), openharness_core::Error> {
    let store = workflow.store();
    let info = store
        .session(session)
        .await
        .map_err(|source| openharness_core::Error::Store {
            store: store.describe(),
            session: Some(session.clone()),
            source,
        })?
        .ok_or_else(|| openharness_core::Error::SessionNotFound(session.clone()))?;
    if let Some(recorded) = info.workflow
        && !workflow.folds_sessions_of(&recorded)
    {
        return Err(openharness_core::Error::WrongWorkflow {
            session: session.clone(),
            recorded,
            workflow: workflow.name().to_owned(),
        });
    }
    Ok(())
}

/// The densest interval of snapshots [`Tape::persist_snapshots`] saves.
const PERSISTED_INTERVAL: u64 = 256;

/// How many events [`LoadTape::load`] reads at a time.
const LOAD_CHUNK: u64 = 16_384;

/// Waits for a blocking task, passing its panic on.
async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    match task.await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

/// Fails when the first events name another workflow (as [`Workflow::session_events`] does).
fn check_workflow<S: WorkflowState>(
    workflow: &Workflow<S>,
    session: &SessionId,
    events: &[Envelope],
) -> Result<(), openharness_core::Error> {
    let recorded = events.iter().find_map(|e| match Builtin::decode(e) {
        Some(Ok(Builtin::WorkflowStarted(started))) => Some(started.workflow),
        _ => None,
    });
    match recorded {
        Some(recorded) if !workflow.folds_sessions_of(&recorded) => {
            Err(openharness_core::Error::WrongWorkflow {
                session: session.clone(),
                recorded,
                workflow: workflow.name().to_owned(),
            })
        }
        _ => Ok(()),
    }
}

impl<S: WorkflowState> Tape<S> {
    /// Saves snapshots of this session to the workflow's store, so that
    /// [`LoadTape::load_state_at`] reads few events: one every `min(K, 256)` events, `K`
    /// being the tape's interval (stored snapshots cost disk, not memory, so they may be
    /// denser than the tape's). Returns how many were saved.
    pub async fn persist_snapshots(&self) -> Result<u64, TapeError> {
        let every = self.interval.min(PERSISTED_INTERVAL);
        let store = self.workflow.store();
        let mut fold = Fold::new(self.snapshots[0].clone()).restoring();
        let mut saved = 0;
        for event in &self.events {
            fold.apply(event, &self.events);
            let position = fold.position();
            if !position.is_multiple_of(every) {
                continue;
            }
            let state = serde_json::to_value(fold.state())
                .map_err(|source| TapeError::Encode { position, source })?;
            store
                .snapshot(&self.session, &Snapshot::new(position, state))
                .await
                .map_err(|source| openharness_core::Error::Store {
                    store: store.describe(),
                    session: Some(self.session.clone()),
                    source,
                })?;
            saved += 1;
        }
        Ok(saved)
    }
}
