use openharness::prelude::*;

#[event(version = 0)]
pub struct PaymentTaken {
    pub amount: f64,
}

fn main() {}
