//! A fork from any position lives: both examples are recorded (the planner-executor demo with
//! its approval answered "yes", the chat with its three demo messages), then forked through
//! the host at EVERY position `0..=n` and each fork is run to its end with the host's own
//! offline model. Each fork must finish (no agent call left open, no task left running, no
//! exchange left unanswered), reach the state a fresh continuation from that point reaches,
//! ask the model only for the calls not completed before the fork point, and re-execute from
//! its own recording (a cassette) with no model. Forks made inside a call are forked again at
//! every position too.

use std::collections::HashMap;
use std::sync::Arc;

use openharness::builtin::{AgentCompleted, AgentStarted, SessionForked};
use openharness::host::{ForkPoint, Host, TurnOutcome};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::tape::Cassette;
use openharness::{EventId, Store};
use openharness_example_chat::{self as chat, ChatState};
use openharness_example_planner_executor::{self as demo, PlanState, Release, TaskStatus};
use serde_json::Value;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;
type WorkflowResult<S> = std::result::Result<Workflow<S>, openharness::Error>;

/// The demo's script, answered from each prompt instead of by call order, so a fork asking for
/// any task gets the answer the demo's own run got for it (the demo's script is positional:
/// it fits the first run only).
fn demo_model() -> ScriptedProvider {
    const TASKS: [&str; 3] = [
        "Write the changelog",
        "Tag the release in git",
        "Publish the crate",
    ];
    const REPORTS: [&str; 3] = [
        "Summarised the 14 merged pull requests into CHANGELOG.md under 0.1.0.",
        "Created the annotated tag v0.1.0 on the release commit.",
        "Published version 0.1.0 and checked that it installs cleanly.",
    ];
    ScriptedProvider::new()
        .fallback(demo::Planner::NAME, |_| {
            Reply::output(serde_json::json!({ "tasks": TASKS }))
                .text("Three steps get a first release out: changelog, tag, publish.")
        })
        .fallback(demo::Executor::NAME, |request| {
            let index = TASKS
                .iter()
                .position(|task| request.prompt.contains(task))
                .unwrap_or(0);
            let report = REPORTS[index];
            Reply::output(serde_json::json!({ "summary": report }))
                .text(format!("Working on it. {report}"))
        })
}

/// A host over `store` with `workflow` registered, asking `model`.
fn host<S: openharness::WorkflowState>(
    store: &MemoryStore,
    workflow: impl FnOnce(MemoryStore) -> WorkflowResult<S>,
) -> Result<Host> {
    Ok(Host::new(store.clone()).workflow(workflow(store.clone())?)?)
}

/// The positions at which each recorded agent call's final record (the events made from its
/// output, ending with its `agent:completed`) begins, for the calls that completed: a fork at
/// a position after that keeps the call; one at or before it asks the model again.
fn final_record_starts(events: &[openharness::Envelope]) -> Vec<u64> {
    let streamed = ["text:delta", "tool:called", "tool:result", "agent:started"];
    let mut starts = Vec::new();
    for (index, event) in events.iter().enumerate() {
        // A call closed as interrupted (by a fork or a resume) made no model call: skipped.
        if event.name != AgentCompleted::NAME || event.payload["outcome"] == "interrupted" {
            continue;
        }
        let mut start = index;
        while start > 0 {
            let before = &events[start - 1];
            if before.caused_by != event.caused_by
                || streamed.contains(&before.name.as_ref())
                || before.name == AgentCompleted::NAME
            {
                break;
            }
            start -= 1;
        }
        starts.push(start as u64);
    }
    starts
}

/// Checks that no agent call is left open in the fork's history: the parent's events before
/// the fork point followed by the fork's own (every `agent:started` has its `agent:completed`,
/// for the same agent and trigger).
fn assert_no_call_left_open(
    prefix: &[openharness::Envelope],
    child: &[openharness::Envelope],
    what: &str,
) {
    let mut open: HashMap<(Option<EventId>, String), i64> = HashMap::new();
    for event in prefix.iter().chain(child) {
        if let Ok(started) = event.decode::<AgentStarted>()
            && event.name == AgentStarted::NAME
        {
            *open.entry((event.caused_by, started.agent)).or_default() += 1;
        }
        if let Ok(completed) = event.decode::<AgentCompleted>()
            && event.name == AgentCompleted::NAME
        {
            *open.entry((event.caused_by, completed.agent)).or_default() -= 1;
        }
    }
    let left: Vec<_> = open.iter().filter(|(_, n)| **n != 0).collect();
    assert!(left.is_empty(), "{what}: agent calls left open: {left:?}");
}

/// The requests open after `history` (asked and not answered yet).
fn open_requests(history: &[openharness::Envelope]) -> Vec<EventId> {
    let mut open = Vec::new();
    for event in history {
        match event.name.as_ref() {
            "input:requested" => open.push(event.id),
            "input:received" => {
                if let Some(answered) = event.payload["requestId"]
                    .as_str()
                    .and_then(|id| id.parse::<EventId>().ok())
                {
                    open.retain(|id| *id != answered);
                }
            }
            _ => {}
        }
    }
    open
}

/// A recorded session to fork everywhere: its events, and the history it inherits (its
/// ancestors' events before the fork points, empty for a root session).
struct Forked {
    session: openharness::SessionId,
    events: Vec<openharness::Envelope>,
    inherited: Vec<openharness::Envelope>,
}

impl Forked {
    async fn root(store: &MemoryStore, session: &openharness::SessionId) -> Result<Self> {
        Ok(Self {
            session: session.clone(),
            events: store.all_events(session).await?,
            inherited: Vec::new(),
        })
    }

    /// The fork of this session at `position` whose latest turn is `outcome`.
    async fn child(
        &self,
        store: &MemoryStore,
        position: u64,
        outcome: &TurnOutcome,
    ) -> Result<Self> {
        let mut inherited = self.inherited.clone();
        inherited.extend_from_slice(&self.events[..usize::try_from(position)?]);
        Ok(Self {
            session: outcome.session.clone(),
            events: store.all_events(&outcome.session).await?,
            inherited,
        })
    }

    fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// The history up to `position`: what it inherits and its first `position` events.
    fn history(&self, position: u64) -> Vec<openharness::Envelope> {
        let mut history = self.inherited.clone();
        history.extend_from_slice(&self.events[..usize::try_from(position).unwrap_or(usize::MAX)]);
        history
    }
}

/// Forks `parent` at `position` through `host` and checks what every fork is checked for,
/// whatever the example: it starts where asked, leaves no agent call open, recorded no error,
/// and waits for the requests open at the fork point. The fork's first turn.
async fn fork_at(
    store: &MemoryStore,
    host: &Host,
    parent: &Forked,
    position: u64,
) -> Result<TurnOutcome> {
    let outcome = host
        .fork(
            &parent.session,
            ForkPoint::Position { position },
            RunOptions::new(),
        )
        .await?;
    let child = store.all_events(&outcome.session).await?;
    let forked = child[0].decode::<SessionForked>()?;
    assert_eq!(forked.position, position);
    let history = parent.history(position);
    assert_no_call_left_open(&history, &child, &format!("fork at {position}"));
    assert_ne!(
        outcome.reason,
        StopReason::MaxEvents,
        "fork at {position} ran away"
    );
    assert_eq!(outcome.errors, 0, "fork at {position} recorded errors");
    let open = open_requests(&history);
    if !open.is_empty() {
        // Inside the human-in-the-loop wait: the fork waits like its parent did.
        assert_eq!(
            outcome.reason,
            StopReason::WaitingForInput,
            "fork at {position}"
        );
        assert_eq!(outcome.open_requests, open, "fork at {position}");
    }
    Ok(outcome)
}

/// What every fork is checked for once continued to its end: it reached `expected`, and it
/// re-executes from its own recording (a cassette of `workflow`, given no model) to the same
/// state.
async fn check_finished<S>(
    store: &MemoryStore,
    workflow: impl FnOnce(MemoryStore, ScriptedProvider) -> WorkflowResult<S>,
    position: u64,
    outcome: &TurnOutcome,
    expected: &S,
) -> Result<()>
where
    S: openharness::WorkflowState + PartialEq + std::fmt::Debug,
{
    let finished: S = serde_json::from_value(outcome.state.clone())?;
    assert_eq!(&finished, expected, "fork at {position}");
    let offline = workflow(store.clone(), ScriptedProvider::new())?;
    let replayed = Cassette::load(&offline, &outcome.session)
        .await?
        .replay(&offline, RunOptions::new())
        .await?;
    assert_eq!(&replayed.state, expected, "fork at {position}: re-executed");
    Ok(())
}

/// The position right after the `nth` (from 0) `agent:started` of `events`, plus `offset`:
/// a fork point inside that call.
fn inside_call(events: &[openharness::Envelope], nth: usize, offset: u64) -> Option<u64> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == AgentStarted::NAME)
        .nth(nth)
        .map(|(index, _)| index as u64 + offset)
}

/// Forks the demo session `parent` at every position and runs each fork to its end as the
/// demo would (the goal if it has none, "yes" when asked); returns how many completed agent
/// calls the forks kept, and the fork made inside the third agent call (if there is one).
async fn fork_demo_everywhere(
    store: &MemoryStore,
    host: &Host,
    model: &ScriptedProvider,
    parent: &Forked,
    expected: &PlanState,
) -> Result<(usize, Option<Forked>)> {
    let starts = final_record_starts(&parent.events);
    let third_call = inside_call(&parent.events, 2, 2);
    let mut kept_calls = 0;
    let mut inside = None;
    for position in 0..=parent.len() {
        let calls_before = model.calls();
        let mut outcome = fork_at(store, host, parent, position).await?;
        let state: PlanState = serde_json::from_value(outcome.state.clone())?;
        // The fork finished what was under way: it is not idle with work left.
        if state.goal.is_none() {
            assert_eq!(outcome.reason, StopReason::Idle, "fork at {position}");
        } else {
            assert!(
                state.is_done() && state.tasks.iter().all(|t| t.status == TaskStatus::Done),
                "fork at {position} ended {:?} with tasks {:?}",
                outcome.reason,
                state.tasks
            );
        }
        // Continue it as the demo would: the goal if it has none yet, "yes" when asked.
        if state.goal.is_none() {
            outcome = host
                .send(&outcome.session, demo::DEMO_GOAL.into(), RunOptions::new())
                .await?;
        }
        if let Some(&open) = outcome.open_requests.first() {
            assert_eq!(outcome.reason, StopReason::WaitingForInput);
            outcome = host
                .respond(&outcome.session, open, "yes".into(), RunOptions::new())
                .await?;
        }
        if Some(position) == third_call {
            inside = Some(parent.child(store, position, &outcome).await?);
        }
        check_finished(store, demo::workflow, position, &outcome, expected).await?;
        assert!(outcome.open_requests.is_empty(), "fork at {position}");
        // The model was asked only for the calls not completed before the fork point.
        let expected_calls = starts.iter().filter(|&&start| start >= position).count();
        assert_eq!(
            model.calls() - calls_before,
            expected_calls,
            "fork at {position}: model calls"
        );
        kept_calls += starts.len() - expected_calls;
    }
    Ok((kept_calls, inside))
}

#[tokio::test]
async fn every_fork_of_the_demo_finishes_and_publishes_after_the_answer() -> Result {
    let store = MemoryStore::new();
    let model = demo_model();
    let fork_model = model.clone();
    let host = host(&store, |store| demo::workflow(store, model))?;
    // Recorded as `openharness demo` records it: the demo's own script, answered "yes".
    let recorder = host.with_provider(Arc::new(demo::scripted_provider()));
    let asked = recorder
        .run(
            demo::WORKFLOW_NAME,
            Some(demo::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await?;
    assert_eq!(asked.reason, StopReason::WaitingForInput);
    let request = asked.open_requests[0];
    let done = recorder
        .respond(&asked.session, request, "yes".into(), RunOptions::new())
        .await?;
    let expected: PlanState = serde_json::from_value(done.state.clone())?;
    assert_eq!(expected.release, Some(Release::Published));
    let parent = Forked::root(&store, &done.session).await?;
    assert!(
        parent.len() > 20,
        "the demo records more than a handful of events"
    );
    assert_eq!(
        final_record_starts(&parent.events).len(),
        4,
        "a planner call and three executor calls"
    );

    let (kept, inside) =
        fork_demo_everywhere(&store, &host, &fork_model, &parent, &expected).await?;
    let inside = inside.ok_or("no fork inside the third agent call")?;
    // Forks kept (never re-asked) a completed call many times over.
    assert!(kept > 40, "{kept}");
    // A fork of a fork lives too: fork, at every position, the fork made inside a call.
    assert!(
        inside
            .events
            .iter()
            .any(|e| e.payload["outcome"] == "interrupted")
    );
    fork_demo_everywhere(&store, &host, &fork_model, &inside, &expected).await?;
    Ok(())
}

/// Forks the chat session `parent` at every position, runs each fork and sends it the demo
/// messages it has not seen; returns the fork made inside the second assistant call (if
/// there is one).
async fn fork_chat_everywhere(
    store: &MemoryStore,
    host: &Host,
    model: &ScriptedProvider,
    parent: &Forked,
    expected: &ChatState,
) -> Result<Option<Forked>> {
    let starts = final_record_starts(&parent.events);
    let second_call = inside_call(&parent.events, 1, 1);
    let mut inside = None;
    for position in 0..=parent.len() {
        let calls_before = model.calls();
        let mut outcome = fork_at(store, host, parent, position).await?;
        let state: ChatState = serde_json::from_value(outcome.state.clone())?;
        // Every message the fork holds is answered: none is left waiting for its reply.
        assert!(
            state.exchanges.iter().all(|e| e.reply.is_some()),
            "fork at {position} ended {:?} with {:?}",
            outcome.reason,
            state.exchanges
        );
        assert_eq!(outcome.reason, StopReason::Idle, "fork at {position}");
        // The replies so far are the ones the parent got.
        assert_eq!(
            state.exchanges,
            expected.exchanges[..state.exchanges.len()],
            "fork at {position}"
        );
        // A fresh continuation: the messages the fork has not seen yet.
        for message in &chat::DEMO_MESSAGES[state.exchanges.len()..] {
            outcome = host
                .send(&outcome.session, (*message).into(), RunOptions::new())
                .await?;
        }
        if Some(position) == second_call {
            inside = Some(parent.child(store, position, &outcome).await?);
        }
        check_finished(store, chat::workflow, position, &outcome, expected).await?;
        let expected_calls = starts.iter().filter(|&&start| start >= position).count();
        assert_eq!(
            model.calls() - calls_before,
            expected_calls,
            "fork at {position}: model calls"
        );
    }
    Ok(inside)
}

#[tokio::test]
async fn every_fork_of_the_chat_finishes_its_exchange_and_continues_the_same_conversation() -> Result
{
    let store = MemoryStore::new();
    let model = chat::scripted_provider();
    let counted = model.clone();
    let host = host(&store, |store| chat::workflow(store, model))?;
    let mut outcome = host
        .run(
            chat::WORKFLOW_NAME,
            Some(chat::DEMO_MESSAGES[0].into()),
            RunOptions::new(),
        )
        .await?;
    for message in &chat::DEMO_MESSAGES[1..] {
        outcome = host
            .send(&outcome.session, (*message).into(), RunOptions::new())
            .await?;
    }
    let expected: ChatState = serde_json::from_value(outcome.state.clone())?;
    assert_eq!(expected.exchanges.len(), 3);
    assert!(expected.exchanges.iter().all(|e| e.reply.is_some()));
    let parent = Forked::root(&store, &outcome.session).await?;
    assert_eq!(
        final_record_starts(&parent.events).len(),
        3,
        "one assistant call per message"
    );

    let inside = fork_chat_everywhere(&store, &host, &counted, &parent, &expected)
        .await?
        .ok_or("no fork inside the second assistant call")?;
    assert!(
        inside
            .events
            .iter()
            .any(|e| e.payload["outcome"] == "interrupted")
    );
    // A fork of a fork lives too.
    fork_chat_everywhere(&store, &host, &counted, &inside, &expected).await?;
    Ok(())
}

#[tokio::test]
async fn a_fork_inside_a_call_closes_it_as_interrupted_and_runs_it_again_from_its_start() -> Result
{
    let store = MemoryStore::new();
    let model = demo_model();
    let host = host(&store, |store| demo::workflow(store, model))?;
    let asked = host
        .run(
            demo::WORKFLOW_NAME,
            Some(demo::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await?;
    let parent = asked.session;
    let events = store.all_events(&parent).await?;
    // Among the second executor call's deltas.
    let started = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == AgentStarted::NAME)
        .nth(2)
        .map(|(index, _)| index)
        .ok_or("no third agent call")?;
    let position = started as u64 + 2;
    assert_eq!(events[started + 1].name, "text:delta");
    let fork = host
        .fork(&parent, ForkPoint::Position { position }, RunOptions::new())
        .await?;
    assert_eq!(fork.reason, StopReason::WaitingForInput);
    let child = store.all_events(&fork.session).await?;
    // The cut call is closed as interrupted, under its trigger, then started again.
    let trigger = events[started].caused_by;
    let closed = child[1].decode::<AgentCompleted>()?;
    assert_eq!(child[1].name, AgentCompleted::NAME);
    assert_eq!(child[1].caused_by, trigger);
    assert_eq!(closed.outcome, openharness::builtin::Outcome::Interrupted);
    assert!(
        closed
            .error
            .as_deref()
            .is_some_and(|e| e.contains(&format!("at position {position}"))),
        "{closed:?}"
    );
    assert_eq!(child[2].name, AgentStarted::NAME);
    assert_eq!(child[2].caused_by, trigger);
    assert_eq!(
        child[2].decode::<AgentStarted>()?.prompt,
        events[started].decode::<AgentStarted>()?.prompt
    );
    // The fork's log folds to its outcome from the parent's state at the fork point.
    let hosted = host.state_at(&fork.session, u64::MAX).await?;
    assert_eq!(hosted, fork.state);
    let waiting: Value = fork.state;
    assert_eq!(waiting["completed"], 3);
    Ok(())
}
