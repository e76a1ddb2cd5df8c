//! `on_output` may return an event listed in `emits` (named by any path), `()` or `Emit`.
use openharness::prelude::*;

mod events {
    use openharness::prelude::*;

    #[event]
    #[derive(Debug, Clone)]
    pub struct PlanCreated {
        pub tasks: Vec<String>,
    }
}

use events::PlanCreated;

#[event]
pub enum PlannerEvent {
    UserInput,
    PlanCreated,
}

#[derive(Debug, Clone, Default)]
pub struct PlanState;

#[handler(PlannerEvent, partial)]
impl PlanState {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Plan {
    pub tasks: Vec<String>,
}

/// Returns an event listed under another path.
pub struct Planner;

#[agent(output = Plan, emits = [events::PlanCreated, TextComplete])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

/// Returns the other listed event, a built-in one.
pub struct Narrator;

#[agent(output = Plan, emits = [PlanCreated, TextComplete])]
impl Narrator {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan) -> TextComplete {
        TextComplete { agent: "narrator".into(), text: plan.tasks.join(", ") }
    }
}

/// Returns `Emit`: its events are checked against `emits` at run time.
pub struct Splitter;

#[agent(output = Plan, emits = [PlanCreated])]
impl Splitter {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan) -> Emit {
        plan.tasks.into_iter().map(|task| PlanCreated { tasks: vec![task] }).collect()
    }
}

/// Returns nothing and emits nothing.
pub struct Listener;

#[agent(output = Plan, emits = [])]
impl Listener {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, _plan: Plan) {}
}

fn main() {
    assert_eq!(Planner::EMITS, ["plan:created", "text:complete"]);
    assert!(Listener::EMITS.is_empty());
    let plan = Plan { tasks: vec!["a".into(), "b".into()] };
    assert_eq!(Agent::on_output(&Splitter, plan, &UserInput::new(String::new())).len(), 2);
}
