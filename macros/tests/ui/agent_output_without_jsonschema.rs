use openharness::prelude::*;

include!("fixture/events.rs");
include!("fixture/planner.rs");

pub struct Planner;

#[derive(serde::Deserialize)]
pub struct Draft {
    pub tasks: Vec<String>,
}

#[agent(output = Draft, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, draft: Draft, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: draft.tasks }
    }
}

fn main() {}
