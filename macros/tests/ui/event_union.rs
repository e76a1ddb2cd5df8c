use openharness::prelude::*;

#[event]
pub union BitsChanged {
    pub int: u32,
    pub float: f32,
}

fn main() {}
