//! The chat example: a workflow whose state is the conversation. Each `user:input` opens an
//! exchange; the assistant agent answers it with structured output (`{ reply }`), recorded as
//! `assistant:replied`. A conversation is ONE session that grows turn by turn
//! ([`Workflow::send`]); its state after any turn is a fold of its whole log, and its tape
//! steps back across turns.
//!
//! ```text
//! turn 1: workflow:started, user:input ──▶ assistant ──▶ assistant:replied, workflow:completed (idle)
//! turn 2:                   user:input ──▶ assistant ──▶ assistant:replied, workflow:completed (idle)
//! ...
//! ```
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), openharness::Error> {
//! use openharness::prelude::*;
//! use openharness::store::MemoryStore;
//! use openharness_example_chat as chat;
//!
//! let workflow = chat::workflow(MemoryStore::new(), chat::scripted_provider())?;
//! let first = workflow.run(RunOptions::new().input("Hello!")).await?;
//! let second = workflow.send(&first.session, "What can you do?", RunOptions::new()).await?;
//! assert_eq!(second.state.exchanges.len(), 2);
//! assert_eq!(second.reason, StopReason::Idle);
//! # Ok(()) }
//! ```

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::{Error, Provider, schemars};
use serde::{Deserialize, Serialize};

/// The name sessions of this workflow are recorded under.
pub const WORKFLOW_NAME: &str = "chat";

/// What the offline binary says, one message per turn.
pub const DEMO_MESSAGES: [&str; 3] = [
    "Hi! I'm planning a trip to Lisbon.",
    "What should I see on the first day?",
    "And where should I eat in the evening?",
];

/// The assistant answered the latest message.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantReplied {
    /// The answer.
    pub reply: String,
}

/// Every event the chat's handlers react to.
#[event]
pub enum ChatEvent {
    /// A person's message.
    UserInput,
    /// The assistant's answer.
    AssistantReplied,
}

/// One message and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the person said.
    pub user: String,
    /// What the assistant answered (none while it is thinking).
    pub reply: Option<String>,
}

/// The chat's state: the conversation so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatState {
    /// Every exchange, oldest first.
    pub exchanges: Vec<Exchange>,
}

impl ChatState {
    /// The conversation as a transcript, one `User:` / `Assistant:` line per message.
    pub fn transcript(&self) -> String {
        let mut lines = Vec::new();
        for exchange in &self.exchanges {
            lines.push(format!("User: {}", exchange.user));
            if let Some(reply) = &exchange.reply {
                lines.push(format!("Assistant: {reply}"));
            }
        }
        lines.join("\n")
    }
}

#[handler(ChatEvent)]
impl ChatState {
    fn said(&mut self, input: &UserInput) {
        self.exchanges.push(Exchange {
            user: input.text.clone(),
            reply: None,
        });
    }

    fn replied(&mut self, replied: &AssistantReplied) {
        if let Some(last) = self.exchanges.last_mut() {
            last.reply = Some(replied.reply.clone());
        }
    }
}

/// The assistant's structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatReply {
    /// The answer to the person's latest message, in a few sentences.
    pub reply: String,
}

/// Answers each message, seeing the whole conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Assistant;

#[agent(output = ChatReply, emits = [AssistantReplied])]
impl Assistant {
    fn prompt(&self, state: &ChatState, _input: &UserInput) -> String {
        format!(
            "You are a helpful assistant. Answer the user's latest message in a few sentences.\n\nConversation:\n{}",
            state.transcript()
        )
    }

    fn on_output(&self, reply: ChatReply, _input: &UserInput) -> AssistantReplied {
        AssistantReplied { reply: reply.reply }
    }
}

/// The chat workflow, recording to `store` and asking `provider`. A turn ends idle once the
/// assistant has answered; [`Workflow::send`] continues the conversation.
pub fn workflow(store: impl Store, provider: impl Provider) -> Result<Workflow<ChatState>, Error> {
    Workflow::builder(WORKFLOW_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .initial_state(ChatState::default())
        .agent(Assistant)
        .store(store)
        .provider(provider)
        .build()
}

/// An offline model for the chat: it answers every message by quoting it and counting the
/// conversation's messages (read from the prompt, so a continued session counts on).
pub fn scripted_provider() -> ScriptedProvider {
    ScriptedProvider::new().fallback(Assistant::NAME, |request| {
        Reply::output(serde_json::json!({ "reply": offline_reply(&request.prompt) }))
    })
}

/// The offline model of [`scripted_provider`], streaming its structured output as a real
/// model does: the JSON text (`{"reply": "…"}`) word by word over about `over`, so a chat
/// client shows the reply growing.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), openharness::Error> {
/// use openharness::prelude::*;
/// use openharness::store::MemoryStore;
/// use openharness_example_chat as chat;
/// let provider = chat::streaming_provider(std::time::Duration::from_millis(20));
/// let workflow = chat::workflow(MemoryStore::new(), provider)?;
/// let outcome = workflow.run(RunOptions::new().input("Hello!")).await?;
/// assert_eq!(outcome.state.exchanges[0].reply.as_deref(), Some(chat::offline_reply("User: Hello!").as_str()));
/// # Ok(()) }
/// ```
pub fn streaming_provider(over: std::time::Duration) -> ScriptedProvider {
    ScriptedProvider::new().fallback(Assistant::NAME, move |request| {
        let output = serde_json::json!({ "reply": offline_reply(&request.prompt) });
        Reply::output(output.clone()).text_over(output.to_string(), over)
    })
}

/// What the offline model answers to a prompt holding the conversation's `User:` lines.
pub fn offline_reply(prompt: &str) -> String {
    let said: Vec<&str> = prompt
        .lines()
        .filter_map(|line| line.strip_prefix("User: "))
        .collect();
    let latest = said.last().copied().unwrap_or("");
    format!(
        "(offline) You said \"{latest}\"; that is message {} of our conversation.",
        said.len()
    )
}
