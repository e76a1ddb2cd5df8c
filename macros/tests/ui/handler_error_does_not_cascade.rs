use openharness::prelude::*;

include!("fixture/events.rs");

#[handler(PlannerEvent)]
impl PlanState {
    fn on_input(&mut self, _input: &UserInput) {}
    async fn on_plan(&mut self, plan: &PlanCreated) {
        self.tasks = plan.tasks.clone();
    }
    fn on_done(&mut self, _done: &TaskCompleted) {
        self.done += 1;
    }
}

fn fold(state: &mut PlanState, event: &PlannerEvent) -> Emit {
    state.apply(event)
}

fn main() {
    let mut state = PlanState::default();
    fold(&mut state, &PlanCreated { tasks: vec![] }.into());
}
