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

// `system` returns the system prompt: a `String` or an `Option<String>`, not a number.
#[agent(output = String, emits = [QuestionAnswered])]
impl Concierge {
    fn prompt(&self, _state: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }
    fn system(&self, _state: &Desk, _input: &UserInput) -> u32 {
        7
    }
    fn on_output(&self, text: String) -> QuestionAnswered {
        QuestionAnswered { text }
    }
}

fn main() {}
