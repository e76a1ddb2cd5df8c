//! `openharness-bench`: the benchmarks behind `cargo xtask bench <suite>` (see the library's
//! docs for the suites). Its allocator counts the bytes allocated, for the suites that report
//! the heap a turn needs.

use std::process::ExitCode;

use peak_alloc::PeakAlloc;

/// The system allocator, counting the bytes allocated now and at the peak.
#[global_allocator]
static COUNTING: PeakAlloc = PeakAlloc;

fn main() -> ExitCode {
    openharness_bench::run()
}
