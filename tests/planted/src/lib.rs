//! Planted bugs that `replay` must catch, kept apart from the project's tests: a small order
//! ledger (`ledger`) and five copies of its handlers, each with one bug (`bugs`), behind one
//! program (`planted-bugs`, the CLI embedded with [`cli`]) whose `PLANTED_BUG` variable says
//! which handlers it registers under the one workflow name, `orders`.
//!
//! The suite (`tests/planted.rs`) records sessions with the fixed code (`PLANTED_BUG` unset),
//! then runs `replay --all` and `replay SESSION` with each bug and checks that the first
//! position reported is the one the bug must show at, worked out from the recording alone:
//!
//! | `PLANTED_BUG` | the bug | caught by | first position (seq) |
//! |---|---|---|---|
//! | `arithmetic` | a refund counted in units, not cents | the state hashes | the first hashed event at or after the first `refund:issued` |
//! | `dropped-event` | an order's handler no longer emits `points:earned` | the re-execution | the first `points:earned` |
//! | `reordered-list` | `insert(0, ..)` instead of `push` for an order line | the state hashes | the first hashed event at or after the second `order:placed` |
//! | `changed-default` | the state's `Default` VAT rate 19 instead of 20 | the state hashes | the first hashed event |
//! | `renamed-field` | `order:placed`'s `quantity` renamed `qty` with `#[serde(default)]`, no upcaster | the re-execution (today's payload), and the state hashes (old payloads decode to 0) | the first `order:placed` |
//!
//! `tests/false_alarms.rs` checks the other half: no recording in the repository, and no
//! fresh session of an example, parts from today's code.
//!
//! ```
//! use openharness_planted_bugs::Bug;
//! assert_eq!("reordered-list".parse::<Bug>(), Ok(Bug::ReorderedList));
//! assert_eq!(Bug::ALL.len(), 6);
//! ```

pub mod bugs;
pub mod ledger;

use std::fmt;
use std::str::FromStr;

use openharness::store::MemoryStore;
use openharness::{Workflow, WorkflowState};
use openharness_cli::Cli;

/// The variable that chooses the planted bug (unset or empty: none).
pub const PLANTED_BUG: &str = "PLANTED_BUG";

/// Which bug the ledger's handlers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// The fixed code.
    None,
    /// A refund counted in units instead of cents: only the state changes.
    Arithmetic,
    /// An order's handler no longer emits its follow-up event.
    DroppedEvent,
    /// An order line put at the front of the list instead of the back.
    ReorderedList,
    /// Another value in the state's `Default`.
    ChangedDefault,
    /// An event field renamed with `#[serde(default)]` and no upcaster.
    RenamedField,
}

impl Bug {
    /// Every choice, the fixed code first.
    pub const ALL: [Bug; 6] = [
        Bug::None,
        Bug::Arithmetic,
        Bug::DroppedEvent,
        Bug::ReorderedList,
        Bug::ChangedDefault,
        Bug::RenamedField,
    ];

    /// Its name, as `PLANTED_BUG` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Bug::None => "none",
            Bug::Arithmetic => "arithmetic",
            Bug::DroppedEvent => "dropped-event",
            Bug::ReorderedList => "reordered-list",
            Bug::ChangedDefault => "changed-default",
            Bug::RenamedField => "renamed-field",
        }
    }

    /// The bug `PLANTED_BUG` names (none when it is unset or empty).
    pub fn from_env() -> Result<Bug, UnknownBug> {
        match std::env::var(PLANTED_BUG) {
            Ok(name) if !name.trim().is_empty() => name.parse(),
            _ => Ok(Bug::None),
        }
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `PLANTED_BUG` that names no bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBug(pub String);

impl fmt::Display for UnknownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        write!(
            f,
            "{PLANTED_BUG}=`{}` names no planted bug; the choices are {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownBug {}

impl FromStr for Bug {
    type Err = UnknownBug;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Bug::ALL
            .into_iter()
            .find(|bug| bug.name() == name.trim())
            .ok_or_else(|| UnknownBug(name.to_owned()))
    }
}

/// The ledger workflow with the handlers of state type `S` (the fixed [`ledger::Ledger`] or a
/// variant of [`bugs`]), starting from `S::default()`.
///
/// ```
/// # fn main() -> Result<(), openharness::Error> {
/// use openharness::prelude::*;
/// use openharness_planted_bugs::{ledger::Ledger, workflow};
/// let orders = workflow::<Ledger>()?;
/// assert_eq!(orders.name(), "orders");
/// # Ok(()) }
/// ```
pub fn workflow<S: WorkflowState + Default>() -> Result<Workflow<S>, openharness::Error> {
    Workflow::builder(ledger::WORKFLOW_NAME)
        .initial_state(S::default())
        // The CLI records to the store `--store` names.
        .store(MemoryStore::new())
        .build()
}

/// The CLI with the ledger registered as `bug` has it.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use openharness_planted_bugs::{Bug, cli};
/// let _program = cli(Bug::Arithmetic)?; // `.run()` reads the command line
/// # Ok(()) }
/// ```
pub fn cli(bug: Bug) -> Result<Cli, Box<dyn std::error::Error>> {
    let cli = Cli::new()
        .name("planted-bugs")
        .about("An order ledger whose handlers carry the bug PLANTED_BUG names");
    Ok(match bug {
        Bug::None => cli.workflow(workflow::<ledger::Ledger>()?)?,
        Bug::Arithmetic => cli.workflow(workflow::<bugs::Arithmetic>()?)?,
        Bug::DroppedEvent => cli.workflow(workflow::<bugs::DroppedEvent>()?)?,
        Bug::ReorderedList => cli.workflow(workflow::<bugs::ReorderedList>()?)?,
        Bug::ChangedDefault => cli.workflow(workflow::<bugs::ChangedDefault>()?)?,
        Bug::RenamedField => cli.workflow(workflow::<bugs::renamed::RenamedField>()?)?,
    })
}
