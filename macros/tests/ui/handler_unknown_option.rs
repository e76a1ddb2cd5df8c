use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partal)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

fn main() {}
