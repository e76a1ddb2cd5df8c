//! `planted-bugs`: every `openharness` command for the order ledger, whose handlers carry the
//! bug `PLANTED_BUG` names (`arithmetic`, `dropped-event`, `reordered-list`,
//! `changed-default`, `renamed-field`; unset: the fixed code).
//!
//! ```sh
//! planted-bugs --store s.redb start orders "order widget 2 1250"
//! PLANTED_BUG=arithmetic planted-bugs --store s.redb replay --all
//! ```

use std::process::ExitCode;

use openharness_planted_bugs::{Bug, cli};

fn main() -> ExitCode {
    let program = Bug::from_env()
        .map_err(Box::<dyn std::error::Error>::from)
        .and_then(cli);
    match program {
        Ok(cli) => cli.run(),
        Err(err) => openharness_cli::fail(err.as_ref()),
    }
}
