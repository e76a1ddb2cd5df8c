//! Online scores: scorers attached to a served workflow score every turn it finishes, in the
//! background, each score an `eval:scored` event on the session's feedback log
//! ([`openharness_host::feedback::TurnScored`]). The turn never waits for them: they start
//! after its outcome is recorded, from [`Host::turn_ends`], on a task of their own, at most
//! [`OnlineScorers::concurrency`] turns at a time, and are recorded about every 100 ms, the
//! scores of the turns scored meanwhile written together (one durable commit for many turns
//! on stores that group concurrent appends, rather than one more per turn). Session lists then filter and sort by
//! score (`GET /sessions?scorer=helpful&sort=lowestScore`).
//!
//! A scorer sees the turn as a run ([`RunView`]): the case is the session (its inputs the
//! turn's), the state the one the turn ended with, the events the turn's own, the run's
//! record its reason, length, wall time, tokens and cost. The scorers of an experiment file
//! (`[[scorer]]`: checks on the state or an agent's output, tool use, cost, tokens, judges)
//! work unchanged; what compares with a case's `expected` finds nothing to compare with.
//!
//! ```
//! # async fn demo(host: openharness_host::Host) {
//! use openharness_eval::{OnlineScorers, scorers};
//! let scoring = OnlineScorers::new()
//!     .scorer("support", scorers::predicate("answered", |state| state["reply"].is_string()))
//!     .start(&host);
//! // ... serve the host; every finished turn of `support` is scored ...
//! println!("{} turns scored", scoring.stats().scored);
//! # }
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use openharness_core::{Envelope, SessionId};
use openharness_host::feedback::TurnScored;
use openharness_host::{Host, TurnOutcome};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::case::Case;
use crate::events::{EvalRecorded, RunStatus};
use crate::scorer::{RunView, Scorer};
use crate::scorers::{BuildProvider, ScorerSpec};

/// How many turns are scored at once by default.
const CONCURRENCY: usize = 2;
/// How often scores waiting to be recorded are recorded.
const FLUSH: Duration = Duration::from_millis(100);
/// How many turns' scores make a recording at once, whatever the time.
const FLUSH_AT: usize = 64;

/// The scorers of each served workflow, before they start listening.
#[derive(Clone, Default)]
pub struct OnlineScorers {
    by_workflow: HashMap<String, Vec<Arc<dyn Scorer>>>,
    concurrency: Option<usize>,
}

impl std::fmt::Debug for OnlineScorers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: HashMap<&String, Vec<&str>> = self
            .by_workflow
            .iter()
            .map(|(workflow, scorers)| (workflow, scorers.iter().map(|s| s.name()).collect()))
            .collect();
        f.debug_struct("OnlineScorers")
            .field("by_workflow", &names)
            .finish_non_exhaustive()
    }
}

/// Online scorers as a file writes them (TOML, the `--online-scorers` of `openharness serve`):
/// a `[[workflow]]` table per served workflow with its `[[workflow.scorer]]` tables, written
/// as an experiment file's `[[scorer]]`.
///
/// ```
/// let file: openharness_eval::OnlineScorersFile = toml::from_str(r#"
/// [[workflow]]
/// name = "chat"
///
/// [[workflow.scorer]]
/// kind = "matches"
/// name = "polite"
/// field = { state = "/reply" }
/// pattern = "(?i)thank"
/// "#).unwrap();
/// let scorers = file.build().unwrap();
/// assert!(scorers.scores("chat"));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnlineScorersFile {
    /// Turns scored at once (default 2).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// The workflows and their scorers.
    #[serde(default, rename = "workflow")]
    pub workflows: Vec<OnlineWorkflow>,
}

/// One workflow's online scorers in an [`OnlineScorersFile`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnlineWorkflow {
    /// The served workflow.
    pub name: String,
    /// Its scorers.
    #[serde(default, rename = "scorer")]
    pub scorers: Vec<ScorerSpec>,
}

impl OnlineScorersFile {
    /// Reads the file's TOML.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|err| err.to_string())
    }

    /// The scorers it names (judges need a provider the file builds: use
    /// [`OnlineScorersFile::build_with`]).
    pub fn build(&self) -> Result<OnlineScorers, String> {
        self.build_with(&|_| Err("an online judge needs a provider built by its host".to_owned()))
    }

    /// The scorers it names, a judge's provider built by `provider`.
    pub fn build_with(&self, provider: BuildProvider<'_>) -> Result<OnlineScorers, String> {
        let mut scorers = OnlineScorers::new();
        if let Some(concurrency) = self.concurrency {
            scorers = scorers.concurrency(concurrency);
        }
        for workflow in &self.workflows {
            if workflow.scorers.is_empty() {
                return Err(format!(
                    "workflow `{}` has no `[[workflow.scorer]]`",
                    workflow.name
                ));
            }
            for spec in &workflow.scorers {
                let scorer = spec
                    .build_with(provider)
                    .map_err(|err| format!("workflow `{}`: {err}", workflow.name))?;
                scorers = scorers.shared_scorer(workflow.name.clone(), scorer);
            }
        }
        Ok(scorers)
    }
}

impl OnlineScorers {
    /// No scorer yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `scorer` scores every turn of `workflow`.
    #[must_use]
    pub fn scorer(self, workflow: impl Into<String>, scorer: impl Scorer + 'static) -> Self {
        self.shared_scorer(workflow, Arc::new(scorer))
    }

    /// A scorer shared with others scores every turn of `workflow`.
    #[must_use]
    pub fn shared_scorer(mut self, workflow: impl Into<String>, scorer: Arc<dyn Scorer>) -> Self {
        self.by_workflow
            .entry(workflow.into())
            .or_default()
            .push(scorer);
        self
    }

    /// At most `turns` turns scored at once (default 2; at least 1).
    #[must_use]
    pub fn concurrency(mut self, turns: usize) -> Self {
        self.concurrency = Some(turns.max(1));
        self
    }

    /// Whether `workflow` has scorers.
    pub fn scores(&self, workflow: &str) -> bool {
        self.by_workflow.contains_key(workflow)
    }

    /// The workflows with scorers.
    pub fn workflows(&self) -> impl Iterator<Item = &str> {
        self.by_workflow.keys().map(String::as_str)
    }

    /// Whether there is no scorer at all.
    pub fn is_empty(&self) -> bool {
        self.by_workflow.is_empty()
    }

    /// Starts listening to `host`'s turns: every turn of a workflow with scorers that ends
    /// from now on is scored. Scoring stops when the returned handle is dropped.
    pub fn start(self, host: &Host) -> OnlineScoring {
        let stats = Arc::new(Counters::default());
        let ends = host.turn_ends();
        let task = tokio::spawn(listen(
            host.clone(),
            Arc::new(self.by_workflow),
            self.concurrency.unwrap_or(CONCURRENCY),
            ends,
            Arc::clone(&stats),
        ));
        OnlineScoring { task, stats }
    }
}

/// Online scoring under way ([`OnlineScorers::start`]); dropping it stops it.
#[derive(Debug)]
pub struct OnlineScoring {
    task: JoinHandle<()>,
    stats: Arc<Counters>,
}

impl Drop for OnlineScoring {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OnlineScoring {
    /// What it has done so far.
    pub fn stats(&self) -> OnlineStats {
        OnlineStats {
            scored: self.stats.scored.load(Ordering::Relaxed),
            missed: self.stats.missed.load(Ordering::Relaxed),
            failed: self.stats.failed.load(Ordering::Relaxed),
        }
    }
}

/// What online scoring has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OnlineStats {
    /// Turns scored (their scores recorded).
    pub scored: u64,
    /// Turns that ended while scoring was too far behind to hear of them (more than 1,024
    /// turns behind): not scored.
    pub missed: u64,
    /// Turns whose scores could not be recorded (reading the turn or writing its feedback
    /// log failed; each is logged).
    pub failed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    scored: AtomicU64,
    missed: AtomicU64,
    failed: AtomicU64,
}

/// Hears every ended turn and scores those of workflows with scorers, `concurrency` at a
/// time (while that many are being scored, the next ends wait in the host's channel), and
/// records the scores every [`FLUSH`] (or once [`FLUSH_AT`] turns wait), their appends made
/// at once so the store commits them together: one durable write for many turns, not one
/// more per turn beside the turn's own.
async fn listen(
    host: Host,
    by_workflow: Arc<HashMap<String, Vec<Arc<dyn Scorer>>>>,
    concurrency: usize,
    mut ends: tokio::sync::broadcast::Receiver<Arc<TurnOutcome>>,
    stats: Arc<Counters>,
) {
    let mut scoring = FuturesUnordered::new();
    let mut scored: Vec<(SessionId, Vec<TurnScored>)> = Vec::new();
    let mut flush = tokio::time::interval(FLUSH);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard_all = false;
    while !heard_all || !scoring.is_empty() {
        if scored.len() >= FLUSH_AT {
            record(&host, std::mem::take(&mut scored), &stats).await;
        }
        tokio::select! {
            Some(done) = scoring.next(), if !scoring.is_empty() => {
                if let Some(done) = done {
                    scored.push(done);
                }
            }
            _ = flush.tick(), if !scored.is_empty() => {
                record(&host, std::mem::take(&mut scored), &stats).await;
            }
            heard = ends.recv(), if !heard_all && scoring.len() < concurrency => match heard {
                Ok(outcome) => {
                    let (host, by_workflow, stats) = (host.clone(), Arc::clone(&by_workflow), Arc::clone(&stats));
                    scoring.push(async move {
                        match score_turn(&host, &by_workflow, &outcome).await {
                            Ok(scores) => scores.map(|scores| (outcome.session.clone(), scores)),
                            Err(err) => {
                                stats.failed.fetch_add(1, Ordering::Relaxed);
                                tracing::warn!(session = %outcome.session, error = %err, "a turn could not be scored");
                                None
                            }
                        }
                    });
                }
                Err(RecvError::Lagged(missed)) => {
                    stats.missed.fetch_add(missed, Ordering::Relaxed);
                    tracing::warn!(missed, "online scoring fell behind: turns not scored");
                }
                Err(RecvError::Closed) => heard_all = true,
            },
        }
    }
    record(&host, scored, &stats).await;
}

/// Records the scores of many turns at once (each on its session's feedback log).
async fn record(host: &Host, scored: Vec<(SessionId, Vec<TurnScored>)>, stats: &Counters) {
    let appends = scored.iter().map(|(session, scores)| async move {
        (session, host.record_scores(session, scores).await)
    });
    for (session, recorded) in futures_util::future::join_all(appends).await {
        match recorded {
            Ok(()) => {
                stats.scored.fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "a turn's online scores were not recorded");
            }
        }
    }
}

/// Scores one ended turn with its workflow's scorers; `None` when its workflow has none (or
/// the turn recorded nothing).
async fn score_turn(
    host: &Host,
    by_workflow: &HashMap<String, Vec<Arc<dyn Scorer>>>,
    outcome: &TurnOutcome,
) -> Result<Option<Vec<TurnScored>>, String> {
    if outcome.len <= outcome.first_seq {
        return Ok(None);
    }
    let session = &outcome.session;
    let workflow = match host.workflow_of(session).await {
        Ok(hosted) => hosted.name().to_owned(),
        Err(_) => return Ok(None),
    };
    let Some(scorers) = by_workflow.get(&workflow) else {
        return Ok(None);
    };
    let events: Vec<Envelope> = host
        .store()
        .events(session, outcome.first_seq..outcome.len)
        .await
        .map_err(|err| format!("reading the turn's events: {err}"))?;
    let case = Case::inputs(session.to_string(), turn_inputs(&events));
    let run = turn_record(&workflow, session, outcome, &events);
    let view = RunView::new(host, &case, &run, session, &outcome.state).with_events(events);
    let mut scores = Vec::with_capacity(scorers.len());
    for scorer in scorers {
        let (value, passed, detail, judge_session) = match scorer.score(&view).await {
            Ok(score) => (
                Some(score.value),
                score.passed,
                score.detail,
                score.judge_session,
            ),
            Err(err) => (None, false, Some(err.to_string()), None),
        };
        scores.push(TurnScored {
            scorer: scorer.name().to_owned(),
            turn: outcome.len,
            first_seq: outcome.first_seq,
            value,
            passed,
            better: scorer.better(),
            detail,
            judge_session,
        });
    }
    Ok(Some(scores))
}

/// The texts a turn was given (its inputs and answers).
fn turn_inputs(events: &[Envelope]) -> Vec<String> {
    use openharness_core::builtin::Builtin;
    events
        .iter()
        .filter_map(|event| match Builtin::decode(event) {
            Some(Ok(Builtin::UserInput(input))) => Some(input.text),
            Some(Ok(Builtin::InputReceived(received))) => Some(received.text),
            _ => None,
        })
        .collect()
}

/// A turn as the record of a run: how it ended, its length, wall time, tokens and cost.
fn turn_record(
    workflow: &str,
    session: &SessionId,
    outcome: &TurnOutcome,
    events: &[Envelope],
) -> EvalRecorded {
    let latency_ms = match (events.first(), events.last()) {
        (Some(first), Some(last)) => {
            (last.timestamp - first.timestamp)
                .num_microseconds()
                .unwrap_or(0) as f64
                / 1_000.0
        }
        _ => 0.0,
    };
    EvalRecorded {
        case: session.to_string(),
        variant: workflow.to_owned(),
        repeat: 0,
        attempt: 1,
        session: Some(session.clone()),
        status: RunStatus::Completed,
        error: None,
        provider: None,
        reason: serde_json::to_value(outcome.reason)
            .ok()
            .and_then(|reason| reason.as_str().map(str::to_owned)),
        len: outcome.len,
        fork_position: None,
        state_hash: None,
        latency_ms,
        usage: outcome.usage,
        cost: outcome.cost,
        turns: 1,
    }
}
