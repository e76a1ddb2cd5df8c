//! `openharness eval dataset …`: datasets cut from production sessions, each a log of its
//! own (`dataset:<name>`, versioned by its length, not listed among the sessions).
//!
//! - `add NAME --at SPEC [--search TEXT] [--workflow W] [--status S,…] [--agent A]
//!   [--since TIME] [--until TIME] [--limit N] [--answer TEXT]…`: the recorded sessions that
//!   match (as `sessions` matches them; experiments' runs, judges' verdicts and forks left
//!   out) become cases, each at the position `--at` is in it now. Sessions already in the
//!   dataset are not added again; one without the point is skipped and named.
//! - `list`, `show NAME [--version V]`, `diff NAME --from V [--to V]`,
//!   `remove NAME CASE… [--reason TEXT]`.
//!
//! `--at` is one word ([`ForkAt`]'s text): `position=N` (or `N`), `end`, `event=NAME[#N]`
//! (right after the Nth, from 1, event of that name), `phase=VALUE[#first|#last|#N][@/FIELD]`
//! (where the state's `/phase`, or `FIELD`, becomes `VALUE`). An experiment file takes a
//! dataset's cases with `[[datasets]]` (`name`, `version`, `answers`).

use std::io::Write;

use chrono::{DateTime, Utc};
use clap::Subcommand;
use openharness::SessionStatus;
use openharness_eval::{Added, Dataset, DatasetAdd, DatasetCase, DatasetQuery, ForkAt};
use openharness_host::SessionQueryError;

use crate::{CliError, Context};

/// The dataset subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum DatasetCommand {
    /// Turn the recorded sessions that match into cases of a dataset, each forked where
    /// `--at` is in it now (a dataset is reproducible: later growth of a session does not
    /// move its case); sessions already in it are not added again.
    Add(AddArgs),
    /// List the datasets in the store: cases, version, last change.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a dataset's cases and changes, at its latest version or another.
    Show {
        /// The dataset's name.
        name: String,
        /// The version (0 to its latest; default the latest).
        #[arg(long)]
        version: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The cases added and removed between two versions of a dataset.
    Diff {
        /// The dataset's name.
        name: String,
        /// The version compared from.
        #[arg(long)]
        from: u64,
        /// The version compared to (default the latest).
        #[arg(long)]
        to: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove cases from a dataset (a new version; older ones still hold them).
    Remove {
        /// The dataset's name.
        name: String,
        /// The ids of the cases to remove (`eval dataset show NAME` lists them).
        #[arg(required = true, value_name = "CASE")]
        cases: Vec<String>,
        /// Why, kept in the dataset's log.
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl DatasetCommand {
    /// Whether the command only reads the store.
    pub(crate) fn reads_only(&self) -> bool {
        matches!(
            self,
            Self::List { .. } | Self::Show { .. } | Self::Diff { .. }
        )
    }
}

/// `eval dataset add`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// The dataset's name (created by its first add).
    name: String,
    /// Where to fork each session: `position=N` (or `N`), `end`, `event=NAME[#N]`,
    /// `phase=VALUE[#first|#last|#N][@/FIELD]`.
    #[arg(long, value_name = "SPEC", value_parser = parse_at)]
    at: ForkAt,
    /// Only sessions whose id, title, workflow, agents or inputs contain this text (any
    /// case), as `sessions --search` finds them.
    #[arg(long, value_name = "TEXT")]
    search: Option<String>,
    /// Only sessions of this workflow.
    #[arg(long, value_name = "NAME")]
    workflow: Option<String>,
    /// Only sessions with one of these statuses (comma-separated: running, idle, waiting,
    /// failed).
    #[arg(long, value_name = "STATUS,…", value_delimiter = ',')]
    status: Vec<String>,
    /// Only sessions that ran this agent.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Only sessions active at or after this time (RFC 3339, such as 2026-11-26T09:00:00Z).
    #[arg(long, value_name = "TIME")]
    since: Option<DateTime<Utc>>,
    /// Only sessions started at or before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    until: Option<DateTime<Utc>>,
    /// At most this many sessions, the newest that match.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// An answer for the cases' runs' questions (repeat it for several, in order).
    #[arg(long = "answer", value_name = "TEXT")]
    answers: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `--at`'s text as a fork point (the error names the forms there are).
fn parse_at(text: &str) -> Result<ForkAt, openharness_eval::ForkAtSyntax> {
    text.parse()
}

pub(crate) async fn run(command: DatasetCommand, context: &Context) -> Result<(), CliError> {
    let store = context.host().store().as_ref();
    let mut out = context.out();
    match command {
        DatasetCommand::Add(args) => add(context, args).await,
        DatasetCommand::List { json } => {
            let found = Dataset::list(store).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&found)?)?;
            } else if found.is_empty() {
                writeln!(
                    out,
                    "no datasets; `{} eval dataset add NAME --at SPEC --search TEXT` makes one",
                    context.program()
                )?;
            }
            if !json {
                for dataset in found {
                    writeln!(
                        out,
                        "{:<30} {:>5} cases  version {:<4} changed {}",
                        dataset.name,
                        dataset.cases,
                        dataset.version,
                        dataset.changed.format("%Y-%m-%d %H:%M:%S")
                    )?;
                }
            }
            Ok(())
        }
        DatasetCommand::Show {
            name,
            version,
            json,
        } => {
            let dataset = Dataset::load(store, &name, version).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&dataset)?)?;
            } else {
                show(&mut out, &dataset)?;
            }
            Ok(())
        }
        DatasetCommand::Diff {
            name,
            from,
            to,
            json,
        } => {
            let diff = Dataset::diff(store, &name, from, to).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&diff)?)?;
                return Ok(());
            }
            writeln!(
                out,
                "dataset `{name}` from version {} to {}: {} added, {} removed",
                diff.from,
                diff.to,
                diff.added.len(),
                diff.removed.len()
            )?;
            for case in &diff.added {
                writeln!(out, "+ {}", case_line(case))?;
            }
            for case in &diff.removed {
                writeln!(out, "- {}", case_line(case))?;
            }
            Ok(())
        }
        DatasetCommand::Remove {
            name,
            cases,
            reason,
            json,
        } => {
            let after = Dataset::remove(store, &name, &cases, reason).await?;
            let removed = after
                .changes
                .last()
                .map_or(0, |change| change.removed.len());
            if json {
                let value = serde_json::json!({
                    "dataset": name,
                    "removed": removed,
                    "version": after.version,
                    "cases": after.cases.len(),
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                writeln!(
                    out,
                    "removed {removed} case{} — dataset `{name}` is at version {} ({} case{})",
                    plural(removed),
                    after.version,
                    after.cases.len(),
                    plural(after.cases.len())
                )?;
            }
            Ok(())
        }
    }
}

async fn add(context: &Context, args: AddArgs) -> Result<(), CliError> {
    let status =
        SessionStatus::parse_list(args.status.iter().map(String::as_str)).map_err(|word| {
            CliError::Usage(format!(
                "--status: {}",
                SessionQueryError::Status(word.to_owned())
            ))
        })?;
    let query = DatasetQuery {
        search: args.search,
        workflow: args.workflow,
        status,
        agent: args.agent,
        since: args.since,
        until: args.until,
        limit: args.limit,
    };
    let added = DatasetAdd::new(args.name, args.at)
        .query(query)
        .answers(args.answers)
        .run(context.host())
        .await?;
    let mut out = context.out();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&added)?)?;
        return Ok(());
    }
    writeln!(out, "{}", added_line(&added))?;
    for case in &added.added {
        writeln!(out, "+ {}", case_line(case))?;
    }
    for skipped in &added.skipped {
        writeln!(out, "  skipped {}: {}", skipped.session, skipped.why)?;
    }
    Ok(())
}

/// `added 12 cases (3 already present, 2 skipped) — dataset `refunds` is at version 4`.
fn added_line(added: &Added) -> String {
    let mut notes = Vec::new();
    if !added.present.is_empty() {
        notes.push(format!("{} already present", added.present.len()));
    }
    if !added.skipped.is_empty() {
        notes.push(format!("{} skipped", added.skipped.len()));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let state = match (added.added.is_empty(), added.version) {
        (_, 0) => "has no version yet: nothing was added".to_owned(),
        (true, version) => format!("stays at version {version}"),
        (false, version) => format!("is at version {version}"),
    };
    format!(
        "added {} case{}{notes} — dataset `{}` {state}",
        added.added.len(),
        plural(added.added.len()),
        added.dataset
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A case in a line: its id, position, workflow, title and answers.
fn case_line(case: &DatasetCase) -> String {
    let mut line = format!("{}  position {}", case.id, case.position);
    if let Some(workflow) = &case.workflow {
        line.push_str(&format!("  {workflow}"));
    }
    if let Some(title) = &case.title {
        line.push_str(&format!("  {title:?}"));
    }
    if !case.answers.is_empty() {
        line.push_str(&format!("  answers {:?}", case.answers));
    }
    line
}

fn show(out: &mut impl Write, dataset: &Dataset) -> Result<(), CliError> {
    writeln!(
        out,
        "dataset `{}` at version {} of {}: {} case{}",
        dataset.name,
        dataset.version,
        dataset.latest,
        dataset.cases.len(),
        plural(dataset.cases.len())
    )?;
    for change in &dataset.changes {
        let mut line = format!(
            "  version {:<3} {}",
            change.version,
            change.time.format("%Y-%m-%d %H:%M:%S")
        );
        if !change.added.is_empty() {
            line.push_str(&format!("  +{}", change.added.len()));
        }
        if !change.removed.is_empty() {
            line.push_str(&format!("  -{}", change.removed.len()));
        }
        if let Some(at) = &change.at {
            line.push_str(&format!("  at {at}"));
        }
        if let Some(query) = &change.query
            && let Ok(words) = serde_json::to_string(query)
            && words != "{}"
        {
            line.push_str(&format!("  {words}"));
        }
        if let Some(reason) = &change.reason {
            line.push_str(&format!("  ({reason})"));
        }
        writeln!(out, "{line}")?;
    }
    for case in &dataset.cases {
        writeln!(out, "{}", case_line(case))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_add_line_says_what_happened() {
        let added = Added {
            dataset: "refunds".into(),
            added: Vec::new(),
            present: vec![openharness::SessionId::new()],
            skipped: Vec::new(),
            version: 3,
        };
        assert_eq!(
            added_line(&added),
            "added 0 cases (1 already present) — dataset `refunds` stays at version 3"
        );
    }

    #[test]
    fn a_bad_fork_point_names_the_forms_there_are() {
        let err = parse_at("after=task:started").expect_err("refused");
        assert!(err.to_string().contains("`event=NAME[#N]`"), "{err}");
    }
}
