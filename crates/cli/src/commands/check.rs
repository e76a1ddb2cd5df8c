//! `check`: every session of the store read whole, and the damaged ones named.

use super::*;

/// `check`: reads every session of the store whole (events, their seqs, the latest snapshot)
/// and says which are damaged. A store whose listing itself fails is reported as such.
pub(super) async fn check(context: &Context) -> Result<(), CliError> {
    let store = context.host().store();
    let mut out = context.out();
    let sessions = match store.sessions().await {
        Ok(sessions) => sessions,
        Err(err) => {
            writeln!(
                out,
                "DAMAGED  the store's session list: {}",
                ErrorChain(&err)
            )?;
            return Err(CliError::Damaged(1));
        }
    };
    let mut damaged = 0;
    for info in &sessions {
        let mut problem = None;
        let mut next = 0u64;
        let mut events = store.stream_events(&info.id, 0..u64::MAX);
        while let Some(item) = events.next().await {
            match item {
                Ok(recorded) if recorded.seq == next => next += 1,
                Ok(recorded) => {
                    problem = Some(format!(
                        "seq {next} is missing (found seq {})",
                        recorded.seq
                    ));
                    break;
                }
                Err(err) => {
                    problem = Some(ErrorChain(&err).to_string());
                    break;
                }
            }
        }
        if problem.is_none() && next != info.count {
            // A process writing the store beside this reader (a running `serve`) may have
            // appended since the listing: more events than listed is damage only if the
            // session's record, read again, still says fewer.
            let grown = next > info.count
                && matches!(store.session(&info.id).await, Ok(Some(now)) if now.count >= next);
            if !grown {
                problem = Some(format!("it lists {} events but holds {next}", info.count));
            }
        }
        if problem.is_none() {
            match store.latest_snapshot(&info.id, u64::MAX).await {
                Err(err) => {
                    problem = Some(format!("its snapshots: {}", ErrorChain(&err)));
                }
                Ok(Some(snapshot)) if snapshot.position > next => {
                    problem = Some(format!(
                        "a snapshot at position {} lies beyond its {next} events",
                        snapshot.position
                    ));
                }
                Ok(_) => {}
            }
        }
        match problem {
            None => writeln!(out, "ok       {}  {} events", info.id, info.count)?,
            Some(problem) => {
                damaged += 1;
                writeln!(out, "DAMAGED  {}  {problem}", info.id)?;
            }
        }
    }
    // Damage met on the way that left a session out of the list (its key unreadable) fails
    // the store's sync.
    let unlisted = match store.sync().await {
        Ok(()) => 0,
        Err(err) => {
            writeln!(out, "DAMAGED  the store: {}", ErrorChain(&err))?;
            1
        }
    };
    writeln!(
        out,
        "{} session(s) checked, {damaged} damaged (sessions whose records are unreadable are \
         left out of the list with a warning above)",
        sessions.len()
    )?;
    damaged += unlisted;
    let unfinished = unfinished(store.as_ref()).await?;
    for (session, note) in &unfinished {
        writeln!(out, "UNFINISHED  {session}  {note}")?;
    }
    out.flush()?;
    if damaged > 0 {
        return Err(CliError::Damaged(damaged));
    }
    if !unfinished.is_empty() {
        return Err(CliError::Unfinished(unfinished.len()));
    }
    Ok(())
}
