//! What the otel tests share: a workflow whose agent calls a tool (scripted, offline), and an
//! Arize Phoenix started on 127.0.0.1 from a venv installed on first use.
#![allow(dead_code, unreachable_pub, missing_docs, clippy::unwrap_used)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::{FnTool, adapter::Usage};
use openharness_testkit::{eventually, http::Client};

/// The Phoenix release the tests run against (`cargo xtask ci` reads the same file to
/// download it while it compiles).
pub fn phoenix_pin() -> &'static str {
    include_str!("phoenix.txt").trim()
}

#[event]
#[derive(Debug, Clone)]
pub struct OrderAnswered {
    pub status: String,
}

#[event]
pub enum DeskEvent {
    UserInput,
    OrderAnswered,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Desk {
    pub answers: Vec<String>,
}

#[handler(DeskEvent)]
impl Desk {
    fn input(&mut self, _input: &UserInput) {}
    fn answered(&mut self, answer: &OrderAnswered) {
        self.answers.push(answer.status.clone());
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    pub status: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct OrderId {
    pub order: String,
}

fn lookup_order() -> FnTool<OrderId> {
    FnTool::new(
        "lookup_order",
        "Finds an order.",
        |args: OrderId| async move {
            Ok::<_, String>(serde_json::json!({ "order": args.order, "status": "shipped" }))
        },
    )
}

pub struct Support;

#[agent(output = Answer, emits = [OrderAnswered], model = "scripted-model", tools = [lookup_order()])]
impl Support {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, answer: Answer) -> OrderAnswered {
        OrderAnswered {
            status: answer.status,
        }
    }
}

/// The support desk on `store`: its agent looks the order up with a real tool call, then
/// answers (12 tokens in, 5 out).
pub fn desk(store: impl Store) -> Workflow<Desk> {
    let provider = ScriptedProvider::new().fallback("support", |_| {
        Reply::output_with(|results| serde_json::json!({ "status": results[0]["status"] }))
            .run_tool(
                "call-1",
                "lookup_order",
                serde_json::json!({ "order": "A-17" }),
            )
            .text("It has shipped.")
            .usage(Usage {
                input_tokens: 12,
                output_tokens: 5,
                ..Usage::default()
            })
    });
    Workflow::builder("desk")
        .initial_state(Desk::default())
        .agent(Support)
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

/// The venv's `phoenix` program, the pinned release installed on first use.
pub fn phoenix_program() -> PathBuf {
    openharness_testkit::python::venv("phoenix-venv", phoenix_pin()).join("bin/phoenix")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Phoenix server on 127.0.0.1, with a working directory of its own; killed when dropped.
pub struct Phoenix {
    child: Child,
    /// The shared test client, pointed at Phoenix's HTTP port.
    pub client: Client,
    /// `http://127.0.0.1:{port}`, for the exporter's endpoint.
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    /// Starts Phoenix and waits (up to two minutes) until it answers `GET /healthz`.
    pub async fn start() -> Self {
        let program = phoenix_program();
        let dir = tempfile::tempdir().unwrap();
        let (port, grpc) = (free_port(), free_port());
        let log = dir.path().join("phoenix.log");
        let child = Command::new(program)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let client = Client::new(SocketAddr::from(([127, 0, 0, 1], port)))
            .with_timeout(Duration::from_secs(30));
        let phoenix = Self {
            child,
            base: client.url(""),
            client,
            _dir: dir,
        };
        let what = format!(
            "Phoenix to answer GET /healthz (its log: {})",
            log.display()
        );
        eventually(Duration::from_secs(120), &what, || async {
            match phoenix.client.try_call("GET", "/healthz", None, &[]).await {
                Ok(answer) if answer.status == 200 => Ok(()),
                Ok(answer) => Err(format!("status {}", answer.status)),
                Err(error) => Err(error.to_string()),
            }
        })
        .await;
        phoenix
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
