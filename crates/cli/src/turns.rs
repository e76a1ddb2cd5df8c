//! `openharness send`, `respond` and `resume`: turns on a recorded session, run by the
//! workflow that recorded it, offline (scripted model) unless `--provider` names a real one.
//!
//! Each shows the turn's progress live and ends by saying how the turn ended, the session's
//! new length and, when it waits for a person, the exact `openharness respond` command.

use openharness::store::RedbStore;
use openharness::{EventId, RunOptions, RunOutcome, SessionId, StopReason, Store, Workflow};
use openharness::{SessionInfo, WorkflowState};

use crate::commands::{CliError, with_ancestors_workflow};
use crate::progress::Progress;
use crate::run::ProviderArgs;
use crate::workflows::{self, KnownWorkflow, Summary};

/// Arguments of `openharness send`.
#[derive(Debug, clap::Args)]
pub(crate) struct SendArgs {
    /// The session to continue.
    session: String,
    /// The new input (the next message, or a new goal).
    text: String,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Arguments of `openharness respond`.
#[derive(Debug, clap::Args)]
pub(crate) struct RespondArgs {
    /// The waiting session.
    session: String,
    /// The id of the open `input:requested` (as `send`/`demo --no-answer` print it).
    request: String,
    /// The answer.
    text: String,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Arguments of `openharness resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The session whose cut-off turn to finish.
    session: String,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Prints how a turn ended: the state's summary, the reason, the session's length and, when
/// it waits, the command that answers each open request.
pub(crate) fn print_outcome<S: Summary>(outcome: &RunOutcome<S>) {
    println!("\n{}", outcome.state.summary());
    let new = outcome.len.saturating_sub(outcome.first_seq);
    let errors = match outcome.errors {
        0 => String::new(),
        n => format!(
            ", with {n} error(s) (see `openharness events {}`)",
            outcome.session
        ),
    };
    println!(
        "The turn ended ({}){errors}; the session has {} events ({new} new).",
        outcome.reason.as_str(),
        outcome.len
    );
    print_open_requests(&outcome.session, &outcome.open_requests);
}

fn print_open_requests(session: &SessionId, open: &[EventId]) {
    if open.is_empty() {
        return;
    }
    println!("The session is waiting for an answer. Answer with:");
    for request in open {
        println!("  openharness respond {session} {request} \"<your answer>\"");
    }
}

/// The recorded session `id` and the workflow that recorded it.
async fn known(store: RedbStore, id: &str) -> Result<(SessionId, KnownWorkflow), CliError> {
    let session: SessionId = id
        .parse()
        .map_err(|err| CliError::Usage(format!("{err}")))?;
    let info: SessionInfo = store
        .session(&session)
        .await
        .map_err(|source| CliError::Store {
            store: store.describe(),
            source,
        })?
        .ok_or_else(|| {
            CliError::Usage(format!(
                "session {session} not found in {}; `openharness sessions` lists the recorded ones",
                store.describe()
            ))
        })?;
    let info = with_ancestors_workflow(&store, info).await?;
    Ok((session, workflows::for_session(&info, store)?))
}

/// Runs `openharness send`.
pub(crate) async fn send(args: SendArgs, store: RedbStore) -> Result<(), CliError> {
    let (session, known) = known(store, &args.session).await?;
    match known {
        KnownWorkflow::PlannerExecutor(w) => send_on(w, &session, &args).await,
        KnownWorkflow::Chat(w) => send_on(w, &session, &args).await,
    }
}

async fn send_on<S: WorkflowState + Summary>(
    workflow: Workflow<S>,
    session: &SessionId,
    args: &SendArgs,
) -> Result<(), CliError> {
    let (workflow, provider) = args.provider.apply(workflow)?;
    if workflow.unfinished(session).await?.needs_resume() {
        // A turn is under way or was cut off: the runtime refuses it (`SessionBusy`) before
        // anything is recorded; no header announces a turn that does not run.
        workflow
            .send(session, args.text.clone(), RunOptions::new())
            .await?;
    }
    println!(
        "Continuing session {session} (`{}`, {provider}) — input: {}\n",
        workflow.name(),
        args.text
    );
    let outcome = workflow.send(session, args.text.clone(), options()).await?;
    print_outcome(&outcome);
    Ok(())
}

/// Runs `openharness respond`.
pub(crate) async fn respond(args: RespondArgs, store: RedbStore) -> Result<(), CliError> {
    let request: EventId = args.request.parse().map_err(|_| {
        CliError::Usage(format!(
            "`{}` is not a request id (the id of an `input:requested` event, a UUID)",
            args.request
        ))
    })?;
    let (session, known) = known(store, &args.session).await?;
    match known {
        KnownWorkflow::PlannerExecutor(w) => respond_on(w, &session, request, &args).await,
        KnownWorkflow::Chat(w) => respond_on(w, &session, request, &args).await,
    }
}

async fn respond_on<S: WorkflowState + Summary>(
    workflow: Workflow<S>,
    session: &SessionId,
    request: EventId,
    args: &RespondArgs,
) -> Result<(), CliError> {
    let (workflow, provider) = args.provider.apply(workflow)?;
    if !workflow
        .unfinished(session)
        .await?
        .open_requests
        .contains(&request)
    {
        // Not open: the runtime refuses it (`RequestNotOpen`, naming the open ones) and
        // records nothing; no header announces an answer that is not given.
        workflow
            .respond(session, request, args.text.clone(), RunOptions::new())
            .await?;
    }
    println!(
        "Answering request {request} of session {session} with {:?} (`{}`, {provider})\n",
        args.text,
        workflow.name()
    );
    let outcome = workflow
        .respond(session, request, args.text.clone(), options())
        .await?;
    print_outcome(&outcome);
    Ok(())
}

/// Runs `openharness resume`.
pub(crate) async fn resume(args: ResumeArgs, store: RedbStore) -> Result<(), CliError> {
    let (session, known) = known(store, &args.session).await?;
    match known {
        KnownWorkflow::PlannerExecutor(w) => resume_on(w, &session, &args).await,
        KnownWorkflow::Chat(w) => resume_on(w, &session, &args).await,
    }
}

async fn resume_on<S: WorkflowState + Summary>(
    workflow: Workflow<S>,
    session: &SessionId,
    args: &ResumeArgs,
) -> Result<(), CliError> {
    let report = workflow.unfinished(session).await?;
    if !report.needs_resume() {
        nothing_unfinished(session, report.status.as_str(), report.len);
        print_open_requests(session, &report.open_requests);
        return Ok(());
    }
    let (workflow, provider) = args.provider.apply(workflow)?;
    println!(
        "Session {session} (`{}`, {} events) has an unfinished turn; resuming it with {provider}:",
        workflow.name(),
        report.len
    );
    for call in &report.open_calls {
        println!(
            "  agent `{}` was cut off: it is closed as interrupted and runs again",
            call.agent
        );
    }
    for name in &report.unrecorded {
        println!("  `{name}` was never recorded: it is derived again and recorded");
    }
    if report.open_calls.is_empty() && report.unrecorded.is_empty() {
        println!("  nothing was cut off mid-way: the turn runs on to its end");
    }
    println!();
    let outcome = workflow.resume(session, options()).await?;
    if outcome.reason == StopReason::NothingUnfinished {
        // Another process finished it between the report and the resume.
        nothing_unfinished(session, "idle", outcome.len);
        return Ok(());
    }
    print_outcome(&outcome);
    Ok(())
}

fn nothing_unfinished(session: &SessionId, status: &str, len: u64) {
    println!(
        "Session {session}: nothing unfinished (its last turn ended; status {status}, {len} events)."
    );
}

/// A turn's options: refuse rather than wait when this process is already running one on the
/// session (never the case for one CLI command, but the rule stays visible), with live
/// progress.
fn options() -> RunOptions {
    RunOptions::new()
        .refuse_if_busy()
        .renderer(Progress::default())
}
