//! [`Judge`]: LLM-as-judge. The judge is a workflow of your own whose agent answers with
//! structured output (a score, and a reason); each verdict is a session of its own in the
//! store, named in the score (`judgeSession`), so the judge's prompt and answer can be
//! stepped through like any run.
//!
//! A judge is asked once per run and content: its verdict is an `eval:judged` event on the
//! experiment's log ([`EvalJudged`]), keyed by the judge's definition (name, workflow and its
//! code, prompt template, score and reason pointers, provider and model; hashed), the run's
//! session and the SHA-256 of the prompt it was shown (the run's content filled in). Any later
//! scoring with the same key — `rescore`, a resume — reuses it instead of asking the model; a
//! changed rubric, model or judged content asks again. [`Judged`] counts what was reused and
//! how many model calls were made.

use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::builtin::{AgentStarted, OutputRejected};
use openharness_core::{BoxedProvider, Event, Provider, RunOptions, SessionId};
use openharness_host::Hosted;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::events::EvalJudged;
use crate::scorer::{RunView, Score, ScoreError, Scorer};

pub(crate) mod verdicts;

pub use verdicts::Judged;
pub(crate) use verdicts::{Judging, VerdictKey};

/// The provider name of agent calls answered from a recording (no model asked).
const CASSETTE: &str = "cassette";

/// A provider as an experiment file names it: `provider = { kind = "openai", model =
/// "gpt-4.1-mini", base_url = "http://…" }` — for a variant, the experiment, or a judge. The
/// program reading the file builds it (the `openharness` CLI: `anthropic`, `openai`,
/// `claude-cli`, keys from the environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// The provider's kind (`anthropic`, `openai`, `claude-cli`).
    pub kind: String,
    /// The model (default: the provider's default model).
    #[serde(default)]
    pub model: Option<String>,
    /// The API's base URL (default: the provider's own).
    #[serde(default)]
    pub base_url: Option<String>,
}

impl ProviderSpec {
    /// `kind:model`, or the kind alone: how records name it.
    pub fn label(&self) -> String {
        match &self.model {
            Some(model) => format!("{}:{model}", self.kind),
            None => self.kind.clone(),
        }
    }
}

/// The SHA-256 of `text`, in hex.
fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

type Prompt = Arc<dyn Fn(&RunView<'_>) -> String + Send + Sync>;

/// Which workflow judges.
#[derive(Clone)]
enum JudgeWorkflow {
    /// A workflow built in Rust (recording to the experiment's store).
    Hosted(Arc<dyn Hosted>),
    /// A workflow the experiment's host registers.
    Named(String),
}

/// A scorer that asks a judge workflow: the run, described by `prompt`, is the judge's input;
/// the number at `score` (a JSON pointer into the judge's final state) is the score; it
/// passes at `pass_at` or above.
///
/// ```
/// # fn demo(judge_workflow: std::sync::Arc<dyn openharness_host::Hosted>) {
/// use openharness_eval::scorers::judge;
/// let helpful = judge("helpful", judge_workflow, "/score", 0.7, |run| {
///     format!("Rate from 0 to 1 how well this answers {:?}:\n{}", run.case().inputs, run.state()["answer"])
/// })
/// .reason_at("/reason");
/// # let _ = helpful;
/// # }
/// ```
#[derive(Clone)]
pub struct Judge {
    name: String,
    workflow: JudgeWorkflow,
    prompt: Prompt,
    /// The template, for a judge from a file (part of its definition).
    template: Option<String>,
    score: String,
    reason: Option<String>,
    pass_at: f64,
    provider: Option<(String, BoxedProvider)>,
}

/// A judge built in Rust: see [`Judge`].
pub fn judge(
    name: impl Into<String>,
    workflow: Arc<dyn Hosted>,
    score: impl Into<String>,
    pass_at: f64,
    prompt: impl Fn(&RunView<'_>) -> String + Send + Sync + 'static,
) -> Judge {
    Judge {
        name: name.into(),
        workflow: JudgeWorkflow::Hosted(workflow),
        prompt: Arc::new(prompt),
        template: None,
        score: score.into(),
        reason: None,
        pass_at,
        provider: None,
    }
}

/// A judge running the host's workflow `workflow`, its prompt a template: `{state}` (the
/// run's final state as JSON), `{input}` (the case's inputs, one per line), `{expected}`
/// (the case's expected values as JSON) and `{case}` (its id) are replaced.
pub fn judge_named(
    name: impl Into<String>,
    workflow: impl Into<String>,
    score: impl Into<String>,
    pass_at: f64,
    template: impl Into<String>,
) -> Judge {
    let template = template.into();
    Judge {
        name: name.into(),
        workflow: JudgeWorkflow::Named(workflow.into()),
        prompt: Arc::new({
            let template = template.clone();
            move |run| fill(&template, run)
        }),
        template: Some(template),
        score: score.into(),
        reason: None,
        pass_at,
        provider: None,
    }
}

/// `template` with the run's `{state}`, `{input}`, `{expected}` and `{case}`.
fn fill(template: &str, run: &RunView<'_>) -> String {
    template
        .replace("{state}", &run.state().to_string())
        .replace("{input}", &run.case().inputs.join("\n"))
        .replace("{expected}", &run.case().expected.to_string())
        .replace("{case}", &run.case().id)
}

impl Judge {
    /// Also reads the judge's reason at this JSON pointer of its final state, into the
    /// score's detail.
    #[must_use]
    pub fn reason_at(mut self, pointer: impl Into<String>) -> Self {
        self.reason = Some(pointer.into());
        self
    }

    /// Asks `provider` instead of the judge workflow's own; `label` (`kind:model`) is part of
    /// the judge's definition, so verdicts of another provider or model are asked again.
    #[must_use]
    pub fn provider(self, label: impl Into<String>, provider: impl Provider) -> Self {
        self.shared_provider(label, Arc::new(provider))
    }

    /// [`Judge::provider`] with a shared provider.
    #[must_use]
    pub fn shared_provider(mut self, label: impl Into<String>, provider: BoxedProvider) -> Self {
        self.provider = Some((label.into(), provider));
        self
    }

    /// The SHA-256 of what defines this judge's verdicts, running `workflow`: its name, the
    /// workflow and its code, the template, the score and reason pointers and the provider
    /// asked (its label, else the workflow's own provider). The pass bound is left out: it is
    /// applied to the recorded value.
    fn definition(&self, workflow: &dyn Hosted) -> String {
        let code = workflow.code();
        let described = serde_json::json!({
            "judge": self.name,
            "workflow": workflow.name(),
            "code": code.code,
            "version": code.version,
            "template": self.template,
            "score": self.score,
            "reason": self.reason,
            "provider": match &self.provider {
                Some((label, _)) => Some(label.as_str()),
                None => workflow.provider_name(),
            },
        });
        sha256(&described.to_string())
    }

    /// The score of a verdict: `value`, passing at the bound, with its reason.
    fn verdict(&self, value: f64, reason: Option<String>, session: SessionId) -> Score {
        let mut score = Score::measured(value, value >= self.pass_at);
        if let Some(reason) = reason {
            score = score.because(reason);
        }
        score.judge_session = Some(session);
        score
    }
}

/// The model calls recorded in a judge's session: agent calls that asked a model (not a
/// recording), and each new ask after a rejected output.
async fn model_calls(run: &RunView<'_>, session: &SessionId) -> Result<u64, ScoreError> {
    let events = run
        .store()
        .all_events(session)
        .await
        .map_err(|err| ScoreError::new(format!("reading the judge's session: {err}")))?;
    let asked = events
        .iter()
        .filter(|event| {
            event.name == AgentStarted::NAME
                && event
                    .decode::<AgentStarted>()
                    .is_ok_and(|started| started.provider.as_deref() != Some(CASSETTE))
        })
        .count();
    let again = events
        .iter()
        .filter(|event| event.name == OutputRejected::NAME)
        .count();
    Ok((asked + again) as u64)
}

#[async_trait]
impl Scorer for Judge {
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError> {
        let host = run.host();
        let workflow = match &self.workflow {
            JudgeWorkflow::Hosted(hosted) => hosted.with_store(Arc::clone(host.store())),
            JudgeWorkflow::Named(name) => Arc::clone(
                host.hosted(name)
                    .map_err(|err| ScoreError::new(format!("the judge's workflow: {err}")))?,
            ),
        };
        let prompt = (self.prompt)(run);
        let key = VerdictKey {
            definition: self.definition(workflow.as_ref()),
            session: run.session().clone(),
            content: sha256(&prompt),
        };
        let judging = run.judging();
        if let Some(recorded) = judging.reuse(&key) {
            return Ok(self.verdict(
                recorded.value,
                recorded.reason.clone(),
                recorded.judge_session.clone(),
            ));
        }
        let workflow = match &self.provider {
            Some((_, provider)) => workflow.with_provider(Arc::clone(provider)),
            None => workflow,
        };
        let session = judge_session(run.session());
        let outcome = workflow
            .run(Some(prompt), RunOptions::new().session(session.clone()))
            .await;
        // Counted whether or not the judge gave a verdict: the calls were made.
        let calls = match model_calls(run, &session).await {
            Ok(calls) => calls,
            Err(err) => {
                tracing::warn!(judge = %self.name, %session, "model calls not counted: {err}");
                0
            }
        };
        let verdict = match outcome {
            Ok(verdict) => verdict,
            Err(err) => {
                judging.asked(None, calls);
                return Err(ScoreError::new(format!(
                    "the judge failed: {}",
                    openharness_core::adapter::ErrorChain(&err)
                )));
            }
        };
        let found = verdict.state.pointer(&self.score);
        let Some(value) = found.and_then(Value::as_f64) else {
            judging.asked(None, calls);
            return Err(ScoreError::new(format!(
                "the judge's state has no number at `{}` (session {})",
                self.score, verdict.session
            )));
        };
        let reason = self
            .reason
            .as_deref()
            .and_then(|p| verdict.state.pointer(p))
            .map(|reason| {
                reason
                    .as_str()
                    .map_or_else(|| reason.to_string(), str::to_owned)
            });
        let run_record = run.run();
        judging.asked(
            Some(EvalJudged {
                judge: self.name.clone(),
                definition: key.definition,
                case: run_record.case.clone(),
                variant: run_record.variant.clone(),
                repeat: run_record.repeat,
                session: key.session,
                content: key.content,
                value,
                reason: reason.clone(),
                judge_session: verdict.session.clone(),
                model_calls: calls,
            }),
            calls,
        );
        Ok(self.verdict(value, reason, verdict.session))
    }
}

/// The prefix of a judge's sessions: `judge:<judged run's session>:<fresh id>`, so a resume
/// of the experiment finds the verdicts a killed process left under way (and closes them),
/// and no query mistakes one for a recording.
pub const JUDGE_PREFIX: &str = "judge:";

/// A fresh session for a judge of the run recorded in `judged`.
pub(crate) fn judge_session(judged: &SessionId) -> SessionId {
    format!("{JUDGE_PREFIX}{judged}:{}", SessionId::new())
        .parse()
        // A run's session id too long to name in a judge's (over 150 bytes): a plain fresh id.
        .unwrap_or_default()
}

/// The run whose judging `session` is, when it is a judge's session.
pub(crate) fn judged_run(session: &SessionId) -> Option<&str> {
    let rest = session.as_str().strip_prefix(JUDGE_PREFIX)?;
    rest.rsplit_once(':').map(|(judged, _)| judged)
}
