use openharness::prelude::*;

include!("fixture/plan_events.rs");
include!("fixture/planner_event.rs");

#[derive(Debug, Clone)]
pub struct PlanState {
    pub tasks: Vec<String>,
    pub done: usize,
}

#[handler(PlannerEvent)]
impl Default for PlanState {
    fn default() -> Self {
        PlanState { tasks: Vec::new(), done: 0 }
    }
}

fn main() {}
