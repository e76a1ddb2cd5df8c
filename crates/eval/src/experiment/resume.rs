//! Runs a killed process left under way (an `eval:dispatched` with no `eval:recorded` of its
//! attempt): a session still running is closed as interrupted (recorded in the session and
//! in the experiment's log) and the run goes again; a session whose turns all finished is
//! scored, not run again.

use openharness_core::builtin::{
    AgentCompleted, InputReceived, SessionForked, UserInput, WorkflowCompleted,
};
use openharness_core::{CancellationToken, Event, SessionStatus, StopReason};

use super::*;
use crate::events::EvalDispatched;

/// What became of a run a killed process left.
pub(super) enum Salvaged {
    /// Its session finished every turn the run would have played: recorded and scored now.
    Finished(EvalRecorded, Vec<EvalScored>),
    /// It did not finish: recorded as interrupted (its session closed), to run again.
    Interrupted(EvalRecorded),
    /// It never started (its session holds nothing): run now, as the same attempt.
    NotStarted,
}

impl Experiment {
    /// Closes the judges' sessions of this experiment's runs that a killed process left
    /// running (none runs here): their cut calls closed as interrupted, their turns ended
    /// `cancelled`, no model asked.
    pub(super) async fn close_judges_left_running(
        &self,
        record: Option<&ExperimentRecord>,
    ) -> Result<(), EvalError> {
        let Some(record) = record else {
            return Ok(());
        };
        let runs: std::collections::BTreeSet<&str> = record
            .runs
            .values()
            .filter_map(|entry| entry.run.session.as_ref())
            .chain(record.dispatched.values().map(|d| &d.session))
            .map(SessionId::as_str)
            .collect();
        for info in self.host.sessions().await? {
            let ours = crate::judge::judged_run(&info.id).is_some_and(|run| runs.contains(run));
            if !ours || info.status != SessionStatus::Running || self.host.is_running(&info.id) {
                continue;
            }
            let cancelled = CancellationToken::new();
            cancelled.cancel();
            let closed = self
                .host
                .start(
                    &info.id,
                    openharness_host::TurnStart::Resume,
                    openharness_core::RunOptions::new().cancel_token(cancelled),
                )
                .await;
            match closed {
                Ok(started) => {
                    if let Err(err) = started.done.wait().await {
                        tracing::warn!(session = %info.id, error = %err, "a judge's session left running could not be closed");
                    }
                }
                Err(err) => {
                    tracing::warn!(session = %info.id, error = %err, "a judge's session left running could not be closed");
                }
            }
        }
        Ok(())
    }

    /// What to do with `dispatch`, a run of `case` a killed process started and never
    /// recorded, whose runs start from `start`.
    pub(super) async fn salvage(
        &self,
        case: &Case,
        dispatch: &EvalDispatched,
        start: &Start,
        scorers: &[Arc<dyn Scorer>],
        judging: &Arc<Judging>,
    ) -> Result<Salvaged, EvalError> {
        let session = &dispatch.session;
        let interrupted = |why: &str, session: Option<SessionId>, len: u64| EvalRecorded {
            case: dispatch.case.clone(),
            variant: dispatch.variant.clone(),
            repeat: dispatch.repeat,
            attempt: dispatch.attempt,
            session,
            status: RunStatus::Failed,
            error: Some(format!("interrupted: {why}; it runs again")),
            provider: dispatch.provider.clone(),
            reason: Some(StopReason::Interrupted.as_str().to_owned()),
            len,
            fork_position: None,
            state_hash: None,
            latency_ms: 0.0,
            usage: Usage::default(),
            cost: 0.0,
            turns: 0,
        };
        let store = self.host.store();
        let events = store.all_events(session).await?;
        // Every run of an invocation is recorded as dispatched at its start; one whose
        // session holds nothing never started: no attempt was made.
        let Some(last) = events.last() else {
            return Ok(Salvaged::NotStarted);
        };
        let workflow = match start {
            Start::Inputs(workflow) | Start::Fork(workflow, _) => workflow,
        };
        if SessionStatus::after(&last.name, &last.payload) == SessionStatus::Running {
            // Closed through the runtime: its cut agent calls are closed as interrupted and
            // the turn ends at once (`workflow:completed`, `cancelled`), no model asked.
            let cancelled = CancellationToken::new();
            cancelled.cancel();
            let closed = workflow
                .resume(session, (self.options)().cancel_token(cancelled))
                .await?;
            return Ok(Salvaged::Interrupted(interrupted(
                "the process running it stopped mid-turn; its session is closed",
                Some(session.clone()),
                closed.len,
            )));
        }
        // Between turns: finished only if the run had nothing left to play (answers for
        // open requests, later inputs), as `Job::play` goes.
        let count = |name: &str| events.iter().filter(|e| e.name == name).count();
        let inputs_given = count(UserInput::NAME);
        let answers_given = count(InputReceived::NAME);
        let open_requests = last
            .decode::<WorkflowCompleted>()
            .map(|done| done.open_requests.len())
            .unwrap_or(0);
        let answers_left = case.answers.len() > answers_given;
        let inputs_left = case.inputs.len() > inputs_given;
        if inputs_left || (open_requests > 0 && answers_left) {
            return Ok(Salvaged::Interrupted(interrupted(
                "the process running it stopped between its turns",
                Some(session.clone()),
                events.len() as u64,
            )));
        }
        let (mut usage, mut cost) = (Usage::default(), 0.0);
        for completed in events
            .iter()
            .filter(|e| e.name == AgentCompleted::NAME)
            .filter_map(|e| e.decode::<AgentCompleted>().ok())
        {
            usage += completed.usage;
            cost += completed.cost.unwrap_or(0.0);
        }
        let forked = events
            .first()
            .filter(|e| e.name == SessionForked::NAME)
            .and_then(|e| e.decode::<SessionForked>().ok());
        let latency = last.timestamp - events[0].timestamp;
        let run = EvalRecorded {
            case: dispatch.case.clone(),
            variant: dispatch.variant.clone(),
            repeat: dispatch.repeat,
            attempt: dispatch.attempt,
            session: Some(session.clone()),
            status: RunStatus::Completed,
            error: None,
            provider: dispatch.provider.clone(),
            reason: last
                .decode::<WorkflowCompleted>()
                .ok()
                .map(|done| done.reason),
            len: events.len() as u64,
            fork_position: forked.as_ref().map(|f| f.position),
            state_hash: forked.and_then(|f| f.state_hash),
            latency_ms: latency.num_microseconds().unwrap_or(0) as f64 / 1000.0,
            usage,
            cost,
            turns: count(WorkflowCompleted::NAME) as u32,
        };
        let state = workflow.state_at(session, u64::MAX).await?;
        let scores = score_run(&self.host, case, &run, session, &state, scorers, judging).await;
        Ok(Salvaged::Finished(run, scores))
    }
}
