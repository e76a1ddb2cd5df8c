//! What the `openharness` binary adds to the library: the two examples registered offline,
//! progress lines and one-line summaries for their events and states, and the
//! example-specific `demo` (the scripted demos) and `run` (an example against a real model).

use std::io::Write;
use std::sync::Arc;

use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::{Agent, Envelope, Event, RunOptions};
use openharness_cli::{Cli, CliError, CommandFuture, Context, Describe, ProviderKind};
use openharness_example_chat::{self as chat, AssistantReplied, ChatState};
use openharness_example_planner_executor::{
    self as planner_executor, PlanCreated, PlanState, Release, ReleaseDeclined, ReleasePublished,
    TaskCompleted, TaskStarted,
};
use openharness_host::{HostError, TurnOutcome};
use serde_json::Value;

/// The examples, as `demo` and `run` name them.
const NAMES: &[&str] = &[planner_executor::WORKFLOW_NAME, chat::WORKFLOW_NAME];

/// The binary's own commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Examples {
    /// Run an example offline (scripted model) and record it: the planner-executor (which
    /// asks a person before publishing, and answers "yes" itself) or the chat.
    Demo {
        /// The example: `planner-executor` or `chat`.
        #[arg(default_value = planner_executor::WORKFLOW_NAME)]
        example: String,
        /// The goal to plan, or the chat's one message (the script answers the same way
        /// whatever the goal).
        #[arg(long, visible_alias = "input")]
        goal: Option<String>,
        /// Leave the approval to publish unanswered: the session waits, and the demo prints
        /// the `openharness respond` command that answers it.
        #[arg(long)]
        no_answer: bool,
    },
    /// Run an example against a real model (Anthropic, OpenAI-compatible or the claude CLI) and
    /// record it.
    Run {
        /// The example to run (`planner-executor` or `chat`).
        example: String,
        /// The model backend.
        #[arg(long, value_enum)]
        provider: ProviderKind,
        /// The model (default: the provider's default model).
        #[arg(long)]
        model: Option<String>,
        /// The API's base URL (e.g. `http://localhost:11434/v1` for Ollama).
        #[arg(long)]
        base_url: Option<String>,
        /// The goal to plan (planner-executor) or the first message (chat).
        #[arg(long, visible_alias = "input")]
        goal: Option<String>,
    },
}

/// The CLI of the `openharness` binary.
pub(crate) fn cli() -> Result<Cli<Examples>, HostError> {
    // The store given here is replaced by the one `--store` names.
    let pace = scripted_pace();
    let paced = |provider: ScriptedProvider| match pace {
        Some(delay) => provider.pace(delay),
        None => provider,
    };
    let planner =
        planner_executor::workflow(MemoryStore::new(), paced(planner_executor_offline()))?;
    // A slow chat model streams its reply over the delay, as a real one would.
    let chat_model = match pace {
        Some(over) => chat::streaming_provider(over),
        None => chat::scripted_provider(),
    };
    let chat = chat::workflow(MemoryStore::new(), chat_model)?;
    Ok(Cli::new()
        .commands(|command: Examples, context: Context| -> CommandFuture {
            Box::pin(async move { examples(command, &context).await })
        })
        .name("openharness")
        .workflow(planner)?
        .workflow(chat)?
        .describe(describe)
        .summary(summary))
}

/// `OPENHARNESS_SCRIPTED_DELAY_MS`: how long every answer of the examples' scripted models
/// waits (default none) — a slow model, to watch a turn run, cancel it or resume it; the
/// chat's streams its reply word by word over that time. A value
/// that is not a number of milliseconds is ignored with a warning.
fn scripted_pace() -> Option<std::time::Duration> {
    let text = std::env::var("OPENHARNESS_SCRIPTED_DELAY_MS").ok()?;
    match text.trim().parse::<u64>() {
        Ok(ms) => Some(std::time::Duration::from_millis(ms)),
        Err(_) => {
            eprintln!(
                "warning: OPENHARNESS_SCRIPTED_DELAY_MS=`{text}` is not a number of milliseconds; ignored"
            );
            None
        }
    }
}

/// The planner-executor offline for turns, resumes and forks: answers made from each
/// prompt, so a call answers the task it is asked about wherever the session is (the demo's
/// own script is positional: it fits the demo's first run only).
fn planner_executor_offline() -> ScriptedProvider {
    ScriptedProvider::new()
        .fallback(planner_executor::Planner::NAME, |_| {
            Reply::output(serde_json::json!({ "tasks": ["Review the plan", "Ship it"] }))
        })
        .fallback(planner_executor::Executor::NAME, |request| {
            let task = request.prompt.lines().nth(1).unwrap_or("the task");
            Reply::output(serde_json::json!({ "summary": format!("Done: {task}") }))
        })
}

/// Progress lines for the examples' events: the plan, each task, the task count, the
/// release decision, chat replies.
fn describe() -> Describe {
    let (mut total, mut done) = (0, 0);
    Box::new(move |event: &Envelope| match event.name.as_ref() {
        PlanCreated::NAME => event.decode::<PlanCreated>().ok().map(|plan| {
            total = plan.tasks.len();
            let list: Vec<_> = plan
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| format!("      {}. {t}", i + 1))
                .collect();
            format!("  plan: {total} tasks\n{}", list.join("\n"))
        }),
        TaskStarted::NAME => event
            .decode::<TaskStarted>()
            .ok()
            .map(|t| format!("  task {}/{total}: {}", t.index + 1, t.title)),
        TaskCompleted::NAME => event.decode::<TaskCompleted>().ok().map(|_| {
            done += 1;
            format!("  [{done}/{total} tasks done]")
        }),
        ReleasePublished::NAME => Some("  release published".to_owned()),
        ReleaseDeclined::NAME => event
            .decode::<ReleaseDeclined>()
            .ok()
            .map(|d| format!("  release not published (answer: {:?})", d.answer)),
        AssistantReplied::NAME => event
            .decode::<AssistantReplied>()
            .ok()
            .map(|r| format!("  assistant: {}", r.reply)),
        _ => None,
    })
}

/// A one-line summary of an example's state.
fn summary(workflow: &str, state: &Value) -> Option<String> {
    match workflow {
        planner_executor::WORKFLOW_NAME => {
            let state: PlanState = serde_json::from_value(state.clone()).ok()?;
            let release = match state.release {
                Some(Release::Published) => "the release is published",
                Some(Release::Declined) => "the release was not published",
                None if state.awaits_approval() => "the release waits for approval",
                None => "nothing published yet",
            };
            Some(format!(
                "{} of {} tasks done; {release}.",
                state.completed,
                state.tasks.len()
            ))
        }
        chat::WORKFLOW_NAME => {
            let state: ChatState = serde_json::from_value(state.clone()).ok()?;
            let answered = state.exchanges.iter().filter(|e| e.reply.is_some()).count();
            Some(format!(
                "{} messages in the conversation, {answered} answered.",
                state.exchanges.len()
            ))
        }
        _ => None,
    }
}

fn unknown_example(example: &str) -> CliError {
    CliError::Usage(format!(
        "unknown example `{example}`; the examples are: {}",
        NAMES.join(", ")
    ))
}

async fn examples(command: Examples, context: &Context) -> Result<(), CliError> {
    match command {
        Examples::Demo {
            example,
            goal,
            no_answer,
        } => match example.as_str() {
            planner_executor::WORKFLOW_NAME => demo_planner(context, goal, no_answer).await,
            chat::WORKFLOW_NAME => demo_chat(context, goal).await,
            _ => Err(unknown_example(&example)),
        },
        Examples::Run {
            example,
            provider,
            model,
            base_url,
            goal,
        } => {
            let input = match example.as_str() {
                planner_executor::WORKFLOW_NAME => {
                    goal.unwrap_or_else(|| planner_executor::DEMO_GOAL.to_owned())
                }
                chat::WORKFLOW_NAME => goal.unwrap_or_else(|| chat::DEMO_MESSAGES[0].to_owned()),
                _ => return Err(unknown_example(&example)),
            };
            let provider =
                openharness_cli::live_provider(provider, model.as_deref(), base_url.as_deref())
                    .map_err(|err| match err {
                        CliError::MissingKey { .. } => CliError::Usage(format!(
                            "{err}; `openharness demo` runs the same example offline without a key"
                        )),
                        other => other,
                    })?;
            record(context, &example, provider, input).await
        }
    }
}

fn options(context: &Context) -> RunOptions {
    RunOptions::new().renderer(context.progress())
}

/// The planner-executor with the demo's own script: the run ends waiting for approval to
/// publish, which the demo gives itself ("yes") unless `no_answer`.
async fn demo_planner(
    context: &Context,
    goal: Option<String>,
    no_answer: bool,
) -> Result<(), CliError> {
    let name = planner_executor::WORKFLOW_NAME;
    // The demo's own script, exactly as the snapshots pin it, for both turns.
    let host = context
        .host()
        .with_provider(Arc::new(planner_executor::scripted_provider()));
    let goal = goal.unwrap_or_else(|| planner_executor::DEMO_GOAL.to_owned());
    let mut out = context.out();
    writeln!(
        out,
        "Running `{name}` offline (scripted model) — goal: {goal}\n"
    )?;
    let mut outcome = host.run(name, Some(goal), options(context)).await?;
    if let (false, Some(&request)) = (no_answer, outcome.open_requests.first()) {
        context.print_outcome(name, &outcome)?;
        writeln!(
            out,
            "\nAnswering request {request} with \"yes\" for you (`openharness demo --no-answer` leaves it to you):\n"
        )?;
        outcome = host
            .respond(&outcome.session, request, "yes".into(), options(context))
            .await?;
    }
    let session = &outcome.session;
    closing(
        context,
        name,
        &outcome,
        "Open it",
        &[
            format!("events {session}"),
            format!("tape {session} --at 0"),
            format!("tape {session} --at {}", outcome.len),
        ],
    )
}

/// The chat offline: one session, one turn per message (the demo's three, or `message`).
async fn demo_chat(context: &Context, message: Option<String>) -> Result<(), CliError> {
    let name = chat::WORKFLOW_NAME;
    let host = context.host();
    let mut out = context.out();
    writeln!(
        out,
        "Running `{name}` offline (scripted model): one session, a turn per message\n"
    )?;
    let messages = match message {
        Some(message) => vec![message],
        None => chat::DEMO_MESSAGES
            .iter()
            .map(|m| (*m).to_owned())
            .collect(),
    };
    let mut last: Option<TurnOutcome> = None;
    for message in messages {
        writeln!(out, "  you: {message}")?;
        let outcome = match &last {
            None => host.run(name, Some(message), options(context)).await?,
            Some(previous) => {
                host.send(&previous.session, message, options(context))
                    .await?
            }
        };
        last = Some(outcome);
    }
    let Some(outcome) = last else {
        return Ok(());
    };
    let session = &outcome.session;
    closing(
        context,
        name,
        &outcome,
        "Continue it",
        &[
            format!("send {session} \"Thanks!\""),
            format!("tape {session}"),
        ],
    )
}

/// `openharness run`: the example against a real model.
async fn record(
    context: &Context,
    name: &str,
    provider: openharness::BoxedProvider,
    input: String,
) -> Result<(), CliError> {
    let provider_name = provider.name().to_owned();
    let host = context.host().with_provider(provider);
    let mut out = context.out();
    writeln!(
        out,
        "Running `{name}` with {provider_name} — input: {input}\n"
    )?;
    let outcome = host.run(name, Some(input), options(context)).await?;
    writeln!(
        out,
        "\n{} input and {} output tokens, ${:.4}.",
        outcome.usage.input_tokens, outcome.usage.output_tokens, outcome.cost
    )?;
    let session = &outcome.session;
    closing(
        context,
        name,
        &outcome,
        "Replay it (no model calls)",
        &[
            format!("events {session}"),
            format!("tape {session} --at {}", outcome.len),
        ],
    )
}

/// The end of an example's run: its outcome, where it is recorded, and what to try next
/// (`openharness` commands, under `heading`).
fn closing(
    context: &Context,
    name: &str,
    outcome: &TurnOutcome,
    heading: &str,
    commands: &[String],
) -> Result<(), CliError> {
    context.print_outcome(name, outcome)?;
    let mut out = context.out();
    writeln!(
        out,
        "\nSession {} is recorded in {}.",
        outcome.session,
        context.store_path().display()
    )?;
    writeln!(out, "{heading}:")?;
    for command in commands {
        writeln!(out, "  openharness {command}")?;
    }
    Ok(())
}
