//! Seed 004's bcache-style cache: one run, its settings, the thesis' comparisons, every
//! interface, item-level policies over a trace.

pub mod bench;
pub mod experiment;
pub mod image;
pub mod interfaces;
pub mod reads;
pub mod run;
pub mod sim;
pub mod ssd;
pub mod trace;
