//! [`Recordings`]: cases chosen by a query over the store's recorded sessions — by workflow
//! and status, newest first, up to a limit — each forked at the same point. Sessions that
//! are runs of an experiment or its judges' verdicts, and forks, are left out: the baselines
//! are the recordings themselves.

use std::collections::BTreeSet;

use openharness_core::{SessionId, SessionStatus, Store};
use openharness_host::{Host, SessionSummary};
use serde::{Deserialize, Serialize};

use crate::case::{Case, ForkAt};
use crate::error::EvalError;
use crate::events::{DATASET_PREFIX, LOG_PREFIX};
use crate::record::{ExperimentRecord, list};

/// A query for baseline sessions; each match becomes a case (its id the session's).
///
/// ```
/// # async fn demo(host: &openharness_host::Host) -> Result<(), openharness_eval::EvalError> {
/// use openharness_eval::{ForkAt, Recordings};
/// let cases = Recordings::new(ForkAt::event("task:started", 1))
///     .workflow("planner-executor")
///     .status(openharness_core::SessionStatus::Idle)
///     .limit(20)
///     .cases(host)
///     .await?;
/// println!("{} recorded sessions to fork", cases.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recordings {
    /// Sessions of this workflow only.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Sessions with this status only (`idle`, `waiting`, `failed`, `running`).
    #[serde(default)]
    pub status: Option<SessionStatus>,
    /// Where to fork each.
    pub at: ForkAt,
    /// Answers for the runs' questions, in order.
    #[serde(default)]
    pub answers: Vec<String>,
    /// At most this many sessions, the newest.
    #[serde(default)]
    pub limit: Option<usize>,
}

impl Recordings {
    /// Every recorded session, forked at `at`.
    pub fn new(at: ForkAt) -> Self {
        Self {
            workflow: None,
            status: None,
            at,
            answers: Vec::new(),
            limit: None,
        }
    }

    /// Sessions of `workflow` only.
    #[must_use]
    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.workflow = Some(workflow.into());
        self
    }

    /// Sessions with `status` only.
    #[must_use]
    pub fn status(mut self, status: SessionStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// At most `limit` sessions, the newest.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Answers for the runs' questions.
    #[must_use]
    pub fn answers(mut self, answers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.answers = answers.into_iter().map(Into::into).collect();
        self
    }

    /// The cases: one per matching session, oldest first.
    pub async fn cases(&self, host: &Host) -> Result<Vec<Case>, EvalError> {
        let made = EvalMade::load(host.store().as_ref()).await?;
        let mut found: Vec<_> = host
            .sessions()
            .await?
            .into_iter()
            .filter(|s| s.hosted && made.is_recording(s))
            .filter(|s| {
                self.workflow
                    .as_ref()
                    .is_none_or(|w| s.workflow.as_ref() == Some(w))
            })
            .filter(|s| self.status.is_none_or(|status| s.status == status))
            .collect();
        if let Some(limit) = self.limit {
            let skip = found.len().saturating_sub(limit);
            found.drain(..skip);
        }
        Ok(found
            .into_iter()
            .map(|s| {
                Case::recording(s.id.to_string(), s.id, self.at.clone())
                    .answers(self.answers.clone())
            })
            .collect())
    }
}

/// The sessions evals made themselves — experiments' runs, judges' verdicts, the logs of
/// experiments and datasets — which are no recordings to make cases of: what
/// [`Recordings`] and a dataset's add ([`crate::DatasetAdd`]) leave out, with forks.
pub(crate) struct EvalMade {
    sessions: BTreeSet<SessionId>,
}

impl EvalMade {
    /// The runs and verdict sessions of every experiment in `store`.
    pub(crate) async fn load(store: &dyn Store) -> Result<Self, EvalError> {
        let mut sessions: BTreeSet<SessionId> = BTreeSet::new();
        for experiment in list(store).await? {
            let record = ExperimentRecord::load(store, &experiment.name).await?;
            sessions.extend(record.runs.values().filter_map(|e| e.run.session.clone()));
            // Runs started and never recorded (a killed process's) are runs all the same.
            sessions.extend(record.dispatched.values().map(|d| d.session.clone()));
            // A judge's verdicts are sessions of its workflow, not recordings either.
            sessions.extend(record.verdicts.values().map(|v| v.judge_session.clone()));
            sessions.extend(
                record
                    .runs
                    .values()
                    .flat_map(|e| e.scores.values())
                    .filter_map(|s| s.judge_session.clone()),
            );
        }
        Ok(Self { sessions })
    }

    /// Whether `session` is a recording a case may fork: not a fork, not a run or a verdict
    /// of an experiment, not an experiment's or a dataset's log.
    pub(crate) fn is_recording(&self, session: &SessionSummary) -> bool {
        let id = session.id.as_str();
        session.parent.is_none()
            && !self.sessions.contains(&session.id)
            && !id.starts_with(LOG_PREFIX)
            && !id.starts_with(DATASET_PREFIX)
            && !id.starts_with(crate::judge::JUDGE_PREFIX)
    }
}
