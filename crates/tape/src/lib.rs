//! The Tape: a recorded session with positions, over which you step forwards and backwards.
//!
//! A tape of `n` events has positions `0..=n`; position `p` is the state after the first `p`
//! events, position 0 the initial state. [`Tape::current`] at `p > 0` is event `p - 1`, at 0
//! none. Moves clamp: [`Tape::step_back`] at 0 stays at 0, [`Tape::step`] at `n` stays at `n`,
//! [`Tape::step_to`] clamps to `0..=n`.
//!
//! Playback folds the log through today's handlers: no agent runs and nothing touches the
//! network. The tape keeps a state snapshot every few hundred events, so a jump folds at most
//! that many events.
//!
//! ```
//! # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
//! use openharness_tape::LoadTape;
//! let mut tape = workflow.load(&id).await?;
//! tape.step_to(tape.len());      // the final state
//! tape.step_back();              // one event earlier
//! println!("{:?}", tape.current().map(|e| &e.name));
//! # Ok(()) }
//! ```

mod tape;

pub use tape::{LoadTape, Tape, TapeView};
