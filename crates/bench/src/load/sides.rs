//! The processes of a load run, each on 127.0.0.1 with its own CPU, memory and descriptors:
//! the fake model (`openharness-bench load-fake`), our server (`openharness-load-serve …
//! serve`) and LangGraph's Agent Server (`langgraph dev` from the pinned virtualenv). Each is
//! started fresh for a run and killed with its descendants when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::client::Connection;
use super::fake::Pace;
use super::serve::MODEL_VAR;
use super::usage::{self, Usage};
use crate::report::Fallible;

/// Which server a run loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `openharness serve` (through `openharness-load-serve`).
    Ours,
    /// LangGraph's Agent Server, `langgraph dev`.
    LangGraph,
    /// The fake model itself: the model's own figures.
    Model,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::LangGraph => "LangGraph",
            Self::Model => "model",
        }
    }
}

/// A child process killed (with what it started) when dropped.
struct Owned {
    child: Child,
    /// SIGTERM first, and how long to give it.
    gentle: Option<Duration>,
}

impl Owned {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited, and how.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let pid = self.child.id();
        let descendants = usage::descendants(pid);
        if let Some(grace) = self.gentle {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline && self.exited().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in descendants {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The fake model, paced by [`Fake::pace`].
pub(crate) struct Fake {
    process: Owned,
    pub(crate) addr: SocketAddr,
}

impl Fake {
    /// Starts `openharness-bench load-fake` (this executable).
    pub(crate) fn start() -> Fallible<Self> {
        let mut command = Command::new(std::env::current_exe()?);
        command.arg("load-fake");
        let (process, line) = spawn_reading_first_line(command, None)?;
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|addr| addr.parse().ok())
            .ok_or_else(|| format!("the fake model printed {line:?}"))?;
        Ok(Self { process, addr })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The base URL of its Chat Completions API.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Sets its pace for the requests after this one.
    pub(crate) async fn pace(&self, pace: Pace) -> Fallible<()> {
        let mut connection = Connection::new(self.addr);
        let body = serde_json::to_string(&pace)?;
        let answer = connection.send("POST", "/control", "", Some(&body)).await?;
        if answer.status != 204 {
            return Err(format!("the fake model refused its pace: {}", answer.status).into());
        }
        Ok(())
    }
}

/// A server under load.
pub(crate) struct Server {
    pub(crate) kind: Kind,
    pub(crate) addr: SocketAddr,
    /// None for [`Kind::Model`] (the fake, owned elsewhere).
    process: Option<Owned>,
    pid: u32,
}

impl Server {
    /// The fake itself, as a server to load (its figures are the model's own).
    pub(crate) fn model(fake: &Fake) -> Self {
        Self {
            kind: Kind::Model,
            addr: fake.addr,
            process: None,
            pid: fake.pid(),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Its process tree's use now.
    pub(crate) fn usage(&self) -> Usage {
        usage::of_tree(self.pid)
    }

    /// Fails when the process has exited.
    pub(crate) fn check_alive(&mut self) -> Fallible<()> {
        if let Some(process) = &mut self.process
            && let Some(status) = process.exited()
        {
            return Err(format!("{} exited ({status})", self.kind.name()).into());
        }
        Ok(())
    }
}

/// Spawns `command` with stdout piped and reads its first line (stderr to `log`, else
/// discarded); the rest of stdout is drained by a thread.
fn spawn_reading_first_line(mut command: Command, log: Option<&Path>) -> Fallible<(Owned, String)> {
    command.stdout(Stdio::piped()).stdin(Stdio::null());
    command.stderr(match log {
        Some(log) => Stdio::from(std::fs::File::create(log)?),
        None => Stdio::null(),
    });
    let mut child = command.spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let process = Owned {
        child,
        gentle: None,
    };
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    Ok((process, line))
}

/// The environment variable naming a library to preload into our server (`LD_PRELOAD`), for
/// experiments; unset, nothing is preloaded.
pub(crate) const PRELOAD_VAR: &str = "OPENHARNESS_LOAD_OURS_PRELOAD";

/// Where a server keeps its sessions.
#[derive(Debug, Clone)]
pub(crate) enum StoreAt {
    /// A redb file.
    Redb(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
    /// A new memory store ([`openharness::store::MEMORY_LOCATION`]).
    Memory,
}

/// Starts our server over `store`, its model the fake at `model_url`.
pub(crate) async fn start_ours(
    exe: &Path,
    store: &StoreAt,
    model_url: &str,
    log: &Path,
) -> Fallible<Server> {
    let mut command = Command::new(exe);
    let store = match store {
        StoreAt::Redb(path) => path.display().to_string(),
        StoreAt::Postgres(url) => url.clone(),
        StoreAt::Memory => openharness::store::MEMORY_LOCATION.to_owned(),
    };
    command
        .arg("--store")
        .arg(store)
        .args([
            "serve",
            "--port",
            "0",
            "--max-connections",
            "30000",
            "--max-streams-per-session",
            "20000",
        ])
        .env(MODEL_VAR, model_url);
    // For experiments: a library preloaded into our server only (a candidate fix tried
    // before it is written into the server, say).
    if let Some(preload) = std::env::var_os(PRELOAD_VAR) {
        command.env("LD_PRELOAD", preload);
    }
    let log = log.to_owned();
    let (process, line) =
        tokio::task::spawn_blocking(move || spawn_reading_first_line(command, Some(&log)))
            .await??;
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|port| port.parse().ok())
        .ok_or_else(|| format!("our server printed {line:?}"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let pid = process.pid();
    let mut server = Server {
        kind: Kind::Ours,
        addr,
        process: Some(process),
        pid,
    };
    wait_ready(&mut server, "/health", Duration::from_secs(30)).await?;
    Ok(server)
}

/// Starts `langgraph dev` on a free port in `project` (the graph and its `.env` written there
/// first, its saved state removed), with `jobs` background workers.
pub(crate) async fn start_langgraph(
    venv: &Path,
    project: &Path,
    model_url: &str,
    jobs: usize,
) -> Fallible<Server> {
    super::langgraph::write_project(project, model_url)?;
    let port = free_port()?;
    let log = std::fs::File::create(project.join("server.log"))?;
    let mut command = Command::new(venv.join("bin/langgraph"));
    command
        .args(["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"])
        .args(["--port", &port.to_string()])
        .args(["--n-jobs-per-worker", &jobs.max(1).to_string()])
        .args(["--server-log-level", "warning"])
        .current_dir(project)
        .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
        .env("LANGSMITH_TRACING", "false")
        .env("LANGCHAIN_TRACING_V2", "false")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log));
    let child = command.spawn()?;
    let pid = child.id();
    let mut server = Server {
        kind: Kind::LangGraph,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        process: Some(Owned {
            child,
            gentle: Some(Duration::from_secs(5)),
        }),
        pid,
    };
    if let Err(err) = wait_ready(&mut server, "/ok", Duration::from_secs(120)).await {
        let log = std::fs::read_to_string(project.join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{err}; its log ends:\n{}", tail.join("\n")).into());
    }
    Ok(server)
}

/// Waits until `path` answers `200` (failing if the process exits or `limit` passes).
async fn wait_ready(server: &mut Server, path: &str, limit: Duration) -> Fallible<()> {
    let deadline = Instant::now() + limit;
    loop {
        server.check_alive()?;
        let mut connection = Connection::new(server.addr);
        if let Ok(answer) = connection.send("GET", path, "", None).await
            && answer.status == 200
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} did not answer GET {path} on {} within {} s",
                server.kind.name(),
                server.addr,
                limit.as_secs()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A port of 127.0.0.1 free a moment ago.
pub(crate) fn free_port() -> Fallible<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
