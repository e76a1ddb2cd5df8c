//! `openharness run <example> --provider anthropic|openai|claude-cli`: records a live run of an
//! example against a real model.
//!
//! Keys come from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`; without one the command says what to
//! set and suggests `openharness demo`, which needs no key. `--base-url` points a provider at
//! another server (an OpenAI-compatible local server, a proxy, or a fake server in tests); for
//! the claude CLI it is passed as `ANTHROPIC_BASE_URL`.

use std::path::Path;

use openharness::Provider;
use openharness::RunOptions;
use openharness::provider::{AnthropicProvider, ApiKey, ClaudeCliProvider, OpenAiProvider};
use openharness::store::RedbStore;

use crate::commands::CliError;
use crate::progress::Progress;

/// The examples `run` knows.
const EXAMPLES: &[&str] = &[openharness_example_planner_executor::WORKFLOW_NAME];

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
    /// The example to run (`planner-executor`).
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
    /// The goal to plan.
    #[arg(long)]
    goal: Option<String>,
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

/// Runs `openharness run`.
pub(crate) async fn run(
    args: RunArgs,
    store: RedbStore,
    store_path: &Path,
) -> Result<(), CliError> {
    if !EXAMPLES.contains(&args.example.as_str()) {
        return Err(CliError::Usage(format!(
            "unknown example `{}`; the examples are: {}",
            args.example,
            EXAMPLES.join(", ")
        )));
    }
    match args.provider {
        ProviderKind::Anthropic => {
            let var = AnthropicProvider::KEY_VAR;
            let key = ApiKey::from_env(var).ok_or_else(|| missing_key(var, "Anthropic"))?;
            let mut builder = AnthropicProvider::builder(key);
            if let Some(model) = &args.model {
                builder = builder.model(model);
            }
            if let Some(url) = &args.base_url {
                builder = builder.base_url(url);
            }
            record(&args, builder.build().map_err(config)?, store, store_path).await
        }
        ProviderKind::Openai => {
            let var = OpenAiProvider::KEY_VAR;
            // Local OpenAI-compatible servers ignore the key, so one is needed only for the
            // default (OpenAI's own) address.
            let key = match (ApiKey::from_env(var), &args.base_url) {
                (Some(key), _) => key,
                (None, Some(_)) => ApiKey::new("no-key"),
                (None, None) => return Err(missing_key(var, "OpenAI")),
            };
            let mut builder = OpenAiProvider::builder(key);
            if let Some(model) = &args.model {
                builder = builder.model(model);
            }
            if let Some(url) = &args.base_url {
                builder = builder.base_url(url);
            }
            record(&args, builder.build().map_err(config)?, store, store_path).await
        }
        ProviderKind::ClaudeCli => {
            let mut provider = ClaudeCliProvider::new();
            if let Some(model) = &args.model {
                provider = provider.model(model);
            }
            if let Some(url) = &args.base_url {
                provider = provider.env("ANTHROPIC_BASE_URL", url);
            }
            record(&args, provider, store, store_path).await
        }
    }
}

async fn record(
    args: &RunArgs,
    provider: impl Provider,
    store: RedbStore,
    store_path: &Path,
) -> Result<(), CliError> {
    let provider_name = provider.name().to_owned();
    let workflow = openharness_example_planner_executor::workflow(store, provider)?;
    let goal = args
        .goal
        .clone()
        .unwrap_or_else(|| openharness_example_planner_executor::DEMO_GOAL.to_owned());
    println!(
        "Running `{}` with {provider_name} — goal: {goal}\n",
        workflow.name()
    );
    let outcome = workflow
        .run(RunOptions::new().input(goal).renderer(Progress::default()))
        .await?;
    let state = &outcome.state;
    println!(
        "\n{} of {} tasks done; the run ended ({}) after {} events; {} input and {} output tokens, ${:.4}.",
        state.completed,
        state.tasks.len(),
        outcome.reason.as_str(),
        outcome.len,
        outcome.usage.input_tokens,
        outcome.usage.output_tokens,
        outcome.cost
    );
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
