//! The planner's deterministic fleet simulator, shared by the rollout crate's `sim` tests and its
//! benchmark: [`rng`] (SplitMix64), [`agent`] (simulated agents and their misbehaviours),
//! [`world`] (API state, faults, a configurator executing the plan in virtual time).

pub mod agent;
pub mod rng;
pub mod world;
