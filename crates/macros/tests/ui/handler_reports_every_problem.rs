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

#[handler(PlannerEvent)]
impl PlanState {
    async fn on_input(&mut self, _input: &UserInput) {}
    fn on_plan(&self, plan: PlanCreated) {
        println!("{}", plan.tasks.len());
    }
    fn on_done(&mut self, _done: &TaskCompleted) {}
    fn also_done(&mut self, _done: &TaskCompleted) {}
}

fn main() {}
