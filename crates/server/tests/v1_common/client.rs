//! A client of the `/v1` API over a real socket on 127.0.0.1, for the test files that drive
//! the platform through HTTP.
#![allow(dead_code)] // each test file uses what it needs

use std::net::SocketAddr;

use openharness_host::Host;
use openharness_platform::{MasterKeys, Platform};
use openharness_server::{ApiKeyHash, ServerOptions, router};
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let host = Host::shared(platform.store().clone());
    tokio::spawn(async move {
        axum::serve(listener, router(host, options.platform(platform)))
            .await
            .unwrap();
    });
    Client {
        addr,
        http: {
            // reqwest needs a TLS provider even for plain http.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::new()
        },
        key: None,
    }
}

pub(crate) struct Client {
    pub(crate) addr: SocketAddr,
    pub(crate) http: reqwest::Client,
    pub(crate) key: Option<String>,
}

impl Client {
    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method, format!("http://{}{path}", self.addr));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        if let Some(key) = &self.key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
        };
        (status, value)
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }

    pub(crate) async fn send(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        self.call(method, path, Some(&body.to_string())).await
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
