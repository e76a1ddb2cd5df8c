//! Model providers for Open Harness agents.
