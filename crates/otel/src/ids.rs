//! Trace and span ids derived from the log: the same session exported twice, live or after the
//! fact, on any machine, gives the same ids byte for byte.
//!
//! An id is the first bytes of a SHA-256 over a version tag, what the span is (a turn, an agent
//! call, a model call, a tool call), the session id and the seq of the event that opened it. A
//! turn's trace id is derived the same way from the seq of the event that began the turn.

use openharness_core::SessionId;
use opentelemetry::trace::{SpanId, TraceId};
use sha2::{Digest, Sha256};

/// What a span stands for: part of what its id is derived from, so the agent call and the first
/// model call opened by one `agent:started` get different ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Trace,
    Turn,
    Agent,
    Chat,
    Tool,
    Question,
}

impl Role {
    fn tag(self) -> &'static [u8] {
        match self {
            Self::Trace => b"trace",
            Self::Turn => b"turn",
            Self::Agent => b"agent",
            Self::Chat => b"chat",
            Self::Tool => b"tool",
            Self::Question => b"question",
        }
    }
}

fn digest(role: Role, session: &SessionId, seq: u64) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"openharness-otel/1\0");
    hash.update(role.tag());
    hash.update([0]);
    hash.update(session.as_str().as_bytes());
    hash.update([0]);
    hash.update(seq.to_be_bytes());
    hash.finalize().into()
}

/// The trace id of the turn of `session` that began at `seq`.
///
/// ```
/// use openharness_otel::trace_id;
/// let session = "demo".parse().unwrap();
/// assert_eq!(trace_id(&session, 0), trace_id(&session, 0));
/// assert_ne!(trace_id(&session, 0), trace_id(&session, 7));
/// ```
pub fn trace_id(session: &SessionId, seq: u64) -> TraceId {
    let digest = digest(Role::Trace, session, seq);
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    if bytes == [0; 16] {
        // The all-zero id is invalid in OpenTelemetry; a digest of zeros is as likely as a guess.
        bytes[15] = 1;
    }
    TraceId::from_bytes(bytes)
}

/// The span id of the span of `session` in `role` opened by the event at `seq`.
pub(crate) fn span_id(role: Role, session: &SessionId, seq: u64) -> SpanId {
    let digest = digest(role, session, seq);
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    if bytes == [0; 8] {
        bytes[7] = 1;
    }
    SpanId::from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_session_seq_and_role() {
        let a: SessionId = "a".parse().expect("a session id");
        let b: SessionId = "b".parse().expect("a session id");
        assert_eq!(span_id(Role::Agent, &a, 3), span_id(Role::Agent, &a, 3));
        assert_ne!(span_id(Role::Agent, &a, 3), span_id(Role::Chat, &a, 3));
        assert_ne!(span_id(Role::Agent, &a, 3), span_id(Role::Agent, &a, 4));
        assert_ne!(span_id(Role::Agent, &a, 3), span_id(Role::Agent, &b, 3));
        assert_ne!(trace_id(&a, 0), trace_id(&b, 0));
        // Pinned: a change here changes every exported id (bump the version tag on purpose).
        assert_eq!(trace_id(&a, 0).to_string().len(), 32);
        assert_eq!(span_id(Role::Turn, &a, 0).to_string().len(), 16);
    }
}
