//! The real MCP servers the tests run, installed from the registries into the workspace's
//! ignored `target/` on first use (pinned versions, see `pinned.rs`, which the bench shares):
//! `@modelcontextprotocol/server-everything` from npm (run with node), and the official Python
//! SDK (`mcp` from PyPI) for `tests/servers/counting.py`. Without node, npm, python3 or the
//! registries the tests fail, saying so: they never skip.
#![allow(dead_code, clippy::unwrap_used)]

mod pinned;

use std::path::PathBuf;
use std::process::Command;

use openharness_mcp::{McpClient, McpServer};
use openharness_testkit::{LIMIT, eventually};

pub(crate) use pinned::Running;

/// Waits (the kit's limit) until `client` has listed its server's tools again since it had
/// listed them `before` times.
pub(crate) async fn relisted(client: &McpClient, before: u64) {
    eventually(LIMIT, "the tools to be listed again", || async {
        let now = client.listings();
        if now == before { Err(now) } else { Ok(()) }
    })
    .await;
}

/// The venv's python with the pinned `mcp`, installed on first use.
pub(crate) fn python() -> PathBuf {
    pinned::python().unwrap_or_else(|err| panic!("{err}"))
}

/// The reference server's entry point, installed on first use.
pub(crate) fn everything_js() -> PathBuf {
    pinned::everything_js().unwrap_or_else(|err| panic!("{err}"))
}

/// The reference server over stdio.
pub(crate) fn everything_stdio() -> McpServer {
    McpServer::stdio("everything", "node")
        .arg(everything_js().to_string_lossy())
        .arg("stdio")
}

/// `tests/servers/counting.py`'s path.
pub(crate) fn counting_script() -> String {
    pinned::counting_script().to_string_lossy().into_owned()
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
    pinned::free_port().unwrap_or_else(|err| panic!("{err}"))
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
    .unwrap_or_else(|err| panic!("{err}"))
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
    Running::start(&mut command, port).unwrap_or_else(|err| panic!("{err}"))
}
