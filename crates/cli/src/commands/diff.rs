//! `openharness diff A B`: where two sessions part — their common ancestor, how many events
//! they share, the first event that differs (both sides, and the patch between their
//! payloads) and the patch between their states just after it — and, for each side, whether
//! today's handlers fold it to the states its live run recorded (two sessions whose events all
//! match may still have been recorded by code that computed other states).

use std::io::Write;

use openharness::Envelope;
use openharness::SessionId;
use openharness_host::{EventPlace, SessionComparison};

use crate::shared::{parse_session, short_hash};
use crate::{CliError, Context};

/// `diff`: compares two sessions and prints where they part (`--json`: the whole comparison).
pub(crate) async fn run(context: &Context, a: &str, b: &str, json: bool) -> Result<(), CliError> {
    let (a, b) = (parse_session(a)?, parse_session(b)?);
    let host = context.host();
    let compared = host.compare(&a, &b).await?;
    // Unhosted workflows cannot be folded here: their states go unchecked.
    let parted = |check: Result<openharness::StateCheck, _>| check.ok().and_then(|c| c.divergence);
    let states = [
        (a.as_str(), parted(host.check_state(&a).await)),
        (b.as_str(), parted(host.check_state(&b).await)),
    ];
    let mut out = context.out();
    if json {
        let mut value = serde_json::to_value(&compared)?;
        if let Some(object) = value.as_object_mut() {
            for (key, (_, divergence)) in
                ["aStateDivergence", "bStateDivergence"].iter().zip(&states)
            {
                if let Some(divergence) = divergence {
                    object.insert((*key).to_owned(), serde_json::to_value(divergence)?);
                }
            }
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    print(&mut out, &compared, a.as_str(), b.as_str())?;
    for (name, divergence) in &states {
        if let Some(divergence) = divergence {
            writeln!(
                out,
                "but {name}'s recorded state is not what today's handlers fold: they part after its seq {} (`{}`; state hash recorded {}, today {})",
                divergence.seq,
                divergence.event,
                short_hash(&divergence.recorded_hash),
                short_hash(&divergence.today_hash),
            )?;
        }
    }
    Ok(())
}

/// Prints a comparison, naming its sides `a_name` and `b_name`.
pub(crate) fn print(
    out: &mut impl Write,
    compared: &SessionComparison,
    a_name: &str,
    b_name: &str,
) -> Result<(), CliError> {
    if let Some(ancestor) = &compared.ancestor {
        writeln!(
            out,
            "common ancestor {}: {a_name} leaves it at position {}, {b_name} at {}",
            ancestor.session, ancestor.a_from, ancestor.b_from
        )?;
    } else {
        writeln!(out, "no common ancestor")?;
    }
    writeln!(
        out,
        "{} events in {a_name}, {} in {b_name} (counted from the root); the first {} agree",
        compared.a_len, compared.b_len, compared.agree
    )?;
    let Some(divergence) = &compared.divergence else {
        writeln!(out, "they agree: every event matches")?;
        return Ok(());
    };
    let describe = |event: &Option<Envelope>| {
        event.as_ref().map_or_else(
            || "(the end)".to_owned(),
            |e| format!("{} {}", e.name, e.payload),
        )
    };
    // One numbering: an event is named by the position it leads to.
    writeln!(
        out,
        "they part at position {} (counted from the root):",
        compared.agree + 1
    )?;
    let place = |at: &Option<EventPlace>, side: &SessionId| match at {
        Some(at) if &at.session == side => format!(" (its position {})", at.position),
        Some(at) => format!(" (position {} of {}, inherited)", at.position, at.session),
        None => String::new(),
    };
    writeln!(
        out,
        "  {a_name}{}: {}",
        place(&divergence.a_at, &compared.a),
        describe(&divergence.a)
    )?;
    writeln!(
        out,
        "  {b_name}{}: {}",
        place(&divergence.b_at, &compared.b),
        describe(&divergence.b)
    )?;
    if let Some(patch) = &divergence.payload_patch {
        writeln!(
            out,
            "  payload, {a_name} → {b_name}: {}",
            serde_json::to_string(patch)?
        )?;
    }
    match &divergence.state_patch {
        Some(patch) => writeln!(
            out,
            "  state after it, {a_name} → {b_name}: {}",
            serde_json::to_string(patch)?
        )?,
        None => writeln!(
            out,
            "  (states not compared: a workflow is not registered here)"
        )?,
    }
    Ok(())
}
