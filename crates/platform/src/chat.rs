//! The built-in agent-chat workflow every platform session runs: its state is the
//! conversation (messages, and the tool calls the assistant made with their results); each
//! `user:input` makes the `assistant` agent answer, recorded as `assistant:replied {text}`.
//!
//! The assistant talks to its model as a chat: the agent's system prompt (with its
//! capabilities' additions) as the system prompt, the conversation as role-correct messages
//! (user messages with their images, the assistant's answers, its tool calls and their
//! results), and its answer asked for as plain text (its output type is `String`), so what the
//! model streams is the reply itself. Its tools are its capabilities'; its model the one the
//! message, session or agent names; its reasoning effort the message's. It is an ordinary
//! Open Harness workflow, so a platform session's log can be stepped through, forked and
//! replayed like any other.

use std::collections::HashSet;
use std::sync::Arc;

use openharness_core::builtin::{ToolCalled, ToolResult, UserInput};
use openharness_core::{
    Agent, BoxedProvider, ChatMessage, Emit, Error, Event, FnTool, Image, ReasoningEffort, Store,
    Tool, Undo, Workflow, adapter::ChatToolCall,
};
use openharness_macros::{event, handler};
use serde::{Deserialize, Serialize};

/// The name platform sessions are recorded under (in `workflow:started`).
pub const WORKFLOW_NAME: &str = "agent-chat";

/// The assistant answered the latest message.
#[event("assistant:replied", crate = openharness_core)]
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantReplied {
    /// The answer.
    pub text: String,
}

/// The events the conversation folds.
#[event(crate = openharness_core)]
#[derive(Debug, Clone)]
pub enum ChatEvent {
    /// A person's message.
    UserInput,
    /// The assistant's answer.
    AssistantReplied,
    /// The assistant called a tool.
    ToolCalled,
    /// A tool the assistant called returned.
    ToolResult,
}

/// One line of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatLine {
    /// `user`, `assistant`, `tool_call` (the assistant called a tool) or `tool_result` (the
    /// tool returned).
    pub role: String,
    /// What was said (empty on tool lines).
    pub text: String,
    /// The images a user's line held, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The call or its result, on tool lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ChatTool>,
}

/// A tool call or result of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatTool {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (on a call) or what it returned (on a result).
    pub value: serde_json::Value,
    /// Whether the result is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Whether the client runs the tool (a call the assistant's turn ended with, and its
    /// result, which came with the client's next message).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client: bool,
}

/// The conversation so far: the agent-chat workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatState {
    /// Every message and tool exchange, oldest first.
    pub lines: Vec<ChatLine>,
}

impl ChatLine {
    fn said(role: &str, text: &str, images: Vec<Image>) -> Self {
        Self {
            role: role.to_owned(),
            text: text.to_owned(),
            images,
            tool: None,
        }
    }

    fn tool(role: &str, tool: ChatTool) -> Self {
        Self {
            role: role.to_owned(),
            text: String::new(),
            images: Vec::new(),
            tool: Some(tool),
        }
    }
}

/// Each event adds one line; stepping back over it takes the line off again.
#[handler(ChatEvent, crate = openharness_core)]
impl ChatState {
    fn user_said(&mut self, input: &UserInput, undo: &mut Undo<Self>) {
        // The results of the client's tools first: they answer the calls the last turn
        // ended with.
        for result in &input.tool_results {
            let name = self
                .lines
                .iter()
                .rev()
                .filter_map(|line| line.tool.as_ref().filter(|_| line.role == "tool_call"))
                .find(|call| call.id == result.tool_call_id)
                .map(|call| call.name.clone())
                .unwrap_or_default();
            let tool = ChatTool {
                id: result.tool_call_id.clone(),
                name,
                value: result.output.clone(),
                is_error: result.is_error,
                client: true,
            };
            self.add(ChatLine::tool("tool_result", tool), undo);
        }
        if input.tool_results.is_empty() || !input.text.is_empty() || !input.images.is_empty() {
            let line = ChatLine::said("user", &input.text, input.images.clone());
            self.add(line, undo);
        }
    }

    fn assistant_replied(&mut self, replied: &AssistantReplied, undo: &mut Undo<Self>) {
        self.add(ChatLine::said("assistant", &replied.text, Vec::new()), undo);
    }

    fn tool_called(&mut self, called: &ToolCalled, undo: &mut Undo<Self>) {
        let tool = ChatTool {
            id: called.tool_call_id.clone(),
            name: called.tool.clone(),
            value: called.input.clone(),
            is_error: false,
            client: called.client,
        };
        self.add(ChatLine::tool("tool_call", tool), undo);
    }

    fn tool_returned(&mut self, result: &ToolResult, undo: &mut Undo<Self>) {
        let tool = ChatTool {
            id: result.tool_call_id.clone(),
            name: result.tool.clone(),
            value: result.output.clone(),
            is_error: result.is_error,
            client: false,
        };
        self.add(ChatLine::tool("tool_result", tool), undo);
    }
}

impl ChatState {
    /// Adds `line`, recording how to take it off.
    fn add(&mut self, line: ChatLine, undo: &mut Undo<Self>) {
        self.lines.push(line);
        undo.record(|state| {
            state.lines.pop();
        });
    }
}

/// The assistant of one platform agent: its system prompt (with its capabilities' additions),
/// its model and its capabilities' tools.
#[derive(Clone)]
pub struct ChatAgent {
    system_prompt: String,
    model: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ChatAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatAgent")
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ChatAgent {
    /// An assistant with `system_prompt`, asking `model` (or the provider's default), with the
    /// tools of `capabilities` (ids from the registry; unknown ones give nothing).
    ///
    /// ```
    /// use openharness_platform::ChatAgent;
    /// let agent = ChatAgent::new("Be brief.", Some("gpt-test".into()), &["current_time".into()]);
    /// assert!(agent.system_prompt().contains("current_time"));
    /// ```
    pub fn new(system_prompt: &str, model: Option<String>, capabilities: &[String]) -> Self {
        let mut prompt = system_prompt.trim().to_owned();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for id in capabilities {
            let Some(capability) = crate::capabilities::capability(id) else {
                continue;
            };
            if let Some(addition) = &capability.system_prompt_addition {
                if !prompt.is_empty() {
                    prompt.push_str("\n\n");
                }
                prompt.push_str(addition);
            }
            if capability.tools.iter().any(|t| t == "current_time") {
                tools.push(Arc::new(current_time_tool()));
            }
        }
        Self {
            system_prompt: prompt,
            model,
            tools,
        }
    }

    /// This assistant with `tools` too (an MCP capability's, say).
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// The system prompt with the capabilities' additions.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }
}

/// The arguments of `current_time`: none.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct NoArguments {}

fn current_time_tool() -> FnTool<NoArguments> {
    FnTool::new(
        "current_time",
        "The current date and time in UTC (RFC 3339).",
        |_: NoArguments| async move {
            Ok::<_, std::convert::Infallible>(
                serde_json::json!({ "utc": chrono::Utc::now().to_rfc3339() }),
            )
        },
    )
}

/// At most this many images, the conversation's latest, go with one request (Anthropic takes
/// up to 100 per request, and every image costs input tokens on every turn); an older image's
/// message says it is no longer shown.
pub const MAX_IMAGES_PER_REQUEST: usize = 20;

/// The conversation as role-correct messages, up to the latest user message or result of a
/// client's tool (what comes after it belongs to the call being made: on a resume, the tool
/// calls of its interrupted attempt).
/// Each user message keeps its images (the conversation's latest [`MAX_IMAGES_PER_REQUEST`];
/// a message whose images are older says they are no longer shown); each tool call becomes an
/// assistant message calling it, followed by its result, and a call without a recorded result
/// (cut by a crash) is left out with it.
fn conversation(state: &ChatState) -> Vec<ChatMessage> {
    let end = state
        .lines
        .iter()
        .rposition(|line| {
            line.role == "user"
                || (line.role == "tool_result" && line.tool.as_ref().is_some_and(|t| t.client))
        })
        .map_or(0, |last| last + 1);
    let lines = &state.lines[..end];
    let total: usize = lines.iter().map(|line| line.images.len()).sum();
    let mut dropped = total.saturating_sub(MAX_IMAGES_PER_REQUEST);
    let answered: HashSet<&str> = lines
        .iter()
        .filter(|line| line.role == "tool_result")
        .filter_map(|line| line.tool.as_ref().map(|tool| tool.id.as_str()))
        .collect();
    let mut called = HashSet::new();
    let mut messages = Vec::with_capacity(lines.len());
    for line in lines {
        match (line.role.as_str(), &line.tool) {
            ("user", _) => {
                let old = dropped.min(line.images.len());
                dropped -= old;
                let mut text = line.text.clone();
                if old > 0 {
                    let mark = if old == 1 {
                        "[an image, no longer shown]".to_owned()
                    } else {
                        format!("[{old} images, no longer shown]")
                    };
                    text = if text.is_empty() {
                        mark
                    } else {
                        format!("{text} {mark}")
                    };
                }
                messages.push(ChatMessage::user(text).with_images(line.images[old..].to_vec()));
            }
            ("assistant", _) => messages.push(ChatMessage::assistant(line.text.clone())),
            ("tool_call", Some(tool)) if answered.contains(tool.id.as_str()) => {
                called.insert(tool.id.as_str());
                messages.push(ChatMessage::tool_calls(
                    "",
                    vec![ChatToolCall {
                        id: tool.id.clone(),
                        name: tool.name.clone(),
                        input: tool.value.clone(),
                    }],
                ));
            }
            ("tool_result", Some(tool)) if called.remove(tool.id.as_str()) => {
                messages.push(ChatMessage::tool_result(
                    tool.id.clone(),
                    tool.name.clone(),
                    tool.value.clone(),
                    tool.is_error,
                ));
            }
            _ => {}
        }
    }
    messages
}

impl Agent for ChatAgent {
    type State = ChatState;
    type Trigger = UserInput;
    type Output = String;
    const NAME: &'static str = "assistant";
    const EMITS: &'static [&'static str] = &[AssistantReplied::NAME];

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    /// Empty: the conversation, the user's latest message included, is in [`Agent::messages`].
    fn prompt(&self, _state: &ChatState, _input: &UserInput) -> String {
        String::new()
    }

    fn system(&self, _state: &ChatState, _input: &UserInput) -> Option<String> {
        (!self.system_prompt.is_empty()).then(|| self.system_prompt.clone())
    }

    fn messages(&self, state: &ChatState, _input: &UserInput) -> Vec<ChatMessage> {
        conversation(state)
    }

    fn reasoning(&self, _state: &ChatState, input: &UserInput) -> Option<ReasoningEffort> {
        input.reasoning_effort()
    }

    fn on_output(&self, text: String, _input: &UserInput) -> Emit {
        Emit::one(AssistantReplied { text })
    }
}

/// The agent-chat workflow of one agent, recording to `store` and asking `provider`.
pub fn workflow(
    store: Arc<dyn Store>,
    provider: BoxedProvider,
    agent: ChatAgent,
) -> Result<Workflow<ChatState>, Error> {
    Workflow::builder(WORKFLOW_NAME)
        .initial_state(ChatState::default())
        .agent(agent)
        .shared_store(store)
        .provider(provider)
        .build()
}

/// The agent-chat workflow a platform registers once in its host: its assistant has no
/// instructions, model, tools or provider of its own, since every turn is given its agent's
/// ([`AgentSettings`](openharness_core::AgentSettings), from the platform's index). Run without
/// them, its calls fail with a message that says so.
pub(crate) fn registered(store: Arc<dyn Store>) -> Result<Workflow<ChatState>, Error> {
    Workflow::builder(WORKFLOW_NAME)
        .initial_state(ChatState::default())
        .agent(ChatAgent::new("", None, &[]))
        .shared_store(store)
        .provider(NoProvider)
        .build()
}

/// The provider of a turn given none: every call fails, saying where providers come from.
struct NoProvider;

#[async_trait::async_trait]
impl openharness_core::Provider for NoProvider {
    fn name(&self) -> &str {
        "none"
    }

    async fn complete(
        &self,
        _request: openharness_core::adapter::ProviderRequest,
        _sink: openharness_core::adapter::ProviderSink,
    ) -> openharness_core::adapter::ProviderResult {
        Err(openharness_core::ProviderError::Failed {
            provider: "none".into(),
            message: "this agent-chat turn was given no provider: the platform gives each turn its agent's (post the message through /v1)".into(),
        })
    }
}

/// The agent-chat workflow for reading platform sessions where no agent is at hand (a host
/// that lists, steps through, diffs or forks them: `openharness serve` registers it): it folds
/// their logs, but its turns have no assistant, so continue platform sessions through `/v1`.
///
/// ```
/// use openharness_platform::{WORKFLOW_NAME, agent_chat_for_reading};
/// let store = std::sync::Arc::new(openharness_store::MemoryStore::new());
/// let workflow = agent_chat_for_reading(store)?;
/// assert_eq!(workflow.name(), WORKFLOW_NAME);
/// # Ok::<(), openharness_core::Error>(())
/// ```
pub fn for_reading(store: Arc<dyn Store>) -> Result<Workflow<ChatState>, Error> {
    Workflow::builder(WORKFLOW_NAME)
        .initial_state(ChatState::default())
        .shared_store(store)
        .build()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use openharness_core::{Handler, adapter::ProviderRequest};
    use serde_json::json;

    fn fold(events: Vec<ChatEvent>) -> ChatState {
        let mut state = ChatState::default();
        for event in &events {
            state.apply(event);
        }
        state
    }

    fn said(text: &str, images: usize) -> ChatEvent {
        ChatEvent::UserInput(UserInput {
            text: text.into(),
            images: (0..images)
                .map(|n| Image::url(format!("https://example.com/{text}-{n}.png")))
                .collect(),
            controls: None,
            by: None,
            tool_results: Vec::new(),
        })
    }

    fn called(id: &str) -> ChatEvent {
        ChatEvent::ToolCalled(ToolCalled {
            client: false,
            server: None,
            agent: "assistant".into(),
            tool_call_id: id.into(),
            tool: "current_time".into(),
            input: json!({}),
        })
    }

    fn returned(id: &str) -> ChatEvent {
        ChatEvent::ToolResult(ToolResult {
            agent: "assistant".into(),
            tool_call_id: id.into(),
            tool: "current_time".into(),
            output: json!({ "utc": "12:00" }),
            is_error: false,
        })
    }

    fn replied(text: &str) -> ChatEvent {
        ChatEvent::AssistantReplied(AssistantReplied { text: text.into() })
    }

    #[test]
    fn the_conversation_is_role_correct_with_tool_calls_and_their_results() {
        let state = fold(vec![
            said("Time?", 0),
            called("c1"),
            returned("c1"),
            replied("Noon."),
            said("Again?", 0),
            // What the interrupted call being resumed did: not part of the conversation.
            called("c2"),
        ]);
        assert_eq!(
            conversation(&state),
            [
                ChatMessage::user("Time?"),
                ChatMessage::tool_calls(
                    "",
                    vec![ChatToolCall {
                        id: "c1".into(),
                        name: "current_time".into(),
                        input: json!({}),
                    }]
                ),
                ChatMessage::tool_result("c1", "current_time", json!({ "utc": "12:00" }), false),
                ChatMessage::assistant("Noon."),
                ChatMessage::user("Again?"),
            ]
        );
    }

    #[test]
    fn a_call_without_its_result_is_left_out_with_it() {
        let state = fold(vec![said("Time?", 0), called("cut"), said("Hello?", 0)]);
        assert_eq!(
            conversation(&state),
            [ChatMessage::user("Time?"), ChatMessage::user("Hello?")]
        );
    }

    #[test]
    fn only_the_latest_images_are_sent_and_older_ones_are_marked() {
        let state = fold(vec![
            said("a", 3),
            replied("Three."),
            said("b", MAX_IMAGES_PER_REQUEST - 1),
        ]);
        let messages = conversation(&state);
        let ChatMessage::User { text, images } = &messages[0] else {
            panic!("{messages:?}");
        };
        assert_eq!(text, "a [2 images, no longer shown]");
        assert_eq!(images, &[Image::url("https://example.com/a-2.png")]);
        let ChatMessage::User { images, .. } = &messages[2] else {
            panic!("{messages:?}");
        };
        assert_eq!(images.len(), MAX_IMAGES_PER_REQUEST - 1);
    }

    #[test]
    fn the_assistant_asks_for_text_with_the_system_prompt() {
        let agent = ChatAgent::new("Be brief.", None, &[]);
        let input = UserInput::new("Hi");
        let state = fold(vec![ChatEvent::UserInput(input.clone())]);
        assert_eq!(agent.system(&state, &input).as_deref(), Some("Be brief."));
        assert_eq!(agent.prompt(&state, &input), "");
        assert_eq!(agent.messages(&state, &input), [ChatMessage::user("Hi")]);
        let schema = Arc::new(schemars::schema_for!(<ChatAgent as Agent>::Output).to_value());
        assert!(ProviderRequest::new("assistant", "", schema).wants_text());
        assert_eq!(
            ChatAgent::new("  ", None, &[]).system(&state, &input),
            None,
            "no system prompt at all rather than an empty one"
        );
    }
}
