//! The property check: random operation sequences against a reference model, shrunk to the
//! shortest failing one.

use std::collections::{HashMap, HashSet};

use openharness_core::{Envelope, EventId, SessionId, SessionInfo, Store, StoreError};
use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::json;

use super::helpers::*;

/// How many random sequences [`arbitrary_operations_match_model`] checks on each run, unless
/// the `PROPTEST_CASES` environment variable says otherwise. Modest, since on a durable backend
/// every append is a commit; property tests of a fast backend can run more with
/// [`check_arbitrary_sequences`].
pub const MODEL_CASES: u32 = 24;

/// Random sequences of [`Op`]s (proptest, [`MODEL_CASES`] cases or `PROPTEST_CASES`) behave as
/// the reference model says (see [`check_against_model`]); a failing sequence is shrunk to a
/// shortest one before the check panics with it and the seed that reproduces it.
pub async fn arbitrary_operations_match_model<S: Store>(store: S) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(MODEL_CASES);
    if let Err(failure) = check_arbitrary_sequences(&store, cases).await {
        panic!("{}: {failure}", store.describe());
    }
}

/// Runs `cases` random sequences from [`arbitrary_ops`] through [`check_against_model`] on
/// `store`, each on fresh session ids. The first divergence is shrunk (proptest's
/// simplify/complicate search) and returned with the shortest failing sequence found and the
/// `PROPTEST_RNG_SEED` that generates the same cases again. Other `PROPTEST_*` settings, such
/// as `PROPTEST_MAX_SHRINK_ITERS`, apply as in any proptest.
///
/// ```
/// use openharness_store::{MemoryStore, conformance};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// conformance::check_arbitrary_sequences(&store, 8).await.expect("the store obeys the model");
/// # });
/// ```
pub async fn check_arbitrary_sequences<S: Store>(store: &S, cases: u32) -> Result<(), String> {
    let mut config = Config {
        cases,
        ..Config::default()
    };
    let seed = match config.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => random_seed(),
    };
    config.rng_seed = RngSeed::Fixed(seed);
    let max_shrink_iters = config.max_shrink_iters();
    let mut runner = TestRunner::new(config);
    let strategy = arbitrary_ops();
    for case in 1..=cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .map_err(|reason| format!("cannot generate a sequence: {reason}"))?;
        let Err(mismatch) = check_against_model(store, &tree.current()).await else {
            continue;
        };
        let mut smallest = (tree.current(), mismatch);
        let mut iterations = 0;
        if tree.simplify() {
            while iterations < max_shrink_iters {
                iterations += 1;
                let ops = tree.current();
                match check_against_model(store, &ops).await {
                    Err(mismatch) => {
                        smallest = (ops, mismatch);
                        if !tree.simplify() {
                            break;
                        }
                    }
                    Ok(()) => {
                        if !tree.complicate() {
                            break;
                        }
                    }
                }
            }
        }
        let (ops, mismatch) = smallest;
        return Err(format!(
            "random sequence {case} of {cases} diverged from the model \
             (PROPTEST_RNG_SEED={seed} generates it again; shrunk in {iterations} steps to \
             {} ops): {mismatch}\nops: {ops:#?}",
            ops.len()
        ));
    }
    Ok(())
}

/// A seed for a run that was given none.
pub(super) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// A proptest strategy for one [`Op`]: mostly appends (some at a wrong seq, some reusing a
/// stored id, some starting a workflow), then reads, retries, clears and listings.
///
/// ```
/// use openharness_store::conformance::arbitrary_op;
/// use proptest::strategy::{Strategy, ValueTree};
///
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let op = arbitrary_op().new_tree(&mut runner).expect("an op").current();
/// println!("{op:?}");
/// ```
pub fn arbitrary_op() -> impl Strategy<Value = Op> {
    let session = 0..MODEL_SESSIONS;
    proptest::prop_oneof![
        5 => (
            session.clone(),
            0u8..4,
            proptest::prop_oneof![8 => Just(0i8), 1 => Just(-1i8), 1 => Just(1i8)],
            proptest::option::weighted(0.15, proptest::arbitrary::any::<u8>()),
            proptest::option::weighted(0.2, 0u8..3),
        )
            .prop_map(|(session, events, skew, reuse, workflow)| Op::Append {
                session,
                events,
                skew,
                reuse,
                workflow,
            }),
        1 => session.clone().prop_map(|session| Op::Retry { session }),
        2 => (session.clone(), 0u8..12, 0u8..14)
            .prop_map(|(session, start, end)| Op::Read { session, start, end }),
        1 => session.prop_map(|session| Op::Clear { session }),
        1 => Just(Op::List),
    ]
}

/// A proptest strategy for sequences of 1 to 29 [`Op`]s (see [`arbitrary_op`]), as
/// [`arbitrary_operations_match_model`] draws them.
pub fn arbitrary_ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(arbitrary_op(), 1..30)
}

// ---------------------------------------------------------------------------------------------
// The reference model

/// One step of a model-checked sequence. Sessions are numbered 0 to 2 (higher numbers wrap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Appends `events` new events (0 to 3) at the session's length plus `skew` (so a non-zero
    /// skew should conflict). With `reuse`, the last event reuses the id of the stored event
    /// at that index (modulo the length), which must be rejected. With `workflow`, the first
    /// event is a `workflow:started` naming it.
    Append {
        /// Which session.
        session: u8,
        /// How many new events.
        events: u8,
        /// Offset of `expected_seq` from the length.
        skew: i8,
        /// Reuse a stored id for the last event.
        reuse: Option<u8>,
        /// Start the batch with `workflow:started` for this workflow number.
        workflow: Option<u8>,
    },
    /// Appends the session's last accepted batch again at the seq it was written at: a retry.
    Retry {
        /// Which session.
        session: u8,
    },
    /// Reads seqs `start..end`.
    Read {
        /// Which session.
        session: u8,
        /// Start of the range.
        start: u8,
        /// End of the range.
        end: u8,
    },
    /// Clears the session.
    Clear {
        /// Which session.
        session: u8,
    },
    /// Lists the sessions.
    List,
}

/// The number of sessions [`Op`]s address.
pub(super) const MODEL_SESSIONS: u8 = 3;

/// The outcome the model predicts for an append.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The batch is written; the session's new length.
    Written(u64),
    /// Nothing is written (an empty batch, or a retry); the length returned.
    Unchanged(u64),
    /// A conflict carrying the session's length.
    Conflict(u64),
    /// An invalid batch.
    Invalid,
}

/// The model's view of one session.
#[derive(Debug, Default)]
pub(super) struct ModelSession {
    events: Vec<Envelope>,
    /// The last batch the store wrote and the seq it was written at.
    last_batch: Option<(u64, Vec<Envelope>)>,
}

impl ModelSession {
    /// What the contract says appending `batch` at `expected` does, written independently of
    /// the backends' shared logic.
    fn predict(&self, batch: &[Envelope], expected: u64) -> Outcome {
        let len = self.events.len() as u64;
        if batch.is_empty() {
            return Outcome::Unchanged(len);
        }
        let unique: HashSet<EventId> = batch.iter().map(|e| e.id).collect();
        if unique.len() != batch.len() {
            return Outcome::Invalid;
        }
        let position = |id: EventId| self.events.iter().position(|e| e.id == id);
        if batch.iter().any(|e| position(e.id).is_some()) {
            let retry = batch
                .iter()
                .zip(expected..)
                .all(|(e, seq)| position(e.id).map(|p| p as u64) == Some(seq));
            return if retry {
                Outcome::Unchanged(expected + batch.len() as u64)
            } else {
                Outcome::Invalid
            };
        }
        if expected == len {
            Outcome::Written(len + batch.len() as u64)
        } else {
            Outcome::Conflict(len)
        }
    }

    /// Applies `batch` appended at `expected`, returning the predicted outcome.
    fn append(&mut self, batch: Vec<Envelope>, expected: u64) -> Outcome {
        let outcome = self.predict(&batch, expected);
        if let Outcome::Written(_) = outcome {
            self.last_batch = Some((expected, batch.clone()));
            self.events.extend(batch);
        }
        outcome
    }
}

/// Runs `ops` against `store` and against a plain in-memory model of the contract, comparing
/// every result, and after every step each session's events and metadata. Returns the first
/// divergence.
///
/// Uses fresh session ids, so it can share a store with other checks; only those sessions are
/// compared in listings.
pub async fn check_against_model<S: Store>(store: &S, ops: &[Op]) -> Result<(), String> {
    let ids: Vec<SessionId> = (0..MODEL_SESSIONS).map(|_| SessionId::new()).collect();
    let mut model: HashMap<u8, ModelSession> = HashMap::new();
    for (step, op) in ops.iter().enumerate() {
        let at = |what: String| format!("step {step} ({op:?}): {what}");
        match op {
            Op::Append {
                session,
                events,
                skew,
                reuse,
                workflow,
            } => {
                let index = session % MODEL_SESSIONS;
                let id = &ids[usize::from(index)];
                let state = model.entry(index).or_default();
                let mut batch: Vec<Envelope> = (0..u64::from(*events))
                    .map(|n| event("test:appended", n))
                    .collect();
                if let (Some(workflow), Some(first)) = (workflow, batch.first_mut()) {
                    first.name = "workflow:started".into();
                    first.payload = json!({ "workflow": format!("workflow-{workflow}") });
                }
                if let (Some(reuse), Some(last)) = (reuse, batch.last_mut())
                    && !state.events.is_empty()
                {
                    last.id = state.events[usize::from(*reuse) % state.events.len()].id;
                }
                let expected = (state.events.len() as u64).saturating_add_signed(i64::from(*skew));
                let predicted = state.append(batch.clone(), expected);
                let result = store.append(id, &batch, expected).await;
                compare_append(&predicted, result, id, expected).map_err(at)?;
            }
            Op::Retry { session } => {
                let index = session % MODEL_SESSIONS;
                let id = &ids[usize::from(index)];
                let state = model.entry(index).or_default();
                let Some((seq, batch)) = state.last_batch.clone() else {
                    continue;
                };
                // After a clear, a retry at seq 0 is a fresh append.
                let predicted = state.append(batch.clone(), seq);
                let result = store.append(id, &batch, seq).await;
                compare_append(&predicted, result, id, seq).map_err(at)?;
            }
            Op::Read {
                session,
                start,
                end,
            } => {
                let index = session % MODEL_SESSIONS;
                let events = model
                    .get(&index)
                    .map(|s| s.events.as_slice())
                    .unwrap_or_default();
                let from = usize::from(*start).min(events.len());
                let to = usize::from(*end).min(events.len()).max(from);
                let expected = &events[from..to];
                let got = store
                    .events(&ids[usize::from(index)], *start as u64..*end as u64)
                    .await
                    .map_err(|err| at(format!("read failed: {err}")))?;
                if got != expected {
                    return Err(at(format!(
                        "read {} events, the model has {}",
                        got.len(),
                        expected.len()
                    )));
                }
            }
            Op::Clear { session } => {
                let index = session % MODEL_SESSIONS;
                store
                    .clear(&ids[usize::from(index)])
                    .await
                    .map_err(|err| at(format!("clear failed: {err}")))?;
                if let Some(state) = model.get_mut(&index) {
                    state.events.clear();
                }
            }
            Op::List => {
                let mut expected: Vec<SessionInfo> = model
                    .iter()
                    .filter_map(|(index, s)| {
                        SessionInfo::from_first_events(ids[usize::from(*index)].clone(), &s.events)
                    })
                    .collect();
                expected.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
                let ours: HashSet<&SessionId> = ids.iter().collect();
                let got: Vec<SessionInfo> = store
                    .sessions()
                    .await
                    .map_err(|err| at(format!("listing failed: {err}")))?
                    .into_iter()
                    .filter(|info| ours.contains(&info.id))
                    .collect();
                if got != expected {
                    return Err(at(format!("listed {got:#?}, the model has {expected:#?}")));
                }
            }
        }
        for (index, id) in ids.iter().enumerate() {
            let events = model
                .get(&(index as u8))
                .map(|s| s.events.as_slice())
                .unwrap_or_default();
            let stored = store
                .all_events(id)
                .await
                .map_err(|err| at(format!("reading session {index} failed: {err}")))?;
            if stored != events {
                return Err(at(format!(
                    "session {index} holds {} events, the model {}",
                    stored.len(),
                    events.len()
                )));
            }
            let meta = store
                .session(id)
                .await
                .map_err(|err| at(format!("reading session {index}'s metadata failed: {err}")))?;
            let expected = SessionInfo::from_first_events(id.clone(), events);
            if meta != expected {
                return Err(at(format!(
                    "session {index}'s metadata is {meta:?}, the model's {expected:?}"
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn compare_append(
    predicted: &Outcome,
    result: Result<u64, StoreError>,
    session: &SessionId,
    expected: u64,
) -> Result<(), String> {
    let matches = match (predicted, &result) {
        (Outcome::Written(len) | Outcome::Unchanged(len), Ok(got)) => len == got,
        (
            Outcome::Conflict(actual),
            Err(StoreError::Conflict {
                session: s,
                expected: e,
                actual: a,
            }),
        ) => s == session && *e == expected && a == actual,
        (Outcome::Invalid, Err(StoreError::Invalid(_))) => true,
        _ => false,
    };
    if matches {
        Ok(())
    } else {
        Err(format!(
            "append at {expected} returned {result:?}, the model predicts {predicted:?}"
        ))
    }
}
