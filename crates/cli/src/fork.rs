//! `openharness fork <id> (--at N | --after NAME [--nth N])`: start a new session from a
//! point of a recorded one and run it on, offline.
//!
//! The child session's first event is `session:forked`; its state there is the parent's at
//! the fork point, and the fork re-delivers the parent's event at that point (so forking
//! after the second `task:started` runs the second task again). The run uses a scripted
//! model that answers every call (the demo's script is positional, so a fork gets
//! answers of its own, marked `(fork)`).

use openharness::RunOptions;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::RedbStore;
use openharness::tape::{At, ForkSession};
use openharness::{Agent, SessionId, Store, Workflow, WorkflowState};
use openharness_example_planner_executor::{Executor, Planner};
use serde::Serialize;

use crate::commands::{CliError, with_ancestors_workflow};
use crate::progress::Progress;
use crate::turns::print_outcome;
use crate::workflows::{self, KnownWorkflow, Summary};

/// Arguments of `openharness fork`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("point").required(true).args(["at", "after"]))]
pub(crate) struct ForkArgs {
    /// The session to fork.
    session: String,
    /// Fork at this position (0 to the session's length).
    #[arg(long)]
    at: Option<u64>,
    /// Fork right after an event with this name (the first, or the `--nth`).
    #[arg(long)]
    after: Option<String>,
    /// Which occurrence of `--after`, from 1.
    #[arg(long, default_value_t = 1, requires = "after")]
    nth: usize,
    /// Print `{"parent","position","session","len","reason"}` as JSON instead of progress.
    #[arg(long)]
    json: bool,
}

/// What `fork --json` prints.
#[derive(Serialize)]
struct Forked<'a> {
    parent: &'a SessionId,
    position: u64,
    session: &'a SessionId,
    len: u64,
    reason: &'static str,
}

/// A scripted model that answers every planner and executor call.
fn fork_provider() -> ScriptedProvider {
    ScriptedProvider::new()
        .fallback(Planner::NAME, |_| {
            Reply::output(
                serde_json::json!({ "tasks": ["(fork) Review the plan", "(fork) Ship it"] }),
            )
        })
        .fallback(Executor::NAME, |request| {
            let task = request.prompt.lines().nth(1).unwrap_or("the task");
            Reply::output(serde_json::json!({ "summary": format!("(fork) {task}") }))
        })
}

/// Runs `openharness fork`.
pub(crate) async fn run(args: ForkArgs, store: RedbStore) -> Result<(), CliError> {
    let parent: SessionId = args
        .session
        .parse()
        .map_err(|err| CliError::Usage(format!("{err}")))?;
    let info = store
        .session(&parent)
        .await
        .map_err(|source| CliError::Store {
            store: store.describe(),
            source,
        })?
        .ok_or_else(|| {
            CliError::Usage(format!(
                "session {parent} not found in {}; `openharness sessions` lists the recorded ones",
                store.describe()
            ))
        })?;
    let info = with_ancestors_workflow(&store, info).await?;
    match workflows::for_session(&info, store)? {
        KnownWorkflow::PlannerExecutor(workflow) => {
            let workflow = workflow.with_provider(fork_provider());
            fork_on(&workflow, &parent, point(&args)?, args.json).await
        }
        // The chat's offline model answers every message from its prompt already.
        KnownWorkflow::Chat(workflow) => {
            fork_on(&workflow, &parent, point(&args)?, args.json).await
        }
    }
}

/// The fork point the arguments name.
fn point<S>(args: &ForkArgs) -> Result<At<S>, CliError> {
    match (args.at, &args.after) {
        (Some(position), _) => Ok(At::position(position)),
        (None, Some(name)) => Ok(At::nth(name.clone(), args.nth)),
        (None, None) => Err(CliError::Usage("pass `--at N` or `--after NAME`".into())),
    }
}

async fn fork_on<S: WorkflowState + Summary>(
    workflow: &Workflow<S>,
    parent: &SessionId,
    at: At<S>,
    json: bool,
) -> Result<(), CliError> {
    let fork = workflow.fork(parent, at).await?;
    let options = if json {
        RunOptions::new()
    } else {
        println!(
            "Forking {parent} at position {} (offline, scripted model)\n",
            fork.position()
        );
        RunOptions::new().renderer(Progress::default())
    };
    let outcome = fork.run(options).await?;
    if json {
        let forked = Forked {
            parent,
            position: fork.position(),
            session: &outcome.session,
            len: outcome.len,
            reason: outcome.reason.as_str(),
        };
        println!("{}", serde_json::to_string_pretty(&forked)?);
    } else {
        print_outcome(&outcome);
        println!(
            "\nSession {} (forked from {parent}).\nOpen it:\n  openharness tape {}",
            outcome.session, outcome.session
        );
    }
    Ok(())
}
