//! The adapter author's kit: what implementing a [`Store`](crate::Store), a
//! [`Provider`](crate::Provider) or a runtime of your own takes, beyond what using one does.
//! A workflow's author seldom needs anything here; the crate root holds that vocabulary.
//!
//! - **A store:** the channel behind a [`Subscription`] ([`SubscriptionSender`]), paged
//!   [`EventStream`]s ([`EventStream::paged`], [`EVENT_PAGE`]), [`Recorded`] events, the
//!   names a fold reads payloads of ([`Folded`]),
//!   [`Snapshot`]s, lease [`Claim`]s, the metadata a backend reads from a session's last event
//!   ([`last_event_summary`]), and [`observe`] to wrap a store rather than write another
//!   pass-through.
//! - **A provider:** the [`ProviderRequest`] it answers, the [`ChatToolCall`]s in its
//!   messages, the [`ProviderSink`] it streams [`ProviderEvent`]s to, and the
//!   [`ProviderResponse`] and [`Usage`] it returns ([`ProviderResult`]).
//! - **Controlling a running turn** (hosts): [`turn_control`] gives a [`TurnControl`] whose
//!   [`TurnCommand`]s (a second input, a stop) a turn given its [`TurnInbox`] records
//!   ([`CommandRecorded`], [`Acknowledgement`], [`NotRecorded`]); [`Steers`] carries steered
//!   inputs to the running calls.
//! - **Folding and running by hand** (tapes, servers, debuggers): [`Fold`] and what it returns
//!   ([`Applied`], [`Pending`], [`Skipped`], [`UndecodableEvent`]), [`StreamedFold`], the
//!   snapshot spacing constants, [`Continuation`] and [`Unfinished`] calls, [`ViewAt`],
//!   [`CodeIdentity`], [`CallKey`], which agent call a recorded event belongs to, and
//!   [`state_hash()`] / [`json_hash`], a state's SHA-256 as canonical JSON.
//! - **What the macros generate against:** [`Decoded`], [`IntoEmit`], [`AgentSpec`],
//!   [`ReplySource`], and for event versions [`DecodeError`], [`Split`], [`read_upcasting`],
//!   [`read_current`] and [`decoded_with_splits`].
//! - **Types met through a method but seldom named:** [`WorkflowBuilder`]
//!   (`Workflow::builder`), [`Toolbox`], [`FnRenderer`] (`renderer_fn`), [`OpenCallReport`],
//!   [`DEFAULT_MAX_TURNS`], and [`ErrorChain`], which writes an error with its sources on
//!   one line (what a CLI or a server prints).
//!
//! A store answering reads a page at a time:
//!
//! ```
//! use openharness_core::adapter::EVENT_PAGE;
//!
//! let pages = 2_500_usize.div_ceil(EVENT_PAGE);
//! assert_eq!(pages, 3);
//! ```

pub use crate::agent::{AgentSpec, ReplySource};
pub use crate::call_key::CallKey;
pub use crate::claim::Claim;
pub use crate::contained::catch_quietly;
pub use crate::control::{
    Acknowledgement, CommandRecorded, NotRecorded, TurnCommand, TurnControl, TurnInbox,
    turn_control,
};
pub use crate::definition::CodeIdentity;
pub use crate::emit::{IntoEmit, Pending};
pub use crate::event::Decoded;
pub use crate::fold::{
    Applied, DEFAULT_CHECKPOINT_INTERVAL, Fold, MAX_CHECKPOINT_INTERVAL, SKIPPED_POSITIONS,
    Skipped, StreamedFold, UndecodableEvent,
};
pub mod observe;
pub use crate::error::ErrorChain;
pub use crate::event::decoded_with_splits;
pub use crate::provider::{
    ChatToolCall, ProviderEvent, ProviderRequest, ProviderResponse, ProviderResult, ProviderSink,
    Steers, Usage,
};
pub use crate::recover::ViewAt;
pub use crate::renderer::FnRenderer;
pub use crate::run::{Continuation, OpenCallReport, Unfinished};
pub use crate::state_hash::{json_hash, state_hash, state_shape};
pub use crate::status::last_event_summary;
pub use crate::store::{
    EVENT_PAGE, EventStream, Folded, Recorded, Snapshot, SnapshotJson, Subscription,
    SubscriptionSender,
};
pub use crate::tool::{DEFAULT_MAX_TURNS, Toolbox};
pub use crate::upcast::{DecodeError, Split, read_current, read_upcasting};
pub use crate::workflow::WorkflowBuilder;
