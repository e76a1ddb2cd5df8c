use openharness::prelude::*;
use openharness::{FnTool, Tool};
use std::sync::Arc;

include!("fixture/events.rs");
include!("fixture/planner.rs");
include!("fixture/lookup_order.rs");

pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
    fn tools(&self, state: &PlanState) -> Vec<Arc<dyn Tool>> {
        let _ = state;
        vec![Arc::new(lookup_order())]
    }
}

fn main() {}
