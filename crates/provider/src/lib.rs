//! Model providers for Open Harness agents.
//!
//! Today this crate holds [`ScriptedProvider`], a deterministic
//! [`Provider`](openharness_core::Provider) that answers each agent from a script instead of a
//! model: for tests, replays of recorded behaviour and the offline demo. The Anthropic,
//! OpenAI-compatible and `claude` CLI providers will live here too.
//!
//! ```
//! use openharness_core::{Provider, ProviderRequest, ProviderSink};
//! use openharness_provider::{Reply, ScriptedProvider};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let provider = ScriptedProvider::new()
//!     .respond("planner", Reply::output(json!({ "tasks": ["pack"] })).text("One task."));
//!
//! let request = ProviderRequest::new("planner", "plan a trip", Arc::new(json!({})));
//! let sink = ProviderSink::discard();
//! let response = provider.complete(request, sink.clone()).await.unwrap();
//! assert_eq!(response.output, json!({ "tasks": ["pack"] }));
//! assert_eq!(sink.text(), "One task.");
//! assert_eq!(provider.calls(), 1);
//! # });
//! ```

mod scripted;

pub use scripted::{Reply, ScriptedProvider};
