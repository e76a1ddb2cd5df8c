//! `openharness tape <session>`: the interactive debugger, or with `--at N` the state at one
//! position (as text or JSON).

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
        let debugger = crate::Debugger::open(host, session, context.program())
            .await
            .map_err(|e| context.explain(e))?;
        return crate::debugger::run(debugger);
    };
    let view = host
        .tape_view(session, at)
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = context.out();
    if json {
        let mut text = serde_json::to_string_pretty(&view)?;
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
        if let Ok(Some(change)) = host.code_changed(session).await {
            text.push_str(&format!("code     {change}\n"));
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
