//! `none`: no history, every block cold — ZNS-naive in the thesis' comparison (§5.3): buckets
//! simply mapped to zones, blocks placed in arrival order whatever their temperature.

use zonekit_base::policy::{PolicyInfo, Role};

use super::{Sampler, SamplerInfo};

pub const NONE: SamplerInfo =
    PolicyInfo { name: "none", summary: "no history: every block cold (ZNS-naive, §5.3)", role: Role::Baseline, params: &[], make: |_, _| Ok(Box::new(NoHistory)) };

/// Remembers nothing.
#[derive(Copy, Clone, Debug, Default)]
pub struct NoHistory;

impl Sampler for NoHistory {
    fn name(&self) -> &'static str {
        NONE.name
    }
    fn access(&mut self, _chunk: u64) {}
    fn classes(&self) -> u8 {
        1
    }
    fn class(&self, _chunk: u64) -> u8 {
        0
    }
    fn memory_bytes(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_cold() {
        let mut s = NoHistory;
        for _ in 0..3 {
            s.access(5);
        }
        assert_eq!((s.class(5), s.is_hot(5), s.classes(), s.memory_bytes()), (0, false, 1, 0));
    }
}
