use openharness::prelude::*;

/// Version 2, with nothing that reads version 1.
#[event(version = 2)]
pub struct PaymentTaken {
    pub amount: f64,
}

fn main() {}
