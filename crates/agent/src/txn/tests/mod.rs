//! The transaction core against the model world ([`harness`]): every rule of the agent's part
//! of docs/contract.md as a unit test ([`rules`], [`rules_recovery`]), clock jumps during the
//! probe hold ([`clock`]), and every crash point ([`crash`]).

mod clock;
mod configs;
mod crash;
mod disk;
mod harness;
mod late;
mod restore;
mod rules;
mod rules_recovery;
mod stopped;
