//! [`ExperimentFile`]: an experiment as a file writes it (TOML, or the same as JSON), the one
//! format `openharness eval run` reads and `POST /experiments` takes, and the [`Experiment`]
//! it describes over a host. Who reads it decides how its provider tables are built (the CLI
//! builds live providers from them; a server may refuse them) and where a `dataset` file is;
//! `[[datasets]]` tables name datasets in the host's store ([`crate::Dataset`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openharness_core::{BoxedProvider, RunOptions};
use openharness_host::Host;
use serde::Deserialize;
use serde_json::Value;

use crate::case::Case;
use crate::dataset::Dataset;
use crate::error::EvalError;
use crate::experiment::Experiment;
use crate::judge::ProviderSpec;
use crate::recordings::Recordings;
use crate::scorer::Scorer;
use crate::scorers::ScorerSpec;
use crate::variant::{AgentChange, Variant};

/// An experiment file: its cases (inline, from a `dataset` JSONL file, chosen by
/// `recordings` queries, or the cases of `datasets` in the store), variants, repeats, scorers, the provider variants that name none
/// ask, the gate and the guards of every turn. Unknown keys are refused.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// The experiment's name (its log is the session `eval:<name>`).
    pub name: String,
    /// The workflow cases from inputs run.
    #[serde(default)]
    pub workflow: Option<String>,
    /// A JSONL file of cases, relative to the experiment file.
    #[serde(default)]
    pub dataset: Option<PathBuf>,
    /// Cases written inline (`[[case]]`).
    #[serde(default, rename = "case", alias = "cases")]
    pub cases: Vec<Case>,
    /// Cases chosen by a query over the recorded sessions (`[[recordings]]`).
    #[serde(default)]
    pub recordings: Vec<Recordings>,
    /// The cases of datasets in the store, each at a version (`[[datasets]]`; not the
    /// `dataset` key, a JSONL file).
    #[serde(default)]
    pub datasets: Vec<DatasetTable>,
    /// The variants (`[[variant]]`); none is one, `baseline`, changing nothing.
    #[serde(default, rename = "variant", alias = "variants")]
    pub variants: Vec<VariantFile>,
    /// The variant the others are compared with (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Runs per case and variant.
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Runs at once.
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// The scorers (`[[scorer]]`).
    #[serde(default, rename = "scorer", alias = "scorers")]
    pub scorers: Vec<ScorerSpec>,
    /// The provider variants that name none ask, instead of the one their case's recording
    /// asked.
    #[serde(default)]
    pub provider: Option<ProviderSpec>,
    /// The gate: a scorer whose mean (or pass rate) is worse than the baseline's by more than
    /// this fails `eval compare` (unless `--report-only`); recorded with the definition.
    #[serde(default)]
    pub max_regression: Option<f64>,
    /// Guard of every turn of every run: the most agent calls.
    #[serde(default)]
    pub max_agent_calls: Option<u64>,
    /// Guard of every turn of every run: the most it may cost.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// Guard of every turn of every run: its deadline, in seconds.
    #[serde(default)]
    pub deadline_secs: Option<u64>,
}

/// A dataset an experiment file takes its cases from (`[[datasets]]`): its cases at
/// `version` (the latest when absent), with `answers` for every case's runs when given
/// (instead of those each case was added with).
///
/// ```
/// let file = openharness_eval::ExperimentFile::from_toml(
///     "name = \"refunds\"\n[[datasets]]\nname = \"refunds\"\nversion = 3\nanswers = [\"yes\"]\n",
/// )?;
/// assert_eq!(file.datasets[0].version, Some(3));
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetTable {
    /// The dataset's name.
    pub name: String,
    /// Its version (the latest when absent).
    #[serde(default)]
    pub version: Option<u64>,
    /// Answers for every case's runs, instead of the ones each was added with.
    #[serde(default)]
    pub answers: Option<Vec<String>>,
}

/// A variant as an experiment file writes it (`[[variant]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantFile {
    /// Its name.
    pub name: String,
    /// What it changes, in words.
    #[serde(default)]
    pub description: Option<String>,
    /// Another registered workflow it runs.
    #[serde(default)]
    pub workflow: Option<String>,
    /// The provider its agents ask.
    #[serde(default)]
    pub provider: Option<ProviderSpec>,
    /// A JSON merge patch on the state at the fork point.
    #[serde(default)]
    pub state: Option<Value>,
    /// What it changes of each agent, by agent name (`[variant.agents.<name>]`: `system`,
    /// `wrap_system`, `prompt`, `model`, `reasoning`; see [`AgentChange`]).
    #[serde(default)]
    pub agents: std::collections::BTreeMap<String, AgentChange>,
}

/// Builds a provider table of the file: its label (`kind[:model]`) and the provider.
pub type ProviderBuilder<'a, E> =
    &'a (dyn Fn(&ProviderSpec) -> Result<(String, BoxedProvider), E> + Send + Sync);

impl ExperimentFile {
    /// Reads an experiment file written in TOML.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|err| err.to_string())
    }

    /// Reads an experiment file written in JSON (the same keys as the TOML).
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|err| err.to_string())
    }

    /// The experiment the file describes, over `host`: a `dataset` is read relative to `dir`
    /// (refused without one), `recordings` queries are run on the host's store, provider
    /// tables (the experiment's, variants' and judges') are built by `provider`.
    pub async fn experiment<E: From<EvalError>>(
        self,
        host: &Host,
        dir: Option<&Path>,
        provider: ProviderBuilder<'_, E>,
    ) -> Result<Experiment, E> {
        let invalid = |message: String| {
            E::from(EvalError::Definition {
                experiment: self.name.clone(),
                message,
            })
        };
        let mut experiment = Experiment::new(self.name.clone(), host.clone());
        if let Some(workflow) = &self.workflow {
            experiment = experiment.workflow(workflow.clone());
        }
        if let Some(dataset) = &self.dataset {
            let Some(dir) = dir else {
                return Err(invalid(format!(
                    "`dataset` names a file ({}), which only an experiment file read from disk can; write the cases inline (`case`)",
                    dataset.display()
                )));
            };
            let path = dir.join(dataset);
            let text = std::fs::read_to_string(&path)
                .map_err(|err| invalid(format!("cannot read {}: {err}", path.display())))?;
            experiment = experiment.cases(Case::from_jsonl(&path.display().to_string(), &text)?);
        }
        experiment = experiment.cases(self.cases.iter().cloned());
        for query in &self.recordings {
            experiment = experiment.cases(query.cases(host).await?);
        }
        for table in &self.datasets {
            let dataset = Dataset::load(host.store().as_ref(), &table.name, table.version).await?;
            let mut cases = dataset.cases();
            if let Some(answers) = &table.answers {
                for case in &mut cases {
                    case.answers.clone_from(answers);
                }
            }
            experiment = experiment.cases(cases);
        }
        if let Some(spec) = &self.provider {
            let (label, live) = provider(spec)?;
            experiment = experiment.shared_provider(label, live);
        }
        for variant in &self.variants {
            let mut built = Variant::new(variant.name.clone());
            if let Some(description) = &variant.description {
                built = built.describe(description.clone());
            }
            if let Some(workflow) = &variant.workflow {
                built = built.workflow_named(workflow.clone());
            }
            if let Some(spec) = &variant.provider {
                let (label, live) = provider(spec)?;
                built = built.shared_provider(label, live);
            }
            if let Some(state) = &variant.state {
                built = built.edit_state(state.clone());
            }
            for (agent, change) in &variant.agents {
                built = built.agent(agent.clone(), change.clone());
            }
            experiment = experiment.variant(built);
        }
        if let Some(baseline) = &self.baseline {
            experiment = experiment.baseline(baseline.clone());
        }
        if let Some(repeats) = self.repeats {
            experiment = experiment.repeats(repeats);
        }
        if let Some(concurrency) = self.concurrency {
            experiment = experiment.concurrency(concurrency);
        }
        if let Some(delta) = self.max_regression {
            experiment = experiment.max_regression(delta);
        }
        for scorer in scorers(&self.name, &self.scorers, provider)? {
            experiment = experiment.shared_scorer(scorer);
        }
        let (max_calls, max_cost, deadline) =
            (self.max_agent_calls, self.max_cost, self.deadline_secs);
        Ok(experiment.run_options(move || {
            let mut options = RunOptions::new();
            if let Some(max) = max_calls {
                options = options.max_agent_calls(max);
            }
            if let Some(max) = max_cost {
                options = options.max_cost(max);
            }
            if let Some(secs) = deadline {
                options = options.deadline(Duration::from_secs(secs));
            }
            options
        }))
    }
}

/// Scorer tables built, a judge's `provider` by `provider` (its failure kept as it was); a
/// table that cannot be built is an [`EvalError::Definition`] of experiment `name`.
fn scorers<E: From<EvalError>>(
    name: &str,
    specs: &[ScorerSpec],
    provider: ProviderBuilder<'_, E>,
) -> Result<Vec<Arc<dyn Scorer>>, E> {
    // `build_with` wants the provider's failure as words: the caller's error is kept aside
    // and returned as it was.
    let failed = std::sync::Mutex::new(None);
    let words = |spec: &ProviderSpec| {
        provider(spec).map_err(|err| {
            *failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(err);
            "the judge's provider could not be built".to_owned()
        })
    };
    let mut built = Vec::with_capacity(specs.len());
    for spec in specs {
        match spec.build_with(&words) {
            Ok(scorer) => built.push(scorer),
            Err(message) => {
                let kept = failed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                return Err(kept.unwrap_or_else(|| {
                    E::from(EvalError::Definition {
                        experiment: name.to_owned(),
                        message,
                    })
                }));
            }
        }
    }
    Ok(built)
}
