//! Seed 002: the open-channel FTLs, the thesis' workloads and its timing fit.

pub mod bench;
pub mod experiment;
pub mod figure_data;
pub mod fit;
pub mod run;
pub mod workload;
