use openharness::prelude::*;

#[event]
pub struct ValueChanged<T> {
    pub value: T,
}

fn main() {}
