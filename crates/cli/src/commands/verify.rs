//! `openharness verify FILE`: an export checked on any machine, without a store and without a
//! model. The file is read into a store in memory, which recomputes the hash chain of each
//! session's block (`jsonl`'s "Integrity": the first line that does not match is named, with
//! the byte it starts at); then each session is folded through this program's handlers and
//! compared with every state hash it recorded, up to the last, its final state hash
//! ([`Host::check_state`]). A session recorded by other code than this program's is a warning,
//! unless its states part.
//!
//! Exit codes: 0 verified; 1 not verified (a line changed, removed, added or moved, a state
//! today's handlers do not reproduce, or a block without a chain, which nothing shows
//! unchanged); 2 not checked (the file cannot be read, or a session's workflow is not
//! registered here) — [`CliError::exit_code`].

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;

use openharness::store::MemoryStore;
use openharness::store::jsonl::{self, ImportedBlock, TransferError};
use openharness::{SessionId, StateDivergence, Store};
use openharness_host::{CodeChange, Host, HostError, Hosted};
use serde::Serialize;

use crate::Output;
use crate::error::CliError;

/// What `verify --json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Verification {
    /// The file, as given.
    file: String,
    /// Whether every block's chain is intact and every recorded state was reproduced.
    verified: bool,
    /// How many event lines the file holds (when it was read to its end).
    events: u64,
    /// The first line that is not as it was exported, if any.
    broken: Option<Broken>,
    /// Each session's block, in the order they end in the file.
    sessions: Vec<SessionVerdict>,
}

/// The first line of the file that is not as it was exported.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Broken {
    /// The line, from 1.
    line: u64,
    /// The byte of the file the line starts at, from 0.
    offset: Option<u64>,
    /// The session of the line's block, when the line says.
    session: Option<SessionId>,
    /// The seq of the event on the line, when it is an event line.
    seq: Option<u64>,
    /// What is wrong.
    message: String,
}

/// One session's block: its chain and its states.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionVerdict {
    session: SessionId,
    workflow: Option<String>,
    events: u64,
    /// The chain head its lines were checked against (none: the block has no chain).
    chain: Option<String>,
    /// The last state hash the session recorded: its final state hash.
    final_state_hash: Option<String>,
    /// The seq of the event it was recorded on.
    final_state_seq: Option<u64>,
    /// How many recorded state hashes today's fold was compared with.
    state_hashes_checked: u64,
    /// What the states came to.
    states: States,
    /// Where today's fold parts from a recorded state hash.
    state_divergence: Option<StateDivergence>,
    /// When the session was recorded by other code than this program's: which, and which
    /// now (a warning).
    code_change: Option<CodeChange>,
}

impl SessionVerdict {
    /// Whether its block has a chain (checked by the import) and no recorded state parts
    /// from today's fold.
    fn verified(&self) -> bool {
        self.chain.is_some() && matches!(self.states, States::Reproduced | States::Unrecorded)
    }
}

/// What today's fold of a session came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
enum States {
    /// Every recorded state hash, the final one included, is today's.
    Reproduced,
    /// Today's fold parts from a recorded state hash.
    Parted,
    /// The session records no state hash: nothing to compare.
    Unrecorded,
    /// Its workflow is not registered here: it cannot be folded.
    Unhosted,
}

/// Runs `verify`: checks `file` with `workflows`, prints the verdict, and fails (exit 1 or 2)
/// unless it is verified.
pub(crate) async fn run(
    workflows: &[Arc<dyn Hosted>],
    file: &Path,
    json: bool,
    mut out: Output,
) -> Result<(), CliError> {
    let name = file.display().to_string();
    let unverifiable =
        |reason: String, source: Option<Box<dyn std::error::Error + Send + Sync>>| {
            CliError::Unverifiable {
                file: name.clone(),
                reason,
                source,
            }
        };
    let reader = std::fs::File::open(file)
        .map_err(|err| unverifiable("cannot open it".into(), Some(Box::new(err))))?;
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let summary = match jsonl::import(&*memory, BufReader::new(reader)).await {
        Ok(summary) => summary,
        Err(err) => {
            let Some(broken) = broken(file, &err) else {
                return Err(unverifiable("cannot read it".into(), Some(Box::new(err))));
            };
            let reason = match broken.offset {
                Some(offset) => format!(
                    "{} (line {} starts at byte {offset})",
                    broken.message, broken.line
                ),
                None => broken.message.clone(),
            };
            if json {
                let verification = Verification {
                    file: name.clone(),
                    verified: false,
                    events: 0,
                    broken: Some(broken),
                    sessions: Vec::new(),
                };
                writeln!(out, "{}", serde_json::to_string_pretty(&verification)?)?;
            }
            return Err(CliError::NotVerified { file: name, reason });
        }
    };

    if summary.blocks.is_empty() {
        return Err(CliError::NotVerified {
            file: name,
            reason: "it holds no session (an export holds one block per session)".into(),
        });
    }
    let mut host = Host::shared(memory);
    for workflow in workflows {
        host = host.register(Arc::clone(workflow))?;
    }
    let mut sessions = Vec::new();
    for block in &summary.blocks {
        sessions.push(verdict(&host, block).await?);
    }
    let verification = Verification {
        verified: sessions.iter().all(SessionVerdict::verified),
        file: name.clone(),
        events: summary.events,
        broken: None,
        sessions,
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&verification)?)?;
    } else {
        report(&mut out, &verification)?;
    }
    outcome(verification)
}

/// The first line of the file that is not as exported, from the import's error; `None` when
/// the error is not about a line (the file could not be read, the store in memory failed).
fn broken(file: &Path, err: &TransferError) -> Option<Broken> {
    let (line, session, seq) = match err {
        TransferError::Chain {
            line, session, seq, ..
        } => (*line, Some(session.clone()), *seq),
        TransferError::OutOfOrder {
            line,
            session,
            found,
            ..
        } => (*line, Some(session.clone()), Some(*found)),
        TransferError::Count { line, session, .. } | TransferError::Truncated { line, session } => {
            (*line, Some(session.clone()), None)
        }
        TransferError::Malformed { line, .. } => (*line, None, None),
        _ => return None,
    };
    Some(Broken {
        line,
        offset: line_offset(file, line),
        session,
        seq,
        message: err.to_string(),
    })
}

/// The byte of `file` that line `line` (from 1) starts at.
fn line_offset(file: &Path, line: u64) -> Option<u64> {
    let mut reader = BufReader::new(std::fs::File::open(file).ok()?);
    let mut offset = 0u64;
    let mut bytes = Vec::new();
    for _ in 1..line {
        bytes.clear();
        let read = reader.read_until(b'\n', &mut bytes).ok()?;
        if read == 0 {
            return None;
        }
        offset += read as u64;
    }
    Some(offset)
}

/// One block's verdict: its states folded through today's handlers against the hashes it
/// recorded, and whether today's code is the code that recorded it.
async fn verdict(host: &Host, block: &ImportedBlock) -> Result<SessionVerdict, CliError> {
    let session = &block.session;
    let mut verdict = SessionVerdict {
        session: session.clone(),
        workflow: block.workflow.clone(),
        events: block.events,
        chain: block.chain.map(|head| head.to_string()),
        final_state_hash: block.state_hash.clone(),
        final_state_seq: block.state_hash_seq,
        state_hashes_checked: 0,
        states: States::Unrecorded,
        state_divergence: None,
        code_change: None,
    };
    let check = match host.check_state(session).await {
        Ok(check) => check,
        Err(HostError::Unhosted { recorded, .. }) => {
            verdict.workflow = verdict.workflow.or(recorded);
            verdict.states = States::Unhosted;
            return Ok(verdict);
        }
        Err(other) => return Err(other.into()),
    };
    verdict.workflow = Some(host.workflow_of(session).await?.name().to_owned());
    verdict.code_change = host.code_changed(session).await?;
    verdict.state_hashes_checked = check.checked;
    verdict.states = match (&check.divergence, check.checked) {
        (Some(_), _) => States::Parted,
        (None, 0) => States::Unrecorded,
        (None, _) => States::Reproduced,
    };
    verdict.state_divergence = check.divergence;
    Ok(verdict)
}

/// The verdict in words: a line per session, warnings, and what parted.
fn report(out: &mut Output, verification: &Verification) -> Result<(), CliError> {
    for verdict in &verification.sessions {
        let session = &verdict.session;
        let workflow = verdict.workflow.as_deref().unwrap_or("an unknown workflow");
        let chain = verdict.chain.as_deref().map_or_else(
            || "no hash chain".to_owned(),
            |head| format!("chain head {head}"),
        );
        let states = match (verdict.states, &verdict.final_state_hash) {
            (States::Reproduced, Some(hash)) => format!(
                "final state hash {hash} reproduced (after seq {}; {} state hashes checked)",
                verdict.final_state_seq.unwrap_or_default(),
                verdict.state_hashes_checked
            ),
            (States::Reproduced, None) => {
                format!("{} state hashes reproduced", verdict.state_hashes_checked)
            }
            (States::Parted, _) => "today's handlers part from its recorded states".to_owned(),
            (States::Unrecorded, _) => "no state hash recorded, so no state compared".to_owned(),
            (States::Unhosted, _) => {
                "its workflow is not registered here, so its states were not replayed".to_owned()
            }
        };
        let verdict_word = if verdict.verified() {
            "verified"
        } else {
            "NOT verified"
        };
        writeln!(
            out,
            "{verdict_word}: session {session} ({workflow}): {} events, {chain}, {states}",
            verdict.events
        )?;
        if let Some(change) = &verdict.code_change {
            writeln!(out, "  warning: {session} was {change}")?;
        }
        if let Some(divergence) = &verdict.state_divergence {
            let mut text = Vec::new();
            super::replay::write_state_divergence(&mut text, divergence)?;
            for line in String::from_utf8_lossy(&text).lines() {
                writeln!(out, "  {line}")?;
            }
        }
    }
    let unchained = verification
        .sessions
        .iter()
        .filter(|s| s.chain.is_none())
        .count();
    if unchained > 0 {
        writeln!(
            out,
            "{unchained} session(s) without a hash chain (exported before chains, or their chain \
             was removed): nothing shows their lines are as they were exported; `replay --all \
             --from {}` checks their states alone",
            verification.file
        )?;
    }
    if verification
        .sessions
        .iter()
        .any(|s| s.states == States::Unrecorded)
    {
        writeln!(
            out,
            "warning: a session without state hashes (recorded before them, or whose state's \
             JSON is not reproducible) has no state to compare"
        )?;
    }
    if verification.verified {
        writeln!(
            out,
            "verified {}: {} events in {} session(s), every chain intact and every recorded state \
             reproduced (no model was called)",
            verification.file,
            verification.events,
            verification.sessions.len()
        )?;
    }
    Ok(())
}

/// The exit the verdict asks for: success when verified; not verified (exit 1) when a chain is
/// missing or a state parts; not checked (exit 2) when a session could not be replayed here.
fn outcome(verification: Verification) -> Result<(), CliError> {
    let Verification { file, sessions, .. } = verification;
    let parted: Vec<String> = sessions
        .iter()
        .filter(|s| s.states == States::Parted)
        .map(|s| match &s.state_divergence {
            Some(d) => format!(
                "{}: its state parts after seq {} (`{}`)",
                s.session, d.seq, d.event
            ),
            None => format!("{}: its state parts", s.session),
        })
        .collect();
    let unchained: Vec<String> = sessions
        .iter()
        .filter(|s| s.chain.is_none())
        .map(|s| format!("{}: no hash chain", s.session))
        .collect();
    if !parted.is_empty() || !unchained.is_empty() {
        let mut reasons = parted;
        reasons.extend(unchained);
        return Err(CliError::NotVerified {
            file,
            reason: reasons.join("; "),
        });
    }
    let unhosted: Vec<String> = sessions
        .iter()
        .filter(|s| s.states == States::Unhosted)
        .map(|s| {
            format!(
                "session {} was recorded by {}, which this program does not register",
                s.session,
                s.workflow.as_deref().map_or_else(
                    || "an unknown workflow".to_owned(),
                    |w| format!("workflow `{w}`")
                )
            )
        })
        .collect();
    if !unhosted.is_empty() {
        return Err(CliError::Unverifiable {
            file,
            reason: format!(
                "its chains are intact, but its states cannot be replayed: {}",
                unhosted.join("; ")
            ),
            source: None,
        });
    }
    Ok(())
}
