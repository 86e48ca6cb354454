//! Seed 003: the ZB+-tree and the copy-on-write B+-tree under YCSB-style workloads.

pub mod bench;
pub mod experiment;
pub mod image;
pub mod run;
