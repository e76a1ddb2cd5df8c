//! The renderers' workers: each renderer sees the recorded events in order on a task of its
//! own, so a slow renderer never holds up the loop.

use super::*;

/// Renderers, each on a thread of its own behind a channel.
pub(super) struct RendererPool {
    pub(super) workers: Vec<RendererWorker>,
}

pub(super) struct RendererWorker {
    pub(super) patterns: Vec<Pattern>,
    pub(super) tx: std::sync::mpsc::Sender<Arc<Envelope>>,
    pub(super) done: oneshot::Receiver<()>,
}

impl RendererPool {
    pub(super) fn start(renderers: Vec<Box<dyn Renderer>>) -> Self {
        let mut workers = Vec::with_capacity(renderers.len());
        for (index, mut renderer) in renderers.into_iter().enumerate() {
            let patterns = renderer.patterns();
            let (tx, rx) = std::sync::mpsc::channel::<Arc<Envelope>>();
            let (done_tx, done) = oneshot::channel();
            let spawned = std::thread::Builder::new().name(format!("openharness-renderer-{index}")).spawn(move || {
                let mut warned = false;
                for event in rx {
                    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| renderer.render(&event)))
                        && !std::mem::replace(&mut warned, true)
                    {
                        tracing::error!(renderer = index, event = %event.name, panic = %panic_message(panic.as_ref()), "a renderer panicked; it keeps receiving events");
                    }
                }
                let _ = catch_unwind(AssertUnwindSafe(|| renderer.finish()));
                let _ = done_tx.send(());
            });
            match spawned {
                Ok(_) => workers.push(RendererWorker { patterns, tx, done }),
                Err(err) => {
                    tracing::error!(renderer = index, error = %err, "could not start a renderer thread; it will see no events")
                }
            }
        }
        Self { workers }
    }

    pub(super) fn send(&self, event: &Envelope) {
        let mut shared: Option<Arc<Envelope>> = None;
        for worker in &self.workers {
            if worker.patterns.iter().any(|p| p.matches(&event.name)) {
                let event = shared.get_or_insert_with(|| Arc::new(event.clone()));
                let _ = worker.tx.send(Arc::clone(event));
            }
        }
    }

    /// Closes the channels and waits (boundedly) for every renderer to finish.
    pub(super) async fn finish(&mut self) {
        let limit = Instant::now() + RENDERER_DRAIN_LIMIT;
        for worker in self.workers.drain(..) {
            let RendererWorker { tx, done, .. } = worker;
            drop(tx);
            if tokio::time::timeout_at(limit, done).await.is_err() {
                tracing::warn!(
                    "a renderer did not finish within {RENDERER_DRAIN_LIMIT:?}; not waiting for it"
                );
            }
        }
    }
}
