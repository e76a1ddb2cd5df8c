//! Open Harness: event-sourced AI-agent workflows.
//!
//! Every run is an append-only log of typed events; state is always derived from it by pure
//! handlers. That gives time-travel debugging (step backwards through any recorded run),
//! deterministic replay without LLM calls, and forks for comparing agents.
//!
//! This is the one crate to depend on. It re-exports the core vocabulary, the macros
//! (`#[event]`, `#[handler]`, `#[agent]`), the stores, the providers, the tape, the
//! projections and the host; `use openharness::prelude::*;` brings in what a workflow needs.
//! What only someone implementing a [`Store`] or a [`Provider`] needs is in [`adapter`].
//!
//! # Features
//!
//! The default features are the common case: `store` (`MemoryStore`, `RedbStore`),
//! `provider` (the HTTP providers and `ScriptedProvider`), `tape`, `projection` and `host`.
//! `postgres` adds `PostgresStore`; `eval` adds experiments ([`eval`]: variants compared
//! from identical forked state); `mcp` adds MCP servers' tools ([`mcp`]); `otel` adds
//! OpenTelemetry export ([`otel`]: a session's log as GenAI spans over OTLP). With
//! `default-features = false` only the core is left:
//! events, handlers, agents, the event loop, the macros and the ports, without redb or the
//! HTTP stack. `testing` adds the fake model servers (`provider::testing`) and
//! `store::FailingStore`, for tests.
//!
//! # Modules
//!
//! All of this crate is `src/lib.rs`: each module re-exports one crate.
//!
//! - The root: `openharness-core`'s root (with [`adapter`] and [`builtin`]) and the macros.
//! - [`prelude`]: the names a workflow definition needs, in one import.
//! - `store`, `provider`, `tape`, `projection`, `host`: the crates of the default features.
//! - `eval`, `mcp`, `otel`: the crates of the features of those names.
//! - [`schemars`]: the version the macros and the runtime use.
//!
//! The server, the platform and the CLI are not re-exported: depend on `openharness-server`
//! or `openharness-cli` to serve or to give your binary the commands.
//!
//! # schemars
//!
//! Agent outputs and events have JSON Schemas from [`schemars`], re-exported here so that the
//! version the macros and the runtime use is the one your types derive with. Bring it into
//! scope and derive as usual:
//!
//! ```
//! use openharness::schemars;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Joke {
//!     joke: String,
//! }
//!
//! let schema = schemars::schema_for!(Joke);
//! assert_eq!(schema.get("required"), Some(&serde_json::json!(["joke"])));
//! ```

// The core's root is the facade's root: a workflow author's vocabulary, with `adapter` and
// `builtin`, kept in one list (core's `lib.rs`).
pub use openharness_core::*;
pub use openharness_macros::*;

/// [schemars](https://docs.rs/schemars) 1, the version Open Harness uses: derive
/// `schemars::JsonSchema` for agent outputs with `use openharness::schemars;` in scope.
pub use openharness_core::__private::schemars;

/// Event stores: [`store::MemoryStore`] for tests, [`store::RedbStore`] as the durable default,
/// and `store::PostgresStore` with the `postgres` feature.
#[cfg(feature = "store")]
pub mod store {
    pub use openharness_store::*;
}

/// Model providers.
#[cfg(feature = "provider")]
pub mod provider {
    pub use openharness_provider::*;
}

/// The [`tape::Tape`]: step through recorded sessions.
#[cfg(feature = "tape")]
pub mod tape {
    pub use openharness_tape::*;
}

/// Read models derived from events, such as chat messages.
#[cfg(feature = "projection")]
pub mod projection {
    pub use openharness_projection::*;
}

/// The [`host::Host`]: workflows by name over one store, answering in JSON, and the JSON
/// Schemas of every wire type ([`host::wire_schemas`]).
#[cfg(feature = "host")]
pub mod host {
    pub use openharness_host::*;
}

/// Evals (feature `eval`): an [`eval::Experiment`] runs cases × variants × repeats, each a
/// recorded session, from inputs or from a fork point of a recording (the prefix served from
/// the log), scores them as events and compares variants case by case.
#[cfg(feature = "eval")]
pub mod eval {
    pub use openharness_eval::*;
}

/// MCP tools (feature `mcp`): connect an [`mcp::McpServer`] (stdio command or Streamable HTTP
/// URL) and give an agent its tools; every call is recorded with the server's name, so replays,
/// cassettes and forks' prefixes never call the server again.
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use openharness_mcp::*;
}

/// OpenTelemetry (feature `otel`): a session's log as spans after the GenAI semantic
/// conventions ([`otel::SessionSpans`]), exported after the fact ([`otel::export_sessions`]) or
/// live as events are recorded ([`otel::LiveExport`]), with ids derived from the log.
#[cfg(feature = "otel")]
pub mod otel {
    pub use openharness_otel::*;
}

/// The names a workflow definition needs, in one import.
pub mod prelude {
    pub use openharness_core::builtin::{
        AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, TextComplete,
        TextDelta, UserInput, WorkflowCompleted, WorkflowStarted,
    };
    pub use openharness_core::{
        Agent, Emit, Envelope, Event, EventId, EventSet, Handler, RunOptions, SessionId,
        SessionStatus, StopReason, Store, Undo, Upcast, Upcasted, Workflow,
    };
    pub use openharness_macros::*;
    /// `workflow.fork(&session, at)` starts a new session from any point of a recorded one.
    #[cfg(feature = "tape")]
    pub use openharness_tape::ForkSession;
    /// `workflow.load(&session)` returns a [`crate::tape::Tape`].
    #[cfg(feature = "tape")]
    pub use openharness_tape::LoadTape;
}

#[doc(hidden)]
pub mod __private {
    pub use openharness_core::__private::*;
}

/// The README's code, compiled and run as a doc test so it stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(all(
    doctest,
    feature = "store",
    feature = "provider",
    feature = "tape",
    feature = "eval",
    feature = "mcp",
    feature = "otel"
))]
pub struct ReadmeDoctests;
