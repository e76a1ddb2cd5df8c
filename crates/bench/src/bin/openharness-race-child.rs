//! `openharness-race-child N DIR [every|caller|redb|periodic|turn] [imbl|vec|vec-undo]`: our side of
//! `cargo xtask bench race` at one N, run by the race in a process of its own, with the
//! system allocator (see `openharness_bench::race_child`).

use std::process::ExitCode;

fn main() -> ExitCode {
    openharness_bench::race_child()
}
