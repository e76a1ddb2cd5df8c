//! The events of an experiment's own log (session `eval:<name>`): the definition each time it
//! is run ([`EvalStarted`]), one [`EvalDispatched`] per run about to start (the session it
//! records to), one [`EvalRecorded`] per finished run, one [`EvalScored`] per score, one
//! [`EvalJudged`] per verdict a judge's model gave, and an [`EvalCancelled`] when a run of the
//! experiment was cancelled. Reports, comparisons and re-scoring are folds of these
//! ([`crate::ExperimentRecord`]).
//!
//! And the events of a dataset's log (session `dataset:<name>`): [`DatasetCasesAdded`] when
//! recorded sessions become cases, [`DatasetCasesRemoved`] when cases leave it. Its version is
//! its log's length: version `k` is the dataset after its first `k` events
//! ([`crate::Dataset`]).

use chrono::{DateTime, Utc};
use openharness_core::{Event, SessionId, SessionStatus, adapter::Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::variant::VariantRecord;

/// The prefix of an experiment log's session id: experiment `prompts` logs to `eval:prompts`.
pub const LOG_PREFIX: &str = "eval:";

/// The prefix of a dataset log's session id: dataset `refunds` logs to `dataset:refunds`.
pub const DATASET_PREFIX: &str = "dataset:";

/// An experiment was started (or resumed, or extended): its definition as of that run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalStarted {
    /// The experiment's name.
    pub experiment: String,
    /// Its cases.
    pub cases: Vec<CaseRecord>,
    /// Its variants.
    pub variants: Vec<VariantRecord>,
    /// The variant the others are compared with.
    pub baseline: String,
    /// Runs per case and variant.
    pub repeats: u32,
    /// Its scorers.
    pub scorers: Vec<ScorerRecord>,
    /// Its gate: a variant whose scorer is worse than the baseline's by more than this (in
    /// the scorer's units) fails `eval compare` (`maxRegression`; none in definitions
    /// recorded without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_regression: Option<f64>,
}

impl Event for EvalStarted {
    const NAME: &'static str = "eval:started";
}

/// A case as an experiment's log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseRecord {
    /// The case's id.
    pub id: String,
    /// Its inputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// The session it forks, for a case from a recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// Where it forks, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Its expected values.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub expected: Value,
    /// Its metadata.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// The dataset (and its version) it came from, for a case of a dataset (absent in
    /// definitions recorded before datasets were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetRef>,
}

/// Which dataset, at which version, a case of an experiment came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetRef {
    /// The dataset's name.
    pub name: String,
    /// Its version: the length of its log when the case was read.
    pub version: u64,
}

/// A scorer as an experiment's log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScorerRecord {
    /// Its name.
    pub name: String,
    /// Whether higher values are better.
    pub better: Better,
}

/// Which way a scorer's values improve (the same as an online score's).
pub use openharness_host::feedback::Better;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The run finished (whatever its scores).
    Completed,
    /// The run failed (a provider error, a guard, a store failure): no scores.
    Failed,
    /// The run was stopped by a cancellation of the experiment
    /// ([`crate::Experiment::cancel_on`]): its session closed as cancelled, or never started;
    /// no scores. The experiment's next run runs it again.
    Cancelled,
}

/// A run of the experiment was cancelled ([`crate::Experiment::cancel_on`]): the runs under
/// way stopped (their sessions closed as cancelled), the runs not started were not started;
/// each is recorded `cancelled` before this event. The experiment's next run (a resume) runs
/// them again and clears the cancellation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalCancelled {
    /// How many runs were recorded `cancelled`.
    pub runs: u64,
    /// How many runs of that invocation had been recorded before (completed or failed).
    pub done: u64,
}

impl Event for EvalCancelled {
    const NAME: &'static str = "eval:cancelled";
}

/// A run (case × variant × repeat) is about to start, recording to `session`: recorded before
/// the session is, so a resume after a kill finds the runs that were under way — closes a
/// session left running as interrupted and runs it again, scores one that finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalDispatched {
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat: u32,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The session the run records to.
    pub session: SessionId,
    /// The provider its agents ask (as [`EvalRecorded::provider`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl Event for EvalDispatched {
    const NAME: &'static str = "eval:dispatched";
}

/// One run (case × variant × repeat) finished: where it is recorded and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRecorded {
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat: u32,
    /// Which attempt at this run this is, from 1 (resumes and `--retry-failed` add attempts).
    pub attempt: u32,
    /// The session the run recorded (none when it failed before recording anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// How it ended.
    pub status: RunStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The provider its agents asked (`provider[:model]`, or a variant's or the experiment's
    /// label for a provider it gave): the variant's own, else the experiment's, else the
    /// one its case's recording asked. Absent in runs recorded before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Why its last turn stopped (`until`, `idle`, `waiting_for_input`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The session's length at the end.
    #[serde(default)]
    pub len: u64,
    /// For a case from a recording: the position forked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_position: Option<u64>,
    /// For a case from a recording: the hash of the state there (equal for every run of the
    /// case: they all began from identical state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_hash: Option<String>,
    /// Wall time of the run, in milliseconds.
    pub latency_ms: f64,
    /// Tokens its agents used.
    #[serde(default)]
    pub usage: Usage,
    /// What its agents reported costing, in US dollars.
    #[serde(default)]
    pub cost: f64,
    /// Turns it took (inputs, answers and the first run or fork).
    #[serde(default)]
    pub turns: u32,
}

impl Event for EvalRecorded {
    const NAME: &'static str = "eval:recorded";
}

/// A scorer scored a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalScored {
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat: u32,
    /// The run's session.
    pub session: SessionId,
    /// The scorer.
    pub scorer: String,
    /// The score; `None` when the scorer could not score the run (then it did not pass,
    /// and means leave it out).
    #[serde(default)]
    pub value: Option<f64>,
    /// Whether the run passed this scorer.
    pub passed: bool,
    /// Which way the scorer's values improve.
    pub better: Better,
    /// Why, in a line (what was found, what was expected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a judge: the session that recorded its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_session: Option<SessionId>,
}

impl Event for EvalScored {
    const NAME: &'static str = "eval:scored";
}

/// A judge gave a verdict on a run: recorded once, when the judge's model was asked, and
/// reused by every later scoring of that run by the same judge on the same content (its key:
/// `definition`, `session`, `content`), so re-scoring asks no model again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalJudged {
    /// The judge (its scorer name).
    pub judge: String,
    /// The SHA-256 of the judge's definition: its name, workflow and that workflow's code,
    /// prompt template, score and reason pointers, provider and model (not its pass bound,
    /// which is applied to the recorded value).
    pub definition: String,
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat: u32,
    /// The judged run's session.
    pub session: SessionId,
    /// The SHA-256 of what the judge was shown: its prompt, filled with the run's content.
    pub content: String,
    /// The score the judge gave.
    pub value: f64,
    /// Its reason, when the judge reads one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The session that recorded the judge's run.
    pub judge_session: SessionId,
    /// The model calls the verdict took (agent calls, and each new ask after a rejected
    /// output).
    pub model_calls: u64,
}

impl Event for EvalJudged {
    const NAME: &'static str = "eval:judged";
}

/// Which recorded sessions a dataset's add asked for, as the session list's query words them
/// (`openharness sessions`, `GET /sessions`): every field optional, all must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetQuery {
    /// Text found (in any case) in the session's id, title, workflow, an agent's name or an
    /// input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// Sessions of this workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Sessions with one of these statuses (any when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<SessionStatus>,
    /// Sessions that ran this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Sessions active at or after this time (their last event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Sessions started at or before this time (their first event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// At most this many sessions, the newest (experiments' runs and forks left out first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// A case of a dataset: a recorded session, forked at the position resolved when it was
/// added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetCase {
    /// The case's id, unique in its dataset (the session's id).
    pub id: String,
    /// The recorded session.
    pub session: SessionId,
    /// Where its runs fork it: the position the fork point asked for was at when the case
    /// was added, kept however the session grows since.
    pub position: u64,
    /// The session's workflow when it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The session's title (its first input) when it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Answers to its runs' questions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    /// Inputs after the fork's first turn, each a later turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// Expected values, for scorers.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub expected: Value,
    /// Anything else (tags, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
}

/// Recorded sessions became cases of a dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetCasesAdded {
    /// The sessions asked for.
    pub query: DatasetQuery,
    /// The fork point asked for, as text (`event=task:started#2`: [`crate::ForkAt`]'s
    /// grammar); each case has the position it resolved to.
    pub at: String,
    /// The cases added (never one already in the dataset).
    pub cases: Vec<DatasetCase>,
}

impl Event for DatasetCasesAdded {
    const NAME: &'static str = "dataset:cases-added";
}

/// Cases left a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetCasesRemoved {
    /// Their ids.
    pub cases: Vec<String>,
    /// Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Event for DatasetCasesRemoved {
    const NAME: &'static str = "dataset:cases-removed";
}
