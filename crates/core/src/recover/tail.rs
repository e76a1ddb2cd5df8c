//! Folding a session's tail while matching each event's expected consequences against what was
//! recorded after it: what a cut-off turn left unrecorded, and the calls it left open.

use super::*;

/// The tail of a session, folded and matched against what each event should have caused.
pub(super) struct Tail<'w, S> {
    pub(super) wf: &'w Inner<S>,
    pub(super) session: SessionId,
    pub(super) fold: Fold<S>,
    pub(super) window: Window,
    pub(super) open_requests: OpenRequests,
    /// Inputs queued and not answered yet.
    pub(super) queued: QueuedInputs,
    /// Consequences of recorded events not recorded yet: cause -> (cause's seq, in order).
    pub(super) expected: HashMap<EventId, (u64, VecDeque<Expected>)>,
    /// Events that activated agents, while a call of theirs is expected or open.
    pub(super) triggers: HashMap<EventId, (Envelope, usize)>,
    /// Open calls by (trigger, agent), with the seq of their `agent:started`.
    pub(super) open_calls: HashMap<CallKey, (u64, OpenCall)>,
    /// Calls closed as interrupted by a resume or a fork and not started again yet, by
    /// (trigger, agent), with the seq of their close: they are owed a rerun.
    pub(super) owed_reruns: HashMap<CallKey, (u64, OpenCall)>,
    pub(super) last_status: Option<SessionStatus>,
}

impl<'w, S: WorkflowState> Tail<'w, S> {
    pub(super) fn new(wf: &'w Inner<S>, session: &SessionId, state: S, position: u64) -> Self {
        Self {
            wf,
            session: session.clone(),
            fold: Fold::at(state, position).restoring(),
            window: Window::new(position),
            open_requests: OpenRequests::default(),
            queued: QueuedInputs::default(),
            expected: HashMap::new(),
            triggers: HashMap::new(),
            open_calls: HashMap::new(),
            owed_reruns: HashMap::new(),
            last_status: None,
        }
    }

    /// Starts a fork's tail owing what its parent had under way at the fork point (what the
    /// fork records first: the rest of a cut final record, then what the parent had not
    /// recorded, and the calls it closes and runs again).
    pub(super) fn inherit(&mut self, from: ForkFrom<S>) {
        let ForkFrom {
            derived,
            completing,
        } = from;
        let mut expect = |cause: EventId, expected: Expected| {
            self.expected
                .entry(cause)
                .or_insert_with(|| (0, VecDeque::new()))
                .1
                .push_back(expected);
        };
        for (pending, cause) in completing {
            if let Some(cause) = cause {
                expect(cause, Expected::Event(pending));
            }
        }
        let mut triggers = Vec::new();
        for item in derived.unrecorded {
            match item {
                Unrecorded::Event(pending, cause) => expect(cause, Expected::Event(pending)),
                Unrecorded::Start { started, trigger } => {
                    expect(trigger.id, Expected::Start { started });
                    triggers.push(trigger);
                }
            }
        }
        for call in derived.open_calls {
            if let Some(trigger) = &call.trigger {
                triggers.push(trigger.clone());
            }
            let key = CallKey::new(call.started.agent.as_str(), call.trigger_id);
            self.open_calls.insert(key, (0, call));
        }
        for trigger in triggers {
            self.triggers
                .entry(trigger.id)
                .or_insert_with(|| (trigger.clone(), 0))
                .1 += 1;
        }
    }

    /// The event just before the snapshot: not folded (the snapshot holds it), read only for
    /// the open requests a turn-ending `workflow:completed` lists.
    pub(super) fn look_back(&mut self, event: &Envelope) {
        self.end_of_turn(event);
    }

    pub(super) fn end_of_turn(&mut self, event: &Envelope) {
        if event.name != WorkflowCompleted::NAME {
            return;
        }
        match event.decode::<WorkflowCompleted>() {
            Ok(completed) => {
                self.open_requests = OpenRequests::from_ids(completed.open_requests);
                // Keeps the events of inputs this tail saw queued.
                let mut queued = QueuedInputs::from_refs(completed.queued);
                for event in self.queued.events() {
                    if let Some(seq) = queued
                        .refs()
                        .iter()
                        .find(|r| r.id == event.id)
                        .map(|r| r.seq)
                    {
                        queued.read(crate::builtin::QueuedRef { id: event.id, seq }, event);
                    }
                }
                self.queued = queued;
            }
            Err(err) => {
                tracing::warn!(session = %self.session, error = %err, "a `workflow:completed` does not decode; its open requests are unknown");
            }
        }
        // A turn's end interrupts and closes what was running: nothing carries over, not even
        // a rerun a resume owed (the turn ended without it; inputs it left queued are what the
        // next turn takes up).
        self.expected.clear();
        self.triggers.clear();
        self.open_calls.clear();
        self.owed_reruns.clear();
    }

    pub(super) fn absorb(&mut self, seq: u64, event: Envelope) -> Result<(), Error> {
        self.end_of_turn(&event);
        self.last_status = Some(SessionStatus::after(&event.name, &event.payload));
        self.match_expected(&event);
        self.track(seq, &event);
        let (applied, event) = self.window.apply_kept(&mut self.fold, event);
        let mut consequences: VecDeque<Expected> = match applied {
            Applied::Handled(emit) => emit
                .into_pending()
                .into_iter()
                .map(Expected::Event)
                .collect(),
            Applied::Panicked(message) => {
                VecDeque::from([Expected::Event(Pending::of(&ErrorOccurred::recoverable(
                    "handler",
                    format!("the handler for `{}` panicked: {message}", event.name),
                    Some(event.id),
                )))])
            }
            Applied::Skipped => VecDeque::new(),
            Applied::Undecodable(message) => {
                return Err(Error::Undecodable {
                    session: self.session.clone(),
                    seq,
                    name: event.name.to_string(),
                    message,
                });
            }
        };
        let until = self
            .wf
            .until
            .as_ref()
            .is_some_and(|until| until(self.fold.state()));
        let mut starts = 0;
        if !until && event.name != WorkflowCompleted::NAME {
            for (agent, activation) in activations(&self.wf.agents, self.fold.state(), event) {
                match activation {
                    Err(message) => consequences.push_back(Expected::Event(Pending::of(
                        &ErrorOccurred::recoverable("agent", message, Some(event.id)),
                    ))),
                    Ok(activation) => {
                        starts += 1;
                        let name = agent.spec().name.to_owned();
                        consequences.push_back(Expected::Start {
                            started: Box::new(AgentStarted {
                                agent: name,
                                model: activation.model,
                                provider: None,
                                system: activation.system,
                                messages: activation
                                    .messages
                                    .iter()
                                    .map(crate::ChatMessage::recorded)
                                    .collect(),
                                prompt: activation.prompt,
                                reply: activation.reply,
                            }),
                        });
                    }
                }
            }
        }
        if starts > 0 {
            self.triggers.insert(event.id, (event.clone(), starts));
        }
        if !consequences.is_empty() {
            self.expected.insert(event.id, (seq, consequences));
        }
        let keep_from = self.fold.checkpoint_position();
        self.window.trim(keep_from);
        Ok(())
    }

    /// Crosses off the next expected consequence of this event's cause, if this is it.
    pub(super) fn match_expected(&mut self, event: &Envelope) {
        let Some(cause) = event.caused_by else {
            return;
        };
        let Some((_, expected)) = self.expected.get_mut(&cause) else {
            return;
        };
        if expected
            .front()
            .is_some_and(|next| next.name() == event.name)
        {
            expected.pop_front();
            if expected.is_empty() {
                self.expected.remove(&cause);
            }
        }
    }

    /// Follows requests, answers and agent calls.
    pub(super) fn track(&mut self, seq: u64, event: &Envelope) {
        // A fork begins with the requests open in its parent at the fork point.
        self.open_requests.follow(event, seq == 0);
        self.queued.follow(seq, event);
        match event.name.as_ref() {
            AgentStarted::NAME => {
                let Ok(started) = event.decode::<AgentStarted>() else {
                    return;
                };
                let trigger = event
                    .caused_by
                    .and_then(|id| self.triggers.get(&id))
                    .map(|(trigger, _)| trigger.clone());
                let key = CallKey::new(started.agent.as_str(), event.caused_by);
                self.owed_reruns.remove(&key);
                self.open_calls.insert(
                    key,
                    (
                        seq,
                        OpenCall {
                            started,
                            trigger,
                            trigger_id: event.caused_by,
                        },
                    ),
                );
            }
            AgentCompleted::NAME => {
                let Ok(completed) = event.decode::<AgentCompleted>() else {
                    return;
                };
                // An interrupted call is run again by a resume, under the same trigger: keep
                // the trigger for that rerun (and for a resume of it, should it be cut too), and
                // the call, owed its rerun until that starts.
                let key = CallKey::new(completed.agent, event.caused_by);
                let Some((_, call)) = self.open_calls.remove(&key) else {
                    return;
                };
                if completed.outcome == crate::builtin::Outcome::Interrupted {
                    self.owed_reruns.insert(key, (seq, call));
                } else if let Some(cause) = event.caused_by
                    && let Some((_, refs)) = self.triggers.get_mut(&cause)
                {
                    *refs = refs.saturating_sub(1);
                    if *refs == 0 {
                        self.triggers.remove(&cause);
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn finish(
        self,
        len: u64,
        snapshot_at: u64,
        snapshot_bytes: Option<u64>,
        listed: SessionStatus,
    ) -> Derived<S> {
        let status = self.last_status.unwrap_or(listed);
        let mut unrecorded = Vec::new();
        let mut open_calls = Vec::new();
        if status.is_running() {
            let mut expected: Vec<_> = self.expected.into_iter().collect();
            expected.sort_by_key(|(_, (seq, _))| *seq);
            for (cause, (_, missing)) in expected {
                for item in missing {
                    match item {
                        Expected::Event(pending) => {
                            unrecorded.push(Unrecorded::Event(pending, cause));
                        }
                        Expected::Start { started } => {
                            if let Some((trigger, _)) = self.triggers.get(&cause) {
                                unrecorded.push(Unrecorded::Start {
                                    started,
                                    trigger: trigger.clone(),
                                });
                            }
                        }
                    }
                }
            }
            // Calls a resume or a fork closed and did not start again yet: started now.
            let mut owed: Vec<(u64, OpenCall)> = self.owed_reruns.into_values().collect();
            owed.sort_by_key(|(seq, _)| *seq);
            for (_, call) in owed {
                match call.trigger {
                    Some(trigger) => unrecorded.push(Unrecorded::Start {
                        started: Box::new(call.started),
                        trigger,
                    }),
                    None => {
                        tracing::warn!(session = %self.session, agent = %call.started.agent, "an interrupted call's trigger is not in the session or its ancestors; it is not run again");
                    }
                }
            }
            let mut calls: Vec<(u64, OpenCall)> = self.open_calls.into_values().collect();
            calls.sort_by_key(|(seq, _)| *seq);
            open_calls.extend(calls.into_iter().map(|(_, call)| call));
        }
        Derived {
            state: self.fold.into_state(),
            len,
            snapshot_at,
            snapshot_bytes,
            status,
            open_requests: self.open_requests.into_ids(),
            unrecorded,
            open_calls,
            queued: self.queued,
        }
    }
}
