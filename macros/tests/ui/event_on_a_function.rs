use openharness::prelude::*;

#[event]
fn plan_created() {}

fn main() {}
