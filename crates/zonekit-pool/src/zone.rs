//! Per-zone bookkeeping, as an engine keeps it and as victim policies see it.

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ZoneUse {
    #[default]
    Free,
    Open,
    Full,
}

/// What an engine knows about one zone. `written` and `valid` are in the engine's own unit
/// (blocks for the block FTL, bytes for the file system): policies use only their ratio and
/// their order. Times are logical (the engine's clock, e.g. user block writes) unless `_us`.
#[derive(Copy, Clone, Debug, Default)]
pub struct ZoneInfo {
    pub state: ZoneUse,
    /// The placement class (or lifetime) whose data the zone holds.
    pub class: u8,
    /// Units appended since the zone was opened.
    pub written: u64,
    /// Of those, units still live.
    pub valid: u64,
    pub opened_at: u64,
    /// When the zone became full (the file system: the order in which zones filled).
    pub full_at: u64,
    pub last_append: u64,
    pub last_append_us: u64,
    pub last_invalidate: u64,
    /// Resets of this zone so far (wear).
    pub resets: u64,
}

impl ZoneInfo {
    pub fn garbage_proportion(&self) -> f64 {
        if self.written == 0 {
            0.0
        } else {
            (self.written - self.valid) as f64 / self.written as f64
        }
    }
}
