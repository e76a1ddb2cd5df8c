//! The `openharness` command: run the offline demo, list recorded sessions with their status,
//! continue a session (`send`), answer it (`respond`), finish a cut-off turn (`resume`), print a
//! session's events and inspect the state at any position of its tape.
//!
//! Every command works on one store: `--store PATH`, else `$OPENHARNESS_STORE`, else
//! `.openharness/store.redb` in the current directory.

mod commands;
mod debugger;
mod fork;
mod progress;
mod run;
mod transfer;
mod turns;
mod workflows;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Event-sourced AI-agent workflows: record, replay, step back, fork.
#[derive(Debug, Parser)]
#[command(name = "openharness", version, about, long_about = None)]
struct Cli {
    /// The store file (a redb database); `export` and `import` also take a `postgres://` URL.
    #[arg(
        long,
        global = true,
        env = "OPENHARNESS_STORE",
        default_value = ".openharness/store.redb"
    )]
    store: PathBuf,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an example offline (scripted model) and record it: the planner-executor (which
    /// asks a person before publishing, and answers "yes" itself) or the chat.
    Demo {
        /// The example: `planner-executor` or `chat`.
        #[arg(default_value = openharness_example_planner_executor::WORKFLOW_NAME)]
        example: String,
        /// The goal to plan, or the chat's one message (the script answers the same way
        /// whatever the goal).
        #[arg(long, visible_alias = "input")]
        goal: Option<String>,
        /// Leave the approval to publish unanswered: the session waits, and the demo prints
        /// the `openharness respond` command that answers it.
        #[arg(long)]
        no_answer: bool,
    },
    /// Run an example against a real model (Anthropic, OpenAI-compatible or the claude CLI) and
    /// record it.
    Run(run::RunArgs),
    /// Continue a recorded session with new input: a turn of the workflow that recorded it.
    Send(turns::SendArgs),
    /// Answer a session's open input request and continue it.
    Respond(turns::RespondArgs),
    /// Finish the turn a killed process left unfinished (nothing to do if its last turn ended).
    Resume(turns::ResumeArgs),
    /// List recorded sessions and their status (running, idle, waiting, failed).
    Sessions {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's events.
    Events {
        /// The session id.
        session: String,
        /// Print JSON instead of one line per event.
        #[arg(long)]
        json: bool,
    },
    /// Step through a session's tape: an interactive debugger, or with `--at N` the state at
    /// one position.
    Tape {
        /// The session id.
        session: String,
        /// Print the state at this position, 0 (initial state) to the session's length (larger
        /// values clamp), instead of opening the interactive debugger.
        #[arg(long)]
        at: Option<u64>,
        /// Print `{"position","len","current","state"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a new session from a point of a recorded one and run it on (offline).
    Fork(fork::ForkArgs),
    #[command(flatten)]
    Transfer(transfer::TransferCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("OPENHARNESS_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Transfer(command) => runtime
            .block_on(transfer::run(command, &cli.store))
            .map_err(commands::CliError::from),
        command => runtime.block_on(commands::run(command, &cli.store)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
