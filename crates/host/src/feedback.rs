//! A session's feedback: what people ([`AnnotationAdded`]) and scorers run on served turns
//! ([`TurnScored`]) said about it, each an event with who (or which scorer) and when.
//!
//! Feedback is kept on a log of its own beside the session, `feedback:<session id>`
//! ([`feedback_log`]), never on the session's log: annotating a session moves none of its
//! positions, enters no fork's prefix, changes no state hash, and never waits for (or
//! interrupts) a turn running on it. The log is read by id like any other; session lists
//! leave it out, and fold it into the session's summary instead (its scores, thumbs and
//! labels, [`Host::query_sessions`]).
//!
//! ```
//! # async fn demo(host: openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
//! use openharness_host::feedback::{AnnotationAdded, Thumbs};
//! let added = AnnotationAdded::by("ana@example.com")
//!     .thumbs(Thumbs::Down)
//!     .label("wrong-city")
//!     .note("booked Porto, was asked for Lisbon");
//! host.annotate(&session, added).await?;
//! let feedback = host.feedback(&session).await?;
//! assert_eq!(feedback.annotations.len(), 1);
//! # Ok(()) }
//! ```

use chrono::{DateTime, Utc};
use openharness_core::{Envelope, Event, EventId, InvalidSessionId, SessionId, StoreError};
use serde::{Deserialize, Serialize};

use crate::Host;
use crate::error::HostError;

/// The prefix of a feedback log's session id: session `s` keeps its feedback on
/// `feedback:s`.
pub const FEEDBACK_PREFIX: &str = "feedback:";

/// The most labels one annotation carries.
pub const MAX_LABELS: usize = 32;
/// The longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 64;
/// The longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 10_000;
/// The longest `by`, in characters.
pub const MAX_BY_CHARS: usize = 200;
/// How many times an append that lost a race with another writer of the same feedback log is
/// tried again.
const APPEND_TRIES: usize = 8;

/// The feedback log of `session` (an error only for an id so long that the prefix makes it
/// longer than a session id may be).
///
/// ```
/// let session: openharness_core::SessionId = "trip-1".parse().unwrap();
/// let log = openharness_host::feedback::feedback_log(&session).unwrap();
/// assert_eq!(log.as_str(), "feedback:trip-1");
/// assert_eq!(openharness_host::feedback::subject_of(&log), Some(session));
/// ```
pub fn feedback_log(session: &SessionId) -> Result<SessionId, InvalidSessionId> {
    format!("{FEEDBACK_PREFIX}{}", session.as_str()).parse()
}

/// The session whose feedback `log` keeps, when `log` is a feedback log.
pub fn subject_of(log: &SessionId) -> Option<SessionId> {
    log.as_str()
        .strip_prefix(FEEDBACK_PREFIX)
        .and_then(|id| id.parse().ok())
}

/// `session`'s feedback log, or why it has none.
fn log_of(session: &SessionId) -> Result<SessionId, HostError> {
    feedback_log(session).map_err(|err| {
        HostError::BadFeedback(format!("session {session} keeps no feedback: {err}"))
    })
}

/// A thumb up or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Thumbs {
    /// Good.
    Up,
    /// Bad.
    Down,
}

/// Which run of an experiment an annotation is about (its session is the run's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnnotatedRun {
    /// The experiment.
    pub experiment: String,
    /// The case.
    pub case: String,
    /// The variant.
    pub variant: String,
    /// The repeat, from 0.
    #[serde(deserialize_with = "crate::whole::number")]
    pub repeat: u32,
}

/// A person annotated a session, one of its turns, or a run of an experiment: a thumb, labels,
/// a note (at least one of them), who, and (the event's timestamp) when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnnotationAdded {
    /// Who annotated: an e-mail, a name, a reviewer's id.
    pub by: String,
    /// A thumb up or down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbs: Option<Thumbs>,
    /// Labels (`wrong-city`, `hallucination`), each at most 64 characters, at most 32.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// A note, at most 10,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The turn annotated, by the position where it ended (a [`TurnScored::turn`], a
    /// `TurnOutcome::len`); the whole session when absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::whole::optional"
    )]
    pub turn: Option<u64>,
    /// The run of an experiment annotated, when the session is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<AnnotatedRun>,
}

impl Event for AnnotationAdded {
    const NAME: &'static str = "annotation:added";
}

impl AnnotationAdded {
    /// An annotation by `by`, saying nothing yet.
    pub fn by(by: impl Into<String>) -> Self {
        Self {
            by: by.into(),
            thumbs: None,
            labels: Vec::new(),
            note: None,
            turn: None,
            run: None,
        }
    }

    /// With a thumb up or down.
    #[must_use]
    pub fn thumbs(mut self, thumbs: Thumbs) -> Self {
        self.thumbs = Some(thumbs);
        self
    }

    /// With one more label.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.labels.push(label.into());
        self
    }

    /// With a note.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// About the turn that ended at position `turn`.
    #[must_use]
    pub fn turn(mut self, turn: u64) -> Self {
        self.turn = Some(turn);
        self
    }

    /// About a run of an experiment.
    #[must_use]
    pub fn run(mut self, run: AnnotatedRun) -> Self {
        self.run = Some(run);
        self
    }

    /// The annotation as it is kept (labels trimmed, empty note dropped), or why it cannot be.
    fn checked(mut self, len: u64) -> Result<Self, String> {
        self.by = self.by.trim().to_owned();
        if self.by.is_empty() {
            return Err("`by` names who annotates; it is empty".to_owned());
        }
        if self.by.chars().count() > MAX_BY_CHARS {
            return Err(format!("`by` is longer than {MAX_BY_CHARS} characters"));
        }
        self.labels = self
            .labels
            .iter()
            .map(|label| label.trim().to_owned())
            .collect();
        if self.labels.iter().any(String::is_empty) {
            return Err("a label is empty".to_owned());
        }
        if let Some(label) = self
            .labels
            .iter()
            .find(|label| label.chars().count() > MAX_LABEL_CHARS)
        {
            return Err(format!(
                "label `{}…` is longer than {MAX_LABEL_CHARS} characters",
                label.chars().take(20).collect::<String>()
            ));
        }
        if self.labels.len() > MAX_LABELS {
            return Err(format!(
                "{} labels: at most {MAX_LABELS}",
                self.labels.len()
            ));
        }
        self.labels.dedup();
        if self
            .note
            .as_deref()
            .is_some_and(|note| note.trim().is_empty())
        {
            self.note = None;
        }
        if self
            .note
            .as_deref()
            .is_some_and(|note| note.chars().count() > MAX_NOTE_CHARS)
        {
            return Err(format!(
                "the note is longer than {MAX_NOTE_CHARS} characters"
            ));
        }
        if self.thumbs.is_none() && self.labels.is_empty() && self.note.is_none() {
            return Err("an annotation says something: a thumb, a label or a note".to_owned());
        }
        if let Some(turn) = self.turn
            && (turn == 0 || turn > len)
        {
            return Err(format!(
                "turn {turn} is not a position where a turn of the session ended (its length is {len})"
            ));
        }
        Ok(self)
    }
}

/// Which way a score's values improve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Higher is better (pass rates, quality).
    Higher,
    /// Lower is better (cost, latency, tokens).
    Lower,
}

/// A scorer scored a turn of a served session as it finished (online scoring): recorded as
/// `eval:scored` on the session's feedback log. (An experiment's log records its runs' scores
/// under the same name, with the case, variant and repeat instead of the turn.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnScored {
    /// The scorer.
    pub scorer: String,
    /// The turn scored, by the position where it ended (the session's length after it).
    pub turn: u64,
    /// The seq of the turn's first event.
    pub first_seq: u64,
    /// The score; `None` when the scorer could not score the turn (then it did not pass).
    #[serde(default)]
    pub value: Option<f64>,
    /// Whether the turn passed.
    pub passed: bool,
    /// Which way the scorer's values improve.
    pub better: Better,
    /// Why, in a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a judge: the session that recorded its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_session: Option<SessionId>,
}

impl Event for TurnScored {
    const NAME: &'static str = "eval:scored";
}

/// A feedback event as recorded: its id, when it was recorded, and what it says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Stamped{T}")]
pub struct Stamped<T> {
    /// The event's id.
    pub id: EventId,
    /// When it was recorded.
    pub at: DateTime<Utc>,
    /// What it says.
    #[serde(flatten)]
    pub event: T,
}

/// Everything said about a session: its annotations and its online scores, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Feedback {
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// People's annotations.
    pub annotations: Vec<Stamped<AnnotationAdded>>,
    /// Online scorers' scores of its turns.
    pub scores: Vec<Stamped<TurnScored>>,
}

impl Feedback {
    /// Folds a feedback log's events (other names are skipped).
    pub fn fold(events: &[Envelope]) -> Self {
        let mut feedback = Self::default();
        for event in events {
            let at = event.timestamp;
            match event.name.as_ref() {
                AnnotationAdded::NAME => match event.decode::<AnnotationAdded>() {
                    Ok(added) => feedback.annotations.push(Stamped {
                        id: event.id,
                        at,
                        event: added,
                    }),
                    Err(err) => {
                        tracing::warn!(id = %event.id, error = %err, "an annotation does not decode; skipped")
                    }
                },
                TurnScored::NAME => match event.decode::<TurnScored>() {
                    Ok(scored) => feedback.scores.push(Stamped {
                        id: event.id,
                        at,
                        event: scored,
                    }),
                    Err(err) => {
                        tracing::warn!(id = %event.id, error = %err, "a score does not decode; skipped")
                    }
                },
                _ => {}
            }
        }
        feedback
    }

    /// The latest thumb of each person (on the session or any of its turns) as a score: the
    /// share of thumbs up, `None` without any thumb.
    pub fn thumbs_score(&self) -> Option<f64> {
        let mut latest: std::collections::BTreeMap<&str, Thumbs> =
            std::collections::BTreeMap::new();
        for annotation in &self.annotations {
            if let Some(thumbs) = annotation.event.thumbs {
                latest.insert(annotation.event.by.as_str(), thumbs);
            }
        }
        if latest.is_empty() {
            return None;
        }
        let up = latest.values().filter(|t| **t == Thumbs::Up).count();
        Some(up as f64 / latest.len() as f64)
    }
}

impl Host {
    /// Records `annotation` on `session`'s feedback log, once the session exists and the
    /// annotation says something (a thumb, a label or a note) about a turn it has: returns the
    /// annotation as recorded. Bad input is [`HostError::BadFeedback`], an unknown session
    /// [`HostError::SessionNotFound`]; a running turn is never waited for.
    pub async fn annotate(
        &self,
        session: &SessionId,
        annotation: AnnotationAdded,
    ) -> Result<Stamped<AnnotationAdded>, HostError> {
        if session.as_str().starts_with(FEEDBACK_PREFIX) {
            return Err(HostError::BadFeedback(format!(
                "{session} is a feedback log: annotate the session it is about"
            )));
        }
        let info = self.info(session).await?;
        let annotation = annotation
            .checked(info.count)
            .map_err(HostError::BadFeedback)?;
        // A turn is named by the position where it ended: right after a `workflow:completed`.
        if let Some(turn) = annotation.turn {
            let ended = self
                .store
                .events(session, turn - 1..turn)
                .await
                .map_err(self.store_error())?;
            if ended.first().is_none_or(|e| e.name != "workflow:completed") {
                return Err(HostError::BadFeedback(format!(
                    "no turn of session {session} ended at position {turn} (a turn ends right after its `workflow:completed`)"
                )));
            }
        }
        let event = Envelope::typed(&annotation, None)
            .map_err(|err| HostError::BadFeedback(err.to_string()))?;
        let recorded = Stamped {
            id: event.id,
            at: event.timestamp,
            event: annotation,
        };
        self.append_feedback(session, vec![event]).await?;
        Ok(recorded)
    }

    /// Records online scores of `session`'s turns on its feedback log.
    pub async fn record_scores(
        &self,
        session: &SessionId,
        scores: &[TurnScored],
    ) -> Result<(), HostError> {
        if scores.is_empty() {
            return Ok(());
        }
        let events = scores
            .iter()
            .map(|score| Envelope::typed(score, None))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| HostError::BadFeedback(err.to_string()))?;
        self.append_feedback(session, events).await
    }

    /// Everything recorded about `session`: its annotations and online scores (empty for a
    /// session nobody annotated or scored). [`HostError::SessionNotFound`] for no session.
    pub async fn feedback(&self, session: &SessionId) -> Result<Feedback, HostError> {
        self.info(session).await?;
        let events = self
            .store
            .all_events(&log_of(session)?)
            .await
            .map_err(self.store_error())?;
        let mut feedback = Feedback::fold(&events);
        feedback.session = Some(session.clone());
        Ok(feedback)
    }

    /// Appends to `session`'s feedback log at its end, again when another writer got there
    /// first.
    async fn append_feedback(
        &self,
        session: &SessionId,
        events: Vec<Envelope>,
    ) -> Result<(), HostError> {
        let log = log_of(session)?;
        let mut len = self
            .store
            .session(&log)
            .await
            .map_err(self.store_error())?
            .map_or(0, |info| info.count);
        let mut tries = 0;
        loop {
            match self.store.append(&log, &events, len).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { actual, .. }) if tries < APPEND_TRIES => {
                    tries += 1;
                    len = actual;
                }
                Err(err) => return Err(HostError::store(self.store.as_ref(), err)),
            }
        }
    }
}
