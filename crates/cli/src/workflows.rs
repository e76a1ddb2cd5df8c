//! The workflows this CLI knows how to fold, looked up by the name a session was recorded with.

use openharness::store::RedbStore;
use openharness::{SessionInfo, Workflow};
use openharness_example_planner_executor::{self as planner_executor, PlanState};

use crate::commands::CliError;

/// A workflow the CLI can build, with its state type.
pub(crate) enum KnownWorkflow {
    PlannerExecutor(Workflow<PlanState>),
}

/// The workflow that recorded `session`, reading from `store`.
pub(crate) fn for_session(
    session: &SessionInfo,
    store: RedbStore,
) -> Result<KnownWorkflow, CliError> {
    match session.workflow.as_deref() {
        Some(planner_executor::WORKFLOW_NAME) => Ok(KnownWorkflow::PlannerExecutor(
            planner_executor::workflow(store, planner_executor::scripted_provider())?,
        )),
        Some(other) => Err(CliError::Usage(format!(
            "session {} was recorded by workflow `{other}`, which this CLI cannot fold; \
             `openharness events {}` still shows its events",
            session.id, session.id
        ))),
        None => Err(CliError::Usage(format!(
            "session {} has no `workflow:started` event, so its workflow is unknown; \
             `openharness events {}` still shows its events",
            session.id, session.id
        ))),
    }
}
