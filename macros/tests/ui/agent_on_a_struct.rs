use openharness::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Plan {
    pub tasks: Vec<String>,
}

#[agent(output = Plan, emits = [])]
pub struct Planner;

fn main() {}
