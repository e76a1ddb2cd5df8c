//! One side of a comparison, read and folded beside the comparing task: a task of its own
//! reads the lineage a page ahead, and another folds the events once they have been
//! compared. Comparing two long sessions thus costs about the time to load one on two cores,
//! not the time to load both one after the other.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use openharness_core::{Envelope, Store, StoreError, adapter::EventStream};
use serde_json::Value;
use tokio::sync::mpsc;

use super::Segment;
use crate::json_fold::JsonFold;

/// What a lineage's stream yields: an event, or the state edit of a fork it enters.
pub(super) enum Step {
    Event(Envelope),
    Edit(Value),
}

/// How many steps go to a task at a time.
const BATCH: usize = 1_024;
/// How many batches wait for a task at most.
const QUEUED: usize = 4;

/// The lineage's steps from lineage seq `from` on, read a page at a time, each fork entered
/// on the way preceded by its `stateEdit` (a fork standing at `from` is not entered: the
/// state there is its starting state already).
pub(super) fn steps<'a>(
    store: &'a dyn Store,
    segments: &'a [Segment],
    from: u64,
) -> BoxStream<'a, Result<Step, StoreError>> {
    let streams: Vec<BoxStream<'a, Result<Step, StoreError>>> = segments
        .iter()
        // A fork entered on the way counts even when it has no events of its own: its edit
        // is still the state the lineage ends with.
        .filter(|s| s.end() > from || s.start > from)
        .map(|s| {
            let skip = from.saturating_sub(s.start);
            let edit = s
                .edit
                .clone()
                .filter(|_| s.start > from)
                .map(|patch| Ok(Step::Edit(patch)));
            let events: EventStream<'a> =
                store.stream_events(&s.session, s.range.start + skip..s.range.end);
            futures_util::stream::iter(edit)
                .chain(events.map(|recorded| recorded.map(|r| Step::Event(r.event))))
                .boxed()
        })
        .collect();
    futures_util::stream::iter(streams).flatten().boxed()
}

/// The first event of `steps` (edits skipped).
pub(super) async fn first_event(
    steps: &mut BoxStream<'_, Result<Step, StoreError>>,
) -> Result<Option<Envelope>, StoreError> {
    while let Some(step) = steps.next().await {
        if let Step::Event(event) = step? {
            return Ok(Some(event));
        }
    }
    Ok(None)
}

/// One side: its lineage read ahead by a task, and its fold (when its workflow is hosted).
pub(super) struct Side {
    pages: mpsc::Receiver<Vec<Result<Step, StoreError>>>,
    page: std::vec::IntoIter<Result<Step, StoreError>>,
    fold: Option<Folding>,
}

impl Side {
    /// Starts reading `segments` from lineage seq `from` on in a task of its own.
    pub(super) fn read(
        store: Arc<dyn Store>,
        segments: Vec<Segment>,
        from: u64,
        fold: Option<Box<dyn JsonFold>>,
    ) -> Self {
        let (sender, pages) = mpsc::channel(QUEUED);
        tokio::spawn(async move {
            let mut steps = steps(store.as_ref(), &segments, from).ready_chunks(BATCH);
            while let Some(page) = steps.next().await {
                // The comparison is over when nobody receives.
                if sender.send(page).await.is_err() {
                    break;
                }
            }
        });
        Self {
            pages,
            page: Vec::new().into_iter(),
            fold: fold.map(Folding::start),
        }
    }

    /// The next event (the edits before it go to the fold).
    pub(super) async fn next_event(&mut self) -> Result<Option<Envelope>, StoreError> {
        loop {
            let Some(step) = self.page.next() else {
                match self.pages.recv().await {
                    Some(page) => {
                        self.page = page.into_iter();
                        continue;
                    }
                    None => return Ok(None),
                }
            };
            match step? {
                Step::Event(event) => return Ok(Some(event)),
                Step::Edit(patch) => {
                    if let Some(fold) = &mut self.fold {
                        fold.push(Step::Edit(patch)).await;
                    }
                }
            }
        }
    }

    /// Folds `event` (a compared event of this side).
    pub(super) async fn fold(&mut self, event: Envelope) {
        if let Some(fold) = &mut self.fold {
            fold.push(Step::Event(event)).await;
        }
    }

    /// The fold, once every event handed to it is applied; `None` when this side has none
    /// or its task failed.
    pub(super) async fn finish(self) -> Option<Box<dyn JsonFold>> {
        self.fold?.finish().await
    }
}

/// A fold running in a blocking task, fed batches of steps.
pub(super) struct Folding {
    batch: Vec<Step>,
    sender: mpsc::Sender<Vec<Step>>,
    task: tokio::task::JoinHandle<Box<dyn JsonFold>>,
}

impl Folding {
    fn start(mut fold: Box<dyn JsonFold>) -> Self {
        let (sender, mut batches) = mpsc::channel::<Vec<Step>>(QUEUED);
        let task = tokio::task::spawn_blocking(move || {
            while let Some(batch) = batches.blocking_recv() {
                for step in batch {
                    match step {
                        Step::Event(event) => fold.apply(event),
                        Step::Edit(patch) => {
                            fold.edit(&patch);
                        }
                    }
                }
            }
            fold
        });
        Self {
            batch: Vec::with_capacity(BATCH),
            sender,
            task,
        }
    }

    async fn push(&mut self, step: Step) {
        self.batch.push(step);
        if self.batch.len() >= BATCH {
            self.flush().await;
        }
    }

    async fn flush(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        // A task that ended (it panicked) is seen by `finish`.
        let _ = self.sender.send(batch).await;
    }

    async fn finish(mut self) -> Option<Box<dyn JsonFold>> {
        self.flush().await;
        drop(self.sender);
        self.task.await.ok()
    }
}
