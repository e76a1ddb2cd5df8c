//! `cargo xtask`: project automation, in Rust rather than shell.
//!
//! - `cargo xtask ci`: the Rust half of what CI (`.ci/run`) runs — formatting check, clippy
//!   with warnings denied (on the workspace, and on `openharness-cli` without its default
//!   features, as a lean embedding builds it), the schemas' freshness check, the README's test
//!   command (`cargo test --workspace`), then schemathesis against a live server; `--locked`
//!   throughout, as in CI. The pinned Python tools the tests and schemathesis install on first
//!   use are downloaded while clippy compiles (`prefetch.rs`).
//! - `cargo xtask schemas`: writes the JSON Schema of every wire type
//!   (`openharness_host::wire_schemas`) to `schemas/<name>.schema.json`, pretty-printed, and
//!   removes schema files no type produces any more. `cargo xtask schemas --check` writes
//!   nothing and fails, listing the files, when the checked-in ones differ from what the code
//!   generates.
//! - `cargo xtask bench <suite>`: builds `openharness-bench` in release and runs a suite
//!   (`tape`, `sessions`, `server`, `platform`, `chat`, `eval`, `mcp`, `otel`, `protocols`, `scores`),
//!   which prints each figure with a baseline measured in the same run, the ratio and the
//!   goal. `platform` (the `/v1` API against the native server) adds PostgreSQL rows when
//!   `OPENHARNESS_TEST_POSTGRES` is set. `mcp` (tool calls through `openharness-mcp` against
//!   the same calls made directly with `rmcp`) needs node, npm and python3: it installs the
//!   pinned servers of the crate's tests into `target/` on first use.
//! - `cargo xtask schemathesis`: the server against its own OpenAPI document with schemathesis
//!   (pinned, installed from PyPI into `target/schemathesis-venv` on first use): no 5xx, every
//!   response conforms.
//! - `cargo xtask bench race`: the planner-executor shape against LangGraph's (installed from
//!   PyPI into `.race-venv` on first use), both durable, at 1 000, 5 000 and 10 000 tasks.
//! - `cargo xtask bench load [-- OPTIONS]`: `openharness serve` under load against LangGraph's
//!   Agent Server (`langgraph dev`, installed from PyPI into `.load-venv` on first use), both
//!   against one fake model; `-- --quick` for a short run (the options are in
//!   `crates/bench/src/load.rs`).
//! - `cargo xtask bench stores`: the store benchmarks (release build of
//!   `openharness-store-bench`), each figure beside a baseline from the same run. PostgreSQL
//!   figures need `OPENHARNESS_BENCH_POSTGRES` or `OPENHARNESS_TEST_POSTGRES`.

mod prefetch;
mod schemas;
mod schemathesis;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// One step of a task.
enum Step {
    /// `cargo <args>`.
    Cargo(&'static [&'static str]),
    /// `cargo run --release --quiet --package openharness-bench -- <suite> <options>`.
    Bench(Vec<String>),
    /// `cargo xtask schemas --check`, run in this process.
    CheckSchemas,
    /// `cargo xtask schemathesis`.
    Schemathesis,
    /// Starts installing the pinned Python tools later steps need ([`prefetch`]).
    Prefetch,
    /// Waits for those installs.
    AwaitPrefetch,
}

/// Builds the bench's binaries in release (its child processes, which `cargo run` would not
/// build).
const BENCH_BINS: &[&str] = &[
    "build",
    "--release",
    "--quiet",
    "--package",
    "openharness-bench",
    "--bins",
];

const USAGE: &str = "usage: cargo xtask ci | schemas [--check] | bench stores | bench tape | bench sessions | bench race | bench server | bench turns | bench platform | bench chat | bench diff | bench eval | bench list | bench mcp | bench otel | bench replay | bench protocols | bench scores | bench load [-- OPTIONS]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let steps: Vec<Step> = match args.as_slice() {
        ["ci"] => vec![
            Step::Prefetch,
            Step::Cargo(&["fmt", "--all", "--check"]),
            Step::Cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ]),
            // The CLI as a lean embedding takes it (`default-features = false`): its commands
            // behind features must leave the rest compiling, and warning-free (about 90 s from
            // nothing on 2 cores; less after the step above, whose crates it partly reuses).
            Step::Cargo(&[
                "clippy",
                "--package",
                "openharness-cli",
                "--no-default-features",
                "--locked",
                "--",
                "-D",
                "warnings",
            ]),
            Step::CheckSchemas,
            Step::AwaitPrefetch,
            Step::Cargo(&["test", "--workspace", "--locked"]),
            Step::Schemathesis,
        ],
        ["schemas"] => return write_schemas(),
        ["schemas", "--check"] => vec![Step::CheckSchemas],
        ["schemathesis"] => vec![Step::Schemathesis],
        ["bench", "stores"] => vec![Step::Cargo(&[
            "run",
            "--release",
            "--quiet",
            "--package",
            "openharness-store",
            "--features",
            "postgres",
            "--bin",
            "openharness-store-bench",
        ])],
        [
            "bench",
            suite @ ("tape" | "sessions" | "server" | "turns" | "platform" | "chat" | "diff"
            | "list" | "eval" | "mcp" | "otel" | "replay" | "protocols" | "scores"),
        ] => vec![Step::Bench(vec![(*suite).to_owned()])],
        ["bench", "race"] => vec![
            // The race's child (`openharness-race-child`) too, which `cargo run` would not build.
            Step::Cargo(BENCH_BINS),
            Step::Bench(vec!["race".to_owned()]),
        ],
        ["bench", "load", options @ ..] => vec![
            // Our server (`openharness-load-serve`) too, which `cargo run` would not build.
            Step::Cargo(BENCH_BINS),
            Step::Bench(
                std::iter::once("load")
                    .chain(options.iter().copied().filter(|o| *o != "--"))
                    .map(str::to_owned)
                    .collect(),
            ),
        ],
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut prefetch = None;
    for step in steps {
        let ok = match step {
            Step::Cargo(args) => run_cargo(&cargo, args),
            Step::Bench(suite) => {
                let mut args = vec![
                    "run",
                    "--release",
                    "--quiet",
                    "--package",
                    "openharness-bench",
                    "--",
                ];
                args.extend(suite.iter().map(String::as_str));
                run_cargo(&cargo, &args)
            }
            Step::CheckSchemas => check_schemas(),
            Step::Schemathesis => schemathesis::run(&cargo),
            Step::Prefetch => {
                let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
                prefetch = Some(prefetch::start(&root));
                true
            }
            Step::AwaitPrefetch => {
                if let Some(prefetch) = prefetch.take() {
                    prefetch.finish();
                }
                true
            }
        };
        if !ok {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn run_cargo(cargo: &str, args: &[&str]) -> bool {
    eprintln!("$ cargo {}", args.join(" "));
    match Command::new(cargo).args(args).status() {
        Ok(status) if status.success() => true,
        Ok(status) => {
            eprintln!("xtask: `cargo {}` failed ({status})", args.join(" "));
            false
        }
        Err(err) => {
            eprintln!("xtask: could not run cargo: {err}");
            false
        }
    }
}

/// The repository's `schemas/` folder (xtask lives one level below the root).
fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("schemas")
}

fn write_schemas() -> ExitCode {
    match schemas::write(&schemas_dir()) {
        Ok(changed) => {
            for (done, file) in &changed {
                eprintln!("xtask: {done} schemas/{file}");
            }
            eprintln!("xtask: {} schema file(s) changed", changed.len());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("xtask: could not write the schemas: {err}");
            ExitCode::FAILURE
        }
    }
}

fn check_schemas() -> bool {
    eprintln!("$ cargo xtask schemas --check");
    match schemas::stale(&schemas_dir()) {
        Ok(stale) if stale.is_empty() => true,
        Ok(stale) => {
            eprintln!(
                "xtask: these files in schemas/ differ from what the code generates (run `cargo xtask schemas` and commit):"
            );
            for file in stale {
                eprintln!("  schemas/{file}");
            }
            false
        }
        Err(err) => {
            eprintln!("xtask: could not read the schemas: {err}");
            false
        }
    }
}
