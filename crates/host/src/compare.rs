//! [`Host::compare`]: two sessions side by side — their common ancestor, the first event at
//! which they part and how their states differ there. Sessions are compared as their forks
//! see them: a fork of `P` at `p` is `P`'s first `p` events followed by its own (after its
//! `session:forked`), so a fork and its parent agree up to the fork point without a read,
//! and two forks of one point are compared from their own first events.

use std::ops::Range;
use std::sync::Arc;

use openharness_core::{Envelope, SessionId};
use serde::Serialize;
use serde_json::Value;

use crate::Host;
use crate::error::HostError;
use crate::json_fold::JsonFold;

mod lineage;
mod side;
pub(crate) use lineage::Lineage;
pub(crate) use same as same_event;
use side::{Side, first_event, steps};

/// Two sessions compared ([`Host::compare`]).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionComparison {
    /// The first session.
    pub a: SessionId,
    /// The second session.
    pub b: SessionId,
    /// The nearest session both descend from (or are), with the positions in it at which
    /// each leaves it.
    pub ancestor: Option<Ancestor>,
    /// How many events agree, counted from the start of each one's lineage (the root's
    /// position 0): the first divergence is at this seq of their lineages.
    pub agree: u64,
    /// The first session's length, counted the same way.
    pub a_len: u64,
    /// The second session's length, counted the same way.
    pub b_len: u64,
    /// Where they part (`None` when every event agrees and the lengths are equal).
    pub divergence: Option<SessionDivergence>,
}

/// The nearest session two sessions both descend from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ancestor {
    /// The session.
    pub session: SessionId,
    /// The position in it the first session's lineage leaves it at (its length if the first
    /// session is it).
    pub a_from: u64,
    /// The same for the second session.
    pub b_from: u64,
}

/// Where two sessions part.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDivergence {
    /// The first session's event there (`None`: it had ended).
    pub a: Option<Envelope>,
    /// The second session's event there (`None`: it had ended).
    pub b: Option<Envelope>,
    /// Where the first session's event was recorded: that session or one of its ancestors,
    /// and the position the event leads to there (`None`: it had ended).
    pub a_at: Option<EventPlace>,
    /// The same for the second session's event.
    pub b_at: Option<EventPlace>,
    /// When both events have one name: the JSON patch from the first's payload to the
    /// second's (what changed in the prompt, the output, the arguments).
    #[schemars(with = "Option<Value>")]
    pub payload_patch: Option<json_patch::Patch>,
    /// The JSON patch from the first session's state to the second's, each just after that
    /// event (clamped to each one's end); `None` when a session's workflow is not hosted.
    #[schemars(with = "Option<Value>")]
    pub state_patch: Option<json_patch::Patch>,
}

/// One side's event where two sessions part, and where it was recorded.
type SideEvent = (Option<Envelope>, Option<EventPlace>);

/// Where an event was recorded: the session whose own event it is, and the position it leads
/// to there (its seq + 1), the number the inspector, `tape` and `?at=` use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventPlace {
    /// The session that recorded the event.
    pub session: SessionId,
    /// The position the event leads to in that session.
    pub position: u64,
}

impl SessionDivergence {
    /// The two sides' events there (and where each was recorded), the patch between their
    /// payloads when both have one name, and the state patch.
    fn of(
        (a, a_at): SideEvent,
        (b, b_at): SideEvent,
        state_patch: Option<json_patch::Patch>,
    ) -> Self {
        let payload_patch = match (&a, &b) {
            (Some(x), Some(y)) if x.name == y.name => {
                Some(json_patch::diff(&x.payload, &y.payload))
            }
            _ => None,
        };
        Self {
            a_at: a.as_ref().and(a_at),
            b_at: b.as_ref().and(b_at),
            a,
            b,
            payload_patch,
            state_patch,
        }
    }
}

/// One stretch of a session's lineage: `range` of `session`'s own events, standing at
/// `start` in the lineage.
#[derive(Debug, Clone, PartialEq)]
struct Segment {
    session: SessionId,
    range: Range<u64>,
    start: u64,
    /// The fork's `stateEdit` (a JSON merge patch on the state it starts from), if any.
    edit: Option<Value>,
}

impl Segment {
    fn end(&self) -> u64 {
        self.start + (self.range.end - self.range.start)
    }
}

impl Host {
    /// Compares sessions `a` and `b`: their common ancestor, how many events they share and
    /// the first at which they part (events compared by name and payload, ids aside), with
    /// the patch between the two events' payloads and between their states just after it.
    /// Reads each session once, from the point their lineages part.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, parent: openharness_core::SessionId, fork: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// let compared = host.compare(&parent, &fork).await?;
    /// if let Some(divergence) = &compared.divergence {
    ///     println!("they part at seq {}: {:?}", compared.agree, divergence.state_patch);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn compare(
        &self,
        a: &SessionId,
        b: &SessionId,
    ) -> Result<SessionComparison, HostError> {
        let (left, right) = (self.lineage(a).await?, self.lineage(b).await?);
        let ancestor = common_ancestor(&left, &right);
        // Whole segments shared by both lineages agree without a read.
        let mut agree = 0;
        for (x, y) in left.iter().zip(&right) {
            if x.session != y.session || x.start != y.start || x.range.start != y.range.start {
                break;
            }
            agree = x.end().min(y.end());
            if x.end() != y.end() {
                break;
            }
        }
        let (a_len, b_len) = (
            left.last().map_or(0, Segment::end),
            right.last().map_or(0, Segment::end),
        );
        // Each side's state where they may start to differ (`None` when a workflow is not
        // hosted): read once, then folded on while the events are compared, so each event is
        // read once.
        let bases = self.bases(&left, &right, agree).await?;
        // A fork that starts from another state than the other side has there (it edited
        // the state it inherited) parts at its fork point: its `session:forked` says how.
        let divergence = match self
            .parts_at_fork(&left, &right, agree, bases.as_ref())
            .await?
        {
            Some((first_a, first_b, state_patch)) => {
                Some(SessionDivergence::of(first_a, first_b, Some(state_patch)))
            }
            None => {
                let (fold_a, fold_b) = match bases {
                    Some((x, y)) => match (self.fold_for(a, x).await, self.fold_for(b, y).await) {
                        (Some(fa), Some(fb)) => (Some(fa), Some(fb)),
                        _ => (None, None),
                    },
                    None => (None, None),
                };
                let store = Arc::clone(&self.store);
                let mut xs = Side::read(Arc::clone(&store), left.clone(), agree, fold_a);
                let mut ys = Side::read(store, right.clone(), agree, fold_b);
                let (first_a, first_b) = loop {
                    let (x, y) = (xs.next_event().await, ys.next_event().await);
                    let (x, y) = (
                        x.map_err(self.store_error())?,
                        y.map_err(self.store_error())?,
                    );
                    match (x, y) {
                        (Some(x), Some(y)) if same(&x, &y) => {
                            agree += 1;
                            xs.fold(x).await;
                            ys.fold(y).await;
                        }
                        (x, y) => break (x, y),
                    }
                };
                if first_a.is_none() && first_b.is_none() {
                    None
                } else {
                    // Each state just after the event where they part.
                    if let Some(x) = &first_a {
                        xs.fold(x.clone()).await;
                    }
                    if let Some(y) = &first_b {
                        ys.fold(y.clone()).await;
                    }
                    let state_patch = match (xs.finish().await, ys.finish().await) {
                        (Some(fa), Some(fb)) => {
                            let encoded = |fold: &dyn JsonFold, session: &SessionId| {
                                fold.state().map_err(|source| HostError::Encode {
                                    session: session.clone(),
                                    position: agree + 1,
                                    source,
                                })
                            };
                            Some(json_patch::diff(
                                &encoded(fa.as_ref(), a)?,
                                &encoded(fb.as_ref(), b)?,
                            ))
                        }
                        _ => self.state_patch(&left, &right, agree + 1).await?,
                    };
                    Some(SessionDivergence::of(
                        (first_a, place(&left, agree)),
                        (first_b, place(&right, agree)),
                        state_patch,
                    ))
                }
            }
        };
        Ok(SessionComparison {
            a: a.clone(),
            b: b.clone(),
            ancestor,
            agree,
            a_len,
            b_len,
            divergence,
        })
    }

    /// The patch between two lineages' states at `position`; `None` when a workflow is not
    /// hosted.
    async fn state_patch(
        &self,
        left: &[Segment],
        right: &[Segment],
        position: u64,
    ) -> Result<Option<json_patch::Patch>, HostError> {
        match (
            self.lineage_state(left, position).await,
            self.lineage_state(right, position).await,
        ) {
            (Ok(x), Ok(y)) => Ok(Some(json_patch::diff(&x, &y))),
            (Err(HostError::Unhosted { .. }), _) | (_, Err(HostError::Unhosted { .. })) => Ok(None),
            (Err(err), _) | (_, Err(err)) => Err(err),
        }
    }

    /// When either lineage goes on at `at` with a fork of its own and the two states there
    /// (`bases`) differ (a fork edited the state it inherited): each side's event there (a
    /// fork's `session:forked`) and the patch between the states.
    async fn parts_at_fork(
        &self,
        left: &[Segment],
        right: &[Segment],
        at: u64,
        bases: Option<&(Value, Value)>,
    ) -> Result<Option<(SideEvent, SideEvent, json_patch::Patch)>, HostError> {
        let fork_at = |segments: &[Segment]| {
            segments
                .iter()
                .find(|s| s.start == at && s.range.start == 1)
                .map(|s| s.session.clone())
        };
        let (fork_a, fork_b) = (fork_at(left), fork_at(right));
        if fork_a.is_none() && fork_b.is_none() {
            return Ok(None);
        }
        let Some((x, y)) = bases else {
            return Ok(None);
        };
        let patch = json_patch::diff(x, y);
        if patch.0.is_empty() {
            return Ok(None);
        }
        // A fork's event there is its `session:forked`, at its own position 1.
        let place_of = |fork: &Option<SessionId>, segments: &[Segment]| match fork {
            Some(session) => Some(EventPlace {
                session: session.clone(),
                position: 1,
            }),
            None => place(segments, at),
        };
        let (at_a, at_b) = (place_of(&fork_a, left), place_of(&fork_b, right));
        let first_a = self.event_at(fork_a, left, at).await?;
        let first_b = self.event_at(fork_b, right, at).await?;
        Ok(Some(((first_a, at_a), (first_b, at_b), patch)))
    }

    /// Both lineages' states at lineage position `at` (the second read only when it stands
    /// elsewhere than the first); `None` when a workflow is not hosted.
    async fn bases(
        &self,
        left: &[Segment],
        right: &[Segment],
        at: u64,
    ) -> Result<Option<(Value, Value)>, HostError> {
        let x = match self.lineage_state(left, at).await {
            Ok(x) => x,
            Err(HostError::Unhosted { .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        if own_position(left, at) == own_position(right, at) {
            return Ok(Some((x.clone(), x)));
        }
        match self.lineage_state(right, at).await {
            Ok(y) => Ok(Some((x, y))),
            Err(HostError::Unhosted { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// A fold for `session`'s workflow from `state`; `None` when its workflow is not hosted
    /// or cannot read that state (the comparison then derives the two states afterwards).
    async fn fold_for(&self, session: &SessionId, state: Value) -> Option<Box<dyn JsonFold>> {
        self.workflow_of(session).await.ok()?.fold_from(state)
    }

    /// A lineage's event at lineage seq `at`, or `fork`'s `session:forked` when it goes on
    /// there with that fork.
    async fn event_at(
        &self,
        fork: Option<SessionId>,
        segments: &[Segment],
        at: u64,
    ) -> Result<Option<Envelope>, HostError> {
        match fork {
            Some(session) => Ok(self
                .store
                .events(&session, 0..1)
                .await
                .map_err(self.store_error())?
                .into_iter()
                .next()),
            None => first_event(&mut steps(self.store.as_ref(), segments, at))
                .await
                .map_err(self.store_error()),
        }
    }

    /// The events a fork inherits: its ancestors' events up to each fork point, oldest first
    /// (none for a session that is no fork). With the fork's own events after them, they are
    /// the conversation the fork continues, which projections of a fork (its chat as another
    /// protocol shows it) start from.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, fork: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// let inherited = host.inherited_events(&fork).await?;
    /// println!("the fork continues {} events of its ancestors", inherited.len());
    /// # Ok(()) }
    /// ```
    pub async fn inherited_events(&self, session: &SessionId) -> Result<Vec<Envelope>, HostError> {
        let mut segments = self.lineage(session).await?;
        segments.pop();
        let mut events = Vec::new();
        for segment in segments {
            let stretch = self
                .store
                .events(&segment.session, segment.range.clone())
                .await
                .map_err(self.store_error())?;
            events.extend(stretch);
        }
        Ok(events)
    }

    /// `session`'s lineage: its ancestors' stretches up to each fork point, then its own.
    async fn lineage(&self, session: &SessionId) -> Result<Vec<Segment>, HostError> {
        // From the session up: (session, its length, the fork point it starts from).
        let mut chain = Vec::new();
        for ancestor in self.ancestry(session).await? {
            let len = self.info(&ancestor.session).await?.count;
            let (fork_point, edit) = ancestor.forked.map_or((None, None), |forked| {
                (Some(forked.position), forked.state_edit)
            });
            chain.push((ancestor.session, len, fork_point, edit));
        }
        // From the root down, each stretch cut where the next fork leaves it.
        let mut segments: Vec<Segment> = Vec::new();
        for (session, len, fork_point, edit) in chain.into_iter().rev() {
            match fork_point {
                None => segments.push(Segment {
                    session,
                    range: 0..len,
                    start: 0,
                    edit: None,
                }),
                Some(position) => {
                    // The fork point is a position of the parent's own: position `q` of a
                    // stretch standing at `start` whose own events begin at `range.start` is
                    // lineage position `start + q - range.start` (a fork's position 0 is its
                    // own fork point, as is its position 1).
                    let cut = segments.last().map_or(position, |parent| {
                        parent
                            .start
                            .saturating_add(position.saturating_sub(parent.range.start))
                    });
                    truncate(&mut segments, cut);
                    let start = segments.last().map_or(0, Segment::end);
                    segments.push(Segment {
                        session,
                        range: 1..len.max(1),
                        start,
                        edit,
                    });
                }
            }
        }
        Ok(segments)
    }

    /// The state at lineage position `position` (clamped to the lineage's end): the state of
    /// the segment's session at the matching position of its own.
    async fn lineage_state(&self, segments: &[Segment], position: u64) -> Result<Value, HostError> {
        match own_position(segments, position) {
            Some((session, own)) => self.state_at(session, own).await,
            None => Ok(Value::Null),
        }
    }
}

/// The session and own position lineage position `at` stands at (as
/// [`Host::lineage_state`] reads it).
fn own_position(segments: &[Segment], at: u64) -> Option<(&SessionId, u64)> {
    let end = segments.last().map_or(0, Segment::end);
    let at = at.min(end);
    let segment = segments
        .iter()
        .rev()
        .find(|s| s.start <= at)
        .or(segments.first())?;
    // Own position 1 of a fork is the lineage position `start` (after `session:forked`).
    Some((&segment.session, segment.range.start + (at - segment.start)))
}

/// Where the event at lineage seq `seq` was recorded: the segment holding it, and the own
/// position it leads to.
fn place(segments: &[Segment], seq: u64) -> Option<EventPlace> {
    let segment = segments.iter().find(|s| s.start <= seq && seq < s.end())?;
    Some(EventPlace {
        session: segment.session.clone(),
        position: segment.range.start + (seq - segment.start) + 1,
    })
}

/// Cuts a lineage at lineage position `at`.
fn truncate(segments: &mut Vec<Segment>, at: u64) {
    segments.retain(|s| s.start < at || (s.start == 0 && at == 0));
    if let Some(last) = segments.last_mut() {
        let keep = at.saturating_sub(last.start);
        last.range.end = last.range.end.min(last.range.start + keep);
    }
}

/// The nearest session both lineages pass through, with where each leaves it.
fn common_ancestor(a: &[Segment], b: &[Segment]) -> Option<Ancestor> {
    a.iter().rev().find_map(|x| {
        let y = b.iter().find(|y| y.session == x.session)?;
        Some(Ancestor {
            session: x.session.clone(),
            a_from: x.range.end,
            b_from: y.range.end,
        })
    })
}

/// Whether two events say the same thing: name and payload, event ids aside (two sessions
/// never share them).
pub(crate) fn same(a: &Envelope, b: &Envelope) -> bool {
    a.id == b.id || (a.name == b.name && equal_but_ids(&a.payload, &b.payload))
}

/// Whether two payloads are equal when every string that is an id (a UUID) counts as equal
/// to any other id; compared in place, nothing copied.
fn equal_but_ids(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            x == y || (looks_like_uuid(x) && looks_like_uuid(y))
        }
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| equal_but_ids(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(key, x)| ys.get(key).is_some_and(|y| equal_but_ids(x, y)))
        }
        (x, y) => x == y,
    }
}

/// `8-4-4-4-12` hex digits.
fn looks_like_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, byte)| match i {
            8 | 13 | 18 | 23 => byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn seg(session: &SessionId, range: Range<u64>, start: u64) -> Segment {
        Segment {
            session: session.clone(),
            range,
            start,
            edit: None,
        }
    }

    #[test]
    fn a_lineage_is_cut_at_each_fork_point() {
        let (root, mid) = (SessionId::new(), SessionId::new());
        // root has 10 events; mid forks it at 6 and has 5 of its own (session:forked + 4).
        let mut segments = vec![seg(&root, 0..10, 0)];
        truncate(&mut segments, 6);
        assert_eq!(segments, [seg(&root, 0..6, 0)]);
        segments.push(seg(&mid, 1..5, 6));
        assert_eq!(segments.last().unwrap().end(), 10);
        // A fork of mid at 8 keeps root's 6 and mid's first 2 own events.
        truncate(&mut segments, 8);
        assert_eq!(segments, [seg(&root, 0..6, 0), seg(&mid, 1..3, 6)]);
        // A fork of mid at 4 keeps only root's first 4.
        let mut other = vec![seg(&root, 0..6, 0), seg(&mid, 1..5, 6)];
        truncate(&mut other, 4);
        assert_eq!(other, [seg(&root, 0..4, 0)]);
        truncate(&mut other, 0);
        assert_eq!(other, [seg(&root, 0..0, 0)]);
    }

    #[test]
    fn ids_are_left_out_of_the_comparison_and_nothing_else_is() {
        let id = openharness_core::EventId::new().to_string();
        let other = openharness_core::EventId::new().to_string();
        let a = Envelope::new("x:y", json!({ "openRequests": [id], "text": "hi" }), None);
        let b = Envelope::new(
            "x:y",
            json!({ "openRequests": [other], "text": "hi" }),
            None,
        );
        assert!(same(&a, &b));
        let c = Envelope::new("x:y", json!({ "openRequests": [id], "text": "ho" }), None);
        assert!(!same(&a, &c));
        assert!(!looks_like_uuid("not-a-uuid-at-all-really"));
    }
}
