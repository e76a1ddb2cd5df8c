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

use openharness_core::SessionId;

use super::TurnStart;
use crate::Host;
use crate::error::HostError;

impl Host {
    /// Resumes every session of a workflow this host runs whose last turn was cut off and
    /// that no process runs (one this host cannot claim runs elsewhere), each in the
    /// background. Returns the sessions whose resume recorded something. Sessions being
    /// imported (marked unfinished in the store), [`Host::unlisted`] ones and those of
    /// workflows registered to read only ([`Host::reader`]) are left alone.
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
        let mut resumed = Vec::new();
        for summary in self.summaries(&infos) {
            let session = summary.id;
            if !summary.status.is_running()
                || importing.contains(&session)
                || self.is_running(&session)
                || !summary
                    .workflow
                    .as_deref()
                    .is_some_and(|name| self.runs_turns_of(name))
            {
                continue;
            }
            let options = match self.own_turn_options(&session).await {
                Ok(options) => options,
                Err(err) => {
                    tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "a cut-off session's turn options could not be made; not resumed now");
                    continue;
                }
            };
            match self.start(&session, TurnStart::Resume, options).await {
                Ok(started) if started.recorded.is_some() => {
                    tracing::info!(%session, "resuming a session whose turn was cut off");
                    resumed.push(session);
                }
                Ok(_) => {}
                // Claimed by another process, or run here since the listing: not ours.
                Err(HostError::Workflow(openharness_core::Error::SessionBusy { .. })) => {}
                Err(err) => {
                    tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "a cut-off session could not be resumed");
                }
            }
        }
        Ok(resumed)
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
