use openharness::prelude::*;

include!("fixture/plan_events.rs");
include!("fixture/planner_event.rs");

#[derive(Debug, Default)]
pub struct PlanState {
    pub tasks: Vec<String>,
    pub done: usize,
}

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

fn main() {}
