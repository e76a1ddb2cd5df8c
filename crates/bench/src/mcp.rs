//! `cargo xtask bench mcp`: what calling an MCP server's tool through `openharness-mcp` costs
//! over calling it directly with `rmcp`, the official Rust SDK the crate wraps.
//!
//! The servers are the pinned real ones the crate's tests run (`crates/mcp/tests/common/
//! pinned.rs`, included below, installs them into `target/` on first use): the Python SDK's
//! `counting.py` (tool `add`) over stdio, and `@modelcontextprotocol/server-everything`
//! (tool `echo`) over stdio and over Streamable HTTP on 127.0.0.1.
//!
//! For each, [`CALLS`] sequential calls a side, in [`ROUNDS`] rounds that alternate which side
//! goes first, so machine noise hits both:
//! (a) directly with `rmcp`: a `()` client handler, `RunningService::call_tool` with
//!     `CallToolRequestParams::new(..).with_arguments(..)`, the same handshake (lifecycle mode)
//!     `openharness-mcp` uses, so both speak the same protocol version;
//! (b) through the agent tool, `McpTool::call` (`McpClient::call`: the catalog lookup, the
//!     per-call timeout, the result mapped to JSON).
//!
//! Each answer is checked on both sides. Over stdio each side starts its own server process;
//! over HTTP both talk to one. Goal: (b)'s median per-call latency at most 1.2× (a)'s. For
//! information, (c): on the `add` server, the full agent path, a run of an agent on the scripted
//! model (`Reply::run_tool`) that calls the tool once, `tool:called` and `tool:result`
//! recorded in a `MemoryStore`, against (a)'s per-call latency.

#[allow(dead_code)]
#[path = "../../mcp/tests/common/pinned.rs"]
mod pinned;

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness::builtin::UserInput;
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness::{Agent, Emit, Event, RunOptions, Tool, Workflow, event, handler};
use openharness_mcp::{McpClient, McpServer};
use openharness_provider::{Reply, ScriptedProvider};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientServiceExt, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::report::Row;

use crate::report::Fallible;

/// Calls per side and server.
const CALLS: usize = 2_000;
/// Rounds per side, alternating which side goes first.
const ROUNDS: usize = 20;
/// Calls per round.
const PER_ROUND: usize = CALLS / ROUNDS;
/// Calls each side makes before the measured rounds (connections, caches, the servers' JITs).
const WARMUP: usize = 100;
/// Agent runs, for (c): fewer, each records a session.
const AGENT_RUNS: usize = 500;
/// The goal: (b) / (a), per-call medians.
const GOAL: f64 = 1.2;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("mcp", crate::report::Missed::Fails, suite)
}

async fn suite() -> Fallible<Vec<Row>> {
    eprintln!("bench mcp: installing the pinned servers into target/ (first use only)…");
    let python = pinned::python()?;
    let script = pinned::counting_script();
    let everything = pinned::everything_js()?;
    let counting = |name: &str| {
        McpServer::stdio(name, python.to_string_lossy())
            .arg(script.to_string_lossy())
            .arg("stdio")
    };
    let everything_stdio = |name: &str| {
        McpServer::stdio(name, "node")
            .arg(everything.to_string_lossy())
            .arg("stdio")
    };

    let mut rows = Vec::new();

    eprintln!("bench mcp: Python SDK `add` over stdio…");
    let ours = McpClient::connect(&counting("counting")).await?;
    let direct = direct_stdio(&counting("counting")).await?;
    let agent = agent(&ours)?;
    let (add, agent_row) = compare(
        "`add` (Python SDK), stdio",
        Kind::Add,
        &direct,
        &tool(&ours, "add")?,
        Some(&agent),
    )
    .await?;
    rows.push(add);
    rows.extend(agent_row);
    drop((direct, ours));

    eprintln!("bench mcp: server-everything `echo` over stdio…");
    let ours = McpClient::connect(&everything_stdio("everything")).await?;
    let direct = direct_stdio(&everything_stdio("everything")).await?;
    rows.push(compare_echo("`echo` (everything), stdio", &direct, &ours).await?);
    drop((direct, ours));

    eprintln!("bench mcp: server-everything `echo` over Streamable HTTP…");
    let port = pinned::free_port()?;
    let server = pinned::Running::start(
        Command::new("node")
            .arg(&everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string()),
        port,
    )?;
    // Ours first: connecting installs the process's rustls crypto provider (the workspace's
    // reqwest has none built in), which the direct side's HTTP client needs as well.
    let ours = McpClient::connect(&McpServer::http("everything", &server.url)).await?;
    let direct = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url.as_str()),
            lifecycle(),
        )
        .await?;
    rows.push(compare_echo("`echo` (everything), HTTP", &direct, &ours).await?);
    drop((direct, ours, server));
    Ok(rows)
}

/// The handshake `openharness-mcp` does (`client.rs`'s `lifecycle`), so both sides negotiate
/// the same protocol version.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}

/// `server` (a stdio one) started and connected with `rmcp` alone; its stderr is discarded.
async fn direct_stdio(server: &McpServer) -> Fallible<RunningService<RoleClient, ()>> {
    let openharness_mcp::McpTransport::Stdio { command, args, .. } = server.transport() else {
        return Err("not a stdio server".into());
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    Ok(().serve_with_lifecycle(transport, lifecycle()).await?)
}

/// The client's agent tool `name`.
fn tool(client: &McpClient, name: &str) -> Fallible<Arc<dyn Tool>> {
    client
        .tools()
        .into_iter()
        .find(|tool| tool.name() == name)
        .ok_or_else(|| format!("{} offers no tool `{name}`", client.name()).into())
}

/// The tool called, its arguments for call `i` and the answer to expect.
#[derive(Clone, Copy)]
enum Kind {
    /// The counting server's `add`: `i + 1`, as the structured `{"result": …}`.
    Add,
    /// server-everything's `echo`: `Echo: call i`, as text.
    Echo,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Echo => "echo",
        }
    }

    fn arguments(self, i: usize) -> Value {
        match self {
            Self::Add => json!({ "a": i, "b": 1 }),
            Self::Echo => json!({ "message": format!("call {i}") }),
        }
    }

    fn expected(self, i: usize) -> Value {
        match self {
            Self::Add => json!(i + 1),
            Self::Echo => json!(format!("Echo: call {i}")),
        }
    }

    /// The answer in a raw MCP result, as (a) reads it.
    fn raw_answer(self, result: &CallToolResult) -> Option<Value> {
        match self {
            Self::Add => result.structured_content.as_ref()?.get("result").cloned(),
            Self::Echo => Some(Value::String(
                result.content.first()?.as_text()?.text.clone(),
            )),
        }
    }

    /// The answer in the agent tool's output, as (b) reads it.
    fn answer(self, output: Value) -> Option<Value> {
        match self {
            Self::Add => output.get("result").cloned(),
            Self::Echo => Some(output),
        }
    }
}

/// Fails the suite when a call did not answer what it should: a benchmark of a broken call is
/// worthless.
fn check(kind: Kind, i: usize, got: Option<Value>) -> Fallible<()> {
    let expected = kind.expected(i);
    if got.as_ref() == Some(&expected) {
        Ok(())
    } else {
        Err(format!(
            "wrong answer to `{}` #{i}: {got:?}, not {expected}",
            kind.name()
        )
        .into())
    }
}

/// `calls` calls numbered from `from`, each made by `call` (which gives its answer) and timed;
/// every answer is checked.
async fn timed_calls(
    kind: Kind,
    from: usize,
    calls: usize,
    times: &mut Vec<Duration>,
    mut call: impl AsyncFnMut(usize) -> Fallible<Option<Value>>,
) -> Fallible<()> {
    for i in from..from + calls {
        let started = Instant::now();
        let answer = call(i).await?;
        times.push(started.elapsed());
        check(kind, i, answer)?;
    }
    Ok(())
}

/// (a): call `i` made directly with `rmcp`: its answer.
async fn direct_call(
    service: &RunningService<RoleClient, ()>,
    kind: Kind,
    i: usize,
) -> Fallible<Option<Value>> {
    let Value::Object(arguments) = kind.arguments(i) else {
        return Err("the arguments are not a JSON object".into());
    };
    let params = CallToolRequestParams::new(kind.name()).with_arguments(arguments);
    let result = service.call_tool(params).await?;
    if result.is_error == Some(true) {
        return Err(format!("`{}` failed: {:?}", kind.name(), result.content).into());
    }
    Ok(kind.raw_answer(&result))
}

/// (b): call `i` through the agent tool: its answer.
async fn tool_call(tool: &dyn Tool, kind: Kind, i: usize) -> Fallible<Option<Value>> {
    let output = tool
        .call(kind.arguments(i))
        .await
        .map_err(|err| format!("`{}` failed: {}", kind.name(), err.message()))?;
    Ok(kind.answer(output))
}

/// (c): `runs` runs of the agent, each calling `add` once, each timed.
async fn agent_runs(
    workflow: &Workflow<Desk>,
    runs: usize,
    times: &mut Vec<Duration>,
) -> Fallible<()> {
    for _ in 0..runs {
        let started = Instant::now();
        let outcome = workflow.run(RunOptions::new().input("2 + 3?")).await?;
        times.push(started.elapsed());
        if outcome.state.answers != ["the sum is 5"] {
            return Err(format!("the agent answered {:?}", outcome.state.answers).into());
        }
    }
    Ok(())
}

/// [`compare`] for server-everything's `echo` (no agent runs it).
async fn compare_echo(
    what: &str,
    direct: &RunningService<RoleClient, ()>,
    ours: &McpClient,
) -> Fallible<Row> {
    let (row, _) = compare(what, Kind::Echo, direct, &tool(ours, "echo")?, None).await?;
    Ok(row)
}

/// Alternating rounds of (a) and (b) (and of (c) when given): the goal's row for (b), and the
/// information row for (c).
async fn compare(
    what: &str,
    kind: Kind,
    direct: &RunningService<RoleClient, ()>,
    tool: &Arc<dyn Tool>,
    agent: Option<&Workflow<Desk>>,
) -> Fallible<(Row, Option<Row>)> {
    let mut discarded = Vec::new();
    let direct_call = async |i| direct_call(direct, kind, i).await;
    let tool_call = async |i| tool_call(tool.as_ref(), kind, i).await;
    timed_calls(kind, 0, WARMUP, &mut discarded, direct_call).await?;
    timed_calls(kind, 0, WARMUP, &mut discarded, tool_call).await?;
    if let Some(agent) = agent {
        agent_runs(agent, WARMUP / 10, &mut discarded).await?;
    }
    let (mut raw, mut ours, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let from = WARMUP + round * PER_ROUND;
        if round % 2 == 0 {
            timed_calls(kind, from, PER_ROUND, &mut raw, direct_call).await?;
        }
        timed_calls(kind, from, PER_ROUND, &mut ours, tool_call).await?;
        if let Some(agent) = agent {
            agent_runs(agent, AGENT_RUNS / ROUNDS, &mut runs).await?;
        }
        if round % 2 == 1 {
            timed_calls(kind, from, PER_ROUND, &mut raw, direct_call).await?;
        }
        let (r, o) = (
            &raw[raw.len() - PER_ROUND..],
            &ours[ours.len() - PER_ROUND..],
        );
        eprintln!(
            "bench mcp: {what} round {round}: rmcp {}, openharness {} (median per call)",
            us(median(r)),
            us(median(o)),
        );
    }
    let (baseline, measured) = (median(&raw), median(&ours));
    let ratio = measured.as_secs_f64() / baseline.as_secs_f64();
    let row = Row {
        what: format!("{what}, {CALLS} calls"),
        measured: format!("{}/call", us(measured)),
        baseline: format!("{}/call rmcp", us(baseline)),
        ratio: format!("{ratio:.3}x"),
        goal: "<= 1.2x",
        met: Some(ratio <= GOAL),
    };
    let agent_row = agent.map(|_| {
        let run = median(&runs);
        Row {
            what: format!("agent run calling `add`, {AGENT_RUNS} runs"),
            measured: format!("{}/run", us(run)),
            baseline: format!("{}/call rmcp", us(baseline)),
            ratio: format!("{:.2}x", run.as_secs_f64() / baseline.as_secs_f64()),
            goal: "(info)",
            met: None,
        }
    });
    Ok((row, agent_row))
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// An answer was given.
#[event("answer:given")]
#[derive(Debug, Clone)]
struct AnswerGiven {
    text: String,
}

/// The events the desk reacts to.
#[event]
#[derive(Debug, Clone)]
enum DeskEvent {
    AnswerGiven,
}

/// The answers given so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Desk {
    answers: Vec<String>,
}

#[handler(DeskEvent)]
impl Desk {
    fn answered(&mut self, given: &AnswerGiven) {
        self.answers.push(given.text.clone());
    }
}

/// The agent's output.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Answer {
    text: String,
}

/// Answers sums with the MCP server's `add`.
struct Calculator {
    tools: Vec<Arc<dyn Tool>>,
}

impl Agent for Calculator {
    type State = Desk;
    type Trigger = UserInput;
    type Output = Answer;
    const NAME: &'static str = "calculator";
    const EMITS: &'static [&'static str] = &[AnswerGiven::NAME];

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer, _input: &UserInput) -> Emit {
        Emit::one(AnswerGiven { text: answer.text })
    }
}

/// (c)'s workflow: the calculator on a scripted model that adds 2 and 3 with `client`'s `add`
/// and answers with the sum, recording into a `MemoryStore`.
fn agent(client: &McpClient) -> Fallible<Workflow<Desk>> {
    let model = ScriptedProvider::new().fallback("calculator", |_| {
        Reply::output_with(|results| {
            let sum = results.first().map_or(Value::Null, |r| r["result"].clone());
            json!({ "text": format!("the sum is {sum}") })
        })
        .run_tool("call-add", "add", json!({ "a": 2, "b": 3 }))
    });
    Ok(Workflow::builder("desk")
        .initial_state(Desk::default())
        .agent(Calculator {
            tools: client.tools(),
        })
        .store(MemoryStore::new())
        .provider(model)
        .build()?)
}
