//! Projections of event logs into read models.
//!
//! A session's events are the only source of truth; this crate derives views from them. The
//! first view is the chat: [`project_messages`] turns the built-in events (`user:input`,
//! `agent:started`, `text:delta`, `text:complete`, `tool:called`, `tool:result`,
//! `agent:completed`) into [`Message`]s, each linked back to the events it was built from, and
//! [`to_ui_messages`] converts those into the Vercel AI SDK 5 `UIMessage` shape a web client can
//! render directly.
//!
//! The projection is deterministic: message ids are derived from event ids, so the same events
//! always give the same messages, byte for byte. [`MessageProjection`] does the same work one
//! event at a time, for live tails.
//!
//! The second view is the AI SDK 5 UI message stream of a session's turns ([`UiStream`]), and
//! the stored chat built from that same stream ([`ui_messages`]), so what a client streamed
//! and what it reloads are equal. The third is a turn as an Open Responses response
//! ([`ResponseStream`]); the fourth, a client's message as an A2A task ([`TaskStream`]).
//!
//! # Modules
//!
//! - `message`: the message model, [`Message`] and its [`Part`]s with their states.
//! - `project` (`project/`): [`project_messages`] and [`MessageProjection`], events to messages.
//! - `ui`: [`to_ui_messages`], messages in the AI SDK 5 `UIMessage` shape.
//! - `ui_stream` (`ui_stream/`): [`UiStream`], the UI message stream; `messages`, its stored chat.
//! - `ag_ui` (`ag_ui/`): [`AgUiStream`], a turn as an AG-UI run (its events, and the
//!   conversation for `MESSAGES_SNAPSHOT`).
//! - `open_responses` (`open_responses/`): [`ResponseStream`], a turn as an Open Responses
//!   response (its streaming events and its resource).
//! - `a2a` (`a2a/`): [`TaskStream`], a client's message as an A2A v1.0 task (its stream
//!   responses and the `Task` they describe).
//! - `reply`: an agent's chat reply as text, read whole ([`reply_text`]) or as it streams.
//!
//! ```
//! use openharness_core::{Envelope, builtin::{AgentStarted, TextDelta, UserInput}};
//! use openharness_projection::{Role, project_messages, to_ui_messages};
//!
//! let input = Envelope::typed(&UserInput::new("plan a trip"), None).unwrap();
//! let started = Envelope::typed(
//!     &AgentStarted { agent: "planner".into(), prompt: "plan".into(), ..AgentStarted::default() },
//!     Some(input.id),
//! )
//! .unwrap();
//! let delta = Envelope::typed(
//!     &TextDelta { agent: "planner".into(), delta: "On it.".into(), attempt: 1 },
//!     Some(input.id),
//! )
//! .unwrap();
//!
//! let messages = project_messages(&[input.clone(), started.clone(), delta.clone()]);
//! assert_eq!(messages.len(), 2);
//! assert_eq!(messages[0].role, Role::User);
//! assert_eq!(messages[0].id, format!("msg-{}", input.id));
//! assert_eq!(messages[1].name.as_deref(), Some("planner"));
//! assert_eq!(messages[1].content, "On it.");
//! assert_eq!(messages[1].events, [started.id, delta.id]);
//!
//! let ui = serde_json::to_value(to_ui_messages(&messages)).unwrap();
//! assert_eq!(ui[1]["parts"][0]["state"], "streaming");
//! ```

mod a2a;
mod ag_ui;
mod message;
mod open_responses;
mod project;
mod reply;
mod ui;
mod ui_stream;

pub use a2a::{ArtifactText, TaskHead, TaskResponse, TaskState, TaskStream};
pub use ag_ui::{AgUiEvent, AgUiStream, TOOL_MESSAGE_IDS_FIELD, TextMessageContent};
pub use message::{Message, Part, Role, TextState, ToolState};
pub use open_responses::{
    OutputTextDelta, ResponseData, ResponseEvent, ResponseHead, ResponseStream,
};
pub use project::{MessageProjection, project_messages};
pub use reply::{ReplyDecoder, ReplyProgress, reply_text};
pub use ui::{ToolApproval, UiMessage, UiPart, UiToolCall, to_ui_messages};
pub use ui_stream::{
    APPROVAL_TOOL, APPROVED_FIELD, Approvals, MESSAGE_ID_FIELD, REASON_FIELD, REGENERATES_FIELD,
    UiChunk, UiStream, UiTextDelta, approval_text, approval_tool_call_id, opens_message,
    ui_messages, ui_messages_with,
};
