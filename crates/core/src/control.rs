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

use crate::builtin::{InputQueued, QueueMode};
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
        /// The id its `input:queued` is recorded with (chosen by the sender, so it can wait
        /// for the turn that answers it before the turn records it).
        id: EventId,
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
                id: EventId::new(),
                input,
                fields,
                recorded,
            },
            heard,
        )
    }

    /// The id a queued input is recorded with (`None` for a stop).
    pub fn id(&self) -> Option<EventId> {
        match self {
            Self::Queue { id, .. } => Some(*id),
            Self::Stop { .. } => None,
        }
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
    pub fn send(&self, command: TurnCommand) -> Result<(), Box<TurnCommand>> {
        self.0
            .send(command)
            .map_err(|returned| Box::new(returned.0))
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

/// What a second input to a session gets while a turn runs on it (set per request with
/// [`RunOptions::on_busy`](crate::RunOptions::on_busy), defaulted per host or server). Every
/// answer but `reject` is recorded at once as `input:queued` in the running turn.
///
/// | policy | what happens | replay and fork |
/// |---|---|---|
/// | `reject` | refused (`SessionBusy`, HTTP `409`); nothing recorded | nothing to replay |
/// | `enqueue` | recorded now, answered in order, each in a turn of its own, after the running turn | a fork after `input:queued` answers it too |
/// | `interrupt` | the running turn stops at its next safe point (`interrupted`); a new turn answers with both inputs in the state | the cut calls are closed `interrupted` in the log |
/// | `rollback` | the running turn is abandoned; `turn:rolled_back` restores the state before it; a new turn answers | every fold takes the restored state |
/// | `steer` | given to the running agent calls at their next model call (`input:steered`); answered in its own turn if none took it | the steered request is in the log |
///
/// A [`Workflow`](crate::Workflow) used without a host can only refuse (`reject`) or wait for
/// the running turn (any other policy); a host records and routes them as above.
///
/// ```
/// use openharness_core::BusyPolicy;
/// let policy: BusyPolicy = "enqueue".parse()?;
/// assert_eq!(policy, BusyPolicy::Enqueue);
/// assert_eq!(policy.to_string(), "enqueue");
/// assert!("later".parse::<BusyPolicy>().unwrap_err().contains("reject, enqueue, interrupt, rollback, steer"));
/// # Ok::<(), String>(())
/// ```
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BusyPolicy {
    /// Refuse it; nothing is recorded.
    #[default]
    Reject,
    /// Record it now; answer it after the running turn.
    Enqueue,
    /// Record it now; stop the running turn at its next safe point and answer it.
    Interrupt,
    /// Record it now; abandon the running turn (its state restored) and answer it.
    Rollback,
    /// Record it now; give it to the running agent calls at their next model call.
    Steer,
}

impl BusyPolicy {
    /// Every policy, in the order documented.
    pub const ALL: [Self; 5] = [
        Self::Reject,
        Self::Enqueue,
        Self::Interrupt,
        Self::Rollback,
        Self::Steer,
    ];

    /// The policy as a word (`reject`, `enqueue`, `interrupt`, `rollback`, `steer`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Enqueue => "enqueue",
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
            Self::Steer => "steer",
        }
    }

    /// How `input:queued` records an input taken under this policy (`None` for `reject`).
    pub fn mode(self) -> Option<QueueMode> {
        match self {
            Self::Reject => None,
            Self::Enqueue => Some(QueueMode::Enqueue),
            Self::Interrupt => Some(QueueMode::Interrupt),
            Self::Rollback => Some(QueueMode::Rollback),
            Self::Steer => Some(QueueMode::Steer),
        }
    }
}

impl std::fmt::Display for BusyPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BusyPolicy {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|policy| policy.as_str() == word.trim())
            .ok_or_else(|| {
                format!(
                    "`{word}` is not a busy policy: one of {}",
                    Self::ALL.map(Self::as_str).join(", ")
                )
            })
    }
}
