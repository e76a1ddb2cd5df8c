//! Tools given in `tools = [...]` (any values that implement `Tool`, which may use `self`) or
//! in a `fn tools`, with a `fn max_turns`.
use openharness::prelude::*;
use openharness::provider::tools::CurrentTime;
use openharness::{FnTool, Tool};
use std::sync::Arc;

#[event]
#[derive(Debug, Clone)]
pub struct OrderFound {
    pub status: String,
}

#[event]
pub enum SupportEvent {
    UserInput,
    OrderFound,
}

#[derive(Debug, Clone, Default)]
pub struct Desk;

#[handler(SupportEvent, partial)]
impl Desk {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Found {
    pub status: String,
}

/// Arguments of `lookup_order`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct OrderId {
    pub order: String,
}

fn lookup_order(shop: &str) -> FnTool<OrderId> {
    let shop = shop.to_owned();
    FnTool::new("lookup_order", "Finds an order.", move |args: OrderId| {
        let shop = shop.clone();
        async move { Ok::<_, String>(format!("{shop}: {} shipped", args.order)) }
    })
}

pub struct Support {
    shop: String,
}

#[agent(output = Found, emits = [OrderFound], tools = [lookup_order(&self.shop), CurrentTime])]
impl Support {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, found: Found) -> OrderFound {
        OrderFound { status: found.status }
    }
}

pub struct Researcher;

#[agent(output = Found, emits = [OrderFound])]
impl Researcher {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, found: Found) -> OrderFound {
        OrderFound { status: found.status }
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(lookup_order("acme")), Arc::new(CurrentTime)]
    }
    fn max_turns(&self) -> u32 {
        3
    }
}

fn main() {
    let support = Support { shop: "acme".into() };
    let names: Vec<String> = Agent::tools(&support).iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["lookup_order", "current_time"]);
    assert_eq!(Agent::tools(&Researcher).len(), 2);
    assert_eq!(Agent::max_turns(&Researcher), 3);
}
