use openharness::prelude::*;

#[event("payment:taken", version = 1)]
pub struct PaymentTakenV1 {
    pub cents: u64,
}

/// Version 3 upcast straight from version 1: version 2 is missing.
#[event(version = 3)]
pub struct PaymentTaken {
    pub amount: f64,
}

impl Upcast for PaymentTaken {
    type Previous = PaymentTakenV1;
    fn upcast(old: PaymentTakenV1) -> Upcasted<Self> {
        PaymentTaken {
            amount: old.cents as f64 / 100.0,
        }
        .into()
    }
}

fn main() {}
