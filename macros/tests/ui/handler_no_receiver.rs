use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(plan: &PlanCreated) {
        println!("{}", plan.tasks.len());
    }
}

fn main() {}
