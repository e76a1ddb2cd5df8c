//! [`Variant`]: one arm of an experiment — what it changes against the workflow as recorded:
//! the provider or model, an agent's prompts and model parameters (as data, [`AgentChange`]:
//! no rebuild), the workflow (another version), the state at the fork point. The baseline is a
//! variant that changes nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use openharness_core::{
    AgentSettings, BoxedProvider, Provider, ReasoningEffort, RunOptions, Workflow, WorkflowState,
};
use openharness_host::Hosted;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A named variant of an experiment.
///
/// ```
/// # fn demo<S: openharness_core::WorkflowState>(terse: openharness_core::Workflow<S>, other_model: impl openharness_core::Provider) {
/// use openharness_eval::Variant;
/// let baseline = Variant::new("baseline");
/// let terse_prompt = Variant::new("terse").workflow(terse).describe("the executor answers in one line");
/// let cheaper = Variant::new("small-model").provider("small", other_model);
/// let cautious = Variant::new("cautious").edit_state(serde_json::json!({ "temperature": 0.2 }));
/// let v2 = Variant::new("v2").workflow_named("planner-executor-v2");
/// let one_line = Variant::new("one-line").agent("executor", openharness_eval::AgentChange {
///     prompt: Some("{prompt}\n\nAnswer in one line.".into()),
///     ..Default::default()
/// });
/// # let _ = (baseline, terse_prompt, cheaper, cautious, v2, one_line);
/// # }
/// ```
#[derive(Clone)]
pub struct Variant {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) workflow_name: Option<String>,
    pub(crate) workflow: Option<Arc<dyn Hosted>>,
    pub(crate) provider: Option<(String, BoxedProvider)>,
    pub(crate) state_edit: Option<Value>,
    pub(crate) agents: BTreeMap<String, AgentChange>,
}

/// What a variant changes of one agent, as data (from an experiment file, or Rust): its
/// prompts and model parameters, applied to each call of the agent in the variant's runs, so a
/// prompt is tried against recorded sessions without rebuilding the workflow. Recorded with the
/// variant and shown by `eval compare`.
///
/// ```
/// use openharness_eval::AgentChange;
/// let change: AgentChange = toml::from_str(r#"
///     wrap_system = "{system}\n\nBe terse."
///     prompt = "{prompt}\n\nAnswer in one line."
///     model = "claude-haiku-4-5"
/// "#).unwrap();
/// assert_eq!(change.summary(), "system wrapped, prompt rewritten, model claude-haiku-4-5");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentChange {
    /// Replaces the agent's system prompt (`""` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Wraps the system prompt: `{system}` stands for the agent's (or `system`'s).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "wrap_system"
    )]
    pub wrap_system: Option<String>,
    /// Rewrites the prompt the agent's code renders: `{prompt}` stands for it; a template
    /// without it replaces the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Asks this model instead of the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Asks for this reasoning effort (`low`, `medium`, `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningEffort>,
}

impl AgentChange {
    /// The run settings that apply it.
    pub fn settings(&self) -> AgentSettings {
        let mut settings = AgentSettings::new();
        if let Some(system) = &self.system {
            settings = settings.system(system.clone());
        }
        if let Some(template) = &self.wrap_system {
            settings = settings.wrap_system(template.clone());
        }
        if let Some(template) = &self.prompt {
            settings = settings.prompt(template.clone());
        }
        if let Some(model) = &self.model {
            settings = settings.model(model.clone());
        }
        if let Some(effort) = self.reasoning {
            settings = settings.reasoning(effort);
        }
        settings
    }

    /// What it changes, in a few words (`eval compare`'s variant lines).
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.system.is_some() {
            parts.push("system replaced".to_owned());
        }
        if self.wrap_system.is_some() {
            parts.push("system wrapped".to_owned());
        }
        if self.prompt.is_some() {
            parts.push("prompt rewritten".to_owned());
        }
        if let Some(model) = &self.model {
            parts.push(format!("model {model}"));
        }
        if let Some(effort) = self.reasoning {
            parts.push(format!("reasoning {}", effort.as_str()));
        }
        parts.join(", ")
    }
}

impl fmt::Debug for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Variant")
            .field("name", &self.name)
            .field("record", &self.record())
            .finish_non_exhaustive()
    }
}

impl Variant {
    /// A variant that changes nothing yet (a baseline).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            workflow_name: None,
            workflow: None,
            provider: None,
            state_edit: None,
            agents: BTreeMap::new(),
        }
    }

    /// Changes the agent `agent`'s prompts or model parameters in this variant's runs (see
    /// [`AgentChange`]); the workflow stays the recorded one, so its sessions fork as they are.
    pub fn agent(mut self, agent: impl Into<String>, change: AgentChange) -> Self {
        self.agents.insert(agent.into(), change);
        self
    }

    /// `options` with this variant's agent changes.
    pub(crate) fn apply(&self, mut options: RunOptions) -> RunOptions {
        for (agent, change) in &self.agents {
            options = options.agent(agent.clone(), change.settings());
        }
        options
    }

    /// The variant's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A line saying what the variant is, shown in reports.
    #[must_use]
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Runs another workflow (built in Rust: other prompts, other agent settings) with the
    /// same state type as the recordings it forks. It records to the experiment's store.
    #[must_use]
    pub fn workflow<S: WorkflowState>(self, workflow: Workflow<S>) -> Self {
        self.hosted(<dyn Hosted>::of(workflow))
    }

    /// Runs an already type-erased workflow.
    #[must_use]
    pub fn hosted(mut self, workflow: Arc<dyn Hosted>) -> Self {
        self.workflow_name = Some(workflow.name().to_owned());
        self.workflow = Some(workflow);
        self
    }

    /// Runs the workflow registered in the experiment's host under `name`.
    #[must_use]
    pub fn workflow_named(mut self, name: impl Into<String>) -> Self {
        self.workflow_name = Some(name.into());
        self.workflow = None;
        self
    }

    /// Asks `provider` instead of the workflow's own; `label` (a model name, say) goes into
    /// the experiment's record.
    #[must_use]
    pub fn provider(self, label: impl Into<String>, provider: impl Provider) -> Self {
        self.shared_provider(label, Arc::new(provider))
    }

    /// Asks a shared provider instead of the workflow's own.
    #[must_use]
    pub fn shared_provider(mut self, label: impl Into<String>, provider: BoxedProvider) -> Self {
        self.provider = Some((label.into(), provider));
        self
    }

    /// Changes the state at the fork point with a JSON merge patch (RFC 7396) before the run
    /// goes on (cases from recordings only; the hash recorded is the state's before it).
    #[must_use]
    pub fn edit_state(mut self, patch: Value) -> Self {
        self.state_edit = Some(patch);
        self
    }

    /// What the experiment's log keeps of the variant.
    pub fn record(&self) -> VariantRecord {
        VariantRecord {
            name: self.name.clone(),
            description: self.description.clone(),
            workflow: self.workflow_name.clone(),
            code: self.workflow.as_ref().map(|hosted| hosted.code().code),
            provider: self.provider.as_ref().map(|(label, _)| label.clone()),
            state_edit: self.state_edit.clone(),
            agents: self.agents.clone(),
        }
    }
}

/// A variant as the experiment's log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantRecord {
    /// The variant's name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The workflow it runs, when not the recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The code fingerprint of a workflow built in Rust (its agents, their triggers, events
    /// and output schemas), so a changed variant is run again rather than resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The provider it asks, when not the workflow's own (its label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The merge patch it applies to the state at the fork point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_edit: Option<Value>,
    /// What it changes of each agent (its prompts, model parameters), by agent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, AgentChange>,
}
