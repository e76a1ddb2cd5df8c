//! [`Host::ancestry`]: a session and the sessions it is forked from, read by following each
//! one's `session:forked` up to the session that started the lineage. Comparing sessions,
//! telling which code recorded one and copying a fork's parents for a replay all walk it.

use openharness_core::builtin::SessionForked;
use openharness_core::{Envelope, Event, SessionId, StoreError};

use crate::Host;
use crate::error::HostError;

/// How deep a chain of forks is followed before it is taken for a cycle.
const MAX_DEPTH: usize = 64;

/// One session of a lineage.
pub(crate) struct Ancestor {
    /// The session.
    pub(crate) session: SessionId,
    /// Its first event (none when it has no events).
    pub(crate) first: Option<Envelope>,
    /// What its `session:forked` says, when it is a fork.
    pub(crate) forked: Option<SessionForked>,
}

impl Host {
    /// `session`, then its parent, its parent's parent and so on up to the session that is
    /// no fork, each with its first event. A chain deeper than 64 (a cycle, say) is an error
    /// naming the session.
    pub(crate) async fn ancestry(&self, session: &SessionId) -> Result<Vec<Ancestor>, HostError> {
        let mut chain = Vec::new();
        let mut current = session.clone();
        for _ in 0..MAX_DEPTH {
            let first = self
                .store
                .events(&current, 0..1)
                .await
                .map_err(self.store_error())?
                .into_iter()
                .next();
            let forked = first
                .as_ref()
                .filter(|e| e.name == SessionForked::NAME)
                .and_then(|e| e.decode::<SessionForked>().ok());
            let parent = forked.as_ref().map(|f| f.parent.clone());
            chain.push(Ancestor {
                session: current,
                first,
                forked,
            });
            match parent {
                Some(parent) => current = parent,
                None => return Ok(chain),
            }
        }
        Err(HostError::store(
            self.store.as_ref(),
            StoreError::Corrupt {
                session: session.clone(),
                seq: 0,
                message: format!(
                    "it is forked from a chain of more than {MAX_DEPTH} sessions (a cycle?)"
                ),
            },
        ))
    }
}
