//! `fork <id> (--at N | --after NAME [--nth N]) [--answer TEXT] [--input TEXT]`: start a new session from a
//! point of a recorded one and run it on, through the host, with the workflow's own provider
//! unless `--provider` names a real model; with `--input`, then continue it with that input.
//!
//! The child session's first event is `session:forked`; its state there is the parent's at
//! the fork point, and the fork finishes what the parent had under way there as a resume
//! would (so forking after the second `task:started` runs the second task again, and forking
//! among an agent call's deltas closes that call as interrupted and runs it again from its
//! start; a call completed before the fork point keeps its output).

use std::io::Write;

use openharness::{EventId, RunOptions, SessionId};
use openharness_host::{ForkAnswer, ForkPoint, ForkStart, Host, TurnStart};
use serde::Serialize;

use crate::Context;
use crate::error::CliError;
use crate::provider::ProviderArgs;
use crate::shared::parse_session;

/// Arguments of `fork`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("point").required(true).args(["at", "after"]))]
pub(crate) struct ForkArgs {
    /// The session to fork.
    session: String,
    /// Fork at this position (0 to the session's length).
    #[arg(long)]
    at: Option<u64>,
    /// Fork right after an event with this name (the first, or the `--nth`).
    #[arg(long)]
    after: Option<String>,
    /// Which occurrence of `--after`, from 1.
    #[arg(long, default_value_t = 1, requires = "after")]
    nth: usize,
    /// Then continue the fork with this input, as `send` would: another question from the
    /// same point (fork right before a `user:input` to ask something else instead).
    #[arg(long)]
    input: Option<String>,
    /// Then answer the request open at the fork point with this, instead of what the
    /// parent was answered (fork where the session waits for a person). Checked first: a
    /// fork point where no request is open is refused and nothing is recorded.
    #[arg(long)]
    answer: Option<String>,
    /// The request `--answer` answers, when several are open there (an `input:requested`
    /// event's id).
    #[arg(long, requires = "answer", value_name = "ID")]
    request: Option<String>,
    /// Print `{"parent","position","session","len","reason"}` as JSON instead of progress.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// What `fork --json` prints.
#[derive(Serialize)]
struct Forked<'a> {
    parent: &'a SessionId,
    position: u64,
    session: &'a SessionId,
    len: u64,
    reason: &'static str,
}

/// The position right after the `n`th (from 1) event named `name`.
async fn position_after(
    context: &Context,
    session: &SessionId,
    name: &str,
    n: usize,
) -> Result<u64, CliError> {
    let host = context.host();
    let mut seen = 0;
    let mut after = None;
    loop {
        let page = host
            .events(session, after, 1000)
            .await
            .map_err(|e| context.explain(e))?;
        for recorded in &page.events {
            if recorded.event.name == name {
                seen += 1;
                if seen == n.max(1) {
                    return Ok(recorded.seq + 1);
                }
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => {
                return Err(CliError::Usage(format!(
                    "session {session} has {seen} `{name}` event(s), so there is no occurrence {n} to fork after"
                )));
            }
        }
    }
}

/// Runs `fork`.
pub(crate) async fn run(args: ForkArgs, context: &Context) -> Result<(), CliError> {
    let parent = parse_session(&args.session)?;
    let workflow = context
        .host()
        .workflow_of(&parent)
        .await
        .map_err(|e| context.explain(e))?
        .name()
        .to_owned();
    let len = context
        .host()
        .session(&parent)
        .await
        .map_err(|e| context.explain(e))?
        .len;
    let position = match (args.at, &args.after) {
        (Some(position), _) => position.min(len),
        (None, Some(name)) => position_after(context, &parent, name, args.nth).await?,
        (None, None) => return Err(CliError::Usage("pass `--at N` or `--after NAME`".into())),
    };
    let (host, provider): (Host, String) = match args.provider.provider()? {
        None => (context.host().clone(), "its own provider".to_owned()),
        Some(model) => {
            let name = model.name().to_owned();
            (context.host().with_provider(model), name)
        }
    };
    let options = if args.json {
        RunOptions::new()
    } else {
        writeln!(
            context.out(),
            "Forking {parent} at position {position} (`{workflow}`, {provider})\n"
        )?;
        RunOptions::new().renderer(context.progress())
    };
    let request = args
        .request
        .as_deref()
        .map(|id| {
            id.parse::<EventId>().map_err(|_| {
                CliError::Usage(format!(
                    "`{id}` is not a request id (the id of an `input:requested` event, a UUID)"
                ))
            })
        })
        .transpose()?;
    if !args.json {
        if let Some(answer) = &args.answer {
            writeln!(context.out(), "Then answering {answer:?}")?;
        }
        if let Some(input) = &args.input {
            writeln!(context.out(), "Then: {input:?}")?;
        }
    }
    let child = SessionId::new();
    let start = TurnStart::Fork(Box::new(ForkStart {
        parent: parent.clone(),
        at: ForkPoint::Position { position },
        state_edit: None,
        input: args.input,
        answer: args.answer.map(|text| ForkAnswer { request, text }),
        provider: None,
    }));
    let outcome = host
        .start(&child, start, options)
        .await
        .map_err(|e| context.explain(e))?
        .done
        .wait()
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = context.out();
    if args.json {
        let forked = Forked {
            parent: &parent,
            position,
            session: &outcome.session,
            len: outcome.len,
            reason: outcome.reason.as_str(),
        };
        let mut text = serde_json::to_string_pretty(&forked)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        crate::commands::turns::print_outcome(context, &workflow, &outcome)?;
        writeln!(
            out,
            "\nSession {} (forked from {parent}).\nOpen it:\n  {}",
            outcome.session,
            crate::shared::tape_command(context.program(), &outcome.session, outcome.len)
        )?;
    }
    Ok(())
}
