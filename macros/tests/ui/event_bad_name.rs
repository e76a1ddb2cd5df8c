use openharness::prelude::*;

#[event("PlanCreated")]
pub struct PlanCreated {
    pub tasks: Vec<String>,
}

fn main() {}
