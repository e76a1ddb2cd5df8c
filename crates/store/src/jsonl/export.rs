//! Writing sessions as JSONL blocks: one session, or a fork with the sessions it descends from.

use super::*;

/// How deep a chain of forks [`export_with_ancestors`] follows.
pub(super) const MAX_ANCESTORS: usize = 64;

/// Writes `session` and, when it is a fork, the sessions it descends from (oldest first, each
/// whole), so the file imports on its own into an empty store; returns how many events. A fork
/// whose parent is not in the store is [`TransferError::MissingParent`], and nothing is
/// written.
///
/// ```
/// use openharness_core::builtin::SessionForked;
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let (parent, child) = (SessionId::new(), SessionId::new());
/// from.append(&parent, &[Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None)], 0).await?;
/// let forked = SessionForked { parent: parent.clone(), position: 1, workflow: None, open_requests: Vec::new(), state_hash: None, state_edit: None };
/// from.append(&child, &[Envelope::typed(&forked, None)?], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export_with_ancestors(&from, &child, &mut file).await?, 2);
/// jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(to.all_events(&parent).await?.len(), 1);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export_with_ancestors<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let failed = |source| TransferError::Store {
        line: None,
        store: store.describe(),
        source,
    };
    let mut chain = vec![session.clone()];
    let mut current = session.clone();
    for _ in 0..MAX_ANCESTORS {
        let first = store.events(&current, 0..1).await.map_err(failed)?;
        let parent = match first.first().map(Builtin::decode) {
            Some(Some(Ok(Builtin::SessionForked(forked)))) => forked.parent,
            _ => break,
        };
        if store
            .events(&parent, 0..1)
            .await
            .map_err(failed)?
            .is_empty()
        {
            return Err(TransferError::MissingParent {
                session: current,
                parent,
                store: store.describe(),
            });
        }
        chain.push(parent.clone());
        current = parent;
    }
    let mut count = 0;
    for session in chain.iter().rev() {
        count += export(store, session, &mut out).await?;
    }
    Ok(count)
}

/// Writes every event of `session` to `out` as JSONL, between its begin and end lines, each
/// event line chained to the one before and the end line sealing the chain (see the module
/// docs); returns how many events. The session is read
/// with [`Store::stream_events`], so a session of any length needs memory for one page only.
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let session = SessionId::new();
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// from.append(&session, &[event.clone()], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export(&from, &session, &mut file).await?, 1);
/// let summary = jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(summary.events, 1);
/// assert_eq!(to.all_events(&session).await?, vec![event]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let mut events = store.stream_events(session, 0..u64::MAX);
    let mut count = 0u64;
    let mut chain = ChainHash::START;
    let mut facts = Facts::default();
    let mut bytes = Vec::new();
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(|source| TransferError::Store {
            line: None,
            store: store.describe(),
            source,
        })?;
        if count == 0 {
            write_marker(&mut out, &Marker::begin(session))?;
        }
        let line = Line {
            session: session.clone(),
            seq: recorded.seq,
            event: &recorded.event,
        };
        bytes.clear();
        serde_json::to_writer(&mut bytes, &line).map_err(|err| TransferError::Write(err.into()))?;
        chain = chain::write_chained(&mut out, &chain, &bytes).map_err(TransferError::Write)?;
        facts.observe(recorded.seq, &recorded.event);
        count += 1;
    }
    if count > 0 {
        write_marker(&mut out, &Marker::end(session, count, &chain, facts))?;
    }
    out.flush().map_err(TransferError::Write)?;
    if count == 0 {
        return Err(TransferError::NotFound {
            session: session.clone(),
            store: store.describe(),
        });
    }
    Ok(count)
}

fn write_marker(mut out: impl Write, marker: &Marker) -> Result<(), TransferError> {
    serde_json::to_writer(&mut out, marker).map_err(|err| TransferError::Write(err.into()))?;
    out.write_all(b"\n").map_err(TransferError::Write)
}
