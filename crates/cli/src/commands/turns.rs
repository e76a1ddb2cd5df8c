//! `send`, `respond` and `resume`: turns on a recorded session, run through the host by the
//! workflow that recorded it, with its own provider unless `--provider` names a real model.
//!
//! Each shows the turn's progress live and ends by saying how the turn ended, the session's
//! new length and, when it waits for a person, the exact `respond` command. With `--store
//! http://ADDR` (feature `remote`), `send` and `respond` ask the server to run the turn and
//! `cancel` stops one running there (`served`).

use std::io::Write;

use openharness::{EventId, RunOptions, SessionId, StopReason};
use openharness_host::{Host, TurnOutcome};

use crate::Context;
use crate::error::CliError;
use crate::provider::ProviderArgs;
use crate::shared::parse_session;

#[cfg(feature = "remote")]
use super::served;

/// Arguments of `start`.
#[derive(Debug, clap::Args)]
pub(crate) struct StartArgs {
    /// The registered workflow.
    workflow: String,
    /// The first input (recorded as `user:input`); none starts the workflow without one.
    text: Option<String>,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Arguments of `send`.
#[derive(Debug, clap::Args)]
pub(crate) struct SendArgs {
    /// The session to continue.
    session: String,
    /// The new input (the next message, or a new goal).
    text: String,
    /// Who writes it, recorded as the input's `by` (traces show it).
    #[arg(long)]
    by: Option<String>,
    /// With `--store http://ADDR`: what the input gets while a turn runs on the session there —
    /// `reject` (refused, `409`), or recorded at once and then answered after it (`enqueue`),
    /// ending it (`interrupt`), abandoning it with its state restored (`rollback`) or given to
    /// its running agent at its next model call (`steer`). Absent: the server's default.
    #[arg(long, value_name = "POLICY", value_parser = crate::shared::parse_busy_policy)]
    #[cfg(feature = "remote")]
    on_busy: Option<openharness::BusyPolicy>,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Arguments of `cancel`.
#[cfg(feature = "remote")]
#[derive(Debug, clap::Args)]
pub(crate) struct CancelArgs {
    /// The session whose running turn should stop.
    session: String,
}

/// Arguments of `respond`.
#[derive(Debug, clap::Args)]
pub(crate) struct RespondArgs {
    /// The waiting session.
    session: String,
    /// The id of the open `input:requested` (as `send` and the turns print it).
    request: String,
    /// The answer.
    text: String,
    /// Who answers, recorded as the answer's `by` (traces show it as
    /// `openharness.input.answered_by`).
    #[arg(long)]
    by: Option<String>,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Arguments of `resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The session whose cut-off turn to finish.
    session: String,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Prints how a turn ended: the state's summary, the reason, the session's length and, when
/// it waits, the command that answers each open request. A turn that ended with errors is
/// then [`CliError::TurnFailed`], so the program exits with a failure.
pub(crate) fn print_outcome(
    context: &Context,
    workflow: &str,
    outcome: &TurnOutcome,
) -> Result<(), CliError> {
    let mut out = context.out();
    if let Some(summary) = context.summary(workflow, &outcome.state) {
        writeln!(out, "\n{summary}")?;
    } else {
        writeln!(out)?;
    }
    let new = outcome.len.saturating_sub(outcome.first_seq);
    let errors = match outcome.errors {
        0 => String::new(),
        n => format!(
            ", with {n} error(s) (see `{} events {}`)",
            context.program(),
            outcome.session
        ),
    };
    writeln!(
        out,
        "The turn ended ({}){errors}; the session has {} events ({new} new).",
        outcome.reason.as_str(),
        outcome.len
    )?;
    print_open_requests(context, &outcome.session, &outcome.open_requests)?;
    if outcome.errors > 0 {
        return Err(CliError::TurnFailed {
            errors: outcome.errors,
            session: outcome.session.clone(),
            program: context.program().to_owned(),
        });
    }
    Ok(())
}

fn print_open_requests(
    context: &Context,
    session: &SessionId,
    open: &[EventId],
) -> Result<(), CliError> {
    if open.is_empty() {
        return Ok(());
    }
    let mut out = context.out();
    writeln!(out, "The session is waiting for an answer. Answer with:")?;
    for request in open {
        writeln!(
            out,
            "  {} respond {session} {request} \"<your answer>\"",
            context.program()
        )?;
    }
    Ok(())
}

/// The host a turn runs on (the registered one, or one asking `--provider`'s model), the
/// session, the name of its workflow and how to name the model.
async fn turn_host(
    context: &Context,
    session: &str,
    provider: &ProviderArgs,
) -> Result<(Host, SessionId, String, String), CliError> {
    let session = parse_session(session)?;
    let workflow = context
        .host()
        .workflow_of(&session)
        .await
        .map_err(|e| context.explain(e))?
        .name()
        .to_owned();
    Ok(match provider.provider()? {
        None => (
            context.host().clone(),
            session,
            workflow,
            "its own provider".to_owned(),
        ),
        Some(model) => {
            let name = model.name().to_owned();
            (context.host().with_provider(model), session, workflow, name)
        }
    })
}

/// Runs `start`.
pub(crate) async fn start(args: StartArgs, context: &Context) -> Result<(), CliError> {
    let workflow = context.host().hosted(&args.workflow)?.name().to_owned();
    let (host, provider) = match args.provider.provider()? {
        None => (context.host().clone(), "its own provider".to_owned()),
        Some(model) => {
            let name = model.name().to_owned();
            (context.host().with_provider(model), name)
        }
    };
    let input = args
        .text
        .as_deref()
        .map_or_else(|| "(none)".to_owned(), |t| t.to_owned());
    writeln!(
        context.out(),
        "Starting `{workflow}` ({provider}) — input: {input}\n"
    )?;
    let outcome = host.run(&workflow, args.text, options(context)).await?;
    print_outcome(context, &workflow, &outcome)?;
    writeln!(
        context.out(),
        "\nSession {} is recorded in {}.\nOpen it:\n  {}",
        outcome.session,
        context.store_path().display(),
        crate::shared::tape_command(context.program(), &outcome.session, outcome.len)
    )?;
    Ok(())
}

/// Runs `send`.
pub(crate) async fn send(args: SendArgs, context: &Context) -> Result<(), CliError> {
    #[cfg(feature = "remote")]
    if let Some(base) = served::server(context) {
        let session = parse_session(&args.session)?;
        return served::send(
            context,
            &base,
            &session,
            &args.text,
            args.by.as_deref(),
            args.on_busy,
        )
        .await;
    }
    #[cfg(feature = "remote")]
    if args.on_busy.is_some() {
        return Err(CliError::Usage(
            "--on-busy is for a turn that runs in a server (--store http://ADDR): no turn of \
             this process runs while it sends"
                .into(),
        ));
    }
    let (host, session, workflow, provider) =
        turn_host(context, &args.session, &args.provider).await?;
    let report = host.unfinished(&session).await?;
    if report.needs_resume() {
        // The host finishes a cut-off turn before it takes new input: say so.
        let mut out = context.out();
        writeln!(
            out,
            "Session {session}'s last turn was cut off: it is finished first, then this input is answered."
        )?;
        print_cut_calls(&mut out, &report)?;
    }
    writeln!(
        context.out(),
        "Continuing session {session} (`{workflow}`, {provider}) — input: {}\n",
        args.text
    )?;
    let outcome = host
        .send(&session, args.text.clone(), by(options(context), &args.by))
        .await?;
    print_outcome(context, &workflow, &outcome)
}

/// Runs `respond`.
pub(crate) async fn respond(args: RespondArgs, context: &Context) -> Result<(), CliError> {
    #[cfg(feature = "remote")]
    if let Some(base) = served::server(context) {
        let session = parse_session(&args.session)?;
        return served::respond(
            context,
            &base,
            &session,
            &args.request,
            &args.text,
            args.by.as_deref(),
        )
        .await;
    }
    let request: EventId = args.request.parse().map_err(|_| {
        CliError::Usage(format!(
            "`{}` is not a request id (the id of an `input:requested` event, a UUID)",
            args.request
        ))
    })?;
    let (host, session, workflow, provider) =
        turn_host(context, &args.session, &args.provider).await?;
    if !host
        .unfinished(&session)
        .await?
        .open_requests
        .contains(&request)
    {
        // Not open: the runtime refuses it (`RequestNotOpen`, naming the open ones) and
        // records nothing; no header announces an answer that is not given.
        host.respond(
            &session,
            request,
            args.text.clone(),
            by(RunOptions::new(), &args.by),
        )
        .await?;
    }
    writeln!(
        context.out(),
        "Answering request {request} of session {session} with {:?} (`{workflow}`, {provider})\n",
        args.text
    )?;
    let outcome = host
        .respond(
            &session,
            request,
            args.text.clone(),
            by(options(context), &args.by),
        )
        .await?;
    print_outcome(context, &workflow, &outcome)
}

/// Runs `cancel`: only a server's running turn can be asked to stop from another process
/// (a turn this CLI runs stops with Ctrl-C).
#[cfg(feature = "remote")]
pub(crate) async fn cancel(args: CancelArgs, context: &Context) -> Result<(), CliError> {
    let session = parse_session(&args.session)?;
    match served::server(context) {
        Some(base) => served::cancel(context, &base, &session).await,
        None => Err(CliError::Usage(format!(
            "`cancel` stops a turn that runs in a server: `{} --store http://ADDR cancel {session}` \
             (a turn this CLI runs stops with Ctrl-C)",
            context.program()
        ))),
    }
}

/// Runs `resume`.
pub(crate) async fn resume(args: ResumeArgs, context: &Context) -> Result<(), CliError> {
    let (host, session, workflow, provider) =
        turn_host(context, &args.session, &args.provider).await?;
    let report = host.unfinished(&session).await?;
    let mut out = context.out();
    if !report.needs_resume() {
        nothing_unfinished(context, &session, report.status.as_str(), report.len)?;
        return print_open_requests(context, &session, &report.open_requests);
    }
    writeln!(
        out,
        "Session {session} (`{workflow}`, {} events) has an unfinished turn; resuming it with {provider}:",
        report.len
    )?;
    print_cut_calls(&mut out, &report)?;
    for name in &report.unrecorded {
        writeln!(
            out,
            "  `{name}` was never recorded: it is derived again and recorded"
        )?;
    }
    if report.open_calls.is_empty() && report.unrecorded.is_empty() {
        writeln!(
            out,
            "  nothing was cut off mid-way: the turn runs on to its end"
        )?;
    }
    writeln!(out)?;
    let outcome = host.resume(&session, options(context)).await?;
    if outcome.reason == StopReason::NothingUnfinished {
        // Another process finished it between the report and the resume.
        return nothing_unfinished(context, &session, "idle", outcome.len);
    }
    print_outcome(context, &workflow, &outcome)
}

fn nothing_unfinished(
    context: &Context,
    session: &SessionId,
    status: &str,
    len: u64,
) -> Result<(), CliError> {
    writeln!(
        context.out(),
        "Session {session}: nothing unfinished (its last turn ended; status {status}, {len} events)."
    )?;
    Ok(())
}

/// A turn's options: refuse rather than wait when this process is already running one on the
/// session (never the case for one CLI command, but the rule stays visible), with live
/// progress.
/// One line per agent call a crash cut off, saying what the resume does with it.
fn print_cut_calls(
    out: &mut impl std::io::Write,
    report: &openharness::adapter::Unfinished,
) -> Result<(), CliError> {
    for call in &report.open_calls {
        writeln!(
            out,
            "  agent `{}` was cut off: it is closed as interrupted and runs again",
            call.agent
        )?;
    }
    Ok(())
}

/// `options` recording who gives the input (`--by`), when the command was told.
fn by(options: RunOptions, who: &Option<String>) -> RunOptions {
    match who {
        Some(who) => options.by(who.clone()),
        None => options,
    }
}

fn options(context: &Context) -> RunOptions {
    RunOptions::new()
        .refuse_if_busy()
        .renderer(context.progress())
}
