use openharness::prelude::*;

include!("fixture/plan_events.rs");

pub struct Goal {
    pub text: String,
}

#[event]
pub enum PlannerEvent {
    Goal,
    PlanCreated,
}

fn main() {}
