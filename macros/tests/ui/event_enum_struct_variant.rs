use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event]
pub enum PlannerEvent {
    PlanCreated { tasks: Vec<String> },
    TaskCompleted,
}

fn main() {}
