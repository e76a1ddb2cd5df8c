//! Compile-fail tests for the macros, and the uses they must keep accepting.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("ui/pass/*.rs");
}
