//! A Python virtualenv with pinned packages for a suite that runs a Python peer (`race`,
//! `load`): created on first use at the workspace root (or where an environment variable
//! says), filled with `pip install -r` from the suite's requirements file, and filled again
//! when the pins change (the installed pins are kept in a marker file beside).

use std::path::PathBuf;
use std::process::Command;

use crate::report::Fallible;

/// A suite's pinned virtualenv.
pub(crate) struct Pinned {
    /// The suite's name, for messages and the marker file.
    pub(crate) suite: &'static str,
    /// The environment variable that moves the virtualenv.
    pub(crate) env: &'static str,
    /// The virtualenv's folder under the workspace root.
    pub(crate) folder: &'static str,
    /// The requirements file, relative to the bench crate.
    pub(crate) requirements: &'static str,
}

impl Pinned {
    /// The virtualenv's folder, with the pinned packages installed; `Err` says why not.
    pub(crate) fn ready(&self) -> Fallible<PathBuf> {
        let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let venv = std::env::var_os(self.env)
            .map_or_else(|| bench.join("../..").join(self.folder), PathBuf::from);
        let python = venv.join("bin/python");
        let requirements = bench.join(self.requirements);
        let wanted = std::fs::read_to_string(&requirements)?;
        let marker = venv.join(format!("{}-requirements.txt", self.suite));
        if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
            return Ok(venv);
        }
        let suite = self.suite;
        if !python.exists() {
            eprintln!("bench {suite}: creating a virtualenv in {}", venv.display());
            let status = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()?;
            if !status.success() {
                return Err(format!("python3 -m venv failed ({status})").into());
            }
        }
        eprintln!("bench {suite}: pip install -r {}", requirements.display());
        let status = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(&requirements)
            .status()?;
        if !status.success() {
            return Err(format!("pip install failed ({status})").into());
        }
        std::fs::write(&marker, wanted)?;
        Ok(venv)
    }
}
