use openharness::prelude::*;
use openharness::{FnTool, Tool};
use std::sync::Arc;

#[event]
#[derive(Debug, Clone)]
pub struct PlanCreated {
    pub tasks: Vec<String>,
}

#[event]
#[derive(Debug, Clone)]
pub struct TaskCompleted {
    pub index: usize,
}

#[event]
pub enum PlannerEvent {
    UserInput,
    PlanCreated,
    TaskCompleted,
}

#[derive(Debug, Clone, Default)]
pub struct PlanState {
    pub tasks: Vec<String>,
    pub done: usize,
}

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Plan {
    pub tasks: Vec<String>,
}

/// Arguments of `lookup_order`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct OrderId {
    pub order: String,
}

fn lookup_order() -> FnTool<OrderId> {
    FnTool::new("lookup_order", "Finds an order.", |args: OrderId| async move {
        Ok::<_, String>(args.order)
    })
}

pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated], tools = [lookup_order()])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(lookup_order())]
    }
}

fn main() {}
