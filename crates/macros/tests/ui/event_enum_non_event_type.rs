use openharness::prelude::*;

#[event]
#[derive(Debug, Clone)]
pub struct PlanCreated {
    pub tasks: Vec<String>,
}

#[event]
#[derive(Debug, Clone)]
pub struct TaskCompleted {
    pub index: usize,
}

pub struct Goal {
    pub text: String,
}

#[event]
pub enum PlannerEvent {
    Goal,
    PlanCreated,
}

fn main() {}
