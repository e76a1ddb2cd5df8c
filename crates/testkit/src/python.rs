//! Pinned Python packages from PyPI, each in a virtualenv under the workspace's ignored
//! `target/`, installed on first use: for the suites that test against a real Python client
//! or server (the Everruns SDK, Arize Phoenix). Without `python3` or PyPI such a suite fails,
//! saying so: it never skips.
//!
//! ```no_run
//! // `target/everruns-venv`, with the pinned SDK in it.
//! let venv = openharness_testkit::python::venv("everruns-venv", "everruns-sdk==0.3.1");
//! let python = venv.join("bin/python");
//! # let _ = python;
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// One install at a time (a suite's tests run in parallel).
static INSTALL: Mutex<()> = Mutex::new(());

/// The workspace's `target/`, where the virtualenvs live (ignored by git).
pub fn target() -> PathBuf {
    // This crate sits in `crates/`, as every crate does: `../..` is the workspace's root.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

/// Runs `command` to its end.
///
/// # Panics
///
/// When it cannot be started (no `python3`, say).
pub fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err} (the test needs python3)"))
}

/// The virtualenv `target/{name}` with `requirement` (`package==version`) installed in it: its
/// folder. Created and installed on first use, and again when another version is there.
///
/// # Panics
///
/// When `requirement` is not `package==version`, or `python3 -m venv` or `pip install` fails
/// (no `python3`, PyPI unreachable): the test fails, saying which.
pub fn venv(name: &str, requirement: &str) -> PathBuf {
    let Some((package, version)) = requirement.split_once("==") else {
        panic!("pin {requirement:?} as package==version");
    };
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = target().join(name);
    let python = venv.join("bin/python");
    let check =
        format!("import importlib.metadata as m; assert m.version('{package}') == '{version}'");
    let installed = python.exists()
        && run(Command::new(&python).args(["-c", &check]))
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
        let pip = run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", requirement]));
        assert!(
            pip.status.success(),
            "pip install {requirement} failed (is PyPI reachable?): {}{}",
            String::from_utf8_lossy(&pip.stdout),
            String::from_utf8_lossy(&pip.stderr)
        );
    }
    venv
}
