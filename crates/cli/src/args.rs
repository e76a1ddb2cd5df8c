//! The command line: the global `--store` and the library's subcommands, after the program's
//! own ones (`E`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Event-sourced AI-agent workflows: record, replay, step back, fork.
#[derive(Debug, Parser)]
#[command(
    version,
    about = "Event-sourced AI-agent workflows: record, replay, step back, fork.",
    long_about = None
)]
pub(crate) struct Args<E: Subcommand> {
    // The help names the kinds of store this build opens (`STORE_HELP`).
    #[arg(
        long,
        global = true,
        env = "OPENHARNESS_STORE",
        default_value = ".openharness/store.redb",
        help = STORE_HELP
    )]
    pub(crate) store: PathBuf,

    #[command(subcommand)]
    pub(crate) command: Command<E>,
}

/// `--store`'s help: the kinds of store this build opens (features `postgres` and `remote`).
#[cfg(all(feature = "postgres", feature = "remote"))]
const STORE_HELP: &str = "The store: a redb file, or a PostgreSQL connection string (`postgres://…` or `host=… dbname=…`) for every command, or a running `openharness serve` (`http://ADDR`, read-only: sessions, events, tape, diff, export) when another process holds the redb file, or `memory:` (a new store that keeps nothing once the program ends)";
#[cfg(all(feature = "postgres", not(feature = "remote")))]
const STORE_HELP: &str = "The store: a redb file, or a PostgreSQL connection string (`postgres://…` or `host=… dbname=…`), or `memory:` (a new store that keeps nothing once the program ends)";
#[cfg(all(not(feature = "postgres"), feature = "remote"))]
const STORE_HELP: &str = "The store: a redb file, or a running `openharness serve` (`http://ADDR`, read-only: sessions, events, tape, diff, export) when another process holds the redb file, or `memory:` (a new store that keeps nothing once the program ends)";
#[cfg(not(any(feature = "postgres", feature = "remote")))]
const STORE_HELP: &str =
    "The store: a redb file, or `memory:` (a new store that keeps nothing once the program ends)";

#[derive(Debug, Subcommand)]
pub(crate) enum Command<E: Subcommand> {
    #[command(flatten)]
    Extra(E),
    /// Start a new session of a registered workflow and run its first turn.
    Start(crate::commands::turns::StartArgs),
    /// Continue a recorded session with new input: a turn of the workflow that recorded it.
    Send(crate::commands::turns::SendArgs),
    /// Answer a session's open input request and continue it.
    Respond(crate::commands::turns::RespondArgs),
    /// Stop the turn running on a session in a server (`--store http://ADDR`): it records
    /// `stop:requested` and ends `cancelled` at its next safe point.
    #[cfg(feature = "remote")]
    Cancel(crate::commands::turns::CancelArgs),
    /// Finish the turn a killed process left unfinished (nothing to do if its last turn ended).
    Resume(crate::commands::turns::ResumeArgs),
    /// List recorded sessions: status (running, idle, waiting, failed), title (the first
    /// input), agents, tokens and cost; searched, filtered, sorted and cut with the options.
    Sessions {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        query: SessionsQuery,
    },
    /// Annotate a session, one of its turns or an experiment's run: a thumb, labels, a note,
    /// recorded with who and when on the session's feedback log (never on its own log).
    Annotate(crate::commands::annotate::AnnotateArgs),
    /// What was said of a session: people's annotations and online scores of its turns.
    Feedback {
        /// The session id.
        session: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's events (any session, whichever workflow recorded it).
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
    /// Compare two sessions: their common ancestor, the first event where they part (both
    /// sides and the patch between their payloads) and the patch between their states there.
    Diff {
        /// The first session.
        a: String,
        /// The second session.
        b: String,
        /// Print the comparison as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Find where two runs first part — two sessions, or one session and its re-execution
    /// through today's code (no model is called) — in their events or their states: what
    /// produced the event there, its chain of causes back to the input, the handlers that
    /// changed the state, and the state just after, field by field (exit 1 when they part).
    Bisect {
        /// The first session.
        a: String,
        /// The second session (none: `a` against its replay through today's code).
        b: Option<String>,
        /// Print the bisection as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-execute a session with today's code, every agent answered from the recording (no
    /// model is called), and fold it through today's handlers against the state hashes its
    /// live run recorded; where it parts, show the payload and state diffs (exit 1). With
    /// `--all`, every session (of the store, a search, or exports) at once, with a report.
    Replay {
        /// The session id (or `--all`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        session: Option<String>,
        /// Replay every session recorded by a workflow this program registers.
        #[arg(long)]
        all: bool,
        /// With `--all`: only sessions whose id, title, workflow, agents or inputs contain this
        /// text (any case), as `sessions --search` finds them.
        #[arg(long, value_name = "TEXT", requires = "all")]
        search: Option<String>,
        /// With `--all`: the sessions of these exports (`openharness export` JSONL files, or
        /// folders of them) instead of the store's; read into memory, the store is not opened
        /// for them.
        #[arg(long, value_name = "PATH", requires = "all")]
        from: Vec<std::path::PathBuf>,
        /// With `--all`: also write the report as JUnit XML to FILE.
        #[arg(long, value_name = "FILE", requires = "all")]
        junit: Option<std::path::PathBuf>,
        /// With `--all`: how many sessions at a time (default: the machine's cores).
        #[arg(long, value_name = "N", requires = "all")]
        jobs: Option<usize>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a new session from a point of a recorded one and run it on.
    Fork(crate::commands::fork::ForkArgs),
    /// Read every session of the store whole and say which are damaged (exit 1 if any).
    Check,
    /// Compact the redb store file: move its pages to the start and give the free space at its
    /// end back (no process may have it open); prints its size before and after.
    Compact,
    /// Serve the registered workflows' sessions over HTTP (JSON, SSE, the AI SDK chat stream)
    /// until Ctrl-C.
    #[cfg(feature = "server")]
    Serve(crate::commands::serve::ServeArgs),
    #[command(flatten)]
    Transfer(crate::transfer::TransferCommand),
    /// Check an export on any machine, with no store and no model: its hash chains, then its
    /// sessions replayed to the final state hashes they recorded.
    ///
    /// Recomputes each session's hash chain (naming the first line that does not match, and
    /// the byte it starts at), then folds each session through this program's handlers to
    /// every state hash it recorded, its final one included. Exit 0 verified, 1 not verified
    /// (a line changed, removed or moved, a state that parts, a file without chains), 2 not
    /// checked (an unreadable file, a workflow this program does not register).
    Verify {
        /// The JSONL file.
        file: PathBuf,
        /// Print the verdict as JSON (the first broken line, each session's chain head, final
        /// state hash and state check).
        #[arg(long)]
        json: bool,
    },
    /// Experiments: cases × variants × repeats from forks or inputs, scored and compared
    /// (`run`, `list`, `show`, `compare`, `rescore`).
    #[command(subcommand)]
    #[cfg(feature = "eval")]
    Eval(crate::commands::eval::EvalCommand),
    /// MCP: list the tools of an MCP server; serve this store to a coding assistant.
    #[command(subcommand)]
    #[cfg(feature = "mcp")]
    Mcp(crate::commands::mcp::McpCommand),
    /// OpenTelemetry: send recorded sessions to a collector as GenAI spans (`export`). With
    /// OTEL_EXPORTER_OTLP_ENDPOINT set, every command that records exports live too.
    #[command(subcommand)]
    #[cfg(feature = "otel")]
    Otel(crate::commands::otel::OtelCommand),
    /// Maintain the /v1 platform's records in the store (`rotate-keys`).
    #[command(subcommand)]
    #[cfg(feature = "platform")]
    Platform(crate::commands::platform::PlatformCommand),
}

impl<E: Subcommand> Command<E> {
    /// Whether the command only reads or continues recorded sessions, so a store that does not
    /// exist yet is a mistake (a typo in `--store`) rather than a file to create: every command
    /// that [only reads](Self::reads_only), and those that continue a session.
    pub(crate) fn needs_recorded_sessions(&self) -> bool {
        if self.reads_only() {
            return true;
        }
        match self {
            Self::Send(_) | Self::Respond(_) | Self::Resume(_) | Self::Fork(_) => true,
            #[cfg(feature = "remote")]
            Self::Cancel(_) => true,
            #[cfg(feature = "platform")]
            Self::Platform(_) => true,
            _ => false,
        }
    }

    /// Whether the command only reads the store, so it opens the file read-only: it is never
    /// refused by a process writing it (a running `serve`), nor refuses other readers.
    pub(crate) fn reads_only(&self) -> bool {
        #[cfg(feature = "eval")]
        use crate::commands::eval::EvalCommand;
        match self {
            Self::Sessions { .. }
            | Self::Feedback { .. }
            | Self::Events { .. }
            | Self::Tape { .. }
            | Self::Check
            | Self::Diff { .. }
            | Self::Bisect { .. }
            | Self::Replay { .. } => true,
            #[cfg(feature = "otel")]
            Self::Otel(_) => true,
            #[cfg(feature = "eval")]
            Self::Eval(
                EvalCommand::List { .. } | EvalCommand::Show { .. } | EvalCommand::Compare(_),
            ) => true,
            #[cfg(feature = "eval")]
            Self::Eval(EvalCommand::Dataset(command)) => command.reads_only(),
            #[cfg(feature = "mcp")]
            Self::Mcp(crate::commands::mcp::McpCommand::Serve(args)) => args.read_only(),
            _ => false,
        }
    }
}

/// What `sessions` lists (every option optional; they combine).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct SessionsQuery {
    /// Only sessions whose id, title, workflow, agents or inputs contain this text (any case).
    #[arg(long, value_name = "TEXT")]
    pub(crate) search: Option<String>,
    /// Only sessions with one of these statuses (comma-separated: running, idle, waiting,
    /// failed).
    #[arg(long, value_name = "STATUS,…", value_delimiter = ',')]
    pub(crate) status: Vec<String>,
    /// Only sessions of this workflow.
    #[arg(long, value_name = "NAME")]
    pub(crate) workflow: Option<String>,
    /// Only sessions that ran this agent.
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: Option<String>,
    /// Only sessions active at or after this time (RFC 3339, such as 2026-11-26T09:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub(crate) since: Option<chrono::DateTime<chrono::Utc>>,
    /// Only sessions started at or before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub(crate) until: Option<chrono::DateTime<chrono::Utc>>,
    /// Only sessions with a question waiting for an answer.
    #[arg(long)]
    pub(crate) open: bool,
    /// Only the forks of this session.
    #[arg(long, value_name = "SESSION")]
    pub(crate) fork_of: Option<String>,
    /// The order: recent (the default when any option is given), newest, oldest (the default
    /// otherwise), longest, tokens, cost, score or lowestScore (the last two by `--scorer`).
    #[arg(long, value_name = "ORDER")]
    pub(crate) sort: Option<String>,
    /// Only sessions this online scorer scored (`serve --online-scorers`); what `--min-score`,
    /// `--max-score` and the score sorts read.
    #[arg(long, value_name = "NAME")]
    pub(crate) scorer: Option<String>,
    /// Only sessions whose latest `--scorer` score is at least this.
    #[arg(long, value_name = "VALUE", requires = "scorer")]
    pub(crate) min_score: Option<f64>,
    /// Only sessions whose latest `--scorer` score is at most this.
    #[arg(long, value_name = "VALUE", requires = "scorer")]
    pub(crate) max_score: Option<f64>,
    /// Only sessions a person annotated (`true`) or nobody has yet (`false`).
    #[arg(long, value_name = "BOOL")]
    pub(crate) annotated: Option<bool>,
    /// Only sessions annotated with this label.
    #[arg(long, value_name = "LABEL")]
    pub(crate) label: Option<String>,
    /// At most this many sessions.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
}
