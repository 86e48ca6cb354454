//! Per-zone bookkeeping of the FTL.

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ZoneUse {
    #[default]
    Free,
    Open,
    Full,
}

/// What the FTL knows about one zone. Times are logical (user block writes) unless `_us`.
#[derive(Copy, Clone, Debug, Default)]
pub struct ZoneInfo {
    pub state: ZoneUse,
    pub class: u8,
    /// Blocks appended since the zone was opened.
    pub written: u32,
    /// Of those, blocks still mapped.
    pub valid: u32,
    pub opened_at: u64,
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
