//! Our side of the load suite: `openharness-load-serve`, the `openharness` command's library
//! ([`Cli`]) with one workflow registered, run as `openharness-load-serve --store … serve …`.
//! So the server under load is `serve` itself — its connection guard, recovery loop, platform
//! routes and all — in a process of its own, with the system allocator.
//!
//! The workflow is the protocols suite's `chat`: a `user:input` goes to one agent whose
//! structured output `{"reply"}` streams as the chat's text and is recorded as
//! `assistant:replied`; the state is the conversation's lines. The agent's prompt is the
//! newest message only (LangGraph's graph sends it the newest message too), so a turn costs
//! the same however long the session grew. The model is [`OpenAiProvider`] at the fake's URL
//! (`OPENHARNESS_LOAD_MODEL`), with no retries (LangGraph's `ChatOpenAI(max_retries=0)`).

use std::process::ExitCode;

use openharness::Workflow;
use openharness_cli::Cli;
use openharness_provider::{ApiKey, OpenAiProvider, RetryPolicy};

use crate::protocols::{Assistant, Chat};

/// The environment variable naming the fake model's base URL (`http://127.0.0.1:PORT/v1`).
pub(crate) const MODEL_VAR: &str = "OPENHARNESS_LOAD_MODEL";

/// The workflow's name, which `POST /api/chat` runs.
pub(crate) const WORKFLOW: &str = "chat";

/// `openharness-load-serve ARGS…`: the CLI with the `chat` workflow answered by the fake model.
pub(crate) fn main() -> ExitCode {
    let Ok(url) = std::env::var(MODEL_VAR) else {
        eprintln!("openharness-load-serve: set {MODEL_VAR} to the fake model's base URL");
        return ExitCode::from(2);
    };
    let provider = match OpenAiProvider::builder(ApiKey::new("sk-load"))
        .base_url(url)
        .model("fake-model")
        .retry(RetryPolicy::none())
        .build()
    {
        Ok(provider) => provider,
        Err(err) => {
            eprintln!("openharness-load-serve: {err}");
            return ExitCode::from(2);
        }
    };
    let workflow = Workflow::builder(WORKFLOW)
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(openharness::store::MemoryStore::new())
        .provider(provider)
        .build();
    let cli = workflow
        .map_err(|err| err.to_string())
        .and_then(|workflow| {
            Cli::new()
                .name("openharness-load-serve")
                .workflow(workflow)
                .map_err(|err| err.to_string())
        });
    match cli {
        Ok(cli) => cli.run(),
        Err(err) => {
            eprintln!("openharness-load-serve: {err}");
            ExitCode::FAILURE
        }
    }
}
