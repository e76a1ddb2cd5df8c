//! Comparing the new run with the recording, stream by stream (see the module docs of
//! `cassette`): which stream each event belongs to, and the first event that differs.

use super::*;
use openharness_core::adapter::CallKey;

/// Which stream of a session an event belongs to (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Stream {
    /// Events no agent call caused.
    Main,
    /// One agent call and what it caused.
    Call {
        agent: String,
        /// The seq (in the recording) of the event that activated the agent.
        trigger: Option<u64>,
        /// Which call of this agent by this trigger (0 for the first).
        nth: u32,
    },
}

/// Who an event belongs to, as told by the events around it.
pub(super) enum Owner {
    /// To the stream of the event that caused it (an `agent:started` included).
    Cause,
    /// To this open agent call.
    Call(CallKey),
}

/// Assigns a session's events, in the order they were recorded, to their streams.
///
/// An agent call's last events (`text:complete`, what its `on_output` emitted or its
/// `error:occurred`, and `agent:completed`) are recorded back to back, all caused by the
/// event that activated the agent, just as the events that event's handlers emitted are
/// caused by it. The two are told apart by what follows: events caused by an event with
/// an open call are held until the next event, and those just before that call's
/// `agent:completed` are its own (for a call that succeeded, those after the last
/// `error:occurred`, which only activating another agent can have recorded there; for one
/// that failed, its `error:occurred`).
#[derive(Default)]
pub(super) struct Streams {
    /// The stream of every event assigned.
    pub(super) of: HashMap<EventId, Stream>,
    /// The calls open per agent and trigger seq, oldest first, by `nth`.
    pub(super) open: HashMap<(String, Option<u64>), VecDeque<u32>>,
    /// How many calls each agent and trigger seq started.
    pub(super) started: HashMap<(String, Option<u64>), u32>,
    /// How many calls are open per trigger.
    pub(super) open_by_trigger: HashMap<EventId, u32>,
    /// Events that may be an open call's last events, all caused by one event, with their
    /// seq in their session.
    pub(super) held: Vec<(Envelope, u64)>,
}

impl Streams {
    /// Takes the next event (at `seq` in its session) and returns those whose owner is now
    /// known, in order; assign each with [`Streams::assign`] before the next push.
    pub(super) fn push(&mut self, event: Envelope, seq: u64) -> Vec<(Envelope, u64, Owner)> {
        let mut released = Vec::new();
        let called_by = |agent: &str| Owner::Call(CallKey::new(agent, event.caused_by));
        let owner = match Builtin::decode(&event) {
            Some(Ok(Builtin::TextDelta(d))) => Some(called_by(&d.agent)),
            Some(Ok(Builtin::ToolCalled(c))) => Some(called_by(&c.agent)),
            Some(Ok(Builtin::ToolResult(r))) => Some(called_by(&r.agent)),
            Some(Ok(Builtin::OutputRejected(r))) => Some(called_by(&r.agent)),
            Some(Ok(Builtin::TextComplete(t))) => Some(called_by(&t.agent)),
            Some(Ok(Builtin::AgentCompleted(completed))) => {
                // The held events just before it, caused by its trigger, are its call's.
                let held = std::mem::take(&mut self.held);
                let same_trigger = held.first().is_some_and(|(e, _)| {
                    e.caused_by == event.caused_by && event.caused_by.is_some()
                });
                let split = if !same_trigger {
                    held.len()
                } else if completed.outcome == Outcome::Success {
                    held.iter()
                        .rposition(|(e, _)| e.name == ErrorOccurred::NAME)
                        .map_or(0, |i| i + 1)
                } else {
                    match held.last() {
                        Some((e, _)) if e.name == ErrorOccurred::NAME => held.len() - 1,
                        _ => held.len(),
                    }
                };
                let agent = completed.agent;
                for (index, (e, seq)) in held.into_iter().enumerate() {
                    let owner = if index < split {
                        Owner::Cause
                    } else {
                        called_by(&agent)
                    };
                    released.push((e, seq, owner));
                }
                Some(called_by(&agent))
            }
            Some(Ok(Builtin::AgentStarted(_))) => Some(Owner::Cause),
            _ => None,
        };
        if let Some(owner) = owner {
            released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
            released.push((event, seq, owner));
            return released;
        }
        // Caused by an event with an open call: perhaps that call's last events.
        if let Some(cause) = event.caused_by
            && self.open_by_trigger.get(&cause).is_some_and(|n| *n > 0)
        {
            if self
                .held
                .first()
                .is_some_and(|(e, _)| e.caused_by != Some(cause))
            {
                released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
            }
            self.held.push((event, seq));
            return released;
        }
        released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
        released.push((event, seq, Owner::Cause));
        released
    }

    /// Releases the events still held: the session is over.
    pub(super) fn flush(&mut self) -> Vec<(Envelope, u64, Owner)> {
        self.held
            .drain(..)
            .map(|(e, seq)| (e, seq, Owner::Cause))
            .collect()
    }

    /// The stream of a released event; `seqs` gives the recording's seq of the events before
    /// it (its trigger's, for an agent call).
    pub(super) fn assign(
        &mut self,
        event: &Envelope,
        owner: Owner,
        seqs: &HashMap<EventId, u64>,
    ) -> Stream {
        let stream = match owner {
            Owner::Call(CallKey { agent, trigger }) => {
                let key = (agent, trigger.and_then(|id| seqs.get(&id).copied()));
                let open = self.open.get_mut(&key);
                let nth = open.as_ref().and_then(|o| o.front().copied()).unwrap_or(0);
                if event.name == AgentCompleted::NAME
                    && let Some(open) = open
                    && open.pop_front().is_some()
                    && let Some(n) = trigger.and_then(|id| self.open_by_trigger.get_mut(&id))
                {
                    *n = n.saturating_sub(1);
                }
                let (agent, trigger) = key;
                Stream::Call {
                    agent,
                    trigger,
                    nth,
                }
            }
            Owner::Cause => {
                if let Some(Ok(Builtin::AgentStarted(started))) = Builtin::decode(event)
                    && let Some(trigger) = event.caused_by
                {
                    let key = (started.agent, seqs.get(&trigger).copied());
                    let count = self.started.entry(key.clone()).or_default();
                    self.open.entry(key).or_default().push_back(*count);
                    *count += 1;
                    *self.open_by_trigger.entry(trigger).or_default() += 1;
                }
                event
                    .caused_by
                    .and_then(|cause| self.of.get(&cause).cloned())
                    .unwrap_or(Stream::Main)
            }
        };
        self.of.insert(event.id, stream.clone());
        stream
    }
}

/// The recording's seqs per stream, in order.
pub(super) fn recorded_streams(
    events: &[Envelope],
    seqs: &HashMap<EventId, u64>,
) -> HashMap<Stream, VecDeque<u64>> {
    let mut streams = Streams::default();
    let mut expected: HashMap<Stream, VecDeque<u64>> = HashMap::new();
    let mut assign = |released: Vec<(Envelope, u64, Owner)>, streams: &mut Streams| {
        for (event, seq, owner) in released {
            let stream = streams.assign(&event, owner, seqs);
            expected.entry(stream).or_default().push_back(seq);
        }
    };
    for (event, seq) in events.iter().zip(0..) {
        let released = streams.push(event.clone(), seq);
        assign(released, &mut streams);
    }
    let released = streams.flush();
    assign(released, &mut streams);
    expected
}

/// Compares the new run's events with the recording, stream by stream (see the module docs).
pub(super) struct Checker {
    pub(super) session: SessionId,
    pub(super) recorded: Arc<Vec<Envelope>>,
    pub(super) recorded_ids: HashMap<EventId, u64>,
    /// The recording's seqs per stream not matched yet, in order.
    pub(super) expected: HashMap<Stream, VecDeque<u64>>,
    /// The new run's streams.
    pub(super) streams: Streams,
    /// The new run's events matched so far.
    pub(super) matched: Arc<Matched>,
    /// How many events the new run recorded so far.
    pub(super) seen: u64,
    pub(super) divergence: Arc<Mutex<Option<Divergence>>>,
    pub(super) cancel: CancellationToken,
    pub(super) done: bool,
}

impl Checker {
    pub(super) fn diverge(
        &mut self,
        seq: u64,
        expected: Option<EventShape>,
        actual: Option<EventShape>,
    ) {
        *self
            .divergence
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Divergence {
            session: self.session.clone(),
            seq,
            expected,
            actual,
        });
        self.done = true;
        self.matched.over();
        self.cancel.cancel();
    }

    pub(super) fn render(&mut self, event: &Envelope) {
        if self.done {
            return;
        }
        let seq = self.seen;
        self.seen += 1;
        let released = self.streams.push(event.clone(), seq);
        self.check(released);
    }

    /// Matches released events of the new run with the next recorded event of their stream.
    pub(super) fn check(&mut self, released: Vec<(Envelope, u64, Owner)>) {
        for (event, seq, owner) in released {
            if self.done {
                return;
            }
            let (stream, actual) = {
                let matched = self.matched.lock();
                let stream = self.streams.assign(&event, owner, &matched.seqs);
                (stream, shape(&event, &matched.seqs))
            };
            let next = self.expected.get_mut(&stream).and_then(VecDeque::pop_front);
            let expected = next
                .and_then(|seq| usize::try_from(seq).ok())
                .and_then(|i| self.recorded.get(i))
                .map(|e| shape(e, &self.recorded_ids));
            match next {
                Some(recorded_seq) if expected.as_ref() == Some(&actual) => {
                    self.matched.lock().seqs.insert(event.id, recorded_seq);
                    self.matched.changed.notify_waiters();
                }
                _ => {
                    self.diverge(next.unwrap_or(seq), expected, Some(actual));
                    return;
                }
            }
        }
    }

    /// The re-execution is over: a recording that goes on further diverges at its first
    /// event not matched.
    pub(super) fn finish_recording(&mut self) {
        let released = self.streams.flush();
        self.check(released);
        if self.done {
            return;
        }
        let first = self
            .expected
            .values()
            .filter_map(|q| q.front().copied())
            .min();
        match first {
            Some(seq) => {
                let expected = usize::try_from(seq)
                    .ok()
                    .and_then(|i| self.recorded.get(i))
                    .map(|e| shape(e, &self.recorded_ids));
                self.diverge(seq, expected, None);
            }
            None => self.matched.over(),
        }
    }
}

pub(super) fn ids(events: &[Envelope]) -> HashMap<EventId, u64> {
    events.iter().zip(0..).map(|(e, seq)| (e.id, seq)).collect()
}

/// An event as a re-execution must reproduce it. A built-in event is compared as today's wire
/// carries it, so a recording of an older format re-executes; of an `error:occurred`, only
/// its code; of a `session:forked`, its parent and position; of a `workflow:started`, the
/// workflow's name (not which code of it).
pub(super) fn shape(event: &Envelope, ids: &HashMap<EventId, u64>) -> EventShape {
    let payload = match Builtin::decode(event) {
        Some(Ok(Builtin::ErrorOccurred(error))) => serde_json::json!({ "code": error.source }),
        // Format-1 forks do not name their workflow; the parent and the position are the fork.
        Some(Ok(Builtin::SessionForked(forked))) => {
            serde_json::json!({ "parentSessionId": forked.parent, "forkIndex": forked.position })
        }
        // Which code recorded it is what a replay compares against, not something to match:
        // a session recorded by another version replays the same when it behaves the same.
        Some(Ok(Builtin::WorkflowStarted(started))) => {
            serde_json::json!({ "workflow": started.workflow })
        }
        // Where the reply is in the output tells chat clients what to show, not what ran, and
        // a re-execution's calls are answered by the cassette, not by the provider that was
        // recorded; recordings made before either was recorded replay the same.
        Some(Ok(Builtin::AgentStarted(mut started))) => {
            started.reply = None;
            started.provider = None;
            serde_json::to_value(&started).map_or_else(
                |_| ids_as_seqs(&event.payload, ids),
                |p| ids_as_seqs(&p, ids),
            )
        }
        Some(Ok(builtin)) => builtin.to_payload().map_or_else(
            |_| ids_as_seqs(&event.payload, ids),
            |p| ids_as_seqs(&p, ids),
        ),
        _ => ids_as_seqs(&event.payload, ids),
    };
    EventShape {
        name: event.name.to_string(),
        payload,
        caused_by: event.caused_by.and_then(|id| ids.get(&id).copied()),
    }
}

/// `value` with every string that is the id of an event in `ids` replaced by `"#seq"`.
pub(crate) fn ids_as_seqs(value: &Value, ids: &HashMap<EventId, u64>) -> Value {
    match value {
        Value::String(s) => match s.parse::<EventId>().ok().and_then(|id| ids.get(&id)) {
            Some(seq) => Value::String(format!("#{seq}")),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| ids_as_seqs(v, ids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), ids_as_seqs(v, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}
