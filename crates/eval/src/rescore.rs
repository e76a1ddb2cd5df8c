//! Re-scoring: score an experiment's recorded runs again with new or changed scorers. The
//! runs are read back from the store (final states folded from their logs): no model is
//! called, except by a judge without a recorded verdict on a run's content (`eval:judged`
//! with the same definition, run and content): a new judge, a changed rubric, model or
//! provider, or content that changed. [`Rescored::judged`] counts the model calls made.

use std::sync::Arc;

use futures_util::StreamExt;
use openharness_host::Host;

use crate::case::Case;
use crate::error::EvalError;
use crate::events::CaseRecord;
use crate::experiment::{Log, score_run};
use crate::judge::{Judged, Judging};
use crate::record::{ExperimentRecord, RunEntry};
use crate::scorer::Scorer;

/// What [`rescore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescored {
    /// Runs scored again.
    pub runs: usize,
    /// Scores recorded.
    pub scores: usize,
    /// What the judges did: verdicts given, how many reused from the log, and the model
    /// calls made for the others.
    pub judged: Judged,
}

/// Scores every completed run of experiment `name` with `scorers`, `concurrency` runs at a
/// time, and appends the scores to its log (a scorer's new score replaces its old one in
/// reports). A judge reuses its recorded verdict on a run when its definition and the judged
/// content are unchanged, and records the verdicts it had to ask for.
///
/// ```
/// # async fn demo(host: openharness_host::Host) -> Result<(), openharness_eval::EvalError> {
/// use openharness_eval::{rescore, scorers};
/// let strict = scorers::predicate("no-errors", |state| state["errors"] == 0);
/// let done = rescore(&host, "prompts", &[std::sync::Arc::new(strict)], 8).await?;
/// println!("{} runs scored again; judges: {}", done.runs, done.judged);
/// # Ok(()) }
/// ```
pub async fn rescore(
    host: &Host,
    name: &str,
    scorers: &[Arc<dyn Scorer>],
    concurrency: usize,
) -> Result<Rescored, EvalError> {
    let mut log = Log::open(host, name).await?;
    let record: ExperimentRecord = log
        .record
        .clone()
        .ok_or_else(|| EvalError::UnknownExperiment(name.to_owned()))?;
    let runs: Vec<RunEntry> = record
        .runs
        .values()
        .filter(|e| e.completed())
        .cloned()
        .collect();
    let cases: Vec<Case> = record.definition.cases.iter().map(case_of).collect();
    let scorers: Arc<[Arc<dyn Scorer>]> = scorers.to_vec().into();
    let judging = Arc::new(Judging::new(record.verdicts.clone()));
    let jobs = runs.into_iter().map(|entry| {
        let host = host.clone();
        let scorers = Arc::clone(&scorers);
        let judging = Arc::clone(&judging);
        let case = cases
            .iter()
            .find(|c| c.id == entry.run.case)
            .cloned()
            .unwrap_or_else(|| Case::inputs(entry.run.case.clone(), Vec::<String>::new()));
        async move {
            let Some(session) = entry.run.session.clone() else {
                return Ok(Vec::new());
            };
            let state = host.state_at(&session, entry.run.len).await?;
            Ok::<_, EvalError>(
                score_run(
                    &host, &case, &entry.run, &session, &state, &scorers, &judging,
                )
                .await,
            )
        }
    });
    let mut scored = Rescored {
        runs: 0,
        scores: 0,
        judged: Judged::default(),
    };
    let mut all = Vec::new();
    let mut results = futures_util::stream::iter(jobs).buffer_unordered(concurrency.max(1));
    while let Some(result) = results.next().await {
        let scores = result?;
        scored.runs += 1;
        scored.scores += scores.len();
        all.extend(scores);
    }
    log.record_scores(all, &judging).await?;
    scored.judged = judging.tally();
    Ok(scored)
}

/// The case a log's record describes (its fork point only as a description: re-scoring
/// does not fork).
fn case_of(record: &CaseRecord) -> Case {
    Case {
        id: record.id.clone(),
        inputs: record.inputs.clone(),
        workflow: None,
        session: record.session.clone(),
        at: None,
        answers: Vec::new(),
        expected: record.expected.clone(),
        metadata: record.metadata.clone(),
        dataset: record.dataset.clone(),
    }
}
