//! `cargo xtask`: project automation, in Rust rather than shell.
//!
//! - `cargo xtask ci`: what CI runs — formatting check, clippy with warnings denied, then the
//!   README's test command, `cargo test --workspace`.
//! - `cargo xtask bench <suite>`: builds `openharness-bench` in release and runs a suite
//!   (`tape`, `sessions`), which prints each figure with a baseline measured in the same run, the ratio
//!   and the goal.
//! - `cargo xtask bench race`: the planner-executor shape against LangGraph's (installed from
//!   PyPI into `.race-venv` on first use), both durable, at 1 000, 5 000 and 10 000 tasks.
//! - `cargo xtask bench stores`: the store benchmarks (release build of
//!   `openharness-store-bench`), each figure beside a baseline from the same run. PostgreSQL
//!   figures need `OPENHARNESS_BENCH_POSTGRES` or `OPENHARNESS_TEST_POSTGRES`.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let task = std::env::args().nth(1);
    let steps: &[&[&str]] = match task.as_deref() {
        Some("ci") => &[
            &["fmt", "--all", "--check"],
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &["test", "--workspace"],
        ],
        Some("bench") => match std::env::args().nth(2).as_deref() {
            Some("stores") => &[&[
                "run",
                "--release",
                "--quiet",
                "--package",
                "openharness-store",
                "--features",
                "postgres",
                "--bin",
                "openharness-store-bench",
            ]],
            Some("tape") => &[&[
                "run",
                "--release",
                "--quiet",
                "--package",
                "openharness-bench",
                "--",
                "tape",
            ]],
            Some("sessions") => &[&[
                "run",
                "--release",
                "--quiet",
                "--package",
                "openharness-bench",
                "--",
                "sessions",
            ]],
            Some("race") => &[&[
                "run",
                "--release",
                "--quiet",
                "--package",
                "openharness-bench",
                "--",
                "race",
            ]],
            _ => {
                eprintln!("usage: cargo xtask bench stores | tape | sessions | race");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: cargo xtask ci | cargo xtask bench stores | tape | sessions | race");
            return ExitCode::from(2);
        }
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for args in steps {
        eprintln!("$ cargo {}", args.join(" "));
        match Command::new(&cargo).args(*args).status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask: `cargo {}` failed ({status})", args.join(" "));
                return ExitCode::FAILURE;
            }
            Err(err) => {
                eprintln!("xtask: could not run cargo: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
