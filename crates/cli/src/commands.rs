//! The subcommands' bodies. Each prints to stdout and returns a [`CliError`] on failure.

use std::io::Write;
use std::path::Path;

use openharness::store::{RedbOptions, RedbStore};
use openharness::tape::LoadTape;
use openharness::{RunOptions, SessionId, Store, Workflow, WorkflowState};
use openharness_example_chat::ChatState;
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use crate::Command;
use crate::progress::Progress;
use crate::turns::print_outcome;
use crate::workflows::{self, KnownWorkflow};

/// A failure the CLI reports as `error: ...` with exit code 1.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Harness(#[from] openharness::Error),
    #[error(transparent)]
    Tape(#[from] openharness::tape::TapeError),
    #[error("could not open the store at {path}: {source}")]
    OpenStore {
        path: String,
        source: openharness::StoreError,
    },
    #[error("store {store}: {source}")]
    Store {
        store: String,
        source: openharness::StoreError,
    },
    #[error("{0}")]
    Usage(String),
    #[error("could not write the output: {0}")]
    Output(#[from] std::io::Error),
    #[error("could not encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Transfer(#[from] crate::transfer::TransferCliError),
}

pub(crate) async fn run(command: Command, store_path: &Path) -> Result<(), CliError> {
    // The CLI's runtime is multi-threaded and never a LocalSet, so a lone writer (a run
    // recording its session) may commit on its own thread.
    let options = RedbOptions::default().commit_on_caller(true);
    let store =
        RedbStore::open_with(store_path, options).map_err(|source| CliError::OpenStore {
            path: store_path.display().to_string(),
            source,
        })?;
    match command {
        Command::Demo {
            example,
            goal,
            no_answer,
        } => demo(store, store_path, &example, goal, no_answer).await,
        Command::Send(args) => crate::turns::send(args, store).await,
        Command::Respond(args) => crate::turns::respond(args, store).await,
        Command::Resume(args) => crate::turns::resume(args, store).await,
        Command::Run(args) => crate::run::run(args, store, store_path).await,
        Command::Sessions { json } => sessions(&store, json).await,
        Command::Events { session, json } => events(&store, &parse_session(&session)?, json).await,
        Command::Transfer(command) => Ok(crate::transfer::run(command, store_path).await?),
        Command::Tape { session, at, json } => {
            tape(store, &parse_session(&session)?, at, json).await
        }
        Command::Fork(args) => crate::fork::run(args, store).await,
    }
}

fn parse_session(id: &str) -> Result<SessionId, CliError> {
    id.parse().map_err(|err| CliError::Usage(format!("{err}")))
}

fn store_error(store: &dyn Store) -> impl FnOnce(openharness::StoreError) -> CliError + '_ {
    move |source| CliError::Store {
        store: store.describe(),
        source,
    }
}

async fn demo(
    store: RedbStore,
    store_path: &Path,
    example: &str,
    goal: Option<String>,
    no_answer: bool,
) -> Result<(), CliError> {
    match workflows::by_name(example, store.clone())? {
        Some(KnownWorkflow::PlannerExecutor(_)) => {
            demo_planner(store, store_path, goal, no_answer).await
        }
        Some(KnownWorkflow::Chat(workflow)) => demo_chat(&workflow, store_path, goal).await,
        None => Err(CliError::Usage(format!(
            "unknown example `{example}`; the examples are: {}",
            workflows::NAMES.join(", ")
        ))),
    }
}

/// The planner-executor offline: the run ends waiting for approval to publish, which the demo
/// gives itself ("yes") unless `no_answer`.
async fn demo_planner(
    store: RedbStore,
    store_path: &Path,
    goal: Option<String>,
    no_answer: bool,
) -> Result<(), CliError> {
    use openharness_example_planner_executor as example;
    // The demo's own script, exactly as the snapshots pin it.
    let workflow = example::workflow(store, example::scripted_provider())?;
    let goal = goal.unwrap_or_else(|| example::DEMO_GOAL.to_owned());
    println!(
        "Running `{}` offline (scripted model) — goal: {goal}\n",
        workflow.name()
    );
    let mut outcome = workflow
        .run(RunOptions::new().input(goal).renderer(Progress::default()))
        .await?;
    if let (false, Some(&request)) = (no_answer, outcome.open_requests.first()) {
        print_outcome(&outcome);
        println!(
            "\nAnswering request {request} with \"yes\" for you (`openharness demo --no-answer` leaves it to you):\n"
        );
        outcome = workflow
            .respond(
                &outcome.session,
                request,
                "yes",
                RunOptions::new().renderer(Progress::default()),
            )
            .await?;
    }
    print_outcome(&outcome);
    println!(
        "\nSession {} is recorded in {}.",
        outcome.session,
        store_path.display()
    );
    println!("Open it:");
    println!("  openharness events {}", outcome.session);
    println!("  openharness tape {} --at 0", outcome.session);
    println!(
        "  openharness tape {} --at {}",
        outcome.session, outcome.len
    );
    Ok(())
}

/// The chat offline: one session, one turn per message (the demo's three, or `message`).
async fn demo_chat(
    workflow: &Workflow<ChatState>,
    store_path: &Path,
    message: Option<String>,
) -> Result<(), CliError> {
    println!(
        "Running `{}` offline (scripted model): one session, a turn per message\n",
        workflow.name()
    );
    let messages = match message {
        Some(message) => vec![message],
        None => openharness_example_chat::DEMO_MESSAGES
            .iter()
            .map(|m| (*m).to_owned())
            .collect(),
    };
    let mut last: Option<openharness::RunOutcome<ChatState>> = None;
    for message in messages {
        println!("  you: {message}");
        let options = RunOptions::new().renderer(Progress::default());
        let outcome = match &last {
            None => workflow.run(options.input(message)).await?,
            Some(previous) => workflow.send(&previous.session, message, options).await?,
        };
        last = Some(outcome);
    }
    let Some(outcome) = last else {
        return Ok(());
    };
    print_outcome(&outcome);
    println!(
        "\nSession {} is recorded in {}.",
        outcome.session,
        store_path.display()
    );
    println!("Continue it:");
    println!("  openharness send {} \"Thanks!\"", outcome.session);
    println!("  openharness tape {}", outcome.session);
    Ok(())
}

async fn sessions(store: &RedbStore, json: bool) -> Result<(), CliError> {
    let sessions = store.sessions().await.map_err(store_error(store))?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &sessions)?;
        writeln!(out)?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(
            out,
            "No sessions yet in {}. Record one with `openharness demo`.",
            store.describe()
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<38} {:<18} {:<8} {:>7}  {:<25} PARENT",
        "SESSION", "WORKFLOW", "STATUS", "EVENTS", "LAST EVENT"
    )?;
    for info in sessions {
        writeln!(
            out,
            "{:<38} {:<18} {:<8} {:>7}  {:<25} {}",
            info.id.as_str(),
            info.workflow.as_deref().unwrap_or("-"),
            info.status.as_str(),
            info.count,
            info.last_event.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            info.parent.as_ref().map_or("-", SessionId::as_str),
        )?;
    }
    Ok(())
}

/// One event with its seq, as `events --json` prints it.
#[derive(Serialize)]
struct Numbered<'a> {
    seq: u64,
    #[serde(flatten)]
    event: &'a openharness::Envelope,
}

/// Prints a session's events, streamed from the store one page at a time, so a long session
/// needs no more memory than a short one.
async fn events(store: &RedbStore, session: &SessionId, json: bool) -> Result<(), CliError> {
    let mut events = store.stream_events(session, 0..u64::MAX);
    let Some(mut next) = events.next().await else {
        return Err(CliError::Usage(format!(
            "session {session} not found in {}; `openharness sessions` lists the recorded ones",
            store.describe()
        )));
    };
    let mut out = std::io::BufWriter::new(std::io::stdout());
    if json {
        // The same pretty JSON array as serializing a Vec, written element by element.
        let mut serializer = serde_json::Serializer::pretty(&mut out);
        let mut array = serializer.serialize_seq(None)?;
        loop {
            let recorded = next.map_err(store_error(store))?;
            array.serialize_element(&Numbered {
                seq: recorded.seq,
                event: &recorded.event,
            })?;
            match events.next().await {
                Some(item) => next = item,
                None => break,
            }
        }
        array.end()?;
        writeln!(out)?;
    } else {
        loop {
            let recorded = next.map_err(store_error(store))?;
            let (seq, event) = (recorded.seq, &recorded.event);
            writeln!(out, "{seq:>5}  {:<20} {}", event.name, event.payload)?;
            match events.next().await {
                Some(item) => next = item,
                None => break,
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// A forked session records no `workflow:started`: its workflow is its first ancestor's.
pub(crate) async fn with_ancestors_workflow(
    store: &RedbStore,
    mut info: openharness::SessionInfo,
) -> Result<openharness::SessionInfo, CliError> {
    let mut parent = info.parent.clone();
    // Bounded: a corrupt store could hold a cycle of forks.
    for _ in 0..64 {
        if info.workflow.is_some() {
            break;
        }
        let Some(id) = parent else { break };
        let Some(ancestor) = store.session(&id).await.map_err(store_error(store))? else {
            break;
        };
        info.workflow = ancestor.workflow;
        parent = ancestor.parent;
    }
    Ok(info)
}

async fn tape(
    store: RedbStore,
    session: &SessionId,
    at: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    let info = store
        .session(session)
        .await
        .map_err(store_error(&store))?
        .ok_or_else(|| {
            CliError::Usage(format!(
                "session {session} not found in {}; `openharness sessions` lists the recorded ones",
                store.describe()
            ))
        })?;
    let info = with_ancestors_workflow(&store, info).await?;
    match workflows::for_session(&info, store)? {
        KnownWorkflow::PlannerExecutor(workflow) => tape_of(&workflow, session, at, json).await,
        KnownWorkflow::Chat(workflow) => tape_of(&workflow, session, at, json).await,
    }
}

async fn tape_of<S: WorkflowState>(
    workflow: &Workflow<S>,
    session: &SessionId,
    at: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    let mut tape = workflow.load(session).await?;
    let Some(at) = at else {
        return crate::debugger::run(tape);
    };
    tape.step_to(at);
    let view = tape.view();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &view)?;
        writeln!(out)?;
    } else {
        let current = view.current.map_or_else(
            || "(none: initial state)".to_owned(),
            |e| e.name.to_string(),
        );
        writeln!(out, "position {} of {}", view.position, view.len)?;
        writeln!(out, "current  {current}")?;
        writeln!(out, "state")?;
        serde_json::to_writer_pretty(&mut out, view.state)?;
        writeln!(out)?;
    }
    Ok(())
}
