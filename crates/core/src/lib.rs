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

pub mod adapter;
mod agent;
mod assembled;
mod backfill;
pub mod builtin;
mod call_key;
mod claim;
mod contained;
mod emit;
mod error;
mod event;
mod fold;
mod handler;
mod locks;
mod open_requests;
mod pattern;
mod provider;
mod recover;
mod renderer;
mod run;
mod runtime;
mod status;
mod store;
mod streamed;
mod tool;
mod undo;
mod workflow;

pub use agent::{Agent, StructuredOutput};
pub use assembled::WorkflowState;
pub use emit::Emit;
pub use error::Error;
pub use event::{Envelope, Event, EventId, EventSet, SessionId};
pub use handler::Handler;
pub use pattern::Pattern;
pub use provider::{BoxedProvider, ChatMessage, Image, Provider, ProviderError, ReasoningEffort};
pub use renderer::{Renderer, renderer_fn};
pub use run::{RunOptions, RunOutcome, StopReason};
pub use status::SessionStatus;
pub use store::{SessionInfo, Store, StoreError};
pub use tokio_util::sync::CancellationToken;
pub use tool::{FnTool, Tool, ToolError};
pub use undo::Undo;
pub use workflow::Workflow;

/// Items used by code that `openharness-macros` generates. Not a public API: names here may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::handler::HandlesEvent;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
