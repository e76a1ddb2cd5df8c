use openharness::prelude::*;

include!("fixture/events.rs");

#[event]
#[derive(Debug, Clone)]
pub struct ReviewFinished;

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
    fn on_review(&mut self, _review: &ReviewFinished) {
        self.done = self.tasks.len();
    }
}

fn main() {}
