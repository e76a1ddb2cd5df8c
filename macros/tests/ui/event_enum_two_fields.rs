use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event]
pub enum PlannerEvent {
    PlanCreated(PlanCreated, TaskCompleted),
}

fn main() {}
