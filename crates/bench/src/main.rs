//! `openharness-bench`: the benchmarks behind `cargo xtask bench <suite>`.
//!
//! Every figure is printed next to a baseline measured in the same run and the ratio
//! between them, with the goal it is held to, so results compare across machines.
//! Suites: `tape` (replay, dispatch, fold throughput, step back, jumps, snapshot memory).

mod tape;

use std::process::ExitCode;

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("tape") => tape::run(),
        _ => {
            eprintln!("usage: openharness-bench tape");
            ExitCode::from(2)
        }
    }
}
