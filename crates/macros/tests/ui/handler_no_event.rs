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

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn reset(&mut self) {
        self.tasks.clear();
    }
}

fn main() {}
