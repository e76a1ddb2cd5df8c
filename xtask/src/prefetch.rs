//! What `cargo xtask ci` downloads while it compiles: the pinned Python tools that later steps
//! install on first use (Arize Phoenix for the otel crate's tests, schemathesis for the last
//! step), put into the same `target/` virtualenvs those steps use, so the downloads overlap
//! the build instead of following it. A prefetch that fails only warns: the step that needs
//! the tool installs it itself, and says why when it cannot.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The pinned Phoenix the otel tests run against (their kit reads the same file).
const PHOENIX_PIN: &str = "crates/otel/tests/kit/phoenix.txt";

/// The installs under way.
pub(crate) struct Prefetch {
    jobs: Vec<(String, Child)>,
}

/// Starts installing each tool whose virtualenv does not exist yet under `root/target`.
pub(crate) fn start(root: &Path) -> Prefetch {
    let phoenix = std::fs::read_to_string(root.join(PHOENIX_PIN)).unwrap_or_default();
    let tools = [
        ("phoenix-venv", phoenix.trim().to_owned()),
        (
            "schemathesis-venv",
            crate::schemathesis::SCHEMATHESIS.to_owned(),
        ),
    ];
    let mut jobs = Vec::new();
    for (venv, requirement) in tools {
        let venv = root.join("target").join(venv);
        if requirement.is_empty() || venv.join("bin/python").exists() {
            continue;
        }
        match install(&venv, &requirement) {
            Ok(child) => {
                eprintln!(
                    "xtask: installing {requirement} into {} meanwhile",
                    venv.display()
                );
                jobs.push((requirement, child));
            }
            Err(err) => eprintln!("xtask: cannot prefetch {requirement}: {err}"),
        }
    }
    Prefetch { jobs }
}

fn install(venv: &Path, requirement: &str) -> std::io::Result<Child> {
    std::fs::create_dir_all(venv.parent().unwrap_or(venv))?;
    let log = File::create(venv.with_extension("prefetch.log"))?;
    Command::new("sh")
        .arg("-c")
        .arg(r#"python3 -m venv "$1" && "$1/bin/pip" install --quiet "$2""#)
        .arg("prefetch")
        .arg(venv)
        .arg(requirement)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
}

impl Prefetch {
    /// Waits for every install; one that failed is reported and left to its step.
    pub(crate) fn finish(self) {
        for (requirement, mut child) in self.jobs {
            match child.wait() {
                Ok(status) if status.success() => {}
                Ok(status) => eprintln!(
                    "xtask: prefetching {requirement} failed ({status}); its step will install it"
                ),
                Err(err) => eprintln!("xtask: prefetching {requirement}: {err}"),
            }
        }
    }
}
