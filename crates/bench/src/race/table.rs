//! The race's table: the metrics compared, each one's goal at every N, and the rows a run's
//! figures (ours with each kind of board, LangGraph's beside them) print as.

use super::*;
use crate::report::times;

/// The goal a metric is held to at one N: its label, the least ratio (higher is better for
/// us) and whether the ratio must exceed it rather than reach it; `None` where it is shown
/// for information.
type Goal = fn(u64) -> Option<(&'static str, f64, bool)>;

/// One row group of the table: a name, the figure, how it prints, whether more is better
/// (throughput) or less (times, sizes), and its goal.
type Metric = (
    &'static str,
    fn(&Figures) -> f64,
    fn(f64) -> String,
    bool,
    Goal,
);

const METRICS: [Metric; 7] = [
    (
        "live completions/s",
        |f| f.n as f64 / f.live_s,
        |v| format!("{v:.0} /s"),
        true,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "walk forward, every state",
        |f| f.walk_forward_s,
        secs,
        false,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "walk backward, every state",
        |f| f.walk_back_s,
        secs,
        false,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "jump to 10%, fresh open",
        |f| f.jump_s,
        secs,
        false,
        |_| Some(("> 1x", 1.0, true)),
    ),
    (
        "slowest jump (10/50/90% and stretch ends), fresh open",
        |f| f.slowest_jump.map_or(f64::NAN, |(_, seconds)| seconds),
        secs,
        false,
        |_| None,
    ),
    (
        "file size (snapshots incl.)",
        |f| f.file_bytes as f64,
        megabytes,
        false,
        |n| (n == 5_000).then_some((">= 50x", 50.0, false)),
    ),
    (
        "peak RSS",
        |f| f.peak_rss_bytes as f64,
        megabytes,
        false,
        |_| Some((">= 4x", 4.0, false)),
    ),
];

pub(super) fn rows(results: &[(Figures, Option<Figures>)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (what, value, show, higher_is_better, goal) in METRICS {
        for (mine, theirs) in results {
            let n = mine.n;
            let ours = value(mine);
            let base = theirs.as_ref().map(value);
            let ratio = base.map(|base| {
                if higher_is_better {
                    ours / base
                } else {
                    base / ours
                }
            });
            let (label, met) = match goal(n) {
                Some((label, least, strict)) => (
                    label,
                    ratio.map(|r| if strict { r > least } else { r >= least }),
                ),
                None => ("(info)", None),
            };
            rows.push(Row {
                what: format!("{what}{}, N={n}", lists_of(mine)),
                measured: show(ours),
                baseline: base.map_or_else(|| "(no LangGraph)".to_owned(), show),
                ratio: ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}x")),
                goal: label,
                met,
            });
        }
    }
    for (mine, _) in results {
        if let Some((count, seconds)) = mine.appends {
            rows.push(Row {
                what: format!(
                    "live: time in durable appends{}, N={}",
                    lists_of(mine),
                    mine.n
                ),
                measured: format!("{} ({:.0}%)", secs(seconds), 100.0 * seconds / mine.live_s),
                baseline: format!(
                    "{count} appends, {:.3} ms each{}",
                    1e3 * seconds / count as f64,
                    mine.floor_mean_s.map_or_else(String::new, |mean| format!(
                        " (the floor's mean {:.3} ms)",
                        1e3 * mean
                    ))
                ),
                ratio: "-".to_owned(),
                goal: "(info)",
                met: None,
            });
        }
        if let Some(floor) = mine.clone_floor_s {
            rows.push(Row {
                what: format!(
                    "walk backward vs its clone floor{}, N={}",
                    lists_of(mine),
                    mine.n
                ),
                measured: secs(mine.walk_back_s),
                baseline: format!("{} (a clone per state)", secs(floor)),
                ratio: format!("{:.2}x", mine.walk_back_s / floor),
                goal: "(info)",
                met: None,
            });
        }
        if let Some((p50, floor)) = mine.append_p50_and_floor {
            let ratio = p50 / floor;
            rows.push(Row {
                what: format!(
                    "live: durable append p50 vs the disk's floor{}, N={}",
                    lists_of(mine),
                    mine.n
                ),
                measured: format!("{:.3} ms", 1e3 * p50),
                baseline: format!("{:.3} ms (1 KiB append + fdatasync)", 1e3 * floor),
                ratio: times(ratio),
                goal: "<= 1.5x",
                met: Some(ratio <= 1.5),
            });
        }
    }
    for (mine, theirs) in results {
        rows.push(Row {
            what: format!(
                "positions (events / checkpoints){}, N={}",
                lists_of(mine),
                mine.n
            ),
            measured: jumps_of(mine),
            baseline: theirs.as_ref().map_or_else(|| "-".to_owned(), jumps_of),
            ratio: "-".to_owned(),
            goal: "(info)",
            met: None,
        });
    }
    rows
}

/// A side's positions, where it jumps to and where its slowest jump was.
fn jumps_of(figures: &Figures) -> String {
    let slowest = figures
        .slowest_jump
        .map_or_else(String::new, |(position, _)| {
            format!(", slowest at {position}")
        });
    format!(
        "{} (jump to {}{slowest})",
        figures.positions, figures.jump_position
    )
}

/// ` [Vec state]` (or ` [Vec+undo state]`) for a run of ours with plain `Vec` lists; nothing
/// for the default (imbl).
fn lists_of(figures: &Figures) -> String {
    match figures.state.as_deref() {
        Some(lists) if lists != "imbl" => format!(" [{lists} state]"),
        _ => String::new(),
    }
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn megabytes(bytes: f64) -> String {
    format!("{:.2} MB", bytes / 1e6)
}
