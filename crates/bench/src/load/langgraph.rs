//! LangGraph's side of the load suite: the pinned virtualenv (`.load-venv` at the workspace
//! root, or `OPENHARNESS_LOAD_VENV`; created and filled from `crates/bench/load/requirements.txt`
//! on first use, and again when the pins change) and the project `langgraph dev` serves:
//! `crates/bench/load/agent.py`, a `langgraph.json` naming its graph `agent`, and a `.env` with
//! the fake model's URL and tracing off. The project's saved state (`.langgraph_api/`, which
//! the in-memory server pickles every 10 s and reloads at start) is removed before each start.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::report::Fallible;

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv, with the pinned packages installed; `Err` says why not.
pub(crate) fn venv() -> Fallible<PathBuf> {
    let venv = std::env::var_os("OPENHARNESS_LOAD_VENV")
        .map_or_else(|| bench_dir().join("../../.load-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    let requirements = bench_dir().join("load/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)?;
    let marker = venv.join("load-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(venv);
    }
    if !python.exists() {
        eprintln!("bench load: creating a virtualenv in {}", venv.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()?;
        if !status.success() {
            return Err(format!("python3 -m venv failed ({status})").into());
        }
    }
    eprintln!("bench load: pip install -r {}", requirements.display());
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

/// Writes the project into `dir` for a server whose model is at `model_url`, and removes the
/// state a previous server saved there.
pub(crate) fn write_project(dir: &Path, model_url: &str) -> Fallible<()> {
    std::fs::create_dir_all(dir)?;
    let saved = dir.join(".langgraph_api");
    if saved.exists() {
        std::fs::remove_dir_all(&saved)?;
    }
    std::fs::copy(bench_dir().join("load/agent.py"), dir.join("agent.py"))?;
    std::fs::write(
        dir.join("langgraph.json"),
        r#"{ "dependencies": ["."], "graphs": { "agent": "./agent.py:graph" }, "env": ".env" }"#,
    )?;
    std::fs::write(
        dir.join(".env"),
        format!(
            "OPENAI_BASE_URL={model_url}\nOPENAI_API_KEY=sk-load\nLANGSMITH_TRACING=false\nLANGCHAIN_TRACING_V2=false\n"
        ),
    )?;
    Ok(())
}

/// The versions `/info` names and the virtualenv's pins of the packages that matter.
pub(crate) fn pins() -> String {
    let requirements =
        std::fs::read_to_string(bench_dir().join("load/requirements.txt")).unwrap_or_default();
    let wanted = [
        "langgraph-cli==",
        "langgraph-api==",
        "langgraph-runtime-inmem==",
        "langgraph==",
        "langchain-openai==",
        "uvicorn==",
    ];
    requirements
        .lines()
        .filter(|line| wanted.iter().any(|w| line.starts_with(w)))
        .collect::<Vec<_>>()
        .join(", ")
}
