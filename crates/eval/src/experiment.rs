//! [`Experiment`]: cases × variants × repeats, each run a real recorded session, scored as
//! it finishes, with every result an event on the experiment's log. Running an experiment
//! again resumes it: runs already recorded are never run again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use openharness_core::{
    BoxedProvider, CancellationToken, Envelope, Provider, RunOptions, SessionId, StoreError,
    adapter::Usage,
};
use openharness_host::{ForkPoint, Host, Hosted, PreparedFork, TurnOutcome};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::case::Case;
use crate::error::{EvalError, UnbuiltProvider};
use crate::events::{
    CaseRecord, EvalCancelled, EvalDispatched, EvalRecorded, EvalScored, EvalStarted, RunStatus,
    ScorerRecord,
};
use crate::judge::{Judged, Judging};
use crate::locate::locate;
use crate::record::{ExperimentRecord, RunKey, log_session};
use crate::recorded::{Rebuild, RecordedModel};
use crate::scorer::{RunView, ScoreError, Scorer};
use crate::variant::Variant;

mod job;
mod log;
mod resume;

pub(crate) use job::score_run;
use job::*;
pub(crate) use log::Log;
use resume::Salvaged;

/// A batch of finished runs is recorded once it holds this many runs...
const FLUSH_RUNS: usize = 64;
/// ...or once this long has passed since the last one.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

type OptionsFactory = Arc<dyn Fn() -> RunOptions + Send + Sync>;
type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;
type StartedFn = Arc<dyn Fn() + Send + Sync>;

/// How far an experiment is: reported after each batch of runs is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Runs recorded by this invocation so far.
    pub done: usize,
    /// Runs this invocation has to record.
    pub total: usize,
    /// Runs recorded before (skipped).
    pub skipped: usize,
    /// Runs of this invocation that failed so far.
    pub failed: usize,
}

/// What [`Experiment::run`] did.
#[derive(Debug, Clone)]
pub struct Ran {
    /// Runs recorded now.
    pub ran: usize,
    /// Runs skipped because an earlier invocation recorded them.
    pub skipped: usize,
    /// Runs of this invocation that failed.
    pub failed: usize,
    /// Runs a killed process had left under way whose sessions had finished: scored now, not
    /// run again.
    pub recovered: usize,
    /// Runs a killed process had left under way that had not finished: closed as interrupted
    /// (a session left running is closed) and run again (counted in `ran`).
    pub interrupted: usize,
    /// Runs of this invocation stopped by its cancellation ([`Experiment::cancel_on`]),
    /// recorded `cancelled` (counted in `ran`, not in `failed`); 0 when it was not cancelled.
    pub cancelled: usize,
    /// What its judges did: verdicts given, reused, and the model calls they made.
    pub judged: Judged,
    /// The experiment as its log now says.
    pub record: ExperimentRecord,
}

/// An experiment: cases × variants × repeats over a [`Host`]'s workflows and store.
///
/// ```
/// # async fn demo(host: openharness_host::Host, parent: openharness_core::SessionId, small_model: impl openharness_core::Provider) -> Result<(), openharness_eval::EvalError> {
/// use openharness_eval::{Case, Experiment, ForkAt, Variant, scorers};
/// let ran = Experiment::new("small-model", host)
///     .case(Case::recording("first-task", parent, ForkAt::event("task:started", 1)).answers(["yes"]))
///     .variant(Variant::new("baseline"))
///     .variant(Variant::new("small").provider("small", small_model))
///     .repeats(5)
///     .scorer(scorers::predicate("done", |state| state["completed"] == state["tasks"].as_array().map_or(0, Vec::len)))
///     .concurrency(8)
///     .run()
///     .await?;
/// println!("{} runs, {} failed", ran.ran, ran.failed);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Experiment {
    name: String,
    host: Host,
    workflow: Option<String>,
    cases: Vec<Case>,
    variants: Vec<Variant>,
    baseline: Option<String>,
    repeats: u32,
    scorers: Vec<Arc<dyn Scorer>>,
    max_regression: Option<f64>,
    provider: Option<(String, BoxedProvider)>,
    rebuild: Option<Rebuild>,
    concurrency: usize,
    retry_failed: bool,
    options: OptionsFactory,
    progress: Option<ProgressFn>,
    started: Option<StartedFn>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name)
            .field("cases", &self.cases.len())
            .field("variants", &self.variants)
            .field("repeats", &self.repeats)
            .finish_non_exhaustive()
    }
}

impl Experiment {
    /// A new experiment (or the one of that name in the host's store, to resume or extend).
    pub fn new(name: impl Into<String>, host: Host) -> Self {
        Self {
            name: name.into(),
            host,
            workflow: None,
            cases: Vec::new(),
            variants: Vec::new(),
            baseline: None,
            repeats: 1,
            scorers: Vec::new(),
            max_regression: None,
            provider: None,
            rebuild: None,
            concurrency: 4,
            retry_failed: false,
            options: Arc::new(RunOptions::new),
            progress: None,
            started: None,
            cancel: CancellationToken::new(),
        }
    }

    /// The workflow cases from inputs run (needed when the host registers several and
    /// neither the case nor the variant names one).
    #[must_use]
    pub fn workflow(mut self, name: impl Into<String>) -> Self {
        self.workflow = Some(name.into());

        self
    }

    /// Adds a case.
    #[must_use]
    pub fn case(mut self, case: Case) -> Self {
        self.cases.push(case);
        self
    }

    /// Adds cases.
    #[must_use]
    pub fn cases(mut self, cases: impl IntoIterator<Item = Case>) -> Self {
        self.cases.extend(cases);
        self
    }

    /// Adds a variant. With none, the experiment has one: `baseline`, changing nothing.
    #[must_use]
    pub fn variant(mut self, variant: Variant) -> Self {
        self.variants.push(variant);
        self
    }

    /// The variant the others are compared with (default: the first).
    #[must_use]
    pub fn baseline(mut self, name: impl Into<String>) -> Self {
        self.baseline = Some(name.into());
        self
    }

    /// Runs per case and variant (default 1).
    #[must_use]
    pub fn repeats(mut self, repeats: u32) -> Self {
        self.repeats = repeats;
        self
    }

    /// Adds a scorer.
    #[must_use]
    pub fn scorer(mut self, scorer: impl Scorer + 'static) -> Self {
        self.scorers.push(Arc::new(scorer));
        self
    }

    /// Adds a shared scorer.
    #[must_use]
    pub fn shared_scorer(mut self, scorer: Arc<dyn Scorer>) -> Self {
        self.scorers.push(scorer);
        self
    }

    /// The experiment's gate, recorded with its definition: a variant whose scorer is worse
    /// than the baseline's by more than `delta` (in the scorer's units: 0.05 is five points of
    /// pass rate) fails `openharness eval compare` (unless `--report-only`). It is
    /// `maxRegression` in the recorded [`EvalStarted`], for a comparison to pass to
    /// [`crate::Comparison::of`].
    #[must_use]
    pub fn max_regression(mut self, delta: f64) -> Self {
        self.max_regression = Some(delta);
        self
    }

    /// The provider variants that name none ask (the run's configured model), instead of the
    /// one their case's recording asked or, for cases from inputs, the workflow's own;
    /// `label` goes into each run's record.
    #[must_use]
    pub fn provider(self, label: impl Into<String>, provider: impl Provider) -> Self {
        self.shared_provider(label, Arc::new(provider))
    }

    /// [`Experiment::provider`] with a shared provider.
    #[must_use]
    pub fn shared_provider(mut self, label: impl Into<String>, provider: BoxedProvider) -> Self {
        self.provider = Some((label.into(), provider));
        self
    }

    /// How to rebuild the provider a case's recording asked ([`RecordedModel`]: its name and
    /// model) when a variant names none and the workflow asks another (the recording was made
    /// with a real model, the host registers a scripted one): `Err` says what to configure
    /// so it can be (a key, an address), and the experiment does not start
    /// ([`EvalError::RecordedProvider`]). Without it, such a variant fails the same way.
    ///
    /// ```
    /// # fn demo(experiment: openharness_eval::Experiment, key_is_set: bool, real: openharness_core::BoxedProvider) -> openharness_eval::Experiment {
    /// experiment.rebuild_provider(move |recorded| match recorded.provider.as_str() {
    ///     "openai" if key_is_set => Ok(std::sync::Arc::clone(&real)),
    ///     "openai" => Err("set OPENAI_API_KEY".to_owned()),
    ///     other => Err(format!("`{other}` is not a provider this program builds")),
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn rebuild_provider(
        mut self,
        rebuild: impl Fn(&RecordedModel) -> Result<BoxedProvider, String> + Send + Sync + 'static,
    ) -> Self {
        self.rebuild = Some(Arc::new(rebuild));
        self
    }

    /// How many runs go at once (default 4).
    #[must_use]
    pub fn concurrency(mut self, runs: usize) -> Self {
        self.concurrency = runs.max(1);
        self
    }

    /// Runs again the runs an earlier invocation recorded as failed (default: keep them).
    #[must_use]
    pub fn retry_failed(mut self, retry: bool) -> Self {
        self.retry_failed = retry;
        self
    }

    /// The options each turn of each run gets (guards: `max_agent_calls`, `deadline`,
    /// `max_cost`, ...). Their session is set by the experiment.
    #[must_use]
    pub fn run_options(mut self, options: impl Fn() -> RunOptions + Send + Sync + 'static) -> Self {
        self.options = Arc::new(options);
        self
    }

    /// Called after each batch of runs is recorded (a progress bar).
    #[must_use]
    pub fn on_progress(mut self, report: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(report));
        self
    }

    /// Called once its definition is recorded (`eval:started`): every run's start was found
    /// reachable, and runs are about to be dispatched (a server answers "started" then).
    #[must_use]
    pub fn on_started(mut self, started: impl Fn() + Send + Sync + 'static) -> Self {
        self.started = Some(Arc::new(started));
        self
    }

    /// Stops the experiment's run when `token` is cancelled: each turn under way stops (its
    /// session closed as cancelled, as a cancelled turn is), runs not started are not, each of
    /// those runs is recorded `cancelled` ([`crate::RunStatus::Cancelled`], no scores), then
    /// an [`EvalCancelled`]; [`Experiment::run`] returns what was recorded, with
    /// [`Ran::cancelled`]. The experiment's next run (a resume) runs the cancelled runs again
    /// and clears the cancellation ([`ExperimentRecord::cancelled`]).
    #[must_use]
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    fn invalid(&self, message: impl Into<String>) -> EvalError {
        EvalError::Definition {
            experiment: self.name.clone(),
            message: message.into(),
        }
    }

    fn variants(&self) -> Vec<Variant> {
        if self.variants.is_empty() {
            vec![Variant::new("baseline")]
        } else {
            self.variants.clone()
        }
    }

    fn check(&self, variants: &[Variant]) -> Result<String, EvalError> {
        if self.cases.is_empty() {
            return Err(self.invalid("it has no case"));
        }
        if self.repeats == 0 {
            return Err(self.invalid("repeats must be at least 1"));
        }
        if let Some(delta) = self.max_regression
            && !(delta.is_finite() && delta >= 0.0)
        {
            return Err(self.invalid(format!(
                "max_regression must be a number of at least 0 (it is {delta})"
            )));
        }
        let mut seen = BTreeSet::new();
        for case in &self.cases {
            case.check().map_err(|message| self.invalid(message))?;
            if !seen.insert(case.id.as_str()) {
                return Err(self.invalid(format!("case id `{}` is used twice", case.id)));
            }
            if case.session.is_none()
                && let Some(variant) = variants.iter().find(|v| v.state_edit.is_some())
            {
                return Err(self.invalid(format!(
                    "variant `{}` edits the state at the fork point, but case `{}` starts from inputs, not from a recording",
                    variant.name, case.id
                )));
            }
        }
        let mut seen = BTreeSet::new();
        for variant in variants {
            if variant.name.is_empty() || !seen.insert(variant.name.as_str()) {
                return Err(self.invalid(format!(
                    "variant names must be unique and not empty (`{}`)",
                    variant.name
                )));
            }
        }
        let mut seen = BTreeSet::new();
        for scorer in &self.scorers {
            if !seen.insert(scorer.name()) {
                return Err(self.invalid(format!("scorer `{}` is added twice", scorer.name())));
            }
        }
        let baseline = self
            .baseline
            .clone()
            .unwrap_or_else(|| variants[0].name.clone());
        if !variants.iter().any(|v| v.name == baseline) {
            return Err(self.invalid(format!(
                "the baseline `{baseline}` is not one of its variants"
            )));
        }
        Ok(baseline)
    }

    fn definition(&self, variants: &[Variant], baseline: String) -> EvalStarted {
        EvalStarted {
            experiment: self.name.clone(),
            cases: self
                .cases
                .iter()
                .map(|case| CaseRecord {
                    id: case.id.clone(),
                    inputs: case.inputs.clone(),
                    session: case.session.clone(),
                    at: case.at.as_ref().map(|at| format!("{at:?}")),
                    expected: case.expected.clone(),
                    metadata: case.metadata.clone(),
                    dataset: case.dataset.clone(),
                })
                .collect(),
            variants: variants.iter().map(Variant::record).collect(),
            baseline,
            repeats: self.repeats,
            scorers: self
                .scorers
                .iter()
                .map(|s| ScorerRecord {
                    name: s.name().to_owned(),
                    better: s.better(),
                })
                .collect(),
            max_regression: self.max_regression,
        }
    }

    /// Runs every run not recorded yet (and, with [`Experiment::retry_failed`], the failed
    /// ones again), scoring each as it finishes. The definition is recorded first, then each
    /// run as started (`eval:dispatched`, naming its session); runs and scores are appended
    /// to the log as they finish, so a killed experiment resumes where it stopped: a run it
    /// left mid-turn (or between turns) is recorded as interrupted, its session closed if it
    /// was left running, and run again; a run whose session finished is scored, not run
    /// again.
    pub async fn run(&self) -> Result<Ran, EvalError> {
        let variants = self.variants();
        let baseline = self.check(&variants)?;
        let mut log = Log::open(&self.host, &self.name).await?;
        let record = log.record.clone();

        // Which runs to do. A case or variant whose definition changed under the same name
        // (another recording or fork point, other inputs; another workflow, provider or edit)
        // runs again: its recorded runs answer another question.
        let definition = self.definition(&variants, baseline.clone());
        let (changed_cases, changed_variants) = match &record {
            Some(record) => changed(&record.definition, &definition),
            None => Default::default(),
        };
        let mut todo = Vec::new();
        // Runs a killed process started and never recorded.
        let mut pending = Vec::new();
        let mut skipped = 0;
        for case in &self.cases {
            for variant in &variants {
                for repeat in 0..self.repeats {
                    let key = RunKey {
                        case: case.id.clone(),
                        variant: variant.name.clone(),
                        repeat,
                    };
                    let previous = record.as_ref().and_then(|r| r.runs.get(&key));
                    let unchanged = !changed_cases.contains(&case.id)
                        && !changed_variants.contains(&variant.name);
                    // A cancelled run is not kept: it runs again.
                    let keep = unchanged
                        && previous.is_some_and(|entry| {
                            entry.completed()
                                || (entry.run.status == RunStatus::Failed && !self.retry_failed)
                        });
                    let left = record.as_ref().and_then(|r| r.dispatched.get(&key));
                    if let Some(dispatch) = left.filter(|_| unchanged) {
                        pending.push((case, variant, repeat, dispatch.clone()));
                    } else if keep {
                        skipped += 1;
                    } else {
                        let attempt = record.as_ref().map_or(0, |r| r.attempts(&key)) + 1;
                        todo.push((case, variant, repeat, attempt));
                    }
                }
            }
        }

        // What each (case, variant) starts from, prepared once for its repeats, and the
        // provider its runs ask.
        let mut starts: BTreeMap<(String, String), (Start, Option<String>)> = BTreeMap::new();
        let mut found = Found::default();
        let slots = todo
            .iter()
            .map(|(case, variant, _, _)| (*case, *variant))
            .chain(
                pending
                    .iter()
                    .map(|(case, variant, _, _)| (*case, *variant)),
            );
        for (case, variant) in slots {
            let slot = (case.id.clone(), variant.name.clone());
            if starts.contains_key(&slot) {
                continue;
            }
            let start = self.start(case, variant, &mut found).await?;
            starts.insert(slot, start);
        }

        // Recorded once every run's start is known to be reachable: a definition that
        // cannot run leaves no experiment behind.
        log.start(definition).await?;
        if let Some(started) = &self.started {
            started();
        }
        let scorers: Arc<[Arc<dyn Scorer>]> = self.scorers.clone().into();
        // Verdicts judges gave before are reused (a finished run scored on resume).
        let judging = Arc::new(Judging::new(
            log.record
                .as_ref()
                .map(|record| record.verdicts.clone())
                .unwrap_or_default(),
        ));

        // Judges a killed process left mid-verdict: closed (their verdicts are asked again
        // when their runs are scored), so nothing stays `running`.
        self.close_judges_left_running(log.record.as_ref()).await?;
        // What a killed process left: finished sessions scored, the others closed as
        // interrupted and run again.
        let (mut recovered, mut interrupted, mut salvaged) = (0, 0, Vec::new());
        for (case, variant, repeat, dispatch) in pending {
            let (start, _) = &starts[&(case.id.clone(), variant.name.clone())];
            match self
                .salvage(case, &dispatch, start, &scorers, &judging)
                .await?
            {
                Salvaged::Finished(run, scores) => {
                    recovered += 1;
                    salvaged.push((run, scores));
                }
                Salvaged::Interrupted(run) => {
                    interrupted += 1;
                    salvaged.push((run, Vec::new()));
                    todo.push((case, variant, repeat, dispatch.attempt + 1));
                }
                Salvaged::NotStarted => todo.push((case, variant, repeat, dispatch.attempt)),
            }
        }
        log.record_runs(salvaged, &judging).await?;

        // Each run's session, recorded before it starts.
        let todo: Vec<_> = todo
            .into_iter()
            .map(|(case, variant, repeat, attempt)| {
                (case, variant, repeat, attempt, SessionId::new())
            })
            .collect();
        let dispatches = todo
            .iter()
            .map(|(case, variant, repeat, attempt, session)| EvalDispatched {
                case: case.id.clone(),
                variant: variant.name.clone(),
                repeat: *repeat,
                attempt: *attempt,
                session: session.clone(),
                provider: starts[&(case.id.clone(), variant.name.clone())].1.clone(),
            })
            .collect();
        log.dispatch(dispatches).await?;

        let total = todo.len();
        let semaphore = Arc::new(Semaphore::new(self.concurrency));
        let mut tasks = JoinSet::new();
        // Which run each task is, to record a task that panicked as a failed run.
        let mut running: std::collections::HashMap<tokio::task::Id, EvalRecorded> =
            std::collections::HashMap::new();
        for (case, variant, repeat, attempt, session) in todo {
            let (start, provider) = starts[&(case.id.clone(), variant.name.clone())].clone();
            let job = Job {
                session,
                provider,
                host: self.host.clone(),
                case: Arc::new(case.clone()),
                variant: variant.name.clone(),
                repeat,
                attempt,
                options: {
                    // The experiment's options, with the variant's agent changes.
                    let (base, variant) = (Arc::clone(&self.options), variant.clone());
                    Arc::new(move || variant.apply(base()))
                },
                cancel: self.cancel.clone(),
                scorers: Arc::clone(&scorers),
                judging: Arc::clone(&judging),
            };
            let semaphore = Arc::clone(&semaphore);
            let failed = job.failed("its task panicked".to_owned(), None);
            let handle = tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                job.run(&start).await
            });
            running.insert(handle.id(), failed);
        }

        let mut progress = Progress {
            done: 0,
            total,
            skipped,
            failed: 0,
        };
        let mut cancelled = 0;
        // Finished runs are recorded in batches: one append per batch, at most
        // `FLUSH_RUNS` runs or `FLUSH_EVERY` apart, so the log costs a few commits, not one per
        // run. A run finished but not yet recorded when the process dies is scored on resume
        // (its `eval:dispatched` names its session), not run again.
        let mut batch = Vec::new();
        let mut flushed = tokio::time::Instant::now();
        loop {
            // Wait for the next run, but no longer than the batch may wait to be recorded.
            let next = if batch.is_empty() {
                tasks.join_next_with_id().await
            } else {
                tokio::select! {
                    next = tasks.join_next_with_id() => next,
                    () = tokio::time::sleep_until(flushed + FLUSH_EVERY) => None,
                }
            };
            let done = next.is_none() && tasks.is_empty();
            if let Some(result) = next {
                let (run, scores) = match result {
                    Ok((id, finished)) => {
                        running.remove(&id);
                        finished
                    }
                    Err(err) => {
                        let mut failed = running.remove(&err.id()).ok_or_else(|| {
                            self.invalid(format!("an unknown task failed: {err}"))
                        })?;
                        failed.error = Some(format!("its task panicked or was cancelled: {err}"));
                        (failed, Vec::new())
                    }
                };
                match run.status {
                    RunStatus::Failed => progress.failed += 1,
                    RunStatus::Cancelled => cancelled += 1,
                    RunStatus::Completed => {}
                }
                batch.push((run, scores));
            }
            let due = batch.len() >= FLUSH_RUNS || flushed.elapsed() >= FLUSH_EVERY;
            if !batch.is_empty() && (due || done || tasks.is_empty()) {
                progress.done += batch.len();
                log.record_runs(std::mem::take(&mut batch), &judging)
                    .await?;
                flushed = tokio::time::Instant::now();
                if let Some(report) = &self.progress {
                    report(&progress);
                }
            }
            if done {
                break;
            }
        }
        if cancelled > 0 {
            log.cancelled(EvalCancelled {
                runs: cancelled as u64,
                done: (progress.done - cancelled) as u64,
            })
            .await?;
        }
        let record = log
            .record
            .ok_or_else(|| self.invalid("its log lost its definition"))?;
        Ok(Ran {
            ran: progress.done,
            skipped,
            failed: progress.failed,
            recovered,
            interrupted,
            cancelled,
            judged: judging.tally(),
            record,
        })
    }

    /// What the runs of `case` under `variant` start from, and the provider they ask (its
    /// label, for their records).
    async fn start(
        &self,
        case: &Case,
        variant: &Variant,
        found: &mut Found,
    ) -> Result<(Start, Option<String>), EvalError> {
        let Some(parent) = &case.session else {
            let fallback = case.workflow.as_deref().or(self.workflow.as_deref());
            let (workflow, given) =
                self.variant_workflow(variant, || self.inputs_workflow(fallback))?;
            // No recording: the variant's provider, the experiment's, or the workflow's own.
            let asked = given.or_else(|| workflow.provider_name().map(str::to_owned));
            return Ok((Start::Inputs(workflow), asked));
        };
        let owner = self.host.workflow_of(parent).await?;
        let (workflow, given) = self.variant_workflow(variant, || Ok(Arc::clone(owner)))?;
        let (workflow, asked) = match given {
            Some(label) => (workflow, Some(label)),
            None => {
                self.as_recorded(case, variant, parent, workflow, found)
                    .await?
            }
        };
        let point = match found.fork_points.get(&case.id) {
            Some(point) => point.clone(),
            None => {
                let point = locate(owner.as_ref(), case.at.as_ref(), parent)
                    .await?
                    .ok_or_else(|| no_fork_point(case, parent))?;
                found.fork_points.insert(case.id.clone(), point.clone());
                point
            }
        };
        let mut fork = workflow
            .prepare_fork(parent, point)
            .await
            .map_err(|err| match err {
                openharness_host::HostError::Tape(openharness_tape::TapeError::NoForkPoint {
                    ..
                }) => no_fork_point(case, parent),
                other => other.into(),
            })?;
        if let Some(patch) = &variant.state_edit {
            fork = fork.edit_state(patch)?;
        }
        Ok((Start::Fork(workflow, Arc::from(fork)), asked))
    }

    /// The workflow `variant` runs: its own (built in Rust, or registered by name), else
    /// `default`; asking the variant's provider, else the experiment's, with its label.
    fn variant_workflow(
        &self,
        variant: &Variant,
        default: impl FnOnce() -> Result<Arc<dyn Hosted>, EvalError>,
    ) -> Result<(Arc<dyn Hosted>, Option<String>), EvalError> {
        let workflow = match (&variant.workflow, &variant.workflow_name) {
            (Some(hosted), _) => hosted.with_store(Arc::clone(self.host.store())),
            (None, Some(name)) => Arc::clone(self.host.hosted(name)?),
            (None, None) => default()?,
        };
        Ok(match variant.provider.as_ref().or(self.provider.as_ref()) {
            Some((label, provider)) => (
                workflow.with_provider(Arc::clone(provider)),
                Some(label.clone()),
            ),
            None => (workflow, None),
        })
    }

    /// `workflow` asking the provider `case`'s recording asked, for a variant that names
    /// none (and an experiment that gives none): the workflow's own when it is that one (or
    /// when the recording names none), else the recorded one rebuilt
    /// ([`Experiment::rebuild_provider`]); never another model without a word.
    async fn as_recorded(
        &self,
        case: &Case,
        variant: &Variant,
        parent: &SessionId,
        workflow: Arc<dyn Hosted>,
        found: &mut Found,
    ) -> Result<(Arc<dyn Hosted>, Option<String>), EvalError> {
        let recorded = match found.recorded.get(&case.id) {
            Some(recorded) => recorded.clone(),
            None => {
                let recorded = RecordedModel::of(self.host.store().as_ref(), parent).await?;
                found.recorded.insert(case.id.clone(), recorded.clone());
                recorded
            }
        };
        let own = workflow.provider_name().map(str::to_owned);
        let Some(recorded) = recorded else {
            return Ok((workflow, own));
        };
        if own.as_deref() == Some(recorded.provider.as_str()) {
            return Ok((workflow, Some(recorded.label())));
        }
        let label = recorded.label();
        if let Some(provider) = found.rebuilt.get(&label) {
            return Ok((workflow.with_provider(Arc::clone(provider)), Some(label)));
        }
        let why = match &self.rebuild {
            Some(rebuild) => match rebuild(&recorded) {
                Ok(provider) => {
                    found.rebuilt.insert(label.clone(), Arc::clone(&provider));
                    return Ok((workflow.with_provider(provider), Some(label)));
                }
                Err(why) => why,
            },
            None => "name a provider in the variant, or give the experiment one (`Experiment::provider`) or a way to rebuild recorded ones (`Experiment::rebuild_provider`)".to_owned(),
        };
        Err(EvalError::RecordedProvider(Box::new(UnbuiltProvider {
            variant: variant.name.clone(),
            case: case.id.clone(),
            recorded: label,
            workflow: workflow.name().to_owned(),
            asks: own.map_or_else(
                || "no provider it names".to_owned(),
                |name| format!("`{name}`"),
            ),
            why,
        })))
    }

    /// The workflow cases from inputs run when their variant names none: `name`, else the
    /// host's only workflow.
    fn inputs_workflow(&self, name: Option<&str>) -> Result<Arc<dyn Hosted>, EvalError> {
        if let Some(name) = name {
            return Ok(Arc::clone(self.host.hosted(name)?));
        }
        let names = self.host.workflow_names();
        match names.as_slice() {
            [only] => Ok(Arc::clone(self.host.hosted(only)?)),
            _ => Err(self.invalid(format!(
                "cases from inputs need a workflow: the host registers {}; name one with `workflow`",
                if names.is_empty() { "none".to_owned() } else { names.join(", ") }
            ))),
        }
    }
}

/// What preparing the runs' starts found once and shares: each case's fork point and recorded
/// provider, and the providers rebuilt (by label).
#[derive(Default)]
struct Found {
    fork_points: BTreeMap<String, ForkPoint>,
    recorded: BTreeMap<String, Option<RecordedModel>>,
    rebuilt: BTreeMap<String, BoxedProvider>,
}

/// The case ids and variant names whose definition differs between an experiment's recorded
/// definition and its new one (what a run of them does, not how it is scored).
fn changed(before: &EvalStarted, now: &EvalStarted) -> (BTreeSet<String>, BTreeSet<String>) {
    let cases = now
        .cases
        .iter()
        .filter(|case| {
            before
                .cases
                .iter()
                .find(|c| c.id == case.id)
                .is_some_and(|old| {
                    (&old.inputs, &old.session, &old.at) != (&case.inputs, &case.session, &case.at)
                })
        })
        .map(|case| case.id.clone())
        .collect();
    let variants = now
        .variants
        .iter()
        .filter(|variant| {
            before
                .variants
                .iter()
                .find(|v| v.name == variant.name)
                .is_some_and(|old| {
                    (&old.workflow, &old.code, &old.provider, &old.state_edit)
                        != (
                            &variant.workflow,
                            &variant.code,
                            &variant.provider,
                            &variant.state_edit,
                        )
                })
        })
        .map(|variant| variant.name.clone())
        .collect();
    (cases, variants)
}

/// The error for a case whose fork point matches no position of its session.
fn no_fork_point(case: &Case, parent: &SessionId) -> EvalError {
    EvalError::NoForkPoint {
        case: case.id.clone(),
        session: parent.clone(),
        at: format!("{:?}", case.at),
    }
}
