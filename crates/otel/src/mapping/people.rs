//! The person in the trace: a question and its answer as a span (`await_input`), and what a
//! person does to a running turn (queue, steer, interrupt, roll back, stop) as span events on
//! the turn's root.

use super::*;

/// The payload field a chat client's approval records its decision in (`input:received`'s
/// `approved`, beside the text `yes` or `no`).
const APPROVED_FIELD: &str = "approved";

impl SessionSpans {
    /// Opens the question's span under the turn that asks.
    pub(super) fn input_requested(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        request: EventId,
        requested: &InputRequested,
    ) {
        let (trace, parent) = match &self.turn {
            Some(turn) => (turn.open.span.trace_id, Some(turn.open.span.span_id)),
            None => (trace_id(&self.session, seq), None),
        };
        let mut span = self.base(
            Role::Question,
            (seq, time),
            (trace, parent),
            "await_input".to_owned(),
        );
        span.attributes.push(KeyValue::new(
            "openharness.input.request_id",
            request.to_string(),
        ));
        span.attributes.push(KeyValue::new(
            "openharness.input.approval",
            requested.approval,
        ));
        if self.options.content {
            span.attributes.push(KeyValue::new(
                "openharness.input.prompt",
                requested.prompt.clone(),
            ));
        }
        self.questions.push(OpenQuestion {
            request,
            open: Open { span },
        });
    }

    /// An answer: closes its question's span (the wait, who answered, the turn it began) and
    /// ties the answering turn to it.
    pub(super) fn input_received(
        &mut self,
        seq: u64,
        event: &Envelope,
        received: &InputReceived,
        closed: &mut Vec<Span>,
    ) {
        let time = event.timestamp;
        let approved = event.payload.get(APPROVED_FIELD).and_then(|v| v.as_bool());
        let content = self.options.content;
        let question = self
            .questions
            .iter()
            .position(|q| q.request == received.request_id)
            .map(|i| self.questions.remove(i));
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let answering = turn.open.span.reference();
        let attributes = &mut turn.open.span.attributes;
        attributes.push(KeyValue::new(
            "openharness.input.request_id",
            received.request_id.to_string(),
        ));
        push_answer(attributes, received, approved, content);
        let Some(question) = question else {
            return;
        };
        let mut span = question.open.span;
        if span.trace_id != answering.trace_id {
            turn.open.span.links.push(span.reference());
        }
        span.end = time.max(span.start);
        let waited = (span.end - span.start).num_milliseconds();
        span.attributes
            .push(KeyValue::new("openharness.input.wait_ms", waited));
        span.attributes
            .push(KeyValue::new("openharness.input.answer_seq", count(seq)));
        span.attributes.push(KeyValue::new(
            "openharness.input.answer_trace_id",
            answering.trace_id.to_string(),
        ));
        span.attributes.push(KeyValue::new(
            "openharness.input.answer_span_id",
            answering.span_id.to_string(),
        ));
        push_answer(&mut span.attributes, received, approved, content);
        closed.push(span);
    }

    /// `input:queued` on the running turn: its mode and id (and text, with content on).
    pub(super) fn input_queued(&mut self, time: DateTime<Utc>, id: EventId, queued: &InputQueued) {
        let mut attributes = vec![
            KeyValue::new("openharness.input.mode", queued.mode.as_str()),
            KeyValue::new("openharness.input.queued_id", id.to_string()),
        ];
        if self.options.content {
            attributes.push(KeyValue::new("openharness.input.text", queued.text.clone()));
        }
        self.turn_event(InputQueued::NAME, time, attributes);
    }

    /// `input:steered` on the running turn: the call that took the queued input.
    pub(super) fn input_steered(&mut self, time: DateTime<Utc>, steered: &InputSteered) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.agent.name", steered.agent.clone()),
            KeyValue::new("openharness.input.queued_id", steered.queued.to_string()),
        ];
        if self.options.content {
            attributes.push(KeyValue::new(
                "openharness.input.text",
                steered.text.clone(),
            ));
        }
        self.turn_event(InputSteered::NAME, time, attributes);
    }

    /// `turn:rolled_back` on the abandoned turn: the position whose state came back.
    pub(super) fn turn_rolled_back(&mut self, time: DateTime<Utc>, rolled_back: &TurnRolledBack) {
        let attributes = vec![
            KeyValue::new("openharness.turn.rolled_back_to", count(rolled_back.from)),
            KeyValue::new("openharness.state_hash", rolled_back.state_hash.clone()),
        ];
        self.turn_event(TurnRolledBack::NAME, time, attributes);
    }

    /// `stop:requested` on the running turn, with the reason given.
    pub(super) fn stop_requested(&mut self, time: DateTime<Utc>, stop: &StopRequested) {
        let attributes = stop
            .reason
            .iter()
            .map(|reason| KeyValue::new("openharness.stop.reason", reason.clone()))
            .collect();
        self.turn_event(StopRequested::NAME, time, attributes);
    }

    fn turn_event(&mut self, name: &str, time: DateTime<Utc>, attributes: Vec<KeyValue>) {
        if let Some(turn) = self.turn.as_mut() {
            turn.open.span.events.push(SpanEvent {
                name: name.to_owned(),
                time,
                attributes,
            });
        }
    }
}

/// Who answered, and how: `by` as the answering client named them, an approval's decision, and
/// the answer's text (with content on).
fn push_answer(
    attributes: &mut Vec<KeyValue>,
    received: &InputReceived,
    approved: Option<bool>,
    content: bool,
) {
    if let Some(by) = &received.by {
        attributes.push(KeyValue::new("openharness.input.answered_by", by.clone()));
    }
    if let Some(approved) = approved {
        attributes.push(KeyValue::new("openharness.input.approved", approved));
    }
    if content {
        attributes.push(KeyValue::new(
            "openharness.input.answer",
            received.text.clone(),
        ));
    }
}
