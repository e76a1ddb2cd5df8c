//! The Tape: positions over a recorded session.
