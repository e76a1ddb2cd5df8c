use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent, partial)]
impl PlanState {
    fn reset(&mut self) {
        self.tasks.clear();
    }
}

fn main() {}
