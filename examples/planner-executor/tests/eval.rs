//! The example eval: forks of the demo, the prefix never re-called, the terse prompt ahead.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::store::MemoryStore;
use openharness_example_planner_executor::eval;

#[tokio::test]
async fn the_terse_prompt_reports_more_tasks_done_from_identical_forks() {
    let outcome = eval::run(MemoryStore::new()).await.unwrap();
    assert_eq!(
        outcome.planner_calls, 0,
        "the plan comes from the recording"
    );
    // 2 variants × 5 repeats × (3 + 2 + 1) tasks left after each fork point.
    assert_eq!(outcome.executor_calls, 60);
    let comparison = &outcome.comparison;
    assert_eq!(comparison.identical_start, Some(true));
    let done = &comparison.scorers[0];
    assert_eq!(done.scorer, "reports-done");
    assert_eq!(done.baseline.runs, 15);
    assert_eq!(done.variant.runs, 15);
    let (recorded, terse) = (
        done.baseline.mean.unwrap().mean,
        done.variant.mean.unwrap().mean,
    );
    assert!(terse > recorded, "terse {terse} vs recorded {recorded}");
    assert_eq!(done.wins + done.ties + done.losses, 3);
}
