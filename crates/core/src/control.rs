//! [`TurnControl`]: how a second input, or a stop, reaches a turn while it runs.
//!
//! A running turn is the only writer of its session, so whatever arrives for the session while
//! it runs is recorded by the turn itself: its event loop takes commands from a
//! [`TurnInbox`] between two events (a safe point), records each as a built-in event, and
//! answers the sender once that event is durable ([`CommandRecorded`]). What happens next is the
//! command's: an `input:queued` is answered after the turn (or first, for `interrupt` and
//! `rollback`, which end the turn), a steer goes to the running agent calls, a stop ends the
//! turn `cancelled`.
//!
//! A command sent after the turn stopped taking them comes back to the sender
//! ([`TurnControl::send`] fails with it), so whoever started the turn can start the next one
//! with it instead: nothing sent is dropped unseen.
//!
//! ```
//! use openharness_core::adapter::{TurnCommand, turn_control};
//! use openharness_core::builtin::{InputQueued, QueueMode};
//! let (control, inbox) = turn_control();
//! drop(inbox); // the turn is over
//! let (command, _recorded) = TurnCommand::queue(InputQueued::new("and then?", QueueMode::Enqueue));
//! assert!(control.send(command).is_err(), "a turn that ended hands the command back");
//! ```

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::builtin::InputQueued;
use crate::event::EventId;

/// The event a command was recorded as, once durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandRecorded {
    /// Its seq in the session.
    pub seq: u64,
    /// Its id.
    pub id: EventId,
}

/// Why a command was not recorded: the store failed as the turn recorded it (the turn stops
/// with that error), or the turn ended before it could.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not recorded: {0}")]
pub struct NotRecorded(pub String);

/// What the sender of a command is told: the event it was recorded as, or why it was not.
pub type Acknowledgement = oneshot::Receiver<Result<CommandRecorded, NotRecorded>>;

/// Where a turn tells the sender of a command what became of it.
pub(crate) type Answer = oneshot::Sender<Result<CommandRecorded, NotRecorded>>;

/// Something for a running turn to record and act on.
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnCommand {
    /// A second input: recorded as `input:queued` (with `fields` beside its own, as
    /// [`RunOptions::input_fields`](crate::RunOptions::input_fields) adds them to a
    /// `user:input`), then handled as its mode says.
    Queue {
        /// The input and its mode.
        input: InputQueued,
        /// Data an application keeps with the message (a client's message id, tags).
        fields: Map<String, Value>,
        /// Told once it is recorded.
        recorded: Answer,
    },
    /// Stop the turn: `stop:requested` is recorded and the turn ends `cancelled`.
    Stop {
        /// Why, when the asker said.
        reason: Option<String>,
        /// Told once it is recorded.
        recorded: Answer,
    },
}

impl TurnCommand {
    /// A second input, and where to hear that it was recorded.
    pub fn queue(input: InputQueued) -> (Self, Acknowledgement) {
        Self::queue_with(input, Map::new())
    }

    /// A second input with extra fields recorded beside its own.
    pub fn queue_with(input: InputQueued, fields: Map<String, Value>) -> (Self, Acknowledgement) {
        let (recorded, heard) = oneshot::channel();
        (
            Self::Queue {
                input,
                fields,
                recorded,
            },
            heard,
        )
    }

    /// A stop, and where to hear that it was recorded.
    pub fn stop(reason: Option<String>) -> (Self, Acknowledgement) {
        let (recorded, heard) = oneshot::channel();
        (Self::Stop { reason, recorded }, heard)
    }

    /// Tells the sender why the command was not recorded.
    pub fn refuse(self, why: impl Into<String>) {
        let _ = self.into_answer().send(Err(NotRecorded(why.into())));
    }

    /// Where the sender hears what became of the command.
    pub(crate) fn into_answer(self) -> Answer {
        match self {
            Self::Queue { recorded, .. } | Self::Stop { recorded, .. } => recorded,
        }
    }
}

/// The sending half: kept by whoever started the turn. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TurnControl(mpsc::UnboundedSender<TurnCommand>);

/// The receiving half: given to the turn with
/// [`RunOptions::control`](crate::RunOptions::control).
#[derive(Debug)]
pub struct TurnInbox(pub(crate) mpsc::UnboundedReceiver<TurnCommand>);

/// A new control and the inbox it sends to.
pub fn turn_control() -> (TurnControl, TurnInbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    (TurnControl(tx), TurnInbox(rx))
}

impl TurnControl {
    /// Sends `command` to the turn; it comes back when the turn no longer takes commands (it
    /// ended, or is ending and has recorded its last), for the sender to act on otherwise.
    pub fn send(&self, command: TurnCommand) -> Result<(), TurnCommand> {
        self.0.send(command).map_err(|returned| returned.0)
    }

    /// Whether the turn no longer takes commands.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl TurnInbox {
    /// The next command, if one is waiting.
    pub(crate) fn try_next(&mut self) -> Option<TurnCommand> {
        self.0.try_recv().ok()
    }

    /// Waits for the next command (never, once every sender is gone).
    pub(crate) async fn next(&mut self) -> Option<TurnCommand> {
        self.0.recv().await
    }

    /// Takes no more commands: the ones sent from now on come back to their senders. Returns
    /// those already waiting, to record before the turn ends.
    pub(crate) fn close(&mut self) -> Vec<TurnCommand> {
        self.0.close();
        let mut waiting = Vec::new();
        while let Ok(command) = self.0.try_recv() {
            waiting.push(command);
        }
        waiting
    }
}
