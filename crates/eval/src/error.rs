//! [`EvalError`]: what defining, running, scoring and comparing an experiment can fail with.

use openharness_core::{SessionId, StoreError};
use openharness_host::HostError;

/// What [`EvalError::RecordedProvider`] names: the variant and case, the provider the case's
/// recording asked, what the workflow asks instead, and what to configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnbuiltProvider {
    /// The variant.
    pub variant: String,
    /// The case.
    pub case: String,
    /// The provider (and model) the recording asked, as `provider[:model]`.
    pub recorded: String,
    /// The workflow the variant runs.
    pub workflow: String,
    /// What that workflow asks instead (`` `scripted` ``, or `no provider it names`).
    pub asks: String,
    /// Why the recorded provider cannot be rebuilt, and what to configure so it can.
    pub why: String,
}

/// A failure of an eval operation. A run that fails is not one of these: it is recorded as a
/// failed run and the experiment goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A line of a dataset is not a case.
    #[error("{source_name}, line {line}: {message}")]
    Dataset {
        /// The file (or `<dataset>`).
        source_name: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The experiment's definition is not usable (no case, no variant, two with one name, a
    /// baseline that is not a variant, ...).
    #[error("experiment `{experiment}`: {message}")]
    Definition {
        /// The experiment.
        experiment: String,
        /// What is wrong.
        message: String,
    },
    /// A case's fork point matches no position of its recorded session.
    #[error("case `{case}`: no position of session {session} matches {at}")]
    NoForkPoint {
        /// The case.
        case: String,
        /// The recorded session.
        session: SessionId,
        /// The fork point, described.
        at: String,
    },
    /// A variant names no provider, its case's recording was made with another provider than
    /// the workflow's own, and that provider cannot be rebuilt: rather than run the variant
    /// on a model the recording never asked (a scripted one, say) without a word, the
    /// experiment does not start.
    #[error(
        "variant `{}` names no provider, so case `{}` runs on the one its recording asked, `{}`; the workflow `{}` asks {}, and `{}` cannot be rebuilt here: {}",
        .0.variant, .0.case, .0.recorded, .0.workflow, .0.asks, .0.recorded, .0.why
    )]
    RecordedProvider(Box<UnbuiltProvider>),
    /// No experiment of this name is in the store.
    #[error("no experiment named `{0}` in the store (`eval list` shows the ones there are)")]
    UnknownExperiment(String),
    /// The experiment's log holds an event that does not decode.
    #[error("experiment `{experiment}`: event {seq} (`{name}`) does not decode: {source}")]
    Log {
        /// The experiment.
        experiment: String,
        /// Its seq.
        seq: u64,
        /// Its name.
        name: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An event of the experiment's own log did not encode as JSON.
    #[error("experiment `{experiment}`: a `{name}` event does not encode: {source}")]
    Encode {
        /// The experiment.
        experiment: String,
        /// The event's name.
        name: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Another process wrote to the experiment's log while this one ran it.
    #[error(
        "experiment `{0}`: its log grew under this run (another process is running or re-scoring it); try again once that one ends"
    )]
    Busy(String),
    /// A variant or scorer names something the comparison does not have.
    #[error("{0}")]
    Compare(String),
    /// A dataset's name is not one (empty, too long, with control characters or spaces
    /// around it).
    #[error("`{name}` is not a dataset name: {why}")]
    DatasetName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// No dataset of this name is in the store.
    #[error("no dataset named `{0}` in the store (`eval dataset list` shows the ones there are)")]
    UnknownDataset(String),
    /// A version the dataset has not reached.
    #[error("dataset `{dataset}` has no version {version}: its versions are 0 to {latest}")]
    DatasetVersion {
        /// The dataset.
        dataset: String,
        /// The version asked for.
        version: u64,
        /// Its latest version (its log's length).
        latest: u64,
    },
    /// A case id the dataset does not hold (now).
    #[error(
        "dataset `{dataset}` has no case `{case}` (`eval dataset show {dataset}` lists its cases)"
    )]
    UnknownDatasetCase {
        /// The dataset.
        dataset: String,
        /// The case id given.
        case: String,
    },
    /// The dataset's log holds an event that does not decode.
    #[error("dataset `{dataset}`: event {seq} (`{name}`) does not decode: {source}")]
    DatasetLog {
        /// The dataset.
        dataset: String,
        /// Its seq.
        seq: u64,
        /// Its name.
        name: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An event of a dataset's log did not encode as JSON.
    #[error("dataset `{dataset}`: a `{name}` event does not encode: {source}")]
    DatasetEncode {
        /// The dataset.
        dataset: String,
        /// The event's name.
        name: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Another writer changed the dataset while this change was made.
    #[error(
        "dataset `{0}`: its log grew while this change was made (another process changed it); try again"
    )]
    DatasetBusy(String),
    /// The host (a workflow, a fork, the store behind it) failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The store failed.
    #[error("the store failed")]
    Store(#[from] StoreError),
}
