//! `openharness-bench`: the benchmarks behind `cargo xtask bench <suite>`.
//!
//! Every figure is printed next to a baseline measured in the same run and the ratio
//! between them, with the goal it is held to, so results compare across machines.
//! (`cargo xtask bench stores` is the store crate's own binary, `openharness-store-bench`.)
//!
//! # Modules
//!
//! One module per suite, named as `cargo xtask bench` names it:
//!
//! - `tape`: replay, dispatch, fold throughput, step back, jumps, snapshot memory.
//! - `sessions`: a session of a million events: continuing it, its unfinished work, a turn's heap.
//! - `race` (`race/`): the planner-executor shape against LangGraph's (`crates/bench/race/`).
//! - `server`: SSE fan-out against a minimal axum broadcast, continue over HTTP, an idle stream.
//! - `platform` (`platform/`): the `/v1` API against the native routes, on redb and PostgreSQL.
//! - `chat`: the chat reply decoded from a model's streamed JSON against streaming raw text.
//! - `eval`: an experiment's runs against a plain loop, re-scoring, what forking a recording saves.
//! - `mcp`: a tool called through `openharness-mcp` against the same call made with `rmcp`.
//! - `otel`: the race shape with live span export against without, and a burst into a collector.
//! - `diff`: two 100 000-event sessions compared against loading one of them.
//! - `replay`: `replay --all` over 10 000 recorded demo sessions against recording them.
//! - `list`: the session list of 10 000 sessions: the first page, searches.
//! - `turns`: the host's claim per turn against the workflow alone, and a steer's way into
//!   the running agent's next model request.
//! - `protocols`: a turn streamed through `/api/chat`, Open Responses, AG-UI and A2A against
//!   the native event stream: the cost per streamed delta, the first delta's latency.
//! - `scores`: a served turn with online scorers against the same turn unscored.
//! - `load` (`load/`): `openharness serve` under load against LangGraph's Agent Server, both
//!   against one fake model in a process of its own (`openharness-bench load-fake`).
//!
//! Beside them: `report`, the table every suite prints; `http`, the suites' HTTP side; and
//! `src/bin/openharness-race-child.rs`, our side of the race in a process of its own;
//! `src/bin/openharness-load-serve.rs`, our server under load.

mod chat;
mod diff;
mod eval;
mod http;
mod list;
mod load;
mod mcp;
mod otel;
mod platform;
mod proc_status;
mod protocols;
mod race;
mod replay;
mod report;
mod scores;
mod server;
mod sessions;
mod tape;
mod turns;
mod venv;

use std::process::ExitCode;

use peak_alloc::PeakAlloc;

/// The allocation counts of `openharness-bench`, whose global allocator is [`PeakAlloc`]: the
/// bytes allocated now and at the peak, so the sessions suite can read the heap a turn needs.
/// The count costs two relaxed atomic operations per allocation, in the measured code and its
/// baselines alike. (The counters are `peak_alloc`'s statics; in a binary with another
/// allocator, such as the race's child, they stay at zero.)
pub(crate) static HEAP: PeakAlloc = PeakAlloc;

/// Runs the suite `openharness-bench`'s first argument names.
pub fn run() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("tape") => tape::run(),
        Some("sessions") => sessions::run(),
        Some("race") => race::run(),
        Some("server") => server::run(),
        Some("platform") => platform::run(),
        Some("chat") => chat::run(),
        Some("diff") => diff::run(),
        Some("turns") => turns::run(),
        Some("eval") => eval::run(),
        Some("list") => list::run(),
        Some("mcp") => mcp::run(),
        Some("otel") => otel::run(),
        Some("replay") => replay::run(),
        Some("protocols") => protocols::run(),
        Some("scores") => scores::run(),
        Some("load") => load::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("load-fake") => load::fake_main(&std::env::args().skip(2).collect::<Vec<_>>()),
        _ => {
            eprintln!(
                "usage: openharness-bench tape | sessions | race | server | turns | platform | chat | diff | eval | list | mcp | otel | replay | protocols | scores | load [OPTIONS]"
            );
            ExitCode::from(2)
        }
    }
}

/// `openharness-race-child N DIR [every|caller|redb|periodic|turn] [imbl|vec|vec-undo]`: our side of
/// the race at one N (see the `race` module), in a process of its own so its peak RSS is its
/// own, with the system allocator: the allocation count of `openharness-bench` would tax every
/// thread that allocates (two atomic operations on one shared cache line per allocation: 9% of
/// the samples of a durable run, with the store's writer thread beside the tokio workers),
/// which a library user never pays.
pub fn race_child() -> ExitCode {
    let mut args = std::env::args().skip(1);
    race::child(args.next(), args.next(), args.next(), args.next())
}

/// `openharness-load-serve ARGS…`: the `openharness` command's library with the load suite's
/// chat workflow, answered by its fake model (see the `load` module): our server under load,
/// in a process of its own with the system allocator.
pub fn load_serve() -> ExitCode {
    load::serve::main()
}
