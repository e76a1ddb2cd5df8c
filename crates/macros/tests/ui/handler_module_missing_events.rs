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

#[derive(Debug, Clone, Default)]
pub struct PlanState {
    pub tasks: Vec<String>,
    pub done: usize,
}

// Two events without a handler: each is reported, by name.
#[handler(PlannerEvent)]
mod handlers {
    use super::*;

    fn on_input(_state: &mut PlanState, _input: &UserInput) {}
}

fn main() {}
