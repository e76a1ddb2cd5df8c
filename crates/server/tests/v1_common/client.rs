//! The `/v1` API served on a real socket on 127.0.0.1 and the kit's client of it, for the test
//! files that drive the platform through HTTP; typed helpers for the setup they repeat.
#![allow(dead_code)] // each test file uses what it needs

use openharness_host::Host;
use openharness_platform::{MasterKeys, Platform};
use openharness_server::{ApiKeyHash, ServerOptions, router};
use openharness_testkit::http;
use serde_json::Value;

/// Options that require the API key `key`.
pub(crate) fn keyed(key: &str) -> ServerOptions {
    ServerOptions::default().api_keys([ApiKeyHash::of(key)])
}

pub(crate) fn master_keys(id: &str, byte: &str) -> MasterKeys {
    MasterKeys::parse(&format!("{id}:{}", byte.repeat(32))).unwrap()
}

/// The server as `openharness serve` runs it: the native routes and `platform`'s `/v1`, on
/// one HTTP layer, over the platform's store.
pub(crate) async fn serve(platform: Platform, options: ServerOptions) -> Client {
    let host = Host::shared(platform.store().clone());
    let addr = http::serve(router(host, options.platform(platform))).await;
    Client {
        http: http::Client::new(addr),
    }
}

/// The kit's client of one served platform, answering `(status, body as JSON)`.
pub(crate) struct Client {
    pub(crate) http: http::Client,
}

impl Client {
    /// Sends `Authorization: Bearer {key}` from now on.
    pub(crate) fn set_key(&mut self, key: &str) {
        self.http = self.http.clone().with_key(Some(key));
    }

    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.http.call(method, path, body, &[]).await.pair()
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }

    pub(crate) async fn send(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        self.call(method, path, Some(&body.to_string())).await
    }

    /// `POST path` with `body`, asserting `201 Created`: the created resource.
    pub(crate) async fn create(&self, path: &str, body: Value) -> Value {
        let (status, created) = self.send("POST", path, body).await;
        assert_eq!(status, 201, "POST {path}: {created}");
        created
    }

    /// Sends `method path` with `body`, asserting the answer is the error shape with this
    /// status and code (a failure names the request).
    pub(crate) async fn refuses(
        &self,
        method: &str,
        path: &str,
        body: Value,
        status: u16,
        code: &str,
    ) {
        let answer = self.send(method, path, body.clone()).await;
        assert_eq!(answer.0, status, "{method} {path} {body}: {}", answer.1);
        assert_eq!(
            answer.1["error"]["code"], code,
            "{method} {path} {body}: {}",
            answer.1
        );
        error(&answer, status, code);
    }

    /// Creates the agent `name` with `system_prompt`: its id.
    pub(crate) async fn agent(&self, name: &str, system_prompt: &str) -> String {
        let agent = self
            .create(
                "/v1/agents",
                serde_json::json!({ "name": name, "system_prompt": system_prompt }),
            )
            .await;
        agent["id"].as_str().unwrap().to_owned()
    }

    /// Adds the LLM provider `provider` and its default model `model_id`: the provider's id.
    pub(crate) async fn default_model(&self, provider: Value, model_id: &str) -> String {
        let provider = self.create("/v1/llm-providers", provider).await;
        let id = provider["id"].as_str().unwrap().to_owned();
        self.create(
            &format!("/v1/llm-providers/{id}/models"),
            serde_json::json!({ "model_id": model_id, "is_default": true }),
        )
        .await;
        id
    }

    /// Posts the user message `text` to the session at `session` (a path).
    pub(crate) async fn say(&self, session: &str, text: &str) -> (u16, Value) {
        let message = serde_json::json!({ "content": [{ "type": "text", "text": text }] });
        self.send("POST", &format!("{session}/messages"), message)
            .await
    }

    /// Starts a session of the agent `agent`: its path, `/v1/agents/{agent}/sessions/{id}`.
    pub(crate) async fn session(&self, agent: &str) -> String {
        let path = format!("/v1/agents/{agent}/sessions");
        let session = self.create(&path, serde_json::json!({})).await;
        format!("{path}/{}", session["id"].as_str().unwrap())
    }
}

/// Asserts an answer is the error shape with this status and code.
#[track_caller]
pub(crate) fn error(answer: &(u16, Value), status: u16, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], code, "{}", answer.1);
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
}
