//! kernel traces
