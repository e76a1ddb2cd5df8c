use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated, done: &TaskCompleted) {
        self.tasks = plan.tasks.clone();
        self.done = done.index;
    }
}

fn main() {}
