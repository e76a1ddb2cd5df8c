use openharness::prelude::*;

include!("fixture/events.rs");

// Two events without a handler: each is reported, by name.
#[handler(PlannerEvent)]
mod handlers {
    use super::*;

    fn on_input(_state: &mut PlanState, _input: &UserInput) {}
}

fn main() {}
