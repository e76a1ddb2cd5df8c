//! What a built workflow is made of ([`Inner`], shared by every clone of a
//! [`Workflow`](crate::Workflow)) and what its state must be ([`WorkflowState`]): read by the
//! workflow, which starts runs, and by the runtime, which carries them out.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::agent::ErasedAgent;
use crate::handler::Handler;
use crate::locks::SessionLocks;
use crate::provider::Provider;
use crate::store::Store;

/// What a workflow's state must be: a [`Handler`] that can be cloned (for checkpoints), shared
/// across threads and serialized (for snapshots, the CLI and diffs).
pub trait WorkflowState: Handler + Serialize + DeserializeOwned {}
impl<S: Handler + Serialize + DeserializeOwned> WorkflowState for S {}

pub(crate) type Until<S> = Arc<dyn Fn(&S) -> bool + Send + Sync>;

/// Which code a workflow is: recorded in every `workflow:started`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeIdentity {
    /// The fingerprint (see `WorkflowStarted::code`).
    pub code: String,
    /// The version it was built with, if given.
    pub version: Option<String>,
    /// The source commit, if given.
    pub commit: Option<String>,
    /// The shape of the state's fields (`adapter::state_shape` of the initial state), if its
    /// initial state serializes.
    pub state_shape: Option<String>,
}

impl<S> Inner<S> {
    /// Whether this workflow folds sessions recorded by workflow `recorded`.
    pub(crate) fn reads(&self, recorded: &str) -> bool {
        self.name == recorded || self.reads.iter().any(|name| name == recorded)
    }
}

/// A workflow's parts, shared by its clones.
pub(crate) struct Inner<S> {
    pub(crate) name: String,
    /// Other workflows whose sessions this one folds and forks (its earlier versions).
    pub(crate) reads: Vec<String>,
    /// What `workflow:started` records of the code: fingerprint, version, commit.
    pub(crate) code: CodeIdentity,
    pub(crate) initial: S,
    pub(crate) agents: Vec<Arc<dyn ErasedAgent<S>>>,
    pub(crate) until: Option<Until<S>>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) provider: Option<Arc<dyn Provider>>,
    pub(crate) max_output_attempts: u32,
    /// Whether batches that change the state record its hash (`WorkflowBuilder::state_hashes`).
    pub(crate) state_hashes: bool,
    /// One turn at a time per session, shared by every clone of the workflow.
    pub(crate) locks: Arc<SessionLocks>,
}
