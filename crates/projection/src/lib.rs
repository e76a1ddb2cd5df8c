//! Projections of event logs into read models.
