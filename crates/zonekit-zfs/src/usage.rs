//! The file system's view of one data zone, which allocation rules read.

/// What the file system knows of one data zone.
#[derive(Clone, Debug, Default)]
pub struct ZoneUsage {
    pub lifetime: Option<u8>,
    /// Bytes of live extents in the zone.
    pub live_bytes: u64,
    /// Blocks written (the write pointer).
    pub written_blocks: u64,
    pub full: bool,
    /// Order in which zones filled (GC takes the oldest first).
    pub filled_seq: u64,
}
