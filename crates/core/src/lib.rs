//! Open Harness core: the vocabulary and the engine of an event-sourced agent workflow.
//!
//! This crate owns the event envelope ([`Envelope`]), typed events ([`Event`], [`EventSet`]),
//! pure handlers ([`Handler`]), agents ([`Agent`]), renderers ([`Renderer`]), the event loop
//! ([`Workflow::run`]) and the two ports other crates implement: [`Store`] and [`Provider`].
//! It depends on none of the other Open Harness crates.
//!
//! Users normally depend on the `openharness` facade, which re-exports everything here.

mod agent;
mod assembled;
mod backfill;
pub mod builtin;
mod claim;
mod emit;
mod error;
mod event;
mod fold;
mod handler;
mod locks;
pub mod observe;
mod pattern;
mod provider;
mod recover;
mod renderer;
mod run;
mod runtime;
mod status;
mod store;
mod tool;
mod undo;
mod workflow;

pub use agent::{Agent, AgentSpec, ReplySource, StructuredOutput};
pub use assembled::{CodeIdentity, WorkflowState};
pub use claim::Claim;
pub use emit::{Emit, IntoEmit, Pending};
pub use error::{Error, ErrorChain};
pub use event::{Decoded, Envelope, Event, EventId, EventSet, SessionId};
pub use fold::{
    Applied, DEFAULT_CHECKPOINT_INTERVAL, Fold, MAX_CHECKPOINT_INTERVAL, SKIPPED_POSITIONS,
    Skipped, StreamedFold, UndecodableEvent, catch_quietly,
};
pub use handler::Handler;
pub use pattern::Pattern;
pub use provider::{
    BoxedProvider, ChatMessage, ChatToolCall, Image, Provider, ProviderError, ProviderEvent,
    ProviderRequest, ProviderResponse, ProviderSink, ReasoningEffort, Usage,
};
pub use recover::ViewAt;
pub use renderer::{FnRenderer, Renderer, renderer_fn};
pub use run::{Continuation, OpenCallReport, RunOptions, RunOutcome, StopReason, Unfinished};
pub use status::{SessionStatus, last_event_summary};
pub use store::{
    EVENT_PAGE, EventStream, Recorded, SessionInfo, Snapshot, Store, StoreError, Subscription,
    SubscriptionSender,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{DEFAULT_MAX_TURNS, FnTool, Tool, ToolError, Toolbox};
pub use undo::Undo;
pub use workflow::{Workflow, WorkflowBuilder};

/// Items used by code that `openharness-macros` generates. Not a public API: names here may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::handler::HandlesEvent;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
