//! The message projection: folding a session's events into chat [`Message`]s.
//!
//! Rules, applied to each event in log order (every other event is ignored):
//!
//! - `user:input` adds a user message with one text part.
//! - `agent:started` opens an assistant message named after the agent. Later events of that
//!   agent attach to it; several agents (even several calls of one agent) can be open at once.
//!   An event belongs to the open message of its `agent` whose `agent:started` had the same
//!   `causedBy` (the runtime records an agent's events as caused by its trigger) or whose
//!   opening event caused it; failing that, to the agent's most recently opened message.
//! - `text:delta` appends to the message's current text part (a new one after a tool part or a
//!   completed text), state `streaming`. A delta of a later `attempt` (the agent's output was
//!   rejected and the model re-asked) first drops the text parts the rejected attempt streamed
//!   and not yet completed, so a message shows the accepted attempt's text only; the rejected
//!   output is in `output:rejected`. Tool parts of a rejected attempt stay (those calls ran).
//! - `text:complete` sets the full text of the parts streamed since the last completion and
//!   marks them `done`: the last part gets what the earlier ones do not already hold (so text
//!   around tool calls stays in place), or, if the earlier parts disagree with the complete
//!   text, the streamed parts are replaced by one part holding it.
//! - `tool:called` adds a tool part (`input-available`); `tool:result` gives the part with the
//!   same `toolCallId` its output (`output-available`) or error text (`output-error`).
//! - `agent:completed` closes the message; text still streaming is marked `done`, and the
//!   structured output the agent returned, if any, is added as an `output` part.
//!
//! `text:delta`, `text:complete`, `tool:called` and `tool:result` of an agent with no open
//! message open one themselves. A built-in event whose payload does not decode is skipped with
//! a warning.

use openharness_core::Envelope;
use openharness_core::EventId;
use openharness_core::builtin::{Builtin, ToolResult, UserInput};
use serde_json::Value;

use crate::message::{Message, Part, Role, TextState, ToolState};

/// Derives the chat messages of a session from its events (see the module rules above).
///
/// Deterministic: the same events give the same messages, and message ids are
/// `msg-<id of the opening event>`.
///
/// ```
/// use openharness_core::{Envelope, builtin::UserInput};
/// use openharness_projection::project_messages;
/// let input = Envelope::typed(&UserInput::new("hello"), None).unwrap();
/// let messages = project_messages(std::slice::from_ref(&input));
/// assert_eq!(messages[0].content, "hello");
/// assert_eq!(messages[0].events, [input.id]);
/// ```
pub fn project_messages(events: &[Envelope]) -> Vec<Message> {
    let mut projection = MessageProjection::new();
    events.iter().for_each(|event| projection.apply(event));
    projection.into_messages()
}

/// The message projection, one event at a time: for live tails, where the log grows while the
/// messages are shown.
///
/// ```
/// use openharness_core::{Envelope, builtin::UserInput};
/// use openharness_projection::MessageProjection;
/// let mut projection = MessageProjection::new();
/// projection.apply(&Envelope::typed(&UserInput::new("a"), None).unwrap());
/// projection.apply(&Envelope::typed(&UserInput::new("b"), None).unwrap());
/// assert_eq!(projection.messages().len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct MessageProjection {
    /// Messages so far; `content` is filled in when they are read.
    messages: Vec<Message>,
    /// Assistant messages still open, oldest first.
    open: Vec<Open>,
}

/// An open assistant message.
#[derive(Debug, Clone)]
struct Open {
    /// The agent it belongs to.
    agent: String,
    /// The event that opened it.
    opened_by: EventId,
    /// What caused the opening event (the agent's trigger).
    trigger: Option<EventId>,
    /// Where it is in `messages`.
    index: usize,
    /// The attempt whose text the message shows.
    attempt: u32,
}

impl MessageProjection {
    /// An empty projection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one event. Events the projection does not use are ignored.
    pub fn apply(&mut self, event: &Envelope) {
        let decoded = match Builtin::decode(event) {
            None => return,
            Some(Ok(decoded)) => decoded,
            Some(Err(err)) => {
                tracing::warn!(
                    event = %event.id,
                    name = %event.name,
                    "message projection skips an event whose payload does not decode: {err}"
                );
                return;
            }
        };
        match decoded {
            Builtin::UserInput(input) => self.user_input(event, input),
            Builtin::AgentStarted(started) => {
                self.open(event, started.agent);
            }
            Builtin::TextDelta(delta) => {
                let index = self.message_index_for(event, &delta.agent);
                if let Some(open) = self.open.iter_mut().find(|open| open.index == index)
                    && delta.attempt > open.attempt
                {
                    open.attempt = delta.attempt;
                    drop_streaming_text(&mut self.messages[index]);
                }
                push_delta(&mut self.messages[index], delta.delta);
            }
            Builtin::TextComplete(complete) => {
                let message = self.message_for(event, &complete.agent);
                complete_text(message, complete.text);
            }
            Builtin::ToolCalled(call) => {
                let message = self.message_for(event, &call.agent);
                message.parts.push(Part::Tool {
                    tool_call_id: call.tool_call_id,
                    tool_name: call.tool,
                    input: call.input,
                    output: None,
                    error_text: None,
                    state: ToolState::InputAvailable,
                });
            }
            Builtin::ToolResult(result) => self.tool_result(event, result),
            Builtin::AgentCompleted(completed) => {
                self.close(event, &completed.agent, completed.output);
            }
            _ => {}
        }
    }

    /// The messages so far.
    pub fn messages(&self) -> Vec<Message> {
        self.clone().into_messages()
    }

    /// The messages so far, consuming the projection.
    pub fn into_messages(self) -> Vec<Message> {
        let mut messages = self.messages;
        for message in &mut messages {
            message.content = message.text();
        }
        messages
    }

    fn user_input(&mut self, event: &Envelope, input: UserInput) {
        self.messages.push(Message {
            id: message_id(event),
            role: Role::User,
            name: None,
            content: String::new(),
            parts: vec![Part::Text {
                text: input.text,
                state: TextState::Done,
            }],
            events: vec![event.id],
        });
    }

    /// Opens an assistant message for `agent` from `event`; returns its index.
    fn open(&mut self, event: &Envelope, agent: String) -> usize {
        let index = self.messages.len();
        self.messages.push(Message {
            id: message_id(event),
            role: Role::Assistant,
            name: Some(agent.clone()),
            content: String::new(),
            parts: Vec::new(),
            events: vec![event.id],
        });
        self.open.push(Open {
            agent,
            opened_by: event.id,
            trigger: event.caused_by,
            index,
            attempt: 1,
        });
        index
    }

    /// Where in `open` the message of `agent` that `event` belongs to is, if one is open.
    fn find_open(&self, event: &Envelope, agent: &str) -> Option<usize> {
        let exact = event.caused_by.and_then(|caused_by| {
            self.open.iter().position(|open| {
                open.agent == agent
                    && (open.trigger == Some(caused_by) || open.opened_by == caused_by)
            })
        });
        exact.or_else(|| self.open.iter().rposition(|open| open.agent == agent))
    }

    /// The index of the open message of `agent` for `event` (opened from `event` if there is
    /// none), with `event` linked to it.
    fn message_index_for(&mut self, event: &Envelope, agent: &str) -> usize {
        match self.find_open(event, agent) {
            Some(open) => {
                let index = self.open[open].index;
                self.messages[index].events.push(event.id);
                index
            }
            None => self.open(event, agent.to_owned()),
        }
    }

    /// The open message of `agent` for `event`, as [`Self::message_index_for`].
    fn message_for(&mut self, event: &Envelope, agent: &str) -> &mut Message {
        let index = self.message_index_for(event, agent);
        &mut self.messages[index]
    }

    fn tool_result(&mut self, event: &Envelope, result: ToolResult) {
        let matches = |part: &Part| matches!(part, Part::Tool { tool_call_id, .. } if *tool_call_id == result.tool_call_id);
        // The agent's open message first, then any earlier message, newest first.
        let open = self
            .find_open(event, &result.agent)
            .map(|open| self.open[open].index);
        let found = open
            .into_iter()
            .chain((0..self.messages.len()).rev())
            .find_map(|index| {
                let part = self.messages[index].parts.iter().position(matches)?;
                Some((index, part))
            });
        let (index, part) = match found {
            Some((index, part)) => {
                self.messages[index].events.push(event.id);
                (index, part)
            }
            None => {
                // A result whose call was never recorded: keep it, with no input.
                let index = self.message_index_for(event, &result.agent);
                let parts = &mut self.messages[index].parts;
                parts.push(Part::Tool {
                    tool_call_id: result.tool_call_id.clone(),
                    tool_name: result.tool.clone(),
                    input: Value::Null,
                    output: None,
                    error_text: None,
                    state: ToolState::InputAvailable,
                });
                (index, parts.len() - 1)
            }
        };
        if let Part::Tool {
            output,
            error_text,
            state,
            ..
        } = &mut self.messages[index].parts[part]
        {
            if result.is_error {
                *output = None;
                *error_text = Some(match result.output {
                    Value::String(text) => text,
                    other => other.to_string(),
                });
                *state = ToolState::OutputError;
            } else {
                *output = Some(result.output);
                *error_text = None;
                *state = ToolState::OutputAvailable;
            }
        }
    }

    fn close(&mut self, event: &Envelope, agent: &str, output: Option<Value>) {
        let Some(open) = self.find_open(event, agent) else {
            return; // nothing open: nothing to close
        };
        let open = self.open.remove(open);
        let message = &mut self.messages[open.index];
        message.events.push(event.id);
        for part in &mut message.parts {
            if let Part::Text { state, .. } = part {
                *state = TextState::Done;
            }
        }
        if let Some(output) = output {
            message.parts.push(Part::Output {
                agent: agent.to_owned(),
                output,
            });
        }
    }
}

/// `msg-<event id>`.
fn message_id(event: &Envelope) -> String {
    format!("msg-{}", event.id)
}

/// Drops the text parts still streaming (a rejected attempt's text).
fn drop_streaming_text(message: &mut Message) {
    message.parts.retain(|part| {
        !matches!(
            part,
            Part::Text {
                state: TextState::Streaming,
                ..
            }
        )
    });
}

fn push_delta(message: &mut Message, delta: String) {
    if let Some(Part::Text {
        text,
        state: TextState::Streaming,
    }) = message.parts.last_mut()
    {
        text.push_str(&delta);
    } else {
        message.parts.push(Part::Text {
            text: delta,
            state: TextState::Streaming,
        });
    }
}

fn complete_text(message: &mut Message, complete: String) {
    let streaming: Vec<usize> = message
        .parts
        .iter()
        .enumerate()
        .filter(|(_, part)| {
            matches!(
                part,
                Part::Text {
                    state: TextState::Streaming,
                    ..
                }
            )
        })
        .map(|(index, _)| index)
        .collect();
    let Some((&last, earlier)) = streaming.split_last() else {
        message.parts.push(Part::Text {
            text: complete,
            state: TextState::Done,
        });
        return;
    };
    let prefix: String = earlier
        .iter()
        .filter_map(|&index| match &message.parts[index] {
            Part::Text { text, .. } => Some(text.as_str()),
            Part::Tool { .. } | Part::Output { .. } => None,
        })
        .collect();
    if let Some(rest) = complete.strip_prefix(prefix.as_str()) {
        let rest = rest.to_owned();
        for &index in &streaming {
            if let Part::Text { text, state } = &mut message.parts[index] {
                if index == last {
                    *text = rest.clone();
                }
                *state = TextState::Done;
            }
        }
    } else {
        // The earlier parts disagree with the complete text: one part holds it all.
        for &index in streaming[1..].iter().rev() {
            message.parts.remove(index);
        }
        message.parts[streaming[0]] = Part::Text {
            text: complete,
            state: TextState::Done,
        };
    }
}
