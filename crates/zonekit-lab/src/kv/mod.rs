//! Seed 001: RocksDB's db_bench on the zoned file system.

pub mod bench;
pub mod config;
pub mod db_bench;
pub mod report;
