use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: PlanCreated) {
        self.tasks = plan.tasks;
    }
}

fn main() {}
