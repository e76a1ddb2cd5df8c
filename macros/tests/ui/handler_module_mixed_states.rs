use openharness::prelude::*;

include!("fixture/events.rs");

#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub plans: usize,
}

#[handler(PlannerEvent, partial)]
mod handlers {
    use super::*;

    fn on_plan(state: &mut PlanState, plan: &PlanCreated) {
        state.tasks = plan.tasks.clone();
    }

    fn on_done(stats: &mut Stats, _done: &TaskCompleted) {
        stats.plans += 1;
    }
}

fn main() {}
