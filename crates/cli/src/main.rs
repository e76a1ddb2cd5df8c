//! The `openharness` command.

fn main() {}
