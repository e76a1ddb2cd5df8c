//! Open Harness core: the vocabulary and the engine of an event-sourced agent workflow.
//!
//! This crate owns the event envelope ([`Envelope`]), typed events ([`Event`], [`EventSet`]),
//! pure handlers ([`Handler`]), agents ([`Agent`]), renderers ([`Renderer`]), the event loop
//! ([`Workflow::run`]) and the two ports other crates implement: [`Store`] and [`Provider`].
//! It depends on none of the other Open Harness crates.
//!
//! The root holds what a workflow's author names; what implementing a store, a provider or a
//! runtime of your own takes is in [`adapter`].
//!
//! Users normally depend on the `openharness` facade, which re-exports everything here.
//!
//! # Modules
//!
//! What a workflow is written with:
//!
//! - `event`: the envelope, event and session ids, and the traits typed events implement.
//! - [`builtin`]: the built-in events, and `Builtin`, the one place their names are matched.
//! - `handler`: the [`Handler`] trait, how a workflow's state reacts to its events.
//! - `emit`: [`Emit`], the events a handler or an agent's `on_output` produces.
//! - `undo`: [`Undo`], how a handler says what undoes its change, so a tape steps back cheaply.
//! - `agent`: the [`Agent`] trait, an LLM step with a mandatory structured output.
//! - `tool`: the [`Tool`] trait, a function an agent's model may call while it works.
//! - `renderer`: [`Renderer`], observers of a run that see events once they are recorded.
//! - `pattern`: [`Pattern`], which event names a renderer wants to see.
//! - `workflow`: [`Workflow`] and its builder; `run`, `send`, `respond`, `resume`, `state_at`.
//! - `run`: [`RunOptions`], [`RunOutcome`], [`StopReason`] and what a recorded session reports.
//! - `status`: [`SessionStatus`], what a session is doing, told by its last event alone.
//! - `error`: [`Error`], what every other error of Open Harness converts into.
//!
//! The ports:
//!
//! - `store` (`store/`): the [`Store`] port; paged event streams and live subscriptions.
//! - `provider`: the [`Provider`] port, and what a provider is asked, streams and returns.
//! - `streamed`: the one mapping between a provider's streamed events and the recorded ones.
//! - `claim`: `Claim`, the right to run a session's turns among the processes sharing a store.
//! - [`adapter`] (with `adapter/observe.rs`): the kit for store, provider and runtime authors.
//!
//! The engine:
//!
//! - `runtime` (`runtime/`): the event loop; its module docs say which file holds which part.
//! - `recover` (`recover/`): a session derived from its log alone: states, cut work, forks.
//! - `fold`: applying recorded events to a state, one at a time, a panicking handler rolled back.
//! - `definition`: what a built workflow is made of, shared by the workflow and the runtime.
//! - `contained`: running the workflow's own code with its panics caught and reported once.
//! - `backfill`: snapshots left behind by long reads, written after the read has answered.
//! - `call_key`: which agent call a recorded event belongs to.
//! - `locks`: one writer per session within a process.
//! - `control`: commands (a second input, a stop) sent to a running turn, which records them.
//! - `queued`: the inputs queued during a turn and not answered yet.
//! - `state_hash`: a state's SHA-256 as canonical JSON (forks and rollbacks record it).
//! - `open_requests`: the `input:requested` events a session has not had answered.

pub mod adapter;
mod agent;
mod backfill;
pub mod builtin;
mod call_key;
mod claim;
mod contained;
mod control;
mod definition;
mod emit;
mod error;
mod event;
mod fold;
mod handler;
mod locks;
mod open_requests;
mod pattern;
mod provider;
mod queued;
mod recover;
mod renderer;
mod run;
mod runtime;
mod state_hash;
mod status;
mod store;
mod streamed;
mod tool;
mod undo;
mod upcast;
mod workflow;

pub use agent::{Agent, StructuredOutput};
pub use control::BusyPolicy;
pub use definition::WorkflowState;
pub use emit::Emit;
pub use error::Error;
pub use event::{Envelope, Event, EventId, EventSet, InvalidSessionId, SessionId};
pub use handler::Handler;
pub use pattern::Pattern;
pub use provider::{BoxedProvider, ChatMessage, Image, Provider, ProviderError, ReasoningEffort};
pub use recover::{ChangedBy, ShapeChange, StateCheck, StateDivergence};
pub use renderer::{Renderer, renderer_fn};
pub use run::{AgentSettings, RunOptions, RunOutcome, StopReason};
pub use status::SessionStatus;
pub use store::{SessionInfo, Store, StoreError};
pub use tokio_util::sync::CancellationToken;
pub use tool::{ClientTool, FnTool, Tool, ToolError};
pub use undo::Undo;
pub use upcast::{Upcast, Upcasted};
pub use workflow::Workflow;

/// Items used by code that `openharness-macros` generates. Not a public API: names here may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::handler::HandlesEvent;
    pub use crate::upcast::same_name;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
