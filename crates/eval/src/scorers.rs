//! The built-in scorers, and [`ScorerSpec`]: the same scorers written in an experiment file.
//!
//! | scorer | passes when | value |
//! |---|---|---|
//! | [`predicate`] / [`typed`] | a predicate holds on the final state | 1 / 0 |
//! | [`ever`] | a predicate holds on some state along the run | 1 / 0 |
//! | [`equals`] | a field equals the expected value | 1 / 0 |
//! | [`contains`] | a field's text (or list) contains the expected value | 1 / 0 |
//! | [`matches()`] | a field's text matches a regex | 1 / 0 |
//! | [`json_schema`] | a field is valid against a JSON Schema | 1 / 0 |
//! | [`tool_calls`] | a tool was called within `min..=max` times | calls |
//! | [`agent_calls`] / [`turns`] | within a bound | calls / turns |
//! | [`cost`] / [`tokens`] / [`latency`] | within a bound | dollars / tokens / ms (lower is better) |
//!
//! | [`judge`] / [`judge_named`] | a judge workflow's score is at least a bound | its score |
//!
//! A [`Field`] is a JSON pointer into the final state, or into the last successful output of
//! an agent; an [`Expect`] is a value, or a pointer into the case's `expected`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use openharness_core::builtin::{AgentCompleted, Outcome, ToolCalled};
use openharness_core::{BoxedProvider, Envelope, Event};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::judge::{Judge, ProviderSpec, judge, judge_named};

use crate::events::Better;
use crate::scorer::{RunView, Score, ScoreError, Scorer};

type StatePredicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Where a scorer reads a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", untagged)]
pub enum Field {
    /// The last successful output of `agent`, at `pointer` (`""` for all of it).
    Output {
        /// The agent.
        agent: String,
        /// A JSON pointer into its output.
        #[serde(default)]
        pointer: String,
    },
    /// The final state at `state`, a JSON pointer (`""` for all of it).
    State {
        /// A JSON pointer into the state.
        state: String,
    },
}

impl Field {
    /// The final state at `pointer`.
    pub fn state(pointer: impl Into<String>) -> Self {
        Self::State {
            state: pointer.into(),
        }
    }

    /// The last successful output of `agent` at `pointer`.
    pub fn output(agent: impl Into<String>, pointer: impl Into<String>) -> Self {
        Self::Output {
            agent: agent.into(),
            pointer: pointer.into(),
        }
    }

    async fn read(&self, run: &RunView<'_>) -> Result<Value, ScoreError> {
        match self {
            Self::State { state } => run.state().pointer(state).cloned().ok_or_else(|| {
                ScoreError::new(format!("the final state has no field at `{state}`"))
            }),
            Self::Output { agent, pointer } => {
                let output = last_output(run.events().await?, agent).ok_or_else(|| {
                    ScoreError::new(format!("agent `{agent}` never completed with an output"))
                })?;
                output.pointer(pointer).cloned().ok_or_else(|| {
                    ScoreError::new(format!("`{agent}`'s output has no field at `{pointer}`"))
                })
            }
        }
    }
}

fn last_output(events: &[Envelope], agent: &str) -> Option<Value> {
    events.iter().rev().find_map(|event| {
        if event.name != AgentCompleted::NAME {
            return None;
        }
        let completed = event.decode::<AgentCompleted>().ok()?;
        (completed.agent == agent && completed.outcome == Outcome::Success)
            .then_some(completed.output)
            .flatten()
    })
}

/// What a field is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", untagged)]
pub enum Expect {
    /// The case's `expected` at a JSON pointer: `{"case": "/answer"}`.
    Case {
        /// The pointer into the case's `expected`.
        case: String,
    },
    /// This value.
    Value(Value),
}

impl Expect {
    /// The case's `expected` at `pointer`.
    pub fn case(pointer: impl Into<String>) -> Self {
        Self::Case {
            case: pointer.into(),
        }
    }

    fn resolve(&self, run: &RunView<'_>) -> Result<Value, ScoreError> {
        match self {
            Self::Value(value) => Ok(value.clone()),
            Self::Case { case } => run.case().expected.pointer(case).cloned().ok_or_else(|| {
                ScoreError::new(format!(
                    "case `{}` expects nothing at `{case}`",
                    run.case().id
                ))
            }),
        }
    }
}

impl From<Value> for Expect {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl From<&str> for Expect {
    fn from(value: &str) -> Self {
        Self::Value(Value::String(value.to_owned()))
    }
}

/// A built-in scorer: a name and what it checks.
#[derive(Clone)]
pub struct BuiltinScorer {
    name: String,
    check: Check,
}

impl std::fmt::Debug for BuiltinScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinScorer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
enum Check {
    Final(StatePredicate),
    Ever(StatePredicate),
    Equals(Field, Expect),
    Contains(Field, Expect),
    Matches(Field, regex::Regex),
    Schema(Field, Arc<jsonschema::Validator>),
    ToolCalls {
        tool: Option<String>,
        min: u64,
        max: Option<u64>,
    },
    AgentCalls(u64),
    Turns(u32),
    Cost(f64),
    Tokens(u64),
    LatencyMs(f64),
}

fn scorer(name: impl Into<String>, check: Check) -> BuiltinScorer {
    BuiltinScorer {
        name: name.into(),
        check,
    }
}

/// Passes when `pred` holds on the final state (as JSON).
pub fn predicate(
    name: impl Into<String>,
    pred: impl Fn(&Value) -> bool + Send + Sync + 'static,
) -> BuiltinScorer {
    scorer(name, Check::Final(Arc::new(pred)))
}

/// Passes when `pred` holds on the final state, decoded as `S` (a run whose state does not
/// decode fails, saying why).
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Plan { tasks: Vec<String> }
/// let small = openharness_eval::scorers::typed("small-plan", |plan: &Plan| plan.tasks.len() <= 3);
/// # let _ = small;
/// ```
pub fn typed<S: DeserializeOwned>(
    name: impl Into<String>,
    pred: impl Fn(&S) -> bool + Send + Sync + 'static,
) -> BuiltinScorer {
    predicate(name, move |state| {
        serde_json::from_value::<S>(state.clone()).is_ok_and(|state| pred(&state))
    })
}

/// Passes when `pred` holds on some state along the run (position 0 to the end).
pub fn ever(
    name: impl Into<String>,
    pred: impl Fn(&Value) -> bool + Send + Sync + 'static,
) -> BuiltinScorer {
    scorer(name, Check::Ever(Arc::new(pred)))
}

/// Passes when `field` equals `expect`.
pub fn equals(name: impl Into<String>, field: Field, expect: impl Into<Expect>) -> BuiltinScorer {
    scorer(name, Check::Equals(field, expect.into()))
}

/// Passes when `field` contains `expect`: a substring of a string, an element of a list.
pub fn contains(name: impl Into<String>, field: Field, expect: impl Into<Expect>) -> BuiltinScorer {
    scorer(name, Check::Contains(field, expect.into()))
}

/// Passes when `field` is a string matching `pattern`.
pub fn matches(
    name: impl Into<String>,
    field: Field,
    pattern: &str,
) -> Result<BuiltinScorer, regex::Error> {
    Ok(scorer(
        name,
        Check::Matches(field, regex::Regex::new(pattern)?),
    ))
}

/// Passes when `field` is valid against the JSON Schema `schema`.
pub fn json_schema(
    name: impl Into<String>,
    field: Field,
    schema: &Value,
) -> Result<BuiltinScorer, String> {
    let validator = jsonschema::validator_for(schema).map_err(|err| err.to_string())?;
    Ok(scorer(name, Check::Schema(field, Arc::new(validator))))
}

/// Passes when `tool` (any tool, if `None`) was called between `min` and `max` times; the
/// value is the number of calls.
pub fn tool_calls(
    name: impl Into<String>,
    tool: Option<&str>,
    min: u64,
    max: Option<u64>,
) -> BuiltinScorer {
    scorer(
        name,
        Check::ToolCalls {
            tool: tool.map(str::to_owned),
            min,
            max,
        },
    )
}

/// Passes when `tool` was called at least once.
pub fn tool_called(name: impl Into<String>, tool: &str) -> BuiltinScorer {
    tool_calls(name, Some(tool), 1, None)
}

/// Passes when the run started at most `max` agent calls; the value is the count.
pub fn agent_calls(name: impl Into<String>, max: u64) -> BuiltinScorer {
    scorer(name, Check::AgentCalls(max))
}

/// Passes when the run took at most `max` turns; the value is the count.
pub fn turns(name: impl Into<String>, max: u32) -> BuiltinScorer {
    scorer(name, Check::Turns(max))
}

/// Passes when the run cost at most `max` dollars; the value is its cost (lower is better).
pub fn cost(name: impl Into<String>, max: f64) -> BuiltinScorer {
    scorer(name, Check::Cost(max))
}

/// Passes when the run used at most `max` tokens (input + output); the value is the count.
pub fn tokens(name: impl Into<String>, max: u64) -> BuiltinScorer {
    scorer(name, Check::Tokens(max))
}

/// Passes when the run took at most `max` wall time; the value is its milliseconds.
pub fn latency(name: impl Into<String>, max: Duration) -> BuiltinScorer {
    scorer(name, Check::LatencyMs(max.as_secs_f64() * 1000.0))
}

fn short(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

fn within(value: f64, max: f64, unit: &str) -> Score {
    Score::measured(value, value <= max).because(format!("{value}{unit} (at most {max}{unit})"))
}

#[async_trait]
impl Scorer for BuiltinScorer {
    fn name(&self) -> &str {
        &self.name
    }

    fn better(&self) -> Better {
        match self.check {
            Check::AgentCalls(_)
            | Check::Turns(_)
            | Check::Cost(_)
            | Check::Tokens(_)
            | Check::LatencyMs(_) => Better::Lower,
            _ => Better::Higher,
        }
    }

    async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError> {
        Ok(match &self.check {
            Check::Final(pred) => Score::check(pred(run.state())),
            Check::Ever(pred) => {
                let len = run.run().len;
                let positions: Vec<u64> = (0..=len).collect();
                let states = run
                    .host()
                    .states_at(run.session(), &positions)
                    .await
                    .map_err(|err| ScoreError::new(format!("folding the run's states: {err}")))?;
                match states.iter().find(|at| pred(&at.state)) {
                    Some(at) => {
                        Score::check(true).because(format!("holds at position {}", at.position))
                    }
                    None => {
                        Score::check(false).because(format!("holds at none of positions 0..={len}"))
                    }
                }
            }
            Check::Equals(field, expect) => {
                let (found, expected) = (field.read(run).await?, expect.resolve(run)?);
                Score::check(found == expected).because(format!(
                    "found {}, expected {}",
                    short(&found),
                    short(&expected)
                ))
            }
            Check::Contains(field, expect) => {
                let (found, expected) = (field.read(run).await?, expect.resolve(run)?);
                let hit = match (&found, &expected) {
                    (Value::String(text), Value::String(needle)) => text.contains(needle.as_str()),
                    (Value::Array(items), needle) => items.contains(needle),
                    _ => false,
                };
                Score::check(hit).because(format!("{} in {}", short(&expected), short(&found)))
            }
            Check::Matches(field, regex) => {
                let found = field.read(run).await?;
                let hit = found.as_str().is_some_and(|text| regex.is_match(text));
                Score::check(hit).because(format!("/{}/ against {}", regex.as_str(), short(&found)))
            }
            Check::Schema(field, validator) => {
                let found = field.read(run).await?;
                match validator.iter_errors(&found).next() {
                    None => Score::check(true),
                    Some(error) => Score::check(false).because(format!(
                        "{} at `{}`",
                        error,
                        error.instance_path()
                    )),
                }
            }
            Check::ToolCalls { tool, min, max } => {
                let calls = run
                    .events()
                    .await?
                    .iter()
                    .filter(|event| event.name == ToolCalled::NAME)
                    .filter(|event| match tool {
                        None => true,
                        Some(tool) => event
                            .decode::<ToolCalled>()
                            .is_ok_and(|called| &called.tool == tool),
                    })
                    .count() as u64;
                let passed = calls >= *min && max.is_none_or(|max| calls <= max);
                let what = tool
                    .as_deref()
                    .map_or_else(|| "any tool".to_owned(), |t| format!("`{t}`"));
                Score::measured(calls as f64, passed)
                    .because(format!("{what} called {calls} times"))
            }
            Check::AgentCalls(max) => {
                let calls = run
                    .events()
                    .await?
                    .iter()
                    .filter(|event| event.name == openharness_core::builtin::AgentStarted::NAME)
                    .count();
                within(calls as f64, *max as f64, " calls")
            }
            Check::Turns(max) => within(f64::from(run.run().turns), f64::from(*max), " turns"),
            Check::Cost(max) => within(run.run().cost, *max, " $"),
            Check::Tokens(max) => {
                let usage = &run.run().usage;
                within(
                    (usage.input_tokens + usage.output_tokens) as f64,
                    *max as f64,
                    " tokens",
                )
            }
            Check::LatencyMs(max) => within(run.run().latency_ms.round(), *max, " ms"),
        })
    }
}

/// A built-in scorer as an experiment file writes it (`[[scorer]]` in TOML):
///
/// ```toml
/// [[scorer]]
/// name = "all-tasks-done"
/// kind = "equals"
/// field = { state = "/completed" }
/// expect = { case = "/tasks" }
///
/// [[scorer]]
/// name = "mentions-release"
/// kind = "matches"
/// field = { agent = "executor", pointer = "/summary" }
/// pattern = "(?i)release"
///
/// [[scorer]]
/// name = "cheap"
/// kind = "cost"
/// max = 0.05
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum ScorerSpec {
    /// [`equals`].
    Equals {
        /// Its name.
        name: String,
        /// What it reads.
        field: Field,
        /// What it compares with.
        expect: Expect,
    },
    /// [`contains`].
    Contains {
        /// Its name.
        name: String,
        /// What it reads.
        field: Field,
        /// What must be in it.
        expect: Expect,
    },
    /// [`matches()`].
    Matches {
        /// Its name.
        name: String,
        /// What it reads.
        field: Field,
        /// The regex.
        pattern: String,
    },
    /// [`json_schema`].
    JsonSchema {
        /// Its name.
        name: String,
        /// What it reads.
        field: Field,
        /// The schema.
        schema: Value,
    },
    /// [`tool_calls`].
    ToolCalls {
        /// Its name.
        name: String,
        /// The tool (any, if absent).
        #[serde(default)]
        tool: Option<String>,
        /// At least this many calls.
        #[serde(default)]
        min: u64,
        /// At most this many.
        #[serde(default)]
        max: Option<u64>,
    },
    /// [`agent_calls`].
    AgentCalls {
        /// Its name.
        name: String,
        /// The bound.
        max: u64,
    },
    /// [`turns`].
    Turns {
        /// Its name.
        name: String,
        /// The bound.
        max: u32,
    },
    /// [`cost`].
    Cost {
        /// Its name.
        name: String,
        /// The bound, in dollars.
        max: f64,
    },
    /// [`tokens`].
    Tokens {
        /// Its name.
        name: String,
        /// The bound.
        max: u64,
    },
    /// [`judge_named`]: a workflow the host registers judges each run.
    Judge {
        /// Its name.
        name: String,
        /// The judge's workflow.
        workflow: String,
        /// The prompt: `{state}`, `{input}`, `{expected}` and `{case}` are replaced.
        prompt: String,
        /// A JSON pointer to the score in the judge's final state.
        score: String,
        /// The score at which a run passes.
        pass_at: f64,
        /// A JSON pointer to the judge's reason, if it gives one.
        #[serde(default)]
        reason: Option<String>,
        /// The provider and model the judge asks (default: its workflow's own), built by
        /// [`ScorerSpec::build_with`].
        #[serde(default)]
        provider: Option<ProviderSpec>,
    },
    /// [`latency`].
    Latency {
        /// Its name.
        name: String,
        /// The bound, in milliseconds.
        max_ms: u64,
    },
}

/// Builds the provider a file names, with its label (`kind:model`), or says why it cannot.
pub type BuildProvider<'a> = &'a dyn Fn(&ProviderSpec) -> Result<(String, BoxedProvider), String>;

impl ScorerSpec {
    /// The scorer this spec describes; a bad regex or schema is refused, saying why, and so
    /// is a judge naming a provider (built by [`ScorerSpec::build_with`]).
    pub fn build(&self) -> Result<Arc<dyn Scorer>, String> {
        self.build_with(&|spec| {
            Err(format!(
                "provider `{}` cannot be built here (ScorerSpec::build_with builds providers)",
                spec.label()
            ))
        })
    }

    /// [`ScorerSpec::build`], building a judge's provider with `provider`.
    pub fn build_with(&self, provider: BuildProvider<'_>) -> Result<Arc<dyn Scorer>, String> {
        let builtin = match self.clone() {
            Self::Judge {
                name,
                workflow,
                prompt,
                score,
                pass_at,
                reason,
                provider: spec,
            } => {
                let mut judge = judge_named(name.clone(), workflow, score, pass_at, prompt);
                if let Some(reason) = reason {
                    judge = judge.reason_at(reason);
                }
                if let Some(spec) = spec {
                    let (label, built) =
                        provider(&spec).map_err(|err| format!("judge `{name}`: {err}"))?;
                    judge = judge.shared_provider(label, built);
                }
                return Ok(Arc::new(judge));
            }
            Self::Equals {
                name,
                field,
                expect,
            } => equals(name, field, expect),
            Self::Contains {
                name,
                field,
                expect,
            } => contains(name, field, expect),
            Self::Matches {
                name,
                field,
                pattern,
            } => {
                matches(&name, field, &pattern).map_err(|err| format!("scorer `{name}`: {err}"))?
            }
            Self::JsonSchema {
                name,
                field,
                schema,
            } => json_schema(&name, field, &schema)
                .map_err(|err| format!("scorer `{name}`: {err}"))?,
            Self::ToolCalls {
                name,
                tool,
                min,
                max,
            } => tool_calls(name, tool.as_deref(), min, max),
            Self::AgentCalls { name, max } => agent_calls(name, max),
            Self::Turns { name, max } => turns(name, max),
            Self::Cost { name, max } => cost(name, max),
            Self::Tokens { name, max } => tokens(name, max),
            Self::Latency { name, max_ms } => latency(name, Duration::from_millis(max_ms)),
        };
        Ok(Arc::new(builtin))
    }
}

#[cfg(test)]
mod tests;
