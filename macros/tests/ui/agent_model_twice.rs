use openharness::prelude::*;

include!("fixture/events.rs");
include!("fixture/planner.rs");

pub struct Planner;

// The model is named in the attribute and by a method: keep one.
#[agent(output = Plan, emits = [PlanCreated], model = "claude-sonnet-4-5")]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
    fn model(&self) -> &str {
        "claude-opus-4"
    }
}

fn main() {}
