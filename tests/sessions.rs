//! Sessions that live on: turns that continue a recorded session, resuming a turn a crash cut
//! off, waiting for a person, one writer per session, status, and the bad inputs of each.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use openharness::builtin::{AgentCompleted, AgentStarted, Outcome};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::{MemoryStore, Observed, StoreObserver};
use openharness::tape::{At, Cassette, LoadTape, TapeError};
use openharness::{Error, SessionStatus, StopReason, StoreError};
use openharness_testkit::events::names;
use openharness_testkit::{LIMIT, eventually};

// ---------------------------------------------------------------------------------------------
// A tally: each input is a number an agent adds; "ask" makes a handler ask a person instead.

#[event]
#[derive(Debug, Clone)]
struct CountAdded {
    amount: i64,
}

#[event]
enum TallyEvent {
    UserInput,
    InputReceived,
    CountAdded,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Tally {
    total: i64,
    inputs: Vec<String>,
    answers: Vec<String>,
}

#[handler(TallyEvent)]
impl Tally {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.inputs.push(input.text.clone());
        if input.text == "ask" {
            Emit::one(InputRequested::new("how much?"))
        } else {
            Emit::none()
        }
    }

    fn answered(&mut self, answer: &InputReceived) {
        self.answers.push(answer.text.clone());
    }

    fn added(&mut self, added: &CountAdded) {
        self.total += added.amount;
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    amount: i64,
}

struct Adder;

#[agent(output = Amount, emits = [CountAdded])]
impl Adder {
    fn when(&self, state: &Tally) -> bool {
        state.inputs.last().is_some_and(|text| text != "ask")
    }

    fn prompt(&self, _state: &Tally, input: &UserInput) -> String {
        format!("add {}", input.text)
    }

    fn on_output(&self, output: Amount, _input: &UserInput) -> CountAdded {
        CountAdded {
            amount: output.amount,
        }
    }
}

/// Answers `add N` with N (0 when the input is no number).
fn adding() -> ScriptedProvider {
    ScriptedProvider::new().fallback("adder", |request| {
        let amount: i64 = request
            .prompt
            .trim_start_matches("add ")
            .parse()
            .unwrap_or(0);
        Reply::output(serde_json::json!({ "amount": amount }))
    })
}

fn tally(store: impl Store, provider: ScriptedProvider) -> Workflow<Tally> {
    Workflow::builder("tally")
        .initial_state(Tally::default())
        .agent(Adder)
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Continue

#[tokio::test]
async fn three_turns_grow_one_session_and_the_tape_steps_back_across_them() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let first = wf.run(RunOptions::new().input("1")).await.unwrap();
    assert_eq!((first.first_seq, first.reason), (0, StopReason::Idle));
    let second = wf
        .send(&first.session, "2", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(second.session, first.session);
    assert_eq!(second.first_seq, first.len, "the turn starts at the end");
    let third = wf
        .send(&first.session, "3", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(third.state.total, 6);
    assert_eq!(third.state.inputs, ["1", "2", "3"]);

    let events = store.all_events(&first.session).await.unwrap();
    assert_eq!(events.len() as u64, third.len);
    let turns = names(&events)
        .iter()
        .filter(|n| **n == "workflow:completed")
        .count();
    assert_eq!(turns, 3, "each turn ends with workflow:completed");
    assert_eq!(
        names(&events)
            .iter()
            .filter(|n| **n == "workflow:started")
            .count(),
        1,
        "a session starts once"
    );
    // The final state is a fold of the whole log.
    assert_eq!(wf.fold(&events), third.state);
    assert_eq!(
        wf.state_at(&first.session, u64::MAX).await.unwrap(),
        third.state
    );

    // A tape over the whole session steps back across turn boundaries.
    let mut tape = wf.load(&first.session).await.unwrap();
    tape.step_to(tape.len());
    assert_eq!(tape.state(), &third.state);
    let third_input = events.iter().rposition(|e| e.name == "user:input").unwrap() as u64;
    tape.step_to(third_input + 1);
    assert_eq!(tape.state().inputs, ["1", "2", "3"]);
    assert_eq!(tape.state().total, 3, "before the third answer");
    tape.step_back();
    assert_eq!(tape.state().inputs, ["1", "2"], "before the third turn");
    assert_eq!(
        tape.state(),
        &wf.state_at(&first.session, third_input).await.unwrap()
    );

    let info = store.session(&first.session).await.unwrap().unwrap();
    assert_eq!(info.status, SessionStatus::Idle);
    assert_eq!(info.count, third.len);
}

#[tokio::test]
async fn input_fields_are_recorded_beside_the_text_and_folded_as_before() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let fields = |tag: &str| {
        let mut fields = serde_json::Map::new();
        fields.insert("tags".into(), serde_json::json!([tag]));
        // A field named `text` does not replace the input's text.
        fields.insert("text".into(), serde_json::json!("not the input"));
        fields
    };
    let first = wf
        .run(RunOptions::new().input("1").input_fields(fields("first")))
        .await
        .unwrap();
    let second = wf
        .send(
            &first.session,
            "2",
            RunOptions::new().input_fields(fields("second")),
        )
        .await
        .unwrap();
    assert_eq!(second.state.inputs, ["1", "2"]);
    let inputs: Vec<serde_json::Value> = store
        .all_events(&first.session)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.name == "user:input")
        .map(|e| e.payload)
        .collect();
    assert_eq!(
        inputs,
        [
            serde_json::json!({ "text": "1", "tags": ["first"] }),
            serde_json::json!({ "text": "2", "tags": ["second"] }),
        ]
    );
}

#[tokio::test]
async fn a_guard_counts_the_turns_own_events_not_the_sessions() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let mut session = wf.run(RunOptions::new().input("1")).await.unwrap();
    for n in 2..=4 {
        session = wf
            .send(&session.session, n.to_string(), RunOptions::new())
            .await
            .unwrap();
    }
    assert!(session.len > 12);
    // A turn of 6 events under a guard of 8: the session's 20-odd earlier events do not count.
    let turn = wf
        .send(&session.session, "5", RunOptions::new().max_events(8))
        .await
        .unwrap();
    assert_eq!(turn.reason, StopReason::Idle);
    assert_eq!(turn.state.total, 15);
    // A guard smaller than the turn stops it, and says so.
    let stopped = wf
        .send(&session.session, "6", RunOptions::new().max_events(2))
        .await
        .unwrap();
    assert_eq!(stopped.reason, StopReason::MaxEvents);
    assert_eq!(stopped.state.inputs.last().map(String::as_str), Some("6"));
}

#[tokio::test]
async fn a_fork_and_an_imported_session_can_be_continued() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let first = wf.run(RunOptions::new().input("10")).await.unwrap();
    let grown = wf
        .send(&first.session, "20", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(grown.state.total, 30);

    // A fork at the end of the first turn, continued twice.
    let fork = wf
        .fork(&first.session, At::position(first.len))
        .await
        .unwrap();
    let forked = fork.run(RunOptions::new()).await.unwrap();
    assert_eq!(
        forked.state.total, 10,
        "the fork starts from the first turn"
    );
    let continued = wf
        .send(&forked.session, "5", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(continued.state.total, 15);
    let again = wf
        .send(&forked.session, "1", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(again.state.total, 16);
    assert_eq!(again.state.inputs, ["10", "5", "1"]);
    let tape = wf.load(&forked.session).await.unwrap();
    let mut tape = tape;
    tape.step_to(tape.len());
    assert_eq!(tape.state(), &again.state, "the fork's tape agrees");

    // An exported session imported into another store continues there.
    let mut jsonl = Vec::new();
    openharness::store::jsonl::export(&store, &first.session, &mut jsonl)
        .await
        .unwrap();
    let other = MemoryStore::new();
    openharness::store::jsonl::import(&other, jsonl.as_slice())
        .await
        .unwrap();
    let elsewhere = tally(other.clone(), adding());
    let imported = elsewhere
        .send(&first.session, "7", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(imported.state.total, 37);
    assert_eq!(imported.first_seq, grown.len);
}

// ---------------------------------------------------------------------------------------------
// Waiting for a person

#[tokio::test]
async fn a_request_ends_the_turn_waiting_and_its_answer_continues_the_session() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let asked = wf.run(RunOptions::new().input("ask")).await.unwrap();
    assert_eq!(asked.reason, StopReason::WaitingForInput);
    assert_eq!(asked.open_requests.len(), 1);
    let request = asked.open_requests[0];
    let events = store.all_events(&asked.session).await.unwrap();
    let requested = events.iter().find(|e| e.id == request).unwrap();
    assert_eq!(requested.name, "input:requested");
    let info = store.session(&asked.session).await.unwrap().unwrap();
    assert_eq!(info.status, SessionStatus::Waiting);

    // An answer to a request that does not exist records nothing.
    let err = wf
        .respond(&asked.session, EventId::new(), "3", RunOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RequestNotOpen { open, .. } if open == &[request]),
        "{err}"
    );
    assert_eq!(
        store.all_events(&asked.session).await.unwrap().len() as u64,
        asked.len
    );

    // The answer is recorded caused by the request, and the session goes on.
    let answered = wf
        .respond(&asked.session, request, "fine", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(answered.reason, StopReason::Idle);
    assert!(answered.open_requests.is_empty());
    assert_eq!(answered.state.answers, ["fine"]);
    let events = store.all_events(&asked.session).await.unwrap();
    let received = &events[asked.len as usize];
    assert_eq!(received.name, "input:received");
    assert_eq!(received.caused_by, Some(request));
    assert_eq!(
        store.session(&asked.session).await.unwrap().unwrap().status,
        SessionStatus::Idle
    );

    // Answering it again is refused and records nothing.
    let err = wf
        .respond(&asked.session, request, "again", RunOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RequestNotOpen { .. }), "{err}");
    assert_eq!(
        store.all_events(&asked.session).await.unwrap().len() as u64,
        answered.len
    );

    // A request stays open across a turn of other input, and the tape and a fork work across
    // the pause.
    let asked_again = wf
        .send(&asked.session, "ask", RunOptions::new())
        .await
        .unwrap();
    let open = asked_again.open_requests.clone();
    let other = wf
        .send(&asked.session, "4", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(other.reason, StopReason::WaitingForInput);
    assert_eq!(other.open_requests, open, "still open after other input");
    let last = wf
        .respond(&asked.session, open[0], "ok", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(last.state.total, 4);
    assert_eq!(last.state.answers, ["fine", "ok"]);
    let events = store.all_events(&asked.session).await.unwrap();
    assert_eq!(wf.fold(&events), last.state);
    let fork = wf
        .fork(&asked.session, At::position(asked.len))
        .await
        .unwrap();
    let forked = fork.run(RunOptions::new()).await.unwrap();
    assert_eq!(forked.state.inputs, ["ask"]);
}

#[tokio::test]
async fn a_cassette_re_executes_every_turn_and_answer_without_a_model() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let first = wf.run(RunOptions::new().input("2")).await.unwrap();
    let session = first.session;
    let asked = wf.send(&session, "ask", RunOptions::new()).await.unwrap();
    wf.respond(&session, asked.open_requests[0], "yes", RunOptions::new())
        .await
        .unwrap();
    let last = wf.send(&session, "5", RunOptions::new()).await.unwrap();

    // No model: a provider that would fail every call.
    let offline = tally(store.clone(), ScriptedProvider::new());
    let cassette = Cassette::load(&offline, &session).await.unwrap();
    let replayed = cassette.replay(&offline, RunOptions::new()).await.unwrap();
    assert_ne!(replayed.session, session);
    assert_eq!(replayed.state, last.state);
    assert_eq!(replayed.len, last.len);

    // A changed prompt diverges at the second turn's agent call.
    struct Doubler;
    #[agent(output = Amount, emits = [CountAdded], name = "adder")]
    impl Doubler {
        fn when(&self, state: &Tally) -> bool {
            state.inputs.last().is_some_and(|text| text != "ask")
        }
        fn prompt(&self, state: &Tally, input: &UserInput) -> String {
            if state.inputs.len() > 1 {
                format!("add twice {}", input.text)
            } else {
                format!("add {}", input.text)
            }
        }
        fn on_output(&self, output: Amount, _input: &UserInput) -> CountAdded {
            CountAdded {
                amount: output.amount,
            }
        }
    }
    let changed = Workflow::builder("tally")
        .initial_state(Tally::default())
        .agent(Doubler)
        .store(store.clone())
        .provider(ScriptedProvider::new())
        .build()
        .unwrap();
    match cassette.replay(&changed, RunOptions::new()).await {
        Err(TapeError::Diverged(divergence)) => {
            assert!(divergence.seq > first.len, "{divergence}");
        }
        other => panic!("expected a divergence, got {:?}", other.map(|o| o.len)),
    }
}

// ---------------------------------------------------------------------------------------------
// Resume after a crash

/// A planner makes tasks; a worker does them one at a time, each as an agent call; handlers
/// chain the next task. `until` all are done.
#[event]
#[derive(Debug, Clone)]
struct PlanMade {
    tasks: Vec<String>,
}

#[event]
#[derive(Debug, Clone)]
struct TaskStarted {
    index: usize,
}

#[event]
#[derive(Debug, Clone)]
struct TaskDone {
    index: usize,
    result: String,
}

#[event]
enum WorkEvent {
    UserInput,
    PlanMade,
    TaskStarted,
    TaskDone,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Work {
    goal: String,
    tasks: Vec<String>,
    results: Vec<String>,
}

#[handler(WorkEvent)]
impl Work {
    fn input(&mut self, input: &UserInput) {
        self.goal = input.text.clone();
    }

    fn plan(&mut self, plan: &PlanMade) -> Emit {
        self.tasks = plan.tasks.clone();
        if self.tasks.is_empty() {
            Emit::none()
        } else {
            Emit::one(TaskStarted { index: 0 })
        }
    }

    fn started(&mut self, _started: &TaskStarted) {}

    fn done(&mut self, done: &TaskDone) -> Emit {
        self.results.push(format!("{}={}", done.index, done.result));
        let next = done.index + 1;
        if next < self.tasks.len() {
            Emit::one(TaskStarted { index: next })
        } else {
            Emit::none()
        }
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Tasks {
    tasks: Vec<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Outcome_ {
    result: String,
}

struct Planner;

#[agent(output = Tasks, emits = [PlanMade])]
impl Planner {
    fn prompt(&self, _state: &Work, input: &UserInput) -> String {
        format!("plan {}", input.text)
    }

    fn on_output(&self, output: Tasks, _input: &UserInput) -> PlanMade {
        PlanMade {
            tasks: output.tasks,
        }
    }
}

struct Worker;

#[agent(output = Outcome_, emits = [TaskDone])]
impl Worker {
    fn prompt(&self, state: &Work, started: &TaskStarted) -> String {
        format!("do task {} of {}", started.index, state.goal)
    }

    fn on_output(&self, output: Outcome_, started: &TaskStarted) -> TaskDone {
        TaskDone {
            index: started.index,
            result: output.result,
        }
    }
}

fn working() -> ScriptedProvider {
    ScriptedProvider::new()
        .fallback("planner", |_| {
            Reply::output(serde_json::json!({ "tasks": ["a", "b", "c", "d"] })).text("thinking")
        })
        .fallback("worker", |request| {
            Reply::output(serde_json::json!({ "result": request.prompt.to_uppercase() }))
                .text("working")
        })
}

fn work(store: impl Store, provider: ScriptedProvider) -> Workflow<Work> {
    Workflow::builder("work")
        .initial_state(Work::default())
        .agent(Planner)
        .agent(Worker)
        .until(|s: &Work| !s.tasks.is_empty() && s.results.len() == s.tasks.len())
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

/// Remembers where each append ended and which reads were made, and can hold appends back
/// (to line up racing writers).
#[derive(Default)]
struct Spy {
    appended: Mutex<Vec<u64>>,
    reads: Mutex<Vec<Range<u64>>>,
    append_delay: Duration,
}

#[async_trait]
impl StoreObserver for Spy {
    async fn before_append(&self, _: &SessionId, _: &[Envelope], _: u64) {
        tokio::time::sleep(self.append_delay).await;
    }
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        result: &Result<u64, StoreError>,
        _: Duration,
    ) {
        if let Ok(len) = result {
            self.appended.lock().unwrap().push(*len);
        }
    }
    fn observes_reads(&self) -> bool {
        true
    }
    fn on_read(&self, _: &SessionId, range: &Range<u64>) {
        self.reads.lock().unwrap().push(range.clone());
    }
}

/// A memory store under a [`Spy`], shared by clones.
fn spied(append_delay: Duration) -> Arc<Observed<MemoryStore, Spy>> {
    Arc::new(Observed::new(
        MemoryStore::new(),
        Spy {
            append_delay,
            ..Spy::default()
        },
    ))
}

/// How many requests each (agent, prompt) made.
fn requests_by_prompt(provider: &ScriptedProvider) -> HashMap<(String, String), usize> {
    let mut counts = HashMap::new();
    for request in provider.requests() {
        *counts.entry((request.agent, request.prompt)).or_default() += 1;
    }
    counts
}

/// Copies `events` into a new session of a new store, as a killed process left them.
async fn cut_off(events: &[Envelope], session: &SessionId) -> MemoryStore {
    let store = MemoryStore::new();
    if !events.is_empty() {
        store.append(session, events, 0).await.unwrap();
    }
    store
}

/// Checks a resumed log: seqs contiguous (the store's), causes earlier, ids unique, and every
/// `agent:started` answered by exactly one `agent:completed` of the same agent and trigger.
fn check_log(events: &[Envelope]) {
    let mut seen = HashMap::new();
    for (seq, event) in events.iter().enumerate() {
        assert!(seen.insert(event.id, seq).is_none(), "id repeats at {seq}");
        if let Some(cause) = event.caused_by {
            assert!(
                seen.get(&cause).is_some_and(|at| *at < seq),
                "the cause of seq {seq} ({}) is not earlier",
                event.name
            );
        }
    }
    let mut open: HashMap<(Option<EventId>, String), usize> = HashMap::new();
    for event in events {
        if event.name == AgentStarted::NAME {
            let agent = event.decode::<AgentStarted>().unwrap().agent;
            *open.entry((event.caused_by, agent)).or_default() += 1;
            assert!(
                open.values().all(|n| *n <= 1),
                "a call started twice without closing"
            );
        } else if event.name == AgentCompleted::NAME {
            let agent = event.decode::<AgentCompleted>().unwrap().agent;
            let count = open.entry((event.caused_by, agent)).or_default();
            assert_eq!(*count, 1, "a completion answers exactly one start");
            *count = 0;
        }
    }
    assert!(open.values().all(|n| *n == 0), "every call is closed");
}

#[tokio::test]
async fn resuming_at_every_append_boundary_finishes_like_an_uninterrupted_run() {
    let spy = spied(Duration::ZERO);
    let reference_provider = working();
    let reference = work(Arc::clone(&spy), reference_provider.clone())
        .run(RunOptions::new().input("ship"))
        .await
        .unwrap();
    assert_eq!(reference.reason, StopReason::Until);
    assert_eq!(reference.state.results.len(), 4);
    let full = spy.inner().all_events(&reference.session).await.unwrap();
    let boundaries = spy.observer().appended.lock().unwrap().clone();
    assert!(
        boundaries.len() < full.len(),
        "events are batched: {} appends for {} events",
        boundaries.len(),
        full.len()
    );
    for cut in boundaries {
        let session = SessionId::new();
        let prefix = &full[..cut as usize];
        let store = cut_off(prefix, &session).await;
        let provider = working();
        let wf = work(store.clone(), provider.clone());
        let report = wf.unfinished(&session).await.unwrap();
        let outcome = wf.resume(&session, RunOptions::new()).await.unwrap();
        if cut == full.len() as u64 {
            assert_eq!(outcome.reason, StopReason::NothingUnfinished);
            assert!(!report.needs_resume());
            assert_eq!(outcome.len, cut, "nothing recorded");
            continue;
        }
        assert!(report.needs_resume());
        assert_eq!(
            outcome.state, reference.state,
            "cut at {cut}: resumed state differs"
        );
        assert_eq!(outcome.reason, StopReason::Until);
        let events = store.all_events(&session).await.unwrap();
        check_log(&events);
        // No call completed before the cut was sent to a model again.
        let completed_before: Vec<(String, String)> = prefix
            .iter()
            .filter(|e| e.name == AgentCompleted::NAME)
            .filter_map(|e| {
                let started = prefix.iter().rev().find(|s| {
                    s.name == AgentStarted::NAME
                        && s.caused_by == e.caused_by
                        && s.decode::<AgentStarted>().unwrap().agent
                            == e.decode::<AgentCompleted>().unwrap().agent
                })?;
                let started = started.decode::<AgentStarted>().unwrap();
                Some((started.agent, started.prompt))
            })
            .collect();
        let asked = requests_by_prompt(&provider);
        for key in &completed_before {
            assert!(
                !asked.contains_key(key),
                "cut at {cut}: {key:?} was completed and asked again"
            );
        }
        // The calls the cut left open were closed as interrupted, once each.
        let interrupted = events[prefix.len()..]
            .iter()
            .filter(|e| {
                e.name == AgentCompleted::NAME
                    && e.decode::<AgentCompleted>().unwrap().outcome == Outcome::Interrupted
            })
            .count();
        assert_eq!(interrupted, report.open_calls.len(), "cut at {cut}");
        // Resuming again finds nothing.
        let again = wf.resume(&session, RunOptions::new()).await.unwrap();
        assert_eq!(again.reason, StopReason::NothingUnfinished);
    }
}

#[tokio::test]
async fn resume_derives_what_handlers_emitted_and_agents_never_started() {
    // Cut between an event and what it caused (a log written one event per append, as older
    // versions did, can end there): right before a `task:started` a handler emitted, and right
    // before the `agent:started` of an agent an event activated.
    let store = MemoryStore::new();
    let reference = work(store.clone(), working())
        .run(RunOptions::new().input("ship"))
        .await
        .unwrap();
    let full = store.all_events(&reference.session).await.unwrap();
    let cuts: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == "task:started" || e.name == "agent:started")
        .map(|(index, _)| index)
        .collect();
    assert!(cuts.len() >= 5);
    for cut in cuts {
        let session = SessionId::new();
        let store = cut_off(&full[..cut], &session).await;
        let wf = work(store.clone(), working());
        let report = wf.unfinished(&session).await.unwrap();
        assert!(
            !report.unrecorded.is_empty(),
            "cut before {cut} ({}): something was not recorded",
            full[cut].name
        );
        let outcome = wf.resume(&session, RunOptions::new()).await.unwrap();
        assert_eq!(outcome.state, reference.state, "cut at {cut}");
        check_log(&store.all_events(&session).await.unwrap());
    }
}

#[tokio::test]
async fn a_resume_cut_off_in_turn_is_resumed_again() {
    let store = MemoryStore::new();
    let reference = work(store.clone(), working())
        .run(RunOptions::new().input("ship"))
        .await
        .unwrap();
    let full = store.all_events(&reference.session).await.unwrap();
    // Cut right after the second worker call started.
    let cut = full
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == "agent:started")
        .nth(2)
        .map(|(index, _)| index + 1)
        .unwrap();
    let session = SessionId::new();
    let first_store = cut_off(&full[..cut], &session).await;
    let resumed = work(first_store.clone(), working())
        .resume(&session, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(resumed.state, reference.state);
    let log = first_store.all_events(&session).await.unwrap();
    // The resume closed the call, started it again: cut right after that rerun started.
    let rerun = log[cut..]
        .iter()
        .position(|e| e.name == "agent:started")
        .map(|index| cut + index + 1)
        .unwrap();
    let again = SessionId::new();
    let second_store = cut_off(&log[..rerun], &again).await;
    let wf = work(second_store.clone(), working());
    let report = wf.unfinished(&again).await.unwrap();
    assert_eq!(report.open_calls.len(), 1, "the rerun is open");
    assert!(report.open_calls[0].trigger.is_some());
    let outcome = wf.resume(&again, RunOptions::new()).await.unwrap();
    assert_eq!(outcome.state, reference.state);
    let events = second_store.all_events(&again).await.unwrap();
    check_log(&events);
    assert!(
        !events.iter().any(|e| e.name == "error:occurred"),
        "the rerun was run again, not given up: {:?}",
        names(&events)
    );
}

#[tokio::test]
async fn a_status_per_session_and_bad_input_records_nothing() {
    let store = MemoryStore::new();
    let wf = tally(store.clone(), adding());
    let idle = wf.run(RunOptions::new().input("1")).await.unwrap();
    let waiting = wf.run(RunOptions::new().input("ask")).await.unwrap();
    let failing = tally(
        store.clone(),
        ScriptedProvider::new().respond("adder", Reply::error("the model is down")),
    );
    let failed = failing.run(RunOptions::new().input("1")).await.unwrap();
    assert_eq!(failed.errors, 1, "the agent's failure is counted");
    // A turn cut off: the first events of a run, without its end.
    let full = store.all_events(&idle.session).await.unwrap();
    let running = SessionId::new();
    store.append(&running, &full[..3], 0).await.unwrap();
    let statuses: HashMap<SessionId, SessionStatus> = store
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|info| (info.id, info.status))
        .collect();
    assert_eq!(statuses[&idle.session], SessionStatus::Idle);
    assert_eq!(statuses[&waiting.session], SessionStatus::Waiting);
    assert_eq!(statuses[&failed.session], SessionStatus::Failed);
    assert_eq!(statuses[&running], SessionStatus::Running);

    // A cut-off session is busy until resumed.
    let err = wf.send(&running, "2", RunOptions::new()).await.unwrap_err();
    assert!(matches!(err, Error::SessionBusy { .. }), "{err}");
    assert!(err.to_string().contains("resume"), "{err}");

    // Unknown session.
    let unknown = SessionId::new();
    let err = wf.send(&unknown, "2", RunOptions::new()).await.unwrap_err();
    assert!(
        matches!(err, Error::SessionNotFound(ref s) if *s == unknown),
        "{err}"
    );
    assert!(store.all_events(&unknown).await.unwrap().is_empty());
    let err = wf.resume(&unknown, RunOptions::new()).await.unwrap_err();
    assert!(matches!(err, Error::SessionNotFound(_)), "{err}");

    // A session of another workflow.
    let other = work(store.clone(), working());
    let err = other
        .send(&idle.session, "go", RunOptions::new())
        .await
        .unwrap_err();
    match &err {
        Error::WrongWorkflow {
            recorded, workflow, ..
        } => assert_eq!((recorded.as_str(), workflow.as_str()), ("tally", "work")),
        other => panic!("expected WrongWorkflow, got {other}"),
    }

    // A fork whose parent is not in the store: its base state cannot be derived.
    let orphan = SessionId::new();
    let missing = SessionId::new();
    let forked = openharness::builtin::SessionForked {
        parent: missing.clone(),
        position: 3,
        workflow: Some("tally".into()),
        open_requests: Vec::new(),
        state_hash: None,
        state_edit: None,
    };
    store
        .append(&orphan, &[Envelope::typed(&forked, None).unwrap()], 0)
        .await
        .unwrap();
    for err in [
        wf.send(&orphan, "2", RunOptions::new()).await.unwrap_err(),
        wf.load(&orphan).await.unwrap_err(),
        wf.state_at(&orphan, 1).await.unwrap_err(),
    ] {
        match &err {
            Error::MissingParent { session, parent } => {
                assert_eq!((session, parent), (&orphan, &missing));
            }
            other => panic!("expected MissingParent, got {other}"),
        }
    }
    assert_eq!(
        store.all_events(&orphan).await.unwrap().len(),
        1,
        "nothing recorded"
    );

    // A tail event that no longer decodes: named with its session and seq.
    let broken = SessionId::new();
    let mut events = full.clone();
    let bad = events.iter().position(|e| e.name == "count:added").unwrap();
    events[bad].payload = serde_json::json!({ "amount": "lots" });
    store.append(&broken, &events, 0).await.unwrap();
    let err = wf.send(&broken, "2", RunOptions::new()).await.unwrap_err();
    match &err {
        Error::Undecodable {
            session, seq, name, ..
        } => {
            assert_eq!(
                (session, *seq, name.as_str()),
                (&broken, bad as u64, "count:added")
            );
        }
        other => panic!("expected Undecodable, got {other}"),
    }
    assert_eq!(
        store.all_events(&broken).await.unwrap().len(),
        full.len(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn continuing_reads_the_latest_snapshot_and_the_tail_only() {
    let spy = spied(Duration::ZERO);
    // A long first turn (more than the snapshot threshold): 40 tasks.
    let provider = ScriptedProvider::new()
        .fallback("planner", |_| {
            let tasks: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
            Reply::output(serde_json::json!({ "tasks": tasks }))
        })
        .fallback("worker", |_| {
            Reply::output(serde_json::json!({ "result": "ok" }))
        });
    let wf = work(Arc::clone(&spy), provider);
    let first = wf.run(RunOptions::new().input("long")).await.unwrap();
    assert!(first.len > 100, "{}", first.len);
    let snapshot = spy
        .inner()
        .latest_snapshot(&first.session, u64::MAX)
        .await
        .unwrap()
        .expect("the turn saved a snapshot at its end");
    assert_eq!(snapshot.position, first.len);
    spy.observer().reads.lock().unwrap().clear();
    let second = wf
        .send(&first.session, "more", RunOptions::new())
        .await
        .unwrap();
    let reads = spy.observer().reads.lock().unwrap().clone();
    assert!(!reads.is_empty(), "continuing reads the tail");
    assert!(
        reads.iter().all(|r| r.start + 1 >= snapshot.position),
        "continuing read before the snapshot: {reads:?}"
    );
    assert_eq!(second.first_seq, first.len);
}

// ---------------------------------------------------------------------------------------------
// Snapshots saved mid-turn

/// The work of `n` tasks a turn, with no `until`: each input plans `n` tasks again and the turn
/// ends when the chain of them is done, so a session can have several long turns.
fn long_work(store: impl Store, n: usize) -> Workflow<Work> {
    let provider = ScriptedProvider::new()
        .fallback("planner", move |_| {
            let tasks: Vec<String> = (0..n).map(|i| format!("task {i}")).collect();
            Reply::output(serde_json::json!({ "tasks": tasks }))
        })
        .fallback("worker", |request| {
            Reply::output(serde_json::json!({ "result": request.prompt.to_uppercase() }))
                .text("working")
        });
    Workflow::builder("work")
        .initial_state(Work::default())
        .agent(Planner)
        .agent(Worker)
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

/// Every snapshot of `session`, oldest first.
async fn all_snapshots(
    store: &impl Store,
    session: &SessionId,
) -> Vec<openharness::adapter::Snapshot> {
    let mut found = Vec::new();
    let mut at_most = u64::MAX;
    while let Some(snapshot) = store.latest_snapshot(session, at_most).await.unwrap() {
        let Some(before) = snapshot.position.checked_sub(1) else {
            found.push(snapshot);
            break;
        };
        at_most = before;
        found.push(snapshot);
    }
    found.reverse();
    found
}

fn json_bytes(value: &impl serde::Serialize) -> u64 {
    serde_json::to_vec(value).unwrap().len() as u64
}

#[tokio::test]
async fn a_long_turn_saves_snapshots_as_it_goes_spaced_by_the_states_size() {
    let store = MemoryStore::new();
    let wf = long_work(store.clone(), 600);
    let outcome = wf.run(RunOptions::new().input("ship")).await.unwrap();
    assert_eq!(outcome.state.results.len(), 600);
    let events = store.all_events(&outcome.session).await.unwrap();
    let snapshots = all_snapshots(&store, &outcome.session).await;
    let positions: Vec<u64> = snapshots.iter().map(|s| s.position).collect();
    // Several mid-turn, and one at the turn's end.
    assert!(snapshots.len() >= 4, "{positions:?} of {}", outcome.len);
    assert_eq!(positions.last(), Some(&outcome.len));
    let mid_turn = &positions[..positions.len() - 1];
    assert!(mid_turn[0] >= 64, "{positions:?}");
    for pair in mid_turn.windows(2) {
        assert!(
            pair[1] - pair[0] >= 64,
            "snapshots too close: {positions:?}"
        );
    }
    // Each is the state after its position's events, as a fold from 0 has it.
    let unsnapshotted = SessionId::new();
    let plain = cut_off(&events, &unsnapshotted).await;
    let reference = long_work(plain, 600);
    for snapshot in &snapshots {
        let folded = reference
            .load_state_at(&unsnapshotted, snapshot.position)
            .await
            .unwrap();
        let saved: Work = serde_json::from_value(snapshot.state.clone()).unwrap();
        assert_eq!(saved, folded, "snapshot at {}", snapshot.position);
    }
    // Spaced by the state's size: between two mid-turn snapshots lie at least four times the
    // first one's bytes of events, so all but the last two (the last mid-turn one and the
    // turn's end) add at most a quarter to the events' bytes, and all of them at most a third.
    let event_bytes: u64 = events.iter().map(json_bytes).sum();
    let snapshot_bytes: Vec<u64> = snapshots.iter().map(|s| json_bytes(&s.state)).collect();
    let spaced: u64 = snapshot_bytes[..snapshot_bytes.len() - 2].iter().sum();
    assert!(
        spaced * 4 <= event_bytes * 11 / 10,
        "snapshots {snapshot_bytes:?} against {event_bytes} bytes of events"
    );
    let all: u64 = snapshot_bytes.iter().sum();
    assert!(
        all * 3 <= event_bytes,
        "snapshots {snapshot_bytes:?} ({all} bytes) against {event_bytes} bytes of events"
    );
}

#[tokio::test]
async fn a_state_read_mid_turn_starts_at_the_nearest_snapshot_and_equals_the_fold_from_0() {
    let spy = spied(Duration::ZERO);
    let wf = long_work(Arc::clone(&spy), 300);
    let outcome = wf.run(RunOptions::new().input("ship")).await.unwrap();
    let session = outcome.session.clone();
    let snapshots = all_snapshots(spy.inner(), &session).await;
    let mid_turn: Vec<u64> = snapshots
        .iter()
        .map(|s| s.position)
        .filter(|p| *p < outcome.len)
        .collect();
    assert!(mid_turn.len() >= 2, "{mid_turn:?}");
    let events = spy.inner().all_events(&session).await.unwrap();
    let unsnapshotted = SessionId::new();
    let reference = long_work(cut_off(&events, &unsnapshotted).await, 300);
    let mut positions: Vec<u64> = (0..=outcome.len).step_by(37).collect();
    for p in &mid_turn {
        positions.extend([p - 1, *p, p + 1]);
    }
    for &p in &positions {
        spy.observer().reads.lock().unwrap().clear();
        let read = wf.load_state_at(&session, p).await.unwrap();
        let folded = reference.load_state_at(&unsnapshotted, p).await.unwrap();
        assert_eq!(read, folded, "at {p}");
        let nearest = snapshots
            .iter()
            .map(|s| s.position)
            .filter(|s| *s <= p)
            .max()
            .unwrap_or(0);
        let reads = spy.observer().reads.lock().unwrap().clone();
        assert!(
            reads.iter().all(|r| r.start >= nearest),
            "at {p}: read {reads:?}, before the snapshot at {nearest}"
        );
    }
    // The same through the one-pass reads.
    let many = wf.states_at(&session, &positions).await.unwrap();
    let expected = reference
        .states_at(&unsnapshotted, &positions)
        .await
        .unwrap();
    assert_eq!(many, expected);
    let p = mid_turn[1] + 3;
    let view = wf.view_at(&session, p).await.unwrap();
    assert_eq!(
        view.state,
        reference.load_state_at(&unsnapshotted, p).await.unwrap()
    );
}

#[tokio::test]
async fn a_crash_after_a_mid_turn_snapshot_resumes_to_the_same_state() {
    // Two long turns, uninterrupted: the reference.
    let spy = spied(Duration::ZERO);
    let wf = long_work(Arc::clone(&spy), 200);
    let first = wf.run(RunOptions::new().input("one")).await.unwrap();
    let session = first.session.clone();
    spy.observer().appended.lock().unwrap().clear();
    let second = wf.send(&session, "two", RunOptions::new()).await.unwrap();
    assert_eq!(second.state.results.len(), 400);
    let full = spy.inner().all_events(&session).await.unwrap();
    let snapshots = all_snapshots(spy.inner(), &session).await;
    // The first turn ended with a snapshot; the second saved some as it went.
    assert!(snapshots.iter().any(|s| s.position == first.len));
    let in_second: Vec<u64> = snapshots
        .iter()
        .map(|s| s.position)
        .filter(|p| *p > first.len && *p < second.len)
        .collect();
    assert!(in_second.len() >= 2, "{in_second:?}");
    // Cut the second turn at each append boundary past its first mid-turn snapshot, keeping
    // the snapshots saved before the cut, as a killed process leaves them.
    let boundaries: Vec<u64> = spy
        .observer()
        .appended
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|b| *b > in_second[0] && *b < second.len)
        .step_by(7)
        .collect();
    assert!(boundaries.len() >= 3, "{boundaries:?}");
    for cut in boundaries {
        let store = cut_off(&full[..cut as usize], &session).await;
        for snapshot in snapshots.iter().filter(|s| s.position <= cut) {
            store.snapshot(&session, snapshot).await.unwrap();
        }
        let resumed = long_work(store.clone(), 200);
        let report = resumed.unfinished(&session).await.unwrap();
        assert!(report.needs_resume(), "cut at {cut}");
        // A resume folds the cut-off turn whole: from the snapshot at its start, passing over
        // the ones saved inside it.
        assert_eq!(report.snapshot_at, first.len, "cut at {cut}");
        let outcome = resumed.resume(&session, RunOptions::new()).await.unwrap();
        assert_eq!(outcome.state, second.state, "cut at {cut}");
        check_log(&store.all_events(&session).await.unwrap());
        // And the session reads back the same after the resume's own snapshots.
        let len = store.session(&session).await.unwrap().unwrap().count;
        assert_eq!(
            resumed.load_state_at(&session, len).await.unwrap(),
            second.state
        );
    }
}

// ---------------------------------------------------------------------------------------------
// One writer per session

/// Whether the turns in `events` never interleave: each `user:input` after the first comes
/// after the previous turn's `workflow:completed`.
fn turns_do_not_interleave(events: &[Envelope]) -> bool {
    let mut in_turn = false;
    for event in events {
        match event.name.as_ref() {
            "user:input" if in_turn => return false,
            "user:input" => in_turn = true,
            "workflow:completed" => in_turn = false,
            _ => {}
        }
    }
    true
}

fn slow_adding() -> ScriptedProvider {
    ScriptedProvider::new().fallback("adder", |request| {
        let amount: i64 = request
            .prompt
            .trim_start_matches("add ")
            .parse()
            .unwrap_or(0);
        Reply::output(serde_json::json!({ "amount": amount })).delay(Duration::from_millis(150))
    })
}

#[tokio::test]
async fn in_one_process_a_second_turn_waits_or_is_refused() {
    let store = MemoryStore::new();
    let provider = slow_adding();
    let wf = tally(store.clone(), provider.clone());
    let first = wf.run(RunOptions::new().input("1")).await.unwrap();
    let session = first.session.clone();
    // Two turns at once: the second waits for the first.
    let (a, b) = tokio::join!(
        wf.send(&session, "2", RunOptions::new()),
        wf.send(&session, "3", RunOptions::new())
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.first_seq, b.first_seq);
    let last = if a.len > b.len { a } else { b };
    assert_eq!(last.state.total, 6);
    let events = store.all_events(&session).await.unwrap();
    assert!(turns_do_not_interleave(&events), "{:?}", names(&events));

    // Refused instead of waiting: the refused turn records nothing and calls no model.
    let calls = provider.calls();
    let running = wf.send(&session, "4", RunOptions::new());
    let refused = async {
        tokio::time::sleep(Duration::from_millis(40)).await;
        wf.send(&session, "5", RunOptions::new().refuse_if_busy())
            .await
    };
    let (ran, refused) = tokio::join!(running, refused);
    let ran = ran.unwrap();
    let err = refused.unwrap_err();
    assert!(matches!(err, Error::SessionBusy { .. }), "{err}");
    assert_eq!(
        provider.calls(),
        calls + 1,
        "only the running turn asked a model"
    );
    assert_eq!(ran.state.total, 10);
    assert_eq!(
        store.all_events(&session).await.unwrap().len() as u64,
        ran.len
    );
}

#[tokio::test]
async fn two_writers_without_a_shared_lock_one_turn_wins_and_the_loser_calls_no_model() {
    // Two workflows built separately (as two processes would be) on one store, whose appends
    // wait a little so both derive the session before either records.
    let store = spied(Duration::from_millis(30));
    let setup = tally(Arc::clone(&store), adding());
    let first = setup.run(RunOptions::new().input("1")).await.unwrap();
    let (pa, pb) = (slow_adding(), slow_adding());
    let (a, b) = (
        tally(store.clone(), pa.clone()),
        tally(store.clone(), pb.clone()),
    );
    let (ra, rb) = tokio::join!(
        a.send(&first.session, "2", RunOptions::new()),
        b.send(&first.session, "3", RunOptions::new())
    );
    let (winner, loser_calls, err) = match (ra, rb) {
        (Ok(won), Err(err)) => (won, pb.calls(), err),
        (Err(err), Ok(won)) => (won, pa.calls(), err),
        (ra, rb) => panic!("exactly one turn must win: {ra:?} / {rb:?}"),
    };
    assert!(matches!(err, Error::SessionBusy { .. }), "{err}");
    assert_eq!(loser_calls, 0, "the loser called no model");
    let events = store.inner().all_events(&first.session).await.unwrap();
    assert_eq!(events.len() as u64, winner.len);
    assert!(turns_do_not_interleave(&events));
    check_log(&events);
}

#[test]
fn two_processes_on_postgresql_one_turn_wins_and_the_loser_calls_no_model() {
    postgres::two_processes();
}

/// The PostgreSQL case: the test binary runs itself twice as child processes that send to one
/// session at the same instant.
mod postgres {
    use std::process::Command;
    use std::time::{SystemTime, UNIX_EPOCH};

    use openharness::store::PostgresStore;

    use super::*;

    const URL_ENV: &str = "OPENHARNESS_TEST_POSTGRES";
    const CHILD_ENV: &str = "OPENHARNESS_TEST_SESSIONS_CHILD";

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    /// The URL, or `None` after saying why the test skips (under `CI=true` an unreachable
    /// server fails it).
    fn server() -> Option<String> {
        let Ok(url) = std::env::var(URL_ENV) else {
            eprintln!("skipped: {URL_ENV} is not set (CI sets it; see .ci/run)");
            return None;
        };
        let reachable =
            runtime().block_on(async { PostgresStore::connect(&url).await.map(|_| ()) });
        match reachable {
            Ok(()) => Some(url),
            Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("{URL_ENV} is set and CI=true, but PostgreSQL is unreachable: {err}")
            }
            Err(err) => {
                eprintln!("skipped: PostgreSQL at {URL_ENV} is unreachable: {err}");
                None
            }
        }
    }

    fn now_ms() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
    }

    /// In a child: waits for the agreed instant, sends, prints `won <len>` or `busy <calls>`.
    #[test]
    fn child_sends_to_a_shared_session() {
        let Ok(spec) = std::env::var(CHILD_ENV) else {
            return;
        };
        let mut parts = spec.split(' ');
        let (schema, session, at) = (
            parts.next().unwrap().to_owned(),
            parts.next().unwrap().parse::<SessionId>().unwrap(),
            parts.next().unwrap().parse::<u128>().unwrap(),
        );
        let url = std::env::var(URL_ENV).unwrap();
        runtime().block_on(async {
            let store = PostgresStore::connect_in_schema(&url, &schema)
                .await
                .unwrap();
            let provider = slow_adding();
            let wf = tally(store, provider.clone());
            let wait = at.saturating_sub(now_ms());
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            let result = wf.send(&session, "2", RunOptions::new()).await;
            println!();
            match result {
                Ok(outcome) => println!("won {}", outcome.len),
                Err(Error::SessionBusy { .. }) => println!("busy {}", provider.calls()),
                Err(other) => println!("error {other}"),
            }
        });
    }

    pub(super) fn two_processes() {
        let Some(url) = server() else {
            return;
        };
        let schema = format!("oh_test_{}", uuid_like());
        let session = runtime().block_on(async {
            let store = PostgresStore::connect_in_schema(&url, &schema)
                .await
                .unwrap();
            tally(store, adding())
                .run(RunOptions::new().input("1"))
                .await
                .unwrap()
                .session
        });
        let exe = std::env::current_exe().unwrap();
        // Both children wait for the same instant, so their turns start together.
        let at = now_ms() + 4000;
        let spawned: Vec<_> = (0..2)
            .map(|_| {
                Command::new(&exe)
                    .args([
                        "--exact",
                        "postgres::child_sends_to_a_shared_session",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env(CHILD_ENV, format!("{schema} {session} {at}"))
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let lines: Vec<String> = spawned
            .into_iter()
            .map(|child| {
                let output = child.wait_with_output().unwrap();
                assert!(output.status.success(), "a child failed: {output:?}");
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .find(|l| {
                        l.starts_with("won ") || l.starts_with("busy ") || l.starts_with("error ")
                    })
                    .unwrap_or("nothing")
                    .to_owned()
            })
            .collect();
        let won = lines.iter().filter(|l| l.starts_with("won ")).count();
        let busy: Vec<&String> = lines.iter().filter(|l| l.starts_with("busy ")).collect();
        assert_eq!((won, busy.len()), (1, 1), "one turn wins: {lines:?}");
        assert_eq!(busy[0], "busy 0", "the loser called no model");
        runtime().block_on(async {
            let store = PostgresStore::connect_in_schema(&url, &schema)
                .await
                .unwrap();
            let events = store.all_events(&session).await.unwrap();
            assert!(turns_do_not_interleave(&events));
            check_log(&events);
            let info = store.session(&session).await.unwrap().unwrap();
            assert_eq!(info.status, SessionStatus::Idle);
        });
    }

    fn uuid_like() -> String {
        EventId::new().to_string().replace('-', "")
    }
}

// ---------------------------------------------------------------------------------------------
// Snapshots a read leaves behind

#[tokio::test]
async fn a_long_read_of_a_session_without_snapshots_leaves_them_behind() {
    // 5,000 inputs appended as an import would: one append, no snapshot.
    let store = MemoryStore::new();
    let session = SessionId::new();
    let mut events = vec![Envelope::new(
        "workflow:started",
        serde_json::json!({ "workflow": "tally" }),
        None,
    )];
    events.extend((0..5_000).map(|i| {
        Envelope::new(
            "user:input",
            serde_json::json!({ "text": format!("ask {i}") }),
            None,
        )
    }));
    store.append(&session, &events, 0).await.unwrap();
    assert!(
        store
            .latest_snapshot(&session, u64::MAX)
            .await
            .unwrap()
            .is_none()
    );

    let wf = tally(store.clone(), adding());
    let state = wf.state_at(&session, 5_001).await.unwrap();
    assert_eq!(state.inputs.len(), 5_000);
    // One snapshot every 1,024 events (written after the read answered): the next read of any
    // stretch folds at most that many.
    let latest = written(&store, &session, 4_096).await;
    assert_eq!(latest.position, 4_096);
    let early = store
        .latest_snapshot(&session, 2_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(early.position, 1_024);
    // What a snapshot holds is the state there.
    let at = wf.state_at(&session, 3_000).await.unwrap();
    assert_eq!(at.inputs.len(), 2_999);
    assert_eq!(
        early.state["inputs"].as_array().unwrap().len(),
        1_023,
        "the snapshot at 1,024: after workflow:started and 1,023 inputs"
    );
    // The batched read leaves the same snapshots (none twice, none wrong).
    let other = SessionId::new();
    store.append(&other, &events, 0).await.unwrap();
    let states = wf.states_at(&other, &[10, 2_500, 5_001]).await.unwrap();
    assert_eq!(states[2].1.inputs.len(), 5_000);
    assert_eq!(written(&store, &other, 4_096).await.position, 4_096);
    let early = store.latest_snapshot(&other, 2_000).await.unwrap().unwrap();
    assert_eq!(early.position, 1_024);
}

/// The latest snapshot of `session` once one at `position` is written.
async fn written(
    store: &MemoryStore,
    session: &SessionId,
    position: u64,
) -> openharness::adapter::Snapshot {
    let what = format!("a snapshot at {position} of {session}");
    eventually(LIMIT, &what, || async {
        match store.latest_snapshot(session, u64::MAX).await.unwrap() {
            Some(snapshot) if snapshot.position >= position => Ok(snapshot),
            other => Err(other.map(|snapshot| snapshot.position)),
        }
    })
    .await
}
