//! [`Host::bisect`]: where two runs first part and why — two sessions, or a session and its
//! re-execution through today's code (no model called). It names the first position where
//! their events or their states part, what produced the event there (an agent, the handler of
//! an event, an input), the chain of causes from the earliest event that may be to blame back
//! to the input (`causedBy`), and the state just after, field by field on both sides.
//!
//! Events are compared as [`Host::compare`] and [`Host::replay`] compare them. States are seen
//! through the hashes the live runs recorded (`stateHash`): two sessions' states are compared
//! wherever both are known — a side's state is known where it recorded a hash, and wherever
//! today's handlers fold it to every hash it recorded up to there — so two sessions recorded
//! by different code with the same events part where one's state first hashes otherwise. What
//! a side's state *was* is known when today's handlers reproduce it, or a snapshot of its live
//! run is stored there; otherwise only its hash is, and the bisection lists what today's
//! handlers changed since the last state both sides agreed on, field by field, instead.

mod fields;
mod origin;

use openharness_core::adapter::AgentSpec;
use openharness_core::adapter::json_hash;
use openharness_core::{Envelope, SessionId, StateDivergence};
use serde::Serialize;
use serde_json::Value;

pub use fields::FieldChange;
pub use origin::Producer;

use crate::Host;
use crate::causes::{Cause, causes};
use crate::compare::{Lineage, same_event};
use crate::error::HostError;
use crate::json_fold::JsonFold;
use crate::replay::{FirstDivergence, ReplayDivergence};

/// How many handler runs since the last state both sides agree on a bisection lists.
const MAX_HANDLER_RUNS: usize = 64;

/// Two runs compared up to where they first part ([`Host::bisect`]).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Bisection {
    /// The first run: a recorded session.
    pub a: SessionId,
    /// The second run: another session, or `None` for `a` re-executed through today's code.
    pub b: Option<SessionId>,
    /// Where they first part (`None`: every event and every state compared agree).
    pub parting: Option<Parting>,
    /// How many recorded state hashes were compared before that (0: the recordings have no
    /// state hashes, so only their events were compared).
    pub states_compared: u64,
}

/// What parts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    /// The events: another event at the same seq, or one run ends first.
    Events,
    /// The states, while the events agree: a handler folded the same events another way.
    State,
}

/// Where two runs first part, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Parting {
    /// What parts.
    pub kind: PartKind,
    /// The seq (counted from the lineage's root) of the event that differs, or after which
    /// the states differ; the position is `seq + 1`.
    pub seq: u64,
    /// The first run's event there (`None`: it had ended).
    pub a: Option<EventAt>,
    /// The second run's event there (`None`: it had ended). For a state, both runs have the
    /// same event there.
    pub b: Option<EventAt>,
    /// When the two events have one name: their payloads' fields that differ, a → b.
    pub payload: Vec<FieldChange>,
    /// For a state: each side's recorded state hash there (a re-execution's is today's).
    pub hashes: Option<[String; 2]>,
    /// For a state: the last seq after which both states are known to agree (`None`: none
    /// before, so the starting state is a suspect too).
    pub agreed_after: Option<u64>,
    /// For a state: the events folded since then whose handlers change the state today, each
    /// with what they change (at most 64).
    pub handlers: Vec<HandlerRun>,
    /// What produced the event where they part, or, for a state, whose handler changed it
    /// first (the first of [`Parting::handlers`]).
    pub produced_by: Producer,
    /// The chain of causes from that event back to an input (or to the first event nothing
    /// recorded caused): each with its seq, name and agent.
    pub causes: Vec<Cause>,
    /// The state just after that event, field by field, a → b; `None` when a side's state is
    /// known only by its hash there ([`Parting::state_unknown`] says why).
    pub state: Option<Vec<FieldChange>>,
    /// Why [`Parting::state`] is not known.
    pub state_unknown: Option<String>,
}

/// An event where two runs part.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventAt {
    /// Its seq (counted from the lineage's root).
    pub seq: u64,
    /// Its name.
    pub name: String,
    /// Its payload.
    pub payload: Value,
    /// The seq of the event that caused it, when it is in the log.
    pub caused_by: Option<u64>,
}

/// One event whose handler changed the state, and what it changed.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HandlerRun {
    /// The event's seq.
    pub seq: u64,
    /// Its name.
    pub event: String,
    /// The fields its handler changes today, before → after.
    pub changes: Vec<FieldChange>,
}

impl EventAt {
    fn of(events: &[Envelope], seq: u64) -> Option<Self> {
        let event = events.get(usize::try_from(seq).ok()?)?;
        Some(Self {
            seq,
            name: event.name.to_string(),
            payload: event.payload.clone(),
            caused_by: event
                .caused_by
                .and_then(|cause| events.iter().position(|e| e.id == cause))
                .map(|at| at as u64),
        })
    }
}

impl Host {
    /// Where `a` and `b` first part — or, without `b`, where `a` and its re-execution through
    /// today's code do (as [`Host::replay`] re-executes it) — with what produced the event
    /// there, its chain of causes and the state just after, field by field.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, a: openharness_core::SessionId, b: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// if let Some(parting) = host.bisect(&a, Some(&b)).await?.parting {
    ///     println!("they part at seq {} ({:?}), produced by {}", parting.seq, parting.kind, parting.produced_by);
    ///     for change in parting.state.iter().flatten() {
    ///         println!("  {change}");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn bisect(
        &self,
        a: &SessionId,
        b: Option<&SessionId>,
    ) -> Result<Bisection, HostError> {
        match b {
            None => self.bisect_replay(a).await,
            Some(b) => self.bisect_sessions(a, b).await,
        }
    }

    /// A session against its re-execution.
    async fn bisect_replay(&self, session: &SessionId) -> Result<Bisection, HostError> {
        let replayed = self.replay(session).await?;
        let agents = self.workflow_of(session).await?.agents();
        let events: Vec<Envelope> = self
            .events(session, None, usize::MAX)
            .await?
            .events
            .into_iter()
            .map(|r| r.event)
            .collect();
        let parting = match replayed.first_divergence() {
            None => None,
            Some(FirstDivergence::Events(parted)) => Some(
                self.replayed_events_part(session, &events, parted, &agents)
                    .await?,
            ),
            Some(FirstDivergence::State(parted)) => {
                Some(self.replayed_state_part(session, &events, parted).await?)
            }
        };
        Ok(Bisection {
            a: session.clone(),
            b: None,
            parting,
            states_compared: replayed.state_hashes_checked,
        })
    }

    /// Where a re-execution records another event than its recording.
    async fn replayed_events_part(
        &self,
        session: &SessionId,
        events: &[Envelope],
        parted: &ReplayDivergence,
        agents: &[AgentSpec],
    ) -> Result<Parting, HostError> {
        let at = |shape: &Option<openharness_tape::EventShape>| {
            shape.as_ref().map(|e| EventAt {
                seq: parted.seq,
                name: e.name.clone(),
                payload: e.payload.clone(),
                caused_by: e.caused_by,
            })
        };
        let (a, b) = (at(&parted.recorded), at(&parted.today));
        // Where the recording had ended, today's event is put down to its cause in it.
        let mut log = events.to_vec();
        if let (None, Some(today)) = (&a, &b) {
            let cause = today
                .caused_by
                .and_then(|seq| events.get(usize::try_from(seq).ok()?))
                .map(|e| e.id);
            log.truncate(usize::try_from(parted.seq).unwrap_or(usize::MAX));
            log.push(Envelope::new(
                today.name.clone(),
                today.payload.clone(),
                cause,
            ));
        }
        let at = usize::try_from(parted.seq).unwrap_or(usize::MAX);
        let recorded = self.state_at(session, parted.seq + 1).await?;
        let today = parted.state_patch.as_ref().and_then(|patch| {
            let mut today = recorded.clone();
            json_patch::patch(&mut today, patch).ok()?;
            Some(today)
        });
        Ok(Parting {
            kind: PartKind::Events,
            seq: parted.seq,
            payload: payload_changes(a.as_ref(), b.as_ref()),
            a,
            b,
            hashes: None,
            agreed_after: None,
            handlers: Vec::new(),
            produced_by: origin::producer(&log, at, agents),
            causes: causes(&log, parted.seq),
            state_unknown: today
                .is_none()
                .then(|| "today's run has no state there".to_owned()),
            state: today.map(|today| FieldChange::between(&recorded, &today)),
        })
    }

    /// Where today's handlers fold a recording to another state than it recorded.
    async fn replayed_state_part(
        &self,
        session: &SessionId,
        events: &[Envelope],
        parted: &StateDivergence,
    ) -> Result<Parting, HostError> {
        let handlers = self.handler_runs(session, parted).await?;
        let first = handlers
            .first()
            .map(|run| run.seq)
            .or_else(|| parted.changed_by.first().map(|c| c.seq))
            .unwrap_or(parted.seq);
        // The state check stops at the first hash that differs: every hash before it matched.
        let agreed_after = events
            .iter()
            .take(usize::try_from(parted.seq).unwrap_or(usize::MAX))
            .rposition(|e| e.state_hash.is_some())
            .map(|seq| seq as u64);
        let event = EventAt::of(events, parted.seq);
        Ok(Parting {
            kind: PartKind::State,
            seq: parted.seq,
            a: event.clone(),
            b: event,
            payload: Vec::new(),
            hashes: Some([parted.recorded_hash.clone(), parted.today_hash.clone()]),
            agreed_after,
            produced_by: handler_of(events, first),
            causes: causes(events, first),
            handlers,
            state: parted
                .recorded
                .as_ref()
                .map(|recorded| FieldChange::between(recorded, &parted.today)),
            state_unknown: parted.recorded.is_none().then(|| {
                "the recorded state there is known only by its hash (no snapshot of the live run's state is stored there)".to_owned()
            }),
        })
    }

    /// The events of `parted.changed_by` whose handlers change the state today, with what
    /// they change (at most [`MAX_HANDLER_RUNS`]).
    async fn handler_runs(
        &self,
        session: &SessionId,
        parted: &StateDivergence,
    ) -> Result<Vec<HandlerRun>, HostError> {
        let ran: Vec<_> = parted.changed_by.iter().take(MAX_HANDLER_RUNS).collect();
        let positions: Vec<u64> = ran.iter().flat_map(|c| [c.seq, c.seq + 1]).collect();
        let states = self.states_at(session, &positions).await?;
        Ok(ran
            .iter()
            .zip(states.chunks(2))
            .filter_map(|(changed, pair)| match pair {
                [before, after] => Some(HandlerRun {
                    seq: changed.seq,
                    event: changed.event.clone(),
                    changes: FieldChange::between(&before.state, &after.state),
                }),
                _ => None,
            })
            .filter(|run| !run.changes.is_empty())
            .collect())
    }

    /// Two sessions.
    async fn bisect_sessions(&self, a: &SessionId, b: &SessionId) -> Result<Bisection, HostError> {
        let (left, right) = (self.read_lineage(a).await?, self.read_lineage(b).await?);
        let shorter = left.events.len().min(right.events.len());
        let events_part = (0..shorter)
            .find(|&seq| !same_run(&left.events[seq], &right.events[seq]))
            .or_else(|| (left.events.len() != right.events.len()).then_some(shorter));
        let agree = events_part.unwrap_or(shorter) as u64;
        let fold = self.lineage_fold(a, &left).await?;
        let states = states_part(&left, &right, agree, fold);
        let parting = match (states.parted, events_part) {
            (Some(parted), _) => Some(self.sessions_state_part(a, &left, &right, parted).await?),
            (None, None) => None,
            (None, Some(_)) => Some(
                self.sessions_events_part(a, b, &left, &right, agree)
                    .await?,
            ),
        };
        Ok(Bisection {
            a: a.clone(),
            b: Some(b.clone()),
            parting,
            states_compared: states.compared,
        })
    }

    /// Where two sessions record different events (or one ends first), at lineage seq `seq`.
    async fn sessions_events_part(
        &self,
        a: &SessionId,
        b: &SessionId,
        left: &Lineage,
        right: &Lineage,
        seq: u64,
    ) -> Result<Parting, HostError> {
        let agents = match self.workflow_of(a).await {
            Ok(hosted) => hosted.agents(),
            Err(_) => Vec::new(),
        };
        let (a_at, b_at) = (
            EventAt::of(&left.events, seq),
            EventAt::of(&right.events, seq),
        );
        // The chain of a's event, unless b's has a cause there and a's has none (or a ended).
        let caused = |at: &Option<EventAt>| at.as_ref().is_some_and(|e| e.caused_by.is_some());
        let side = if a_at.is_some() && (caused(&a_at) || !caused(&b_at)) {
            left
        } else {
            right
        };
        let at = usize::try_from(seq).unwrap_or(usize::MAX);
        // Each side's state just after it (at its end, when it had ended), as today's handlers
        // fold it.
        let mut states = [None, None];
        for (state, (session, lineage)) in states.iter_mut().zip([(a, left), (b, right)]) {
            if let Some(fold) = self.lineage_fold(session, lineage).await? {
                *state = window(fold, lineage, Some(seq), seq).1;
            }
        }
        let [a_state, b_state] = states;
        let state = match (&a_state, &b_state) {
            (Some(x), Some(y)) => Some(FieldChange::between(x, y)),
            _ => None,
        };
        Ok(Parting {
            kind: PartKind::Events,
            seq,
            payload: payload_changes(a_at.as_ref(), b_at.as_ref()),
            a: a_at,
            b: b_at,
            hashes: None,
            agreed_after: None,
            handlers: Vec::new(),
            produced_by: origin::producer(&side.events, at, &agents),
            causes: causes(&side.events, seq),
            state_unknown: state.is_none().then(|| {
                "the states are not compared: a workflow is not registered here".to_owned()
            }),
            state,
        })
    }

    /// Today's fold of `lineage` from its root's first state, when `session`'s workflow is
    /// registered here.
    async fn lineage_fold(
        &self,
        session: &SessionId,
        lineage: &Lineage,
    ) -> Result<Option<Box<dyn JsonFold>>, HostError> {
        let Ok(hosted) = self.workflow_of(session).await else {
            return Ok(None);
        };
        let root = lineage.place(0).map(|place| place.session);
        let start = match root {
            Some(root) => self.state_at(&root, 0).await?,
            None => hosted.initial_state()?,
        };
        Ok(hosted.fold_from(start))
    }

    /// Where two sessions' states part while their events agree: today's handlers over the
    /// events since the last state both agree on, and each side's state there when known.
    async fn sessions_state_part(
        &self,
        a: &SessionId,
        left: &Lineage,
        right: &Lineage,
        parted: StatesParted,
    ) -> Result<Parting, HostError> {
        let (handlers, today) = match self.lineage_fold(a, left).await? {
            Some(fold) => window(fold, left, parted.agreed_after, parted.seq),
            None => (Vec::new(), None),
        };
        let first = handlers
            .first()
            .map(|run| run.seq)
            .unwrap_or(parted.agreed_after.map_or(0, |seq| seq + 1));
        let mut states = [None, None];
        for (state, (lineage, hash)) in states
            .iter_mut()
            .zip([(left, &parted.hashes[0]), (right, &parted.hashes[1])])
        {
            *state = match &today {
                Some(today) if &json_hash(today) == hash => Some(today.clone()),
                _ => self.snapshot_of(lineage, parted.seq, hash).await,
            };
        }
        let unknown: Vec<&str> = states
            .iter()
            .zip(["a", "b"])
            .filter(|(state, _)| state.is_none())
            .map(|(_, side)| side)
            .collect();
        let event = EventAt::of(&left.events, parted.seq);
        let [a_state, b_state] = states;
        Ok(Parting {
            kind: PartKind::State,
            seq: parted.seq,
            a: event.clone(),
            b: event,
            payload: Vec::new(),
            hashes: Some(parted.hashes),
            agreed_after: parted.agreed_after,
            produced_by: handler_of(&left.events, first),
            causes: causes(&left.events, first),
            handlers,
            state_unknown: (!unknown.is_empty()).then(|| {
                format!(
                    "{}'s state there is known only by its hash: today's handlers fold it otherwise, and no snapshot of its live run is stored there",
                    unknown.join(" and ")
                )
            }),
            state: match (a_state, b_state) {
                (Some(x), Some(y)) => Some(FieldChange::between(&x, &y)),
                _ => None,
            },
        })
    }

    /// A snapshot of the live run holding the state just after lineage seq `seq` (stored
    /// before the next event that recorded a hash), when that state hashes to `hash`.
    async fn snapshot_of(&self, lineage: &Lineage, seq: u64, hash: &str) -> Option<Value> {
        let place = lineage.place(seq)?;
        let next = lineage
            .events
            .iter()
            .enumerate()
            .skip(usize::try_from(seq + 1).ok()?)
            .find(|(_, e)| e.state_hash.is_some())
            .and_then(|(next, _)| lineage.place(next as u64));
        // The state holds until the next hashed event changes it.
        let until = match next {
            Some(next) if next.session == place.session => next.position - 1,
            _ => u64::MAX,
        };
        let snapshot = self
            .store
            .latest_snapshot(&place.session, until)
            .await
            .ok()??;
        (snapshot.position >= place.position && json_hash(&snapshot.state) == hash)
            .then_some(snapshot.state)
    }
}

/// Whether two runs recorded the same event there: as [`Host::compare`] compares them, but a
/// `workflow:started` only by its workflow's name — which code recorded each run is what a
/// bisection looks for the effects of, not a difference of its own.
fn same_run(a: &Envelope, b: &Envelope) -> bool {
    if a.name == b.name && a.name == "workflow:started" {
        return a.payload["workflow"] == b.payload["workflow"];
    }
    same_event(a, b)
}

/// The payloads' fields that differ, when both events have one name.
fn payload_changes(a: Option<&EventAt>, b: Option<&EventAt>) -> Vec<FieldChange> {
    match (a, b) {
        (Some(a), Some(b)) if a.name == b.name => FieldChange::between(&a.payload, &b.payload),
        _ => Vec::new(),
    }
}

/// The handler of the event at `seq`, which folded it into the state.
fn handler_of(events: &[Envelope], seq: u64) -> Producer {
    match usize::try_from(seq).ok().and_then(|at| events.get(at)) {
        Some(event) => Producer::EventHandler {
            event: event.name.to_string(),
            seq,
        },
        None => Producer::Unrecorded,
    }
}

/// Where a state parts in a replay: the first of the events since the last hash that matched
/// whose handler changes the state today (the first of them when none does), for the chain of
/// causes [`crate::Replayer`] reports.
pub(crate) async fn first_change(
    host: &Host,
    session: &SessionId,
    parted: &StateDivergence,
) -> Option<u64> {
    let runs = host.handler_runs(session, parted).await.ok()?;
    runs.first()
        .map(|run| run.seq)
        .or_else(|| parted.changed_by.first().map(|c| c.seq))
}

/// What comparing two lineages' states found.
struct StatesPass {
    /// How many positions both states were known at and compared.
    compared: u64,
    parted: Option<StatesParted>,
}

/// Where two lineages' states part: after which seq, each side's hash there, and the last
/// seq after which both were known to agree.
struct StatesParted {
    seq: u64,
    hashes: [String; 2],
    agreed_after: Option<u64>,
}

/// Compares the states of two lineages over the first `agree` events (which both have):
/// wherever either recorded a hash, each side's state is its recorded hash there, or today's
/// fold when that side's recorded hashes all match today's fold up to a later one; the first
/// position where both are known and differ is where they part.
fn states_part(
    left: &Lineage,
    right: &Lineage,
    agree: u64,
    fold: Option<Box<dyn JsonFold>>,
) -> StatesPass {
    let agree = usize::try_from(agree)
        .unwrap_or(usize::MAX)
        .min(left.events.len())
        .min(right.events.len());
    // Each position where either side recorded a hash, with today's hash there.
    let mut rows: Vec<HashRow> = Vec::new();
    let mut today = fold;
    let mut edits = left.edits.iter().peekable();
    for seq in 0..agree {
        if let Some(fold) = today.as_mut() {
            while let Some((_, patch)) = edits.next_if(|(at, _)| *at == seq as u64) {
                fold.edit(patch);
            }
            fold.apply(left.events[seq].clone());
        }
        let recorded = [
            left.events[seq].state_hash.clone(),
            right.events[seq].state_hash.clone(),
        ];
        if recorded.iter().all(Option::is_none) {
            continue;
        }
        let today = today
            .as_ref()
            .and_then(|fold| fold.state().ok())
            .map(|state| json_hash(&state));
        rows.push(HashRow {
            seq,
            recorded,
            today,
        });
    }
    // How far today's fold is each side's state: up to its last recorded hash before the
    // first that today's fold does not reproduce.
    let reproduced = |side: usize| {
        let mut last = None;
        for row in &rows {
            match (&row.recorded[side], &row.today) {
                (Some(recorded), Some(today)) if recorded == today => last = Some(row.seq),
                (Some(_), _) => break,
                (None, _) => {}
            }
        }
        last
    };
    let upto = [reproduced(0), reproduced(1)];
    let mut compared = 0;
    let mut agreed_after = None;
    for row in &rows {
        let known = |side: usize| {
            row.recorded[side].clone().or_else(|| {
                row.today
                    .clone()
                    .filter(|_| upto[side].is_some_and(|upto| upto >= row.seq))
            })
        };
        let (Some(x), Some(y)) = (known(0), known(1)) else {
            continue;
        };
        compared += 1;
        if x == y {
            agreed_after = Some(row.seq as u64);
            continue;
        }
        let parted = StatesParted {
            seq: row.seq as u64,
            hashes: [x, y],
            agreed_after,
        };
        return StatesPass {
            compared,
            parted: Some(parted),
        };
    }
    StatesPass {
        compared,
        parted: None,
    }
}

/// A position where either side recorded a state hash.
struct HashRow {
    seq: usize,
    /// Each side's recorded hash there.
    recorded: [Option<String>; 2],
    /// Today's fold's hash there (none without a fold).
    today: Option<String>,
}

/// Today's fold of `lineage` (from its start, `fold`) up to the event at `seq`: the events
/// after `agreed_after` whose handlers changed the state, with what they changed (at most
/// [`MAX_HANDLER_RUNS`]), and the state just after `seq` (at the lineage's end, when shorter).
fn window(
    mut fold: Box<dyn JsonFold>,
    lineage: &Lineage,
    agreed_after: Option<u64>,
    seq: u64,
) -> (Vec<HandlerRun>, Option<Value>) {
    let from = agreed_after.map_or(0, |seq| seq + 1);
    let mut edits = lineage.edits.iter().peekable();
    let mut runs = Vec::new();
    let mut before = None;
    for (at, event) in lineage.events.iter().enumerate() {
        let at = at as u64;
        if at > seq {
            break;
        }
        while let Some((_, patch)) = edits.next_if(|(edit, _)| *edit == at) {
            fold.edit(patch);
        }
        if at < from {
            fold.apply(event.clone());
            continue;
        }
        if before.is_none() {
            before = fold.state().ok();
        }
        fold.apply(event.clone());
        let after = fold.state().ok();
        if let (Some(x), Some(y)) = (&before, &after) {
            let changes = FieldChange::between(x, y);
            if !changes.is_empty() && runs.len() < MAX_HANDLER_RUNS {
                runs.push(HandlerRun {
                    seq: at,
                    event: event.name.to_string(),
                    changes,
                });
            }
        }
        before = after;
    }
    // A fork entered at the lineage's end still edits the state it ends with.
    while let Some((_, patch)) = edits.next_if(|(edit, _)| *edit <= seq) {
        fold.edit(patch);
    }
    (runs, fold.state().ok())
}
