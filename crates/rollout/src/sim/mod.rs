//! The planner's deterministic fleet simulator, beside the planner it proves (feature `sim`,
//! which only this crate's `sim` tests and its benchmark turn on): [`rng`] (SplitMix64),
//! [`agent`] (simulated agents and their misbehaviours), [`world`] (API state, faults, a
//! configurator executing the plan in virtual time). Pure as the planner: virtual time, seeded
//! randomness, no I/O.

pub mod agent;
pub mod rng;
pub mod world;
