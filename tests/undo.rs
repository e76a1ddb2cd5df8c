//! Handlers that record undos: a tape steps back over their events by reverting the change,
//! without copying the state, and lands on exactly the state a fresh fold reaches; handlers
//! without undos, and handlers that panic, still step back correctly the slower way.
#![allow(clippy::unwrap_used, missing_docs)]

use std::cell::Cell;
use std::collections::BTreeMap;

use openharness::WorkflowState;
use openharness::prelude::*;
use openharness::provider::ScriptedProvider;
use openharness::store::MemoryStore;
use openharness::tape::Tape;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

thread_local! {
    /// How many states this thread copied (the tape runs on the calling thread).
    static CLONES: Cell<usize> = const { Cell::new(0) };
}

/// A field whose copies are counted.
#[derive(Debug, Default)]
struct CloneCount;

impl Clone for CloneCount {
    fn clone(&self) -> Self {
        CLONES.with(|c| c.set(c.get() + 1));
        CloneCount
    }
}

fn clones() -> usize {
    CLONES.with(Cell::get)
}

#[event]
#[derive(Debug, Clone)]
pub struct ItemAdded {
    pub text: String,
}

#[event]
#[derive(Debug, Clone)]
pub struct ItemsCleared;

#[event]
#[derive(Debug, Clone)]
pub struct LedgerRenamed {
    pub name: String,
}

/// Panics when the ledger holds a multiple of five items (a bug in the user's handler).
#[event]
#[derive(Debug, Clone)]
pub struct LedgerChecked;

#[event]
#[derive(Debug, Clone)]
pub enum LedgerEvent {
    UserInput,
    ItemAdded,
    ItemsCleared,
    LedgerRenamed,
    LedgerChecked,
}

/// Plain collections, every handler recording its undo.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ledger {
    name: String,
    items: Vec<String>,
    counts: BTreeMap<String, usize>,
    checks: u32,
    #[serde(skip)]
    _copies: CloneCount,
}

#[handler(LedgerEvent)]
impl Ledger {
    fn input(&mut self, _: &UserInput, _undo: &mut Undo<Self>) {}

    fn added(&mut self, event: &ItemAdded, undo: &mut Undo<Self>) {
        self.items.push(event.text.clone());
        *self.counts.entry(event.text.clone()).or_default() += 1;
        let text = event.text.clone();
        undo.record(move |ledger| {
            ledger.items.pop();
            if let Some(count) = ledger.counts.get_mut(&text) {
                *count -= 1;
                if *count == 0 {
                    ledger.counts.remove(&text);
                }
            }
        });
    }

    fn cleared(&mut self, _: &ItemsCleared, undo: &mut Undo<Self>) {
        let items = std::mem::take(&mut self.items);
        let counts = std::mem::take(&mut self.counts);
        undo.record(move |ledger| {
            ledger.items = items;
            ledger.counts = counts;
        });
    }

    fn renamed(&mut self, event: &LedgerRenamed, undo: &mut Undo<Self>) {
        undo.keep(self);
        self.name.clone_from(&event.name);
    }

    fn checked(&mut self, _: &LedgerChecked, undo: &mut Undo<Self>) {
        self.checks += 1;
        undo.record(|ledger| ledger.checks -= 1);
        assert!(
            !self.items.len().is_multiple_of(5),
            "a multiple of five items"
        );
    }
}

/// The same ledger, except that renaming records no undo.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Mixed {
    name: String,
    items: Vec<String>,
    #[serde(skip)]
    _copies: CloneCount,
}

#[handler(LedgerEvent, partial)]
impl Mixed {
    fn added(&mut self, event: &ItemAdded, undo: &mut Undo<Self>) {
        self.items.push(event.text.clone());
        undo.record(|mixed| {
            mixed.items.pop();
        });
    }

    fn renamed(&mut self, event: &LedgerRenamed) {
        self.name.clone_from(&event.name);
    }
}

fn workflow<S: WorkflowState + Default>(name: &str) -> Workflow<S> {
    Workflow::builder(name)
        .initial_state(S::default())
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new())
        .build()
        .unwrap()
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Add(u8),
    Clear,
    Rename(u8),
    Check,
}

fn envelope(kind: Kind) -> Envelope {
    match kind {
        Kind::Add(n) => Envelope::typed(
            &ItemAdded {
                text: format!("item {}", n % 7),
            },
            None,
        ),
        Kind::Clear => Envelope::typed(&ItemsCleared, None),
        Kind::Rename(n) => Envelope::typed(
            &LedgerRenamed {
                name: format!("name {n}"),
            },
            None,
        ),
        Kind::Check => Envelope::typed(&LedgerChecked, None),
    }
    .unwrap()
}

/// `n` events: mostly additions, a clear now and then, and a built-in event the handlers do
/// not see.
fn adds_and_clears(n: usize) -> Vec<Envelope> {
    (0..n)
        .map(|i| match i % 97 {
            96 => envelope(Kind::Clear),
            50 => Envelope::typed(&UserInput::new("more"), None).unwrap(),
            _ => envelope(Kind::Add((i % 251) as u8)),
        })
        .collect()
}

/// `events` with every tenth replaced by a rename.
fn renamed_every_tenth(events: Vec<Envelope>) -> Vec<Envelope> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            if i % 10 == 0 {
                envelope(Kind::Rename(i as u8))
            } else {
                e
            }
        })
        .collect()
}

fn json<S: Serialize>(state: &S) -> String {
    serde_json::to_string(state).unwrap()
}

/// Walks the tape from its end back to 0, checking each state against the forward walk's;
/// returns how many states the backward walk copied.
fn walk_back_against_forward<S: WorkflowState>(tape: &mut Tape<S>) -> usize {
    tape.rewind();
    let mut forward = vec![json(tape.state())];
    while tape.position() < tape.len() {
        tape.step();
        forward.push(json(tape.state()));
    }
    let before = clones();
    while tape.position() > 0 {
        tape.step_back();
        let position = tape.position() as usize;
        assert_eq!(json(tape.state()), forward[position], "position {position}");
    }
    clones() - before
}

/// A tape of `events` with a snapshot every 200, walked back from its end against the forward
/// walk; returns the steps and the states copied.
fn walk_back_from_the_end<S: WorkflowState + Default>(
    name: &str,
    events: Vec<Envelope>,
) -> (u64, usize) {
    let len = events.len() as u64;
    let mut tape = Tape::from_events(workflow::<S>(name), SessionId::new(), events)
        .with_snapshot_interval(200);
    tape.step_to(len);
    (len, walk_back_against_forward(&mut tape))
}

#[test]
fn stepping_back_over_undoable_events_reverts_them_without_copying_the_state() {
    let (len, copies) = walk_back_from_the_end::<Ledger>("ledger", adds_and_clears(3_000));
    // One copy per snapshot segment walked into (the fold from its snapshot), not per step.
    assert!(
        copies <= (len / 200 + 2) as usize,
        "{copies} copies for {len} steps back"
    );
}

#[test]
fn without_undos_the_walk_back_copies_states_and_stays_exact() {
    // `Mixed` renames without an undo: its walk back is the copying one.
    let events = renamed_every_tenth(adds_and_clears(3_000));
    let (len, copies) = walk_back_from_the_end::<Mixed>("mixed", events);
    assert!(
        copies >= len as usize / 2,
        "{copies} copies for {len} steps back"
    );
}

/// A state that keeps only the name, and records no undos.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NameOnly {
    name: String,
    #[serde(skip)]
    _copies: CloneCount,
}

#[handler(LedgerEvent, partial)]
impl NameOnly {
    fn renamed(&mut self, event: &LedgerRenamed) {
        self.name.clone_from(&event.name);
    }
}

#[test]
fn without_undos_stepping_back_over_events_no_handler_ran_copies_nothing() {
    // One event in ten renames; the others (additions, clears, inputs) run no handler of
    // `NameOnly`'s, as an agent's streamed events run none of most states'.
    let events = renamed_every_tenth(adds_and_clears(3_000));
    let (len, copies) = walk_back_from_the_end::<NameOnly>("name-only", events);
    // A copy per rename stepped back over, and two per snapshot segment (the start of the
    // fold that lays its states down, and that fold's checkpoint); not one per step.
    let renames = len as usize / 10;
    let segments = len as usize / 200 + 1;
    assert!(
        copies <= renames + 2 * segments,
        "{copies} copies for {len} steps back over {renames} renames"
    );
}

#[test]
fn a_handler_that_panics_gives_up_undo_and_the_walk_stays_exact() {
    let kinds = (0..400).map(|i| match i % 3 {
        0 => Kind::Check,
        _ => Kind::Add(i as u8),
    });
    let events = kinds.map(envelope).collect::<Vec<_>>();
    let workflow = workflow::<Ledger>("ledger");
    let mut tape = Tape::from_events(workflow.clone(), SessionId::new(), events.clone())
        .with_snapshot_interval(32);
    tape.step_to(tape.len());
    walk_back_against_forward(&mut tape);
    assert_eq!(json(tape.state()), json(&workflow.fold(&[])));
    let end = workflow.fold(&events);
    assert!(end.checks > 0 && !end.items.is_empty());
}

/// A state whose undo is wrong: it forgets to take back the counter.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Careless {
    items: Vec<String>,
    added: u64,
}

#[handler(LedgerEvent, partial)]
impl Careless {
    fn added(&mut self, event: &ItemAdded, undo: &mut Undo<Self>) {
        self.items.push(event.text.clone());
        self.added += 1;
        undo.record(|careless| {
            careless.items.pop(); // and `added` stays: wrong
        });
    }
}

#[test]
fn a_wrong_undo_is_caught_at_the_next_snapshot_and_the_walk_goes_on_exact() {
    let events = (0..100u8)
        .map(|i| envelope(Kind::Add(i)))
        .collect::<Vec<_>>();
    let workflow = workflow::<Careless>("careless");
    let mut tape = Tape::from_events(workflow.clone(), SessionId::new(), events.clone())
        .with_snapshot_interval(16);
    tape.step_to(tape.len());
    // Between snapshots the wrong undo shows (this is the handler's bug)...
    tape.step_back();
    assert_eq!(tape.state().added, 100, "the undo forgot the counter");
    // ...but reaching the snapshot at 96 detects it, and every state from there on is right.
    tape.step_to(96);
    for position in (0..=96).rev() {
        tape.step_to(position);
        assert_eq!(
            json(tape.state()),
            json(&workflow.fold(&events[..position as usize])),
            "position {position}"
        );
    }
}

mod moves {
    use super::*;

    fn a_kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            6 => any::<u8>().prop_map(Kind::Add),
            1 => Just(Kind::Clear),
            1 => any::<u8>().prop_map(Kind::Rename),
            1 => Just(Kind::Check),
        ]
    }

    #[derive(Debug, Clone)]
    enum Move {
        Step,
        StepBack,
        StepTo(u64),
        Back(u64),
    }

    fn a_move() -> impl Strategy<Value = Move> {
        prop_oneof![
            2 => Just(Move::Step),
            4 => Just(Move::StepBack),
            1 => (0u64..120).prop_map(Move::StepTo),
            1 => (1u64..40).prop_map(Move::Back),
        ]
    }

    fn check_moves<S: WorkflowState + Default>(
        name: &str,
        kinds: &[Kind],
        interval: u64,
        moves: &[Move],
    ) -> Result<(), TestCaseError> {
        let events = kinds.iter().copied().map(envelope).collect::<Vec<_>>();
        let workflow = workflow::<S>(name);
        let mut tape = Tape::from_events(workflow.clone(), SessionId::new(), events.clone())
            .with_snapshot_interval(interval);
        for m in moves {
            match m {
                Move::Step => tape.step(),
                Move::StepBack => tape.step_back(),
                Move::StepTo(p) => tape.step_to(*p),
                Move::Back(n) => tape.step_to(tape.position().saturating_sub(*n)),
            };
            let position = tape.position() as usize;
            prop_assert_eq!(
                json(tape.state()),
                json(&workflow.fold(&events[..position]))
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_moves_over_an_undoable_state_match_a_fresh_fold(
            kinds in proptest::collection::vec(a_kind(), 0..120),
            moves in proptest::collection::vec(a_move(), 1..60),
            interval in proptest::sample::select(vec![1u64, 4, 16, 50, 1000]),
        ) {
            check_moves::<Ledger>("ledger", &kinds, interval, &moves)?;
        }

        #[test]
        fn any_moves_over_a_partly_undoable_state_match_a_fresh_fold(
            kinds in proptest::collection::vec(a_kind(), 0..120),
            moves in proptest::collection::vec(a_move(), 1..60),
            interval in proptest::sample::select(vec![1u64, 4, 16, 50, 1000]),
        ) {
            check_moves::<Mixed>("mixed", &kinds, interval, &moves)?;
        }
    }
}
