//! Compile-fail tests for the macros (`tests/ui/*.rs`, each with the `.stderr` rustc must
//! print), and the uses they must keep accepting (`tests/ui/pass`). The `agent_*`, `handler_*`
//! and `event_enum_*` cases `include!` the planner they build on from `tests/ui/fixture/` (its
//! events and state; its handler and output; a tool), so each case holds only what it gets
//! wrong; a message pointing into a fixture shows no line number. After a deliberate change to
//! a message, `TRYBUILD=overwrite cargo test -p openharness-macros --test ui` rewrites the
//! `.stderr` files (review their diff).
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
