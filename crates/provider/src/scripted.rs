//! [`ScriptedProvider`]: a deterministic provider that answers each agent from a script.
//!
//! Each agent has a first-in, first-out queue of [`Reply`]s. A call takes the next reply of the
//! agent named in the request; when the queue is empty, the agent's fallback (if one was set)
//! builds the reply from the request, and otherwise the call fails with
//! [`ProviderError::NoResponse`]. Every request is recorded, so tests can count calls and read
//! re-asks (`attempt`, `previous_error`) and what was sent (`system`, `messages`, `prompt`).
//! A request for plain text ([`ProviderRequest::wants_text`]) is answered like any other: script
//! its output as a JSON string (`Reply::output(json!("…")).text("…")`).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use openharness_core::{
    Provider, ProviderError,
    adapter::{
        ChatToolCall, ProviderEvent, ProviderRequest, ProviderResponse, ProviderResult,
        ProviderSink, Toolbox, Usage,
    },
};
use serde_json::Value;

/// The name a [`ScriptedProvider`] reports in errors and logs.
const NAME: &str = "scripted";

/// A reply built from the request, for agents whose calls are not known in advance.
type Fallback = Arc<dyn Fn(&ProviderRequest) -> Reply + Send + Sync>;

/// A [`Provider`] that answers from a script: per-agent queues of [`Reply`]s, optional
/// per-agent fallbacks, and a record of every request.
///
/// Cheap to clone: clones share the script and the record, so a test can keep one handle while
/// the workflow owns another.
///
/// ```
/// use openharness_core::{Provider, ProviderError, adapter::{ProviderRequest, ProviderSink}};
/// use openharness_provider::{Reply, ScriptedProvider};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let provider = ScriptedProvider::new()
///     .respond("planner", Reply::output(json!({ "tasks": 2 })))
///     .fallback("executor", |request| Reply::output(json!({ "done": request.prompt })));
/// let handle = provider.clone();
///
/// let ask = |agent: &str, prompt: &str| {
///     ProviderRequest::new(agent, prompt, Arc::new(json!({ "type": "object" })))
/// };
/// let planned = provider.complete(ask("planner", "plan"), ProviderSink::discard()).await.unwrap();
/// assert_eq!(planned.output, json!({ "tasks": 2 }));
///
/// // The planner's script is used up: a second call fails and says why.
/// let err = provider.complete(ask("planner", "again"), ProviderSink::discard()).await.unwrap_err();
/// assert!(matches!(err, ProviderError::NoResponse { .. }));
///
/// // The executor answers every call through its fallback.
/// for task in ["pack", "book"] {
///     let done = provider.complete(ask("executor", task), ProviderSink::discard()).await.unwrap();
///     assert_eq!(done.output, json!({ "done": task }));
/// }
/// assert_eq!(handle.calls(), 4);
/// assert_eq!(handle.calls_for("executor"), 2);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    script: Arc<Mutex<Script>>,
}

/// The shared state behind a [`ScriptedProvider`].
#[derive(Default)]
struct Script {
    /// Replies not yet used, per agent.
    replies: BTreeMap<String, VecDeque<Reply>>,
    /// How many replies were ever scripted, per agent (for error messages).
    scripted: BTreeMap<String, usize>,
    /// Fallbacks, per agent.
    fallbacks: BTreeMap<String, Fallback>,
    /// Every request received, in order.
    requests: Vec<ProviderRequest>,
    /// The wait of every reply that sets none of its own.
    pace: Option<Duration>,
}

impl Script {
    /// Why a call of `agent` has no reply (the queue is empty and there is no fallback).
    fn exhausted(&self, agent: &str) -> String {
        let calls = self.requests.iter().filter(|r| r.agent == agent).count();
        match self.scripted.get(agent).copied().unwrap_or(0) {
            0 if self.scripted.is_empty() && self.fallbacks.is_empty() => format!(
                "the script is empty; add a reply with `.respond(\"{agent}\", ...)` or a \
                 `.fallback(\"{agent}\", ...)`"
            ),
            0 => {
                let known: Vec<String> = self
                    .scripted
                    .keys()
                    .chain(self.fallbacks.keys())
                    .map(|a| format!("`{a}`"))
                    .collect();
                format!(
                    "no reply was scripted for this agent (the script answers {}); add one with \
                     `.respond(\"{agent}\", ...)` or a `.fallback(\"{agent}\", ...)`",
                    known.join(", ")
                )
            }
            n => format!(
                "all {n} scripted {replies} for this agent were used and this is call {calls}; \
                 script more with `.respond(\"{agent}\", ...)` or answer every call with \
                 `.fallback(\"{agent}\", ...)`",
                replies = if n == 1 { "reply" } else { "replies" },
            ),
        }
    }
}

/// What a call will answer with, decided while the script is locked.
enum Next {
    Reply(Reply),
    Fallback(Fallback),
    Exhausted(String),
}

impl ScriptedProvider {
    /// An empty script: every call fails with [`ProviderError::NoResponse`] until replies or
    /// fallbacks are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every reply that sets no [`Reply::delay`] of its own wait `delay` first: a slow
    /// model for the whole script, to watch turns run, cancel them or resume them.
    ///
    /// ```
    /// use openharness_provider::{Reply, ScriptedProvider};
    /// use std::time::Duration;
    /// let slow = ScriptedProvider::new()
    ///     .pace(Duration::from_millis(200))
    ///     .fallback("assistant", |_| Reply::output(serde_json::json!("hi")).text("hi"));
    /// # let _ = slow;
    /// ```
    #[must_use]
    pub fn pace(self, delay: Duration) -> Self {
        self.lock().pace = Some(delay);
        self
    }

    /// Queues `reply` for the next call of `agent` (replies to one agent are used in the order
    /// they were queued).
    #[must_use]
    pub fn respond(self, agent: impl Into<String>, reply: Reply) -> Self {
        self.respond_all(agent, [reply])
    }

    /// Queues several replies for `agent`, in order.
    ///
    /// ```
    /// use openharness_provider::{Reply, ScriptedProvider};
    /// use serde_json::json;
    /// let provider = ScriptedProvider::new()
    ///     .respond_all("critic", (1..=3).map(|round| Reply::output(json!({ "round": round }))));
    /// assert_eq!(provider.remaining("critic"), 3);
    /// ```
    #[must_use]
    pub fn respond_all(
        self,
        agent: impl Into<String>,
        replies: impl IntoIterator<Item = Reply>,
    ) -> Self {
        {
            let agent = agent.into();
            let mut script = self.lock();
            let queue = script.replies.entry(agent.clone()).or_default();
            let before = queue.len();
            queue.extend(replies);
            let added = queue.len() - before;
            *script.scripted.entry(agent).or_default() += added;
        }
        self
    }

    /// Answers the calls of `agent` that find its queue empty by calling `reply` with the
    /// request. Replaces an earlier fallback for the same agent.
    ///
    /// ```
    /// use openharness_provider::{Reply, ScriptedProvider};
    /// use serde_json::json;
    /// // An executor called once per task: echo the prompt back as the result.
    /// let provider = ScriptedProvider::new()
    ///     .fallback("executor", |request| Reply::output(json!({ "result": request.prompt })));
    /// ```
    #[must_use]
    pub fn fallback(
        self,
        agent: impl Into<String>,
        reply: impl Fn(&ProviderRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.lock().fallbacks.insert(agent.into(), Arc::new(reply));
        self
    }

    /// Every request received so far, in order (including those that failed).
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.lock().requests.clone()
    }

    /// How many requests were received so far.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// How many requests `agent` made so far.
    pub fn calls_for(&self, agent: &str) -> usize {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.agent == agent)
            .count()
    }

    /// How many scripted replies of `agent` are still unused (fallbacks not counted).
    pub fn remaining(&self, agent: &str) -> usize {
        self.lock().replies.get(agent).map_or(0, VecDeque::len)
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        // The script is left consistent at every await-free step, so a poisoned lock (a panic
        // in a test thread holding it) is safe to keep using.
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let script = self.lock();
        let remaining: BTreeMap<&str, usize> = script
            .replies
            .iter()
            .map(|(agent, queue)| (agent.as_str(), queue.len()))
            .collect();
        let fallbacks: Vec<&str> = script.fallbacks.keys().map(String::as_str).collect();
        f.debug_struct("ScriptedProvider")
            .field("remaining", &remaining)
            .field("fallbacks", &fallbacks)
            .field("calls", &script.requests.len())
            .finish()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        NAME
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let (next, pace) = {
            let mut script = self.lock();
            script.requests.push(request.clone());
            let agent = request.agent.as_str();
            let next = match script.replies.get_mut(agent).and_then(VecDeque::pop_front) {
                Some(reply) => Next::Reply(reply),
                None => match script.fallbacks.get(agent) {
                    Some(fallback) => Next::Fallback(Arc::clone(fallback)),
                    None => Next::Exhausted(script.exhausted(agent)),
                },
            };
            (next, script.pace)
        };
        let mut reply = match next {
            Next::Reply(reply) => reply,
            // Called without the lock held, so a fallback may read the provider's record.
            Next::Fallback(fallback) => fallback(&request),
            Next::Exhausted(message) => {
                return Err(ProviderError::NoResponse {
                    agent: request.agent,
                    message,
                });
            }
        };
        if reply.delay.is_none() {
            reply.delay = pace;
        }
        reply.play(&sink, &request.tools).await
    }
}

/// One scripted answer: what to stream, then the output (or an error), usage and cost.
///
/// ```
/// use openharness_core::adapter::Usage;
/// use openharness_provider::Reply;
/// use serde_json::json;
/// use std::time::Duration;
///
/// let reply = Reply::output(json!({ "answer": 42 }))
///     .text("Let me think. ")
///     .tool_call("call-1", "calculator", json!({ "expr": "6*7" }), json!(42))
///     .text("It is 42.")
///     .usage(Usage { input_tokens: 12, output_tokens: 5, ..Usage::default() })
///     .cost(0.0003)
///     .delay(Duration::from_millis(5));
/// let failing = Reply::error("the model is overloaded");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Reply {
    /// The final output, or the failure message.
    result: Result<Output, Failure>,
    /// What happens before answering, in order: events streamed as scripted, and real tool
    /// calls.
    steps: Vec<Step>,
    usage: Usage,
    cost: Option<f64>,
    delay: Option<Duration>,
}

impl Reply {
    /// A reply whose final output is `output` (checked against the agent's schema by the
    /// runtime, so a test can script invalid output to exercise re-asks).
    pub fn output(output: Value) -> Self {
        Self::with_result(Ok(Output::Value(output)))
    }

    /// A reply whose final output is made from the outputs of the tools it ran with
    /// [`Reply::run_tool`], in order (a failed tool gives its error message as a string): the
    /// script reads what the real tools returned, as a model would.
    ///
    /// ```
    /// use openharness_provider::Reply;
    /// use serde_json::json;
    /// let reply = Reply::output_with(|results| json!({ "status": results[0]["status"] }))
    ///     .run_tool("call-1", "lookup_order", json!({ "order": "A-17" }));
    /// # let _ = reply;
    /// ```
    pub fn output_with(make: impl Fn(&[Value]) -> Value + Send + Sync + 'static) -> Self {
        Self::with_result(Ok(Output::FromTools(MakeOutput(Arc::new(make)))))
    }

    /// A reply that fails the call with [`ProviderError::Failed`] carrying `message` (after
    /// streaming whatever the reply streams).
    pub fn error(message: impl Into<String>) -> Self {
        Self::with_result(Err(Failure::Error(message.into())))
    }

    /// A reply in which the model declines to answer: the call fails with
    /// [`ProviderError::Refused`] carrying `message` (which the runtime does not re-ask).
    pub fn refusal(message: impl Into<String>) -> Self {
        Self::with_result(Err(Failure::Refusal(message.into())))
    }

    fn with_result(result: Result<Output, Failure>) -> Self {
        Self {
            result,
            steps: Vec::new(),
            usage: Usage::default(),
            cost: None,
            delay: None,
        }
    }

    /// Streams `text` as [`ProviderEvent::TextDelta`]s, one per word with the whitespace after
    /// it, so the deltas concatenate to exactly `text`. May be called several times, around
    /// tool calls.
    ///
    /// ```
    /// use openharness_core::adapter::ProviderEvent;
    /// use openharness_provider::Reply;
    /// let reply = Reply::output(serde_json::Value::Null).text("Hello, big  world");
    /// let deltas: Vec<_> = reply
    ///     .streamed()
    ///     .into_iter()
    ///     .map(|event| match event {
    ///         ProviderEvent::TextDelta(delta) => delta.as_str(),
    ///         _ => unreachable!(),
    ///     })
    ///     .collect();
    /// assert_eq!(deltas, ["Hello, ", "big  ", "world"]);
    /// ```
    pub fn text(mut self, text: impl AsRef<str>) -> Self {
        self.steps.extend(
            chunks(text.as_ref())
                .into_iter()
                .map(|chunk| Step::Stream(ProviderEvent::TextDelta(chunk.to_owned()))),
        );
        self
    }

    /// Calls the agent's real tool `tool` with `input`, as a model asking for it would: the
    /// call and what the tool really returned (or its error) are streamed and recorded, and
    /// [`Reply::output_with`] can read the result. A tool the agent does not offer gives an
    /// error result naming the tools it does, as with a real model. Tests exercise tool code
    /// this way without a network.
    ///
    /// ```
    /// use openharness_core::{FnTool, Provider, adapter::{ProviderRequest, ProviderSink, Toolbox}};
    /// use openharness_provider::{Reply, ScriptedProvider};
    /// use serde_json::json;
    /// use std::sync::Arc;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Order { order: String }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let lookup = FnTool::new("lookup_order", "Finds an order.", |args: Order| async move {
    ///     Ok::<_, String>(json!({ "order": args.order, "status": "shipped" }))
    /// });
    /// let provider = ScriptedProvider::new().respond(
    ///     "support",
    ///     Reply::output_with(|results| json!({ "reply": results[0]["status"] }))
    ///         .run_tool("call-1", "lookup_order", json!({ "order": "A-17" })),
    /// );
    /// let request = ProviderRequest::new("support", "Where is A-17?", Arc::new(json!({})))
    ///     .with_tools(Toolbox::new(vec![Arc::new(lookup)]));
    /// let sink = ProviderSink::discard();
    /// let answer = provider.complete(request, sink).await.unwrap();
    /// assert_eq!(answer.output, json!({ "reply": "shipped" }));
    /// # });
    /// ```
    pub fn run_tool(
        mut self,
        id: impl Into<String>,
        tool: impl Into<String>,
        input: Value,
    ) -> Self {
        self.steps.push(Step::RunTool {
            id: id.into(),
            tool: tool.into(),
            input,
        });
        self
    }

    /// Streams a tool call and a scripted result, without calling the tool (see
    /// [`Reply::run_tool`] to call the real one).
    pub fn tool_call(
        self,
        id: impl Into<String>,
        tool: impl Into<String>,
        input: Value,
        output: Value,
    ) -> Self {
        self.streamed_call(id.into(), tool.into(), input, output, false)
    }

    /// Streams a tool call whose tool failed with `message`.
    pub fn tool_error(
        self,
        id: impl Into<String>,
        tool: impl Into<String>,
        input: Value,
        message: impl Into<String>,
    ) -> Self {
        let output = Value::String(message.into());
        self.streamed_call(id.into(), tool.into(), input, output, true)
    }

    /// Streams the call of `tool` and the result scripted for it (of [`Reply::tool_call`] and
    /// [`Reply::tool_error`]).
    fn streamed_call(
        mut self,
        id: String,
        tool: String,
        input: Value,
        output: Value,
        is_error: bool,
    ) -> Self {
        self.steps.push(Step::Stream(ProviderEvent::ToolCalled {
            server: None,
            id: id.clone(),
            tool: tool.clone(),
            input,
        }));
        self.steps.push(Step::Stream(ProviderEvent::ToolResult {
            id,
            tool,
            output,
            is_error,
        }));
        self
    }

    /// Sets the tokens this request reports.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the cost (US dollars) this request reports.
    pub fn cost(mut self, cost: f64) -> Self {
        self.cost = Some(cost);
        self
    }

    /// Waits this long (a tokio sleep) before streaming and answering: a slow model, for
    /// cancellation and timeout tests.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Streams `text` word by word (as [`Reply::text`]) over about `over`: a wait of an equal
    /// share before each word, as a model that writes slowly — for watching a reply stream.
    ///
    /// ```
    /// use openharness_provider::Reply;
    /// use std::time::Duration;
    /// let reply = Reply::output(serde_json::json!("Hi there")).text_over("Hi there", Duration::from_millis(10));
    /// assert_eq!(reply.streamed().len(), 2);
    /// ```
    pub fn text_over(mut self, text: impl AsRef<str>, over: Duration) -> Self {
        let words = chunks(text.as_ref());
        let wait = over / u32::try_from(words.len().max(1)).unwrap_or(u32::MAX);
        for word in words {
            self.steps.push(Step::Wait(wait));
            self.steps
                .push(Step::Stream(ProviderEvent::TextDelta(word.to_owned())));
        }
        self
    }

    /// What the reply streams as scripted before answering, in order (without the calls of
    /// [`Reply::run_tool`], whose results are only known when it plays).
    pub fn streamed(&self) -> Vec<&ProviderEvent> {
        self.steps
            .iter()
            .filter_map(|step| match step {
                Step::Stream(event) => Some(event),
                Step::RunTool { .. } | Step::Wait(_) => None,
            })
            .collect()
    }

    /// Sleeps, streams, then answers.
    async fn play(self, sink: &ProviderSink, tools: &Toolbox) -> ProviderResult {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let mut results = Vec::new();
        let mut client_calls = Vec::new();
        for step in self.steps {
            match step {
                Step::Stream(event) => sink.emit(event),
                Step::Wait(wait) => tokio::time::sleep(wait).await,
                // A client's tool is not run: the call ends with it (see `ClientTool`).
                Step::RunTool { id, tool, input } if tools.runs_on_client(&tool) => {
                    sink.client_tool_called(&id, &tool, input.clone());
                    client_calls.push(ChatToolCall {
                        id,
                        name: tool,
                        input,
                    });
                }
                Step::RunTool { id, tool, input } => {
                    let (output, _) = sink.call_tool(tools, &id, &tool, input).await;
                    results.push(output);
                }
            }
        }
        if !client_calls.is_empty() {
            return Ok(ProviderResponse {
                output: Value::String(sink.text()),
                usage: self.usage,
                cost: self.cost,
                client_calls,
            });
        }
        match self.result {
            Ok(output) => Ok(ProviderResponse::new(
                match output {
                    Output::Value(value) => value,
                    Output::FromTools(make) => (make.0)(&results),
                },
                self.usage,
                self.cost,
            )),
            Err(Failure::Error(message)) => Err(ProviderError::Failed {
                provider: NAME.to_owned(),
                message,
            }),
            Err(Failure::Refusal(message)) => Err(ProviderError::Refused {
                provider: NAME.to_owned(),
                message,
            }),
        }
    }
}

/// One thing a reply does before answering.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Streams this event as scripted.
    Stream(ProviderEvent),
    /// Waits this long before the next step.
    Wait(Duration),
    /// Calls the agent's real tool and streams the call and its result.
    RunTool {
        id: String,
        tool: String,
        input: Value,
    },
}

/// A reply's final output: scripted, or made from its tools' results.
#[derive(Debug, Clone, PartialEq)]
enum Output {
    Value(Value),
    FromTools(MakeOutput),
}

/// Makes an output from tool results.
type MakeOutputFn = dyn Fn(&[Value]) -> Value + Send + Sync;

/// The function of [`Reply::output_with`]; equal only to itself.
#[derive(Clone)]
struct MakeOutput(Arc<MakeOutputFn>);

impl fmt::Debug for MakeOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MakeOutput(…)")
    }
}

impl PartialEq for MakeOutput {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How a scripted reply fails.
#[derive(Debug, Clone, PartialEq)]
enum Failure {
    Error(String),
    Refusal(String),
}

/// Splits `text` into words, each keeping the whitespace that follows it (leading whitespace
/// stays with the first word), so the chunks concatenate to `text`. Empty text gives no chunks.
fn chunks(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut seen_word = false;
    let mut after_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && after_space && seen_word {
            chunks.push(&text[start..i]);
            start = i;
        }
        seen_word |= !space;
        after_space = space;
    }
    if start < text.len() {
        chunks.push(&text[start..]);
    }
    chunks
}

#[cfg(test)]
mod tests;
