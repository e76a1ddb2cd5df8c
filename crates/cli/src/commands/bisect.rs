//! `openharness bisect A [B]`: where two runs first part and why — two sessions, or with one
//! session, the session and its re-execution through today's code (no model is called). It
//! prints the first position where their events or their states part, what produced the event
//! there (an agent, the handler of an event, an input), the chain of causes back to the input,
//! the handlers that changed the state since the last state both agreed on, and the state just
//! after, field by field with the value on each side ([`Host::bisect`]). Exit 1 when they part.
//!
//! [`Host::bisect`]: openharness_host::Host::bisect

use std::io::Write;

use openharness_host::{Bisection, FieldChange, PartKind, Parting};

use crate::shared::{parse_session, short_hash};
use crate::{CliError, Context};

/// Runs `bisect`.
pub(crate) async fn run(
    context: &Context,
    a: &str,
    b: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    let a = parse_session(a)?;
    let b = b.map(parse_session).transpose()?;
    let bisection = context
        .host()
        .bisect(&a, b.as_ref())
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = context.out();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&bisection)?)?;
    } else {
        write(&mut out, &bisection)?;
    }
    match &bisection.parting {
        None => Ok(()),
        Some(parting) => Err(CliError::Usage(format!(
            "{} part at seq {} ({})",
            match &bisection.b {
                Some(b) => format!("{a} and {b}"),
                None => format!("{a} and its replay"),
            },
            parting.seq,
            match parting.kind {
                PartKind::Events => "their events",
                PartKind::State => "their states",
            }
        ))),
    }
}

/// The bisection, for a person.
fn write(out: &mut impl Write, bisection: &Bisection) -> Result<(), CliError> {
    let (a, b) = match &bisection.b {
        Some(b) => {
            writeln!(out, "a = {}, b = {b}", bisection.a)?;
            ("a", "b")
        }
        None => {
            writeln!(
                out,
                "{} (recorded) against its re-execution through today's code (today; no model was called)",
                bisection.a
            )?;
            ("recorded", "today")
        }
    };
    let Some(parting) = &bisection.parting else {
        let states = match bisection.states_compared {
            0 => "; no state hashes to compare (recorded before they were)".to_owned(),
            n => format!(", and so do their states at all {n} state hashes compared"),
        };
        writeln!(out, "they agree: every event matches{states}")?;
        return Ok(());
    };
    let width = a.len().max(b.len());
    match parting.kind {
        PartKind::Events => {
            writeln!(
                out,
                "they part first at seq {} (position {}): the events",
                parting.seq,
                parting.seq + 1
            )?;
            let describe = |event: &Option<openharness_host::EventAt>| {
                event.as_ref().map_or_else(
                    || "(the end)".to_owned(),
                    |e| format!("{} {}", e.name, e.payload),
                )
            };
            writeln!(out, "  {a:width$}: {}", describe(&parting.a))?;
            writeln!(out, "  {b:width$}: {}", describe(&parting.b))?;
            if !parting.payload.is_empty() {
                writeln!(out, "  payload, {a} → {b}:")?;
                write_changes(out, &parting.payload)?;
            }
        }
        PartKind::State => {
            let event = parting
                .a
                .as_ref()
                .map_or_else(String::new, |e| format!(" (`{}`)", e.name));
            writeln!(
                out,
                "they part first after seq {}{event}, position {}: the state, while every event so far matches",
                parting.seq,
                parting.seq + 1
            )?;
            if let Some([x, y]) = &parting.hashes {
                writeln!(
                    out,
                    "  state hash there: {a} {}, {b} {}",
                    short_hash(x),
                    short_hash(y)
                )?;
            }
            match parting.agreed_after {
                Some(seq) => writeln!(out, "  the last state both agree on: after seq {seq}")?,
                None => writeln!(
                    out,
                    "  no earlier state is known to agree: the starting state (the workflow's initial state) is a suspect too"
                )?,
            }
        }
    }
    writeln!(out, "  produced by: {}", parting.produced_by)?;
    write_causes(out, parting)?;
    if !parting.handlers.is_empty() {
        writeln!(
            out,
            "  handlers that change the state since then, today (before → after):"
        )?;
        for run in &parting.handlers {
            writeln!(out, "    seq {} `{}`:", run.seq, run.event)?;
            for change in &run.changes {
                writeln!(out, "      {change}")?;
            }
        }
    }
    match (&parting.state, &parting.state_unknown) {
        (Some(changes), _) => {
            // A replay's recorded side is the recording as today's handlers fold it.
            let folded = match (&bisection.b, parting.kind) {
                (None, PartKind::Events) => " (the recording as today's handlers fold it)",
                _ => "",
            };
            writeln!(out, "  state just after it, {a}{folded} → {b}:")?;
            write_changes(out, changes)?;
        }
        (None, Some(why)) => writeln!(out, "  state just after it: {why}")?,
        (None, None) => {}
    }
    Ok(())
}

/// The chain of causes on one line.
fn write_causes(out: &mut impl Write, parting: &Parting) -> Result<(), CliError> {
    let chain: Vec<String> = parting
        .causes
        .iter()
        .map(|cause| match &cause.agent {
            Some(agent) => format!("seq {} {} (agent {agent})", cause.seq, cause.name),
            None => format!("seq {} {}", cause.seq, cause.name),
        })
        .collect();
    if !chain.is_empty() {
        writeln!(out, "  chain of causes: {}", chain.join(" ← "))?;
    }
    Ok(())
}

/// Field changes, one a line (or that there are none).
fn write_changes(out: &mut impl Write, changes: &[FieldChange]) -> Result<(), CliError> {
    if changes.is_empty() {
        writeln!(out, "    (the same)")?;
    }
    for change in changes {
        writeln!(out, "    {change}")?;
    }
    Ok(())
}
