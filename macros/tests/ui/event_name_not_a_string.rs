use openharness::prelude::*;

#[event(plan:created)]
pub struct PlanCreated {
    pub tasks: Vec<String>,
}

fn main() {}
