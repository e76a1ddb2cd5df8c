//! [`Dataset`]: cases cut from production. Recorded sessions matching a query (the session
//! list's: search, workflow, status, agent, time) become cases ([`DatasetAdd`]), each forked
//! at a position resolved when it was added — production sessions keep growing, a dataset
//! forks where it forked the day it was made. A dataset is a log of its own (session
//! `dataset:<name>`, left out of session lists as experiments' logs are): its version is the
//! log's length, version `k` is the dataset after its first `k` events, so every version can
//! be read again ([`Dataset::load`]) and any two compared ([`Dataset::diff`]). An experiment
//! takes a dataset's cases at a version ([`Dataset::cases`], or `[[datasets]]` in an
//! experiment file), and its log says which dataset and version each case came from.
//!
//! ```
//! # async fn demo(host: openharness_host::Host) -> Result<(), openharness_eval::EvalError> {
//! use openharness_eval::{Dataset, Experiment, ForkAt, Variant};
//! let added = Dataset::add("refunds", ForkAt::event("task:started", 1))
//!     .search("refund")
//!     .limit(50)
//!     .answers(["yes"])
//!     .run(&host)
//!     .await?;
//! println!("{} cases added, dataset at version {}", added.added.len(), added.version);
//! let refunds = Dataset::load(host.store().as_ref(), "refunds", None).await?;
//! let ran = Experiment::new("refund-wording", host.clone())
//!     .cases(refunds.cases())
//!     .variant(Variant::new("baseline"))
//!     .run()
//!     .await?;
//! # let _ = ran; Ok(()) }
//! ```

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use openharness_core::{Envelope, Event, SessionId, Store, StoreError};
use serde::Serialize;

use crate::case::{Case, ForkAt};
use crate::error::EvalError;
use crate::events::{
    DATASET_PREFIX, DatasetCase, DatasetCasesAdded, DatasetCasesRemoved, DatasetQuery, DatasetRef,
};

mod add;

pub use add::{Added, DatasetAdd, SkipReason, Skipped};

/// The longest dataset name, in characters.
const MAX_NAME: usize = 128;

/// A dataset at one version: its cases in the order they were added, and how it got there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dataset {
    /// Its name.
    pub name: String,
    /// The version read: how many of its log's events it folds.
    pub version: u64,
    /// Its latest version (its log's length).
    pub latest: u64,
    /// Its cases at that version, in the order they were added.
    pub cases: Vec<DatasetCase>,
    /// When its log began.
    pub created: DateTime<Utc>,
    /// When the last change of this version was recorded (none at version 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<DateTime<Utc>>,
    /// Its changes up to this version, one per version.
    pub changes: Vec<DatasetChange>,
}

/// One change of a dataset: the event that made a version.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetChange {
    /// The version it made.
    pub version: u64,
    /// When it was recorded.
    pub time: DateTime<Utc>,
    /// The ids of the cases it added.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// The ids of the cases it removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// For an add: the sessions asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<DatasetQuery>,
    /// For an add: the fork point asked for, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// For a removal: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What changed between two versions of a dataset ([`Dataset::diff`]): a case is compared
/// whole, so one removed and added again with another position is in both lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetDiff {
    /// The dataset.
    pub name: String,
    /// The version compared from.
    pub from: u64,
    /// The version compared to.
    pub to: u64,
    /// Cases at `to` that were not at `from`.
    pub added: Vec<DatasetCase>,
    /// Cases at `from` that are not at `to`.
    pub removed: Vec<DatasetCase>,
}

/// A dataset as [`Dataset::list`] finds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetSummary {
    /// Its name.
    pub name: String,
    /// How many cases its latest version holds.
    pub cases: usize,
    /// Its latest version.
    pub version: u64,
    /// When its log began.
    pub created: DateTime<Utc>,
    /// When it last changed.
    pub changed: DateTime<Utc>,
}

/// The log's session id of dataset `name`: `dataset:<name>`. A name is 1 to 128 characters,
/// without control characters or spaces around it.
///
/// ```
/// let session = openharness_eval::dataset_session("refunds")?;
/// assert_eq!(session.as_str(), "dataset:refunds");
/// assert!(openharness_eval::dataset_session(" refunds").is_err());
/// # Ok::<(), openharness_eval::EvalError>(())
/// ```
pub fn dataset_session(name: &str) -> Result<SessionId, EvalError> {
    let bad = |why: &str| EvalError::DatasetName {
        name: name.to_owned(),
        why: why.to_owned(),
    };
    if name.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    if name.trim() != name {
        return Err(bad("it starts or ends with a space"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("it holds a control character"));
    }
    if name.chars().count() > MAX_NAME {
        return Err(bad("it is longer than 128 characters"));
    }
    format!("{DATASET_PREFIX}{name}")
        .parse()
        .map_err(|_| bad("it does not make a session id"))
}

impl Dataset {
    /// Adds the recorded sessions a query matches to dataset `name`, each forked at `at`
    /// (resolved to a position per session when added): [`DatasetAdd`].
    pub fn add(name: impl Into<String>, at: ForkAt) -> DatasetAdd {
        DatasetAdd::new(name, at)
    }

    /// Dataset `name` at `version` (the latest when `None`). A dataset with no log is
    /// [`EvalError::UnknownDataset`]; a version beyond its log, [`EvalError::DatasetVersion`].
    pub async fn load(
        store: &dyn Store,
        name: &str,
        version: Option<u64>,
    ) -> Result<Self, EvalError> {
        let events = store.all_events(&dataset_session(name)?).await?;
        Self::fold(name, &events, version)
    }

    /// Folds a dataset's log up to `version` (the latest when `None`).
    pub fn fold(name: &str, events: &[Envelope], version: Option<u64>) -> Result<Self, EvalError> {
        let Some(first) = events.first() else {
            return Err(EvalError::UnknownDataset(name.to_owned()));
        };
        let latest = events.len() as u64;
        let version = version.unwrap_or(latest);
        if version > latest {
            return Err(EvalError::DatasetVersion {
                dataset: name.to_owned(),
                version,
                latest,
            });
        }
        let mut dataset = Self {
            name: name.to_owned(),
            version,
            latest,
            cases: Vec::new(),
            created: first.timestamp,
            changed: None,
            changes: Vec::new(),
        };
        for (seq, event) in (0..version).zip(events) {
            let decode_error = |source| EvalError::DatasetLog {
                dataset: name.to_owned(),
                seq,
                name: event.name.to_string(),
                source,
            };
            let mut change = DatasetChange {
                version: seq + 1,
                time: event.timestamp,
                added: Vec::new(),
                removed: Vec::new(),
                query: None,
                at: None,
                reason: None,
            };
            if event.name == DatasetCasesAdded::NAME {
                let added: DatasetCasesAdded = event.decode().map_err(decode_error)?;
                for case in added.cases {
                    change.added.push(case.id.clone());
                    dataset.cases.retain(|c| c.id != case.id);
                    dataset.cases.push(case);
                }
                change.query = Some(added.query);
                change.at = Some(added.at);
            } else if event.name == DatasetCasesRemoved::NAME {
                let removed: DatasetCasesRemoved = event.decode().map_err(decode_error)?;
                dataset.cases.retain(|c| !removed.cases.contains(&c.id));
                change.removed = removed.cases;
                change.reason = removed.reason;
            } else {
                tracing::warn!(dataset = name, seq, event = %event.name, "an event a dataset's log does not know is skipped");
            }
            dataset.changed = Some(event.timestamp);
            dataset.changes.push(change);
        }
        Ok(dataset)
    }

    /// The case with id `id`, if this version holds it.
    pub fn case(&self, id: &str) -> Option<&DatasetCase> {
        self.cases.iter().find(|case| case.id == id)
    }

    /// The cases as an experiment's: each forks its session at the position recorded for
    /// it, with its answers and inputs, and says which dataset and version it came from.
    ///
    /// ```
    /// # fn demo(dataset: &openharness_eval::Dataset) {
    /// for case in dataset.cases() {
    ///     assert_eq!(case.dataset.as_ref().map(|d| d.version), Some(dataset.version));
    /// }
    /// # }
    /// ```
    pub fn cases(&self) -> Vec<Case> {
        let source = DatasetRef {
            name: self.name.clone(),
            version: self.version,
        };
        self.cases
            .iter()
            .map(|case| {
                let mut built = Case::recording(
                    case.id.clone(),
                    case.session.clone(),
                    ForkAt::position(case.position),
                )
                .answers(case.answers.clone())
                .expected(case.expected.clone())
                .metadata(case.metadata.clone());
                built.inputs.clone_from(&case.inputs);
                built.dataset = Some(source.clone());
                built
            })
            .collect()
    }

    /// What changed in dataset `name` from version `from` to version `to` (the latest when
    /// `None`); either may be the older.
    ///
    /// ```
    /// # async fn demo(store: &dyn openharness_core::Store) -> Result<(), openharness_eval::EvalError> {
    /// let diff = openharness_eval::Dataset::diff(store, "refunds", 1, None).await?;
    /// println!("+{} -{} since version 1", diff.added.len(), diff.removed.len());
    /// # Ok(()) }
    /// ```
    pub async fn diff(
        store: &dyn Store,
        name: &str,
        from: u64,
        to: Option<u64>,
    ) -> Result<DatasetDiff, EvalError> {
        let events = store.all_events(&dataset_session(name)?).await?;
        let old = Self::fold(name, &events, Some(from))?;
        let new = Self::fold(name, &events, to)?;
        let missing_from = |cases: &[DatasetCase], other: &[DatasetCase]| {
            cases
                .iter()
                .filter(|case| !other.contains(case))
                .cloned()
                .collect()
        };
        Ok(DatasetDiff {
            name: name.to_owned(),
            from,
            to: new.version,
            added: missing_from(&new.cases, &old.cases),
            removed: missing_from(&old.cases, &new.cases),
        })
    }

    /// The datasets in `store`, by name.
    pub async fn list(store: &dyn Store) -> Result<Vec<DatasetSummary>, EvalError> {
        let mut found = Vec::new();
        for info in store.sessions().await? {
            let Some(name) = info.id.as_str().strip_prefix(DATASET_PREFIX) else {
                continue;
            };
            let dataset = Self::load(store, name, None).await?;
            found.push(DatasetSummary {
                name: dataset.name,
                cases: dataset.cases.len(),
                version: dataset.version,
                created: dataset.created,
                changed: dataset.changed.unwrap_or(dataset.created),
            });
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// Removes the cases `ids` from dataset `name` (each must be in it now), with a reason;
    /// returns the dataset at its new version.
    ///
    /// ```
    /// # async fn demo(store: &dyn openharness_core::Store) -> Result<(), openharness_eval::EvalError> {
    /// use openharness_eval::Dataset;
    /// let after = Dataset::remove(store, "refunds", &["0193…"], Some("a test account".into())).await?;
    /// println!("dataset `refunds` is at version {}", after.version);
    /// # Ok(()) }
    /// ```
    pub async fn remove(
        store: &dyn Store,
        name: &str,
        ids: &[impl AsRef<str>],
        reason: Option<String>,
    ) -> Result<Self, EvalError> {
        let session = dataset_session(name)?;
        let events = store.all_events(&session).await?;
        let now = Self::fold(name, &events, None)?;
        let mut cases = Vec::new();
        let mut seen = BTreeSet::new();
        for id in ids {
            let id = id.as_ref();
            if now.case(id).is_none() {
                return Err(EvalError::UnknownDatasetCase {
                    dataset: name.to_owned(),
                    case: id.to_owned(),
                });
            }
            if seen.insert(id) {
                cases.push(id.to_owned());
            }
        }
        if cases.is_empty() {
            return Ok(now);
        }
        let removed = DatasetCasesRemoved { cases, reason };
        let mut events = events;
        events.push(append(store, name, &session, &removed, now.latest).await?);
        Self::fold(name, &events, None)
    }
}

/// Appends `event` to the dataset's log, which must hold `len` events; returns it as
/// recorded.
async fn append<E: Event>(
    store: &dyn Store,
    name: &str,
    session: &SessionId,
    event: &E,
    len: u64,
) -> Result<Envelope, EvalError> {
    let envelope = Envelope::typed(event, None).map_err(|source| EvalError::DatasetEncode {
        dataset: name.to_owned(),
        name: E::NAME,
        source,
    })?;
    match store
        .append(session, std::slice::from_ref(&envelope), len)
        .await
    {
        Ok(_) => Ok(envelope),
        Err(StoreError::Conflict { .. }) => Err(EvalError::DatasetBusy(name.to_owned())),
        Err(err) => Err(err.into()),
    }
}
