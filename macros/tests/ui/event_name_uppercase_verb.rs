use openharness::prelude::*;

#[event("plan:Created")]
pub struct PlanCreated {
    pub tasks: Vec<String>,
}

fn main() {}
