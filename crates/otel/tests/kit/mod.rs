//! What the otel tests share: a workflow whose agent calls a tool (scripted, offline), and an
//! Arize Phoenix started on 127.0.0.1 from a venv installed on first use.
#![allow(dead_code, unreachable_pub, missing_docs, clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::{FnTool, adapter::Usage};

/// The Phoenix release the tests run against.
pub const PHOENIX: &str = "arize-phoenix==20.26.1";

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

/// The workspace's `target/`, where the venv lives (ignored by git).
fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err} (the test needs python3)"))
}

/// The venv's `phoenix` program, the pinned release installed on first use. Fails loudly when
/// python3 or PyPI is not reachable.
pub fn phoenix_program() -> PathBuf {
    let venv = target().join("phoenix-venv");
    let python = venv.join("bin/python");
    let version = PHOENIX.split("==").nth(1).unwrap();
    let installed = python.exists()
        && run(Command::new(&python).args([
            "-c",
            &format!(
                "import importlib.metadata as m; assert m.version('arize-phoenix') == '{version}'"
            ),
        ]))
        .status
        .success();
    if !installed {
        let made = run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        assert!(
            made.status.success(),
            "python3 -m venv {} failed: {}",
            venv.display(),
            String::from_utf8_lossy(&made.stderr)
        );
        let pip = run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", PHOENIX]));
        assert!(
            pip.status.success(),
            "pip install {PHOENIX} failed (is PyPI reachable?): {}{}",
            String::from_utf8_lossy(&pip.stdout),
            String::from_utf8_lossy(&pip.stderr)
        );
    }
    venv.join("bin/phoenix")
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
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    /// Starts Phoenix and waits (up to two minutes) until it answers.
    pub fn start() -> Self {
        let program = phoenix_program();
        let dir = tempfile::tempdir().unwrap();
        let (port, grpc) = (free_port(), free_port());
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(program)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let phoenix = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let started = Instant::now();
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                && ureq_get(&format!("{}/healthz", phoenix.base)).is_some()
            {
                return phoenix;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "Phoenix did not start within two minutes; its log: {}",
                std::fs::read_to_string(phoenix._dir.path().join("phoenix.log"))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking GET through a plain TCP connection (HTTP/1.0): the body on 200, else `None`.
pub fn ureq_get(url: &str) -> Option<String> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_owned())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_owned()))
}
