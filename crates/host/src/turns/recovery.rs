//! Recovery: the turns a crash cut off, finished with no client's help. A session whose log
//! says a turn is under way (or inputs are still queued) while nobody holds its claim lost its
//! process mid-turn; [`Host::recover`] claims each such session of a workflow this host runs
//! and resumes it from its log, and [`Host::spawn_recovery`] does so at once and then every so
//! often (another replica sharing a PostgreSQL store may die at any time).
//!
//! Resuming never asks a model again for a response that is recorded: only calls cut off
//! before their `agent:completed` run again (see `Workflow::resume`).

use std::collections::HashSet;
use std::time::Duration;

use futures_util::{StreamExt as _, stream};
use openharness_core::SessionId;

use super::TurnStart;
use crate::Host;
use crate::error::HostError;

/// How many cut-off sessions [`Host::recover`] resumes at once.
const RESUMES_AT_ONCE: usize = 16;

impl Host {
    /// Resumes every session of a workflow this host runs whose last turn was cut off and
    /// that no process runs (one this host cannot claim runs elsewhere), each in the
    /// background, up to 16 starting at once. Returns the sessions whose resume recorded
    /// something. Sessions being imported (marked unfinished in the store),
    /// [`Host::unlisted`] ones and those of workflows registered to read only
    /// ([`Host::reader`]) are left alone.
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host) -> Result<(), openharness_host::HostError> {
    /// for session in host.recover().await? {
    ///     println!("resumed {session}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn recover(&self) -> Result<Vec<SessionId>, HostError> {
        let infos = self.store.sessions().await.map_err(self.store_error())?;
        let importing: HashSet<SessionId> = self
            .store
            .unfinished()
            .await
            .map_err(self.store_error())?
            .into_iter()
            .map(|(session, _)| session)
            .collect();
        let cut_off: Vec<SessionId> = self
            .summaries(&infos)
            .into_iter()
            .filter(|summary| {
                summary.status.is_running()
                    && !importing.contains(&summary.id)
                    && summary
                        .workflow
                        .as_deref()
                        .is_some_and(|name| self.runs_turns_of(name))
            })
            .map(|summary| summary.id)
            .collect();
        // Several at a time: a resume waits for its turn's first record (a claim, a fold, and
        // often a model's first word), and a replica that died mid-load leaves dozens.
        let resumed: Vec<Option<SessionId>> = stream::iter(cut_off)
            .map(|session| self.resume_cut_off(session))
            .buffered(RESUMES_AT_ONCE)
            .collect()
            .await;
        Ok(resumed.into_iter().flatten().collect())
    }

    /// Resumes one cut-off session: `Some` when the resume recorded something.
    async fn resume_cut_off(&self, session: SessionId) -> Option<SessionId> {
        // Run here (a client may have started a turn on it since the listing): not cut off.
        if self.is_running(&session) {
            return None;
        }
        let options = match self.own_turn_options(&session).await {
            Ok(options) => options,
            Err(err) => {
                tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "a cut-off session's turn options could not be made; not resumed now");
                return None;
            }
        };
        match self.start(&session, TurnStart::Resume, options).await {
            Ok(started) if started.recorded.is_some() => {
                tracing::info!(%session, "resuming a session whose turn was cut off");
                Some(session)
            }
            Ok(_) => None,
            // Claimed by another process, or run here since the listing: not ours.
            Err(HostError::Workflow(openharness_core::Error::SessionBusy { .. })) => None,
            Err(err) => {
                tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "a cut-off session could not be resumed");
                None
            }
        }
    }

    /// Runs [`Host::recover`] at once and then every `every` until the returned task is
    /// aborted; failures are logged and the next round tries again. A replica that dies
    /// mid-turn is replaced within about `every` of its claims being freed (on PostgreSQL,
    /// when the database notices its connection closed).
    ///
    /// ```no_run
    /// # async fn demo(host: openharness_host::Host) {
    /// let recovery = host.spawn_recovery(std::time::Duration::from_secs(1));
    /// // … serve …
    /// recovery.abort();
    /// # }
    /// ```
    pub fn spawn_recovery(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let host = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(err) = host.recover().await {
                    tracing::warn!(error = %openharness_core::adapter::ErrorChain(&err), "looking for cut-off sessions failed");
                }
            }
        })
    }
}
