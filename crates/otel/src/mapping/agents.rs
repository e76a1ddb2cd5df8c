//! An agent call's spans: the call, its chat span, its tools, its errors and rejected outputs.

use super::*;

impl SessionSpans {
    pub(super) fn agent_started(
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
        if !self
            .calls
            .insert(CallKey::new(started.agent.as_str(), trigger))
        {
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

    pub(super) fn chat_span(
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
    pub(super) fn agent_index(&self, agent: &str, trigger: Option<EventId>) -> Option<usize> {
        self.agents
            .iter()
            .rposition(|open| open.agent == agent && (trigger.is_none() || open.trigger == trigger))
            .or_else(|| self.agents.iter().rposition(|open| open.agent == agent))
    }

    pub(super) fn agent_completed(
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

    pub(super) fn tool_called(
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

    pub(super) fn tool_result(
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

    pub(super) fn error_occurred(&mut self, time: DateTime<Utc>, error: &ErrorOccurred) {
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

    pub(super) fn output_rejected(&mut self, time: DateTime<Utc>, rejected: &OutputRejected) {
        if let Some(index) = self.agent_index(&rejected.agent, None) {
            self.agents[index].open.span.events.push(SpanEvent {
                name: OutputRejected::NAME.to_owned(),
                time,
                attributes: vec![
                    KeyValue::new("openharness.attempt", i64::from(rejected.attempt)),
                    KeyValue::new("openharness.errors", rejected.errors.join("; ")),
                ],
            });
        }
    }
}
