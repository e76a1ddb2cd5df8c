//! Runs the planner-executor example offline (scripted provider, in-memory store) and prints
//! each event as it is recorded. The run ends waiting for approval to publish; this binary
//! answers "yes" itself (pass `--no` to decline). `openharness demo` does the same with a
//! durable store.

use openharness::prelude::*;
use openharness::renderer_fn;
use openharness::store::MemoryStore;
use openharness_example_planner_executor as example;

fn printer() -> impl openharness::Renderer {
    renderer_fn(
        "*".parse().expect("`*` is a valid pattern"),
        |event: &Envelope| {
            println!("{:<20} {}", event.name, event.payload);
        },
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), openharness::Error> {
    let answer = if std::env::args().any(|a| a == "--no") {
        "no"
    } else {
        "yes"
    };
    let workflow = example::workflow(MemoryStore::new(), example::scripted_provider())?;
    let mut outcome = workflow
        .run(
            RunOptions::new()
                .input(example::DEMO_GOAL)
                .renderer(printer()),
        )
        .await?;
    if let Some(&request) = outcome.open_requests.first() {
        println!("\n{} -> answering {answer:?}\n", example::PUBLISH_PROMPT);
        outcome = workflow
            .respond(
                &outcome.session,
                request,
                answer,
                RunOptions::new().renderer(printer()),
            )
            .await?;
    }
    println!(
        "\n{} of {} tasks done, release {:?} ({:?})",
        outcome.state.completed,
        outcome.state.tasks.len(),
        outcome.state.release,
        outcome.reason
    );
    Ok(())
}
