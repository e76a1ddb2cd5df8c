//! The built-in agent-chat workflow every platform session runs: its state is the
//! conversation; each `user:input` makes the `assistant` agent answer (with the agent's system
//! prompt, its capabilities' additions and tools, the model the message, session or agent
//! names, the conversation's images and the message's reasoning effort), recorded as
//! `assistant:replied {text}`. It is an ordinary Open Harness workflow, so a platform
//! session's log can be stepped through, forked and replayed like any other.

use std::sync::Arc;

use openharness_core::{
    Agent, BoxedProvider, Decoded, Emit, Error, Event, EventSet, FnTool, Handler, Image, Provider,
    ProviderError, ProviderRequest, ProviderResponse, ProviderSink, ReasoningEffort, Store, Tool,
    Workflow,
};
use serde::{Deserialize, Serialize};

/// The name platform sessions are recorded under (in `workflow:started`).
pub const WORKFLOW_NAME: &str = "agent-chat";

/// The assistant answered the latest message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssistantReplied {
    /// The answer.
    pub text: String,
}

impl Event for AssistantReplied {
    const NAME: &'static str = "assistant:replied";
}

/// A person's message as the agent-chat workflow reads its `user:input`: the text, with the
/// images and controls the platform records beside it (older recordings without them decode
/// too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserMessage {
    /// What the person wrote (empty for a message of images only).
    pub text: String,
    /// The message's images, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The controls posted with the message, as recorded (see [`crate::Controls`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<serde_json::Value>,
}

impl Event for UserMessage {
    const NAME: &'static str = "user:input";
}

impl UserMessage {
    /// The reasoning effort the message asked for (`controls.reasoning.effort`), if it named a
    /// known one.
    ///
    /// ```
    /// use openharness_core::ReasoningEffort;
    /// use openharness_platform::UserMessage;
    /// let message: UserMessage = serde_json::from_value(serde_json::json!({
    ///     "text": "Think hard.", "controls": { "reasoning": { "effort": "high" } }
    /// }))?;
    /// assert_eq!(message.reasoning_effort(), Some(ReasoningEffort::High));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        let effort = self.controls.as_ref()?.get("reasoning")?.get("effort")?;
        serde_json::from_value(effort.clone()).ok()
    }
}

/// The events the conversation folds.
#[derive(Debug, Clone)]
pub enum ChatEvent {
    /// A person's message.
    UserInput(UserMessage),
    /// The assistant's answer.
    AssistantReplied(AssistantReplied),
}

impl EventSet for ChatEvent {
    const NAMES: &'static [&'static str] = &[UserMessage::NAME, AssistantReplied::NAME];

    fn name(&self) -> &'static str {
        match self {
            Self::UserInput(_) => UserMessage::NAME,
            Self::AssistantReplied(_) => AssistantReplied::NAME,
        }
    }

    fn decode(name: &str, payload: &serde_json::Value) -> Result<Decoded<Self>, serde_json::Error> {
        Ok(match name {
            UserMessage::NAME => {
                Decoded::Known(Self::UserInput(UserMessage::deserialize(payload)?))
            }
            AssistantReplied::NAME => Decoded::Known(Self::AssistantReplied(
                AssistantReplied::deserialize(payload)?,
            )),
            _ => Decoded::Unknown,
        })
    }

    fn to_payload(&self) -> Result<serde_json::Value, serde_json::Error> {
        match self {
            Self::UserInput(input) => serde_json::to_value(input),
            Self::AssistantReplied(replied) => serde_json::to_value(replied),
        }
    }
}

/// One line of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatLine {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub text: String,
    /// The images a user's line held, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// The conversation so far: the agent-chat workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatState {
    /// Every message, oldest first.
    pub lines: Vec<ChatLine>,
}

impl Handler for ChatState {
    type Events = ChatEvent;

    fn apply(&mut self, event: &ChatEvent) -> Emit {
        let (role, text, images) = match event {
            ChatEvent::UserInput(input) => ("user", &input.text, input.images.clone()),
            ChatEvent::AssistantReplied(replied) => ("assistant", &replied.text, Vec::new()),
        };
        self.lines.push(ChatLine {
            role: role.to_owned(),
            text: text.clone(),
            images,
        });
        Emit::none()
    }
}

/// The assistant's structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatReply {
    /// The answer to the latest message.
    pub reply: String,
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
/// up to 100 per request, and every image costs input tokens on every turn); the transcript
/// marks older ones as not shown.
pub const MAX_IMAGES_PER_REQUEST: usize = 20;

/// The conversation's images, numbered from 1 in order, with whether each is sent.
fn numbered_images(state: &ChatState) -> impl Iterator<Item = (usize, &Image, bool)> {
    let total: usize = state.lines.iter().map(|line| line.images.len()).sum();
    let first_sent = total.saturating_sub(MAX_IMAGES_PER_REQUEST);
    state
        .lines
        .iter()
        .flat_map(|line| &line.images)
        .enumerate()
        .map(move |(index, image)| (index + 1, image, index >= first_sent))
}

impl Agent for ChatAgent {
    type State = ChatState;
    type Trigger = UserMessage;
    type Output = ChatReply;
    const NAME: &'static str = "assistant";
    const EMITS: &'static [&'static str] = &[AssistantReplied::NAME];

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn prompt(&self, state: &ChatState, _input: &UserMessage) -> String {
        let mut numbers = numbered_images(state);
        let transcript: Vec<String> = state
            .lines
            .iter()
            .map(|line| {
                let who = if line.role == "user" {
                    "User"
                } else {
                    "Assistant"
                };
                let mut said = line.text.clone();
                for (number, _, sent) in numbers.by_ref().take(line.images.len()) {
                    let mark = if sent {
                        format!("[image {number}]")
                    } else {
                        format!("[image {number}, no longer shown]")
                    };
                    said = if said.is_empty() {
                        mark
                    } else {
                        format!("{said} {mark}")
                    };
                }
                format!("{who}: {said}")
            })
            .collect();
        format!(
            "{}\n\nAnswer the user's latest message.\n\nConversation:\n{}",
            self.system_prompt,
            transcript.join("\n")
        )
    }

    fn images(&self, state: &ChatState, _input: &UserMessage) -> Vec<Image> {
        numbered_images(state)
            .filter(|(_, _, sent)| *sent)
            .map(|(_, image, _)| image.clone())
            .collect()
    }

    fn reasoning(&self, _state: &ChatState, input: &UserMessage) -> Option<ReasoningEffort> {
        input.reasoning_effort()
    }

    fn on_output(&self, output: ChatReply, _input: &UserMessage) -> Emit {
        Emit::one(AssistantReplied { text: output.reply })
    }
}

/// A shared provider as a [`Provider`] value.
struct Shared(BoxedProvider);

#[async_trait::async_trait]
impl Provider for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn complete(
        &self,
        request: ProviderRequest,
        sink: ProviderSink,
    ) -> Result<ProviderResponse, ProviderError> {
        self.0.complete(request, sink).await
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
        .provider(Shared(provider))
        .build()
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
