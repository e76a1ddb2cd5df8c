//! A session's driver: the task that runs its turns one after another while this host holds
//! its claim, answering each request once its event is recorded, then the inputs still
//! queued, then the requests handed to it, and that gives the session up when none is left.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use openharness_core::adapter::{Claim, CommandRecorded, turn_control};
use openharness_core::{BoxedProvider, RunOptions, SessionId};
use tokio::sync::oneshot;

use super::{ForkStart, Job, TurnStart, claim};
use crate::error::HostError;
use crate::wire::TurnOutcome;
use crate::{Host, Hosted};

/// One turn the driver runs.
enum Work {
    /// A request someone waits on.
    Job(Box<Job>),
    /// Finishing a cut-off turn, or answering the oldest queued input: nobody asked.
    Resume,
    /// A fork's input (or its answer to a request open at the fork point), run once the fork
    /// is recorded, with the fork's model.
    ForkInput {
        start: TurnStart,
        provider: Option<BoxedProvider>,
        /// The fields its input event records: the fork's requester's (`via`, a protocol's
        /// echoed request), on the fork's last turn.
        fields: serde_json::Map<String, serde_json::Value>,
        /// Told how the turn ended: the fork's requester waits for its last turn.
        done: Option<oneshot::Sender<Result<TurnOutcome, HostError>>>,
    },
}

/// The request a fork's answer answers: the one it names, if open at the fork point, else the
/// only one open there.
pub(super) fn answered_request(
    parent: &SessionId,
    open: &[openharness_core::EventId],
    named: Option<openharness_core::EventId>,
) -> Result<openharness_core::EventId, HostError> {
    let not_open = |request: openharness_core::EventId| {
        HostError::Workflow(openharness_core::Error::RequestNotOpen {
            session: parent.clone(),
            request,
            open: open.to_vec(),
        })
    };
    match (named, open) {
        (Some(request), open) if open.contains(&request) => Ok(request),
        (Some(request), _) => Err(not_open(request)),
        (None, [only]) => Ok(*only),
        (None, []) => Err(HostError::NothingToAnswer {
            session: parent.clone(),
        }),
        (None, _) => Err(HostError::AmbiguousRequest {
            session: parent.clone(),
            open: open.to_vec(),
        }),
    }
}

/// How a turn ended, for everyone but its requester: its outcome, or its error as text.
type Ended = Result<TurnOutcome, String>;

/// The error of a turn that failed, as text.
fn turn_failure(ended: &Ended) -> String {
    match ended {
        Ok(_) => String::new(),
        Err(err) => err.clone(),
    }
}

/// How long a session whose log says its turn ended may stay claimed by another process (that
/// process letting go) before a request for it here is told it is busy.
const LETTING_GO: std::time::Duration = std::time::Duration::from_secs(2);

/// The pauses between asking again for such a claim: doubling from the first to the last.
const LETTING_GO_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);
const LETTING_GO_MAX_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// How many resumes in a row may leave the same inputs queued before the driver stops trying
/// (a turn that cannot answer them; recovery tries again later).
const MAX_IDLE_RESUMES: usize = 2;

impl Host {
    /// Claims `session` (registered in the registry already) and starts its driver with
    /// `job`. A session another process holds is [`HostError::busy`]; every request that
    /// arrived meanwhile is answered the same.
    pub(super) async fn drive(&self, session: &SessionId, job: Job) -> Result<(), HostError> {
        // The session is read while it is claimed (one round trip each, at once): whose it
        // is and whether a crash cut its last turn off.
        let fresh = matches!(job.start, TurnStart::New { .. } | TurnStart::Fork(_));
        let read = async {
            if fresh {
                (None, false)
            } else {
                self.owner_and_status(session).await
            }
        };
        let (mut claimed, read) = tokio::join!(claim(&self.store, session), read);
        // Held by another process while the log says its turn has ended: that process is
        // letting go (saving the turn's snapshot, releasing the claim). A client that sends
        // its next message the moment a stream ends, to another replica, is not told `busy`
        // for that: the claim is asked again, for a moment.
        if matches!(claimed, Ok(None)) && !fresh && !read.1 {
            let deadline = tokio::time::Instant::now() + LETTING_GO;
            let mut pause = LETTING_GO_FIRST_PAUSE;
            while matches!(claimed, Ok(None)) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LETTING_GO_MAX_PAUSE);
                claimed = claim(&self.store, session).await;
            }
        }
        let claimed = match claimed {
            Ok(Some(claim)) => claim,
            Ok(None) => {
                let why = "a turn runs on it in another process sharing the store";
                self.give_up(session, || HostError::busy(session, why));
                return Err(HostError::busy(session, why));
            }
            Err(err) => {
                let why = err.to_string();
                self.give_up(session, || HostError::TurnFailed(why.clone()));
                return Err(err);
            }
        };
        let host = self.clone();
        let session = session.clone();
        tokio::spawn(async move { host.run_driver(session, job, claimed, read).await });
        Ok(())
    }

    /// Removes `session` from the registry, answering whatever waits on it with `why()` (a
    /// request handed over while the claim was asked for hears what the first one heard).
    fn give_up(&self, session: &SessionId, why: impl Fn() -> HostError) {
        let Some(slot) = self.turns.slots().remove(session) else {
            return;
        };
        for job in slot.next {
            let _ = job.recorded.send(Err(why()));
        }
        for (_, waiter) in slot.waiters {
            let _ = waiter.send(Err(why()));
        }
    }

    /// Runs the session's turns until nothing is left, holding `claim`; `read` is what the
    /// session was read to be while it was claimed.
    async fn run_driver(
        self,
        session: SessionId,
        first: Job,
        claim: Claim,
        read: (Option<Arc<dyn Hosted>>, bool),
    ) {
        let _claim = claim;
        let mut work = VecDeque::new();
        // A session whose log says a turn is under way, while this host holds its claim, was
        // cut off by a crash: that turn is finished first. Read before the claim was granted,
        // a turn of another process may have ended since: read again now that it is ours.
        let (mut known, mut cut_off) = read;
        if cut_off {
            (known, cut_off) = self.owner_and_status(&session).await;
        }
        if cut_off && !matches!(first.start, TurnStart::Resume) {
            work.push_back(Work::Resume);
        }
        // A resume that finds a turn to finish is a turn like any other from here on; one
        // that finds nothing lets whatever came meanwhile run after it (see `Slot::probing`).
        if cut_off {
            self.probed(&session);
        }
        work.push_back(Work::Job(Box::new(first)));
        let mut idle_resumes = 0;
        loop {
            let Some(next) = work.pop_front().or_else(|| self.next_job(&session)) else {
                break;
            };
            let resuming = matches!(next, Work::Resume);
            let ended = self.run_work(&session, next, &mut work, known.take()).await;
            self.probed(&session);
            if let Ok(outcome) = &ended {
                self.turns.ended(outcome);
            }
            let queued = match &ended {
                Ok(outcome) => outcome.queued.len(),
                Err(_) => 0,
            };
            self.answer_waiters(&session, &ended);
            if let Some(slot) = self.turns.slots().get_mut(&session) {
                slot.draining = queued > 0;
            }
            if queued == 0 {
                idle_resumes = 0;
                continue;
            }
            // Inputs still queued: answered next, one turn each, before anything handed over.
            idle_resumes = if resuming { idle_resumes + 1 } else { 0 };
            if idle_resumes <= MAX_IDLE_RESUMES || !resuming {
                work.push_front(Work::Resume);
            } else {
                tracing::warn!(%session, queued, "resuming leaves inputs queued; leaving them to recovery");
            }
        }
    }

    /// The session's resume has found what it has to do (see `Slot::probing`).
    fn probed(&self, session: &SessionId) {
        if let Some(slot) = self.turns.slots().get_mut(session) {
            slot.probing = false;
        }
    }

    /// The next request handed to the driver, or `None` after giving the session up (both
    /// under the registry's lock, so a request either finds the driver or starts a new one).
    fn next_job(&self, session: &SessionId) -> Option<Work> {
        let mut slots = self.turns.slots();
        let slot = slots.get_mut(session)?;
        if let Some(job) = slot.next.pop_front() {
            return Some(Work::Job(Box::new(job)));
        }
        if let Some(slot) = slots.remove(session) {
            for (_, waiter) in slot.waiters {
                let _ = waiter.send(Err(HostError::TurnFailed(
                    "the session's turns ended with the input still queued; a resume answers it"
                        .to_owned(),
                )));
            }
        }
        None
    }

    /// The workflow that runs `session`'s turns (when it can be told), and whether its log
    /// says a turn is under way: one read of the session.
    async fn owner_and_status(&self, session: &SessionId) -> (Option<Arc<dyn Hosted>>, bool) {
        let info = match self.store.session(session).await {
            Ok(Some(info)) if info.count > 0 => info,
            Ok(_) => return (None, false),
            Err(err) => {
                tracing::warn!(%session, error = %err, "could not read the session's status; not resuming first");
                return (None, false);
            }
        };
        let running = info.status.is_running();
        let owner = match self.owner(&info).await {
            Ok(Some(name)) if self.runs_turns_of(&name) => self.workflows.get(&name).cloned(),
            _ => None,
        };
        (owner, running)
    }

    /// Tells the waiters of inputs that are no longer queued how the turn that answered them
    /// ended (all of them, when it failed).
    fn answer_waiters(&self, session: &SessionId, ended: &Ended) {
        let mut slots = self.turns.slots();
        let Some(slot) = slots.get_mut(session) else {
            return;
        };
        let answered: Vec<_> = slot
            .waiters
            .keys()
            .filter(|id| match ended {
                Ok(outcome) => !outcome.queued.iter().any(|queued| queued.id == **id),
                Err(_) => true,
            })
            .copied()
            .collect();
        for id in answered {
            if let Some(waiter) = slot.waiters.remove(&id) {
                let _ = waiter.send(match ended {
                    Ok(outcome) => Ok(outcome.clone()),
                    Err(err) => Err(HostError::TurnFailed(err.clone())),
                });
            }
        }
    }

    /// Runs one turn with a fresh control in the registry, answering its request.
    async fn run_work(
        &self,
        session: &SessionId,
        work: Work,
        follow_ups: &mut VecDeque<Work>,
        known: Option<Arc<dyn Hosted>>,
    ) -> Ended {
        let (start, options, recorded, done) = match work {
            Work::Job(job) => {
                let Job {
                    start,
                    options,
                    recorded,
                    done,
                } = *job;
                // Every turn runs with what the workflow's owner gives its turns (the
                // platform's agent), where the caller chose nothing else: a fork as its
                // parent's turns ran, an input through any surface (the native API, a chat
                // client, a protocol) as one through the owner's own.
                // (A caller that gives agent settings of its own, as the platform does for
                // its messages, knows them: the owner is asked only for a fork's.)
                let ask_owner = matches!(start, TurnStart::Fork(_)) || !options.sets_agents();
                let owned = if ask_owner {
                    self.owner_options(session, &start, known.as_deref()).await
                } else {
                    Ok(None)
                };
                let options = match owned {
                    Ok(Some(owned)) => options.agents_or(&owned),
                    Ok(None) => options,
                    Err(err) => {
                        tracing::warn!(%session, error = %openharness_core::adapter::ErrorChain(&err), "the turn runs without its owner's turn options");
                        options
                    }
                };
                (start, options, Some(recorded), Some(done))
            }
            Work::Resume => {
                let options = match self.own_turn_options(session).await {
                    Ok(options) => options,
                    Err(err) => return Err(openharness_core::adapter::ErrorChain(&err).to_string()),
                };
                (TurnStart::Resume, options, None, None)
            }
            Work::ForkInput {
                start,
                provider,
                fields,
                done,
            } => {
                let host = match provider {
                    Some(provider) => self.with_provider(provider),
                    None => self.clone(),
                };
                let options = match self.own_turn_options(session).await {
                    Ok(options) => options,
                    Err(err) => return Err(openharness_core::adapter::ErrorChain(&err).to_string()),
                };
                let options = if fields.is_empty() {
                    options
                } else {
                    options.input_fields(fields)
                };
                let inbox = self.enter_turn(session, options.cancellation().clone());
                let options = options.control(inbox);
                let sent = host.turn(session, start, options, None).await;
                let ended = sent
                    .as_ref()
                    .map(Clone::clone)
                    .map_err(|err| openharness_core::adapter::ErrorChain(err).to_string());
                if let Some(done) = done {
                    let _ = done.send(sent);
                }
                return ended;
            }
        };
        // After a fork: its answer, then its input, each a turn of its own; the last of them
        // records the requester's input fields.
        let after_fork = match &start {
            TurnStart::Fork(fork) => Some((
                fork.answer.clone(),
                fork.input.clone(),
                fork.provider.clone(),
                options.given_input_fields().clone(),
            )),
            _ => None,
        };
        let inbox = self.enter_turn(session, options.cancellation().clone());
        // Told from the turn's own thread once its first event is durable: readers learn
        // where it starts, its requester that it is recorded.
        let recorded = Arc::new(Mutex::new(recorded));
        let options = {
            let (host, session, recorded) = (self.clone(), session.clone(), Arc::clone(&recorded));
            options.control(inbox).on_acknowledged(move |first| {
                let recorded = recorded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                host.acknowledge(&session, first, recorded);
            })
        };
        let result = self.turn(session, start, options, known).await;
        let recorded = recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut done = done;
        if let (Some((answer, input, provider, fields)), Ok(forked)) = (after_fork, &result) {
            // The requester waits for the last of the fork's turns.
            let mut fields = Some(fields);
            if let Some(text) = input {
                follow_ups.push_front(Work::ForkInput {
                    start: TurnStart::Input(text),
                    provider: provider.clone(),
                    fields: fields.take().unwrap_or_default(),
                    done: done.take(),
                });
            }
            if let Some(answer) = answer {
                // Checked before the fork ran; the only open one when it names none.
                let request = answer.request.or(forked.open_requests.first().copied());
                if let Some(request) = request {
                    follow_ups.push_front(Work::ForkInput {
                        start: TurnStart::Answer {
                            request,
                            text: answer.text,
                        },
                        provider,
                        fields: fields.take().unwrap_or_default(),
                        done: done.take(),
                    });
                }
            }
        }
        let ended = match &result {
            Ok(outcome) => Ok(outcome.clone()),
            Err(err) => Err(openharness_core::adapter::ErrorChain(err).to_string()),
        };
        // The error itself goes to whoever hears first: the requester, if nothing was recorded.
        let result = match (recorded, result) {
            (Some(recorded), Err(err)) => {
                let _ = recorded.send(Err(err));
                Err(HostError::TurnFailed(turn_failure(&ended)))
            }
            (Some(recorded), ok) => {
                let _ = recorded.send(Ok(None));
                ok
            }
            (None, result) => result,
        };
        if let Some(done) = done {
            let _ = done.send(result);
        }
        ended
    }

    /// Registers the turn about to run: its control and its cancellation.
    /// Registers the turn about to run (its cancellation) and gives it the inbox its control
    /// sends to: the one made with the session's slot, for its first turn (holding what was
    /// sent before it started), else a new one.
    fn enter_turn(
        &self,
        session: &SessionId,
        cancel: openharness_core::CancellationToken,
    ) -> openharness_core::adapter::TurnInbox {
        let mut slots = self.turns.slots();
        let Some(slot) = slots.get_mut(session) else {
            return turn_control().1;
        };
        slot.cancel = cancel;
        slot.first_seq = None;
        match slot.inbox.take() {
            Some(inbox) => inbox,
            None => {
                let (control, inbox) = turn_control();
                slot.control = control;
                inbox
            }
        }
    }

    /// The turn's first event is recorded: readers learn where it starts, its requester that
    /// it is acknowledged.
    fn acknowledge(
        &self,
        session: &SessionId,
        first: CommandRecorded,
        recorded: Option<oneshot::Sender<Result<Option<CommandRecorded>, HostError>>>,
    ) {
        if let Some(slot) = self.turns.slots().get_mut(session) {
            slot.first_seq = Some(first.seq);
        }
        if let Some(recorded) = recorded {
            let _ = recorded.send(Ok(Some(first)));
        }
    }

    /// Runs `start` on `session` with the registered workflow it needs (`known`, when the
    /// driver has read it already).
    async fn turn(
        &self,
        session: &SessionId,
        start: TurnStart,
        options: RunOptions,
        known: Option<Arc<dyn Hosted>>,
    ) -> Result<TurnOutcome, HostError> {
        let owner = || async {
            match known {
                Some(hosted) => Ok(hosted),
                None => self.runnable_of(session).await.cloned(),
            }
        };
        match start {
            TurnStart::New { workflow, input } => {
                let hosted = self.runnable(&workflow)?;
                hosted.run(input, options.session(session.clone())).await
            }
            TurnStart::Input(text) => owner().await?.send(session, text, options).await,
            TurnStart::Answer { request, text } => {
                owner()
                    .await?
                    .respond(session, request, text, options)
                    .await
            }
            TurnStart::Resume => owner().await?.resume(session, options).await,
            TurnStart::Fork(fork) => self.fork_turn(session, *fork, options).await,
        }
    }

    /// A fork run on into `session`. Its answer, if it gives one, must answer a request
    /// open at the fork point: checked first, so a refused answer records nothing.
    async fn fork_turn(
        &self,
        session: &SessionId,
        fork: ForkStart,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let ForkStart {
            parent,
            at,
            state_edit,
            provider,
            answer,
            ..
        } = fork;
        let host = match provider {
            Some(provider) => self.with_provider(provider),
            None => self.clone(),
        };
        let hosted = host.runnable_of(&parent).await?;
        let options = options.session(session.clone());
        let prepared = hosted.prepare_fork(&parent, at).await?;
        if let Some(answer) = &answer {
            answered_request(&parent, prepared.open_requests(), answer.request)?;
        }
        match state_edit {
            None => prepared.run(options).await,
            Some(patch) => prepared.edit_state(&patch)?.run(options).await,
        }
    }
}
