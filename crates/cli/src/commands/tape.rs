//! `openharness tape <session>`: the interactive debugger (feature `tui`), or with `--at N`
//! the state at one position (as text or JSON), with a warning (`codeChange`,
//! `stateDivergence` in JSON) when other code recorded the session or today's handlers fold it
//! to another state than the live run recorded before that position.

use std::io::Write;

use openharness::SessionId;

use crate::Context;
use crate::error::CliError;

/// Opens the debugger on `session`, or prints its state at `at`.
pub(crate) async fn tape(
    context: &Context,
    session: &SessionId,
    at: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    let host = context.host();
    let Some(at) = at else {
        #[cfg(feature = "tui")]
        {
            let debugger = crate::Debugger::open(host, session, context.program())
                .await
                .map_err(|e| context.explain(e))?;
            return crate::debugger::run(debugger);
        }
        #[cfg(not(feature = "tui"))]
        return Err(CliError::Usage(format!(
            "this program was built without the interactive debugger (openharness-cli's \
             feature `tui`): `{} tape {session} --at N` prints the state at position N",
            context.program()
        )));
    };
    let view = host
        .tape_view(session, at)
        .await
        .map_err(|e| context.explain(e))?;
    // Today's handlers fold the session up to here: say so when they part from the state the
    // live run recorded before this position, and when the code that recorded it was other.
    let code_change = host.code_changed(session).await.ok().flatten();
    let parted = host
        .check_state(session)
        .await
        .ok()
        .and_then(|check| check.divergence)
        .filter(|divergence| divergence.seq < view.position);
    let mut out = context.out();
    if json {
        let mut value = serde_json::to_value(&view)?;
        if let Some(object) = value.as_object_mut() {
            if let Some(change) = &code_change {
                object.insert("codeChange".to_owned(), serde_json::to_value(change)?);
            }
            if let Some(divergence) = &parted {
                object.insert(
                    "stateDivergence".to_owned(),
                    serde_json::to_value(divergence)?,
                );
            }
        }
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        let current = view.current.as_ref().map_or_else(
            || "(none: initial state)".to_owned(),
            |e| e.event.name.to_string(),
        );
        let mut text = format!(
            "position {} of {}\ncurrent  {current}\n",
            view.position, view.len
        );
        if let Some(change) = &code_change {
            text.push_str(&format!("code     {change}\n"));
        }
        if let Some(divergence) = &parted {
            text.push_str(&format!(
                "warning  today's handlers part from the recorded state after seq {} (`{}`): the state below may not be the live run's (`replay` shows the difference)\n",
                divergence.seq, divergence.event
            ));
        }
        if !view.skipped.is_empty() {
            text.push_str(&format!(
                "skipped  {} events ({} undecodable)\n",
                view.skipped.total(),
                view.skipped.undecodable
            ));
        }
        text.push_str("state\n");
        text.push_str(&serde_json::to_string_pretty(&view.state)?);
        text.push('\n');
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}
