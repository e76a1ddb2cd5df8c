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
    unsafe fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

fn main() {}
