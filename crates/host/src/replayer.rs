//! [`Replayer`]: many recorded sessions re-executed through today's code at once — every agent
//! answered from its recording (no model is called), each recording folded through today's
//! handlers against the state hashes its live run recorded — and a [`ReplayReport`] that CI can
//! read: which sessions part, where, and the chain of causes back to the input that led there
//! (as JUnit XML too). `openharness replay --all` runs it over a store; a `cargo test` runs it
//! over recordings kept with the code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness_core::{Envelope, SessionId};
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::Host;
use crate::catalog::{SessionQuery, SessionsPage};
use crate::causes::{Cause, causes};
use crate::error::HostError;
use crate::replay::{FirstDivergence, Replayed};
use crate::wire::SessionSummary;

/// Re-executes sessions through today's code, several at a time ([`Replayer::run`]).
///
/// ```
/// # async fn demo(host: openharness_host::Host) -> Result<(), openharness_host::HostError> {
/// use openharness_host::{Replayer, SessionQuery};
/// let replayer = Replayer::new(host);
/// let sessions = replayer.sessions(&SessionQuery::default()).await?;
/// let report = replayer.run(sessions, |done, total| eprintln!("{done}/{total}")).await;
/// assert!(report.all_matched(), "{}", report.junit());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Replayer {
    host: Host,
    jobs: usize,
}

/// What replaying many sessions found ([`Replayer::run`]).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReplayReport {
    /// The sessions re-executed.
    pub replayed: u64,
    /// Those whose events and states all matched their recordings.
    pub matched: u64,
    /// Those that parted from their recordings, in the order they were given.
    pub parted: Vec<PartedSession>,
    /// Those that could not be replayed (a store error, a recording today's code cannot
    /// read), with why.
    pub failed: Vec<FailedReplay>,
    /// Those left out: recorded by a workflow this program does not register, or running.
    pub skipped: Vec<SkippedSession>,
    /// The wall time of the whole run, in seconds.
    pub seconds: f64,
    /// Each session's own replay time in seconds, in the order given (for JUnit's `time`).
    #[serde(skip)]
    times: Vec<(SessionId, Option<String>, f64)>,
}

/// A session whose replay parted from its recording.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PartedSession {
    /// The session's workflow.
    pub workflow: Option<String>,
    /// Where and how it parted ([`Host::replay`]).
    pub replayed: Replayed,
    /// The first position where it parts: the earlier of the first differing event and the
    /// first state that differs.
    pub seq: u64,
    /// The recorded event there (for a state that parts, the first event since the last hash
    /// that matched whose handler changed the state) and the chain of events that caused it,
    /// back to the input (or answer) that began it: each with its seq, name and the agent it
    /// concerns.
    pub causes: Vec<Cause>,
}

/// A session that could not be replayed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FailedReplay {
    /// The session.
    pub session: SessionId,
    /// Its workflow.
    pub workflow: Option<String>,
    /// Why.
    pub error: String,
}

/// A session left out of a replay run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SkippedSession {
    /// The session.
    pub session: SessionId,
    /// Why it was left out.
    pub why: String,
}

/// What one session's replay gave.
enum Outcome {
    Matched,
    Parted(Box<PartedSession>),
    Failed(String),
}

impl Replayer {
    /// A replayer over `host`'s store and workflows, as many sessions at a time as the
    /// machine has cores.
    pub fn new(host: Host) -> Self {
        let jobs = std::thread::available_parallelism().map_or(2, usize::from);
        Self { host, jobs }
    }

    /// At most `jobs` sessions at a time (at least 1).
    #[must_use]
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// Every session `query` selects, all pages of it (its `limit` is the page size).
    pub async fn sessions(&self, query: &SessionQuery) -> Result<Vec<SessionSummary>, HostError> {
        let mut query = query.clone();
        let mut all = Vec::new();
        loop {
            let SessionsPage {
                sessions,
                next_after,
                ..
            } = self.host.query_sessions(&query).await?;
            all.extend(sessions);
            match next_after {
                Some(after) => query.after = Some(after),
                None => return Ok(all),
            }
        }
    }

    /// Replays `sessions` (those recorded by workflows this host registers and not running;
    /// the others are reported skipped), calling `progress(done, total)` after each one.
    pub async fn run(
        &self,
        sessions: Vec<SessionSummary>,
        mut progress: impl FnMut(usize, usize),
    ) -> ReplayReport {
        let started = Instant::now();
        let mut report = ReplayReport::default();
        let mut order = Vec::new();
        for summary in sessions {
            if !summary.hosted {
                report.skipped.push(SkippedSession {
                    session: summary.id,
                    why: "recorded by a workflow this program does not register".to_owned(),
                });
            } else if summary.status.is_running() || self.host.is_running(&summary.id) {
                report.skipped.push(SkippedSession {
                    session: summary.id,
                    why: "a turn is under way on it: its recording is not whole yet".to_owned(),
                });
            } else {
                order.push((summary.id, summary.workflow));
            }
        }
        let total = order.len();
        let permits = Arc::new(Semaphore::new(self.jobs));
        let mut tasks = JoinSet::new();
        for (index, (session, _)) in order.iter().enumerate() {
            let (host, session, permits) =
                (self.host.clone(), session.clone(), Arc::clone(&permits));
            let workflow = order[index].1.clone();
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await;
                let began = Instant::now();
                let outcome = replay_one(&host, &session, workflow).await;
                (index, outcome, began.elapsed())
            });
        }
        let mut outcomes: Vec<Option<(Outcome, Duration)>> = (0..total).map(|_| None).collect();
        let mut done = 0;
        while let Some(joined) = tasks.join_next().await {
            done += 1;
            progress(done, total);
            match joined {
                Ok((index, outcome, took)) => outcomes[index] = Some((outcome, took)),
                Err(err) => tracing::warn!(error = %err, "a replay task ended without an answer"),
            }
        }
        for ((session, workflow), outcome) in order.into_iter().zip(outcomes) {
            let (outcome, took) = outcome.unwrap_or_else(|| {
                (
                    Outcome::Failed("the replay's task ended without an answer".to_owned()),
                    Duration::ZERO,
                )
            });
            report
                .times
                .push((session.clone(), workflow.clone(), took.as_secs_f64()));
            match outcome {
                Outcome::Matched => {
                    report.replayed += 1;
                    report.matched += 1;
                }
                Outcome::Parted(parted) => {
                    report.replayed += 1;
                    report.parted.push(*parted);
                }
                Outcome::Failed(error) => report.failed.push(FailedReplay {
                    session,
                    workflow,
                    error,
                }),
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        report
    }
}

/// Replays one session and, when it parts, reads the chain of causes of where it parts.
async fn replay_one(host: &Host, session: &SessionId, workflow: Option<String>) -> Outcome {
    let replayed = match host.replay(session).await {
        Ok(replayed) => replayed,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let Some(first) = replayed.first_divergence() else {
        return Outcome::Matched;
    };
    let seq = first.seq();
    let events: Vec<Envelope> = match host.events(session, None, usize::MAX).await {
        Ok(page) => page.events.into_iter().map(|r| r.event).collect(),
        Err(_) => Vec::new(),
    };
    // A state that parts was changed by a handler of one of the events since the last hash
    // that matched: the chain starts at the first of them whose handler changes the state
    // today (the first of them when none does).
    let from = match first {
        FirstDivergence::State(state) => crate::bisect::first_change(host, session, state)
            .await
            .unwrap_or(seq),
        FirstDivergence::Events(_) => seq,
    };
    let causes = causes(&events, from);
    Outcome::Parted(Box::new(PartedSession {
        workflow,
        replayed,
        seq,
        causes,
    }))
}

impl ReplayReport {
    /// Whether every replayed session matched and none failed.
    pub fn all_matched(&self) -> bool {
        self.parted.is_empty() && self.failed.is_empty()
    }

    /// The report as JUnit XML: one `testcase` per session (classname its workflow), a
    /// `failure` for each that parted (where, and the chain of causes), an `error` for each
    /// that could not be replayed, `skipped` for those left out.
    pub fn junit(&self) -> String {
        let parted: std::collections::HashMap<&SessionId, &PartedSession> = self
            .parted
            .iter()
            .map(|p| (&p.replayed.session, p))
            .collect();
        let failed: std::collections::HashMap<&SessionId, &FailedReplay> =
            self.failed.iter().map(|f| (&f.session, f)).collect();
        let mut cases = String::new();
        for (session, workflow, seconds) in &self.times {
            let class = xml(&format!(
                "openharness.replay.{}",
                workflow.as_deref().unwrap_or("unknown")
            ));
            cases.push_str(&format!(
                "    <testcase classname=\"{class}\" name=\"{}\" time=\"{seconds:.3}\"",
                xml(session.as_str())
            ));
            if let Some(parted) = parted.get(session) {
                cases.push_str(&format!(
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(&parted.summary()),
                    xml(&parted.details())
                ));
            } else if let Some(failed) = failed.get(session) {
                cases.push_str(&format!(
                    ">\n      <error message=\"{}\"/>\n    </testcase>\n",
                    xml(&failed.error)
                ));
            } else {
                cases.push_str("/>\n");
            }
        }
        for skipped in &self.skipped {
            cases.push_str(&format!(
                "    <testcase classname=\"openharness.replay\" name=\"{}\" time=\"0\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                xml(skipped.session.as_str()),
                xml(&skipped.why)
            ));
        }
        let tests = self.times.len() + self.skipped.len();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"openharness replay\" tests=\"{tests}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">\n{cases}</testsuite>\n",
            self.parted.len(),
            self.failed.len(),
            self.skipped.len(),
            self.seconds
        )
    }
}

impl PartedSession {
    /// One line: where it parts and what differs there.
    pub fn summary(&self) -> String {
        match self.replayed.first_divergence() {
            Some(FirstDivergence::State(state)) => {
                let handlers: Vec<String> = state
                    .changed_by
                    .iter()
                    .map(|c| format!("{} (seq {})", c.event, c.seq))
                    .collect();
                format!(
                    "the state parts after seq {}: today's handlers of {} fold another state than the recording's",
                    state.seq,
                    if handlers.is_empty() {
                        state.event.clone()
                    } else {
                        handlers.join(", ")
                    }
                )
            }
            Some(FirstDivergence::Events(event)) => format!(
                "parts at seq {}: recorded {}, today {}",
                event.seq,
                event
                    .recorded
                    .as_ref()
                    .map_or("(the end)", |e| e.name.as_str()),
                event
                    .today
                    .as_ref()
                    .map_or("(the end)", |e| e.name.as_str()),
            ),
            None => "parts from its recording".to_owned(),
        }
    }

    /// The chain of causes, one line each, from where it parts back to its input.
    pub fn details(&self) -> String {
        self.causes
            .iter()
            .map(|cause| match &cause.agent {
                Some(agent) => format!("seq {} {} (agent {agent})", cause.seq, cause.name),
                None => format!("seq {} {}", cause.seq, cause.name),
            })
            .collect::<Vec<_>>()
            .join("\n  caused by ")
    }
}

/// `text` escaped for an XML attribute or text node: markup characters as entities, line
/// breaks and tabs as character references (an attribute keeps them then), and what XML 1.0
/// does not allow at all (other control characters, U+FFFE, U+FFFF) left out.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_what_it_must() {
        assert_eq!(
            xml("a<b & \"c\"\u{1}\nd\u{ffff}"),
            "a&lt;b &amp; &quot;c&quot;&#10;d"
        );
    }
}
