//! One job of an experiment: a case × variant × repeat, started from its inputs or from a fork
//! point of a recording, and run to its end.

use openharness_core::StopReason;

use super::*;

/// What the runs of one (case, variant) start from.
#[derive(Clone)]
pub(super) enum Start {
    /// A new session of this workflow.
    Inputs(Arc<dyn Hosted>),
    /// A prepared fork, and the workflow for the turns after it.
    Fork(Arc<dyn Hosted>, Arc<dyn PreparedFork>),
}

/// One run to do.
pub(super) struct Job {
    pub(super) host: Host,
    pub(super) case: Arc<Case>,
    pub(super) variant: String,
    /// The session it records to (dispatched before it starts).
    pub(super) session: SessionId,
    /// The provider its agents ask (its label), for its record.
    pub(super) provider: Option<String>,
    pub(super) repeat: u32,
    pub(super) attempt: u32,
    pub(super) options: OptionsFactory,
    /// The experiment's cancellation: given to each turn, checked before each.
    pub(super) cancel: CancellationToken,
    pub(super) scorers: Arc<[Arc<dyn Scorer>]>,
    /// The judges' verdicts of this invocation (reused and asked).
    pub(super) judging: Arc<Judging>,
}

/// What a run's turns added up to.
pub(super) struct Turns {
    pub(super) last: TurnOutcome,
    pub(super) count: u32,
    pub(super) usage: Usage,
    pub(super) cost: f64,
    /// The experiment was cancelled before the run played all its turns.
    pub(super) cancelled: bool,
}

impl Turns {
    pub(super) fn add(&mut self, outcome: TurnOutcome) {
        self.count += 1;
        self.usage += outcome.usage;
        self.cost += outcome.cost;
        self.last = outcome;
    }
}

impl Job {
    /// This run, recorded as failed for `why`.
    pub(super) fn failed(&self, why: String, session: Option<SessionId>) -> EvalRecorded {
        EvalRecorded {
            case: self.case.id.clone(),
            variant: self.variant.clone(),
            repeat: self.repeat,
            attempt: self.attempt,
            session,
            status: RunStatus::Failed,
            error: Some(why),
            provider: self.provider.clone(),
            reason: None,
            len: 0,
            fork_position: None,
            state_hash: None,
            latency_ms: 0.0,
            usage: Usage::default(),
            cost: 0.0,
            turns: 0,
        }
    }

    /// This run, recorded as cancelled (in `session`, when it recorded anything).
    fn cancelled(&self, session: Option<SessionId>) -> EvalRecorded {
        let mut run = self.failed(
            "cancelled: the experiment was cancelled; its next run runs this again".to_owned(),
            session,
        );
        run.status = RunStatus::Cancelled;
        run.reason = Some(StopReason::Cancelled.as_str().to_owned());
        run
    }

    pub(super) async fn run(self, start: &Start) -> (EvalRecorded, Vec<EvalScored>) {
        let session = self.session.clone();
        if self.cancel.is_cancelled() {
            return (self.cancelled(None), Vec::new());
        }
        let began = Instant::now();
        let played = self.play(start, &session).await;
        let latency_ms = began.elapsed().as_secs_f64() * 1000.0;
        let (fork_position, state_hash) = match start {
            Start::Fork(_, fork) => (Some(fork.position()), Some(fork.state_hash().to_owned())),
            Start::Inputs(_) => (None, None),
        };
        let mut run = EvalRecorded {
            case: self.case.id.clone(),
            variant: self.variant.clone(),
            repeat: self.repeat,
            attempt: self.attempt,
            session: Some(session.clone()),
            status: RunStatus::Completed,
            error: None,
            provider: self.provider.clone(),
            reason: None,
            len: 0,
            fork_position,
            state_hash,
            latency_ms,
            usage: Usage::default(),
            cost: 0.0,
            turns: 0,
        };
        let turns = match played {
            Ok(turns) => turns,
            Err(err) => {
                run.status = RunStatus::Failed;
                run.error = Some(openharness_core::adapter::ErrorChain(&err).to_string());
                // A run that failed before recording anything has no session to point at.
                if let Ok(None) = self.host.store().session(&session).await {
                    run.session = None;
                }
                return (run, Vec::new());
            }
        };
        if turns.cancelled {
            let mut cancelled = self.cancelled(Some(session));
            cancelled.latency_ms = latency_ms;
            cancelled.len = turns.last.len;
            cancelled.usage = turns.usage;
            cancelled.cost = turns.cost;
            cancelled.turns = turns.count;
            return (cancelled, Vec::new());
        }
        run.reason = Some(turns.last.reason.as_str().to_owned());
        run.len = turns.last.len;
        run.usage = turns.usage;
        run.cost = turns.cost;
        run.turns = turns.count;
        let scores = score_run(
            &self.host,
            &self.case,
            &run,
            &session,
            &turns.last.state,
            &self.scorers,
            &self.judging,
        )
        .await;
        (run, scores)
    }

    /// The run's turns: the start, then answers and inputs, in order.
    pub(super) async fn play(
        &self,
        start: &Start,
        session: &SessionId,
    ) -> Result<Turns, EvalError> {
        let options = || (self.options)().cancel_token(self.cancel.clone());
        let mut inputs = self.case.inputs.iter();
        let (workflow, first) = match start {
            Start::Inputs(workflow) => {
                let first = workflow
                    .run(inputs.next().cloned(), options().session(session.clone()))
                    .await?;
                (workflow, first)
            }
            Start::Fork(workflow, fork) => (
                workflow,
                fork.run(options().session(session.clone())).await?,
            ),
        };
        let mut turns = Turns {
            last: first.clone(),
            count: 0,
            usage: Usage::default(),
            cost: 0.0,
            cancelled: false,
        };
        turns.add(first);
        let mut answers = self.case.answers.iter();
        // A turn the cancellation stopped, or a cancellation between turns, ends the run.
        let cut = |turns: &Turns| {
            turns.last.reason == StopReason::Cancelled && self.cancel.is_cancelled()
        };
        loop {
            while let Some(&request) = turns.last.open_requests.first() {
                if cut(&turns) {
                    turns.cancelled = true;
                    return Ok(turns);
                }
                let Some(answer) = answers.next() else { break };
                if self.cancel.is_cancelled() {
                    turns.cancelled = true;
                    return Ok(turns);
                }
                let next = workflow
                    .respond(session, request, answer.clone(), options())
                    .await?;
                turns.add(next);
            }
            if cut(&turns) {
                turns.cancelled = true;
                return Ok(turns);
            }
            let Some(input) = inputs.next() else { break };
            if self.cancel.is_cancelled() {
                turns.cancelled = true;
                return Ok(turns);
            }
            let next = workflow.send(session, input.clone(), options()).await?;
            turns.add(next);
        }
        turns.cancelled = cut(&turns);
        Ok(turns)
    }
}

/// Scores one completed run with every scorer (a scorer that cannot score fails the run,
/// saying why); judges reuse the verdicts `judging` holds and add those they ask for.
pub(crate) async fn score_run(
    host: &Host,
    case: &Case,
    run: &EvalRecorded,
    session: &SessionId,
    state: &Value,
    scorers: &[Arc<dyn Scorer>],
    judging: &Arc<Judging>,
) -> Vec<EvalScored> {
    let view = RunView::new(host, case, run, session, state).with_judging(Arc::clone(judging));
    let mut scores = Vec::with_capacity(scorers.len());
    for scorer in scorers {
        let (value, score) = match scorer.score(&view).await {
            Ok(score) => (Some(score.value), score),
            Err(ScoreError(why)) => (
                None,
                crate::scorer::Score::check(false).because(format!("could not score: {why}")),
            ),
        };
        scores.push(EvalScored {
            case: run.case.clone(),
            variant: run.variant.clone(),
            repeat: run.repeat,
            session: session.clone(),
            scorer: scorer.name().to_owned(),
            value,
            passed: score.passed,
            better: scorer.better(),
            detail: score.detail,
            judge_session: score.judge_session,
        });
    }
    scores
}
