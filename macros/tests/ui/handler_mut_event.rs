use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &mut PlanCreated) {
        self.tasks = std::mem::take(&mut plan.tasks);
    }
}

fn main() {}
