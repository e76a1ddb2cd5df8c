//! The mapping from a session's log to spans ([`SessionSpans`]), after the GenAI semantic
//! conventions (status "Development"):
//!
//! - a turn (`workflow:started` … `workflow:completed`, or a fork's `session:forked` …) is a
//!   root span `invoke_workflow {workflow}`, the root of a trace of its own;
//! - an agent call (`agent:started` … `agent:completed`) is `invoke_agent {agent}` under it,
//!   with the tokens used (`gen_ai.usage.*`) and an error status when it failed;
//! - each model call in it is `chat {model}`: the first from `agent:started` to the first
//!   `tool:called` (or to `agent:completed`), the next from the last `tool:result` of a round
//!   to the next call or the end;
//! - each tool call (`tool:called` … `tool:result`) is `execute_tool {tool}` under the agent
//!   call, an error when the tool failed.
//!
//! Every id is derived from the session id and the seq of the event that opened the span
//! ([`crate::trace_id`]), every time is a recorded timestamp, so mapping the same log twice
//! gives the same spans. A fork's first span links to its parent's span at the fork position
//! ([`SessionSpans::link_fork`]). Prompts, messages, outputs and tool arguments and results are
//! left out unless [`SpanOptions::content`] turns them on.
//!
//! The mapping is streaming: [`SessionSpans::push`] takes one event and returns the spans it
//! closed, so memory is bounded by the spans open at once, not by the session's length.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use openharness_core::builtin::{
    AgentCompleted, AgentStarted, Builtin, ErrorOccurred, Outcome, OutputRejected, SessionForked,
    ToolCalled, ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Envelope, Event, EventId, SessionId};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};

use crate::ids::{Role, span_id, trace_id};
use crate::span::{Span, SpanEvent, SpanRef};

/// What goes into the spans beyond the structure, ids, times, names and token counts.
///
/// ```
/// use openharness_otel::SpanOptions;
/// let options = SpanOptions::default().content(true);
/// assert!(options.records_content());
/// assert!(!SpanOptions::default().records_content());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpanOptions {
    content: bool,
    replay: bool,
}

impl SpanOptions {
    /// Whether to record content: prompts and system instructions
    /// (`gen_ai.system_instructions`, `gen_ai.input.messages`), outputs
    /// (`gen_ai.output.messages`), tool arguments and results (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`) and the user's input. Off by default: a trace backend then
    /// sees the shape of a run, its models, tools, times and tokens, never what was said.
    pub fn content(mut self, on: bool) -> Self {
        self.content = on;
        self
    }

    /// Whether content is recorded.
    pub fn records_content(&self) -> bool {
        self.content
    }

    /// Marks every span `openharness.replay = true`: for exporting a re-execution (a cassette
    /// replay, whose agents were answered from a recording) so that a backend does not count its
    /// model calls as real ones.
    pub fn replay(mut self, replay: bool) -> Self {
        self.replay = replay;
        self
    }
}

/// An open span and what is needed to close it.
#[derive(Debug)]
struct Open {
    span: Span,
}

#[derive(Debug)]
struct OpenTurn {
    open: Open,
    /// Opened by `session:forked` and not yet named by a `workflow:started`.
    forked: bool,
}

#[derive(Debug)]
struct OpenAgent {
    open: Open,
    agent: String,
    trigger: Option<EventId>,
    model: Option<String>,
    /// The recorded provider (`agent:started`'s), when there is one.
    provider: Option<String>,
    chat: Option<Open>,
    chats: u32,
    tools: Vec<(String, Open)>,
}

/// A session's log, event by event, turned into spans. See the module docs for the shape.
///
/// ```
/// use openharness_core::{Envelope, SessionId};
/// use openharness_otel::{SessionSpans, SpanOptions};
/// use serde_json::json;
///
/// let events = [
///     Envelope::new("workflow:started", json!({ "workflow": "triage" }), None),
///     Envelope::new("agent:started", json!({ "agentName": "clerk", "model": "m1", "prompt": "file it" }), None),
///     Envelope::new("agent:completed", json!({ "agentName": "clerk", "outcome": "success",
///         "usage": { "inputTokens": 12, "outputTokens": 3 } }), None),
///     Envelope::new("workflow:completed", json!({ "reason": "idle" }), None),
/// ];
/// let spans = SessionSpans::map("s-1".parse().unwrap(), &events, SpanOptions::default());
/// let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
/// assert_eq!(names, ["chat m1", "invoke_agent clerk", "invoke_workflow triage"]);
/// assert_eq!(spans[1].parent, Some(spans[2].span_id));
/// assert_eq!(spans[1].attribute("gen_ai.usage.input_tokens").map(|v| v.to_string()), Some("12".into()));
/// // The same log, the same ids.
/// assert_eq!(spans, SessionSpans::map("s-1".parse().unwrap(), &events, SpanOptions::default()));
/// ```
#[derive(Debug)]
pub struct SessionSpans {
    session: SessionId,
    /// The session id as an attribute value, shared by every span (no copy per span).
    conversation: opentelemetry::StringValue,
    options: SpanOptions,
    turn: Option<OpenTurn>,
    agents: Vec<OpenAgent>,
    fork_link: Option<SpanRef>,
    last_turn: Option<SpanRef>,
    last_time: Option<DateTime<Utc>>,
    calls: HashSet<(String, Option<EventId>)>,
}

impl SessionSpans {
    /// A mapping of `session`'s log, from its first event.
    pub fn new(session: SessionId, options: SpanOptions) -> Self {
        Self {
            conversation: opentelemetry::StringValue::from(std::sync::Arc::<str>::from(
                session.as_str(),
            )),
            session,
            options,
            turn: None,
            agents: Vec::new(),
            fork_link: None,
            last_turn: None,
            last_time: None,
            calls: HashSet::new(),
        }
    }

    /// Every span of a whole log (`events[i]` has seq `i`), open spans closed at the last event.
    pub fn map(session: SessionId, events: &[Envelope], options: SpanOptions) -> Vec<Span> {
        let mut spans = Self::new(session, options);
        let mut out = Vec::new();
        for (seq, event) in (0u64..).zip(events) {
            out.extend(spans.push(seq, event));
        }
        out.extend(spans.finish());
        out
    }

    /// The session this maps.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Links the span a `session:forked` opens to `parent` (the parent session's span at the
    /// fork position, [`position_span`](Self::position_span) of a mapping of the parent's first
    /// `forkIndex` events). Call it before pushing the `session:forked`.
    pub fn link_fork(&mut self, parent: SpanRef) {
        self.fork_link = Some(parent);
    }

    /// Whether no span is open: the mapping may be dropped and a new one started at the next
    /// turn.
    pub fn is_idle(&self) -> bool {
        self.turn.is_none() && self.agents.is_empty()
    }

    /// The span the log is in after the events pushed so far: the innermost open one (a tool
    /// call, else a model call, else an agent call, else the turn), else the last turn. This is
    /// what a fork at this position links to.
    pub fn position_span(&self) -> Option<SpanRef> {
        if let Some(agent) = self.agents.last() {
            if let Some((_, tool)) = agent.tools.last() {
                return Some(tool.span.reference());
            }
            if let Some(chat) = &agent.chat {
                return Some(chat.span.reference());
            }
            return Some(agent.open.span.reference());
        }
        match &self.turn {
            Some(turn) => Some(turn.open.span.reference()),
            None => self.last_turn,
        }
    }

    /// Whether events named `name` take part in the spans: the built-in events of turns, agent
    /// and tool calls, forks, errors and rejected outputs. Others (a workflow's own events,
    /// streamed text) are skipped whole, so a live export need not even queue them.
    ///
    /// ```
    /// use openharness_otel::SessionSpans;
    /// assert!(SessionSpans::maps("agent:started"));
    /// assert!(!SessionSpans::maps("text:delta"));
    /// assert!(!SessionSpans::maps("plan:created"));
    /// ```
    pub fn maps(name: &str) -> bool {
        [
            WorkflowStarted::NAME,
            WorkflowCompleted::NAME,
            SessionForked::NAME,
            UserInput::NAME,
            AgentStarted::NAME,
            AgentCompleted::NAME,
            ToolCalled::NAME,
            ToolResult::NAME,
            ErrorOccurred::NAME,
            OutputRejected::NAME,
        ]
        .contains(&name)
    }

    /// Takes the event at `seq` and returns the spans it closed (innermost first). Events that
    /// do not [take part](Self::maps) are skipped; spans left open at the end close at the last
    /// event that does.
    pub fn push(&mut self, seq: u64, event: &Envelope) -> Vec<Span> {
        let mut closed = Vec::new();
        if !Self::maps(&event.name) {
            return closed;
        }
        let time = event.timestamp;
        match Builtin::decode(event) {
            Some(Ok(Builtin::WorkflowStarted(started))) => {
                self.workflow_started(seq, time, &started, &mut closed);
            }
            Some(Ok(Builtin::SessionForked(forked))) => {
                self.session_forked(seq, time, &forked, &mut closed);
            }
            Some(Ok(Builtin::WorkflowCompleted(completed))) => {
                self.workflow_completed(time, &completed, &mut closed);
            }
            Some(Ok(Builtin::UserInput(input))) => self.user_input(&input),
            Some(Ok(Builtin::AgentStarted(started))) => {
                self.agent_started(seq, time, event.caused_by, &started);
            }
            Some(Ok(Builtin::AgentCompleted(completed))) => {
                self.agent_completed(time, event.caused_by, &completed, &mut closed);
            }
            Some(Ok(Builtin::ToolCalled(called))) => {
                self.tool_called(seq, time, &called, &mut closed)
            }
            Some(Ok(Builtin::ToolResult(result))) => {
                self.tool_result(seq, time, &result, &mut closed)
            }
            Some(Ok(Builtin::ErrorOccurred(error))) => self.error_occurred(time, &error),
            Some(Ok(Builtin::OutputRejected(rejected))) => self.output_rejected(time, &rejected),
            Some(Ok(_)) | None => {}
            Some(Err(err)) => {
                tracing::debug!(session = %self.session, seq, name = %event.name, %err, "an event that does not decode is left out of the spans");
            }
        }
        self.last_time = Some(self.last_time.map_or(time, |last| last.max(time)));
        closed
    }

    /// Closes every span still open at the last event's time, marked
    /// `openharness.unfinished = true` with an error status: the session's log ends inside
    /// them (a turn under way, or a process that died).
    pub fn finish(mut self) -> Vec<Span> {
        let mut closed = Vec::new();
        if let Some(time) = self.last_time {
            self.close_turn(time, true, &mut closed);
        }
        closed
    }

    /// A new span of `role`, opened by the event at `seq` recorded at `time`.
    fn base(
        &self,
        role: Role,
        (seq, time): (u64, DateTime<Utc>),
        (trace, parent): (TraceId, Option<SpanId>),
        name: String,
    ) -> Span {
        let (operation, openinference, kind) = match role {
            Role::Turn | Role::Trace => ("invoke_workflow", "CHAIN", SpanKind::Internal),
            Role::Agent => ("invoke_agent", "AGENT", SpanKind::Internal),
            Role::Chat => ("chat", "LLM", SpanKind::Client),
            Role::Tool => ("execute_tool", "TOOL", SpanKind::Internal),
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", operation),
            KeyValue::new("gen_ai.conversation.id", self.conversation.clone()),
            KeyValue::new("openinference.span.kind", openinference),
            KeyValue::new("session.id", self.conversation.clone()),
            KeyValue::new("openharness.seq", i64::try_from(seq).unwrap_or(i64::MAX)),
        ];
        if self.options.replay {
            attributes.push(KeyValue::new("openharness.replay", true));
        }
        Span {
            trace_id: trace,
            span_id: span_id(role, &self.session, seq),
            parent,
            name,
            kind,
            start: time,
            end: time,
            attributes,
            events: Vec::new(),
            links: Vec::new(),
            status: Status::Unset,
            seq,
        }
    }

    fn open_turn(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        workflow: Option<&str>,
        closed: &mut Vec<Span>,
    ) -> &mut OpenTurn {
        // A turn begun while another is open: the other never finished (its process died).
        self.close_turn(self.last_time.unwrap_or(time), true, closed);
        let name = match workflow {
            Some(workflow) => format!("invoke_workflow {workflow}"),
            None => "invoke_workflow".to_owned(),
        };
        let mut span = self.base(
            Role::Turn,
            (seq, time),
            (trace_id(&self.session, seq), None),
            name,
        );
        if let Some(workflow) = workflow {
            span.attributes
                .push(KeyValue::new("openharness.workflow", workflow.to_owned()));
        }
        self.turn.insert(OpenTurn {
            open: Open { span },
            forked: false,
        })
    }

    fn workflow_started(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        started: &WorkflowStarted,
        closed: &mut Vec<Span>,
    ) {
        let turn = match self.turn.as_mut() {
            // A fork's `session:forked` began the turn; this names its workflow.
            Some(turn) if turn.forked => {
                turn.forked = false;
                turn.open.span.name = format!("invoke_workflow {}", started.workflow);
                turn.open.span.attributes.push(KeyValue::new(
                    "openharness.workflow",
                    started.workflow.clone(),
                ));
                turn
            }
            _ => self.open_turn(seq, time, Some(&started.workflow), closed),
        };
        let attributes = &mut turn.open.span.attributes;
        if let Some(code) = &started.code {
            attributes.push(KeyValue::new("openharness.workflow.code", code.clone()));
        }
        if let Some(version) = &started.version {
            attributes.push(KeyValue::new(
                "openharness.workflow.version",
                version.clone(),
            ));
        }
        if let Some(commit) = &started.commit {
            attributes.push(KeyValue::new("openharness.workflow.commit", commit.clone()));
        }
    }

    fn session_forked(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        forked: &SessionForked,
        closed: &mut Vec<Span>,
    ) {
        let link = self.fork_link.take();
        let turn = self.open_turn(seq, time, forked.workflow.as_deref(), closed);
        turn.forked = true;
        let span = &mut turn.open.span;
        span.attributes.push(KeyValue::new(
            "openharness.fork.parent",
            forked.parent.as_str().to_owned(),
        ));
        span.attributes.push(KeyValue::new(
            "openharness.fork.position",
            i64::try_from(forked.position).unwrap_or(i64::MAX),
        ));
        if let Some(hash) = &forked.state_hash {
            span.attributes
                .push(KeyValue::new("openharness.fork.state_hash", hash.clone()));
        }
        if let Some(link) = link {
            // Mirrored as attributes: not every backend keeps links (Arize Phoenix drops them).
            span.attributes.push(KeyValue::new(
                "openharness.fork.parent_trace_id",
                link.trace_id.to_string(),
            ));
            span.attributes.push(KeyValue::new(
                "openharness.fork.parent_span_id",
                link.span_id.to_string(),
            ));
            span.links.push(link);
        }
    }

    fn workflow_completed(
        &mut self,
        time: DateTime<Utc>,
        completed: &WorkflowCompleted,
        closed: &mut Vec<Span>,
    ) {
        if let Some(turn) = self.turn.as_mut() {
            let span = &mut turn.open.span;
            span.attributes.push(KeyValue::new(
                "openharness.turn.reason",
                completed.reason.clone(),
            ));
            span.attributes.push(KeyValue::new(
                "openharness.turn.errors",
                i64::try_from(completed.errors).unwrap_or(i64::MAX),
            ));
            if completed.errors > 0 {
                span.status = Status::error(format!("{} error(s) occurred", completed.errors));
            }
        }
        self.close_turn(time, false, closed);
    }

    fn user_input(&mut self, input: &UserInput) {
        if !self.options.content {
            return;
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.open
                .span
                .attributes
                .push(KeyValue::new("input.value", input.text.clone()));
        }
    }

    fn agent_started(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        trigger: Option<EventId>,
        started: &AgentStarted,
    ) {
        let (trace, parent) = match &self.turn {
            Some(turn) => (turn.open.span.trace_id, Some(turn.open.span.span_id)),
            // An agent call outside any turn (an imported log): a trace of its own.
            None => (trace_id(&self.session, seq), None),
        };
        let mut span = self.base(
            Role::Agent,
            (seq, time),
            (trace, parent),
            format!("invoke_agent {}", started.agent),
        );
        span.attributes
            .push(KeyValue::new("gen_ai.agent.name", started.agent.clone()));
        if let Some(model) = &started.model {
            span.attributes
                .push(KeyValue::new("gen_ai.request.model", model.clone()));
        }
        push_provider(
            &mut span.attributes,
            started.provider.as_deref(),
            self.options.replay,
        );
        // The same call (agent and trigger) started again: a resumed session runs again a call
        // its dead process left unfinished.
        if !self.calls.insert((started.agent.clone(), trigger)) {
            span.attributes
                .push(KeyValue::new("openharness.agent.rerun", true));
        }
        let agent_span = span.span_id;
        let mut agent = OpenAgent {
            open: Open { span },
            agent: started.agent.clone(),
            trigger,
            model: started.model.clone(),
            provider: started.provider.clone(),
            chat: None,
            chats: 0,
            tools: Vec::new(),
        };
        let mut chat = self.chat_span(&agent, trace, agent_span, seq, time);
        if self.options.content {
            if let Some(system) = &started.system {
                chat.attributes
                    .push(KeyValue::new("gen_ai.system_instructions", system.clone()));
            }
            let mut messages: Vec<serde_json::Value> = started
                .messages
                .iter()
                .filter_map(|m| serde_json::to_value(m).ok())
                .collect();
            if !started.prompt.is_empty() {
                messages.push(serde_json::json!({ "role": "user", "parts": [{ "type": "text", "content": started.prompt }] }));
            }
            chat.attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                serde_json::Value::Array(messages).to_string(),
            ));
        }
        agent.chat = Some(Open { span: chat });
        agent.chats = 1;
        self.agents.push(agent);
    }

    fn chat_span(
        &self,
        agent: &OpenAgent,
        trace: TraceId,
        parent: SpanId,
        seq: u64,
        time: DateTime<Utc>,
    ) -> Span {
        let name = match &agent.model {
            Some(model) => format!("chat {model}"),
            None => "chat".to_owned(),
        };
        let mut span = self.base(Role::Chat, (seq, time), (trace, Some(parent)), name);
        span.attributes
            .push(KeyValue::new("gen_ai.agent.name", agent.agent.clone()));
        if let Some(model) = &agent.model {
            span.attributes
                .push(KeyValue::new("gen_ai.request.model", model.clone()));
            span.attributes
                .push(KeyValue::new("llm.model_name", model.clone()));
        }
        push_provider(
            &mut span.attributes,
            agent.provider.as_deref(),
            self.options.replay,
        );
        span
    }

    /// The open agent call `agent` (with `trigger`, when known) is in: the latest such.
    fn agent_index(&self, agent: &str, trigger: Option<EventId>) -> Option<usize> {
        self.agents
            .iter()
            .rposition(|open| open.agent == agent && (trigger.is_none() || open.trigger == trigger))
            .or_else(|| self.agents.iter().rposition(|open| open.agent == agent))
    }

    fn agent_completed(
        &mut self,
        time: DateTime<Utc>,
        trigger: Option<EventId>,
        completed: &AgentCompleted,
        closed: &mut Vec<Span>,
    ) {
        let Some(index) = self.agent_index(&completed.agent, trigger) else {
            return;
        };
        let mut agent = self.agents.remove(index);
        let usage = [
            ("gen_ai.usage.input_tokens", completed.usage.input_tokens),
            ("gen_ai.usage.output_tokens", completed.usage.output_tokens),
            (
                "gen_ai.usage.cache_read.input_tokens",
                completed.usage.cache_read_tokens,
            ),
            (
                "gen_ai.usage.cache_creation.input_tokens",
                completed.usage.cache_creation_tokens,
            ),
        ];
        let outcome = match completed.outcome {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Interrupted => "interrupted",
        };
        let status = match completed.outcome {
            Outcome::Success => Status::Unset,
            _ => Status::error(
                completed
                    .error
                    .clone()
                    .unwrap_or_else(|| outcome.to_owned()),
            ),
        };
        let output = self
            .options
            .content
            .then(|| completed.output.as_ref().map(|output| serde_json::json!([{ "role": "assistant", "parts": [{ "type": "text", "content": output.to_string() }] }]).to_string()))
            .flatten();
        for (_, tool) in agent.tools.drain(..) {
            closed.push(unfinished(tool.span, time));
        }
        if let Some(chat) = agent.chat.take() {
            let mut span = chat.span;
            span.end = time;
            // The tokens are the call's total: exact on its model call when there was one.
            if agent.chats == 1 {
                for (key, n) in usage {
                    span.attributes.push(KeyValue::new(key, count(n)));
                }
                span.attributes.push(KeyValue::new(
                    "llm.token_count.prompt",
                    count(completed.usage.input_tokens),
                ));
                span.attributes.push(KeyValue::new(
                    "llm.token_count.completion",
                    count(completed.usage.output_tokens),
                ));
                span.attributes.push(KeyValue::new(
                    "llm.token_count.total",
                    count(completed.usage.input_tokens + completed.usage.output_tokens),
                ));
            }
            if let Some(output) = &output {
                span.attributes
                    .push(KeyValue::new("gen_ai.output.messages", output.clone()));
            }
            span.status = status.clone();
            closed.push(span);
        }
        let mut span = agent.open.span;
        span.end = time;
        for (key, n) in usage {
            span.attributes.push(KeyValue::new(key, count(n)));
        }
        span.attributes
            .push(KeyValue::new("openharness.agent.outcome", outcome));
        if let Some(cost) = completed.cost {
            span.attributes
                .push(KeyValue::new("openharness.cost_usd", cost));
        }
        if completed.outcome != Outcome::Success {
            span.attributes.push(KeyValue::new("error.type", outcome));
        }
        if let Some(output) = output {
            span.attributes
                .push(KeyValue::new("gen_ai.output.messages", output));
        }
        span.status = status;
        closed.push(span);
    }

    fn tool_called(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        called: &ToolCalled,
        closed: &mut Vec<Span>,
    ) {
        let Some(index) = self.agent_index(&called.agent, None) else {
            return;
        };
        let agent = &mut self.agents[index];
        if let Some(chat) = agent.chat.take() {
            let mut span = chat.span;
            span.end = time;
            span.attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(
                    vec![opentelemetry::StringValue::from("tool_calls")].into(),
                ),
            ));
            closed.push(span);
        }
        let (trace, parent) = (agent.open.span.trace_id, agent.open.span.span_id);
        let mut span = self.base(
            Role::Tool,
            (seq, time),
            (trace, Some(parent)),
            format!("execute_tool {}", called.tool),
        );
        span.attributes
            .push(KeyValue::new("gen_ai.tool.name", called.tool.clone()));
        span.attributes.push(KeyValue::new(
            "gen_ai.tool.call.id",
            called.tool_call_id.clone(),
        ));
        span.attributes
            .push(KeyValue::new("tool.name", called.tool.clone()));
        if self.options.content {
            span.attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                called.input.to_string(),
            ));
        }
        self.agents[index]
            .tools
            .push((called.tool_call_id.clone(), Open { span }));
    }

    fn tool_result(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        result: &ToolResult,
        closed: &mut Vec<Span>,
    ) {
        let Some(index) = self.agent_index(&result.agent, None) else {
            return;
        };
        let Some(at) = self.agents[index]
            .tools
            .iter()
            .position(|(id, _)| *id == result.tool_call_id)
        else {
            return;
        };
        let (_, tool) = self.agents[index].tools.remove(at);
        let mut span = tool.span;
        span.end = time;
        if result.is_error {
            span.status = Status::error(format!("tool {} failed", result.tool));
            span.attributes
                .push(KeyValue::new("error.type", "tool_error"));
        }
        if self.options.content {
            span.attributes.push(KeyValue::new(
                "gen_ai.tool.call.result",
                result.output.to_string(),
            ));
        }
        closed.push(span);
        // The round's last result goes back to the model: its next call begins.
        if self.agents[index].tools.is_empty() && self.agents[index].chat.is_none() {
            let agent = &self.agents[index];
            let chat = self.chat_span(
                agent,
                agent.open.span.trace_id,
                agent.open.span.span_id,
                seq,
                time,
            );
            let agent = &mut self.agents[index];
            agent.chat = Some(Open { span: chat });
            agent.chats += 1;
        }
    }

    fn error_occurred(&mut self, time: DateTime<Utc>, error: &ErrorOccurred) {
        let event = SpanEvent {
            name: "exception".to_owned(),
            time,
            attributes: vec![
                KeyValue::new("exception.type", error.source.clone()),
                KeyValue::new("exception.message", error.message.clone()),
                KeyValue::new("openharness.recoverable", error.recoverable),
            ],
        };
        if let Some(turn) = self.turn.as_mut() {
            turn.open.span.events.push(event);
        }
    }

    fn output_rejected(&mut self, time: DateTime<Utc>, rejected: &OutputRejected) {
        if let Some(index) = self.agent_index(&rejected.agent, None) {
            self.agents[index].open.span.events.push(SpanEvent {
                name: "output:rejected".to_owned(),
                time,
                attributes: vec![
                    KeyValue::new("openharness.attempt", i64::from(rejected.attempt)),
                    KeyValue::new("openharness.errors", rejected.errors.join("; ")),
                ],
            });
        }
    }

    /// Closes the open turn and everything in it at `time`; `unfinished` marks the spans as
    /// never closed by their own event.
    fn close_turn(&mut self, time: DateTime<Utc>, unfinished_turn: bool, closed: &mut Vec<Span>) {
        for mut agent in self.agents.drain(..) {
            for (_, tool) in agent.tools.drain(..) {
                closed.push(unfinished(tool.span, time));
            }
            if let Some(chat) = agent.chat.take() {
                closed.push(unfinished(chat.span, time));
            }
            closed.push(unfinished(agent.open.span, time));
        }
        if let Some(turn) = self.turn.take() {
            let mut span = turn.open.span;
            self.last_turn = Some(span.reference());
            if unfinished_turn {
                span = unfinished(span, time);
            } else {
                span.end = time;
            }
            closed.push(span);
        }
    }
}

fn unfinished(mut span: Span, time: DateTime<Utc>) -> Span {
    span.end = time.max(span.start);
    span.attributes
        .push(KeyValue::new("openharness.unfinished", true));
    span.status = Status::error("unfinished: the log ends inside it");
    span
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `gen_ai.provider.name` (and OpenInference's `llm.provider`) for a call recorded as asked of
/// `provider`, named as the GenAI conventions name providers (the `claude` CLI talks to
/// Anthropic's models: `anthropic`). A call the cassette answered from a recording was a
/// replay: `openharness.replay`, unless the whole export is marked so already.
fn push_provider(attributes: &mut Vec<KeyValue>, provider: Option<&str>, marked: bool) {
    let Some(provider) = provider else {
        return;
    };
    let named = match provider {
        "claude-cli" => "anthropic",
        other => other,
    };
    attributes.push(KeyValue::new("gen_ai.provider.name", named.to_owned()));
    attributes.push(KeyValue::new("llm.provider", named.to_owned()));
    if provider == CASSETTE && !marked {
        attributes.push(KeyValue::new("openharness.replay", true));
    }
}

/// The name the tape's cassette provider records (`openharness_tape::CassetteProvider`).
const CASSETTE: &str = "cassette";

#[cfg(test)]
mod tests;
