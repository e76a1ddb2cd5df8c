//! The inbox workflow (feature `fixtures`), for suites about what happens while a turn runs:
//! every input is kept ([`Inbox::inputs`]), and the agent `clerk` answers each with a note of
//! every input so far, joined by ` + `. The input `ask` also asks a person a question
//! (`which?`); the answer is kept as `answered <text>`, and the agent `closer` notes every
//! input so far after it. Its model ([`Gated`]) holds every call whose prompt
//! ends with `slow` until the test lets it go, then takes what was steered into the call (as a
//! tool loop does before its next model call) and notes it after ` | steered: `.

use std::sync::Arc;

use async_trait::async_trait;
use openharness::adapter::{ProviderRequest, ProviderResult, ProviderSink};
use openharness::builtin::InputSteered;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::{Provider, Store};
use tokio::sync::Semaphore;

/// A note of the inputs so far.
#[event]
#[derive(Debug, Clone)]
pub struct NoteTaken {
    /// The note.
    pub text: String,
}

/// The events [`Inbox`] folds.
#[event]
pub enum InboxEvent {
    /// An input.
    UserInput,
    /// A person's answer.
    InputReceived,
    /// An input steered into the running call.
    InputSteered,
    /// A note.
    NoteTaken,
}

/// Every input, every steered input and every note, in order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Inbox {
    /// The inputs (`user:input`).
    pub inputs: Vec<String>,
    /// The inputs steered into a running call (`input:steered`).
    pub steered: Vec<String>,
    /// The notes.
    pub notes: Vec<String>,
}

#[handler(InboxEvent)]
impl Inbox {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.inputs.push(input.text.clone());
        if input.text == "ask" {
            Emit::one(InputRequested::new("which?"))
        } else {
            Emit::none()
        }
    }
    fn answered(&mut self, answer: &InputReceived) {
        self.inputs.push(format!("answered {}", answer.text));
    }
    fn steered(&mut self, steered: &InputSteered) {
        self.steered.push(steered.text.clone());
    }
    fn noted(&mut self, note: &NoteTaken) {
        self.notes.push(note.text.clone());
    }
}

/// What the clerk's model answers: `{"note": …}`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Note {
    /// The note.
    pub note: String,
}

/// The agent `clerk`: prompted with every input so far, joined by ` + `.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clerk;

#[agent(output = Note, emits = [NoteTaken])]
impl Clerk {
    fn prompt(&self, state: &Inbox, _input: &UserInput) -> String {
        state.inputs.join(" + ")
    }
    fn on_output(&self, out: Note, _input: &UserInput) -> NoteTaken {
        NoteTaken { text: out.note }
    }
}

/// The agent `closer`: prompted, once a question is answered, with every input so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Closer;

#[agent(output = Note, emits = [NoteTaken])]
impl Closer {
    fn prompt(&self, state: &Inbox, _answer: &InputReceived) -> String {
        state.inputs.join(" + ")
    }
    fn on_output(&self, out: Note, _answer: &InputReceived) -> NoteTaken {
        NoteTaken { text: out.note }
    }
}

/// A model that holds every call whose prompt (or, for a chat agent with no prompt, whose
/// latest user message) ends with "slow" until the gate lets it go, then takes what was
/// steered into the call (as a tool loop does before its next model call), appends it to the
/// prompt after ` | steered: `, and lets `inner` answer.
pub struct Gated {
    gate: Arc<Semaphore>,
    inner: ScriptedProvider,
}

impl Gated {
    /// `inner` behind `gate` (each permit lets one held call go).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use openharness::provider::ScriptedProvider;
    /// use openharness_testkit::inbox::Gated;
    /// let gate = Arc::new(tokio::sync::Semaphore::new(0));
    /// let model = Gated::new(Arc::clone(&gate), ScriptedProvider::new());
    /// # let _ = model;
    /// ```
    pub fn new(gate: Arc<Semaphore>, inner: ScriptedProvider) -> Self {
        Self { gate, inner }
    }
}

#[async_trait]
impl Provider for Gated {
    fn name(&self) -> &str {
        "gated"
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let held = if request.prompt.is_empty() {
            request.latest_user_text().unwrap_or_default()
        } else {
            &request.prompt
        };
        if held.ends_with("slow") {
            // Each permit lets one held call go.
            if let Ok(permit) = self.gate.acquire().await {
                permit.forget();
            }
        }
        let steered = sink.take_steered();
        let mut request = request;
        if !steered.is_empty() {
            request.prompt = format!("{} | steered: {}", request.prompt, steered.join(", "));
        }
        self.inner.complete(request, sink).await
    }
}

/// The workflow `inbox` recording to `store`, asking a [`Gated`] model, and its gate (closed).
///
/// ```
/// use openharness_testkit::inbox::gated_inbox;
/// let (inbox, gate) = gated_inbox(openharness::store::MemoryStore::new());
/// gate.add_permits(1); // lets one held call go
/// # let _ = inbox;
/// ```
pub fn gated_inbox(store: impl Store) -> (Workflow<Inbox>, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let provider = Gated::new(
        Arc::clone(&gate),
        ScriptedProvider::new()
            .fallback("clerk", |request| {
                Reply::output(serde_json::json!({ "note": request.prompt.clone() }))
            })
            .fallback("closer", |request| {
                Reply::output(serde_json::json!({ "note": request.prompt.clone() }))
            }),
    );
    let inbox = Workflow::builder("inbox")
        .initial_state(Inbox::default())
        .agent(Clerk)
        .agent(Closer)
        .store(store)
        .provider(provider)
        .build()
        .unwrap_or_else(|err| unreachable!("the inbox workflow is well formed: {err}"));
    (inbox, gate)
}
