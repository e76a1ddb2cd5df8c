//! Recording: everything one event causes staged as one unit, appended all or nothing when the
//! queue runs dry, then shown to the renderers; the leftovers of a stopped run; snapshots.

use super::*;

impl<S: WorkflowState> Run<'_, S> {
    /// Folds events into the batch (not durable yet): for each in order, folds it, queues what
    /// its handler emits and follows requests, errors and usage. Returns their seqs.
    pub(super) fn stage(&mut self, unit: Unit) -> std::ops::Range<u64> {
        let first = self.staged;
        for (pending, caused_by) in unit {
            let mut event = Envelope::new(pending.name, pending.payload, caused_by);
            event.version = pending.version;
            if let Some(id) = self.next_id.take() {
                event.id = id;
            } else if event.name == UserInput::NAME
                && let Some(id) = self.input_id.take()
            {
                event.id = id;
            }
            let (applied, event) = self.window.apply_kept(&mut self.fold, event);
            if matches!(applied, Applied::Handled(_) | Applied::Panicked(_)) {
                self.state_hashes.changed();
            }
            match applied {
                Applied::Handled(emit) => {
                    self.queue.extend(
                        emit.into_pending()
                            .into_iter()
                            .map(|p| (p, Some(event.id), None)),
                    );
                }
                Applied::Panicked(message) => {
                    let error = ErrorOccurred::recoverable(
                        "handler",
                        format!("the handler for `{}` panicked: {message}", event.name),
                        Some(event.id),
                    );
                    self.queue
                        .push_back((Pending::of(&error), Some(event.id), None));
                }
                Applied::Skipped | Applied::Undecodable(_) => {}
            }
            match event.name.as_ref() {
                AgentCompleted::NAME => {
                    if let Ok(completed) = event.decode::<AgentCompleted>() {
                        self.usage += completed.usage;
                        self.cost += completed.cost.unwrap_or(0.0);
                    }
                }
                ErrorOccurred::NAME => self.errors += 1,
                _ => self.open_requests.follow(event, false),
            }
            self.queued.follow(self.staged, event);
            self.staged += 1;
        }
        first..self.staged
    }

    /// Appends the batch in one all-or-nothing append; once it is durable, shows it to the
    /// renderers and starts the agent calls it holds (or, when `launch` is false because the
    /// run is ending, counts them as running so they are closed as interrupted).
    pub(super) async fn flush(&mut self, launch: bool) -> Result<(), Error> {
        if self.staged > self.len {
            self.hash_state();
            let events = self.window.from(self.len);
            let store = &self.wf.store;
            store
                .append(&self.session, events, self.len)
                .await
                .map_err(|err| match err {
                    StoreError::Conflict {
                        expected, actual, ..
                    } => Error::SessionBusy {
                        session: self.session.clone(),
                        reason: format!(
                            "another writer recorded into it: this turn expected it at seq {expected} but it is at seq {actual}; nothing of this batch was recorded"
                        ),
                    },
                    StoreError::Fenced { token, current, .. } => Error::SessionBusy {
                        session: self.session.clone(),
                        reason: format!(
                            "this process's claim on it (claim {token}) was taken over by another process (claim {current}), which runs it now; nothing of this batch was recorded"
                        ),
                    },
                    err => Error::store(store.as_ref(), Some(&self.session), err),
                })?;
            if let (Some(acknowledge), Some(first)) = (self.acknowledge.take(), events.first()) {
                acknowledge(CommandRecorded {
                    seq: self.len,
                    id: first.id,
                });
            }
            for event in events {
                self.renderers.send(event);
            }
            self.snapshots.recorded(events);
            self.len = self.staged;
            self.answer_recorded();
        }
        for task in std::mem::take(&mut self.launches) {
            if launch {
                self.launch(task);
            } else {
                self.running
                    .insert(task.call, (task.agent.spec().name, task.trigger.id));
            }
        }
        let keep_from = self.fold.checkpoint_position().min(self.len);
        self.window.trim(keep_from);
        // Every folded event is recorded: the state is the state after `len` events. (A
        // turn that is ending saves its snapshot once `workflow:completed` is recorded.)
        if launch && self.snapshots.mid_turn_due(self.len) {
            self.save_snapshot(true).await;
        }
        Ok(())
    }

    /// Records the state's hash on the batch's last event when one is due (see
    /// [`StateHashes`]). A state whose JSON does not come back the same once decoded (a
    /// `HashSet`, whose order differs in every process; a field serde skips) cannot be checked
    /// by another process: hashing stops for the turn, with a warning that says why.
    fn hash_state(&mut self) {
        let ends_turn = self
            .window
            .last_mut()
            .is_some_and(|last| last.name == WorkflowCompleted::NAME);
        if !self.state_hashes.due(ends_turn) {
            return;
        }
        let started = std::time::Instant::now();
        match reproducible_hash(self.fold.state()) {
            Ok(hash) => {
                if let Some(last) = self.window.last_mut() {
                    last.state_hash = Some(hash);
                }
                self.state_hashes.hashed(started.elapsed());
            }
            Err(why) => {
                tracing::warn!(session = %self.session, workflow = %self.wf.name, "no state hashes are recorded for this turn: {why}");
                self.state_hashes.stop();
            }
        }
    }

    pub(super) async fn record_leftovers(
        &mut self,
        reason: StopReason,
        rx: &mut UnboundedReceiver<AgentMessage>,
    ) -> Result<(), Error> {
        self.flush(false).await?;
        // A turn stopped from outside (a stop, an interrupting or rolling-back input) ends
        // where it was stopped: what its calls send after that is not recorded, and they
        // are closed as interrupted, so a re-execution that stops at the same position
        // records the same, whatever the calls' timing.
        let stopped = matches!(
            reason,
            StopReason::Cancelled | StopReason::Interrupted | StopReason::RolledBack
        );
        while let Some(message) = (!stopped).then(|| rx.try_recv().ok()).flatten() {
            let (unit, after) = unit_of::<S>(message);
            self.stage(unit);
            if let Some(AfterRecord::Finish(call)) = after {
                self.running.remove(&call);
            }
        }
        let mut interrupted: Vec<_> = self.running.drain().collect();
        interrupted.sort_unstable_by_key(|(call, _)| *call);
        let closes = interrupted
            .into_iter()
            .map(|(_, (agent, trigger))| {
                let completed = AgentCompleted {
                    agent: agent.to_owned(),
                    outcome: Outcome::Interrupted,
                    usage: Usage::default(),
                    cost: None,
                    error: Some(format!(
                        "the run ended ({}) while the agent was working",
                        reason.as_str()
                    )),
                    output: None,
                };
                (Pending::of(&completed), Some(trigger))
            })
            .collect();
        self.stage(closes);
        if reason == StopReason::RolledBack {
            self.stage_rollback().await?;
        }
        // What was sent to the turn and not taken yet is recorded before its end.
        self.stage_last_commands();
        self.flush(false).await?;
        // Counted before it is staged: `workflow:completed` itself is no error.
        let completed = WorkflowCompleted {
            reason: reason.as_str().to_owned(),
            open_requests: self.open_requests.ids().to_vec(),
            errors: self.errors,
            queued: self.queued.refs(),
        };
        self.stage(vec![(Pending::of(&completed), None)]);
        self.flush(false).await
    }

    /// Saves the state as a snapshot at `len`, mid-turn or at the turn's end; only called when
    /// every folded event is recorded, so the state is the state after `len` events. A snapshot
    /// is derived data: failing to save one is a warning.
    pub(super) async fn save_snapshot(&mut self, mid_turn: bool) {
        debug_assert_eq!(
            self.fold.position(),
            self.len,
            "a snapshot of a state not recorded"
        );
        // Written out once: the store keeps the text as it is.
        let state = match serde_json::value::to_raw_value(self.fold.state()) {
            Ok(state) => state,
            Err(err) => {
                tracing::warn!(session = %self.session, error = %err, "the state does not serialize; no snapshot saved");
                self.snapshots.off = true;
                return;
            }
        };
        let bytes = state.get().len() as u64;
        let saved = self
            .wf
            .store
            .snapshot_json(&self.session, self.len, state)
            .await;
        self.snapshots.tried(self.len, bytes);
        match saved {
            Ok(()) => {
                self.snapshots.at = self.len;
                self.snapshots.saved_mid_turn |= mid_turn;
            }
            Err(err) if mid_turn => {
                tracing::warn!(session = %self.session, error = %crate::adapter::ErrorChain(&err), "could not save a snapshot mid-turn; reads of this turn fold a longer tail");
            }
            Err(err) => {
                tracing::warn!(session = %self.session, error = %crate::adapter::ErrorChain(&err), "could not save the turn's snapshot; the next turn folds a longer tail");
            }
        }
    }
}

/// The hash of `state` as another process would compute it: its JSON, decoded into the state
/// type and encoded again, must be the same JSON; else why not.
fn reproducible_hash<S: WorkflowState>(state: &S) -> Result<String, String> {
    let value = serde_json::to_value(state)
        .map_err(|err| format!("the state does not serialize: {err}"))?;
    let decoded: S = serde_json::from_value(value.clone())
        .map_err(|err| format!("the state's JSON does not decode into its type: {err}"))?;
    let again = serde_json::to_value(&decoded)
        .map_err(|err| format!("the state does not serialize: {err}"))?;
    let hash = crate::state_hash::json_hash(&value);
    if crate::state_hash::json_hash(&again) != hash {
        return Err("the state's JSON changes when it is decoded and encoded again (a HashSet, whose order differs in every process, or a field serde skips or defaults): use a BTreeSet or an IndexSet so that another process can check it".to_owned());
    }
    Ok(hash)
}
