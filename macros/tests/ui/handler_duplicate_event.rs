use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
    fn task_done(&mut self, _done: &TaskCompleted) {
        self.done += 1;
    }
    fn count_done(&mut self, _done: &TaskCompleted) {
        self.done += 1;
    }
}

fn main() {}
