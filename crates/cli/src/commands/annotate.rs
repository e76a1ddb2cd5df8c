//! `annotate`: a person's word on a session, one of its turns or an experiment's run — a thumb,
//! labels, a note — recorded on the session's feedback log with who and when, as
//! `POST /sessions/{id}/annotations` records it; `feedback` prints what was said of a session.

use super::*;
use openharness_host::feedback::{AnnotatedRun, AnnotationAdded, Thumbs};

/// `annotate`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct AnnotateArgs {
    /// The session.
    session: String,
    /// Who annotates (default: $OPENHARNESS_USER, else $USER).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
    /// A thumb: up or down.
    #[arg(long, value_name = "up|down", value_parser = parse_thumbs)]
    thumbs: Option<Thumbs>,
    /// A label (repeatable).
    #[arg(long = "label", value_name = "LABEL")]
    labels: Vec<String>,
    /// A note.
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// The turn annotated, by the position where it ended (the whole session when absent).
    #[arg(long, value_name = "POSITION")]
    turn: Option<u64>,
    /// The experiment's run the session is: EXPERIMENT/CASE/VARIANT/REPEAT.
    #[arg(long, value_name = "EXPERIMENT/CASE/VARIANT/REPEAT", value_parser = parse_run)]
    run: Option<AnnotatedRun>,
    /// Print the annotation as recorded, as JSON.
    #[arg(long)]
    json: bool,
}

fn parse_thumbs(text: &str) -> Result<Thumbs, String> {
    match text {
        "up" => Ok(Thumbs::Up),
        "down" => Ok(Thumbs::Down),
        other => Err(format!("`{other}` is not a thumb: up or down")),
    }
}

fn parse_run(text: &str) -> Result<AnnotatedRun, String> {
    let parts: Vec<&str> = text.rsplitn(4, '/').collect();
    let [repeat, variant, case, experiment] = parts.as_slice() else {
        return Err(format!("`{text}` is not EXPERIMENT/CASE/VARIANT/REPEAT"));
    };
    let repeat = repeat
        .parse()
        .map_err(|_| format!("`{repeat}` is not a repeat number (from 0)"))?;
    Ok(AnnotatedRun {
        experiment: (*experiment).to_owned(),
        case: (*case).to_owned(),
        variant: (*variant).to_owned(),
        repeat,
    })
}

pub(crate) async fn annotate(args: AnnotateArgs, context: &Context) -> Result<(), CliError> {
    let session = parse_session(&args.session)?;
    let by = args
        .by
        .or_else(|| std::env::var("OPENHARNESS_USER").ok())
        .or_else(|| std::env::var("USER").ok())
        .ok_or_else(|| CliError::Usage("say who annotates: --by NAME".to_owned()))?;
    let annotation = AnnotationAdded {
        by,
        thumbs: args.thumbs,
        labels: args.labels,
        note: args.note,
        turn: args.turn,
        run: args.run,
    };
    let recorded = context
        .host()
        .annotate(&session, annotation)
        .await
        .map_err(|err| match err {
            openharness_host::HostError::BadFeedback(why) => CliError::Usage(why),
            other => context.explain(other),
        })?;
    let mut out = context.out();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&recorded)?)?;
    } else {
        writeln!(
            out,
            "annotated {session} as {} at {}",
            recorded.event.by,
            recorded.at.format("%Y-%m-%d %H:%M:%S UTC")
        )?;
    }
    Ok(())
}

/// `feedback SESSION`: its annotations and online scores, oldest first.
pub(crate) async fn feedback(context: &Context, session: &str, json: bool) -> Result<(), CliError> {
    let session = parse_session(session)?;
    let feedback = context
        .host()
        .feedback(&session)
        .await
        .map_err(|err| context.explain(err))?;
    let mut out = context.out();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&feedback)?)?;
        return Ok(());
    }
    if feedback.annotations.is_empty() && feedback.scores.is_empty() {
        writeln!(out, "Nobody annotated or scored {session} yet.")?;
    }
    for said in &feedback.annotations {
        let a = &said.event;
        let thumbs = match a.thumbs {
            Some(Thumbs::Up) => " +1",
            Some(Thumbs::Down) => " -1",
            None => "",
        };
        let turn = a
            .turn
            .map(|t| format!(" (turn ending at {t})"))
            .unwrap_or_default();
        let labels: String = a.labels.iter().map(|l| format!(" #{l}")).collect();
        writeln!(
            out,
            "{}  {}{thumbs}{labels}{turn}{}",
            said.at.format("%Y-%m-%d %H:%M:%S"),
            a.by,
            a.note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        )?;
    }
    for scored in &feedback.scores {
        let s = &scored.event;
        writeln!(
            out,
            "{}  {} = {} ({}) turn ending at {}{}",
            scored.at.format("%Y-%m-%d %H:%M:%S"),
            s.scorer,
            s.value
                .map_or_else(|| "-".to_owned(), |v| format!("{v:.3}")),
            if s.passed { "passed" } else { "failed" },
            s.turn,
            s.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}
