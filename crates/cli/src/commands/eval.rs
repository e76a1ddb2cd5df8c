//! `openharness eval …`: experiments from a file — `run` (cases × variants × repeats,
//! resumable), `list`, `show` (every run and its scores), `compare` (a variant against the
//! baseline: a table, `--markdown` for a pull request, `--json`; a CI gate that exits 1 on a
//! regression beyond the file's `max_regression` or `--max-regression`, unless
//! `--report-only`) and `rescore` (new scorers over recorded runs: no model called but by a
//! judge without a recorded verdict; it says how many model calls were made).
//!
//! A judge (`kind = "judge"`) runs a registered workflow on a prompt filled with the run's
//! content, optionally on its own `provider = { kind, model, base_url }` (built as a
//! variant's). Its verdict is recorded (`eval:judged`, keyed by the judge's definition, the
//! run and the judged content) and reused by every later `eval run` or `eval rescore`, so a
//! second re-score makes no model call; a changed rubric, model or content asks again.
//!
//! A variant that names no provider runs on the file's top-level `provider`, else on the one
//! its case's recording asked (`agent:started.provider` and `model`): the workflow's own
//! when it asks that one, else rebuilt here (`anthropic`, `openai` and `claude-cli`, keys
//! from `ANTHROPIC_API_KEY`/`OPENAI_API_KEY`, another server from `ANTHROPIC_BASE_URL`/
//! `OPENAI_BASE_URL`); when it cannot be, `eval run` says what to configure and runs nothing,
//! rather than run the variant on the workflow's scripted model.
//!
//! `eval dataset` (`add`, `list`, `show`, `diff`, `remove`) keeps datasets cut from
//! production sessions, each a log of its own; an experiment file takes one's cases with
//! `[[datasets]]` (module `dataset`).
//!
//! An experiment file is TOML (or JSON, by its extension), read as
//! [`openharness_eval::ExperimentFile`] (the format `POST /experiments` takes too):
//!
//! ```toml
//! name = "executor-wording"
//! workflow = "planner-executor"     # what cases from inputs run
//! dataset = "cases.jsonl"           # relative to this file; cases may also be inline
//! repeats = 5
//! concurrency = 4
//! max_regression = 0.05             # `eval compare` exits 1 beyond it (`--report-only`: not)
//!
//! [[case]]
//! id = "from-a-run"
//! session = "0193…"
//! at = { event = "task:started", n = 1 }
//! answers = ["yes"]
//!
//! [[datasets]]                      # the cases of `eval dataset add refunds …`, at version 3
//! name = "refunds"
//! version = 3                       # the latest when absent
//!
//! [[recordings]]                    # every idle recorded session of the workflow, the newest 20
//! workflow = "planner-executor"
//! status = "idle"
//! limit = 20
//! at = { phase = "coding", occurrence = "first" }
//!
//! [[variant]]
//! name = "baseline"                 # no provider: the one the case's recording asked
//!
//! [[variant]]
//! name = "gpt"
//! provider = { kind = "openai", model = "gpt-4.1-mini" }
//!
//! [[variant]]
//! name = "v2"
//! workflow = "planner-executor-v2"
//! state = { temperature = 0.2 }     # merge patch on the state at the fork point
//!
//! [[scorer]]
//! name = "published"
//! kind = "equals"
//! field = { state = "/release" }
//! expect = "published"
//!
//! [[scorer]]
//! name = "helpful"
//! kind = "judge"
//! workflow = "judge"                # a workflow the program registers
//! prompt = "Rate 0 to 1 how well {state} answers {input}"
//! score = "/score"                  # a JSON pointer into the judge's final state
//! reason = "/reason"
//! pass_at = 0.7
//! provider = { kind = "openai", model = "gpt-4.1-mini" }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Subcommand;
use openharness::BoxedProvider;
use openharness_eval::{
    Comparison, EvalError, Experiment, ExperimentFile, ExperimentRecord, Progress, ProviderSpec,
    RecordedModel, ScorerSpec,
};
use serde::Deserialize;

use crate::provider::{ProviderKind, live_provider};
use crate::{CliError, Context};

mod dataset;

pub(crate) use dataset::DatasetCommand;

/// The eval subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum EvalCommand {
    /// Run an experiment file's cases × variants × repeats; runs recorded before are kept
    /// (run it again to resume a killed experiment: runs it left mid-turn are closed as
    /// interrupted and run again, runs whose sessions finished are scored, not run again).
    Run {
        /// The experiment file (TOML, or JSON by its extension).
        file: PathBuf,
        /// Runs at once (default: the file's `concurrency`, else 4).
        #[arg(long)]
        concurrency: Option<usize>,
        /// Run again the runs recorded as failed.
        #[arg(long)]
        retry_failed: bool,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// List the experiments in the store.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show an experiment's runs and their scores.
    Show {
        /// The experiment's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compare a variant with the baseline, scorer by scorer and case by case; with a case,
    /// also where its first runs part.
    Compare(CompareArgs),
    /// Score an experiment's recorded runs again with the scorers of a file (its
    /// `[[scorer]]` tables): no model is called, but by a judge without a recorded verdict on
    /// a run (a new judge, a changed rubric, model or provider, or changed content); the
    /// output says how many model calls were made.
    Rescore {
        /// The experiment's name.
        name: String,
        /// A file with `[[scorer]]` tables (an experiment file will do).
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Datasets cut from production: recorded sessions that match a query become cases,
    /// each forked where a point is in it when added; a dataset is a versioned log.
    #[command(subcommand)]
    Dataset(DatasetCommand),
}

/// `eval compare`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// The experiment's name.
    name: String,
    /// The variant (default: every variant but the baseline).
    #[arg(long)]
    variant: Option<String>,
    /// The side compared against (default: the experiment's baseline).
    #[arg(long)]
    baseline: Option<String>,
    /// Exit 1 when a scorer's mean (or pass rate) is worse than the baseline's by more than
    /// this (in the scorer's units: 0.05 is five points of pass rate); overrides the
    /// experiment file's `max_regression`, which gates the same way.
    #[arg(long, value_name = "DELTA")]
    max_regression: Option<f64>,
    /// Report regressions without failing: exit 0 whatever the gate says.
    #[arg(long)]
    report_only: bool,
    /// Also show, for this case, the first event where the baseline's and the variant's
    /// first runs differ, and how their states differ there.
    #[arg(long)]
    case: Option<String>,
    /// Leave out people's thumbs on the runs (by default each annotated run is also scored
    /// `human:thumbs`: the share of people whose latest thumb is up).
    #[arg(long)]
    no_annotations: bool,
    /// Print only the Markdown report.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Only the scorers of a file (for `rescore`).
#[derive(Debug, Deserialize)]
struct ScorersFile {
    #[serde(default, rename = "scorer", alias = "scorers")]
    scorers: Vec<ScorerSpec>,
}

pub(crate) async fn run(command: EvalCommand, context: &Context) -> Result<(), CliError> {
    match command {
        EvalCommand::Run {
            file,
            concurrency,
            retry_failed,
            json,
        } => run_file(context, &file, concurrency, retry_failed, json).await,
        EvalCommand::List { json } => list(context, json).await,
        EvalCommand::Show { name, json } => show(context, &name, json).await,
        EvalCommand::Compare(ask) => {
            let record = ExperimentRecord::load(context.host().store().as_ref(), &ask.name).await?;
            let (record, annotated) = if ask.no_annotations {
                (record, 0)
            } else {
                record.with_annotations(context.host()).await?
            };
            if annotated > 0 && !ask.json && !ask.markdown {
                writeln!(
                    context.out(),
                    "{annotated} runs annotated by people: their thumbs are scored `{}`",
                    openharness_eval::THUMBS_SCORER
                )?;
            }
            compare(context, &record, &ask).await
        }
        EvalCommand::Rescore { name, file, json } => rescore(context, &name, &file, json).await,
        EvalCommand::Dataset(command) => dataset::run(command, context).await,
    }
}

fn read<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|err| CliError::Usage(format!("cannot read {}: {err}", file.display())))?;
    let parsed = if file.extension().is_some_and(|ext| ext == "json") {
        serde_json::from_str(&text).map_err(|err| err.to_string())
    } else {
        toml::from_str(&text).map_err(|err| err.to_string())
    };
    parsed.map_err(|err| CliError::Usage(format!("{}: {err}", file.display())))
}

/// The scorers of a file, a judge's `provider` built as a variant's is.
fn scorers(specs: &[ScorerSpec]) -> Result<Vec<Arc<dyn openharness_eval::Scorer>>, CliError> {
    let provider = |spec: &ProviderSpec| build_provider(spec).map_err(|err| err.to_string());
    specs
        .iter()
        .map(|spec| spec.build_with(&provider).map_err(CliError::Usage))
        .collect()
}

fn provider_kind(kind: &str) -> Result<ProviderKind, CliError> {
    <ProviderKind as clap::ValueEnum>::from_str(kind, true).map_err(|_| {
        CliError::Usage(format!(
            "provider kind `{kind}` is not one of anthropic, openai, claude-cli"
        ))
    })
}

/// A provider table of the file, built, with its label (`kind[:model]`).
pub(crate) fn build_provider(provider: &ProviderSpec) -> Result<(String, BoxedProvider), CliError> {
    let kind = provider_kind(&provider.kind)?;
    let label = provider.label();
    // A table without `base_url` asks the server the environment names, as `--provider` and
    // a rebuilt recording's provider do.
    let from_env = base_url_from_env(kind);
    let base_url = provider.base_url.as_deref().or(from_env.as_deref());
    let live = live_provider(kind, provider.model.as_deref(), base_url)?;
    Ok((label, live))
}

/// The variable naming another server for `kind` (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`).
fn base_url_var(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OPENAI_BASE_URL",
        ProviderKind::Anthropic | ProviderKind::ClaudeCli => "ANTHROPIC_BASE_URL",
    }
}

/// The server the environment names for `kind`, if any.
fn base_url_from_env(kind: ProviderKind) -> Option<String> {
    std::env::var(base_url_var(kind))
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// The provider a case's recording asked, rebuilt for a variant that names none: its kind
/// and model as recorded, its key from the environment and its server from
/// `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` (the address is not recorded). `Err` says what
/// to configure.
fn rebuild_recorded(recorded: &RecordedModel) -> Result<BoxedProvider, String> {
    let otherwise = "or give the experiment file a top-level `provider = { kind = …, model = …, base_url = … }`, or name one in the variant";
    let Ok(kind) = <ProviderKind as clap::ValueEnum>::from_str(&recorded.provider, true) else {
        return Err(format!(
            "`{}` is not a provider this command builds (anthropic, openai, claude-cli); {otherwise}",
            recorded.provider
        ));
    };
    let base_url_var = base_url_var(kind);
    let base_url = base_url_from_env(kind);
    live_provider(kind, recorded.model.as_deref(), base_url.as_deref()).map_err(|err| match err {
        CliError::MissingKey { var, .. } => format!(
            "set {var} (and {base_url_var} if the recording asked another server than the provider's own), {otherwise}"
        ),
        other => format!("{other}; {otherwise}"),
    })
}

/// An experiment file ([`ExperimentFile`], TOML or JSON by its extension).
fn read_experiment(file: &Path) -> Result<ExperimentFile, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|err| CliError::Usage(format!("cannot read {}: {err}", file.display())))?;
    let parsed = if file.extension().is_some_and(|ext| ext == "json") {
        ExperimentFile::from_json(&text)
    } else {
        ExperimentFile::from_toml(&text)
    };
    parsed.map_err(|err| CliError::Usage(format!("{}: {err}", file.display())))
}

/// The experiment a file describes, over the CLI's host: its provider tables built as live
/// providers, a recording's provider rebuilt for variants that name none.
async fn experiment(
    context: &Context,
    file: &Path,
    spec: ExperimentFile,
) -> Result<Experiment, CliError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let experiment = spec
        .experiment(context.host(), Some(dir), &build_provider)
        .await?;
    Ok(experiment.rebuild_provider(rebuild_recorded))
}

/// Prints a progress line at most every second, and the last one.
fn progress_printer(context: &Context) -> impl Fn(&Progress) + Send + Sync + 'static {
    let out = context.out();
    let last = std::sync::Mutex::new(None::<Instant>);
    move |progress: &Progress| {
        let mut last = last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let due = last.is_none_or(|at| at.elapsed() >= Duration::from_secs(1));
        if due || progress.done == progress.total {
            *last = Some(Instant::now());
            let mut out = out.clone();
            let filled = (progress.done * 20)
                .checked_div(progress.total)
                .unwrap_or(20);
            let bar = format!("{}{}", "#".repeat(filled), "·".repeat(20 - filled));
            let _ = writeln!(
                out,
                "eval [{bar}] {}/{} runs{}{}",
                progress.done,
                progress.total,
                if progress.failed > 0 {
                    format!(", {} failed", progress.failed)
                } else {
                    String::new()
                },
                if progress.skipped > 0 {
                    format!(" ({} recorded before, kept)", progress.skipped)
                } else {
                    String::new()
                },
            );
        }
    }
}

async fn run_file(
    context: &Context,
    file: &Path,
    concurrency: Option<usize>,
    retry_failed: bool,
    json: bool,
) -> Result<(), CliError> {
    let spec = read_experiment(file)?;
    let name = spec.name.clone();
    let threshold = spec.max_regression.unwrap_or(f64::INFINITY);
    let mut experiment = experiment(context, file, spec)
        .await?
        .retry_failed(retry_failed);
    if let Some(runs) = concurrency {
        experiment = experiment.concurrency(runs);
    }
    if !json {
        experiment = experiment.on_progress(progress_printer(context));
    }
    let began = Instant::now();
    let ran = experiment.run().await?;
    let comparisons = comparisons(&ran.record, None, None, threshold)?;
    let mut out = context.out();
    if json {
        let summary = serde_json::json!({
            "experiment": name,
            "ran": ran.ran,
            "skipped": ran.skipped,
            "failed": ran.failed,
            "recovered": ran.recovered,
            "interrupted": ran.interrupted,
            "judges": ran.judged,
            "comparisons": comparisons,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?;
    } else {
        let mut resumed = String::new();
        if ran.recovered > 0 {
            resumed.push_str(&format!(
                ", {} a killed run had finished, scored now",
                ran.recovered
            ));
        }
        if ran.interrupted > 0 {
            resumed.push_str(&format!(
                ", {} a killed run had cut off, closed as interrupted and run again",
                ran.interrupted
            ));
        }
        writeln!(
            out,
            "\nexperiment `{name}`: {} runs recorded in {:.1} s ({} kept from before, {} failed{resumed})\n",
            ran.ran,
            began.elapsed().as_secs_f64(),
            ran.skipped,
            ran.failed
        )?;
        if ran.judged.verdicts > 0 || ran.judged.model_calls > 0 {
            writeln!(out, "judges: {}\n", ran.judged)?;
        }
        for comparison in &comparisons {
            writeln!(out, "{}", comparison.markdown())?;
        }
        writeln!(
            out,
            "`{p} eval show {name}` lists every run; `{p} eval compare {name} --markdown` writes the report.",
            p = context.program()
        )?;
    }
    if ran.failed > 0 {
        return Err(CliError::Usage(format!(
            "{} run(s) failed; `{p} eval show {name}` says why, and `{p} eval run {} --retry-failed` runs them again",
            ran.failed,
            file.display(),
            p = context.program()
        )));
    }
    Ok(())
}

/// Every variant but the baseline against it (or the one asked for).
fn comparisons(
    record: &ExperimentRecord,
    variant: Option<&str>,
    baseline: Option<&str>,
    threshold: f64,
) -> Result<Vec<Comparison>, CliError> {
    let against = baseline.unwrap_or(&record.definition.baseline);
    let names: Vec<&str> = match variant {
        Some(variant) => vec![variant],
        None => record
            .definition
            .variants
            .iter()
            .map(|v| v.name.as_str())
            .filter(|name| *name != against)
            .collect(),
    };
    Ok(names
        .into_iter()
        .map(|name| Comparison::of(record, name, Some(against), threshold))
        .collect::<Result<_, EvalError>>()?)
}

async fn list(context: &Context, json: bool) -> Result<(), CliError> {
    let found = openharness_eval::list(context.host().store().as_ref()).await?;
    let mut out = context.out();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&found)?)?;
        return Ok(());
    }
    if found.is_empty() {
        writeln!(
            out,
            "no experiments; `{} eval run FILE` starts one",
            context.program()
        )?;
    }
    for experiment in found {
        writeln!(
            out,
            "{:<30} {:>6} events  started {}  last {}",
            experiment.name,
            experiment.events,
            experiment.created.format("%Y-%m-%d %H:%M:%S"),
            experiment.last_event.format("%Y-%m-%d %H:%M:%S")
        )?;
    }
    Ok(())
}

async fn show(context: &Context, name: &str, json: bool) -> Result<(), CliError> {
    let record = ExperimentRecord::load(context.host().store().as_ref(), name).await?;
    let mut out = context.out();
    if json {
        let runs: Vec<_> = record.runs.values().collect();
        let value = serde_json::json!({ "definition": record.definition, "runs": runs });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    let definition = &record.definition;
    writeln!(
        out,
        "experiment `{}`: {} cases × {} variants × {} repeats, baseline `{}`",
        record.name,
        definition.cases.len(),
        definition.variants.len(),
        definition.repeats,
        definition.baseline
    )?;
    for (key, entry) in &record.runs {
        let scores: Vec<String> = entry
            .scores
            .values()
            .map(|s| {
                format!(
                    "{}={}{}",
                    s.scorer,
                    s.value.map_or_else(|| "–".to_owned(), |v| v.to_string()),
                    if s.passed { "" } else { "✗" }
                )
            })
            .collect();
        let session = entry.run.session.as_ref().map_or("-", |s| s.as_str());
        let state = match (&entry.run.error, &entry.run.reason) {
            (Some(error), _) if entry.cancelled() => error.clone(),
            (Some(error), _) => format!("FAILED: {error}"),
            (None, Some(reason)) => reason.clone(),
            (None, None) => String::new(),
        };
        writeln!(
            out,
            "{:<16} {:<12} #{:<2} {:<38} {:>8.1} ms  {}  {}",
            key.case,
            key.variant,
            key.repeat,
            session,
            entry.run.latency_ms,
            state,
            scores.join(" ")
        )?;
    }
    Ok(())
}

async fn compare(
    context: &Context,
    record: &ExperimentRecord,
    ask: &CompareArgs,
) -> Result<(), CliError> {
    // The gate: the command line's, else the one the experiment's definition recorded.
    let gate = ask.max_regression.or(record.definition.max_regression);
    let threshold = gate.unwrap_or(0.0);
    let comparisons = comparisons(
        record,
        ask.variant.as_deref(),
        ask.baseline.as_deref(),
        threshold,
    )?;
    let mut differences = Vec::new();
    if let Some(case) = &ask.case {
        for comparison in &comparisons {
            let run_of = |variant: &str| {
                record
                    .runs
                    .iter()
                    .find(|(key, _)| key.case == *case && key.variant == variant && key.repeat == 0)
                    .and_then(|(_, entry)| entry.run.session.clone())
            };
            let (Some(a), Some(b)) = (run_of(&comparison.baseline), run_of(&comparison.variant))
            else {
                return Err(CliError::Usage(format!(
                    "case `{case}` has no recorded first run for both `{}` and `{}`",
                    comparison.baseline, comparison.variant
                )));
            };
            let difference = context.host().compare(&a, &b).await?;
            differences.push((comparison.variant.clone(), a, b, difference));
        }
    }
    let mut out = context.out();
    if ask.json {
        let value = serde_json::json!({
            "comparisons": comparisons,
            "differences": differences.iter().map(|(variant, a, b, d)| serde_json::json!({
                "variant": variant, "baseline": a, "run": b, "difference": d,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        for comparison in &comparisons {
            writeln!(out, "{}", comparison.markdown())?;
            if ask.markdown {
                continue;
            }
            for scorer in &comparison.scorers {
                let rows: Vec<String> = scorer
                    .cases
                    .iter()
                    .filter(|c| c.verdict != "tie")
                    .map(|c| format!("{} {}", c.case, c.verdict))
                    .collect();
                if !rows.is_empty() {
                    writeln!(out, "  {}: {}", scorer.scorer, rows.join(", "))?;
                }
            }
        }
        for (variant, a, b, compared) in &differences {
            writeln!(out, "\n`{variant}` against the baseline ({a} / {b}):")?;
            crate::commands::diff::print(&mut out, compared, "baseline", variant)?;
        }
    }
    let regressed = comparisons.iter().any(|c| !c.regressions().is_empty());
    match gate {
        Some(_) if !ask.report_only => {
            for comparison in &comparisons {
                comparison.gate().map_err(CliError::Regressed)?;
            }
        }
        Some(delta) if regressed && !ask.json && !ask.markdown => writeln!(
            out,
            "\n--report-only: the gate (max_regression {delta}) would have failed; exiting 0"
        )?,
        None if regressed && !ask.json && !ask.markdown => writeln!(
            out,
            "\nnot gated: \"regressed\" is any loss, as neither the experiment file's max_regression nor --max-regression sets a gate"
        )?,
        _ => {}
    }
    Ok(())
}

async fn rescore(context: &Context, name: &str, file: &Path, json: bool) -> Result<(), CliError> {
    let spec: ScorersFile = read(file)?;
    if spec.scorers.is_empty() {
        return Err(CliError::Usage(format!(
            "{} has no [[scorer]] table",
            file.display()
        )));
    }
    let scorers = scorers(&spec.scorers)?;
    let began = Instant::now();
    let done = openharness_eval::rescore(context.host(), name, &scorers, 8).await?;
    let mut out = context.out();
    if json {
        let value = serde_json::json!({
            "experiment": name,
            "runs": done.runs,
            "scorers": scorers.len(),
            "scores": done.scores,
            "judges": done.judged,
            "modelCalls": done.judged.model_calls,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "rescored {} runs of `{name}` with {} scorer(s) in {:.2} s ({} scores recorded)",
        done.runs,
        scorers.len(),
        began.elapsed().as_secs_f64(),
        done.scores
    )?;
    if done.judged.verdicts > 0 || done.judged.model_calls > 0 {
        writeln!(out, "judges: {}", done.judged)?;
    } else {
        writeln!(out, "no model called")?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The README's experiment file reads as one, and its scorers build.
    #[test]
    fn the_readme_experiment_file_is_valid() {
        let readme = include_str!("../../../../README.md");
        let evals = &readme[readme.find("## Evals").unwrap()..];
        let open = evals.find("```toml\n").unwrap() + "```toml\n".len();
        let close = evals[open..].find("```").unwrap();
        let file: ExperimentFile = toml::from_str(&evals[open..open + close]).unwrap();
        assert_eq!(file.name, "wording");
        assert_eq!(file.repeats, Some(5));
        assert_eq!(file.cases[0].answers, ["yes"]);
        assert_eq!(
            file.cases[0].at,
            Some(openharness_eval::ForkAt::event("task:started", 1))
        );
        assert_eq!(file.variants[1].provider.as_ref().unwrap().kind, "openai");
        let one_line = &file.variants[2].agents["executor"];
        assert_eq!(
            one_line.prompt.as_deref(),
            Some("{prompt}\nAnswer in one line.")
        );
        assert_eq!(
            one_line.summary(),
            "system wrapped, prompt rewritten, reasoning low"
        );
        assert_eq!(scorers(&file.scorers).unwrap()[0].name(), "published");
        assert!(provider_kind("openai").is_ok());
        assert!(provider_kind("gemini").is_err());
    }

    /// The README's dataset experiment file reads as one, and its `--at` words parse.
    #[test]
    fn the_readme_dataset_file_and_fork_points_are_valid() {
        let readme = include_str!("../../../../README.md");
        let datasets = &readme[readme.find("### Datasets from production").unwrap()..];
        let open = datasets.find("```toml\n").unwrap() + "```toml\n".len();
        let close = datasets[open..].find("```").unwrap();
        let file = ExperimentFile::from_toml(&datasets[open..open + close]).unwrap();
        assert_eq!(file.datasets.len(), 1);
        assert_eq!(file.datasets[0].name, "refunds");
        assert_eq!(file.datasets[0].version, Some(4));
        assert_eq!(
            file.datasets[0].answers.as_deref(),
            Some(&["yes".to_owned()][..])
        );
        let at = datasets[datasets.find("--at ").unwrap() + "--at ".len()..]
            .split_whitespace()
            .next()
            .unwrap();
        assert_eq!(
            at.parse::<openharness_eval::ForkAt>().unwrap(),
            openharness_eval::ForkAt::event("task:started", 2)
        );
    }
}
