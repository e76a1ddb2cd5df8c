//! `openharness platform …`: maintenance of the `/v1` platform's records in the store, such as
//! `rotate-keys`, which re-seals every LLM provider's API key under the newest master key.

use std::io::Write;

use clap::Subcommand;
use openharness_platform::{MasterKeys, Platform};

use crate::{CliError, Context};

/// The platform subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PlatformCommand {
    /// Re-encrypt every LLM provider's API key under the newest master key (the last of
    /// OPENHARNESS_MASTER_KEYS or the file OPENHARNESS_MASTER_KEYS_FILE names), recorded in the
    /// platform log; afterwards the older master keys can be removed. Every key a row was
    /// sealed under must still be configured.
    RotateKeys,
}

pub(crate) async fn run(command: PlatformCommand, context: &Context) -> Result<(), CliError> {
    match command {
        PlatformCommand::RotateKeys => rotate_keys(context).await,
    }
}

async fn rotate_keys(context: &Context) -> Result<(), CliError> {
    let keys = MasterKeys::from_env().map_err(openharness_platform::PlatformError::from)?;
    let platform = Platform::new(context.host().store().clone(), keys);
    let rotation = platform.rotate_keys().await?;
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut out = context.out();
    writeln!(
        out,
        "Re-sealed {} under master key {} ({} already under it, {} without a key).",
        plural(rotation.resealed, "provider API key", "provider API keys"),
        rotation.key_id,
        rotation.current,
        plural(rotation.without_key, "provider", "providers"),
    )?;
    Ok(())
}
