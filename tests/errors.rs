//! Every error of the facade composes with `?` into `openharness::Error`: a store's, a tape's,
//! a host's, an import's and export's, a provider's.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::adapter::ErrorChain;
use openharness::host::{Host, HostError};
use openharness::prelude::*;
use openharness::provider::ScriptedProvider;
use openharness::store::{MemoryStore, RedbStore, jsonl};
use openharness::tape::At;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Nothing;

#[event]
enum NoEvent {
    UserInput,
}

#[handler(NoEvent)]
impl Nothing {
    fn input(&mut self, _input: &UserInput) {}
}

fn workflow(store: impl Store) -> Workflow<Nothing> {
    Workflow::builder("nothing")
        .initial_state(Nothing)
        .store(store)
        .provider(ScriptedProvider::new())
        .build()
        .unwrap()
}

/// What a user's `main` looks like: every step's error goes through `?`.
async fn program(dir: &std::path::Path, session: &SessionId) -> Result<(), openharness::Error> {
    let store = RedbStore::open(dir.join("store.redb"))?; // a store's own error
    let wf = workflow(store.clone());
    let outcome = wf.run(RunOptions::new().input("hi")).await?; // the workflow's
    wf.fork(&outcome.session, At::nth("no:such", 1)).await?; // a tape's
    let host = Host::new(store).workflow(wf)?; // a host's
    host.state_at(session, 1).await?;
    jsonl::export(&MemoryStore::new(), session, Vec::new()).await?; // an export's
    Ok(())
}

#[tokio::test]
async fn errors_compose_into_the_facade_error_with_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    // The fork point does not exist: a tape error, as `Error::Other`.
    let err = program(dir.path(), &SessionId::new()).await.unwrap_err();
    assert!(matches!(err, openharness::Error::Other(_)), "{err:?}");
    assert!(err.to_string().contains("no fork point"), "{err}");

    // A store that cannot be opened (its folder is a file): `Error::Store`.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let err = program(&blocked, &SessionId::new()).await.unwrap_err();
    assert!(matches!(err, openharness::Error::Store { .. }), "{err:?}");
    assert!(err.to_string().starts_with("the store failed"), "{err}");

    // A host's workflow error stays the workflow error it was.
    let host_err = HostError::Workflow(openharness::Error::SessionNotFound(SessionId::new()));
    assert!(matches!(
        openharness::Error::from(host_err),
        openharness::Error::SessionNotFound(_)
    ));
}

/// The messages of `err` and of each of its causes, top first.
fn chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut messages = Vec::new();
    let mut cause = Some(err);
    while let Some(err) = cause {
        messages.push(err.to_string());
        cause = err.source();
    }
    messages
}

/// No message of the chain repeats the message of one of its causes, so a reporter that
/// prints the chain (`ErrorChain`, anyhow's `{:#}`) prints each cause once.
fn assert_each_cause_once(err: &(dyn std::error::Error + 'static)) {
    let messages = chain(err);
    assert!(
        messages.len() >= 2,
        "a composed error has a cause: {messages:?}"
    );
    for (i, outer) in messages.iter().enumerate() {
        for inner in &messages[i + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "{outer:?} repeats its cause {inner:?} (chain {messages:?})"
            );
        }
    }
    let printed = ErrorChain(err).to_string();
    for message in &messages {
        assert_eq!(printed.matches(message.as_str()).count(), 1, "{printed}");
    }
    assert_eq!(printed, messages.join(": "));
}

#[tokio::test]
async fn each_cause_is_in_an_error_chain_once() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let reason = std::fs::create_dir_all(&blocked).unwrap_err().to_string();

    // A store that cannot be created: the store's error, then the operating system's.
    let store_err = RedbStore::open(blocked.join("store.redb")).unwrap_err();
    assert_each_cause_once(&store_err);

    // Through `?` into the facade's error: one more layer, the same causes.
    let err = openharness::Error::from(RedbStore::open(blocked.join("store.redb")).unwrap_err());
    assert_each_cause_once(&err);
    let printed = ErrorChain(&err).to_string();
    assert!(
        printed.starts_with("the store failed: cannot create the directory"),
        "{printed}"
    );
    assert!(printed.ends_with(&reason), "{printed}");

    // A host's store failure, and an export's.
    let host_err = HostError::Store {
        store: "redb:blocked".into(),
        source: RedbStore::open(blocked.join("store.redb")).unwrap_err(),
    };
    assert_each_cause_once(&host_err);
    let export_err = jsonl::TransferError::Store {
        line: Some(3),
        store: "redb:blocked".into(),
        source: RedbStore::open(blocked.join("store.redb")).unwrap_err(),
    };
    assert_each_cause_once(&export_err);
    let printed = ErrorChain(&export_err).to_string();
    assert_eq!(printed.matches(&reason).count(), 1, "{printed}");
}
