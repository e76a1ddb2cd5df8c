//! [`CliError`]: what a command reports as one `error: …` line with exit code 1 (2 for a
//! command line that does not parse and an export `verify` could not check:
//! [`CliError::exit_code`]), and the host's errors put in the CLI's words
//! ([`Context::explain`]).

use openharness::SessionId;
use openharness_host::HostError;

use crate::Context;

/// A failure a command reports as one `error: ...` line with exit code 1 (or 2:
/// [`CliError::exit_code`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// `check` or `sessions` found damaged sessions (it has printed which).
    #[error("{0} damaged session(s) found; see above")]
    Damaged(usize),
    /// `check` found sessions an interrupted import left unfinished (it has printed which, and
    /// how to finish them).
    #[error(
        "{0} unfinished session(s) found; import their export again to finish them (see above)"
    )]
    Unfinished(usize),
    /// A turn ran and was recorded, but ended with errors (an agent failed for good, a
    /// handler panicked, an agent emitted an event it does not declare); the summary above
    /// says so, and its events show each `error:occurred`.
    #[error(
        "the turn ended with {errors} error(s); `{program} events {session}` shows them \
         (error:occurred)"
    )]
    TurnFailed {
        /// How many `error:occurred` events the turn recorded.
        errors: u64,
        /// The session.
        session: SessionId,
        /// The program's name, for the command that shows them.
        program: String,
    },
    /// A workflow operation failed.
    #[error(transparent)]
    Harness(#[from] openharness::Error),
    /// A host operation failed.
    #[error(transparent)]
    Host(HostError),
    /// The server `--store http://…` names refused a request: its status, and its error's
    /// code and message as it answered them (`409 session_busy` while a turn runs and the
    /// policy is `reject`, `404 not_found` for a session it does not have). Feature
    /// `remote`.
    #[cfg(feature = "remote")]
    #[error("{url} answered {status} {code}: {message}")]
    Server {
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's error code (`session_busy`, `not_found`, ...).
        code: String,
        /// What went wrong, as the server said.
        message: String,
    },
    /// The session does not exist in the store.
    #[error("session {session} not found in {store}; `{program} sessions` lists the recorded ones")]
    SessionNotFound {
        /// The session asked for.
        session: SessionId,
        /// The store's description.
        store: String,
        /// The program's name.
        program: String,
    },
    /// The session was recorded by a workflow this program does not register (the debugger,
    /// feature `tui`, still steps through its events).
    #[cfg_attr(feature = "tui", error(
        "session {session} was recorded by {}, which this program does not register (it registers {}), so its states cannot be derived; `{program} events {session}` prints its events and `{program} tape {session}` steps through them",
        recorded.as_deref().map_or_else(|| "an unknown workflow".to_owned(), |w| format!("workflow `{w}`")),
        openharness_host::list_names(known)
    ))]
    #[cfg_attr(not(feature = "tui"), error(
        "session {session} was recorded by {}, which this program does not register (it registers {}), so its states cannot be derived; `{program} events {session}` prints its events",
        recorded.as_deref().map_or_else(|| "an unknown workflow".to_owned(), |w| format!("workflow `{w}`")),
        openharness_host::list_names(known)
    ))]
    Unhosted {
        /// The session.
        session: SessionId,
        /// The workflow that recorded it, if its log says.
        recorded: Option<String>,
        /// The registered workflows.
        known: Vec<String>,
        /// The program's name.
        program: String,
    },
    /// The store could not be opened.
    #[error("could not open the store at {path}")]
    OpenStore {
        /// The path given.
        path: String,
        /// The cause.
        source: openharness::StoreError,
    },
    /// The redb file is being written by another process (a running `serve`, say).
    #[error(
        "the store {path} is being written by {holders}, and one process writes a store at a \
         time: commands that only read it (sessions, events, tape, diff, check, export) work \
         meanwhile; to record, stop that process or send through its server \
         (`openharness serve` answers POST /sessions and /api/chat)"
    )]
    StoreHeld {
        /// The path given.
        path: String,
        /// Who has it open: `pid N (command line)`, or `another process`.
        holders: String,
    },
    /// A command that only reads found the redb file written by a process that keeps it to
    /// itself (a program of yours whose store was not opened to share it).
    #[error(
        "the store {path} is being written by {holders}, which keeps the file to itself: \
         open it there with RedbOptions::share_with_readers(true) to read it beside it (the \
         openharness CLI and serve do), or read through that program's server with \
         `--store http://ADDR`"
    )]
    StoreUnshared {
        /// The path given.
        path: String,
        /// Who has it open: `pid N (command line)`, or `another process`.
        holders: String,
    },
    /// A store operation failed.
    #[error("the {operation} of {store} failed")]
    Store {
        /// What was being done.
        operation: &'static str,
        /// The store's description.
        store: String,
        /// The cause.
        source: openharness::StoreError,
    },
    /// `compact` failed (the file is open in a process, missing, or damaged).
    #[error("could not compact the store at {path}")]
    Compact {
        /// The path given.
        path: String,
        /// The cause.
        source: openharness::StoreError,
    },
    /// `--provider` named a provider whose key is not set.
    #[error(
        "no API key for {provider}: set {var} (for example `export {var}=...`) and run this again"
    )]
    MissingKey {
        /// The environment variable.
        var: String,
        /// The provider.
        provider: String,
    },
    /// A wrong argument, said in one line.
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("could not write the output")]
    Output(#[from] std::io::Error),
    /// Encoding JSON failed.
    #[error("could not encode JSON")]
    Json(#[from] serde_json::Error),
    /// An OpenTelemetry export failed (no endpoint, the collector refused, ...). Feature
    /// `otel`.
    #[cfg(feature = "otel")]
    #[error(transparent)]
    Otel(#[from] openharness::otel::OtelError),
    /// `export` or `import` failed.
    #[error(transparent)]
    Transfer(#[from] crate::transfer::TransferCliError),
    /// The command line did not parse (or asked for help or the version).
    #[error("{0}")]
    Clap(clap::Error),
    /// The async runtime could not start.
    #[error("could not start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// A `platform` command failed (a master key missing, a provider key that does not open).
    /// Feature `platform`.
    #[cfg(feature = "platform")]
    #[error(transparent)]
    Platform(#[from] openharness_platform::PlatformError),
    /// An eval failed (a bad experiment file or dataset, an unknown experiment, a store
    /// failure). Feature `eval`.
    #[cfg(feature = "eval")]
    #[error(transparent)]
    Eval(#[from] openharness_eval::EvalError),
    /// `eval compare` found a scorer that regressed beyond the gate (`--max-regression`, else
    /// the experiment file's `max_regression`). Exit code 1. Feature `eval`.
    #[cfg(feature = "eval")]
    #[error("{0}")]
    Regressed(String),
    /// `verify` found an export not as it was exported, or not reproduced by today's
    /// handlers: the first line that does not match its chain (with the byte it starts at), a
    /// state that parts, or a session without a chain. Exit code 1.
    #[error("{file} is not verified: {reason}")]
    NotVerified {
        /// The file.
        file: String,
        /// Why, in one line.
        reason: String,
    },
    /// `verify` could not check an export: the file cannot be read, or a session's workflow
    /// is not registered in this program. Exit code 2.
    #[error("could not verify {file}: {reason}")]
    Unverifiable {
        /// The file.
        file: String,
        /// Why.
        reason: String,
        /// The cause, when there is one.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A failure of a program's own command.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl CliError {
    /// The exit code [`Cli::run`](crate::Cli::run) ends with for this error: 2 for a command
    /// line that does not parse and for an export `verify` could not check, 1 for everything
    /// else (a failed command, a tampered export).
    ///
    /// ```
    /// let err = openharness_cli::CliError::Usage("no such session".into());
    /// assert_eq!(err.exit_code(), 1);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Clap(err) => u8::try_from(err.exit_code()).unwrap_or(2),
            Self::Unverifiable { .. } => 2,
            _ => 1,
        }
    }
}

impl From<HostError> for CliError {
    fn from(err: HostError) -> Self {
        match err {
            HostError::Workflow(err) => Self::Harness(err),
            other => Self::Host(other),
        }
    }
}

impl Context {
    /// A host error in the CLI's words: a missing session names the store and how to list
    /// sessions, an unhosted one says what still works.
    pub(crate) fn explain(&self, err: HostError) -> CliError {
        match err {
            HostError::SessionNotFound(session) => CliError::SessionNotFound {
                session,
                store: self.host().store().describe(),
                program: self.program().to_owned(),
            },
            HostError::Unhosted {
                session,
                recorded,
                known,
            } => CliError::Unhosted {
                session,
                recorded,
                known,
                program: self.program().to_owned(),
            },
            other => other.into(),
        }
    }
}
