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

#[event]
pub enum PlannerEvent {
    UserInput,
    PlanCreated,
    TaskCompleted,
}

#[derive(Debug, Clone)]
pub struct PlanState {
    pub tasks: Vec<String>,
    pub done: usize,
}

#[handler(PlannerEvent)]
impl Default for PlanState {
    fn default() -> Self {
        PlanState { tasks: Vec::new(), done: 0 }
    }
}

fn main() {}
