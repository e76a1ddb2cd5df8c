//! The provider a cassette answers every agent call with: the recorded calls, read from the
//! session, matched to the new run's calls by agent and triggering event.

use super::*;
use openharness_core::adapter::{CallKey, ChatToolCall};

/// How long a re-executed call waits for the steer its recording took (sent to the turn at
/// the recorded position, so it normally arrives at once).
const STEER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// One recorded agent call.
#[derive(Debug, Clone, Default)]
pub(super) struct RecordedCall {
    /// The seq of the event that activated the agent (`None`: an event outside the session,
    /// such as a fork's parent's, which keeps its id in a re-execution).
    pub(super) trigger: Option<u64>,
    /// The id of the event that activated the agent.
    pub(super) trigger_id: Option<EventId>,
    pub(super) system: Option<String>,
    pub(super) messages: Vec<ChatMessage>,
    pub(super) prompt: String,
    pub(super) stream: Vec<ProviderEvent>,
    pub(super) output: Option<Value>,
    pub(super) usage: Usage,
    pub(super) cost: Option<f64>,
    pub(super) error: Option<String>,
}

/// The recorded calls per agent, in the order they started.
pub(super) fn recorded_calls(events: &[Envelope]) -> HashMap<String, VecDeque<RecordedCall>> {
    let seqs = ids(events);
    let mut calls: HashMap<String, VecDeque<RecordedCall>> = HashMap::new();
    // (agent, trigger) -> index of the open call in that agent's queue.
    let mut open: HashMap<CallKey, usize> = HashMap::new();
    for event in events {
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            continue;
        };
        let (agent, streamed) = match builtin {
            Builtin::AgentStarted(started) => {
                let queue = calls.entry(started.agent.clone()).or_default();
                queue.push_back(RecordedCall {
                    trigger: event.caused_by.and_then(|id| seqs.get(&id).copied()),
                    trigger_id: event.caused_by,
                    system: started.system,
                    messages: started.messages,
                    prompt: started.prompt,
                    ..RecordedCall::default()
                });
                open.insert(
                    CallKey::new(started.agent, event.caused_by),
                    queue.len() - 1,
                );
                continue;
            }
            Builtin::AgentCompleted(c) => {
                if let Some(index) = open.remove(&CallKey::new(c.agent.as_str(), event.caused_by))
                    && let Some(call) = calls.get_mut(&c.agent).and_then(|q| q.get_mut(index))
                {
                    call.output = c.output;
                    call.usage = c.usage;
                    call.cost = c.cost;
                    call.error = c.error;
                }
                continue;
            }
            other => match ProviderEvent::from_recorded(other) {
                Some(streamed) => streamed,
                None => continue,
            },
        };
        if let Some(&index) = open.get(&CallKey::new(agent.as_str(), event.caused_by))
            && let Some(call) = calls.get_mut(&agent).and_then(|q| q.get_mut(index))
        {
            call.stream.push(streamed);
        }
    }
    calls
}

/// Serves recorded calls; never calls a model.
pub(super) struct CassetteProvider {
    pub(super) calls: Mutex<HashMap<String, VecDeque<RecordedCall>>>,
    /// During a re-execution, which recorded event each of its events was matched with: a
    /// call is then served the recorded call of its agent and trigger. `None`: in order per
    /// agent.
    pub(super) matched: Option<Arc<Matched>>,
}

/// How long a call waits for the re-execution's checker to match the event that activated it
/// (the checker sees events on a renderer's thread, possibly after the call has begun)
/// before it is served in order instead.
pub(super) const TRIGGER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The events of a re-execution matched so far, each with the recording's seq of its match.
#[derive(Default)]
pub(super) struct Matched {
    pub(super) state: Mutex<MatchedState>,
    pub(super) changed: tokio::sync::Notify,
}

#[derive(Default)]
pub(super) struct MatchedState {
    pub(super) seqs: HashMap<EventId, u64>,
    /// The comparison is over (diverged or finished): nothing more will be matched.
    pub(super) over: bool,
}

impl Matched {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, MatchedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recording's seq of the event `id` was matched with, once it is; `None` when it is
    /// not matched in time or the comparison is over.
    pub(super) async fn seq_of(&self, id: EventId) -> Option<u64> {
        let deadline = tokio::time::Instant::now() + TRIGGER_WAIT;
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if let Some(seq) = state.seqs.get(&id) {
                    return Some(*seq);
                }
                if state.over {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::warn!(event = %id, "a re-executed agent call's trigger was not matched in time; it is served the recording's next call of its agent");
                return None;
            }
        }
    }

    pub(super) fn over(&self) {
        self.lock().over = true;
        self.changed.notify_waiters();
    }
}

#[async_trait]
impl Provider for CassetteProvider {
    fn name(&self) -> &str {
        NAME
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let failed = |message: String| ProviderError::Failed {
            provider: NAME.to_owned(),
            message,
        };
        if request.attempt > 1 {
            return Err(failed(format!(
                "agent `{}` rejected the recorded output: {}",
                request.agent,
                request.previous_error.unwrap_or_default()
            )));
        }
        // A call activated by an event outside the recorded session (a fork's parent's) is
        // told by that event's id; any other by the recorded seq of its trigger, once known.
        let outside =
            |call: &RecordedCall| call.trigger.is_none() && call.trigger_id == request.trigger;
        let inherited = request.trigger.is_some()
            && self
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&request.agent)
                .is_some_and(|queue| queue.iter().any(outside));
        let trigger = match (&self.matched, request.trigger) {
            (Some(matched), Some(id)) if !inherited => matched.seq_of(id).await,
            _ => None,
        };
        let call = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            calls.get_mut(&request.agent).and_then(|queue| {
                let index = match trigger {
                    _ if inherited => queue.iter().position(outside)?,
                    Some(seq) => queue.iter().position(|call| call.trigger == Some(seq))?,
                    None => 0,
                };
                queue.remove(index)
            })
        }
        .ok_or_else(|| ProviderError::NoResponse {
            agent: request.agent.clone(),
            message: match trigger {
                Some(seq) => format!(
                    "the recording has no further call of this agent activated by the event at seq {seq}"
                ),
                None => "the recording has no further call of this agent".to_owned(),
            },
        })?;
        if call.prompt != request.prompt {
            return Err(failed(format!(
                "agent `{}` was prompted differently from the recording",
                request.agent
            )));
        }
        // Messages are recorded without image bytes: compare them so.
        let messages: Vec<ChatMessage> =
            request.messages.iter().map(ChatMessage::recorded).collect();
        if call.system != request.system || call.messages != messages {
            return Err(failed(format!(
                "agent `{}` was given another system prompt or conversation than the recording's",
                request.agent
            )));
        }
        // A call that ended by calling the client's tools ends so again.
        let client_calls: Vec<ChatToolCall> = call
            .stream
            .iter()
            .filter_map(|event| match event {
                ProviderEvent::ClientToolCalled { id, tool, input } => Some(ChatToolCall {
                    id: id.clone(),
                    name: tool.clone(),
                    input: input.clone(),
                }),
                _ => None,
            })
            .collect();
        let mut stream = call.stream.into_iter().peekable();
        while let Some(event) = stream.next() {
            match event {
                // The recording took a steer here: take the one the re-execution recorded at
                // the same position (waiting for it, as the recorded call did not).
                ProviderEvent::Steered { .. } => {
                    while stream
                        .next_if(|e| matches!(e, ProviderEvent::Steered { .. }))
                        .is_some()
                    {}
                    sink.wait_steered(STEER_WAIT).await;
                }
                event => sink.emit(event),
            }
        }
        if !client_calls.is_empty() {
            return Ok(ProviderResponse {
                output: Value::String(sink.text()),
                usage: call.usage,
                cost: call.cost,
                client_calls,
            });
        }
        match call.output {
            Some(output) => Ok(ProviderResponse::new(output, call.usage, call.cost)),
            None => Err(failed(
                call.error
                    .unwrap_or_else(|| "the recorded call failed".to_owned()),
            )),
        }
    }
}
