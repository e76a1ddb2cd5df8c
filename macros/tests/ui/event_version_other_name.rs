use openharness::prelude::*;

/// Recorded under its own name: not an older `payment:taken`.
#[event]
pub struct RefundIssued {
    pub cents: u64,
}

#[event(version = 2)]
pub struct PaymentTaken {
    pub amount: f64,
}

impl Upcast for PaymentTaken {
    type Previous = RefundIssued;
    fn upcast(old: RefundIssued) -> Upcasted<Self> {
        PaymentTaken {
            amount: old.cents as f64 / 100.0,
        }
        .into()
    }
}

fn main() {}
