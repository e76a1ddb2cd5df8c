//! Activation: the agents an event triggers, queued as calls (within the run's limit), launched
//! as tasks once their `agent:started` is durable, and stopped with the run.

use super::*;

impl<S: WorkflowState> Run<'_, S> {
    /// Starts every agent the event at `seq` activates. Returns a stop reason if the agent
    /// call limit would be exceeded.
    pub(super) fn activate_agents(&mut self, seq: u64, max_agent_calls: u64) -> Option<StopReason> {
        let event = self.window.get(seq)?;
        if !self
            .wf
            .agents
            .iter()
            .any(|a| a.spec().trigger == event.name)
        {
            return None;
        }
        let event = event.clone();
        self.activate(&event, max_agent_calls)
    }

    /// What the run's agent settings ([`crate::RunOptions::agent`]) change of a call of
    /// `agent` about to start: its model, system prompt, prompt and reasoning.
    pub(super) fn apply_settings(&self, agent: &str, activation: &mut crate::agent::Activation) {
        let Some(settings) = self.settings.get(agent) else {
            return;
        };
        if let Some(model) = &settings.model {
            activation.model = Some(model.clone());
        }
        if let Some(system) = &settings.system {
            activation.system = (!system.is_empty()).then(|| system.clone());
        }
        if let Some(template) = &settings.system_template {
            let own = activation.system.as_deref().unwrap_or_default();
            let system = template.replace("{system}", own);
            activation.system = (!system.trim().is_empty()).then_some(system);
        }
        if let Some(template) = &settings.prompt_template {
            activation.prompt = template.replace("{prompt}", &activation.prompt);
        }
        if let Some(effort) = settings.reasoning {
            activation.reasoning = Some(effort);
        }
    }

    /// Starts every agent `event` activates in the current state.
    pub(super) fn activate(
        &mut self,
        event: &Envelope,
        max_agent_calls: u64,
    ) -> Option<StopReason> {
        for (agent, activation) in activations(&self.wf.agents, self.fold.state(), event) {
            match activation {
                Err(message) => {
                    let error = ErrorOccurred::recoverable("agent", message, Some(event.id));
                    self.queue
                        .push_back((Pending::of(&error), Some(event.id), None));
                }
                Ok(mut activation) => {
                    // A fresh call takes the run's model and system prompt; a call run again
                    // after a crash keeps what its `agent:started` recorded.
                    self.apply_settings(agent.spec().name, &mut activation);
                    if let Some(reason) =
                        self.queue_call(agent, event.clone(), activation, max_agent_calls)
                    {
                        return Some(reason);
                    }
                }
            }
        }
        None
    }

    /// Queues an agent call's `agent:started`; the call starts once that event is durable.
    pub(super) fn queue_call(
        &mut self,
        agent: Arc<dyn ErasedAgent<S>>,
        trigger: Envelope,
        activation: Activation,
        max_agent_calls: u64,
    ) -> Option<StopReason> {
        if self.agent_calls >= max_agent_calls {
            return Some(StopReason::MaxAgentCalls);
        }
        let settings = self.settings.get(agent.spec().name);
        let provider = match settings.and_then(|s| s.provider.clone()) {
            Some(provider) => provider,
            None => self.wf.provider.clone()?, // `build` rejects agents without a provider
        };
        let mut activation = activation;
        let extra = settings.map_or(&[][..], |s| s.tools.as_slice());
        if !extra.is_empty() || !self.client_tools.is_empty() {
            let mut tools: Vec<_> = activation.tools.iter().cloned().collect();
            tools.extend(extra.iter().cloned());
            tools.extend(self.client_tools.iter().cloned());
            activation.tools = crate::tool::Toolbox::new(tools);
        }
        self.agent_calls += 1;
        let started = AgentStarted {
            agent: agent.spec().name.to_owned(),
            // The model the call asks: its own, else its provider's default.
            model: activation
                .model
                .clone()
                .or_else(|| provider.model().map(str::to_owned)),
            provider: Some(provider.name().to_owned()),
            system: activation.system.clone(),
            messages: activation
                .messages
                .iter()
                .map(ChatMessage::recorded)
                .collect(),
            prompt: activation.prompt.clone(),
            reply: activation.reply.clone(),
        };
        let cause = trigger.id;
        let task = AgentTask {
            agent,
            provider,
            trigger,
            activation,
            call: self.agent_calls,
            attempts: self.wf.max_output_attempts,
            tx: self.tx.clone(),
            steers: self.steers.clone(),
        };
        self.queue.push_back((
            Pending::of(&started),
            Some(cause),
            Some(AfterRecord::Launch(Box::new(task))),
        ));
        None
    }

    /// Starts an agent call, now that its `agent:started` is recorded.
    pub(super) fn launch(&mut self, task: AgentTask<S>) {
        self.running
            .insert(task.call, (task.agent.spec().name, task.trigger.id));
        let cancel = self.agents_cancel.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = task.run() => {}
            }
        });
    }

    /// Cancels the agents still running and waits for their tasks to end.
    pub(super) async fn stop_agents(&mut self) {
        self.agents_cancel.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}
