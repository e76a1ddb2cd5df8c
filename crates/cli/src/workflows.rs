//! The workflows this CLI knows, looked up by the name a session was recorded with: how to
//! build each one offline (scripted model) and how to summarise its state in one line.

use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::RedbStore;
use openharness::{Agent, SessionInfo, Workflow};
use openharness_example_chat::{self as chat, ChatState};
use openharness_example_planner_executor::{self as planner_executor, PlanState, Release};

use crate::commands::CliError;

/// The names of the workflows this CLI knows, as `run`, `demo` and the errors list them.
pub(crate) const NAMES: &[&str] = &[planner_executor::WORKFLOW_NAME, chat::WORKFLOW_NAME];

/// A workflow the CLI can build, with its state type.
pub(crate) enum KnownWorkflow {
    PlannerExecutor(Workflow<PlanState>),
    Chat(Workflow<ChatState>),
}

/// A one-line summary of a workflow's state, printed when a turn ends.
pub(crate) trait Summary {
    fn summary(&self) -> String;
}

impl Summary for PlanState {
    fn summary(&self) -> String {
        let release = match self.release {
            Some(Release::Published) => "the release is published",
            Some(Release::Declined) => "the release was not published",
            None if self.awaits_approval() => "the release waits for approval",
            None => "nothing published yet",
        };
        format!(
            "{} of {} tasks done; {release}.",
            self.completed,
            self.tasks.len()
        )
    }
}

impl Summary for ChatState {
    fn summary(&self) -> String {
        let answered = self.exchanges.iter().filter(|e| e.reply.is_some()).count();
        format!(
            "{} messages in the conversation, {answered} answered.",
            self.exchanges.len()
        )
    }
}

/// The planner-executor offline: the demo's script, then (for later turns, forks of the
/// conversation, resumed calls) answers made from each prompt.
fn planner_executor_offline() -> ScriptedProvider {
    planner_executor::scripted_provider()
        .fallback(planner_executor::Planner::NAME, |_| {
            Reply::output(serde_json::json!({ "tasks": ["Review the plan", "Ship it"] }))
        })
        .fallback(planner_executor::Executor::NAME, |request| {
            let task = request.prompt.lines().nth(1).unwrap_or("the task");
            Reply::output(serde_json::json!({ "summary": format!("Done: {task}") }))
        })
}

/// The workflow named `name`, built offline (scripted model) on `store`; `None` when the CLI
/// does not know it.
pub(crate) fn by_name(name: &str, store: RedbStore) -> Result<Option<KnownWorkflow>, CliError> {
    Ok(match name {
        planner_executor::WORKFLOW_NAME => Some(KnownWorkflow::PlannerExecutor(
            planner_executor::workflow(store, planner_executor_offline())?,
        )),
        chat::WORKFLOW_NAME => Some(KnownWorkflow::Chat(chat::workflow(
            store,
            chat::scripted_provider(),
        )?)),
        _ => None,
    })
}

/// The workflow that recorded `session`, reading from `store`.
pub(crate) fn for_session(
    session: &SessionInfo,
    store: RedbStore,
) -> Result<KnownWorkflow, CliError> {
    match session.workflow.as_deref() {
        Some(name) => by_name(name, store)?.ok_or_else(|| {
            CliError::Usage(format!(
                "session {} was recorded by workflow `{name}`, which this CLI does not know (it knows {}); \
                 `openharness events {}` still shows its events",
                session.id,
                NAMES.join(", "),
                session.id
            ))
        }),
        None => Err(CliError::Usage(format!(
            "session {} has no `workflow:started` event, so its workflow is unknown; \
             `openharness events {}` still shows its events",
            session.id, session.id
        ))),
    }
}
