use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event]
pub enum PlannerEvent {
    UserInput,
    Plan(PlanCreated),
    TaskCompleted,
}

fn main() {}
