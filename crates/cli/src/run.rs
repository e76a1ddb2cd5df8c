//! `openharness run <example> --provider anthropic|openai|claude-cli`: records a live run of an
//! example against a real model. The same provider flags let `send`, `respond` and `resume`
//! continue a session with a real model instead of the offline script.
//!
//! Keys come from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`; without one the command says what to
//! set and suggests `openharness demo`, which needs no key. `--base-url` points a provider at
//! another server (an OpenAI-compatible local server, a proxy, or a fake server in tests); for
//! the claude CLI it is passed as `ANTHROPIC_BASE_URL`.

use std::path::Path;

use openharness::provider::{AnthropicProvider, ApiKey, ClaudeCliProvider, OpenAiProvider};
use openharness::store::RedbStore;
use openharness::{Provider, RunOptions, Workflow, WorkflowState};

use crate::commands::CliError;
use crate::progress::Progress;
use crate::turns::print_outcome;
use crate::workflows::{self, KnownWorkflow, Summary};

/// Which model backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProviderKind {
    /// The Anthropic Messages API (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// An OpenAI-compatible Chat Completions API (`OPENAI_API_KEY`).
    Openai,
    /// The `claude` CLI (Claude Code), as a subprocess.
    ClaudeCli,
}

/// Arguments of `openharness run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The example to run (`planner-executor` or `chat`).
    example: String,
    /// The model backend.
    #[arg(long, value_enum)]
    provider: ProviderKind,
    /// The model (default: the provider's default model).
    #[arg(long)]
    model: Option<String>,
    /// The API's base URL (e.g. `http://localhost:11434/v1` for Ollama).
    #[arg(long)]
    base_url: Option<String>,
    /// The goal to plan (planner-executor) or the first message (chat).
    #[arg(long, visible_alias = "input")]
    goal: Option<String>,
}

/// The provider flags of `send`, `respond` and `resume`: none means the offline script.
#[derive(Debug, clap::Args)]
pub(crate) struct ProviderArgs {
    /// Continue with a real model (default: the offline scripted model, as `demo` uses).
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
    /// The model (default: the provider's default model).
    #[arg(long, requires = "provider")]
    model: Option<String>,
    /// The API's base URL (e.g. `http://localhost:11434/v1` for Ollama).
    #[arg(long, requires = "provider")]
    base_url: Option<String>,
}

impl ProviderArgs {
    /// `workflow` with the chosen provider, and how to name it ("scripted model (offline)" or
    /// the provider's name).
    pub(crate) fn apply<S: WorkflowState>(
        &self,
        workflow: Workflow<S>,
    ) -> Result<(Workflow<S>, String), CliError> {
        match self.provider {
            None => Ok((workflow, "the scripted model (offline)".to_owned())),
            Some(kind) => live(
                kind,
                self.model.as_deref(),
                self.base_url.as_deref(),
                &workflow,
            ),
        }
    }
}

fn missing_key(var: &str, provider: &str) -> CliError {
    CliError::Usage(format!(
        "no API key for {provider}: set {var} (for example `export {var}=...`) and run this again; \
         `openharness demo` runs the same example offline without a key"
    ))
}

fn config(err: openharness::provider::ConfigError) -> CliError {
    CliError::Usage(err.to_string())
}

fn with<S: WorkflowState>(
    workflow: &Workflow<S>,
    provider: impl Provider,
) -> (Workflow<S>, String) {
    let name = provider.name().to_owned();
    (workflow.with_provider(provider), name)
}

/// `workflow` asking a real model.
fn live<S: WorkflowState>(
    kind: ProviderKind,
    model: Option<&str>,
    base_url: Option<&str>,
    workflow: &Workflow<S>,
) -> Result<(Workflow<S>, String), CliError> {
    match kind {
        ProviderKind::Anthropic => {
            let var = AnthropicProvider::KEY_VAR;
            let key = ApiKey::from_env(var).ok_or_else(|| missing_key(var, "Anthropic"))?;
            let mut builder = AnthropicProvider::builder(key);
            if let Some(model) = model {
                builder = builder.model(model);
            }
            if let Some(url) = base_url {
                builder = builder.base_url(url);
            }
            Ok(with(workflow, builder.build().map_err(config)?))
        }
        ProviderKind::Openai => {
            let var = OpenAiProvider::KEY_VAR;
            // Local OpenAI-compatible servers ignore the key, so one is needed only for the
            // default (OpenAI's own) address.
            let key = match (ApiKey::from_env(var), base_url) {
                (Some(key), _) => key,
                (None, Some(_)) => ApiKey::new("no-key"),
                (None, None) => return Err(missing_key(var, "OpenAI")),
            };
            let mut builder = OpenAiProvider::builder(key);
            if let Some(model) = model {
                builder = builder.model(model);
            }
            if let Some(url) = base_url {
                builder = builder.base_url(url);
            }
            Ok(with(workflow, builder.build().map_err(config)?))
        }
        ProviderKind::ClaudeCli => {
            let mut provider = ClaudeCliProvider::new();
            if let Some(model) = model {
                provider = provider.model(model);
            }
            if let Some(url) = base_url {
                provider = provider.env("ANTHROPIC_BASE_URL", url);
            }
            Ok(with(workflow, provider))
        }
    }
}

/// Runs `openharness run`.
pub(crate) async fn run(
    args: RunArgs,
    store: RedbStore,
    store_path: &Path,
) -> Result<(), CliError> {
    let Some(known) = workflows::by_name(&args.example, store)? else {
        return Err(CliError::Usage(format!(
            "unknown example `{}`; the examples are: {}",
            args.example,
            workflows::NAMES.join(", ")
        )));
    };
    match known {
        KnownWorkflow::PlannerExecutor(workflow) => {
            let goal = args
                .goal
                .clone()
                .unwrap_or_else(|| openharness_example_planner_executor::DEMO_GOAL.to_owned());
            record(&args, &workflow, goal, store_path).await
        }
        KnownWorkflow::Chat(workflow) => {
            let message = args
                .goal
                .clone()
                .unwrap_or_else(|| openharness_example_chat::DEMO_MESSAGES[0].to_owned());
            record(&args, &workflow, message, store_path).await
        }
    }
}

async fn record<S: WorkflowState + Summary>(
    args: &RunArgs,
    workflow: &Workflow<S>,
    input: String,
    store_path: &Path,
) -> Result<(), CliError> {
    let (workflow, provider_name) = live(
        args.provider,
        args.model.as_deref(),
        args.base_url.as_deref(),
        workflow,
    )?;
    println!(
        "Running `{}` with {provider_name} — input: {input}\n",
        workflow.name()
    );
    let outcome = workflow
        .run(RunOptions::new().input(input).renderer(Progress::default()))
        .await?;
    println!(
        "\n{} input and {} output tokens, ${:.4}.",
        outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.cost
    );
    print_outcome(&outcome);
    println!(
        "\nSession {} is recorded in {}.",
        outcome.session,
        store_path.display()
    );
    println!("Replay it (no model calls):");
    println!("  openharness events {}", outcome.session);
    println!(
        "  openharness tape {} --at {}",
        outcome.session, outcome.len
    );
    Ok(())
}
