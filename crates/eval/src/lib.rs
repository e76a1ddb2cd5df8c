//! Open Harness evals: is variant B better than A from this point, over these cases, with
//! this many tries each? An [`Experiment`] runs cases × variants × repeats, each run a real
//! session recorded in the store, and scores each as it finishes. Everything it learns is an
//! event on its own log (session `eval:<name>`): reports, comparisons and re-scoring are
//! folds of it, like everything else in Open Harness.
//!
//! - **Cases** ([`Case`]) start from inputs (a JSONL dataset, [`Case::from_jsonl`]) or from
//!   a recorded session at a fork point (one by one, or all matching a query:
//!   [`Recordings`]; [`ForkAt`]: a position, the nth event of a name, the
//!   entry into a phase, a predicate on the state). From a recording, what came before the
//!   fork point is served from the log: no model is called for it, however many variants
//!   and repeats run from there, and every run records the hash of the state it started from
//!   (`stateHash` in its `session:forked`), so equal hashes prove identical starts. The hash
//!   is the SHA-256 of the recorded state at the fork point as canonical JSON (compact, keys
//!   sorted at every depth), taken before a variant's state edit (recorded as `stateEdit`).
//! - **Variants** ([`Variant`]) change the provider or model, the workflow (other prompts or
//!   agent settings, another version) or the state at the fork point. A variant that names
//!   no provider runs on the experiment's ([`Experiment::provider`]), else on the one its
//!   case's recording asked ([`RecordedModel`], rebuilt by [`Experiment::rebuild_provider`]
//!   when the workflow asks another), and fails to start rather than run on another model.
//! - **Running** ([`Experiment::run`]) goes concurrently up to a limit, reports progress, and
//!   resumes: runs already recorded are never run again (failed ones with
//!   [`Experiment::retry_failed`]); a run a killed process left mid-turn is closed as
//!   interrupted and run again, one whose session finished is scored, not run again. A run
//!   can be cancelled ([`Experiment::cancel_on`]): runs under way stop (their sessions closed
//!   as cancelled), each is recorded `cancelled`, then [`EvalCancelled`]; a resume runs them
//!   again.
//! - **Scorers** ([`scorers`], or your own [`Scorer`]) write `eval:scored` events;
//!   [`rescore`] scores recorded runs again without calling a model. A judge (LLM-as-judge)
//!   is asked once: its verdict is an `eval:judged` event ([`EvalJudged`]) keyed by the
//!   judge's definition (prompt, rubric, workflow, provider and model, hashed), the run and
//!   the hash of the judged content, reused by every later scoring with the same key;
//!   [`Judged`] counts the model calls actually made.
//! - **Datasets from production** ([`Dataset`]): recorded sessions matching a query (the
//!   session list's search and filters) become cases ([`DatasetAdd`]), each at the position
//!   its fork point had when it was added; a dataset is a log of its own (`dataset:<name>`),
//!   versioned by its length and diffable, read by experiments at a version.
//! - **Comparing** ([`Comparison`]): per case and overall, wins/ties/losses, means with 95%
//!   intervals (exact t quantiles), pass rates with Wilson intervals, pass@k and pass^k,
//!   flake rate, the sign test (and a note when the cases are too few for it ever to reject),
//!   cost and latency deltas, a Markdown report and a regression gate for CI
//!   ([`Experiment::max_regression`] records the gate with the experiment).
//!
//! # Modules
//!
//! - `experiment` (`experiment/`): [`Experiment`]; `job` runs one case × variant × repeat, `log`.
//! - `file`: [`ExperimentFile`], an experiment as a file (TOML or JSON) writes it — what
//!   `openharness eval run` reads and `POST /experiments` takes — and the [`Experiment`] it
//!   describes.
//! - `case`: [`Case`] and [`ForkAt`], what one row starts from.
//! - `fork_spec`: [`ForkAt`] as text (`event=task:started#2`, `phase=coding#last`, `end`),
//!   as `eval dataset add --at` reads it, and [`ForkAtSyntax`].
//! - `locate`: a [`ForkAt`] found in a recorded session, as runs fork it and as a dataset
//!   records its position.
//! - `dataset` (`dataset/`): [`Dataset`] (load at a version, diff, list, remove, its cases as
//!   an experiment's); `add`: [`DatasetAdd`], production sessions into a dataset, and what it
//!   [`Added`] and [`Skipped`].
//! - `recordings`: [`Recordings`], cases chosen by a query over the store's recorded sessions.
//! - `recorded`: [`RecordedModel`], the provider and model a recording asked, which variants
//!   naming none run on.
//! - `variant`: [`Variant`], one arm of an experiment; the baseline changes nothing.
//! - `scorer`: the [`Scorer`] trait, the [`RunView`] it reads and the [`Score`] it gives.
//! - [`scorers`]: the built-in scorers and [`ScorerSpec`], the same written in a file.
//! - `judge`: LLM-as-judge, each verdict a session of its own and an `eval:judged` event,
//!   reused while its key holds (used through [`scorers`]); [`ProviderSpec`], a provider as a
//!   file names it.
//! - `events`: the events of an experiment's log: [`EvalStarted`], [`EvalRecorded`],
//!   [`EvalScored`], [`EvalJudged`], [`EvalCancelled`]; and of a dataset's:
//!   [`DatasetCasesAdded`], [`DatasetCasesRemoved`].
//! - `record`: [`ExperimentRecord`], an experiment as its log says it is, and [`list`].
//! - `online`: [`OnlineScorers`], scorers attached to served workflows scoring every turn as it
//!   ends, in the background, onto the session's feedback log.
//! - `rescore`: recorded runs scored again, no model called (but by judges without a
//!   recorded verdict).
//! - `compare`: [`Comparison`], a variant against the baseline, as JSON, Markdown and a gate.
//! - [`stats`]: means with 95% intervals, Wilson intervals for pass rates, pass@k and pass^k,
//!   the sign test.
//! - `error`: [`EvalError`].
//!
//! ```
//! # async fn demo<S: openharness_core::WorkflowState>(host: openharness_host::Host, parent: openharness_core::SessionId, terse: openharness_core::Workflow<S>) -> Result<(), openharness_eval::EvalError> {
//! use openharness_eval::{Case, Comparison, Experiment, ExperimentRecord, ForkAt, Variant, scorers};
//! let ran = Experiment::new("terse-executor", host.clone())
//!     .case(Case::recording("release", parent, ForkAt::event("task:started", 1)).answers(["yes"]))
//!     .variant(Variant::new("baseline"))
//!     .variant(Variant::new("terse").workflow(terse))
//!     .repeats(5)
//!     .scorer(scorers::predicate("published", |state| state["release"] == "published"))
//!     .run()
//!     .await?;
//! let comparison = Comparison::of(&ran.record, "terse", None, 0.05)?;
//! println!("{}", comparison.markdown());
//! comparison.gate().map_err(openharness_eval::EvalError::Compare)?;
//! # Ok(()) }
//! ```

mod case;
mod compare;
mod dataset;
mod error;
mod events;
mod experiment;
mod file;
mod fork_spec;
mod judge;
mod locate;
mod online;
mod record;
mod recorded;
mod recordings;
mod rescore;
mod scorer;
pub mod scorers;
pub mod stats;
mod variant;

pub use case::{Case, ForkAt, Named, Occurrence};
pub use compare::{Arm, CaseComparison, Comparison, ScorerComparison, Spend};
pub use dataset::{
    Added, Dataset, DatasetAdd, DatasetChange, DatasetDiff, DatasetSummary, SkipReason, Skipped,
    dataset_session,
};
pub use error::{EvalError, UnbuiltProvider};
pub use events::{
    Better, CaseRecord, DATASET_PREFIX, DatasetCase, DatasetCasesAdded, DatasetCasesRemoved,
    DatasetQuery, DatasetRef, EvalCancelled, EvalDispatched, EvalJudged, EvalRecorded, EvalScored,
    EvalStarted, LOG_PREFIX, RunStatus, ScorerRecord,
};
pub use experiment::{Experiment, Progress, Ran};
pub use file::{DatasetTable, ExperimentFile, ProviderBuilder, VariantFile};
pub use fork_spec::ForkAtSyntax;
pub use judge::{JUDGE_PREFIX, Judged, ProviderSpec};
pub use online::{OnlineScorers, OnlineScorersFile, OnlineScoring, OnlineStats, OnlineWorkflow};
pub use record::{
    ExperimentRecord, ExperimentSummary, RunEntry, RunKey, THUMBS_SCORER, list, log_session,
};
pub use recorded::RecordedModel;
pub use recordings::Recordings;
pub use rescore::{Rescored, rescore};
pub use scorer::{RunView, Score, ScoreError, Scorer};
pub use scorers::{Expect, Field, ScorerSpec};
pub use variant::{AgentChange, Variant, VariantRecord};
