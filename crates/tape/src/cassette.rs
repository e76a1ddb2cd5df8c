//! Cassette re-execution: run a workflow again with every agent answered from a recorded
//! session, and stop at the first place where the new run does something the recording did
//! not.
//!
//! This is how a handler or prompt change is regression-tested without a model: record a
//! session once (with a real or scripted provider), then re-execute it after the change.
//! Each agent call is answered with what the recording's call streamed and returned
//! (`agent:completed` keeps the accepted output); no provider is called. A call is matched
//! with the recorded call of the same agent activated by the same event (the event matched
//! with the recording's event at the same seq); an agent activated twice by one event takes
//! that event's recorded calls in order.
//!
//! # What is compared
//!
//! Every event of the new run is compared with the recording's, ignoring ids and timestamps
//! (ids inside payloads and causes are compared as the recording's seq of the event they
//! name: for the new run, the seq of the recorded event it was matched with; the text of
//! `error:occurred` is not compared, only its source). Agents run concurrently, so the
//! events of several agent calls interleave differently on each run; the comparison is
//! strict about everything else. Each event belongs to one *stream*:
//!
//! - an agent call's stream holds what the call recorded (its `text:delta`, `tool:called`,
//!   `tool:result`, `output:rejected`, `text:complete`, the events its `on_output` emitted or
//!   its `error:occurred`, and its `agent:completed`), and everything those events caused
//!   in turn (what handlers emitted for them, the `agent:started` of the agents they
//!   activated, and so on down);
//! - the main stream holds the events that no agent call caused (`workflow:started`,
//!   `user:input`, what handlers made of them, ..., `workflow:completed`).
//!
//! An event caused by another event belongs to that event's stream; an `agent:started`
//! belongs to the stream of the event that activated the agent, while the call it starts
//! opens a stream of its own, named by the agent, the seq of that event and, for an agent
//! activated twice by one event, which call it is. Within each stream the new run must
//! record the recording's events in the recording's order; streams may interleave in any
//! order. A changed prompt, another event from a handler, a missing or an extra call are
//! still reported, at the first event (in the new run's order) that differs from what its
//! stream expects: [`TapeError::Diverged`] gives the recording's seq of the expected event
//! (or, for an event the recording does not have, the new run's seq of it).
//!
//! One order remains significant: a handler whose events depend on the order in which
//! concurrent calls finished (one that reacts to the last of several agents, say) records
//! them in the stream of whichever call came last, so it re-executes only when the same call
//! finishes last. A forked session re-executes as a fork of the same parent at the same
//! position (the parent must be in the workflow's store).
//!
//! # What a person did during a turn
//!
//! Each recorded `input:queued` and `stop:requested` is sent to the re-executed turn at the
//! position the recording has it ([`RunOptions::commands_at`]); a turn that answered a queued
//! input is begun as a resume, as the host began it; a call whose recording took a steer
//! takes the re-execution's at the same point of its stream. Providers named in the caller's
//! agent settings are dropped ([`RunOptions::without_agent_providers`]): no model is called.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use openharness_core::builtin::{AgentCompleted, Builtin, ErrorOccurred, InputQueued, Outcome};
use openharness_core::{
    CancellationToken, ChatMessage, Envelope, Event, EventId, Provider, ProviderError, Renderer,
    RunOptions, RunOutcome, SessionId, Workflow, WorkflowState,
    adapter::{
        ProviderEvent, ProviderRequest, ProviderResponse, ProviderResult, ProviderSink,
        TurnCommand, Usage,
    },
};
use serde_json::Value;

use crate::error::{Divergence, EventShape, TapeError};
use crate::fork::{At, ForkSession};

mod check;
mod provider;
mod upcast;

use check::*;
use provider::*;

/// The name the cassette reports as a provider.
const NAME: &str = "cassette";

/// A recorded session, ready to answer a re-execution of its workflow.
///
/// ```
/// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, recorded: openharness_core::SessionId) -> Result<(), openharness_tape::TapeError> {
/// use openharness_core::RunOptions;
/// use openharness_tape::{Cassette, TapeError};
/// let cassette = Cassette::load(&workflow, &recorded).await?;
/// match cassette.replay(&workflow, RunOptions::new()).await {
///     Ok(outcome) => println!("same flow, {} events", outcome.len),
///     Err(TapeError::Diverged(d)) => println!("changed at seq {}: {d}", d.seq),
///     Err(other) => return Err(other),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cassette {
    session: SessionId,
    events: Arc<Vec<Envelope>>,
}

impl Cassette {
    /// Reads `session` from the workflow's store.
    pub async fn load<S: WorkflowState>(
        workflow: &Workflow<S>,
        session: &SessionId,
    ) -> Result<Self, TapeError> {
        let events = workflow.session_events(session).await?;
        Ok(Self::from_events(session.clone(), events))
    }

    /// A cassette over a session's events (from seq 0).
    pub fn from_events(session: SessionId, events: Vec<Envelope>) -> Self {
        Self {
            session,
            events: Arc::new(events),
        }
    }

    /// The recorded session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The recorded agent calls, as a provider that serves them in order per agent.
    /// ([`Cassette::replay`] serves each call by its agent and the event that activated it.)
    pub fn provider(&self) -> impl Provider + use<> {
        CassetteProvider {
            calls: Mutex::new(recorded_calls(&self.events)),
            matched: None,
        }
    }

    /// Runs `workflow` again, with its agents answered from the recording, into a new
    /// session of the workflow's store (or `options`' session). The input is the recording's
    /// `user:input`; `options`' cancellation token is replaced by the cassette's own.
    ///
    /// A session of several turns re-executes turn by turn: each later turn begins as the
    /// recording's did, with [`Workflow::send`] for a `user:input` and [`Workflow::respond`]
    /// for an `input:received` (answering the new session's request at the same seq).
    /// `options` apply to the first turn; later turns run with default options.
    ///
    /// Events recorded at an older version of their shape (`#[event(version = N)]`) are
    /// compared as today's code reads them: upcast, and split where the upcast splits them.
    ///
    /// Returns the last turn's outcome when every event matches the recording,
    /// [`TapeError::Diverged`] naming the seq of the first event where they part (the
    /// recording's seq; the recorded event it shows is as today's code reads it), and
    /// [`TapeError::StateDiverged`] when every event matches but today's handlers fold the
    /// recording to another state than its live run recorded (checked when the recording is
    /// in `workflow`'s store).
    pub async fn replay<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, TapeError> {
        let Some((events, seqs)) = upcast::upcast_recording::<S::Events>(&self.events) else {
            let outcome = self.replay_as_read(workflow, options).await?;
            self.check_recorded_state(workflow).await?;
            return Ok(outcome);
        };
        let read = Self {
            session: self.session.clone(),
            events: Arc::new(events),
        };
        let recorded_len = self.events.len() as u64;
        let outcome = read
            .replay_as_read(workflow, options)
            .await
            .map_err(|err| match err {
                TapeError::Diverged(mut divergence) => {
                    divergence.seq = usize::try_from(divergence.seq)
                        .ok()
                        .and_then(|seq| seqs.get(seq))
                        .copied()
                        .unwrap_or(recorded_len);
                    TapeError::Diverged(divergence)
                }
                other => other,
            })?;
        self.check_recorded_state(workflow).await?;
        Ok(outcome)
    }

    /// After a re-execution that matched every event: today's handlers fold the recording to
    /// the states its live run recorded ([`Workflow::check_state`]), when the recording is in
    /// `workflow`'s store as loaded (a cassette made of events alone, or replayed into
    /// another store, is not checked here: check its own store's session).
    async fn check_recorded_state<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
    ) -> Result<(), TapeError> {
        let stored = workflow.store().session(&self.session).await.ok().flatten();
        if stored.is_none_or(|info| info.count != self.events.len() as u64) {
            return Ok(());
        }
        match workflow.check_state(&self.session).await?.divergence {
            Some(divergence) => Err(TapeError::StateDiverged(Box::new(divergence))),
            None => Ok(()),
        }
    }

    /// [`replay`](Self::replay) of the events as today's code reads them.
    async fn replay_as_read<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, TapeError> {
        let cancel = CancellationToken::new();
        let divergence = Arc::new(Mutex::new(None));
        let matched = Arc::new(Matched::default());
        let recorded_ids = ids(&self.events);
        let checker = Arc::new(Mutex::new(Checker {
            session: self.session.clone(),
            expected: recorded_streams(&self.events, &recorded_ids),
            recorded: Arc::clone(&self.events),
            recorded_ids,
            streams: Streams::default(),
            matched: Arc::clone(&matched),
            seen: 0,
            divergence: Arc::clone(&divergence),
            cancel: cancel.clone(),
            done: false,
        }));
        let diverged = || {
            divergence
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .map(|d| TapeError::Diverged(Box::new(d)))
        };
        let decoded = |event: &Envelope| Builtin::decode(event).and_then(Result::ok);
        let first_turn_end = self
            .events
            .iter()
            .position(|e| matches!(decoded(e), Some(Builtin::WorkflowCompleted(_))))
            .map_or(self.events.len(), |end| end + 1);
        // What the caller gives the agents (a host's per-turn settings) holds for every turn;
        // any provider they name is left out: the recording answers every call.
        let options = options.without_agent_providers();
        let agents = RunOptions::new().agents_or(&options);
        let mut options = options
            .cancel_token(cancel.clone())
            .renderer(TurnChecker(Arc::clone(&checker)))
            .commands_at(recorded_commands(&self.events, 0));
        if let Some(input) = self.events[..first_turn_end]
            .iter()
            .find_map(|e| match decoded(e) {
                Some(Builtin::UserInput(input)) => Some(input),
                _ => None,
            })
        {
            options = options.input(input.text);
        }
        let replaying = workflow.with_provider(CassetteProvider {
            calls: Mutex::new(recorded_calls(&self.events)),
            matched: Some(matched),
        });
        let forked = match self.events.first().and_then(decoded) {
            Some(Builtin::SessionForked(forked)) => Some(forked),
            _ => None,
        };
        let mut outcome = match forked {
            // A fork re-executes as a fork of the same parent at the same position.
            Some(forked) => {
                let fork = replaying
                    .fork(&forked.parent, At::position(forked.position))
                    .await?;
                // A fork that changed the state it started from replays from the same change.
                let fork = match &forked.state_edit {
                    Some(patch) => fork.edit_state(patch)?,
                    None => fork,
                };
                fork.run(options).await?
            }
            None => replaying.run(options).await?,
        };
        // Later turns, each begun as the recording's was.
        while let Some(next) = usize::try_from(outcome.len)
            .ok()
            .and_then(|seq| self.events.get(seq))
        {
            if let Some(diverged) = diverged() {
                return Err(diverged);
            }
            let options = RunOptions::new()
                .agents_or(&agents)
                .cancel_token(cancel.clone())
                .renderer(TurnChecker(Arc::clone(&checker)))
                .commands_at(recorded_commands(&self.events, outcome.len));
            let session = outcome.session.clone();
            outcome = match decoded(next) {
                // The turn that answered an input queued during an earlier one: resuming
                // answers the oldest still queued, as the recording's turn did.
                Some(Builtin::UserInput(_)) if self.answers_queued(next) => {
                    replaying.resume(&session, options).await?
                }
                Some(Builtin::UserInput(input)) => {
                    replaying.send(&session, input.text, options).await?
                }
                Some(Builtin::InputReceived(answer)) => {
                    let request = self
                        .request_in(&replaying, &session, answer.request_id)
                        .await?;
                    replaying
                        .respond(&session, request, answer.text, options)
                        .await?
                }
                _ => {
                    // A turn that did not begin with input (a resume after a crash) cannot be
                    // re-executed: report where the recording goes on.
                    checker
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .finish_recording();
                    break;
                }
            };
        }
        checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish_recording();
        match diverged() {
            Some(diverged) => Err(diverged),
            None => Ok(outcome),
        }
    }

    /// Whether `input` (a recorded `user:input`) answers an input queued during a turn.
    fn answers_queued(&self, input: &Envelope) -> bool {
        input.caused_by.is_some_and(|cause| {
            self.events
                .iter()
                .any(|e| e.id == cause && e.name == InputQueued::NAME)
        })
    }

    /// The id, in the re-executed `session`, of the event at the seq the recording's
    /// `request` has (the re-execution has matched the recording up to here).
    async fn request_in<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
        session: &SessionId,
        request: EventId,
    ) -> Result<EventId, TapeError> {
        let Some(seq) = self.events.iter().position(|e| e.id == request) else {
            // Not asked in the recording: a fork's request inherited from its parent (listed
            // by its `session:forked`), which the re-execution, a fork of the same parent at
            // the same position, inherits too. Any other is refused as not open.
            return Ok(request);
        };
        let seq = seq as u64;
        let store = workflow.store();
        let events = store
            .events(session, seq..seq + 1)
            .await
            .map_err(|source| openharness_core::Error::Store {
                store: store.describe(),
                session: Some(session.clone()),
                source,
            })?;
        // A request the re-execution did not make where the recording did answers a fresh id,
        // which the re-execution refuses as not open.
        Ok(events.first().map_or_else(EventId::new, |e| e.id))
    }
}

/// The second inputs and stops the recording's turn that begins at seq `from` took, each
/// with its seq: the re-executed turn is given each at the same position
/// ([`RunOptions::commands_at`]). Their senders are not waited on.
fn recorded_commands(events: &[Envelope], from: u64) -> Vec<(u64, TurnCommand)> {
    let start = usize::try_from(from).unwrap_or(usize::MAX);
    let mut commands = Vec::new();
    for (event, seq) in events.iter().skip(start).zip(from..) {
        let command = match Builtin::decode(event).and_then(Result::ok) {
            Some(Builtin::InputQueued(input)) => {
                // What the payload holds beside the input's own fields (who sent it, a
                // client's message id): the command adds them back.
                let mut fields = match &event.payload {
                    Value::Object(fields) => fields.clone(),
                    _ => serde_json::Map::new(),
                };
                if let Ok(Value::Object(own)) = serde_json::to_value(&input) {
                    fields.retain(|name, _| !own.contains_key(name));
                }
                TurnCommand::queue_with(input, fields).0
            }
            Some(Builtin::StopRequested(stop)) => TurnCommand::stop(stop.reason).0,
            Some(Builtin::WorkflowCompleted(_)) => break,
            _ => continue,
        };
        commands.push((seq, command));
    }
    commands
}

/// The renderer each turn of a re-execution compares its events with.
struct TurnChecker(Arc<Mutex<Checker>>);

impl Renderer for TurnChecker {
    fn render(&mut self, event: &Envelope) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render(event);
    }
}

#[cfg(test)]
mod tests;
