use openharness::prelude::*;

include!("fixture/events.rs");
include!("fixture/planner.rs");

pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: &Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks.clone() }
    }
}

fn main() {}
