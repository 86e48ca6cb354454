//! The block FTL's experiments: staging a trace, the replay loop, one replay, sweeps, seed
//! 000's cloud nodes, one placement on every interface, FDP's device GC against its closed form.

pub mod cbs;
pub mod driver;
pub mod fdp_theory;
pub mod interfaces;
pub mod replay;
pub mod spec;
pub mod stage;
pub mod sweep;
