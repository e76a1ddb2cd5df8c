//! `cargo xtask`: project automation, in Rust rather than shell.
//!
//! - `cargo xtask ci`: what CI runs — formatting check, clippy with warnings denied, then the
//!   README's test command, `cargo test --workspace`.

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
        _ => {
            eprintln!("usage: cargo xtask ci");
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
