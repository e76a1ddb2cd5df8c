//! An agent call as a tokio task: the provider's streamed events and its answer sent back to
//! the loop, which records them in arrival order.

use super::*;
use crate::contained::quietly_awaited;

/// The events an agent message records, and what to do once they are durable.
pub(super) fn unit_of<S>(message: AgentMessage) -> (Unit, Option<AfterRecord<S>>) {
    match message {
        AgentMessage::Event(pending, trigger) => (vec![(pending, Some(trigger))], None),
        AgentMessage::Finished {
            call,
            trigger,
            events,
        } => (
            events.into_iter().map(|p| (p, Some(trigger))).collect(),
            Some(AfterRecord::Finish(call)),
        ),
    }
}

/// One agent call, run as a tokio task.
pub(super) struct AgentTask<S> {
    pub(super) agent: Arc<dyn ErasedAgent<S>>,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) trigger: Envelope,
    pub(super) activation: Activation,
    pub(super) call: u64,
    pub(super) attempts: u32,
    pub(super) tx: UnboundedSender<AgentMessage>,
    /// Inputs steered into the turn, offered to the call at its next model call.
    pub(super) steers: Steers,
}

impl<S> AgentTask<S> {
    pub(super) async fn run(self) {
        let name = self.agent.spec().name;
        let trigger_id = self.trigger.id;
        let mut finals = Vec::with_capacity(4);
        // One sink per attempt: its deltas carry the attempt, and its text is that attempt's.
        let sink_for = |attempt: u32| {
            let tx = self.tx.clone();
            ProviderSink::new(move |event| {
                let _ = tx.send(AgentMessage::Event(
                    event.into_recorded(name, attempt),
                    trigger_id,
                ));
            })
            .with_steers(self.steers.clone())
        };
        let mut text = String::new();
        let mut usage = Usage::default();
        let mut cost = None::<f64>;
        let mut previous_error = None;
        let mut accepted = None;
        let mut refusal = None::<(String, String)>;
        let mut result: Result<Emit, String> = Err("no attempt was made".into());
        for attempt in 1..=self.attempts {
            let mut request =
                ProviderRequest::new(name, self.activation.prompt.clone(), self.agent.schema())
                    .with_model(self.activation.model.clone())
                    .with_system(self.activation.system.clone())
                    .with_messages(self.activation.messages.clone())
                    .with_tools(self.activation.tools.clone())
                    .with_max_turns(self.activation.max_turns)
                    .with_images(self.activation.images.clone())
                    .with_reasoning(self.activation.reasoning);
            request.attempt = attempt;
            request.previous_error = previous_error.take();
            request.trigger = Some(trigger_id);
            let sink = sink_for(attempt);
            let completed = quietly_awaited(self.provider.complete(request, sink.clone()))
                .await
                .unwrap_or_else(|panic| {
                    Err(ProviderError::Failed {
                        provider: self.provider.name().to_owned(),
                        message: format!("panicked: {}", panic_message(&*panic)),
                    })
                });
            text = sink.text();
            match completed {
                Err(ProviderError::Refused { provider, message }) => {
                    // Asking again would not change the model's mind: no re-ask.
                    result = Err(format!("{provider} refused: {message}"));
                    refusal = Some((provider, message));
                    break;
                }
                Err(err) => {
                    result = Err(err.to_string());
                    break;
                }
                Ok(response) => {
                    usage += response.usage;
                    if let Some(c) = response.cost {
                        *cost.get_or_insert(0.0) += c;
                    }
                    if !response.client_calls.is_empty() {
                        // The model ended by calling the client's tools (recorded as they
                        // streamed): no answer to check; the client's results continue it.
                        result = Ok(Emit::default());
                        break;
                    }
                    let output = response.output;
                    match self.agent.finish(output.clone(), &self.trigger) {
                        Ok(emit) => {
                            result = Ok(emit);
                            accepted = Some(output);
                            break;
                        }
                        Err(OutputRejected::Invalid(message)) => {
                            result = Err(format!("{message} (after {attempt} attempts)"));
                            finals.push(Pending::of(&Rejected {
                                agent: name.to_owned(),
                                attempt,
                                output,
                                errors: vec![message.clone()],
                            }));
                            previous_error = Some(message);
                        }
                        Err(OutputRejected::Failed(message)) => {
                            result = Err(message);
                            break;
                        }
                    }
                }
            }
        }
        if !text.is_empty() {
            finals.push(Pending::of(&TextComplete {
                agent: name.to_owned(),
                text,
            }));
        }
        let (outcome, error) = match result {
            Ok(emit) => {
                finals.extend(emit.into_pending());
                (Outcome::Success, None)
            }
            Err(message) => {
                let message = format!("agent `{name}` failed: {message}");
                let error = match refusal {
                    Some((provider, refused)) => ErrorOccurred {
                        context: Some(serde_json::json!({
                            "agentName": name,
                            "provider": provider,
                        })),
                        ..ErrorOccurred::recoverable("refusal", refused, Some(trigger_id))
                    },
                    None => ErrorOccurred::recoverable("agent", message.clone(), Some(trigger_id)),
                };
                finals.push(Pending::of(&error));
                (Outcome::Failure, Some(message))
            }
        };
        finals.push(Pending::of(&AgentCompleted {
            agent: name.to_owned(),
            outcome,
            usage,
            cost,
            error,
            output: accepted,
        }));
        let _ = self.tx.send(AgentMessage::Finished {
            call: self.call,
            trigger: trigger_id,
            events: finals,
        });
    }
}
