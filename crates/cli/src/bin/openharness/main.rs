//! The `openharness` command: the library's commands ([`openharness_cli::Cli`]) for the two
//! examples, the planner-executor and the chat, registered offline (scripted models that
//! answer each call from its prompt), plus the example-specific `demo` and `run`.
//!
//! Every command works on one store: `--store PATH`, else `$OPENHARNESS_STORE`, else
//! `.openharness/store.redb` in the current directory.

mod examples;

use std::process::ExitCode;

fn main() -> ExitCode {
    match examples::cli() {
        Ok(cli) => cli.run(),
        Err(err) => openharness_cli::fail(&err),
    }
}
