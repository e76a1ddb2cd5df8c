//! The Tape: a recorded session with positions, over which you step forwards and backwards;
//! forks of it; and cassette re-execution of it.
//!
//! A tape of `n` events has positions `0..=n`; position `p` is the state after the first `p`
//! events, position 0 the initial state. [`Tape::current`] at `p > 0` is event `p - 1`, at 0
//! none. Moves clamp: [`Tape::step_back`] at 0 stays at 0, [`Tape::step`] at `n` stays at `n`,
//! [`Tape::step_to`] clamps to `0..=n`.
//!
//! Playback folds the log through today's handlers: no agent runs and nothing touches the
//! network. The tape keeps a state snapshot every `K` events, `K` chosen from the measured
//! cost of folding an event and the size of the state (see [`TapeStats`]), so any jump folds
//! at most `K` events while the snapshots stay a small fraction of the events' size.
//!
//! Stepping back over an event whose handler records an undo (`undo: &mut Undo<Self>`, see
//! `openharness_core::Undo`) reverts its change in place; over other events, the tape copies a
//! kept state and folds forward, which for a big state of plain `Vec`s costs a copy of it per
//! step.
//!
//! - [`Tape`]: `step`, `step_back`, `step_to`, `rewind`, `state_at`, `event_at`, `diff` (RFC
//!   6902), `find` / `find_back`, `play` / `play_to` (stopped by a [`Pauser`]);
//!   [`Tape::record`] follows a live run.
//! - [`ForkSession::fork`]: a new session from any point of a recorded one ([`At`]).
//! - [`Cassette`]: re-execute a workflow with agents answered from a recording, failing with
//!   [`TapeError::Diverged`] at the first difference.
//! - [`ReplaySnapshot`]: a replay as stable JSON for `insta` snapshot tests.
//!
//! # Modules
//!
//! - `tape` (`tape/`): [`Tape`]; in `tape/`, `load`, `back` (stepping back), `live`, `playback`.
//! - `snapshots`: the snapshot interval chosen from measurements, and the cache for walking back.
//! - `fork`: [`ForkSession`], a new session from any point of a recorded one.
//! - `cassette` (`cassette/`): [`Cassette`]; `provider` answers the calls, `check` compares runs.
//! - `error`: [`TapeError`], what loading, forking and re-executing can fail with.
//! - `testing`: [`ReplaySnapshot`], a replay as one stable JSON value for `insta`.
//!
//! ```
//! # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_tape::TapeError> {
//! use openharness_tape::LoadTape;
//! let mut tape = workflow.load(&id).await?;
//! tape.step_to(tape.len());      // the final state
//! tape.step_back();              // one event earlier
//! println!("{:?}", tape.current().map(|e| &e.name));
//! # Ok(()) }
//! ```

mod cassette;
mod error;
mod fork;
mod snapshots;
mod tape;
mod testing;

pub use cassette::Cassette;
pub use error::{Divergence, EventShape, TapeError};
pub use fork::{At, Fork, ForkSession};
pub use json_patch::{Patch, PatchOperation};
/// The SHA-256 of a state as canonical JSON, kept in every fork (defined in the core, which
/// records it in rollbacks too).
pub use openharness_core::adapter::{json_hash, state_hash};
pub use tape::{LoadTape, Pacing, Pauser, Tape, TapeStats, TapeStatus, TapeView};
pub use testing::ReplaySnapshot;
