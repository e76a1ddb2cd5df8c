//! `openharness-load-serve ARGS…`: our side of `cargo xtask bench load`, the `openharness`
//! command's library serving one chat workflow against the suite's fake model, in a process of
//! its own with the system allocator (see `openharness_bench::load_serve`).

use std::process::ExitCode;

fn main() -> ExitCode {
    openharness_bench::load_serve()
}
