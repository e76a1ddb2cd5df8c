use openharness::prelude::*;

#[event("task:completed")]
#[derive(Debug, Clone)]
pub struct TaskCompleted {
    pub index: usize,
}

#[event("task:completed")]
#[derive(Debug, Clone)]
pub struct TaskFinished {
    pub index: usize,
}

#[event]
pub enum PlannerEvent {
    TaskCompleted,
    TaskFinished,
}

fn main() {}
