use openharness::prelude::*;

#[event]
#[derive(Debug, Clone)]
pub struct QuestionAnswered {
    pub text: String,
}

#[event]
pub enum DeskEvent {
    UserInput,
    QuestionAnswered,
}

#[derive(Debug, Clone, Default)]
pub struct Desk;

#[handler(DeskEvent, partial)]
impl Desk {}

pub struct Concierge;

// `messages` reads the state and the trigger, as `prompt` does: the trigger is missing.
#[agent(output = String, emits = [QuestionAnswered])]
impl Concierge {
    fn prompt(&self, _state: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }
    fn messages(&self, _state: &Desk) -> Vec<openharness::ChatMessage> {
        Vec::new()
    }
    fn on_output(&self, text: String) -> QuestionAnswered {
        QuestionAnswered { text }
    }
}

fn main() {}
