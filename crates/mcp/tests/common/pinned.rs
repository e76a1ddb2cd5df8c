//! The pinned real MCP servers, installed from the registries into the workspace's ignored
//! `target/` on first use: `@modelcontextprotocol/server-everything` from npm (run with node),
//! and the official Python SDK (`mcp` from PyPI) for `tests/servers/counting.py`; and
//! [`Running`], a server process listening on a free port of 127.0.0.1.
//!
//! Shared, std only, by this crate's tests (`tests/common`) and `cargo xtask bench mcp`
//! (`crates/bench` includes this file by path), so both run the same servers. Both crates sit
//! in `crates/`, so `CARGO_MANIFEST_DIR/../..` is the workspace root for either.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The npm release of the reference server.
pub(crate) const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
/// The PyPI release of the Python SDK.
pub(crate) const PYTHON_SDK: &str = "mcp==2.3.0";

/// One install at a time (the tests of a binary run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// The workspace's root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's `target/`, where the installs live (ignored by git).
pub(crate) fn target() -> PathBuf {
    workspace().join("target")
}

/// `crates/mcp/tests/servers/counting.py`'s path.
pub(crate) fn counting_script() -> PathBuf {
    workspace().join("crates/mcp/tests/servers/counting.py")
}

/// Runs `command`; an error, saying what failed, unless it ran and succeeded.
fn run(what: &str, command: &mut Command) -> Result<(), String> {
    let output: Output = command
        .output()
        .map_err(|err| format!("cannot run {command:?}: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed (is the registry reachable?): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Marks an install done.
fn mark(marker: &Path) -> Result<(), String> {
    std::fs::write(marker, "").map_err(|err| format!("cannot write {}: {err}", marker.display()))
}

/// The venv's python with the pinned `mcp`, installed on first use.
pub(crate) fn python() -> Result<PathBuf, String> {
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = target().join("mcp-venv");
    let marker = venv.join(format!("installed-{PYTHON_SDK}"));
    if !marker.exists() {
        run(
            "python3 -m venv",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        )?;
        run(
            &format!("pip install {PYTHON_SDK}"),
            Command::new(venv.join("bin/pip")).args(["install", "--quiet", PYTHON_SDK]),
        )?;
        mark(&marker)?;
    }
    Ok(venv.join("bin/python"))
}

/// The reference server's entry point, installed on first use.
pub(crate) fn everything_js() -> Result<PathBuf, String> {
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let prefix = target().join("mcp-node");
    let marker = prefix.join(format!("installed-{}", EVERYTHING.replace('/', "+")));
    if !marker.exists() {
        std::fs::create_dir_all(&prefix)
            .map_err(|err| format!("cannot create {}: {err}", prefix.display()))?;
        run(
            &format!("npm install {EVERYTHING}"),
            Command::new("npm")
                .args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    "--prefix",
                ])
                .arg(&prefix)
                .arg(EVERYTHING),
        )?;
        mark(&marker)?;
    }
    Ok(prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

/// A free port on 127.0.0.1.
pub(crate) fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|addr| addr.port())
        .map_err(|err| format!("no free port on 127.0.0.1: {err}"))
}

/// A server process, killed when dropped.
pub(crate) struct Running {
    child: Child,
    /// Its Streamable HTTP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Starts `command` and waits (up to 30 s) until it accepts connections on `port`.
    pub(crate) fn start(command: &mut Command, port: u16) -> Result<Self, String> {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start {command:?}: {err}"))?;
        let mut running = Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = running.child.try_wait() {
                return Err(format!("{command:?} exited early: {status}"));
            }
            if Instant::now() >= deadline {
                return Err(format!("{command:?} never listened on {port}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(running)
    }
}
