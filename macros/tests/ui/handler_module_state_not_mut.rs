use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
mod handlers {
    use super::*;

    fn on_plan(state: &PlanState, plan: &PlanCreated) {
        println!("{} {}", state.tasks.len(), plan.tasks.len());
    }
}

fn main() {}
