//! `openharness mcp serve`, driven by the official Python MCP client (`mcp` from PyPI, pinned,
//! installed into `target/mcp-venv` on first use) as a coding assistant drives it: over stdio
//! read-only (no write tool listed, a write refused) and read-write (a fork with another input,
//! then compared with its parent), and over Streamable HTTP behind an API key. And `mcp tools`
//! listing a server given after `--`. Without python3 or PyPI the test fails, saying so.
#![allow(clippy::unwrap_used, missing_docs)]

mod binary;
#[path = "../../mcp/tests/common/mod.rs"]
mod servers;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use binary::Killed;
use openharness_testkit::block_on;
use openharness_testkit::http::Client;
use serde_json::Value;

const OPENHARNESS: &str = env!("CARGO_BIN_EXE_openharness");

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/store_client.py")
}

/// A store with one recorded chat (`openharness demo chat`).
fn recorded_store(dir: &Path) -> PathBuf {
    let store = dir.join("store.redb");
    let demo = Command::new(OPENHARNESS)
        .arg("--store")
        .arg(&store)
        .args(["demo", "chat"])
        .output()
        .unwrap();
    assert!(
        demo.status.success(),
        "{}",
        String::from_utf8_lossy(&demo.stderr)
    );
    store
}

fn findings(command: &mut Command) -> Value {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python client failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

fn python() -> Command {
    let mut command = Command::new(servers::python());
    command.arg(client_script());
    command
}

const READS: [&str; 5] = [
    "diff_sessions",
    "list_sessions",
    "list_workflows",
    "read_events",
    "state_at",
];

fn check_reads(found: &Value) {
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["first"]["status"], "idle");
    let len = found["first"]["len"].as_u64().unwrap();
    assert!(len > 5);
    // Paged: five events, then the rest.
    assert_eq!(found["page"]["names"][0], "workflow:started");
    assert_eq!(found["page"]["names"].as_array().unwrap().len(), 5);
    assert_eq!(found["page"]["next_after"], 4);
    assert_eq!(found["rest"].as_u64().unwrap(), len - 5);
    assert_eq!(found["state_end"]["position"], len);
    assert_eq!(found["state_0"]["position"], 0);
    assert_ne!(found["state_end"]["state"], found["state_0"]["state"]);
    assert!(
        found["bad_session"]["error"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    assert!(
        found["bad_args"]["error"]
            .as_str()
            .unwrap()
            .contains("invalid arguments")
    );
    assert_eq!(found["same"]["agree"], len, "{}", found["same"]);
    assert!(found["same"]["divergence"].is_null());
}

#[test]
fn a_python_mcp_client_reads_the_store_over_stdio_and_forks_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let store = recorded_store(dir.path());

    let found = findings(
        python()
            .args(["stdio", OPENHARNESS])
            .arg(&store)
            .arg("read-only"),
    );
    assert_eq!(
        found["tools"],
        serde_json::json!(READS),
        "read-only lists no write tool"
    );
    check_reads(&found);
    assert!(
        found["fork"]["error"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{found}"
    );

    let found = findings(
        python()
            .args(["stdio", OPENHARNESS])
            .arg(&store)
            .arg("read-write"),
    );
    let tools = found["tools"].as_array().unwrap();
    for write in ["answer_request", "fork_session", "send_input", "start_run"] {
        assert!(tools.contains(&Value::from(write)), "{tools:?}");
    }
    check_reads(&found);
    let fork = &found["fork"];
    assert!(fork["session"].is_string(), "{found}");
    assert_eq!(found["after_fork_total"], 2);
    // The fork shares the parent's every event, then goes on with the new question.
    let diff = &found["fork_diff"];
    assert_eq!(diff["ancestor"]["session"], found["same"]["a"], "{diff}");
    assert_eq!(diff["agree"], found["first"]["len"], "{diff}");
    assert!(diff["divergence"]["a"].is_null(), "{diff}");
    assert!(diff["bLen"].as_u64().unwrap() > diff["aLen"].as_u64().unwrap());
}

#[test]
fn over_streamable_http_it_asks_for_the_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = recorded_store(dir.path());
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "s3cret-key\n").unwrap();
    let mut server = Killed(
        Command::new(OPENHARNESS)
            .arg("--store")
            .arg(&store)
            .args(["mcp", "serve", "--addr", "127.0.0.1:0", "--api-keys-file"])
            .arg(&keys)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut banner = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let url = banner
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"))
        .to_owned();
    assert!(banner.contains("read-only"), "{banner}");

    let found = findings(python().args(["http", &url, "s3cret-key"]));
    assert_eq!(found["tools"], serde_json::json!(READS));
    check_reads(&found);

    // Without the key the client is turned away: 401 with a Bearer challenge.
    let refused = python().args(["http", &url]).output().unwrap();
    assert!(!refused.status.success());
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let client = Client::new(authority.parse().unwrap());
    let answer = block_on(client.call("POST", "/mcp", None, &[]));
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(
        answer
            .header("www-authenticate")
            .is_some_and(|challenge| challenge.to_lowercase().starts_with("bearer")),
        "{answer:?}"
    );
}

#[test]
fn mcp_tools_lists_a_servers_tools_without_touching_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let everything = servers::everything_js();
    let listed = Command::new(OPENHARNESS)
        .current_dir(dir.path())
        .args(["mcp", "tools", "--json", "--", "node"])
        .arg(&everything)
        .arg("stdio")
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let json: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let tools = json[0]["tools"].as_array().unwrap();
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["input_schema"]["required"][0], "message");
    assert!(
        !dir.path().join(".openharness").exists(),
        "no store was created"
    );

    let missing = Command::new(OPENHARNESS)
        .current_dir(dir.path())
        .args(["mcp", "tools", "--", "/nonexistent/server"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("could not be started"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
