use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event("planner:event")]
pub enum PlannerEvent {
    PlanCreated,
    TaskCompleted,
}

fn main() {}
