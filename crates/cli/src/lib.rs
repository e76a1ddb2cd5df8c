//! The `openharness` command as a library: [`Cli`] gives your own binary every command —
//! `start`, `send`, `respond`, `cancel`, `resume`, `sessions`, `annotate`, `feedback`,
//! `events`, `tape` (the interactive debugger, or `--at N`), `fork`, `diff`, `bisect`,
//! `replay`, `export`, `import`, `verify`, `check`, `compact`, `serve`, `eval`, `mcp`,
//! `otel export`, `platform rotate-keys` — for the workflows you register. The default
//! features bring every command; with `default-features = false` a program compiles only the
//! core ones and takes the rest by feature (see [Features](#features)).
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use openharness::prelude::*;
//! use openharness::provider::{Reply, ScriptedProvider};
//! use openharness::schemars;
//! use openharness::store::MemoryStore;
//! use openharness_cli::Cli;
//!
//! #[event]
//! #[derive(Debug, Clone)]
//! struct TicketFiled {
//!     title: String,
//! }
//!
//! #[event]
//! enum TriageEvent {
//!     UserInput,
//!     TicketFiled,
//! }
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
//! struct Triage {
//!     tickets: Vec<String>,
//! }
//!
//! #[handler(TriageEvent)]
//! impl Triage {
//!     fn input(&mut self, _input: &UserInput) {}
//!     fn filed(&mut self, ticket: &TicketFiled) {
//!         self.tickets.push(ticket.title.clone());
//!     }
//! }
//!
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct Ticket {
//!     title: String,
//! }
//!
//! struct Clerk;
//!
//! #[agent(output = Ticket, emits = [TicketFiled])]
//! impl Clerk {
//!     fn prompt(&self, _state: &Triage, input: &UserInput) -> String {
//!         format!("File a ticket for: {}", input.text)
//!     }
//!     fn on_output(&self, ticket: Ticket, _input: &UserInput) -> TicketFiled {
//!         TicketFiled { title: ticket.title }
//!     }
//! }
//!
//! fn triage() -> Result<Workflow<Triage>, openharness::Error> {
//!     Workflow::builder("support-triage")
//!         .initial_state(Triage::default())
//!         .agent(Clerk)
//!         // Any store: the CLI records to the one `--store` names.
//!         .store(MemoryStore::new())
//!         // Offline; `--provider anthropic` (or openai, claude-cli) asks a real model.
//!         .provider(ScriptedProvider::new().fallback("clerk", |request| {
//!             Reply::output(serde_json::json!({ "title": request.prompt }))
//!         }))
//!         .build()
//! }
//!
//! fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
//!     // triage start support-triage "the printer is on fire" · triage sessions
//!     // triage tape <id> · triage fork <id> --at 3 · triage send <id> "and the fax"
//!     Ok(Cli::new().workflow(triage()?)?.run())
//! }
//! ```
//!
//! # How it is put together
//!
//! - **Store.** Every command works on one store: `--store PATH`, else `$OPENHARNESS_STORE`,
//!   else `.openharness/store.redb` in the current directory; a PostgreSQL connection string
//!   there works for every command, and a running server (`http://ADDR`) for the commands that
//!   only read. The CLI opens it (read-only for those), then builds an
//!   [`openharness_host::Host`] over it with the registered workflows: a registered workflow's
//!   own store is replaced.
//! - **Workflows** are reached only through that host, by the name a session was recorded with
//!   (a fork's is its root's). A session of a workflow the program does not register is still
//!   listed, its events printed and exported, and the debugger opens it in an events-only mode;
//!   its states cannot be derived, so `tape --at` says so and fails.
//! - **Models.** Turns (`send`, `respond`, `resume`, `fork`) ask the registered workflow's own
//!   provider, or with `--provider anthropic|openai|claude-cli` a real model
//!   ([`openharness_host::Host::with_provider`]).
//! - **Commands of your own.** [`Cli::commands`] adds a `clap` subcommand enum and an async
//!   handler that gets a [`Context`] (the host, the store's path, the output, the progress
//!   view). The `openharness` binary adds its example-specific `demo` and `run` this way: the
//!   library knows no example.
//! - **Presentation.** A turn's progress shows agents starting and finishing, streamed text,
//!   questions and answers, errors ([`TurnProgress`]); [`Cli::describe`] adds lines for a
//!   workflow's own events and [`Cli::summary`] a one-line summary of a state after a turn.
//! - **Output** goes to stdout, or to any writer through [`Cli::try_run_from`] (tests, or a
//!   program that embeds the commands); errors come back as [`CliError`], and [`Cli::run`]
//!   prints them as one `error: …` line with exit code 1 (2 where [`CliError::exit_code`]
//!   says: a command line that does not parse, an export `verify` could not check).
//!
//! # Features
//!
//! Each feature is a group of commands (or a kind of `--store`) and the crates only it needs;
//! `default` is all of them, as the `openharness` binary has them. Without any, a program has
//! `start`, `send`, `respond`, `resume`, `sessions`, `annotate`, `feedback`, `events`,
//! `tape --at`, `fork`, `diff`, `bisect`, `replay`, `check`, `compact`, `export`, `import` and
//! `verify`, on a redb store, with `--provider` for real models. A command left out is not in
//! the help, and a `--store` of a kind left out is refused with the feature's name.
//!
//! | feature | adds |
//! | --- | --- |
//! | `tui` | `tape <id>` without `--at`: the interactive debugger (ratatui, crossterm) |
//! | `server` | `serve` (openharness-server, axum); with `mcp`, `mcp serve --addr` |
//! | `platform` | the `/v1` platform in `serve`, `platform rotate-keys`; with `mcp`, `serve --mcp-config` (implies `server`) |
//! | `eval` | `eval` (experiments, datasets); with `server`, `serve --online-scorers` and the experiments' routes |
//! | `mcp` | `mcp tools`, `mcp serve` (rmcp) |
//! | `otel` | `otel export`, and live export while `OTEL_EXPORTER_OTLP_ENDPOINT` is set |
//! | `postgres` | `--store postgres://…` |
//! | `remote` | `--store http://ADDR`: a running server's store, `send` and `respond` run there; `cancel`, `send --on-busy` |
//! | `examples` | the `openharness` binary's two examples (the binary requires it) |
//!
//! # Modules
//!
//! This file holds [`Cli`], [`Context`] and `Cli::dispatch`, which opens the store and the host.
//!
//! - `args`: the command line: the global `--store` and every command's flags (clap's derive).
//! - `commands` (`commands/`): the dispatch table, `commands::run`, and one file per command.
//! - `transfer`: `export` and `import`, sessions as JSONL between any two stores.
//! - `debugger` (`debugger/`): the interactive terminal debugger of `tape` (feature `tui`);
//!   `view` draws it.
//! - `progress`: [`TurnProgress`], the live view of a turn, and [`Describe`] for your events.
//! - `output`: [`Output`], stdout or a writer an embedding program (or a test) gives.
//! - `provider`: real models for turns (`--provider`), and [`live_provider`].
//! - `remote`: a running `openharness serve` as a read-only store, for `--store http://ADDR`
//!   (feature `remote`).
//! - `shared`: what the command files share: session ids, whole sessions, API key files.
//! - `error`: [`CliError`], and the host's errors put in the CLI's words.
//!
//! The `openharness` binary is `src/bin/openharness/`: this library for the two examples, plus
//! their `demo` and `run` commands (feature `examples`). `commands.rs`'s module docs say how to
//! add a command.

mod args;
mod commands;
#[cfg(feature = "tui")]
mod debugger;
mod error;
mod output;
mod progress;
mod provider;
#[cfg(feature = "remote")]
mod remote;
mod shared;
mod transfer;

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Subcommand};
use openharness::{Workflow, WorkflowState};
use openharness_host::{Host, HostError, Hosted, TurnOutcome};
use serde_json::Value;

#[cfg(feature = "tui")]
pub use debugger::Debugger;
pub use error::CliError;
pub use output::Output;
pub use progress::{Describe, TurnProgress};
pub use provider::{ProviderArgs, ProviderKind, live_provider};
pub use transfer::TransferCliError;

/// No commands of the program's own: the library's commands only.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum NoCommands {}

/// What a command of the program's own gets: the host over the opened store, the store's
/// path, where to write, and the progress view and summaries the program registered.
#[derive(Clone)]
pub struct Context {
    host: Host,
    store_path: PathBuf,
    out: Output,
    program: String,
    look: Arc<Look>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("host", &self.host)
            .field("store_path", &self.store_path)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The host: the registered workflows over the opened store.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The store's path as `--store` (or its default) gave it.
    pub fn store_path(&self) -> &Path {
        &self.store_path
    }

    /// Where the command writes (stdout, or the writer given to [`Cli::try_run_from`]).
    pub fn out(&self) -> Output {
        self.out.clone()
    }

    /// The program's name, as printed in the commands it suggests (`openharness respond …`).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// A live view of a turn, for [`openharness::RunOptions::renderer`]: the built-in events
    /// and the lines [`Cli::describe`] adds.
    pub fn progress(&self) -> TurnProgress {
        TurnProgress::new(self.out.clone(), self.look.describe.as_ref().map(|f| f()))
    }

    /// Prints how a turn of `workflow` ended: the state's summary ([`Cli::summary`]), the
    /// reason, the session's length and, when it waits, the command answering each request.
    pub fn print_outcome(&self, workflow: &str, outcome: &TurnOutcome) -> Result<(), CliError> {
        commands::turns::print_outcome(self, workflow, outcome)
    }

    pub(crate) fn summary(&self, workflow: &str, state: &Value) -> Option<String> {
        self.look.summary.as_ref().and_then(|f| f(workflow, state))
    }
}

type DescribeFactory = Arc<dyn Fn() -> Describe + Send + Sync>;
type SummaryFn = Arc<dyn Fn(&str, &Value) -> Option<String> + Send + Sync>;

/// How turns look: extra progress lines and state summaries.
#[derive(Default, Clone)]
struct Look {
    describe: Option<DescribeFactory>,
    summary: Option<SummaryFn>,
}

/// The future a command of the program's own returns.
pub type CommandFuture = Pin<Box<dyn Future<Output = Result<(), CliError>> + Send>>;

type Handler<E> = Arc<dyn Fn(E, Context) -> CommandFuture + Send + Sync>;

/// The CLI: registered workflows, optional commands of the program's own, and how turns look.
/// [`Cli::run`] parses `std::env::args` and runs the command.
pub struct Cli<E: Subcommand = NoCommands> {
    workflows: Vec<Arc<dyn Hosted>>,
    handler: Option<Handler<E>>,
    look: Look,
    name: Option<String>,
    about: Option<String>,
}

impl Default for Cli<NoCommands> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Subcommand> std::fmt::Debug for Cli<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cli")
            .field(
                "workflows",
                &self.workflows.iter().map(|w| w.name()).collect::<Vec<_>>(),
            )
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Cli<NoCommands> {
    /// A CLI with no workflow yet and the library's commands only.
    pub fn new() -> Self {
        Self {
            workflows: Vec::new(),
            handler: None,
            look: Look::default(),
            name: None,
            about: None,
        }
    }

    /// Adds the subcommands of `E` (a `clap` subcommand enum), run by `handler`. The library's
    /// own commands keep their names; `E`'s come first in the help.
    ///
    /// ```no_run
    /// # use openharness_cli::{Cli, CliError, Context};
    /// #[derive(Debug, clap::Subcommand)]
    /// enum Mine {
    ///     /// Say how many workflows are registered.
    ///     Count,
    /// }
    ///
    /// let cli = Cli::new().commands(|command: Mine, context: Context| {
    ///     Box::pin(async move {
    ///         match command {
    ///             Mine::Count => {
    ///                 use std::io::Write;
    ///                 let n = context.host().workflow_names().len();
    ///                 writeln!(context.out(), "{n} workflows")?;
    ///                 Ok::<(), CliError>(())
    ///             }
    ///         }
    ///     })
    /// });
    /// # let _ = cli;
    /// ```
    pub fn commands<E, F>(self, handler: F) -> Cli<E>
    where
        E: Subcommand,
        F: Fn(E, Context) -> CommandFuture + Send + Sync + 'static,
    {
        Cli {
            workflows: self.workflows,
            handler: Some(Arc::new(handler)),
            look: self.look,
            name: self.name,
            about: self.about,
        }
    }
}

impl<E: Subcommand + Send + 'static> Cli<E> {
    /// Registers `workflow` under its name. Its store is replaced by the CLI's; its provider
    /// answers turns unless `--provider` names another. Two workflows with one name are refused.
    pub fn workflow<S: WorkflowState>(self, workflow: Workflow<S>) -> Result<Self, HostError> {
        self.hosted(<dyn Hosted>::of(workflow))
    }

    /// Registers an already type-erased workflow.
    pub fn hosted(mut self, workflow: Arc<dyn Hosted>) -> Result<Self, HostError> {
        if self.workflows.iter().any(|w| w.name() == workflow.name()) {
            return Err(HostError::DuplicateWorkflow(workflow.name().to_owned()));
        }
        self.workflows.push(workflow);
        Ok(self)
    }

    /// The program's name in usage and in the commands it suggests (default: the file name of
    /// the running program).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The one-line description `--help` shows.
    #[must_use]
    pub fn about(mut self, about: impl Into<String>) -> Self {
        self.about = Some(about.into());
        self
    }

    /// Adds progress lines for a workflow's own events: `factory` makes one [`Describe`] per
    /// turn (it may count, e.g. tasks done), called with every event that is not built in.
    #[must_use]
    pub fn describe(mut self, factory: impl Fn() -> Describe + Send + Sync + 'static) -> Self {
        self.look.describe = Some(Arc::new(factory));
        self
    }

    /// A one-line summary of a workflow's state (as JSON), printed when a turn ends; `None`
    /// prints none.
    #[must_use]
    pub fn summary(
        mut self,
        summary: impl Fn(&str, &Value) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.look.summary = Some(Arc::new(summary));
        self
    }

    /// Parses `std::env::args`, runs the command on stdout and returns the exit code; an error
    /// is printed as one `error: …` line on stderr. Logs go to stderr, filtered by
    /// `$OPENHARNESS_LOG` (warnings and errors when it is unset).
    pub fn run(self) -> ExitCode {
        self.run_with_args(std::env::args_os())
    }

    /// [`run`](Self::run) with the arguments given (the first is the program) instead of the
    /// process's: logs to stderr as `run` does, for a program that computes its command line.
    ///
    /// ```no_run
    /// let code = openharness_cli::Cli::new().run_with_args(["my-tool", "sessions"]);
    /// # let _ = code;
    /// ```
    pub fn run_with_args<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                // Warnings by default: a replay that skips events must say so.
                tracing_subscriber::EnvFilter::builder()
                    .with_default_directive(tracing_subscriber::filter::LevelFilter::WARN.into())
                    .with_env_var("OPENHARNESS_LOG")
                    .from_env_lossy(),
            )
            .with_writer(std::io::stderr)
            // Colours only for a terminal: never ANSI escapes in a log file.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init();
        self.run_from(args)
    }

    /// Runs the command `args` names (the first is the program), on stdout; returns the exit
    /// code. Help, version and usage errors print as `clap` prints them.
    pub fn run_from<I, T>(&self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        match self.try_run_from(args, Output::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(CliError::Clap(err)) => {
                // Help and version go to stdout with success, usage errors to stderr.
                let _ = err.print();
                ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
            }
            // The reader went away (`openharness export … | head`): not a failure.
            Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
            Err(err) => {
                fail(&err);
                ExitCode::from(err.exit_code())
            }
        }
    }

    /// Runs the command `args` names (the first is the program), writing to `out`. Starts its
    /// own async runtime: call it outside one.
    pub fn try_run_from<I, T>(&self, args: I, out: Output) -> Result<(), CliError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let program = self.name.clone().unwrap_or_else(|| {
            args.first()
                .map(PathBuf::from)
                .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "openharness".to_owned())
        });
        let mut command = args::Args::<E>::command().name(program.clone());
        if let Some(about) = &self.about {
            command = command.about(about.clone());
        }
        let matches = match command.try_get_matches_from(args) {
            Ok(matches) => matches,
            Err(err) => return Err(CliError::Clap(err)),
        };
        let parsed = args::Args::<E>::from_arg_matches(&matches).map_err(CliError::Clap)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(CliError::Runtime)?;
        runtime.block_on(self.dispatch(parsed, program, out))
    }

    async fn dispatch(
        &self,
        args: args::Args<E>,
        program: String,
        out: Output,
    ) -> Result<(), CliError> {
        let args::Args { store, command } = args;
        if let args::Command::Transfer(command) = command {
            return Ok(transfer::run(command, &store, out).await?);
        }
        if let args::Command::Compact = command {
            return commands::compact::run(&store, out).await;
        }
        if let args::Command::Verify { file, json } = command {
            return commands::verify::run(&self.workflows, &file, json, out).await;
        }
        #[cfg(feature = "mcp")]
        if let args::Command::Mcp(commands::mcp::McpCommand::Tools(args)) = command {
            return commands::mcp::tools(args, out).await;
        }
        // A command that reads recorded sessions never creates a store (a typo in --store
        // would leave an empty file behind): with none there, it says so.
        if command.needs_recorded_sessions()
            && !openharness::store::is_postgres(&store.to_string_lossy())
            && !transfer::is_remote(&store.to_string_lossy())
            && !openharness::store::is_memory(&store)
            && !store.exists()
        {
            if let args::Command::Sessions { json, .. } = command {
                use std::io::Write as _;
                let mut out = out;
                if json {
                    // No sessions: still JSON, for the scripts that read it.
                    writeln!(out, "[]")?;
                } else {
                    writeln!(
                        out,
                        "No sessions yet: there is no store at {} (`{program} start` records one).",
                        store.display()
                    )?;
                }
                return Ok(());
            }
            return Err(CliError::Usage(format!(
                "there is no store at {}: nothing is recorded there yet (`{program} start` \
                 records a session; --store or OPENHARNESS_STORE names another store)",
                store.display()
            )));
        }
        // The platform's log of its resources (/v1) is not a session to list.
        let platform_log = PLATFORM_LOG
            .parse()
            .map_err(|_| CliError::Usage("the platform log's id is not a session id".into()))?;
        // With OTEL_EXPORTER_OTLP_ENDPOINT set, what this command records is exported live
        // (`otel export` reads only, and says where it sends).
        let opened = commands::open_store(&store, command.reads_only()).await?;
        #[cfg(feature = "otel")]
        let (opened, live) = match command {
            args::Command::Otel(_) => (opened, None),
            _ => commands::otel::live(opened)?,
        };
        // Internal sessions are no conversations to list: the platform's log, experiments' and
        // datasets' logs (in a program built without those features too: its store may be
        // shared with one built with them).
        let mut host = Host::shared(opened).unlisted(platform_log);
        for prefix in UNLISTED_PREFIXES {
            host = host.unlisted_prefix(prefix);
        }
        for workflow in &self.workflows {
            host = host.register(Arc::clone(workflow))?;
        }
        let context = Context {
            host,
            store_path: store,
            out,
            program,
            look: Arc::new(self.look.clone()),
        };
        let result = match command {
            args::Command::Extra(extra) => match &self.handler {
                Some(handler) => handler(extra, context).await,
                // `NoCommands` has no value: no extra command parses without a handler.
                None => Err(CliError::Usage("this program has no such command".into())),
            },
            other => commands::run(other, &context).await,
        };
        #[cfg(feature = "otel")]
        commands::otel::finish(live).await;
        result
    }
}

/// The id of the platform's log of its resources (`openharness_platform::PLATFORM_LOG`), which
/// no command lists. Spelled here, not imported, so a program built without the `platform`
/// feature leaves it out too; a test holds it to the platform's own.
const PLATFORM_LOG: &str = "openharness-platform";

/// The prefixes of experiments' and datasets' logs (`openharness_eval::LOG_PREFIX` and
/// `DATASET_PREFIX`), which no command lists; spelled here for a program built without the
/// `eval` feature, and held to the eval crate's by a test.
const UNLISTED_PREFIXES: [&str; 2] = ["eval:", "dataset:"];

/// Whether `err` (or what caused it) is a write to a pipe whose reader has gone.
fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        let kind = match err.downcast_ref::<std::io::Error>() {
            Some(io) => Some(io.kind()),
            // JSON written straight to the output keeps its I/O error inside, not as a source.
            None => err
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind),
        };
        if kind == Some(std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        cause = err.source();
    }
    false
}

/// Prints `err` as one `error: …` line on stderr, with its causes once each
/// (`error: could not open the store at x: cannot open the store x: …`, as
/// [`ErrorChain`](openharness::adapter::ErrorChain) writes them), and returns the failing exit code:
/// for a program's `main` when building its [`Cli`] fails.
///
/// ```
/// let err = openharness::Error::from(openharness::StoreError::Invalid("no such file".into()));
/// assert_eq!(openharness_cli::fail(&err), std::process::ExitCode::FAILURE);
/// ```
pub fn fail(err: &(dyn std::error::Error + 'static)) -> ExitCode {
    eprintln!("error: {}", openharness::adapter::ErrorChain(err));
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    /// The internal sessions' ids spelled in this crate are the platform's and the eval
    /// crate's own.
    #[test]
    #[cfg(all(feature = "platform", feature = "eval"))]
    fn the_unlisted_ids_are_the_crates_own() {
        assert_eq!(super::PLATFORM_LOG, openharness_platform::PLATFORM_LOG);
        assert_eq!(
            super::UNLISTED_PREFIXES,
            [
                openharness_eval::LOG_PREFIX,
                openharness_eval::DATASET_PREFIX
            ]
        );
    }
}
