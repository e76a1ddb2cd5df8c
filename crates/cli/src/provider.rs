//! Real models for turns: `--provider anthropic|openai|claude-cli` (with `--model` and
//! `--base-url`) on `send`, `respond`, `resume` and `fork`, and [`live_provider`] for a
//! program's own commands (the `openharness` binary's `run`).
//!
//! Keys come from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`; without one the command says what to
//! set. `--base-url` points a provider at another server (an OpenAI-compatible local server, a
//! proxy, or a fake server in tests); for the claude CLI it is passed as `ANTHROPIC_BASE_URL`.

use std::sync::Arc;

use openharness::BoxedProvider;
use openharness::provider::{AnthropicProvider, ApiKey, ClaudeCliProvider, OpenAiProvider};

use crate::commands::CliError;

/// Which model backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKind {
    /// The Anthropic Messages API (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// An OpenAI-compatible Chat Completions API (`OPENAI_API_KEY`).
    Openai,
    /// The `claude` CLI (Claude Code), as a subprocess.
    ClaudeCli,
}

/// The provider flags of `send`, `respond`, `resume` and `fork`: none means the workflow's
/// own provider.
#[derive(Debug, Clone, clap::Args)]
pub struct ProviderArgs {
    /// Continue with a real model (default: the workflow's own provider).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// The model (default: the provider's default model).
    #[arg(long, requires = "provider")]
    pub model: Option<String>,
    /// The API's base URL (e.g. `http://localhost:11434/v1` for Ollama).
    #[arg(long, requires = "provider")]
    pub base_url: Option<String>,
}

impl ProviderArgs {
    /// The provider the flags name, or `None` for the workflow's own.
    pub fn provider(&self) -> Result<Option<BoxedProvider>, CliError> {
        self.provider
            .map(|kind| live_provider(kind, self.model.as_deref(), self.base_url.as_deref()))
            .transpose()
    }
}

fn missing_key(var: &str, provider: &str) -> CliError {
    CliError::MissingKey {
        var: var.to_owned(),
        provider: provider.to_owned(),
    }
}

fn config(err: openharness::provider::ConfigError) -> CliError {
    CliError::Usage(err.to_string())
}

/// A real model: `kind` with its key from the environment, `model` (default: the provider's)
/// and `base_url` (default: the provider's own API).
pub fn live_provider(
    kind: ProviderKind,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<BoxedProvider, CliError> {
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
            Ok(Arc::new(builder.build().map_err(config)?))
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
            Ok(Arc::new(builder.build().map_err(config)?))
        }
        ProviderKind::ClaudeCli => {
            let mut provider = ClaudeCliProvider::new();
            if let Some(model) = model {
                provider = provider.model(model);
            }
            if let Some(url) = base_url {
                provider = provider.env("ANTHROPIC_BASE_URL", url);
            }
            Ok(Arc::new(provider))
        }
    }
}
