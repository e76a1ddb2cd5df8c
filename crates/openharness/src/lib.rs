//! Open Harness: event-sourced AI-agent workflows.
//!
//! Every run is an append-only log of typed events; state is always derived from it by pure
//! handlers. That gives time-travel debugging (step backwards through any recorded run),
//! deterministic replay without LLM calls, and forks for comparing agents.
//!
//! This is the one crate to depend on. It re-exports the core vocabulary, the macros
//! (`#[event]`, `#[handler]`, `#[agent]`), the stores, the providers, the tape and the
//! projections; `use openharness::prelude::*;` brings in what a workflow needs.

pub use openharness_core::*;
pub use openharness_macros::*;

/// Event stores: [`store::MemoryStore`] for tests, [`store::RedbStore`] as the durable default,
/// and `store::PostgresStore` with the `postgres` feature.
pub mod store {
    pub use openharness_store::*;
}

/// Model providers.
pub mod provider {
    pub use openharness_provider::*;
}

/// The [`tape::Tape`]: step through recorded sessions.
pub mod tape {
    pub use openharness_tape::*;
}

/// Read models derived from events, such as chat messages.
pub mod projection {
    pub use openharness_projection::*;
}

/// The names a workflow definition needs, in one import.
pub mod prelude {
    pub use openharness_core::builtin::{
        AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, TextComplete,
        TextDelta, UserInput, WorkflowCompleted, WorkflowStarted,
    };
    pub use openharness_core::{
        Agent, Emit, Envelope, Event, EventId, EventSet, Handler, RunOptions, SessionId,
        SessionStatus, StopReason, Store, Workflow,
    };
    pub use openharness_macros::*;
    /// `workflow.fork(&session, at)` starts a new session from any point of a recorded one.
    pub use openharness_tape::ForkSession;
    /// `workflow.load(&session)` returns a [`crate::tape::Tape`].
    pub use openharness_tape::LoadTape;
}

#[doc(hidden)]
pub mod __private {
    pub use openharness_core::__private::*;
}

/// The README's code, compiled and run as a doc test so it stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
