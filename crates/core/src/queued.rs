//! [`QueuedInputs`]: the `input:queued` events a session has not answered yet, followed an
//! event at a time. Like `open_requests`, the one bookkeeping shared by the runtime (as it
//! records a turn) and by recovery (as it reads a log back to resume or fork it).
//!
//! An input queued while a turn runs is answered by a later turn's `user:input` caused by it,
//! or taken by a running agent call as `input:steered`. A turn that ends with some unanswered
//! lists them in its `workflow:completed` (`queued`, with their seqs), so a reader that starts
//! from a snapshot after that event still knows them and where to read them.

use crate::builtin::{InputQueued, InputSteered, QueuedRef, UserInput};
use crate::event::{Envelope, Event};

/// The inputs queued and not answered yet, oldest first, each with the event when it was
/// seen (a reader that started after it knows only where it is).
#[derive(Debug, Clone, Default)]
pub(crate) struct QueuedInputs(Vec<(QueuedRef, Option<Envelope>)>);

impl QueuedInputs {
    /// Inputs a turn's end listed.
    pub(crate) fn from_refs(refs: Vec<QueuedRef>) -> Self {
        Self(refs.into_iter().map(|r| (r, None)).collect())
    }

    /// Follows the event at `seq`: an input is queued, a `user:input` caused by one answers it,
    /// an `input:steered` delivers it.
    pub(crate) fn follow(&mut self, seq: u64, event: &Envelope) {
        match event.name.as_ref() {
            InputQueued::NAME => self
                .0
                .push((QueuedRef { id: event.id, seq }, Some(event.clone()))),
            UserInput::NAME => {
                if let Some(cause) = event.caused_by {
                    self.0.retain(|(queued, _)| queued.id != cause);
                }
            }
            InputSteered::NAME => {
                if let Ok(steered) = event.decode::<InputSteered>() {
                    self.0.retain(|(queued, _)| queued.id != steered.queued);
                }
            }
            _ => {}
        }
    }

    /// Where the unanswered inputs are, oldest first.
    pub(crate) fn refs(&self) -> Vec<QueuedRef> {
        self.0.iter().map(|(queued, _)| *queued).collect()
    }

    /// The events of the unanswered inputs whose events are known, oldest first.
    pub(crate) fn events(&self) -> Vec<Envelope> {
        self.0
            .iter()
            .filter_map(|(_, event)| event.clone())
            .collect()
    }

    /// The inputs whose events are not known yet (listed by a turn's end before the reader
    /// started), to read at their seqs.
    pub(crate) fn unread(&self) -> Vec<QueuedRef> {
        self.0
            .iter()
            .filter(|(_, event)| event.is_none())
            .map(|(queued, _)| *queued)
            .collect()
    }

    /// Gives the input `queued` its event, read from the store.
    pub(crate) fn read(&mut self, queued: QueuedRef, event: Envelope) {
        if let Some(entry) = self.0.iter_mut().find(|(r, _)| *r == queued) {
            entry.1 = Some(event);
        }
    }
}

/// The `user:input` that answers `queued` (an `input:queued` event): its payload without the
/// mode, everything else (text, images, controls, a client's extra fields) as queued. Record
/// it caused by `queued`.
pub(crate) fn answer_of(queued: &Envelope) -> crate::emit::Pending {
    let mut payload = queued.payload.clone();
    if let serde_json::Value::Object(fields) = &mut payload {
        fields.remove("mode");
    }
    crate::emit::Pending {
        name: UserInput::NAME.into(),
        payload,
        version: UserInput::VERSION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::QueueMode;
    use crate::emit::Pending;
    use crate::event::EventId;

    fn envelope<E: Event>(event: &E, caused_by: Option<EventId>) -> Envelope {
        let pending = Pending::of(event);
        Envelope::new(pending.name, pending.payload, caused_by)
    }

    #[test]
    fn an_input_stays_queued_until_answered_or_steered() {
        let mut queued = QueuedInputs::default();
        let first = envelope(&InputQueued::new("one", QueueMode::Enqueue), None);
        let second = envelope(&InputQueued::new("two", QueueMode::Steer), None);
        queued.follow(4, &first);
        queued.follow(9, &second);
        assert_eq!(
            queued.refs(),
            [
                QueuedRef {
                    id: first.id,
                    seq: 4
                },
                QueuedRef {
                    id: second.id,
                    seq: 9
                }
            ]
        );
        // A user:input caused by something else answers nothing.
        queued.follow(10, &envelope(&UserInput::new("other"), None));
        assert_eq!(queued.refs().len(), 2);
        let steered = InputSteered {
            agent: "assistant".into(),
            queued: second.id,
            text: "two".into(),
        };
        queued.follow(11, &envelope(&steered, None));
        assert_eq!(
            queued.refs(),
            [QueuedRef {
                id: first.id,
                seq: 4
            }]
        );
        let answer = answer_of(&first);
        assert_eq!(answer.name, UserInput::NAME);
        assert_eq!(answer.payload, serde_json::json!({ "text": "one" }));
        queued.follow(12, &envelope(&UserInput::new("one"), Some(first.id)));
        assert!(queued.refs().is_empty());
    }
}
