//! The real MCP servers the tests run, installed from the registries into the workspace's
//! ignored `target/` on first use (pinned versions): `@modelcontextprotocol/server-everything`
//! from npm (run with node), and the official Python SDK (`mcp` from PyPI) for
//! `tests/servers/counting.py`. Without node, npm, python3 or the registries the tests fail,
//! saying so: they never skip.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openharness_mcp::McpServer;

/// The npm release of the reference server.
pub(crate) const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
/// The PyPI release of the Python SDK.
pub(crate) const PYTHON_SDK: &str = "mcp==2.3.0";

/// One install at a time (the tests of a binary run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// The workspace's `target/`, where the installs live (ignored by git).
pub(crate) fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"))
}

fn check(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed (is the registry reachable?): {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The venv's python with the pinned `mcp`, installed on first use.
pub(crate) fn python() -> PathBuf {
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = target().join("mcp-venv");
    let python = venv.join("bin/python");
    let marker = venv.join(format!("installed-{PYTHON_SDK}"));
    if !marker.exists() {
        check(
            "python3 -m venv",
            &run(Command::new("python3").args(["-m", "venv"]).arg(&venv)),
        );
        check(
            &format!("pip install {PYTHON_SDK}"),
            &run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", PYTHON_SDK])),
        );
        std::fs::write(&marker, "").unwrap();
    }
    python
}

/// The reference server's entry point, installed on first use.
pub(crate) fn everything_js() -> PathBuf {
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let prefix = target().join("mcp-node");
    let marker = prefix.join(format!("installed-{}", EVERYTHING.replace('/', "+")));
    if !marker.exists() {
        std::fs::create_dir_all(&prefix).unwrap();
        check(
            &format!("npm install {EVERYTHING}"),
            &run(Command::new("npm")
                .args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    "--prefix",
                ])
                .arg(&prefix)
                .arg(EVERYTHING)),
        );
        std::fs::write(&marker, "").unwrap();
    }
    prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The reference server over stdio.
pub(crate) fn everything_stdio() -> McpServer {
    McpServer::stdio("everything", "node")
        .arg(everything_js().to_string_lossy())
        .arg("stdio")
}

/// `tests/servers/counting.py`'s path.
pub(crate) fn counting_script() -> String {
    // From any crate of `crates/` (other crates' tests include this module).
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp/tests/servers/counting.py")
        .to_string_lossy()
        .into_owned()
}

/// A file the counting server appends each call to.
pub(crate) struct Calls(tempfile::TempDir);

impl Calls {
    pub(crate) fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    pub(crate) fn path(&self) -> String {
        self.0.path().join("calls").to_string_lossy().into_owned()
    }

    /// The tools called so far, in order.
    pub(crate) fn seen(&self) -> Vec<String> {
        std::fs::read_to_string(self.path())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The counting server over stdio, counting into `calls`.
pub(crate) fn counting_stdio(calls: &Calls) -> McpServer {
    counting_stdio_named("counting", calls)
}

/// The counting server over stdio under another name.
pub(crate) fn counting_stdio_named(name: &str, calls: &Calls) -> McpServer {
    McpServer::stdio(name, python().to_string_lossy())
        .arg(counting_script())
        .arg("stdio")
        .env("MCP_CALLS_FILE", calls.path())
}

/// A free port on 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// A server process, killed when dropped.
pub(crate) struct Running {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Starts `command` and waits until it accepts connections on `port`.
    pub(crate) fn start(command: &mut Command, port: u16) -> Self {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {command:?}: {err}"));
        let mut running = Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = running.child.try_wait() {
                panic!("{command:?} exited early: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "{command:?} never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        running
    }
}

/// The reference server over Streamable HTTP on a free port.
pub(crate) fn everything_http() -> Running {
    let port = free_port();
    Running::start(
        Command::new("node")
            .arg(everything_js())
            .arg("streamableHttp")
            .env("PORT", port.to_string()),
        port,
    )
}

/// The counting server over Streamable HTTP on a free port, requiring `token` (and the header
/// `X-Team: research`) when given.
pub(crate) fn counting_http(calls: &Calls, token: Option<&str>) -> Running {
    let port = free_port();
    let mut command = Command::new(python());
    command
        .arg(counting_script())
        .arg("http")
        .arg(port.to_string())
        .env("MCP_CALLS_FILE", calls.path());
    if let Some(token) = token {
        command.arg(token);
    }
    Running::start(&mut command, port)
}
