//! `cargo xtask schemathesis`: the server against its own OpenAPI document. It builds the
//! `openharness` binary, records a chat in a temporary folder, serves it on a free loopback
//! port, and runs schemathesis (pinned, installed from PyPI into `target/schemathesis-venv` on
//! first use) with every check and a fixed seed: no 5xx, every response conforms to the
//! document. The server mounts the platform's `/v1` routes too, with a throwaway master key
//! (so providers can have keys) and no model provider (posting a message answers the
//! documented `503 no_provider`, or `422` for a model row that cannot answer). The SSE-only
//! routes under `/api/` and `/ag-ui/` are left out (a fuzzer cannot end a stream).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The schemathesis release the check runs.
pub(crate) const SCHEMATHESIS: &str = "schemathesis==4.32.5";

/// Where the checks expect other answers than schemathesis' defaults, and why.
///
/// A `/v1` body may name another resource by id (an agent's `default_model_id`, a session's
/// `model_id` or `agent_id`/`agent_name`, a model's `provider_id`, a message's
/// `controls.model_id`): an id that names nothing is `422` (or `404` for the agent of
/// `POST /v1/sessions`), which no schema can rule out, so schema-valid input may be refused
/// with it there. Posting a message needs a model provider, which the fuzzed server has none of:
/// the documented `503 no_provider`. `POST /v1/responses` needs a `model` this server serves
/// (`404` otherwise) and an `input` holding a user message with text (`400`), and
/// `POST /experiments` a file that can run (cases, repeats: `422`), none of which a schema
/// says. `GET /sessions`' `minScore`, `maxScore` and score sorts read one online scorer's
/// scores, so they need `scorer` (`400` naming it): no schema says one query parameter needs
/// another. An annotation's `turn` must be a position where one of the session's turns ended
/// (`400` otherwise), which depends on the session.
const CONFIG: &str = r#"
[[operations]]
include-name-regex = "^(POST /v1/agents|PATCH /v1/agents/\\{id\\}|POST /v1/agents/\\{id\\}/sessions|PATCH /v1/agents/\\{id\\}/sessions/\\{session\\}|POST /v1/llm-models|POST /v1/agents/\\{id\\}/sessions/\\{session\\}/messages|POST /v1/sessions|POST /v1/sessions/\\{id\\}/messages)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "503"]
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

[[operations]]
include-name-regex = "^(POST /v1/responses|POST /experiments|GET /sessions|POST /sessions/\\{id\\}/annotations)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "503"]
"#;

/// Kills the server however the check ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn run(cargo: &str) -> bool {
    match check(cargo) {
        Ok(()) => true,
        Err(err) => {
            eprintln!("xtask schemathesis: {err}");
            false
        }
    }
}

fn check(cargo: &str) -> Result<(), String> {
    let root = std::env::current_dir().map_err(|e| e.to_string())?;
    let venv = root.join("target/schemathesis-venv");
    let st = venv.join("bin/schemathesis");
    if !st.exists() {
        eprintln!("$ python3 -m venv {}", venv.display());
        status(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        eprintln!("$ pip install {SCHEMATHESIS}");
        status(Command::new(venv.join("bin/pip")).args(["install", "--quiet", SCHEMATHESIS]))?;
    }
    status(Command::new(cargo).args(["build", "--quiet", "--package", "openharness-cli"]))?;
    let binary = root.join("target/debug/openharness");
    let folder = root.join("target/schemathesis-run");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    status(
        Command::new(&binary)
            .args(["demo", "chat"])
            .current_dir(&folder)
            .stdout(Stdio::null()),
    )?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let address = format!("127.0.0.1:{port}");
    let server = Server(
        Command::new(&binary)
            .args(["serve", "--addr", &address])
            .env(
                "OPENHARNESS_MASTER_KEYS",
                format!("schemathesis:{}", "5c".repeat(32)),
            )
            .env_remove("OPENHARNESS_MASTER_KEYS_FILE")
            .current_dir(&folder)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?,
    );
    wait_for(&address)?;
    let config = folder.join("schemathesis.toml");
    std::fs::write(&config, CONFIG).map_err(|e| e.to_string())?;
    eprintln!("$ schemathesis run http://{address}/openapi.json --checks all");
    let result = status(
        Command::new(&st)
            .arg("--config-file")
            .arg(&config)
            .args(["run", &format!("http://{address}/openapi.json")])
            .args(["--checks", "all", "--max-examples", "50", "--seed", "1"])
            .args([
                "--request-timeout",
                "10",
                "--exclude-path-regex",
                "^/(api|ag-ui)/.*",
            ])
            .current_dir(&folder),
    );
    drop(server);
    result
}

/// Waits (bounded) until the server accepts connections.
fn wait_for(address: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(address).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "the server did not listen on {address} within 30 s"
    ))
}

fn status(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}
