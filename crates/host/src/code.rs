//! [`Host::code_changed`]: whether the code that recorded a session is the code this host
//! runs — the fingerprint, version and commit in the session's `workflow:started` (its root's,
//! for a fork) against the registered workflow's today.

use openharness_core::builtin::WorkflowStarted;
use openharness_core::{Event, SessionId};
use serde::Serialize;

use crate::Host;
use crate::error::HostError;

/// The recorded code and today's, when they differ ([`Host::code_changed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CodeChange {
    /// The fingerprint the session was recorded with (none: recorded before fingerprints).
    pub recorded: Option<String>,
    /// The version it was recorded with.
    pub recorded_version: Option<String>,
    /// The commit it was recorded with.
    pub recorded_commit: Option<String>,
    /// Today's fingerprint.
    pub today: String,
    /// Today's version.
    pub today_version: Option<String>,
    /// Today's commit.
    pub today_commit: Option<String>,
}

impl std::fmt::Display for CodeChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let describe = |code: Option<&str>, version: Option<&str>, commit: Option<&str>| {
            let mut text = code.map_or_else(
                || "code of unknown fingerprint".to_owned(),
                |c| format!("code {c}"),
            );
            if let Some(version) = version {
                text.push_str(&format!(", version {version}"));
            }
            if let Some(commit) = commit {
                text.push_str(&format!(", commit {commit}"));
            }
            text
        };
        write!(
            f,
            "recorded by {}; this program runs {}",
            describe(
                self.recorded.as_deref(),
                self.recorded_version.as_deref(),
                self.recorded_commit.as_deref()
            ),
            describe(
                Some(&self.today),
                self.today_version.as_deref(),
                self.today_commit.as_deref()
            )
        )
    }
}

impl Host {
    /// `Some` when `session` was recorded by other code than the workflow this host would
    /// fold it with: another fingerprint (handled events, agents, output schemas), version or
    /// commit. States, replays and forks of it use today's code.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// if let Some(change) = host.code_changed(&session).await? {
    ///     eprintln!("note: {change}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn code_changed(&self, session: &SessionId) -> Result<Option<CodeChange>, HostError> {
        let today = self.workflow_of(session).await?.code();
        // The code that started the lineage: its root's `workflow:started`.
        let root = self
            .ancestry(session)
            .await?
            .pop()
            .and_then(|root| root.first);
        let Some(started) = root
            .filter(|event| event.name == WorkflowStarted::NAME)
            .and_then(|event| event.decode::<WorkflowStarted>().ok())
        else {
            return Ok(None);
        };
        // A recording made before code was recorded says nothing to compare.
        if started.code.is_none() && started.version.is_none() && started.commit.is_none() {
            return Ok(None);
        }
        let same = started.code.as_deref() == Some(today.code.as_str())
            && started.version == today.version
            && started.commit == today.commit;
        Ok((!same).then_some(CodeChange {
            recorded: started.code,
            recorded_version: started.version,
            recorded_commit: started.commit,
            today: today.code,
            today_version: today.version,
            today_commit: today.commit,
        }))
    }
}
