//! Commands a running turn takes at its safe points ([`TurnCommand`]): a second input, recorded
//! as `input:queued` and then handled as its mode says, and a stop, recorded as
//! `stop:requested`. Each sender is told the event once it is durable. A turn that ends
//! records the commands still waiting for it before its `workflow:completed`; the ones sent
//! after that come back to their senders.

use super::*;
use crate::builtin::{InputQueued, QueueMode, StopRequested, TurnRolledBack};

impl<S: WorkflowState> Run<'_, S> {
    /// Records `command` and acts on it: the reason the turn ends now, if it does.
    pub(super) async fn command(
        &mut self,
        command: TurnCommand,
    ) -> Result<Option<StopReason>, Error> {
        let (pending, id, answer, then) = staged_command(command);
        self.next_id = id;
        let at = self.stage(vec![(pending, None)]).start;
        let steer = matches!(then, Then::Queued(QueueMode::Steer));
        self.answers.push((answer, at, steer));
        self.flush(true).await?;
        Ok(match then {
            Then::Queued(QueueMode::Enqueue | QueueMode::Steer) => None,
            Then::Queued(QueueMode::Interrupt) => Some(StopReason::Interrupted),
            Then::Queued(QueueMode::Rollback) => Some(StopReason::RolledBack),
            Then::Stop => Some(StopReason::Cancelled),
        })
    }

    /// Takes no more commands, and stages those already sent (a turn that ends records them
    /// all; their modes no longer matter, the next turns answer the inputs in order).
    pub(super) fn stage_last_commands(&mut self) {
        let mut last: Vec<TurnCommand> = std::mem::take(&mut self.scheduled)
            .into_iter()
            .map(|(_, command)| command)
            .collect();
        if let Some(inbox) = self.control.as_mut() {
            last.extend(inbox.close());
        }
        for command in last {
            let (pending, id, answer, _) = staged_command(command);
            self.next_id = id;
            let at = self.stage(vec![(pending, None)]).start;
            // The turn is ending: no call takes a steer any more, the next turn answers it.
            self.answers.push((answer, at, false));
        }
    }

    /// Tells the senders of the commands recorded so far which events they are, offering
    /// each recorded steer to the running calls first (a call that makes its next model call
    /// once the sender hears takes it).
    pub(super) fn answer_recorded(&mut self) {
        for (answer, seq, steer) in std::mem::take(&mut self.answers) {
            let event = self.window.get(seq);
            if let (true, Some(event)) = (steer, event) {
                let text = event.payload["text"].as_str().unwrap_or_default();
                self.steers.offer(event.id, text.to_owned());
            }
            let _ = answer.send(match event {
                Some(event) => Ok(CommandRecorded { seq, id: event.id }),
                None => Err(crate::control::NotRecorded(format!(
                    "the event at seq {seq} left the turn's window before it was answered"
                ))),
            });
        }
    }

    /// Tells the senders of commands staged and not recorded why (the store failed).
    pub(super) fn refuse_unrecorded(&mut self, why: &Error) {
        for (answer, _, _) in std::mem::take(&mut self.answers) {
            let _ = answer.send(Err(crate::control::NotRecorded(why.to_string())));
        }
    }

    /// Stages `turn:rolled_back`: the state back to what it was at the turn's first seq.
    pub(super) async fn stage_rollback(&mut self) -> Result<(), Error> {
        let from = self.first_seq;
        let state = crate::recover::state_at(self.wf, &self.session, from, 0).await?;
        let state = serde_json::to_value(&state).map_err(|err| Error::Config {
            workflow: self.wf.name.clone(),
            message: format!("the state before the turn does not serialize: {err}"),
        })?;
        let rolled_back = TurnRolledBack {
            from,
            state_hash: crate::state_hash::json_hash(&state),
            state,
        };
        self.stage(vec![(Pending::of(&rolled_back), None)]);
        Ok(())
    }
}

/// What to do once a command is recorded.
enum Then {
    Queued(QueueMode),
    Stop,
}

/// The event that records `command` (and the id it is recorded with, when the sender chose
/// one), where to tell its sender, and what it asks for next.
fn staged_command(command: TurnCommand) -> (Pending, Option<EventId>, Answer, Then) {
    match command {
        TurnCommand::Queue {
            id,
            input,
            fields,
            recorded,
        } => {
            let mode = input.mode;
            let mut pending = Pending::of(&InputQueued { ..input });
            if let serde_json::Value::Object(payload) = &mut pending.payload {
                for (name, value) in fields {
                    payload.entry(name).or_insert(value);
                }
            }
            (pending, Some(id), recorded, Then::Queued(mode))
        }
        TurnCommand::Stop { reason, recorded } => (
            Pending::of(&StopRequested { reason }),
            None,
            recorded,
            Then::Stop,
        ),
    }
}
