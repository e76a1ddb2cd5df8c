//! LangGraph's side of the load suite: the pinned virtualenv (`.load-venv` at the workspace
//! root, or `OPENHARNESS_LOAD_VENV`; created and filled from `crates/bench/load/requirements.txt`
//! on first use, and again when the pins change) and the project `langgraph dev` serves:
//! `crates/bench/load/agent.py`, a `langgraph.json` naming its graph `agent`, and a `.env` with
//! the fake model's URL and tracing off. The project's saved state (`.langgraph_api/`, which
//! the in-memory server pickles every 10 s and reloads at start) is removed before each start.

use std::path::{Path, PathBuf};

use crate::report::Fallible;

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv, with the pinned packages installed; `Err` says why not.
pub(crate) fn venv() -> Fallible<PathBuf> {
    crate::venv::Pinned {
        suite: "load",
        env: "OPENHARNESS_LOAD_VENV",
        folder: ".load-venv",
        requirements: "load/requirements.txt",
    }
    .ready()
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
