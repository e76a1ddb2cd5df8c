use openharness::prelude::*;

include!("fixture/events.rs");
include!("fixture/planner.rs");

pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &PlanState, goal: &String) -> String {
        goal.clone()
    }
    fn on_output(&self, plan: Plan, _goal: &String) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

fn main() {}
