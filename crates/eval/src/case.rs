//! [`Case`]: what one row of an experiment starts from — inputs to a new session (a dataset
//! line), or a recorded session and a point in it ([`ForkAt`]) — with the answers to give
//! when the run asks a person, the expected values scorers compare with, and metadata.
//!
//! A dataset is JSONL, one case per line ([`Case::from_jsonl`]):
//!
//! ```json
//! {"id": "ship", "input": "Ship version 0.1", "answers": ["yes"], "expected": {"tasks": 3}}
//! {"id": "chat", "inputs": ["hello", "and then?"], "metadata": {"lang": "en"}}
//! {"id": "from-run", "session": "0193…", "at": {"event": "task:started", "n": 1}}
//! {"id": "coding", "session": "0193…", "at": {"phase": "coding", "occurrence": "first"}}
//! ```

use std::fmt;
use std::sync::Arc;

use openharness_core::SessionId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::EvalError;
use crate::events::DatasetRef;

/// One case of an experiment.
///
/// ```
/// use openharness_eval::{Case, ForkAt};
/// let from_input = Case::input("ship", "Ship version 0.1").answers(["yes"]);
/// let parent: openharness_core::SessionId = "0193a1b2".parse().unwrap();
/// let from_recording = Case::recording("first-task", parent, ForkAt::event("task:started", 1));
/// assert!(from_input.session.is_none());
/// assert_eq!(from_recording.at, Some(ForkAt::event("task:started", 1)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// The case's id, unique in its experiment.
    pub id: String,
    /// Inputs: the first starts the session (or, for a recording, follows the fork's first
    /// turn), each next one is a later turn (multi-turn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// The workflow a case from inputs runs (default: the variant's, else the experiment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The recorded session a case from a recording forks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// Where in `session` to fork (default: its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<ForkAt>,
    /// Answers to the run's `input:requested`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    /// Expected values, for scorers ([`crate::Expect::Case`]).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub expected: Value,
    /// Anything else (tags, difficulty, ...), kept in the experiment's log.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// The dataset (and version) the case came from ([`crate::Dataset::cases`]), kept in the
    /// experiment's log; not read from a file.
    #[serde(skip)]
    pub dataset: Option<DatasetRef>,
}

impl Case {
    /// A case whose run starts a new session with `input`.
    pub fn input(id: impl Into<String>, input: impl Into<String>) -> Self {
        Self::inputs(id, [input])
    }

    /// A multi-turn case: the first input starts the session, each next one is a turn.
    pub fn inputs(
        id: impl Into<String>,
        inputs: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            id: id.into(),
            inputs: inputs.into_iter().map(Into::into).collect(),
            workflow: None,
            session: None,
            at: None,
            answers: Vec::new(),
            expected: Value::Null,
            metadata: Value::Null,
            dataset: None,
        }
    }

    /// A case whose runs fork `session` at `at`: what came before is served from the log.
    pub fn recording(id: impl Into<String>, session: SessionId, at: ForkAt) -> Self {
        Self {
            session: Some(session),
            at: Some(at),
            ..Self::inputs(id, Vec::<String>::new())
        }
    }

    /// Answers to give, in order, when the run asks a person.
    #[must_use]
    pub fn answers(mut self, answers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.answers = answers.into_iter().map(Into::into).collect();
        self
    }

    /// Expected values for scorers.
    #[must_use]
    pub fn expected(mut self, expected: Value) -> Self {
        self.expected = expected;
        self
    }

    /// Metadata, kept with the case.
    #[must_use]
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// The workflow a case from inputs runs.
    #[must_use]
    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.workflow = Some(workflow.into());
        self
    }

    /// Reads a JSONL dataset: one case per line (blank lines and lines starting with `//`
    /// are skipped). `"input": "…"` is short for `"inputs": ["…"]`; a case without an `id`
    /// is named `line-N`. Fails at the first bad line, naming it.
    ///
    /// ```
    /// let cases = openharness_eval::Case::from_jsonl(
    ///     "cases.jsonl",
    ///     "{\"id\": \"a\", \"input\": \"hi\"}\n\n{\"inputs\": [\"x\", \"y\"], \"answers\": [\"yes\"]}\n",
    /// ).unwrap();
    /// assert_eq!(cases[0].inputs, ["hi"]);
    /// assert_eq!(cases[1].id, "line-3");
    /// let err = openharness_eval::Case::from_jsonl("cases.jsonl", "{\"input\": 3}").unwrap_err();
    /// assert!(err.to_string().starts_with("cases.jsonl, line 1:"), "{err}");
    /// ```
    pub fn from_jsonl(source_name: &str, text: &str) -> Result<Vec<Self>, EvalError> {
        let mut cases: Vec<Self> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with("//") {
                continue;
            }
            let bad = |message: String| EvalError::Dataset {
                source_name: source_name.to_owned(),
                line: line_no,
                message,
            };
            let mut value: Value =
                serde_json::from_str(trimmed).map_err(|err| bad(format!("not JSON: {err}")))?;
            let Some(object) = value.as_object_mut() else {
                return Err(bad("a case is a JSON object".to_owned()));
            };
            if let Some(input) = object.remove("input") {
                if object.contains_key("inputs") {
                    return Err(bad("give `input` or `inputs`, not both".to_owned()));
                }
                object.insert("inputs".to_owned(), Value::Array(vec![input]));
            }
            object
                .entry("id")
                .or_insert_with(|| Value::String(format!("line-{line_no}")));
            let case: Self = serde_json::from_value(value).map_err(|err| bad(err.to_string()))?;
            case.check().map_err(bad)?;
            if cases.iter().any(|c| c.id == case.id) {
                return Err(bad(format!("case id `{}` is used twice", case.id)));
            }
            cases.push(case);
        }
        Ok(cases)
    }

    /// Whether the case can run: a fork point needs a session.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.id.is_empty() {
            return Err("a case's `id` may not be empty".to_owned());
        }
        if self.at.is_some() && self.session.is_none() {
            return Err(format!(
                "case `{}` has `at` but no `session` to fork",
                self.id
            ));
        }
        Ok(())
    }
}

/// Where a case from a recording forks its session.
///
/// In a dataset: `{"position": 12}`, `{"event": "task:started", "n": 1}` (right after the
/// first `task:started`), `{"phase": "coding", "occurrence": "first"}` (the first position
/// where the state's `/phase` becomes `"coding"`; `"field": "/stage"` names another field,
/// `"occurrence"` may be `"first"`, `"last"` or a number from 1). In Rust, also
/// [`ForkAt::state`]: the first position whose state satisfies a predicate.
#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ForkAt {
    /// A position of the session (clamped to its length).
    Position {
        /// The position.
        position: u64,
    },
    /// Right after the `n`th (from 1) event named `event`.
    Event {
        /// The event name.
        event: String,
        /// Which occurrence, from 1.
        #[serde(default = "first")]
        n: usize,
    },
    /// Where the state's `field` (a JSON pointer, default `/phase`) becomes `phase`.
    Phase {
        /// The value the field takes on entering the phase.
        phase: Value,
        /// Which entry into it.
        #[serde(default)]
        occurrence: Occurrence,
        /// The state field, as a JSON pointer.
        #[serde(default = "phase_field")]
        field: String,
    },
    /// The first position whose state (as JSON) satisfies a predicate (Rust only).
    #[serde(skip)]
    State(Arc<dyn Fn(&Value) -> bool + Send + Sync>),
}

fn first() -> usize {
    1
}

fn phase_field() -> String {
    "/phase".to_owned()
}

impl ForkAt {
    /// At position `position`.
    pub fn position(position: u64) -> Self {
        Self::Position { position }
    }

    /// Right after the `n`th (from 1) event named `event`.
    pub fn event(event: impl Into<String>, n: usize) -> Self {
        Self::Event {
            event: event.into(),
            n,
        }
    }

    /// The first entry into phase `phase` (the state's `/phase` becomes it).
    pub fn phase(phase: impl Into<Value>) -> Self {
        Self::Phase {
            phase: phase.into(),
            occurrence: Occurrence::FIRST,
            field: phase_field(),
        }
    }

    /// The first position whose state satisfies `pred`.
    pub fn state(pred: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        Self::State(Arc::new(pred))
    }
}

impl PartialEq for ForkAt {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Position { position: a }, Self::Position { position: b }) => a == b,
            (Self::Event { event: a, n: x }, Self::Event { event: b, n: y }) => a == b && x == y,
            (
                Self::Phase {
                    phase: a,
                    occurrence: x,
                    field: f,
                },
                Self::Phase {
                    phase: b,
                    occurrence: y,
                    field: g,
                },
            ) => a == b && x == y && f == g,
            (Self::State(a), Self::State(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for ForkAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Position { position } => write!(f, "position {position}"),
            Self::Event { event, n } => write!(f, "occurrence {n} of `{event}`"),
            Self::Phase {
                phase,
                occurrence,
                field,
            } => write!(f, "the {occurrence} entry of `{field}` into {phase}"),
            Self::State(_) => f.write_str("a predicate on the state"),
        }
    }
}

/// Which entry into a phase ([`ForkAt::Phase`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Occurrence {
    /// A named one: `"first"` (the default) or `"last"`.
    Named(Named),
    /// The `n`th, from 1.
    Nth(usize),
}

impl Occurrence {
    /// The first entry.
    pub const FIRST: Self = Self::Named(Named::First);
    /// The last entry.
    pub const LAST: Self = Self::Named(Named::Last);
}

impl Default for Occurrence {
    fn default() -> Self {
        Self::FIRST
    }
}

/// `"first"` or `"last"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Named {
    /// The first entry.
    First,
    /// The last entry.
    Last,
}

impl fmt::Display for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(Named::First) => f.write_str("first"),
            Self::Named(Named::Last) => f.write_str("last"),
            Self::Nth(n) => write!(f, "#{n}"),
        }
    }
}

impl Occurrence {
    /// Picks this occurrence from `entries` (positions in order).
    pub(crate) fn pick(self, entries: &[u64]) -> Option<u64> {
        match self {
            Self::Named(Named::First) => entries.first().copied(),
            Self::Named(Named::Last) => entries.last().copied(),
            Self::Nth(n) => entries.get(n.checked_sub(1)?).copied(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fork_points_read_from_json() {
        let at: ForkAt = serde_json::from_value(json!({ "position": 4 })).unwrap();
        assert_eq!(at, ForkAt::position(4));
        let at: ForkAt = serde_json::from_value(json!({ "event": "task:started" })).unwrap();
        assert_eq!(at, ForkAt::event("task:started", 1));
        let at: ForkAt =
            serde_json::from_value(json!({ "phase": "coding", "occurrence": "last" })).unwrap();
        let ForkAt::Phase {
            occurrence, field, ..
        } = &at
        else {
            panic!("{at:?}")
        };
        assert_eq!(*occurrence, Occurrence::Named(Named::Last));
        assert_eq!(field, "/phase");
        let at: ForkAt = serde_json::from_value(
            json!({ "phase": "coding", "occurrence": 2, "field": "/stage" }),
        )
        .unwrap();
        assert_eq!(
            format!("{at:?}"),
            "the #2 entry of `/stage` into \"coding\""
        );
        assert!(serde_json::from_value::<ForkAt>(json!({ "nowhere": 1 })).is_err());
    }

    #[test]
    fn occurrences_pick_from_entries() {
        let entries = [3, 9, 14];
        assert_eq!(Occurrence::FIRST.pick(&entries), Some(3));
        assert_eq!(Occurrence::Named(Named::Last).pick(&entries), Some(14));
        assert_eq!(Occurrence::Nth(2).pick(&entries), Some(9));
        assert_eq!(Occurrence::Nth(0).pick(&entries), None);
        assert_eq!(Occurrence::Nth(4).pick(&entries), None);
    }

    #[test]
    fn bad_dataset_lines_are_named() {
        for (text, expect) in [
            ("[1]", "line 1: a case is a JSON object"),
            (
                "{\"id\":\"a\"}\n{\"id\":\"a\"}",
                "line 2: case id `a` is used twice",
            ),
            (
                "{\"at\": {\"position\": 1}}",
                "line 1: case `line-1` has `at` but no `session`",
            ),
            (
                "{\"input\": \"x\", \"inputs\": []}",
                "line 1: give `input` or `inputs`",
            ),
            ("{\"inputz\": []}", "line 1: unknown field `inputz`"),
            ("{", "line 1: not JSON"),
        ] {
            let err = Case::from_jsonl("d.jsonl", text).unwrap_err().to_string();
            assert!(err.contains(expect), "{text}: {err}");
        }
    }
}
