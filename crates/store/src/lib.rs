//! Stores for Open Harness event logs.
