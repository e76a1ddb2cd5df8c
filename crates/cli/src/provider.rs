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

use crate::error::CliError;

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

/// One `--fork-provider NAME=PROVIDER[:MODEL][@BASE_URL]` of `serve`.
#[cfg(feature = "server")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForkProviderSpec {
    /// The name clients pick it by.
    pub(crate) name: String,
    /// The backend.
    pub(crate) kind: ProviderKind,
    /// The model (default: the provider's).
    pub(crate) model: Option<String>,
    /// The API's base URL (default: the provider's own).
    pub(crate) base_url: Option<String>,
}

#[cfg(feature = "server")]
impl ForkProviderSpec {
    /// The provider (its key read from the environment now).
    pub(crate) fn provider(&self) -> Result<BoxedProvider, CliError> {
        live_provider(self.kind, self.model.as_deref(), self.base_url.as_deref())
            .map_err(|err| CliError::Usage(format!("--fork-provider {}: {err}", self.name)))
    }
}

/// Parses `NAME=PROVIDER[:MODEL][@BASE_URL]` (clap's value parser for `--fork-provider`).
#[cfg(feature = "server")]
pub(crate) fn parse_fork_provider(text: &str) -> Result<ForkProviderSpec, String> {
    let usage = || {
        format!(
            "`{text}` is not NAME=PROVIDER[:MODEL][@BASE_URL] (such as haiku=anthropic:claude-haiku-4-5)"
        )
    };
    let (name, rest) = text.split_once('=').ok_or_else(usage)?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "`{name}`: a fork provider's name is letters, digits, `-`, `_` or `.`"
        ));
    }
    let (rest, base_url) = match rest.split_once('@') {
        Some((rest, url)) if !url.is_empty() => (rest, Some(url.to_owned())),
        Some(_) => return Err(usage()),
        None => (rest, None),
    };
    let (kind, model) = match rest.split_once(':') {
        Some((kind, model)) if !model.is_empty() => (kind, Some(model.to_owned())),
        Some(_) => return Err(usage()),
        None => (rest, None),
    };
    let kind = <ProviderKind as clap::ValueEnum>::from_str(kind, true)
        .map_err(|_| format!("`{kind}` is not a provider: anthropic, openai or claude-cli"))?;
    Ok(ForkProviderSpec {
        name: name.to_owned(),
        kind,
        model,
        base_url,
    })
}

#[cfg(all(test, feature = "server"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fork_providers_are_read_with_their_model_and_address() {
        let spec = parse_fork_provider("local=openai:llama3@http://127.0.0.1:11434/v1").unwrap();
        assert_eq!(
            spec,
            ForkProviderSpec {
                name: "local".into(),
                kind: ProviderKind::Openai,
                model: Some("llama3".into()),
                base_url: Some("http://127.0.0.1:11434/v1".into()),
            }
        );
        let bare = parse_fork_provider("haiku=anthropic").unwrap();
        assert_eq!(
            (bare.kind, bare.model, bare.base_url),
            (ProviderKind::Anthropic, None, None)
        );
        assert_eq!(
            parse_fork_provider("c=claude-cli").unwrap().kind,
            ProviderKind::ClaudeCli
        );
        for bad in [
            "haiku",
            "=openai",
            "x=gpt",
            "x=openai:",
            "x=openai@",
            "a b=openai",
        ] {
            assert!(parse_fork_provider(bad).is_err(), "{bad}");
        }
    }
}
