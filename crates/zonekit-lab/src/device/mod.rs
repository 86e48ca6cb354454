//! A real drive's published measurements, a preset fitted to them, and every characterised
//! experiment rerun on a preset against them (issue 48).

pub mod conventional;
pub mod conventional_fit;
pub mod conventional_report;
pub mod data;
pub mod demo;
pub mod fidelity;
pub mod fidelity_report;
pub mod fit;
