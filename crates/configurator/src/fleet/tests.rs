//! The fleet kept up to date from changes equals the fleet read afresh.
