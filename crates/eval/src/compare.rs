//! [`Comparison`]: a variant against the baseline (or another variant), per scorer and per
//! case — wins, ties and losses, means with 95% intervals, pass rates with Wilson intervals,
//! pass@k and pass^k over repeats, flake rate, the sign test's p-value (and a note when the
//! cases are too few for it ever to reject), cost and latency deltas — as JSON, as a Markdown
//! report for a pull request, and as a gate that fails on a regression beyond a threshold.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::error::EvalError;
use crate::events::Better;
use crate::record::{ExperimentRecord, RunEntry};
use crate::stats::{
    ALPHA, Interval, Proportion, fewest_cases_to_reject, pass_at_k, pass_hat_k, sign_test,
    smallest_sign_test_p,
};

/// Per-case means closer than this are a tie.
const TIE: f64 = 1e-9;

/// One variant's numbers for one scorer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Arm {
    /// The variant.
    pub variant: String,
    /// Mean score over its scored runs, with its 95% interval.
    pub mean: Option<Interval>,
    /// Share of its runs that passed (failed runs count as not passing).
    pub pass_rate: f64,
    /// The pass rate with its 95% Wilson score interval (`None` without runs).
    pub pass_interval: Option<Proportion>,
    /// pass@k averaged over cases, k = the repeats (at least one of k passes).
    pub pass_at_k: Option<f64>,
    /// pass^k averaged over cases, k = the repeats (all k pass).
    pub pass_hat_k: Option<f64>,
    /// Share of cases whose repeats disagree (some passed, some did not).
    pub flake_rate: f64,
    /// Runs counted.
    pub runs: usize,
    /// Runs that failed (no score).
    pub failed: usize,
}

/// One scorer's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScorerComparison {
    /// The scorer.
    pub scorer: String,
    /// Which way it improves.
    pub better: Better,
    /// The baseline's numbers.
    pub baseline: Arm,
    /// The variant's numbers.
    pub variant: Arm,
    /// The variant's mean minus the baseline's.
    pub delta: Option<f64>,
    /// Cases where the variant's mean is better / equal / worse.
    pub wins: u64,
    /// Cases with equal means.
    pub ties: u64,
    /// Cases where the variant's mean is worse.
    pub losses: u64,
    /// The two-sided sign test over wins and losses.
    pub p_value: f64,
    /// Whether the variant is worse by more than the threshold ([`Comparison::gate`]): its
    /// mean, or its pass rate (failed runs count as not passing).
    pub regressed: bool,
    /// Per case: each side's mean.
    pub cases: Vec<CaseComparison>,
}

/// One case under one scorer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseComparison {
    /// The case.
    pub case: String,
    /// The baseline's mean over repeats.
    pub baseline: Option<f64>,
    /// The variant's mean over repeats.
    pub variant: Option<f64>,
    /// `win`, `tie`, `loss`, or `missing` when a side has no score.
    pub verdict: &'static str,
}

/// Cost and latency, baseline against variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    /// Mean cost per run (US dollars): baseline, variant.
    pub cost: (f64, f64),
    /// Mean latency per run (milliseconds): baseline, variant.
    pub latency_ms: (f64, f64),
    /// Mean tokens per run (input + output): baseline, variant.
    pub tokens: (f64, f64),
}

/// A variant compared with a baseline over every scorer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The experiment.
    pub experiment: String,
    /// The side compared against.
    pub baseline: String,
    /// The side compared.
    pub variant: String,
    /// Repeats per case.
    pub repeats: u32,
    /// One entry per scorer.
    pub scorers: Vec<ScorerComparison>,
    /// What the runs cost and took.
    pub spend: Spend,
    /// Whether the fork-point hash of every run of each case was the same (identical state
    /// at the start); `None` when no case starts from a recording.
    pub identical_start: Option<bool>,
    /// The regression threshold applied.
    pub threshold: f64,
    /// Cases compared (the experiment's current cases).
    pub cases: usize,
    /// The smallest p-value the sign test can give with that many cases (`2 · 0.5^n`: every
    /// case won); at or above 0.05 no difference can ever be significant.
    pub min_p_value: f64,
    /// What a reader should know before trusting the numbers (too few cases for the sign
    /// test, ...), one sentence each.
    pub notes: Vec<String>,
    /// What the variant changes against the recording, one line each (its agents' prompts and
    /// model parameters, the workflow, provider and state edit it names).
    pub changes: Vec<String>,
}

impl Comparison {
    /// Compares `variant` with `baseline` (default: the experiment's baseline) in `record`;
    /// a scorer regresses when the variant's mean is worse by more than `threshold` (in the
    /// scorer's units; 0.05 is five points of pass rate).
    pub fn of(
        record: &ExperimentRecord,
        variant: &str,
        baseline: Option<&str>,
        threshold: f64,
    ) -> Result<Self, EvalError> {
        let baseline = baseline.unwrap_or(&record.definition.baseline);
        let known: Vec<&str> = record
            .definition
            .variants
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        for side in [variant, baseline] {
            if !known.contains(&side) {
                return Err(EvalError::Compare(format!(
                    "experiment `{}` has no variant `{side}` (it has: {})",
                    record.name,
                    known.join(", ")
                )));
            }
        }
        // Only the cases and repeats of the latest definition count: an experiment whose
        // definition changed keeps its older runs in the log, not in its comparisons.
        let current: std::collections::BTreeSet<&str> = record
            .definition
            .cases
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let runs_of = |name: &str| -> BTreeMap<&str, Vec<&RunEntry>> {
            let mut by_case: BTreeMap<&str, Vec<&RunEntry>> = BTreeMap::new();
            for (key, entry) in &record.runs {
                if key.variant == name
                    && key.repeat < record.definition.repeats
                    && current.contains(key.case.as_str())
                {
                    by_case.entry(key.case.as_str()).or_default().push(entry);
                }
            }
            by_case
        };
        let (base_runs, variant_runs) = (runs_of(baseline), runs_of(variant));
        let mut scorer_names: BTreeMap<String, Better> = record
            .definition
            .scorers
            .iter()
            .map(|s| (s.name.clone(), s.better))
            .collect();
        for entry in record.runs.values() {
            for (name, score) in &entry.scores {
                scorer_names.entry(name.clone()).or_insert(score.better);
            }
        }
        let cases: Vec<&str> = record
            .definition
            .cases
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let scorers = scorer_names
            .into_iter()
            .map(|(scorer, better)| {
                let base = arm(baseline, &base_runs, &scorer, record.definition.repeats);
                let var = arm(variant, &variant_runs, &scorer, record.definition.repeats);
                let mut case_rows = Vec::new();
                let (mut wins, mut ties, mut losses) = (0, 0, 0);
                for case in &cases {
                    let b = case_mean(base_runs.get(case), &scorer);
                    let v = case_mean(variant_runs.get(case), &scorer);
                    let verdict = match (b, v) {
                        (Some(b), Some(v)) => {
                            let gain = match better {
                                Better::Higher => v - b,
                                Better::Lower => b - v,
                            };
                            if gain > TIE {
                                wins += 1;
                                "win"
                            } else if gain < -TIE {
                                losses += 1;
                                "loss"
                            } else {
                                ties += 1;
                                "tie"
                            }
                        }
                        // Runs that all failed lose to runs that scored.
                        (Some(_), None) if variant_runs.contains_key(case) => {
                            losses += 1;
                            "loss"
                        }
                        (None, Some(_)) if base_runs.contains_key(case) => {
                            wins += 1;
                            "win"
                        }
                        _ => "missing",
                    };
                    case_rows.push(CaseComparison {
                        case: (*case).to_owned(),
                        baseline: b,
                        variant: v,
                        verdict,
                    });
                }
                let delta = match (&base.mean, &var.mean) {
                    (Some(b), Some(v)) => Some(v.mean - b.mean),
                    _ => None,
                };
                let worse_by = delta.map_or(0.0, |d| match better {
                    Better::Higher => -d,
                    Better::Lower => d,
                });
                // Failed runs have no score: a variant that fails more often regresses by its
                // pass rate even when the runs that finished score as well.
                let passes_less_by = base.pass_rate - var.pass_rate;
                ScorerComparison {
                    scorer,
                    better,
                    regressed: worse_by > threshold + TIE || passes_less_by > threshold + TIE,
                    baseline: base,
                    variant: var,
                    delta,
                    wins,
                    ties,
                    losses,
                    p_value: sign_test(wins, losses),
                    cases: case_rows,
                }
            })
            .collect();
        let spend_of = |runs: &BTreeMap<&str, Vec<&RunEntry>>, f: &dyn Fn(&RunEntry) -> f64| {
            let values: Vec<f64> = runs
                .values()
                .flatten()
                .filter(|e| e.completed())
                .map(|e| f(e))
                .collect();
            Interval::of(&values).map_or(0.0, |i| i.mean)
        };
        let cost = |e: &RunEntry| e.run.cost;
        let latency = |e: &RunEntry| e.run.latency_ms;
        let tokens = |e: &RunEntry| (e.run.usage.input_tokens + e.run.usage.output_tokens) as f64;
        let spend = Spend {
            cost: (spend_of(&base_runs, &cost), spend_of(&variant_runs, &cost)),
            latency_ms: (
                spend_of(&base_runs, &latency),
                spend_of(&variant_runs, &latency),
            ),
            tokens: (
                spend_of(&base_runs, &tokens),
                spend_of(&variant_runs, &tokens),
            ),
        };
        let min_p_value = smallest_sign_test_p(cases.len() as u64);
        let mut notes = Vec::new();
        if min_p_value >= ALPHA {
            notes.push(too_few_cases(cases.len()));
        }
        Ok(Self {
            experiment: record.name.clone(),
            baseline: baseline.to_owned(),
            variant: variant.to_owned(),
            repeats: record.definition.repeats,
            scorers,
            spend,
            identical_start: identical_start(record, &[baseline, variant]),
            threshold,
            cases: cases.len(),
            min_p_value,
            notes,
            changes: changes_of(record, variant),
        })
    }

    /// The scorers that regressed.
    pub fn regressions(&self) -> Vec<&ScorerComparison> {
        self.scorers.iter().filter(|s| s.regressed).collect()
    }

    /// `Ok` when no scorer regressed beyond the threshold; otherwise a line naming them (a
    /// CI gate: `openharness eval compare … --max-regression 0.05` exits 1).
    pub fn gate(&self) -> Result<(), String> {
        let regressed = self.regressions();
        if regressed.is_empty() {
            return Ok(());
        }
        Err(format!(
            "`{}` regressed against `{}` beyond {}: {}",
            self.variant,
            self.baseline,
            self.threshold,
            regressed
                .iter()
                .map(|s| {
                    // What failed the gate: the mean's delta, or the pass rate's when the
                    // mean held (or there is none).
                    let pass_delta = s.variant.pass_rate - s.baseline.pass_rate;
                    let mean_regressed = s.delta.is_some_and(|d| {
                        let loss = match s.better {
                            Better::Higher => -d,
                            Better::Lower => d,
                        };
                        loss > self.threshold + TIE
                    });
                    if mean_regressed {
                        format!("{} (mean {:+.3})", s.scorer, s.delta.unwrap_or(0.0))
                    } else {
                        format!("{} (pass rate {:+.3})", s.scorer, pass_delta)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The comparison as a Markdown report.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## `{}`: `{}` against `{}` ({} repeat{} per case)\n",
            self.experiment,
            self.variant,
            self.baseline,
            self.repeats,
            if self.repeats == 1 { "" } else { "s" }
        );
        if !self.changes.is_empty() {
            let _ = writeln!(out, "Changes: {}.\n", self.changes.join("; "));
        }
        let _ = writeln!(
            out,
            "| scorer | {} | {} | Δ | W/T/L | p | pass rate (95% CI) | pass@{k} | pass^{k} | flaky |",
            self.baseline,
            self.variant,
            k = self.repeats
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for s in &self.scorers {
            let both =
                |f: &dyn Fn(&Arm) -> String| format!("{} → {}", f(&s.baseline), f(&s.variant));
            let _ = writeln!(
                out,
                "| {}{} | {} | {} | {} | {}/{}/{} | {:.3} | {} | {} | {} | {} |",
                s.scorer,
                if s.regressed { " ⚠️ regressed" } else { "" },
                mean_text(s.baseline.mean.as_ref()),
                mean_text(s.variant.mean.as_ref()),
                s.delta
                    .map_or_else(|| "–".to_owned(), |d| format!("{d:+.3}")),
                s.wins,
                s.ties,
                s.losses,
                s.p_value,
                both(&|a| rate_text(a.pass_interval.as_ref())),
                both(&|a| opt(a.pass_at_k)),
                both(&|a| opt(a.pass_hat_k)),
                both(&|a| format!("{:.0}%", a.flake_rate * 100.0)),
            );
        }
        let _ = writeln!(
            out,
            "\nPer run: cost ${:.4} → ${:.4}, latency {:.1} ms → {:.1} ms, tokens {:.0} → {:.0}.",
            self.spend.cost.0,
            self.spend.cost.1,
            self.spend.latency_ms.0,
            self.spend.latency_ms.1,
            self.spend.tokens.0,
            self.spend.tokens.1
        );
        match self.identical_start {
            Some(true) => {
                let _ = writeln!(
                    out,
                    "Every run of each case started from identical state (equal fork-point hashes)."
                );
            }
            Some(false) => {
                let _ = writeln!(
                    out,
                    "⚠️ Runs of one case started from different states (fork-point hashes differ)."
                );
            }
            None => {}
        }
        let failed = self
            .scorers
            .first()
            .map_or(0, |s| s.baseline.failed + s.variant.failed);
        if failed > 0 {
            let _ = writeln!(out, "⚠️ {failed} runs failed and have no score.");
        }
        for note in &self.notes {
            let _ = writeln!(out, "⚠️ {note}");
        }
        out
    }
}

/// The note for a comparison whose cases are too few for the sign test ever to reject.
/// What variant `name` of `record` changes, one line each.
fn changes_of(record: &ExperimentRecord, name: &str) -> Vec<String> {
    let Some(variant) = record.definition.variants.iter().find(|v| v.name == name) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    if let Some(workflow) = &variant.workflow {
        changes.push(format!("workflow `{workflow}`"));
    }
    if let Some(provider) = &variant.provider {
        changes.push(format!("provider `{provider}`"));
    }
    if let Some(edit) = &variant.state_edit {
        changes.push(format!("state edit {edit}"));
    }
    for (agent, change) in &variant.agents {
        changes.push(format!("agent `{agent}`: {}", change.summary()));
    }
    changes
}

fn too_few_cases(cases: usize) -> String {
    format!(
        "with {cases} case{s} the sign test can never reach p < {ALPHA} (its smallest p-value is {min:.3}); add cases: {need} or more can",
        s = if cases == 1 { "" } else { "s" },
        min = smallest_sign_test_p(cases as u64),
        need = fewest_cases_to_reject(ALPHA),
    )
}

/// A pass rate and its Wilson interval, in percent.
fn rate_text(rate: Option<&Proportion>) -> String {
    rate.map_or_else(
        || "–".to_owned(),
        |r| {
            format!(
                "{:.0}% [{:.0}–{:.0}%]",
                r.rate * 100.0,
                r.low * 100.0,
                r.high * 100.0
            )
        },
    )
}

fn mean_text(mean: Option<&Interval>) -> String {
    mean.map_or_else(
        || "–".to_owned(),
        |m| format!("{:.3} ± {:.3}", m.mean, m.half_width),
    )
}

fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"))
}

/// The mean of one case's scores under `scorer`.
fn case_mean(runs: Option<&Vec<&RunEntry>>, scorer: &str) -> Option<f64> {
    let values: Vec<f64> = runs?
        .iter()
        .filter_map(|e| e.scores.get(scorer))
        .filter_map(|s| s.value)
        .collect();
    Interval::of(&values).map(|i| i.mean)
}

fn arm(name: &str, runs: &BTreeMap<&str, Vec<&RunEntry>>, scorer: &str, repeats: u32) -> Arm {
    // People's thumbs are on the runs they annotated only: the others are not runs that
    // failed them, and are left out of every figure (a scorer's own score is on every
    // completed run, and a run without one failed).
    let annotated: BTreeMap<&str, Vec<&RunEntry>>;
    let runs = if scorer == crate::record::THUMBS_SCORER {
        annotated = runs
            .iter()
            .map(|(case, entries)| {
                let said: Vec<&RunEntry> = entries
                    .iter()
                    .copied()
                    .filter(|e| e.scores.contains_key(scorer))
                    .collect();
                (*case, said)
            })
            .filter(|(_, said)| !said.is_empty())
            .collect();
        &annotated
    } else {
        runs
    };
    let all: Vec<&RunEntry> = runs.values().flatten().copied().collect();
    let values: Vec<f64> = all
        .iter()
        .filter_map(|e| e.scores.get(scorer))
        .filter_map(|s| s.value)
        .collect();
    let passed = all
        .iter()
        .filter(|e| e.scores.get(scorer).is_some_and(|s| s.passed))
        .count();
    let (mut at_k, mut hat_k, mut flaky, mut counted) = (0.0, 0.0, 0usize, 0usize);
    for case_runs in runs.values() {
        let n = case_runs.len() as u64;
        let c = case_runs
            .iter()
            .filter(|e| e.scores.get(scorer).is_some_and(|s| s.passed))
            .count() as u64;
        let k = u64::from(repeats).min(n);
        if let (Some(a), Some(h)) = (pass_at_k(n, c, k), pass_hat_k(n, c, k)) {
            at_k += a;
            hat_k += h;
            counted += 1;
        }
        if c > 0 && c < n {
            flaky += 1;
        }
    }
    Arm {
        variant: name.to_owned(),
        mean: Interval::of(&values),
        pass_rate: if all.is_empty() {
            0.0
        } else {
            passed as f64 / all.len() as f64
        },
        pass_interval: Proportion::wilson(passed as u64, all.len() as u64),
        pass_at_k: (counted > 0).then(|| at_k / counted as f64),
        pass_hat_k: (counted > 0).then(|| hat_k / counted as f64),
        flake_rate: if runs.is_empty() {
            0.0
        } else {
            flaky as f64 / runs.len() as f64
        },
        runs: all.len(),
        failed: all.iter().filter(|e| !e.completed()).count(),
    }
}

/// Whether every run of each case started from the same fork-point hash.
fn identical_start(record: &ExperimentRecord, variants: &[&str]) -> Option<bool> {
    let mut by_case: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    let mut any = false;
    for (key, entry) in &record.runs {
        if !variants.contains(&key.variant.as_str()) {
            continue;
        }
        let Some(hash) = entry.run.state_hash.as_deref() else {
            continue;
        };
        any = true;
        match by_case.get(key.case.as_str()) {
            None => {
                by_case.insert(&key.case, Some(hash));
            }
            Some(Some(seen)) if *seen != hash => return Some(false),
            Some(_) => {}
        }
    }
    any.then_some(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use openharness_core::{SessionId, adapter::Usage};

    use super::*;
    use crate::events::{CaseRecord, EvalRecorded, EvalScored, EvalStarted, RunStatus};
    use crate::record::RunKey;
    use crate::variant::VariantRecord;

    /// A record of two cases × `a`/`b` × 2 repeats; `b`'s runs of case `x` fail (no score),
    /// everything that finishes scores `value`.
    fn record(value: f64) -> ExperimentRecord {
        let case = |id: &str| CaseRecord {
            id: id.into(),
            inputs: Vec::new(),
            session: None,
            at: None,
            expected: serde_json::Value::Null,
            metadata: serde_json::Value::Null,
            dataset: None,
        };
        let variant = |name: &str| VariantRecord {
            name: name.into(),
            description: None,
            workflow: None,
            code: None,
            provider: None,
            state_edit: None,
            agents: BTreeMap::new(),
        };
        let mut runs = BTreeMap::new();
        for case_id in ["x", "y"] {
            for variant_name in ["a", "b"] {
                for repeat in 0..2 {
                    let failed = case_id == "x" && variant_name == "b";
                    let session = SessionId::new();
                    let run = EvalRecorded {
                        case: case_id.into(),
                        variant: variant_name.into(),
                        repeat,
                        attempt: 1,
                        session: Some(session.clone()),
                        status: if failed {
                            RunStatus::Failed
                        } else {
                            RunStatus::Completed
                        },
                        error: None,
                        provider: None,
                        reason: None,
                        len: 1,
                        fork_position: None,
                        state_hash: None,
                        latency_ms: 1.0,
                        usage: Usage::default(),
                        cost: 0.0,
                        turns: 1,
                    };
                    let mut scores = BTreeMap::new();
                    if !failed {
                        scores.insert(
                            "s".to_owned(),
                            EvalScored {
                                case: case_id.into(),
                                variant: variant_name.into(),
                                repeat,
                                session,
                                scorer: "s".into(),
                                value: Some(value),
                                passed: true,
                                better: Better::Higher,
                                detail: None,
                                judge_session: None,
                            },
                        );
                    }
                    let key = RunKey {
                        case: case_id.into(),
                        variant: variant_name.into(),
                        repeat,
                    };
                    runs.insert(key, RunEntry { run, scores });
                }
            }
        }
        ExperimentRecord {
            name: "e".into(),
            definition: EvalStarted {
                experiment: "e".into(),
                cases: vec![case("x"), case("y")],
                variants: vec![variant("a"), variant("b")],
                baseline: "a".into(),
                repeats: 2,
                scorers: Vec::new(),
                max_regression: None,
            },
            created: chrono::Utc::now(),
            runs,
            dispatched: BTreeMap::new(),
            verdicts: BTreeMap::new(),
            cancelled: None,
            len: 0,
        }
    }

    #[test]
    fn failed_runs_lose_their_cases_and_regress_the_pass_rate() {
        let comparison = Comparison::of(&record(1.0), "b", None, 0.05).unwrap();
        let s = &comparison.scorers[0];
        // The runs that finished score the same, but half of b's runs failed.
        assert_eq!(s.delta, Some(0.0));
        assert_eq!((s.wins, s.ties, s.losses), (0, 1, 1));
        assert_eq!(s.cases[0].verdict, "loss");
        assert_eq!((s.baseline.pass_rate, s.variant.pass_rate), (1.0, 0.5));
        // Pass rates come with their Wilson intervals: 2 of 4 runs.
        let rate = s.variant.pass_interval.unwrap();
        assert_eq!((rate.passed, rate.n, rate.rate), (2, 4, 0.5));
        let expected = Proportion::wilson(2, 4).unwrap();
        assert_eq!(rate, expected);
        assert!(
            (rate.low - 0.150_038_989_152_149_5).abs() < 1e-9,
            "{}",
            rate.low
        );
        assert!(
            (rate.high - 0.849_961_010_847_850_5).abs() < 1e-9,
            "{}",
            rate.high
        );
        assert_eq!(s.variant.failed, 2);
        assert!(s.regressed);
        assert!(comparison.gate().is_err());
        // Two cases can never be significant, and the report says so (text and JSON).
        assert_eq!((comparison.cases, comparison.min_p_value), (2, 0.5));
        let note = "with 2 cases the sign test can never reach p < 0.05 (its smallest p-value is 0.500); add cases: 6 or more can";
        assert_eq!(comparison.notes, [note]);
        assert!(comparison.markdown().contains(&format!("⚠️ {note}")));
        let wire = serde_json::to_value(&comparison).unwrap();
        assert_eq!(wire["notes"][0], note);
        assert_eq!(wire["minPValue"], 0.5);
        assert_eq!(wire["scorers"][0]["variant"]["passInterval"]["n"], 4);
        assert!(wire["scorers"][0]["variant"]["mean"]["halfWidth"].is_number());
        assert!(
            comparison
                .markdown()
                .contains("| 100% [51–100%] → 50% [15–85%] |"),
            "{}",
            comparison.markdown()
        );
        // With a lenient enough threshold it passes.
        assert!(
            Comparison::of(&record(1.0), "b", None, 0.6)
                .unwrap()
                .gate()
                .is_ok()
        );
        // Unknown variants are refused, naming the ones there are.
        let err = Comparison::of(&record(1.0), "c", None, 0.0).unwrap_err();
        assert!(
            err.to_string()
                .contains("has no variant `c` (it has: a, b)"),
            "{err}"
        );
    }
}
