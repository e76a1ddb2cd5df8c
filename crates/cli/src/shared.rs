//! What the command files share: parsing a session id argument and a busy policy, the command
//! that opens a session's tape, a state hash cut short for printing, reading a session's events
//! whole, and reading an API keys file. It imports nothing of the CLI's but its error, so no
//! command file needs `commands` (the dispatch), and the CLI's modules import each other in
//! one direction only: `lib` → `commands` → `args` → the command files → `shared`, `error`.

#[cfg(feature = "server")]
use std::path::Path;

#[cfg(feature = "tui")]
use openharness::Envelope;
use openharness::SessionId;
#[cfg(feature = "tui")]
use openharness_host::{Host, HostError};

use crate::error::CliError;

/// Events read per page by `events` and the events-only debugger.
pub(crate) const PAGE: usize = 1000;

/// A session id given on the command line, or a usage error saying why it is not one.
pub(crate) fn parse_session(id: &str) -> Result<SessionId, CliError> {
    id.parse().map_err(|err| CliError::Usage(format!("{err}")))
}

/// The command that opens `session` (of `len` events) on its tape, as a turn's end suggests
/// it: the debugger, or in a program built without it (feature `tui`) the state at the end.
pub(crate) fn tape_command(program: &str, session: &SessionId, len: u64) -> String {
    if cfg!(feature = "tui") {
        format!("{program} tape {session}")
    } else {
        format!("{program} tape {session} --at {len}")
    }
}

/// The first 12 hex digits of a state hash (all of it when shorter), as the commands print
/// one.
pub(crate) fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Every event of `session`, read page by page (for the events-only debugger).
#[cfg(feature = "tui")]
pub(crate) async fn all_events(
    host: &Host,
    session: &SessionId,
) -> Result<Vec<Envelope>, HostError> {
    let mut page = host.events(session, None, PAGE).await?;
    let mut events = Vec::with_capacity(usize::try_from(page.len).unwrap_or(0));
    loop {
        events.extend(page.events.into_iter().map(|r| r.event));
        let Some(after) = page.next_after else { break };
        page = host.events(session, Some(after), PAGE).await?;
    }
    Ok(events)
}

/// The API keys of `--api-keys-file` (none without one); a file that cannot be read, holds
/// a bad line or no key at all is refused.
#[cfg(feature = "server")]
pub(crate) fn read_api_keys(
    path: Option<&Path>,
) -> Result<Vec<openharness_server::ApiKeyHash>, CliError> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path).map_err(|err| {
        CliError::Usage(format!(
            "cannot read the API keys file {}: {err}",
            path.display()
        ))
    })?;
    let keys = openharness_server::parse_api_keys(&text)
        .map_err(|err| CliError::Usage(format!("the API keys file {}: {err}", path.display())))?;
    if keys.is_empty() {
        return Err(CliError::Usage(format!(
            "the API keys file {} holds no key",
            path.display()
        )));
    }
    Ok(keys)
}

/// `--on-busy` (of `serve` and of `send`): a busy policy's word (`reject`, `enqueue`,
/// `interrupt`, `rollback`, `steer`).
#[cfg(any(feature = "server", feature = "remote"))]
pub(crate) fn parse_busy_policy(word: &str) -> Result<openharness::BusyPolicy, String> {
    word.parse()
}
