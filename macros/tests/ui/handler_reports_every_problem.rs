use openharness::prelude::*;

include!("fixture/events.rs");

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
