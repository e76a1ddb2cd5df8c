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
//!   call, an error when the tool failed;
//! - a question to a person (`input:requested` … the `input:received` that answers it) is
//!   `await_input` under the turn that asked, however long the wait: its duration is the wait
//!   (`openharness.input.wait_ms`), and it names who answered (`openharness.input.answered_by`)
//!   and the turn the answer began.
//!
//! Every turn has its root span, whatever began it: a workflow's start, a fork, a person's
//! input, an answer, a queued input's turn or a resumed one (`openharness.turn.start` names the
//! event). Each links to the turn before it in the session (mirrored as
//! `openharness.turn.previous_*` attributes), and an answer's turn also links to the question.
//! What a person does to a running turn is a span event on its root: `input:queued` (with its
//! mode: enqueue, interrupt, rollback or steer), `input:steered`, `turn:rolled_back` and
//! `stop:requested`.
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
use openharness_core::adapter::CallKey;
use openharness_core::builtin::{
    AgentCompleted, AgentStarted, Builtin, ErrorOccurred, InputQueued, InputReceived,
    InputRequested, InputSteered, Outcome, OutputRejected, SessionForked, StopRequested,
    ToolCalled, ToolResult, TurnRolledBack, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Envelope, Event, EventId, SessionId};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};

use crate::ids::{Role, span_id, trace_id};
use crate::span::{Span, SpanEvent, SpanRef};

mod agents;
mod people;
mod turns;

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

/// A question waiting for its answer.
#[derive(Debug)]
struct OpenQuestion {
    /// The `input:requested` event's id (the request's id).
    request: EventId,
    open: Open,
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
    questions: Vec<OpenQuestion>,
    /// The workflow that recorded the session, as its start or fork named it: the name of the
    /// turns that begin without naming it (an input, an answer).
    workflow: Option<String>,
    fork_link: Option<SpanRef>,
    last_turn: Option<SpanRef>,
    last_time: Option<DateTime<Utc>>,
    /// The agent calls of the open turn (a call started again is a rerun).
    calls: HashSet<CallKey>,
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
            questions: Vec::new(),
            workflow: None,
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

    /// Whether no span is open (no turn, and no question waiting for its answer). What an idle
    /// mapping still holds is what links the next turn to this one: the last turn's ids and the
    /// workflow's name.
    pub fn is_idle(&self) -> bool {
        self.turn.is_none() && self.agents.is_empty() && self.questions.is_empty()
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
    /// and tool calls, forks, errors, rejected outputs, questions and answers, and what a person
    /// does to a running turn. Others (a workflow's own events, streamed text) are skipped
    /// whole, so a live export need not even queue them.
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
            InputRequested::NAME,
            InputReceived::NAME,
            InputQueued::NAME,
            InputSteered::NAME,
            TurnRolledBack::NAME,
            StopRequested::NAME,
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
        let decoded = match Builtin::decode(event) {
            Some(Ok(decoded)) => decoded,
            None => return closed,
            Some(Err(err)) => {
                tracing::debug!(session = %self.session, seq, name = %event.name, %err, "an event that does not decode is left out of the spans");
                return closed;
            }
        };
        let begins_turn = !matches!(
            decoded,
            Builtin::WorkflowStarted(_) | Builtin::SessionForked(_)
        );
        if begins_turn && self.turn.is_none() {
            // A turn that does not begin with a start or a fork (an input, an answer, a queued
            // input's turn): its root opens at its first event.
            let workflow = self.workflow.clone();
            self.open_turn(seq, time, workflow.as_deref(), &event.name, &mut closed);
        }
        match decoded {
            Builtin::WorkflowStarted(started) => {
                self.workflow_started(seq, time, &started, &mut closed);
            }
            Builtin::SessionForked(forked) => {
                self.session_forked(seq, time, &forked, &mut closed);
            }
            Builtin::WorkflowCompleted(completed) => {
                self.workflow_completed(time, &completed, &mut closed);
            }
            Builtin::UserInput(input) => self.user_input(event.caused_by, &input),
            Builtin::AgentStarted(started) => {
                self.agent_started(seq, time, event.caused_by, &started);
            }
            Builtin::AgentCompleted(completed) => {
                self.agent_completed(time, event.caused_by, &completed, &mut closed);
            }
            Builtin::ToolCalled(called) => self.tool_called(seq, time, &called, &mut closed),
            Builtin::ToolResult(result) => self.tool_result(seq, time, &result, &mut closed),
            Builtin::ErrorOccurred(error) => self.error_occurred(time, &error),
            Builtin::OutputRejected(rejected) => self.output_rejected(time, &rejected),
            Builtin::InputRequested(requested) => {
                self.input_requested(seq, time, event.id, &requested);
            }
            Builtin::InputReceived(received) => {
                self.input_received(seq, event, &received, &mut closed);
            }
            Builtin::InputQueued(queued) => self.input_queued(time, event.id, &queued),
            Builtin::InputSteered(steered) => self.input_steered(time, &steered),
            Builtin::TurnRolledBack(rolled_back) => self.turn_rolled_back(time, &rolled_back),
            Builtin::StopRequested(stop) => self.stop_requested(time, &stop),
            _ => {}
        }
        self.last_time = Some(self.last_time.map_or(time, |last| last.max(time)));
        closed
    }

    /// Closes every span still open at the last event's time, marked
    /// `openharness.unfinished = true` with an error status: the session's log ends inside
    /// them (a turn under way, or a process that died). A question still waiting for its
    /// answer closes too, marked `openharness.input.waiting = true` (not an error: the session
    /// waits); once answered, a later export sends the same span again, whole.
    pub fn finish(mut self) -> Vec<Span> {
        let mut closed = Vec::new();
        if let Some(time) = self.last_time {
            self.close_turn(time, true, &mut closed);
            closed.extend(self.questions.drain(..).map(|question| {
                let mut span = question.open.span;
                span.end = time.max(span.start);
                span.attributes
                    .push(KeyValue::new("openharness.input.waiting", true));
                span
            }));
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
            Role::Question => ("await_input", "CHAIN", SpanKind::Internal),
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
