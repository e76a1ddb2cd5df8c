//! [`ExperimentRecord`]: an experiment as its log says it is — the latest definition, the
//! latest attempt of every run and that run's latest score per scorer — and the list of the
//! experiments in a store.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use openharness_core::{Envelope, Event, SessionId, Store};
use serde::Serialize;

use crate::error::EvalError;
use crate::events::{
    EvalCancelled, EvalDispatched, EvalJudged, EvalRecorded, EvalScored, EvalStarted, LOG_PREFIX,
    RunStatus,
};
use crate::judge::VerdictKey;

/// Which run: case, variant and repeat.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RunKey {
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat: u32,
}

/// A run's latest attempt and its scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEntry {
    /// The run as recorded.
    pub run: EvalRecorded,
    /// Its latest score per scorer.
    pub scores: BTreeMap<String, EvalScored>,
}

impl RunEntry {
    /// Whether the run completed.
    pub fn completed(&self) -> bool {
        self.run.status == RunStatus::Completed
    }

    /// Whether the run was cancelled (the experiment's next run runs it again).
    pub fn cancelled(&self) -> bool {
        self.run.status == RunStatus::Cancelled
    }
}

/// An experiment folded from its log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentRecord {
    /// The experiment's name.
    pub name: String,
    /// Its definition, as last started.
    pub definition: EvalStarted,
    /// When it was first started.
    pub created: DateTime<Utc>,
    /// Its runs, latest attempt each.
    pub runs: BTreeMap<RunKey, RunEntry>,
    /// Runs started and not recorded (their latest `eval:dispatched` has no `eval:recorded`
    /// of that attempt): under way, or cut off by a killed process.
    #[serde(skip)]
    pub dispatched: BTreeMap<RunKey, EvalDispatched>,
    /// The judges' verdicts, by judge definition, run session and judged content: what a
    /// scoring reuses instead of asking a judge's model again (not serialized).
    #[serde(skip)]
    pub(crate) verdicts: BTreeMap<VerdictKey, EvalJudged>,
    /// When its latest run was cancelled ([`EvalCancelled`]), unless it was run again since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<DateTime<Utc>>,
    /// How long its log is.
    pub len: u64,
}

/// The scorer under which people's thumbs on a run's session count as its score
/// ([`ExperimentRecord::with_annotations`]).
pub const THUMBS_SCORER: &str = "human:thumbs";

/// How many runs' feedback logs are read at once.
const FEEDBACK_READS: usize = 8;

/// The log's session id of experiment `name`.
pub fn log_session(name: &str) -> Result<SessionId, EvalError> {
    format!("{LOG_PREFIX}{name}")
        .parse()
        .map_err(|_| EvalError::Definition {
            experiment: name.to_owned(),
            message: "an experiment's name must be 1 to 195 characters without control characters"
                .to_owned(),
        })
}

impl ExperimentRecord {
    /// The record with people's annotations of its runs as scores: each run whose session
    /// has a thumb (up or down, [`openharness_host::Host::annotate`]) is scored
    /// [`THUMBS_SCORER`] with the share of people whose latest thumb is up (passed when more
    /// than half are; runs nobody annotated are left out of its figures), so `compare` weighs a variant's runs by what people said of them
    /// beside the scorers'. Returns how many runs people annotated.
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host) -> Result<(), openharness_eval::EvalError> {
    /// use openharness_eval::{Comparison, ExperimentRecord};
    /// let record = ExperimentRecord::load(host.store().as_ref(), "prompts").await?;
    /// let (record, annotated) = record.with_annotations(&host).await?;
    /// let comparison = Comparison::of(&record, "terse", None, 0.05)?;
    /// println!("{annotated} runs annotated\n{}", comparison.markdown());
    /// # Ok(()) }
    /// ```
    pub async fn with_annotations(
        mut self,
        host: &openharness_host::Host,
    ) -> Result<(Self, u64), EvalError> {
        use futures_util::StreamExt;
        let sessions: Vec<(RunKey, SessionId)> = self
            .runs
            .iter()
            .filter_map(|(key, entry)| Some((key.clone(), entry.run.session.clone()?)))
            .collect();
        let mut reads = futures_util::stream::iter(sessions)
            .map(|(key, session)| async move {
                let feedback = host.feedback(&session).await;
                (key, session, feedback)
            })
            .buffer_unordered(FEEDBACK_READS);
        let mut annotated = 0;
        while let Some((key, session, feedback)) = reads.next().await {
            let feedback = match feedback {
                Ok(feedback) => feedback,
                // A run whose session is gone has nobody's word on it.
                Err(openharness_host::HostError::SessionNotFound(_)) => continue,
                Err(err) => return Err(EvalError::Host(err)),
            };
            let Some(share) = feedback.thumbs_score() else {
                continue;
            };
            let Some(entry) = self.runs.get_mut(&key) else {
                continue;
            };
            annotated += 1;
            let people = feedback
                .annotations
                .iter()
                .filter(|a| a.event.thumbs.is_some())
                .map(|a| a.event.by.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            entry.scores.insert(
                THUMBS_SCORER.to_owned(),
                EvalScored {
                    case: key.case.clone(),
                    variant: key.variant.clone(),
                    repeat: key.repeat,
                    session,
                    scorer: THUMBS_SCORER.to_owned(),
                    value: Some(share),
                    passed: share > 0.5,
                    better: crate::events::Better::Higher,
                    detail: Some(format!(
                        "{:.0}% of {people} people's latest thumbs are up",
                        share * 100.0
                    )),
                    judge_session: None,
                },
            );
        }
        Ok((self, annotated))
    }

    /// Reads experiment `name` from `store`.
    pub async fn load(store: &dyn Store, name: &str) -> Result<Self, EvalError> {
        let session = log_session(name)?;
        let events = store.all_events(&session).await?;
        Self::fold(name, &events)?.ok_or_else(|| EvalError::UnknownExperiment(name.to_owned()))
    }

    /// Folds a log's events (`None` when it has no `eval:started`).
    pub fn fold(name: &str, events: &[Envelope]) -> Result<Option<Self>, EvalError> {
        let mut record: Option<Self> = None;
        for (seq, event) in events.iter().enumerate() {
            let decode_error = |source| EvalError::Log {
                experiment: name.to_owned(),
                seq: seq as u64,
                name: event.name.to_string(),
                source,
            };
            if event.name == EvalStarted::NAME {
                let definition: EvalStarted = event.decode().map_err(decode_error)?;
                Self::start(&mut record, name, definition, event.timestamp);
            } else if let Some(record) = &mut record {
                if event.name == EvalRecorded::NAME {
                    record.add_run(event.decode().map_err(decode_error)?);
                } else if event.name == EvalScored::NAME {
                    record.add_score(event.decode().map_err(decode_error)?);
                } else if event.name == EvalDispatched::NAME {
                    record.add_dispatch(event.decode().map_err(decode_error)?);
                } else if event.name == EvalJudged::NAME {
                    record.add_verdict(event.decode().map_err(decode_error)?);
                } else if event.name == EvalCancelled::NAME {
                    let _: EvalCancelled = event.decode().map_err(decode_error)?;
                    record.cancelled = Some(event.timestamp);
                }
            }
        }
        if let Some(record) = &mut record {
            record.len = events.len() as u64;
        }
        Ok(record)
    }

    /// `record` with `definition` started (the first time) or restarted (which clears a
    /// cancellation).
    pub(crate) fn start(
        record: &mut Option<Self>,
        name: &str,
        definition: EvalStarted,
        at: DateTime<Utc>,
    ) {
        match record {
            Some(record) => {
                record.definition = definition;
                record.cancelled = None;
            }
            None => {
                *record = Some(Self {
                    name: name.to_owned(),
                    definition,
                    created: at,
                    runs: BTreeMap::new(),
                    dispatched: BTreeMap::new(),
                    verdicts: BTreeMap::new(),
                    cancelled: None,
                    len: 0,
                });
            }
        }
    }

    /// A run recorded: it replaces the run's earlier attempt, and that attempt's scores.
    pub(crate) fn add_run(&mut self, run: EvalRecorded) {
        let key = RunKey {
            case: run.case.clone(),
            variant: run.variant.clone(),
            repeat: run.repeat,
        };
        if self
            .dispatched
            .get(&key)
            .is_some_and(|d| d.attempt <= run.attempt)
        {
            self.dispatched.remove(&key);
        }
        let scores = BTreeMap::new();
        self.runs.insert(key, RunEntry { run, scores });
    }

    /// A run about to start: under way until a run of that attempt (or a later one) is
    /// recorded.
    pub(crate) fn add_dispatch(&mut self, dispatch: EvalDispatched) {
        let key = RunKey {
            case: dispatch.case.clone(),
            variant: dispatch.variant.clone(),
            repeat: dispatch.repeat,
        };
        if self.attempts(&key) < dispatch.attempt {
            self.dispatched.insert(key, dispatch);
        }
    }

    /// A score recorded: kept when it scores the run's latest attempt.
    pub(crate) fn add_score(&mut self, score: EvalScored) {
        let key = RunKey {
            case: score.case.clone(),
            variant: score.variant.clone(),
            repeat: score.repeat,
        };
        if let Some(entry) = self.runs.get_mut(&key)
            && entry.run.session.as_ref() == Some(&score.session)
        {
            entry.scores.insert(score.scorer.clone(), score);
        }
    }

    /// A judge's verdict recorded: the latest for its key.
    pub(crate) fn add_verdict(&mut self, verdict: EvalJudged) {
        self.verdicts.insert(VerdictKey::of(&verdict), verdict);
    }

    /// How many verdicts of judges the log holds (each reused by later scorings of its run).
    pub fn verdicts(&self) -> usize {
        self.verdicts.len()
    }

    /// The attempts recorded for a run so far (0 if none).
    pub fn attempts(&self, key: &RunKey) -> u32 {
        self.runs.get(key).map_or(0, |entry| entry.run.attempt)
    }
}

/// An experiment as [`list`] finds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentSummary {
    /// Its name.
    pub name: String,
    /// When it was first started.
    pub created: DateTime<Utc>,
    /// When its log last grew.
    pub last_event: DateTime<Utc>,
    /// How many events its log holds.
    pub events: u64,
}

/// The experiments in `store`, oldest first.
pub async fn list(store: &dyn Store) -> Result<Vec<ExperimentSummary>, EvalError> {
    let mut found: Vec<ExperimentSummary> = store
        .sessions()
        .await?
        .into_iter()
        .filter_map(|info| {
            let name = info.id.as_str().strip_prefix(LOG_PREFIX)?.to_owned();
            Some(ExperimentSummary {
                name,
                created: info.created,
                last_event: info.last_event,
                events: info.count,
            })
        })
        .collect();
    found.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
    Ok(found)
}
