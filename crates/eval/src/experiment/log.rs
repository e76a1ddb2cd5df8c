//! The experiment's own record: what it started, each run's result, flushed in batches.

use super::*;

/// An experiment's log, appended to by one writer that knows its length.
pub(crate) struct Log {
    pub(super) host: Host,
    pub(super) session: SessionId,
    pub(super) name: String,
    pub(super) len: u64,
    pub(crate) record: Option<ExperimentRecord>,
}

impl Log {
    pub(crate) async fn open(host: &Host, name: &str) -> Result<Self, EvalError> {
        let session = log_session(name)?;
        let events = host.store().all_events(&session).await?;
        let record = ExperimentRecord::fold(name, &events)?;
        Ok(Self {
            host: host.clone(),
            session,
            name: name.to_owned(),
            len: events.len() as u64,
            record,
        })
    }

    /// Records the experiment's definition (its first event, or a restart).
    pub(crate) async fn start(&mut self, definition: EvalStarted) -> Result<(), EvalError> {
        let event = self.encode(&definition)?;
        let at = event.timestamp;
        self.append(vec![event]).await?;
        ExperimentRecord::start(&mut self.record, &self.name, definition, at);
        if let Some(record) = &mut self.record {
            record.len = self.len;
        }
        Ok(())
    }

    /// Records the runs about to start (the sessions they record to) in one append, and in
    /// the record kept here.
    pub(crate) async fn dispatch(&mut self, runs: Vec<EvalDispatched>) -> Result<(), EvalError> {
        let events = runs
            .iter()
            .map(|run| self.encode(run))
            .collect::<Result<Vec<_>, _>>()?;
        self.append(events).await?;
        if let Some(record) = &mut self.record {
            for run in runs {
                record.add_dispatch(run);
            }
            record.len = self.len;
        }
        Ok(())
    }

    /// Records finished runs and their scores in one append, with the verdicts judges were
    /// asked for since the last append, and in the record kept here.
    pub(crate) async fn record_runs(
        &mut self,
        batch: Vec<(EvalRecorded, Vec<EvalScored>)>,
        judging: &Judging,
    ) -> Result<(), EvalError> {
        let verdicts = judging.take_fresh();
        let mut events = Vec::new();
        for verdict in &verdicts {
            events.push(self.encode(verdict)?);
        }
        for (run, scores) in &batch {
            events.push(self.encode(run)?);
            for score in scores {
                events.push(self.encode(score)?);
            }
        }
        self.append(events).await?;
        if let Some(record) = &mut self.record {
            for verdict in verdicts {
                record.add_verdict(verdict);
            }
            for (run, scores) in batch {
                record.add_run(run);
                for score in scores {
                    record.add_score(score);
                }
            }
            record.len = self.len;
        }
        Ok(())
    }

    /// Records scores of recorded runs (a re-scoring), after the verdicts judges were asked
    /// for, in one append, and in the record.
    pub(crate) async fn record_scores(
        &mut self,
        scores: Vec<EvalScored>,
        judging: &Judging,
    ) -> Result<(), EvalError> {
        let verdicts = judging.take_fresh();
        let mut events = Vec::new();
        for verdict in &verdicts {
            events.push(self.encode(verdict)?);
        }
        for score in &scores {
            events.push(self.encode(score)?);
        }
        self.append(events).await?;
        if let Some(record) = &mut self.record {
            for verdict in verdicts {
                record.add_verdict(verdict);
            }
            for score in scores {
                record.add_score(score);
            }
            record.len = self.len;
        }
        Ok(())
    }

    /// Records that this run of the experiment was cancelled (after its runs, each recorded
    /// `cancelled` or finished), and in the record.
    pub(crate) async fn cancelled(&mut self, cancelled: EvalCancelled) -> Result<(), EvalError> {
        let event = self.encode(&cancelled)?;
        let at = event.timestamp;
        self.append(vec![event]).await?;
        if let Some(record) = &mut self.record {
            record.cancelled = Some(at);
            record.len = self.len;
        }
        Ok(())
    }

    /// One of the log's events as an envelope.
    pub(super) fn encode<E: openharness_core::Event>(
        &self,
        event: &E,
    ) -> Result<Envelope, EvalError> {
        Envelope::typed(event, None).map_err(|source| EvalError::Encode {
            experiment: self.name.clone(),
            name: E::NAME,
            source,
        })
    }

    pub(super) async fn append(&mut self, events: Vec<Envelope>) -> Result<(), EvalError> {
        if events.is_empty() {
            return Ok(());
        }
        match self
            .host
            .store()
            .append(&self.session, &events, self.len)
            .await
        {
            Ok(len) => {
                self.len = len;
                Ok(())
            }
            Err(StoreError::Conflict { .. }) => Err(EvalError::Busy(self.name.clone())),
            Err(err) => Err(err.into()),
        }
    }
}
