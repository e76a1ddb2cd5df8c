use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent)]
impl PlanState {
    fn on_input(&mut self, _input: &UserInput) {}
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

fn main() {}
