//! [`Judge`]: LLM-as-judge. The judge is a workflow of your own whose agent answers with
//! structured output (a score, and a reason); each verdict is a session of its own in the
//! store, named in the score (`judgeSession`), so reading it again costs nothing, and the
//! judge's prompt and answer can be stepped through like any run.

use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::RunOptions;
use openharness_host::Hosted;
use serde_json::Value;

use crate::scorer::{RunView, Score, ScoreError, Scorer};

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
    score: String,
    reason: Option<String>,
    pass_at: f64,
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
        score: score.into(),
        reason: None,
        pass_at,
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
        prompt: Arc::new(move |run| fill(&template, run)),
        score: score.into(),
        reason: None,
        pass_at,
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
        let verdict = workflow
            .run(Some(prompt), RunOptions::new())
            .await
            .map_err(|err| {
                ScoreError::new(format!(
                    "the judge failed: {}",
                    openharness_core::adapter::ErrorChain(&err)
                ))
            })?;
        let found = verdict.state.pointer(&self.score);
        let Some(value) = found.and_then(Value::as_f64) else {
            return Err(ScoreError::new(format!(
                "the judge's state has no number at `{}` (session {})",
                self.score, verdict.session
            )));
        };
        let mut score = Score::measured(value, value >= self.pass_at);
        if let Some(reason) = self
            .reason
            .as_deref()
            .and_then(|p| verdict.state.pointer(p))
        {
            score = score.because(
                reason
                    .as_str()
                    .map_or_else(|| reason.to_string(), str::to_owned),
            );
        }
        score.judge_session = Some(verdict.session);
        Ok(score)
    }
}
