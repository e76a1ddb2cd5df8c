//! `openharness replay S`: re-execute a recorded session with today's code, every agent
//! answered from the recording (no model is called), and show where today's run parts from
//! it as structured diffs — of the two events' payloads (a prompt, an output, an emitted
//! event) and of the states just after — not as two blobs. The recording is also folded
//! through today's handlers and compared with the state hashes the live run recorded, so a
//! handler that changed only the state is named too. Exit 1 when either parts.

use std::io::Write;

use crate::shared::parse_session;
use crate::{CliError, Context};

/// Runs `replay`.
pub(crate) async fn run(context: &Context, session: &str, json: bool) -> Result<(), CliError> {
    let session = parse_session(session)?;
    let replayed = context
        .host()
        .replay(&session)
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = context.out();
    if let (false, Some(change)) = (json, &replayed.code_change) {
        writeln!(out, "note: {session} was {change}")?;
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&replayed)?)?;
    } else {
        if let Some(divergence) = &replayed.state_divergence {
            write_state_divergence(&mut out, divergence)?;
        }
        if let Some(divergence) = &replayed.divergence {
            write_divergence(&mut out, divergence)?;
        }
        if replayed.matched {
            let states = match replayed.state_hashes_checked {
                0 => {
                    "; the recording has no state hashes, so its states were not checked".to_owned()
                }
                n => format!(" and folds it to the state it recorded at all {n} state hashes"),
            };
            writeln!(
                out,
                "today's code records the same {} events as the recording{states} (no model was called)",
                replayed.len
            )?;
        }
    }
    let state_seq = replayed.state_divergence.as_ref().map(|d| d.seq);
    let event_seq = replayed.divergence.as_ref().map(|d| d.seq);
    match (state_seq, event_seq) {
        (None, None) => Ok(()),
        (Some(seq), None) => Err(CliError::Usage(format!(
            "the replay of {session} parted from the recording's state after seq {seq}"
        ))),
        (Some(state), Some(seq)) if state < seq => Err(CliError::Usage(format!(
            "the replay of {session} parted from the recording's state after seq {state} (and from its events at seq {seq})"
        ))),
        (_, Some(seq)) => Err(CliError::Usage(format!(
            "the replay of {session} parted from the recording at seq {seq}"
        ))),
    }
}

/// Where the re-execution recorded another event than the recording.
fn write_divergence(
    out: &mut impl Write,
    divergence: &openharness_host::ReplayDivergence,
) -> Result<(), CliError> {
    let describe = |shape: &Option<openharness::tape::EventShape>| {
        shape
            .as_ref()
            .map_or_else(|| "(the end)".to_owned(), |e| format!("`{}`", e.name))
    };
    writeln!(
        out,
        "today's code parts from the recording at seq {} (position {}):",
        divergence.seq,
        divergence.seq + 1
    )?;
    writeln!(out, "  recorded: {}", describe(&divergence.recorded))?;
    writeln!(out, "  today:    {}", describe(&divergence.today))?;
    if let Some(patch) = &divergence.payload_patch {
        writeln!(out, "  payload, recorded → today:")?;
        write_patch(out, patch)?;
    }
    if let Some(patch) = &divergence.state_patch {
        writeln!(out, "  state after it, recorded → today:")?;
        write_patch(out, patch)?;
    }
    Ok(())
}

/// Where today's handlers fold the recording to another state than its recorded hash.
fn write_state_divergence(
    out: &mut impl Write,
    divergence: &openharness::StateDivergence,
) -> Result<(), CliError> {
    writeln!(
        out,
        "today's handlers fold the recording to another state after seq {} (`{}`, position {}):",
        divergence.seq,
        divergence.event,
        divergence.seq + 1
    )?;
    writeln!(
        out,
        "  state hash recorded: {}, today: {}",
        short(&divergence.recorded_hash),
        short(&divergence.today_hash)
    )?;
    match &divergence.patch {
        Some(patch) => {
            writeln!(out, "  state, recorded → today:")?;
            write_patch(out, patch)?;
        }
        None => {
            writeln!(
                out,
                "  today's state (no snapshot of the recorded one is stored there): {}",
                serde_json::to_string(&divergence.today)?
            )?;
        }
    }
    Ok(())
}

/// A JSON patch, one operation a line.
fn write_patch(out: &mut impl Write, patch: &impl serde::Serialize) -> Result<(), CliError> {
    let operations = match serde_json::to_value(patch)? {
        serde_json::Value::Array(operations) => operations,
        other => vec![other],
    };
    if operations.is_empty() {
        writeln!(out, "    (the same)")?;
    }
    for operation in &operations {
        writeln!(out, "    {}", serde_json::to_string(operation)?)?;
    }
    Ok(())
}

/// The first 12 hex digits of a hash.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
