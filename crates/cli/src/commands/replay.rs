//! `openharness replay S`: re-execute a recorded session with today's code, every agent
//! answered from the recording (no model is called), and show where today's run parts from
//! it as structured diffs — of the two events' payloads (a prompt, an output, an emitted
//! event) and of the states just after — not as two blobs. Exit 1 when it parts.

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
    } else if let Some(divergence) = &replayed.divergence {
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
            for operation in &patch.0 {
                writeln!(out, "    {}", serde_json::to_string(operation)?)?;
            }
        }
        if let Some(patch) = &divergence.state_patch {
            writeln!(out, "  state after it, recorded → today:")?;
            if patch.0.is_empty() {
                writeln!(out, "    (the same)")?;
            }
            for operation in &patch.0 {
                writeln!(out, "    {}", serde_json::to_string(operation)?)?;
            }
        }
    } else {
        writeln!(
            out,
            "today's code records the same {} events as the recording (no model was called)",
            replayed.len
        )?;
    }
    match &replayed.divergence {
        Some(divergence) => Err(CliError::Usage(format!(
            "the replay of {session} parted from the recording at seq {}",
            divergence.seq
        ))),
        None => Ok(()),
    }
}
