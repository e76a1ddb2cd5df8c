//! Fake model APIs for tests, on 127.0.0.1 and without a network.
//!
//! * [`FakeServer::anthropic`] and [`FakeServer::openai`] speak the Messages and Chat
//!   Completions wire formats byte for byte (see `reference/protocols.md`), check requests as
//!   the real APIs do, record them, and answer from a script ([`FakeResponse`]): streams that
//!   end cleanly, are cut, or hang; errors with retry headers; errors inside a 200 stream.
//!   [`anthropic`] and [`openai`] build the scripted answers.
//! * [`FakeClaude`] is a stand-in `claude` executable printing recorded-shape stream-json.
//!
//! ```
//! use openharness_core::{Provider, adapter::{ProviderRequest, ProviderSink}};
//! use openharness_provider::testing::{self, FakeServer};
//! use openharness_provider::{AnthropicProvider, ApiKey};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = FakeServer::anthropic(testing::anthropic::KEY).await.unwrap();
//! server.respond(testing::anthropic::json_output(&json!({ "answer": 42 })));
//! let provider = AnthropicProvider::builder(ApiKey::new(testing::anthropic::KEY))
//!     .base_url(server.base_url())
//!     .build()
//!     .unwrap();
//! let schema = Arc::new(json!({ "type": "object", "properties": { "answer": { "type": "integer" } }, "required": ["answer"] }));
//! let response = provider
//!     .complete(ProviderRequest::new("oracle", "The answer?", schema), ProviderSink::discard())
//!     .await
//!     .unwrap();
//! assert_eq!(response.output, json!({ "answer": 42 }));
//! assert_eq!(server.request_count(), 1);
//! # });
//! ```

pub mod anthropic;
mod claude;
pub mod openai;
mod server;

pub use claude::FakeClaude;
pub use server::{Ending, FakeResponse, FakeServer, RecordedRequest};
