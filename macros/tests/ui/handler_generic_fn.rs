use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan<T: Default>(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

fn main() {}
