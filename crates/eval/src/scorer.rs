//! [`Scorer`]: how a run is judged. A scorer reads a [`RunView`] — the case, the final state,
//! the run's events and measurements — and gives a [`Score`]: a value, whether it passed, and
//! a line saying why. Built-in scorers are in [`crate::scorers`]; write your own by
//! implementing the trait.

use async_trait::async_trait;
use openharness_core::{Envelope, SessionId, Store};
use openharness_host::Host;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::case::Case;
use crate::events::{Better, EvalRecorded};
use crate::judge::verdicts::Judging;

/// A score: the value, whether it passed, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The value (1.0 or 0.0 for a check; a measurement or a grade otherwise).
    pub value: f64,
    /// Whether the run passed.
    pub passed: bool,
    /// Why, in a line.
    pub detail: Option<String>,
    /// For a judge: the session that recorded its verdict.
    pub judge_session: Option<SessionId>,
}

impl Score {
    /// A check: 1.0 and passed, or 0.0 and failed.
    pub fn check(passed: bool) -> Self {
        Self {
            value: if passed { 1.0 } else { 0.0 },
            passed,
            detail: None,
            judge_session: None,
        }
    }

    /// A measurement that passed or not.
    pub fn measured(value: f64, passed: bool) -> Self {
        Self {
            value,
            passed,
            detail: None,
            judge_session: None,
        }
    }

    /// With a line saying why.
    #[must_use]
    pub fn because(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// What a scorer could not do (the run is then scored as failed by it, with this as why).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ScoreError(pub String);

impl ScoreError {
    /// A scorer error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// One recorded run, as a scorer sees it. Its events are read from the store the first time
/// a scorer asks for them, once for every scorer.
pub struct RunView<'a> {
    pub(crate) case: &'a Case,
    pub(crate) run: &'a EvalRecorded,
    pub(crate) session: &'a SessionId,
    pub(crate) state: &'a Value,
    pub(crate) host: &'a Host,
    pub(crate) events: OnceCell<Vec<Envelope>>,
    /// The judges' verdicts this scoring may reuse, and those it asks for.
    pub(crate) judging: std::sync::Arc<Judging>,
}

impl<'a> RunView<'a> {
    /// A view of a run (for scorers' own tests; the runner builds these).
    pub fn new(
        host: &'a Host,
        case: &'a Case,
        run: &'a EvalRecorded,
        session: &'a SessionId,
        state: &'a Value,
    ) -> Self {
        Self {
            case,
            run,
            session,
            state,
            host,
            events: OnceCell::new(),
            judging: std::sync::Arc::default(),
        }
    }

    /// The view with its events already read (a served turn's own, for online scoring).
    #[must_use]
    pub(crate) fn with_events(self, events: Vec<Envelope>) -> Self {
        let _ = self.events.set(events);
        self
    }

    /// The view with the verdicts of a scoring (the experiment's log's, to reuse).
    #[must_use]
    pub(crate) fn with_judging(mut self, judging: std::sync::Arc<Judging>) -> Self {
        self.judging = judging;
        self
    }

    /// The judges' verdicts this scoring may reuse, and those it asks for.
    pub(crate) fn judging(&self) -> &Judging {
        &self.judging
    }

    /// The case the run played.
    pub fn case(&self) -> &Case {
        self.case
    }

    /// The run's record: variant, repeat, latency, usage, cost, turns, fork point.
    pub fn run(&self) -> &EvalRecorded {
        self.run
    }

    /// The run's session.
    pub fn session(&self) -> &SessionId {
        self.session
    }

    /// The state at the end of the run, as JSON.
    pub fn state(&self) -> &Value {
        self.state
    }

    /// The store the run is recorded in.
    pub fn store(&self) -> &dyn Store {
        self.host.store().as_ref()
    }

    /// The host the experiment runs on (to run a judge, or fold states).
    pub fn host(&self) -> &Host {
        self.host
    }

    /// The run's events, read once.
    pub async fn events(&self) -> Result<&[Envelope], ScoreError> {
        let events = self
            .events
            .get_or_try_init(|| async {
                self.host
                    .store()
                    .all_events(self.session)
                    .await
                    .map_err(|err| ScoreError::new(format!("reading the run's events: {err}")))
            })
            .await?;
        Ok(events)
    }
}

/// Judges runs. Implement it for scorers of your own:
///
/// ```
/// use openharness_eval::{RunView, Score, ScoreError, Scorer};
///
/// /// Passes when the run's state has no more than three tasks.
/// struct AtMostThreeTasks;
///
/// #[async_trait::async_trait]
/// impl Scorer for AtMostThreeTasks {
///     fn name(&self) -> &str {
///         "at-most-three-tasks"
///     }
///     async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError> {
///         let tasks = run.state()["tasks"].as_array().map_or(0, Vec::len);
///         Ok(Score::check(tasks <= 3).because(format!("{tasks} tasks")))
///     }
/// }
/// ```
#[async_trait]
pub trait Scorer: Send + Sync {
    /// The scorer's name, unique in its experiment (scores are kept by it).
    fn name(&self) -> &str;

    /// Which way its values improve (default: higher).
    fn better(&self) -> Better {
        Better::Higher
    }

    /// Scores one run.
    async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError>;
}
