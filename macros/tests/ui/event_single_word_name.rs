use openharness::prelude::*;

#[event]
pub struct Plan {
    pub tasks: Vec<String>,
}

fn main() {}
