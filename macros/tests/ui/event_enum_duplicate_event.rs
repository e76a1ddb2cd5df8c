use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event]
pub enum PlannerEvent {
    PlanCreated,
    TaskCompleted,
    PlanCreated(PlanCreated),
}

fn main() {}
