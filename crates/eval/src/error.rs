//! [`EvalError`]: what defining, running, scoring and comparing an experiment can fail with.

use openharness_core::{SessionId, StoreError};
use openharness_host::HostError;

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
    /// The host (a workflow, a fork, the store behind it) failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The store failed.
    #[error("the store failed")]
    Store(#[from] StoreError),
}
