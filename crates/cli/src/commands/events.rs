//! `openharness events <session>`: a session's events, one line each or as a JSON array,
//! read a page at a time.

use std::io::Write;

use openharness::SessionId;
use serde::ser::{SerializeSeq, Serializer};

use crate::Context;
use crate::error::CliError;
use crate::shared::PAGE;

/// Prints a session's events, read from the store one page at a time, so a long session
/// needs no more memory than a short one. Works for every session, whichever workflow
/// recorded it.
pub(crate) async fn events(
    context: &Context,
    session: &SessionId,
    json: bool,
) -> Result<(), CliError> {
    let host = context.host();
    let mut page = host
        .events(session, None, PAGE)
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = std::io::BufWriter::new(context.out());
    if json {
        // The same pretty JSON array as serializing a Vec, written element by element.
        let mut serializer = serde_json::Serializer::pretty(&mut out);
        let mut array = serializer.serialize_seq(None)?;
        loop {
            for recorded in &page.events {
                array.serialize_element(recorded)?;
            }
            let Some(after) = page.next_after else { break };
            page = host
                .events(session, Some(after), PAGE)
                .await
                .map_err(|e| context.explain(e))?;
        }
        array.end()?;
        writeln!(out)?;
    } else {
        loop {
            for recorded in &page.events {
                write_line(&mut out, recorded)?;
            }
            let Some(after) = page.next_after else { break };
            page = host
                .events(session, Some(after), PAGE)
                .await
                .map_err(|e| context.explain(e))?;
        }
    }
    out.flush()?;
    Ok(())
}

/// One event as `events` prints it: the position it leads to (one numbering: seq + 1), its
/// name and its payload.
pub(crate) fn write_line(
    out: &mut impl Write,
    recorded: &openharness::adapter::Recorded,
) -> std::io::Result<()> {
    let (position, event) = (recorded.seq + 1, &recorded.event);
    writeln!(out, "{position:>5}  {:<20} {}", event.name, event.payload)
}
