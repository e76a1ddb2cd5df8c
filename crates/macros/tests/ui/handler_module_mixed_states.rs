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

#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub plans: usize,
}

#[handler(PlannerEvent, partial)]
mod handlers {
    use super::*;

    fn on_plan(state: &mut PlanState, plan: &PlanCreated) {
        state.tasks = plan.tasks.clone();
    }

    fn on_done(stats: &mut Stats, _done: &TaskCompleted) {
        stats.plans += 1;
    }
}

fn main() {}
