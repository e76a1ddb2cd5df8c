//! The host: workflows by name over one store, turns, states, tape views, diffs, forks, pages
//! of events, sessions with lineage and status, cancellation, and sessions it cannot fold.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness_host::{ForkPoint, Host, HostError};
use openharness_testkit::notes::{Notes, Scribe};
use openharness_testkit::{LIMIT, eventually};

fn notes(name: &str, delay: Duration) -> Workflow<Notes> {
    Workflow::builder(name)
        .initial_state(Notes::default())
        .agent(Scribe)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new().fallback("scribe", move |request| {
            Reply::output(serde_json::json!({ "note": request.prompt.to_uppercase() })).delay(delay)
        }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_host_runs_continues_forks_and_reads_any_registered_workflow() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone())
        .workflow(notes("notes", Duration::ZERO))
        .unwrap()
        .workflow(notes("journal", Duration::ZERO))
        .unwrap();
    assert_eq!(host.workflow_names(), ["journal", "notes"]);
    let duplicate = host.clone().workflow(notes("notes", Duration::ZERO));
    assert!(matches!(duplicate, Err(HostError::DuplicateWorkflow(ref n)) if n == "notes"));
    let unknown = host
        .run("diary", None, RunOptions::new())
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("`journal`, `notes`"),
        "{unknown}"
    );

    // Turns by name, recorded to the host's store.
    let first = host
        .run("notes", Some("a".into()), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(first.state, serde_json::json!({ "notes": ["A"] }));
    let second = host
        .send(&first.session, "b".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(second.first_seq, first.len);
    assert_eq!(second.state["notes"], serde_json::json!(["A", "B"]));
    assert_eq!(
        store.all_events(&first.session).await.unwrap().len() as u64,
        second.len
    );

    // States at several positions, in the order asked, equal to one at a time.
    let asked = [second.len, 0, first.len, second.len + 100];
    let states = host.states_at(&first.session, &asked).await.unwrap();
    let positions: Vec<u64> = states.iter().map(|s| s.position).collect();
    assert_eq!(positions, [second.len, 0, first.len, second.len]);
    for state in &states {
        assert_eq!(
            state.state,
            host.state_at(&first.session, state.position).await.unwrap()
        );
    }
    assert_eq!(states[1].state, serde_json::json!({ "notes": [] }));

    // A tape view, a diff and chat messages at a position.
    let start = host.tape_view(&first.session, 0).await.unwrap();
    assert!(start.current.is_none());
    let end = host.tape_view(&first.session, u64::MAX).await.unwrap();
    assert_eq!(end.position, second.len);
    assert_eq!(end.current.as_ref().unwrap().seq, second.len - 1);
    assert_eq!(
        end.current.as_ref().unwrap().event.name,
        "workflow:completed"
    );
    let patch = host
        .diff(&first.session, first.len, second.len)
        .await
        .unwrap();
    assert_eq!(patch.0.len(), 1, "{patch:?}");
    let messages = host.messages_at(&first.session, first.len).await.unwrap();
    assert_eq!(messages.first().map(|m| m.content.as_str()), Some("a"));

    // Pages of events cover the session once, in order.
    let mut seqs = Vec::new();
    let mut after = None;
    loop {
        let page = host.events(&first.session, after, 3).await.unwrap();
        seqs.extend(page.events.iter().map(|r| r.seq));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seqs, (0..second.len).collect::<Vec<_>>());

    // A fork: its owner is its parent's workflow, and it is hosted.
    let fork = host
        .fork(
            &first.session,
            ForkPoint::Nth {
                name: "user:input".into(),
                n: 2,
            },
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(fork.state["notes"], serde_json::json!(["A", "B"]));
    let child = host.session(&fork.session).await.unwrap();
    assert_eq!(child.parent.as_ref(), Some(&first.session));
    assert_eq!(child.workflow.as_deref(), Some("notes"));
    assert!(child.hosted);
    // Listed with what its events say, as read alone; the plain list has the store's part.
    let listed = host
        .query_sessions(&openharness_host::SessionQuery::default())
        .await
        .unwrap()
        .sessions;
    let listed_child = listed.iter().find(|s| s.id == fork.session).unwrap();
    assert_eq!(listed_child, &child);
    assert_eq!(child.agents, ["scribe"]);
    let plain = host.sessions().await.unwrap();
    let plain_child = plain.iter().find(|s| s.id == fork.session).unwrap();
    assert_eq!(
        (plain_child.len, &plain_child.parent, plain_child.status),
        (child.len, &child.parent, child.status)
    );
    let grown = host
        .send(&fork.session, "c".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(grown.state["notes"], serde_json::json!(["A", "B", "C"]));
}

/// The ids `host` lists.
async fn listed_ids(host: &Host) -> Vec<SessionId> {
    host.sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect()
}

#[tokio::test]
async fn unlisted_sessions_are_left_out_of_lists_and_still_read_by_id() {
    let store = MemoryStore::new();
    let workflow = notes("notes", Duration::ZERO).with_store(store.clone());
    let listed = workflow.run(RunOptions::new().input("a")).await.unwrap();
    let internal = workflow.run(RunOptions::new().input("b")).await.unwrap();
    let host = Host::new(store.clone())
        .workflow(notes("notes", Duration::ZERO))
        .unwrap()
        .unlisted(internal.session.clone());
    assert_eq!(
        listed_ids(&host).await,
        std::slice::from_ref(&listed.session)
    );
    assert_eq!(
        host.session(&internal.session).await.unwrap().len,
        internal.len
    );
    // A copy made for another provider keeps the list.
    let copy = host.with_provider(std::sync::Arc::new(
        openharness_provider::ScriptedProvider::new(),
    ));
    assert_eq!(copy.sessions().await.unwrap().len(), 1);

    // A family of internal sessions by id prefix (experiments' logs): left out of lists and
    // of queries, still read by id.
    let log: SessionId = "eval:wording".parse().unwrap();
    workflow
        .run(RunOptions::new().session(log.clone()).input("c"))
        .await
        .unwrap();
    let host = host.unlisted_prefix("eval:");
    assert_eq!(
        listed_ids(&host).await,
        std::slice::from_ref(&listed.session)
    );
    let page = host
        .query_sessions(&openharness_host::SessionQuery::default())
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert!(host.session(&log).await.is_ok());
}

#[tokio::test]
async fn sessions_of_other_workflows_are_listed_and_read_but_not_folded() {
    let store = MemoryStore::new();
    let other = notes("elsewhere", Duration::ZERO).with_store(store.clone());
    let recorded = other.run(RunOptions::new().input("x")).await.unwrap();
    let host = Host::new(store.clone())
        .workflow(notes("notes", Duration::ZERO))
        .unwrap();
    let summary = host.session(&recorded.session).await.unwrap();
    assert_eq!(summary.workflow.as_deref(), Some("elsewhere"));
    assert!(!summary.hosted);
    let page = host.events(&recorded.session, None, 100).await.unwrap();
    assert_eq!(page.events.len() as u64, recorded.len);
    let err = host.state_at(&recorded.session, 1).await.unwrap_err();
    match &err {
        HostError::Unhosted {
            recorded: Some(name),
            known,
            ..
        } => assert_eq!(
            (name.as_str(), known.as_slice()),
            ("elsewhere", ["notes".to_owned()].as_slice())
        ),
        other => panic!("expected Unhosted, got {other}"),
    }
    let missing = SessionId::new();
    assert!(matches!(
        host.events(&missing, None, 10).await,
        Err(HostError::SessionNotFound(_))
    ));
}

#[tokio::test]
async fn a_host_cancels_the_turn_it_runs() {
    let host = Host::new(MemoryStore::new())
        .workflow(notes("notes", Duration::from_secs(30)))
        .unwrap();
    let session = SessionId::new();
    let running = {
        let host = host.clone();
        let session = session.clone();
        tokio::spawn(async move {
            host.run(
                "notes",
                Some("slow".into()),
                RunOptions::new().session(session),
            )
            .await
        })
    };
    eventually(LIMIT, "the turn's agent call to start", || async {
        let started = host.is_running(&session)
            && host
                .events(&session, None, 10)
                .await
                .is_ok_and(|p| p.events.iter().any(|r| r.event.name == "agent:started"));
        if started { Ok(()) } else { Err("not yet") }
    })
    .await;
    assert!(host.cancel(&session).await, "the turn is running");
    let outcome = running.await.unwrap().unwrap();
    assert_eq!(outcome.reason, StopReason::Cancelled);
    // The stop is an event of the log, before the turn's end.
    let page = host.events(&session, None, 100).await.unwrap();
    let names: Vec<&str> = page.events.iter().map(|r| r.event.name.as_ref()).collect();
    let stop = names.iter().position(|name| *name == "stop:requested");
    assert!(stop.is_some_and(|at| at + 1 < names.len()), "{names:?}");
    assert_eq!(names.last(), Some(&"workflow:completed"));
    eventually(LIMIT, "the host to give the session up", || async {
        if host.is_running(&session) {
            Err("still running")
        } else {
            Ok(())
        }
    })
    .await;
    assert!(!host.cancel(&session).await, "nothing runs any more");
}

#[tokio::test]
async fn registered_handles_record_to_the_hosts_store_and_with_provider_swaps_the_model() {
    let store = MemoryStore::new();
    // A handle built on its own store, registered later: it records to the host's.
    let handle = <dyn openharness_host::Hosted>::of(notes("notes", Duration::ZERO));
    let host = Host::new(store.clone()).register(handle).unwrap();
    let duplicate = host
        .clone()
        .register(<dyn openharness_host::Hosted>::of(notes(
            "notes",
            Duration::ZERO,
        )));
    assert!(matches!(duplicate, Err(HostError::DuplicateWorkflow(ref n)) if n == "notes"));
    let own = host
        .run("notes", Some("milk".into()), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(own.state["notes"], serde_json::json!(["MILK"]));
    assert!(store.session(&own.session).await.unwrap().is_some());

    // Another model for one turn: the copy shares the store; the original keeps its model.
    let other = ScriptedProvider::new().fallback("scribe", |request| {
        Reply::output(serde_json::json!({ "note": format!("other: {}", request.prompt) }))
    });
    let swapped = host.with_provider(std::sync::Arc::new(other.clone()));
    let next = swapped
        .send(&own.session, "eggs".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(
        next.state["notes"],
        serde_json::json!(["MILK", "other: eggs"])
    );
    assert_eq!(other.calls(), 1);
    let last = host
        .send(&own.session, "tea".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(
        last.state["notes"],
        serde_json::json!(["MILK", "other: eggs", "TEA"])
    );
    assert_eq!(other.calls(), 1, "the original host kept its own model");
}

/// A workflow of `notes` without its agent: another fingerprint (the agents are part of it).
fn notes_without_agents(name: &str) -> Workflow<Notes> {
    Workflow::builder(name)
        .initial_state(Notes::default())
        .store(MemoryStore::new())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_session_says_which_code_recorded_it_and_the_host_says_when_todays_differs() {
    let store = MemoryStore::new();
    let recorded = notes("notes", Duration::ZERO);
    let v1 = Workflow::builder("notes")
        .version("1.0.0")
        .commit("abc123")
        .initial_state(Notes::default())
        .agent(Scribe)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new().fallback("scribe", |_| {
            Reply::output(serde_json::json!({ "note": "x" }))
        }))
        .build()
        .unwrap();
    assert_eq!(
        v1.code().code,
        recorded.code().code,
        "version and commit are not in the fingerprint"
    );
    assert_eq!(v1.code().code.len(), 16);
    assert_ne!(
        notes_without_agents("notes").code().code,
        recorded.code().code
    );

    let host = Host::new(store.clone()).workflow(v1.clone()).unwrap();
    let first = host
        .run("notes", Some("hi".into()), RunOptions::new())
        .await
        .unwrap();
    let started = store.events(&first.session, 0..1).await.unwrap().remove(0);
    let started = started.decode::<WorkflowStarted>().unwrap();
    assert_eq!(started.code.as_deref(), Some(v1.code().code.as_str()));
    assert_eq!(started.version.as_deref(), Some("1.0.0"));
    assert_eq!(started.commit.as_deref(), Some("abc123"));
    assert_eq!(host.code_changed(&first.session).await.unwrap(), None);

    // The same session read by a host running other code: a version bump, then other agents.
    let bumped = Host::new(store.clone()).workflow(recorded.clone()).unwrap();
    let change = bumped.code_changed(&first.session).await.unwrap().unwrap();
    assert_eq!(change.recorded_version.as_deref(), Some("1.0.0"));
    assert_eq!(change.today_version, None);
    assert_eq!(
        change.to_string(),
        format!(
            "recorded by code {c}, version 1.0.0, commit abc123; this program runs code {c}",
            c = v1.code().code
        )
    );
    let other = Host::new(store.clone())
        .workflow(notes_without_agents("notes"))
        .unwrap();
    let change = other.code_changed(&first.session).await.unwrap().unwrap();
    assert_ne!(change.recorded, Some(change.today.clone()));

    // A fork is judged by the code that started its lineage.
    let fork = host
        .fork(
            &first.session,
            ForkPoint::Position { position: 2 },
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert!(bumped.code_changed(&fork.session).await.unwrap().is_some());
    assert_eq!(host.code_changed(&fork.session).await.unwrap(), None);
}
