//! The planner-executor eval, offline: the recorded executor prompt against a terser one,
//! five repeats each, forked after the demo's first `task:started` (see the library's `eval`
//! module). Prints the comparison as Markdown.

use openharness::store::MemoryStore;
use openharness_example_planner_executor::eval;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let outcome = eval::run(MemoryStore::new()).await?;
    println!("{}", outcome.comparison.markdown());
    println!(
        "model calls: planner {} (the prefix came from the log), executor {} (2 variants × 5 repeats × 3 + 2 + 1 tasks)",
        outcome.planner_calls, outcome.executor_calls
    );
    Ok(())
}
