//! A turn's root span: opened by the workflow's start, a fork or the turn's first event, linked
//! to the turn before, closed by the turn's end.

use super::*;

impl SessionSpans {
    pub(super) fn open_turn(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        workflow: Option<&str>,
        start: &str,
        closed: &mut Vec<Span>,
    ) -> &mut OpenTurn {
        // A turn begun while another is open: the other never finished (its process died).
        self.close_turn(self.last_time.unwrap_or(time), true, closed);
        let name = match workflow {
            Some(workflow) => format!("invoke_workflow {workflow}"),
            None => "invoke_workflow".to_owned(),
        };
        let mut span = self.base(
            Role::Turn,
            (seq, time),
            (trace_id(&self.session, seq), None),
            name,
        );
        if let Some(workflow) = workflow {
            span.attributes
                .push(KeyValue::new("openharness.workflow", workflow.to_owned()));
        }
        span.attributes
            .push(KeyValue::new("openharness.turn.start", start.to_owned()));
        if let Some(previous) = self.last_turn {
            link(&mut span, previous, "openharness.turn.previous");
        }
        self.turn.insert(OpenTurn {
            open: Open { span },
            forked: false,
        })
    }

    pub(super) fn workflow_started(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        started: &WorkflowStarted,
        closed: &mut Vec<Span>,
    ) {
        self.workflow = Some(started.workflow.clone());
        let turn = match self.turn.as_mut() {
            // A fork's `session:forked` began the turn; this names its workflow.
            Some(turn) if turn.forked => {
                turn.forked = false;
                turn.open.span.name = format!("invoke_workflow {}", started.workflow);
                turn.open.span.attributes.push(KeyValue::new(
                    "openharness.workflow",
                    started.workflow.clone(),
                ));
                turn
            }
            _ => self.open_turn(
                seq,
                time,
                Some(&started.workflow),
                WorkflowStarted::NAME,
                closed,
            ),
        };
        let attributes = &mut turn.open.span.attributes;
        if let Some(code) = &started.code {
            attributes.push(KeyValue::new("openharness.workflow.code", code.clone()));
        }
        if let Some(version) = &started.version {
            attributes.push(KeyValue::new(
                "openharness.workflow.version",
                version.clone(),
            ));
        }
        if let Some(commit) = &started.commit {
            attributes.push(KeyValue::new("openharness.workflow.commit", commit.clone()));
        }
    }

    pub(super) fn session_forked(
        &mut self,
        seq: u64,
        time: DateTime<Utc>,
        forked: &SessionForked,
        closed: &mut Vec<Span>,
    ) {
        let fork_link = self.fork_link.take();
        if forked.workflow.is_some() {
            self.workflow.clone_from(&forked.workflow);
        }
        let turn = self.open_turn(
            seq,
            time,
            forked.workflow.as_deref(),
            SessionForked::NAME,
            closed,
        );
        turn.forked = true;
        let span = &mut turn.open.span;
        span.attributes.push(KeyValue::new(
            "openharness.fork.parent",
            forked.parent.as_str().to_owned(),
        ));
        span.attributes.push(KeyValue::new(
            "openharness.fork.position",
            i64::try_from(forked.position).unwrap_or(i64::MAX),
        ));
        if let Some(hash) = &forked.state_hash {
            span.attributes
                .push(KeyValue::new("openharness.fork.state_hash", hash.clone()));
        }
        if let Some(parent) = fork_link {
            link(span, parent, "openharness.fork.parent");
        }
    }

    pub(super) fn workflow_completed(
        &mut self,
        time: DateTime<Utc>,
        completed: &WorkflowCompleted,
        closed: &mut Vec<Span>,
    ) {
        if let Some(turn) = self.turn.as_mut() {
            let span = &mut turn.open.span;
            span.attributes.push(KeyValue::new(
                "openharness.turn.reason",
                completed.reason.clone(),
            ));
            span.attributes.push(KeyValue::new(
                "openharness.turn.errors",
                i64::try_from(completed.errors).unwrap_or(i64::MAX),
            ));
            if completed.errors > 0 {
                span.status = Status::error(format!("{} error(s) occurred", completed.errors));
            }
        }
        self.close_turn(time, false, closed);
        // A call of a finished turn is never run again: only the open turn's calls are kept.
        self.calls.clear();
    }

    /// A person's input: its text on the turn (with content on), and the queued input it
    /// answers, when a queued input's turn begins with it.
    pub(super) fn user_input(&mut self, caused_by: Option<EventId>, input: &UserInput) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let attributes = &mut turn.open.span.attributes;
        if let Some(queued) = caused_by {
            attributes.push(KeyValue::new(
                "openharness.input.queued_id",
                queued.to_string(),
            ));
        }
        if let Some(by) = &input.by {
            attributes.push(KeyValue::new("openharness.input.by", by.clone()));
        }
        if self.options.content {
            attributes.push(KeyValue::new("input.value", input.text.clone()));
        }
    }

    /// Closes the open turn and everything in it at `time`; `unfinished` marks the spans as
    /// never closed by their own event.
    pub(super) fn close_turn(
        &mut self,
        time: DateTime<Utc>,
        unfinished_turn: bool,
        closed: &mut Vec<Span>,
    ) {
        for mut agent in self.agents.drain(..) {
            for (_, tool) in agent.tools.drain(..) {
                closed.push(unfinished(tool.span, time));
            }
            if let Some(chat) = agent.chat.take() {
                closed.push(unfinished(chat.span, time));
            }
            closed.push(unfinished(agent.open.span, time));
        }
        if let Some(turn) = self.turn.take() {
            let mut span = turn.open.span;
            self.last_turn = Some(span.reference());
            if unfinished_turn {
                span = unfinished(span, time);
            } else {
                span.end = time;
            }
            closed.push(span);
        }
    }
}

/// Links `span` to `to`, mirrored as the attributes `{prefix}_trace_id` and `{prefix}_span_id`:
/// not every backend keeps links (Arize Phoenix drops them).
fn link(span: &mut Span, to: SpanRef, prefix: &str) {
    span.attributes.push(KeyValue::new(
        format!("{prefix}_trace_id"),
        to.trace_id.to_string(),
    ));
    span.attributes.push(KeyValue::new(
        format!("{prefix}_span_id"),
        to.span_id.to_string(),
    ));
    span.links.push(to);
}
