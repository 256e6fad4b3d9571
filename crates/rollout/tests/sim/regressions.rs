//! Named regression scenarios, one per rule of ROLLOUT.md.
