use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event(version = 2)]
pub enum PlannerEvent {
    PlanCreated,
    TaskCompleted,
}

fn main() {}
