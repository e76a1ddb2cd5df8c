//! `openharness replay S`: re-execute a recorded session with today's code, every agent
//! answered from the recording (no model is called), and show where today's run parts from
//! it as structured diffs — of the two events' payloads (a prompt, an output, an emitted
//! event) and of the states just after — not as two blobs. The recording is also folded
//! through today's handlers and compared with the state hashes the live run recorded, so a
//! handler that changed only the state is named too. Exit 1 when either parts.

use std::io::Write;

use openharness_host::FirstDivergence;

use crate::shared::{parse_session, short_hash};
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
            let states = match (replayed.state_hashes_checked, &replayed.state_shape_changed) {
                (_, Some(change)) => format!(
                    "; the state's fields changed since it was recorded (shape {} then, {} today), so its state hashes were not compared",
                    change.recorded, change.today
                ),
                (0, None) => {
                    "; the recording has no state hashes, so its states were not checked".to_owned()
                }
                (n, None) => {
                    format!(" and folds it to the state it recorded at all {n} state hashes")
                }
            };
            writeln!(
                out,
                "today's code records the same {} events as the recording{states} (no model was called)",
                replayed.len
            )?;
        }
    }
    match replayed.first_divergence() {
        None => Ok(()),
        Some(FirstDivergence::State(state)) => {
            let events = replayed
                .divergence
                .as_ref()
                .map(|d| format!(" (and from its events at seq {})", d.seq))
                .unwrap_or_default();
            Err(CliError::Usage(format!(
                "the replay of {session} parted from the recording's state after seq {}{events}",
                state.seq
            )))
        }
        Some(FirstDivergence::Events(events)) => Err(CliError::Usage(format!(
            "the replay of {session} parted from the recording at seq {}",
            events.seq
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
pub(crate) fn write_state_divergence(
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
        short_hash(&divergence.recorded_hash),
        short_hash(&divergence.today_hash)
    )?;
    if !divergence.changed_by.is_empty() {
        let handled: Vec<String> = divergence
            .changed_by
            .iter()
            .map(|c| format!("`{}` (seq {})", c.event, c.seq))
            .collect();
        writeln!(
            out,
            "  changed since the last state that matched by the handlers of: {}",
            handled.join(", ")
        )?;
    }
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

/// What `replay --all` was asked.
pub(crate) struct All {
    /// Only sessions this text finds.
    pub(crate) search: Option<String>,
    /// Exports (JSONL files or folders of them) to replay instead of the store's sessions.
    pub(crate) from: Vec<std::path::PathBuf>,
    /// Where to write the JUnit XML report.
    pub(crate) junit: Option<std::path::PathBuf>,
    /// Sessions at a time.
    pub(crate) jobs: Option<usize>,
    /// The report as JSON.
    pub(crate) json: bool,
}

/// `replay --all`: every session (of the store, a search or exports) through today's code,
/// several at a time; a line per session that parts with where and why, a summary, the
/// report as JUnit XML when asked; exit 1 when any parts or fails.
pub(crate) async fn all(context: &Context, asked: All) -> Result<(), CliError> {
    let host = if asked.from.is_empty() {
        context.host().clone()
    } else {
        exports_host(context.host(), &asked.from).await?
    };
    let mut replayer = openharness_host::Replayer::new(host);
    if let Some(jobs) = asked.jobs {
        replayer = replayer.jobs(jobs);
    }
    let mut query = openharness_host::SessionQuery::default();
    query.search = asked.search;
    let sessions = replayer
        .sessions(&query)
        .await
        .map_err(|e| context.explain(e))?;
    // Progress on a terminal only (a log keeps the report, not a counter).
    let show = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = replayer
        .run(sessions, |done, total| {
            if show && (done == total || done % 50 == 0) {
                eprint!("\rreplayed {done}/{total}");
                if done == total {
                    eprintln!();
                }
            }
        })
        .await;
    if let Some(path) = &asked.junit {
        std::fs::write(path, report.junit()).map_err(|source| {
            CliError::Usage(format!("could not write {}: {source}", path.display()))
        })?;
    }
    let mut out = context.out();
    if asked.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        for parted in &report.parted {
            writeln!(
                out,
                "PARTS   {} ({}): {}",
                parted.replayed.session,
                parted.workflow.as_deref().unwrap_or("?"),
                parted.summary()
            )?;
            writeln!(out, "  {}", parted.details())?;
        }
        for failed in &report.failed {
            writeln!(out, "FAILED  {}: {}", failed.session, failed.error)?;
        }
        writeln!(
            out,
            "{} sessions replayed in {:.1} s ({:.0} a minute): {} matched, {} parted, {} could not be replayed, {} skipped (no model was called)",
            report.replayed + report.failed.len() as u64,
            report.seconds,
            (report.replayed + report.failed.len() as u64) as f64 / report.seconds.max(1e-9) * 60.0,
            report.matched,
            report.parted.len(),
            report.failed.len(),
            report.skipped.len()
        )?;
    }
    if report.all_matched() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "{} session(s) parted from their recordings and {} could not be replayed",
            report.parted.len(),
            report.failed.len()
        )))
    }
}

/// A host with `host`'s workflows over a store in memory holding the sessions of `paths`
/// (export files, or folders of them).
async fn exports_host(
    host: &openharness_host::Host,
    paths: &[std::path::PathBuf],
) -> Result<openharness_host::Host, CliError> {
    let memory: std::sync::Arc<dyn openharness::Store> =
        std::sync::Arc::new(openharness::store::MemoryStore::new());
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| {
                crate::transfer::TransferCliError::File {
                    path: path.clone(),
                    source,
                }
            })?;
            let mut inside: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            inside.sort();
            files.extend(inside);
        } else {
            files.push(path.clone());
        }
    }
    for file in files {
        let reader = std::fs::File::open(&file).map_err(|source| {
            crate::transfer::TransferCliError::File {
                path: file.clone(),
                source,
            }
        })?;
        openharness::store::jsonl::import(&*memory, std::io::BufReader::new(reader))
            .await
            .map_err(|source| crate::transfer::TransferCliError::Import {
                path: file.clone(),
                source,
            })?;
    }
    // The host's workflows as it serves them (turn options, readers), over the exports.
    Ok(host.over_store(memory))
}
