//! A live run's tape: [`Tape::record`] starts the run and the tape grows as it records.

use openharness_core::{
    Envelope, Pattern, RunOptions, RunOutcome, Workflow, WorkflowState, renderer_fn,
};
use tokio::sync::mpsc::{UnboundedReceiver, error::TryRecvError, unbounded_channel};
use tokio::task::JoinHandle;

use super::Tape;
use crate::error::TapeError;
use crate::snapshots::Calibration;

/// The run behind a recording tape.
pub(super) struct Live<S> {
    pub(super) rx: UnboundedReceiver<Envelope>,
    pub(super) run: Option<JoinHandle<Result<RunOutcome<S>, openharness_core::Error>>>,
    pub(super) ended: bool,
}

impl<S: WorkflowState> Tape<S> {
    /// Starts `workflow` on a tokio task and returns its tape, which grows as the run records
    /// events ([`Tape::is_recording`] is true until the run ends). Call [`Tape::refresh`] to
    /// take in what was recorded so far, [`Tape::play`] to follow the run, and
    /// [`Tape::wait`] for its outcome. Must be called inside a tokio runtime.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) -> Result<(), openharness_tape::TapeError> {
    /// use openharness_core::RunOptions;
    /// use openharness_tape::Tape;
    /// let mut tape = Tape::record(&workflow, RunOptions::new().input("go"));
    /// assert!(tape.is_recording() || tape.len() > 0);
    /// let outcome = tape.wait().await?;   // the run is over; the tape holds every event
    /// assert_eq!(tape.len(), outcome.len);
    /// # Ok(()) }
    /// ```
    pub fn record(workflow: &Workflow<S>, options: RunOptions) -> Self {
        let session = options.session_id().cloned().unwrap_or_default();
        let (tx, rx) = unbounded_channel();
        let forward = renderer_fn(Pattern::Any, move |event: &Envelope| {
            let _ = tx.send(event.clone());
        });
        let options = options.session(session.clone()).renderer(forward);
        let runner = workflow.clone();
        let run = tokio::spawn(async move { runner.run(options).await });
        let initial = workflow.initial_state().clone();
        let calibration = Calibration::measure(&initial, &[]);
        let interval = calibration.interval();
        let mut tape = Self::unindexed(
            workflow.clone(),
            session,
            Vec::new(),
            initial,
            calibration,
            interval,
        );
        tape.index();
        tape.live = Some(Live {
            rx,
            run: Some(run),
            ended: false,
        });
        tape
    }

    /// Takes in the events a live run recorded since the last call. Returns the new length.
    /// Does nothing on a replaying tape.
    pub fn refresh(&mut self) -> u64 {
        let mut arrived = false;
        if let Some(live) = &mut self.live {
            loop {
                match live.rx.try_recv() {
                    Ok(event) => {
                        self.events.push(event);
                        arrived = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        live.ended = true;
                        break;
                    }
                }
            }
        }
        if arrived {
            self.index();
        }
        self.len()
    }

    /// Waits until a live run records more events (true) or ends (false).
    pub(super) async fn wait_for_events(&mut self) -> bool {
        let Some(live) = &mut self.live else {
            return false;
        };
        if live.ended {
            return false;
        }
        match live.rx.recv().await {
            Some(event) => {
                self.events.push(event);
                self.refresh();
                self.index();
                true
            }
            None => {
                live.ended = true;
                false
            }
        }
    }

    /// Waits for a live run to end, takes in all its events and returns its outcome.
    /// A replaying tape has no run: that is [`TapeError::NotRecording`].
    pub async fn wait(&mut self) -> Result<RunOutcome<S>, TapeError> {
        let handle = self
            .live
            .as_mut()
            .and_then(|live| live.run.take())
            .ok_or_else(|| TapeError::NotRecording(self.session.clone()))?;
        let outcome = handle.await.map_err(|err| TapeError::RunTask {
            session: self.session.clone(),
            message: err.to_string(),
        })?;
        while self.wait_for_events().await {}
        Ok(outcome?)
    }
}
