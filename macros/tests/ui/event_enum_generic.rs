use openharness::prelude::*;

include!("fixture/plan_events.rs");

#[event]
pub enum PlannerEvent<T> {
    PlanCreated,
    TaskCompleted,
    Other(T),
}

fn main() {}
