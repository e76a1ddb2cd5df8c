//! Runs the planner-executor example offline (scripted provider, in-memory store) and prints
//! each event as it is recorded. `openharness demo` does the same with a durable store.

use openharness::prelude::*;
use openharness::renderer_fn;
use openharness::store::MemoryStore;
use openharness_example_planner_executor as example;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), openharness::Error> {
    let workflow = example::workflow(MemoryStore::new(), example::scripted_provider())?;
    let printer = renderer_fn(
        "*".parse().expect("`*` is a valid pattern"),
        |event: &Envelope| {
            println!("{:<20} {}", event.name, event.payload);
        },
    );
    let outcome = workflow
        .run(
            RunOptions::new()
                .input(example::DEMO_GOAL)
                .renderer(printer),
        )
        .await?;
    println!(
        "\n{} of {} tasks done ({:?})",
        outcome.state.completed,
        outcome.state.tasks.len(),
        outcome.reason
    );
    Ok(())
}
