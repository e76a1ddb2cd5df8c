//! Every error of the facade composes with `?` into `openharness::Error`: a store's, a tape's,
//! a host's, an import's and export's, a provider's.
#![allow(clippy::unwrap_used, missing_docs)]

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
