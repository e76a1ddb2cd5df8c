use openharness::prelude::*;
use openharness::FnTool;

include!("fixture/events.rs");
include!("fixture/planner.rs");
include!("fixture/lookup_order.rs");

/// Looks like a tool, but does not implement `Tool`.
pub struct Weather;

pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated], tools = [lookup_order(), Weather])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

fn main() {}
