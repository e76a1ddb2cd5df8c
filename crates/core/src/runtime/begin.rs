//! How a turn begins: a fresh run or a turn of a living session, a resumed one, one that starts
//! at a fork point, and work a cut left unfinished started again.

use super::*;

impl<S: WorkflowState> Run<'_, S> {
    /// Queues the run's first events. Returns a stop reason when the run is over before the
    /// loop starts (a resumed turn whose `until` already holds).
    pub(super) fn begin(
        &mut self,
        begin: Begin,
        input: Option<String>,
        input_fields: &serde_json::Map<String, serde_json::Value>,
        limits: &Limits,
    ) -> Option<StopReason> {
        let user_input = |text: String| {
            let mut pending = Pending::of(&UserInput::new(text));
            if let serde_json::Value::Object(payload) = &mut pending.payload {
                for (name, value) in input_fields {
                    payload.entry(name.clone()).or_insert_with(|| value.clone());
                }
            }
            pending
        };
        match begin {
            Begin::Fresh => {
                let started = Pending::of(&WorkflowStarted {
                    workflow: self.wf.name.clone(),
                    code: Some(self.wf.code.code.clone()),
                    version: self.wf.code.version.clone(),
                    commit: self.wf.code.commit.clone(),
                    state_shape: self.wf.code.state_shape.clone(),
                });
                self.queue.push_back((started, None, None));
                if let Some(text) = input {
                    self.queue.push_back((user_input(text), None, None));
                }
                None
            }
            Begin::Fork {
                first,
                queued,
                redeliver,
                unfinished,
            } => {
                // The first event is folded: queue what follows it.
                let first = self.stage(vec![(first, None)]);
                if let Some(unfinished) = unfinished {
                    if let Some(reason) = self.finish_fork_point(*unfinished, limits) {
                        return Some(reason);
                    }
                    if let Some(text) = input {
                        self.queue.push_back((user_input(text), None, None));
                    }
                    return None;
                }
                let cause = self.window.get(first.start).map(|e| e.id)?;
                self.queue
                    .extend(queued.into_iter().map(|p| (p, Some(cause), None)));
                if let Some(text) = input {
                    self.queue.push_back((user_input(text), None, None));
                }
                let event = redeliver?;
                self.activate(&Envelope { id: cause, ..event }, limits.max_agent_calls)
            }
            Begin::Input(text) => {
                self.queue.push_back((user_input(text), None, None));
                None
            }
            Begin::Answer { request, text } => {
                let answer = InputReceived::new(request, text);
                let mut pending = Pending::of(&answer);
                if let serde_json::Value::Object(payload) = &mut pending.payload {
                    for (name, value) in input_fields {
                        payload.entry(name.clone()).or_insert_with(|| value.clone());
                    }
                }
                self.queue.push_back((pending, Some(request), None));
                None
            }
            Begin::Resume {
                unrecorded,
                open_calls,
                queued,
            } => {
                // Nothing was cut off but inputs wait: the turn answers the oldest.
                if unrecorded.is_empty()
                    && open_calls.is_empty()
                    && let Some(oldest) = queued.first()
                {
                    let answer = crate::queued::answer_of(oldest);
                    self.queue.push_back((answer, Some(oldest.id), None));
                    return None;
                }
                self.resume(unrecorded, open_calls, limits)
            }
        }
    }

    /// Closes a killed process's open agent calls as interrupted (one append), then queues what
    /// it had not recorded and runs the closed calls again.
    pub(super) fn resume(
        &mut self,
        unrecorded: Vec<Unrecorded>,
        open_calls: Vec<OpenCall>,
        limits: &Limits,
    ) -> Option<StopReason> {
        self.finish_cut_work(Cut::Crash, Vec::new(), unrecorded, open_calls, limits)
    }

    /// A fork's start: finishes what its parent had under way at the fork point, as
    /// [`Run::resume`] finishes a cut-off turn. The rest of a final record the fork point cut
    /// is recorded first (keeping that call's output); calls cut at the fork point are closed
    /// as interrupted and run again from their start with this workflow's agents (a variant's
    /// prompts and models), as are agents the parent had not started yet.
    pub(super) fn finish_fork_point(
        &mut self,
        unfinished: ForkUnfinished,
        limits: &Limits,
    ) -> Option<StopReason> {
        let ForkUnfinished {
            parent,
            position,
            completing,
            unrecorded,
            open_calls,
            queued,
        } = unfinished;
        let cut = Cut::Fork { parent, position };
        let stopped = self.finish_cut_work(cut, completing, unrecorded, open_calls, limits);
        // What the parent had queued at the fork point, queued again here (answered after).
        self.queue.extend(queued.into_iter().map(|event| {
            let pending = Pending {
                name: event.name,
                payload: event.payload,
                version: event.version,
            };
            (pending, None, None)
        }));
        stopped
    }

    /// What [`Run::resume`] and [`Run::finish_fork_point`] share: closes the calls `cut`
    /// left open as interrupted (one append), queues what was not recorded, records the rest
    /// of a cut final record (`completing`) and runs the closed calls again.
    pub(super) fn finish_cut_work(
        &mut self,
        cut: Cut,
        completing: Unit,
        unrecorded: Vec<Unrecorded>,
        open_calls: Vec<OpenCall>,
        limits: &Limits,
    ) -> Option<StopReason> {
        let closes: Unit = open_calls
            .iter()
            .map(|call| {
                let closed = AgentCompleted {
                    agent: call.started.agent.clone(),
                    outcome: Outcome::Interrupted,
                    usage: Usage::default(),
                    cost: None,
                    error: Some(cut.why_closed()),
                    output: None,
                };
                (Pending::of(&closed), call.trigger_id)
            })
            .collect();
        if !closes.is_empty() {
            self.stage(closes);
        }
        if self.until_holds() {
            return Some(StopReason::Until);
        }
        for item in unrecorded {
            match item {
                Unrecorded::Event(pending, cause) => {
                    self.queue.push_back((pending, Some(cause), None));
                }
                Unrecorded::Start { started, trigger } => {
                    if let Some(reason) = self.start_again(&cut, *started, trigger, limits) {
                        return Some(reason);
                    }
                }
            }
        }
        if !completing.is_empty() {
            let staged = self.stage(completing);
            if self.until_holds() {
                return Some(StopReason::Until);
            }
            for seq in staged {
                if let Some(reason) = self.activate_agents(seq, limits.max_agent_calls) {
                    return Some(reason);
                }
            }
        }
        for call in open_calls {
            match call.trigger {
                Some(trigger) => {
                    if let Some(reason) = self.start_again(&cut, call.started, trigger, limits) {
                        return Some(reason);
                    }
                }
                None => {
                    let (code, message) = cut.why_not_again(&call.started.agent);
                    let error = ErrorOccurred::recoverable(code, message, call.trigger_id);
                    self.queue
                        .push_back((Pending::of(&error), call.trigger_id, None));
                }
            }
        }
        None
    }

    /// Runs a cut call again: after a crash as it was started ([`Run::rerun`]); in a fork as
    /// this workflow starts it now ([`Run::restart`]).
    pub(super) fn start_again(
        &mut self,
        cut: &Cut,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        match cut {
            Cut::Crash => self.rerun(started, trigger, limits),
            Cut::Fork { .. } => self.restart(started, trigger, limits),
        }
    }

    /// Starts an agent call of a fork again from its trigger, activated by this workflow in
    /// the fork's state with the run's agent settings (so a variant's prompt and model
    /// apply, in its code or its settings); when the agent does not
    /// activate there (its `when` no longer holds), with the prompt and model it was first
    /// started with.
    pub(super) fn restart(
        &mut self,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        let fresh = self
            .wf
            .agents
            .iter()
            .find(|a| a.spec().name == started.agent)
            .and_then(|erased| {
                Some((
                    Arc::clone(erased),
                    erased.activate(self.fold.state(), &trigger)?,
                ))
            });
        match fresh {
            Some((erased, Ok(mut activation))) => {
                // As a fresh call: the run's agent settings (a variant's prompt, model) apply.
                self.apply_settings(&started.agent, &mut activation);
                self.queue_call(erased, trigger, activation, limits.max_agent_calls)
            }
            Some((_, Err(message))) => {
                let error = ErrorOccurred::recoverable("agent", message, Some(trigger.id));
                self.queue
                    .push_back((Pending::of(&error), Some(trigger.id), None));
                None
            }
            None => self.rerun(started, trigger, limits),
        }
    }

    /// Queues an agent call again, with the prompt and model it was first started with.
    pub(super) fn rerun(
        &mut self,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        let agent = &started.agent;
        let Some(erased) = self.wf.agents.iter().find(|a| a.spec().name == *agent) else {
            self.queue.push_back((
                Pending::of(&ErrorOccurred::recoverable("resume", format!(
                        "agent `{agent}` is not part of workflow `{}` any more; its interrupted call is not run again",
                        self.wf.name
                    ), Some(trigger.id))),
                Some(trigger.id),
                None,
            ));
            return None;
        };
        let activation = erased.reactivate(self.fold.state(), &trigger, &started);
        self.queue_call(
            Arc::clone(erased),
            trigger,
            activation,
            limits.max_agent_calls,
        )
    }
}
