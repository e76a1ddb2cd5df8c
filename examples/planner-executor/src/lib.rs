//! Planner-executor example.
