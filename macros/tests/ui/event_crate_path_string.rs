use openharness::prelude::*;

#[event(crate = "openharness")]
#[derive(Debug, Clone)]
pub struct TaskAdded {
    pub title: String,
}

fn main() {}
