//! What every zone-based engine (block FTL, file system, cache, tree) keeps about its zones and
//! how it chooses what to reclaim, so there is one pattern to learn, not one per engine.
//!
//! - [`ZoneInfo`]: one zone's state, fill, live data and times, in the engine's own unit.
//! - [`ZonePool`]: free zones handed out least-worn first, and the open zone of each class,
//!   within the device's open/active limits.
//! - [`victim`]: the [`Victim`] trait and one file per GC victim policy (Greedy, Cost-Benefit,
//!   CBE, d-choices, live-data levels), registered in [`victim::VICTIMS`].
//!
//! It sits above `zonekit-base` and below the engines; it never touches a device: engines do
//! the I/O and tell the pool what happened.
//!
//! ```
//! use zonekit_pool::{victim, ZonePool};
//!
//! let mut pool = ZonePool::new(2, [(0, 0), (1, 3), (2, 1)]);
//! assert_eq!(pool.open(0), Some(0)); // least worn first
//! assert_eq!(pool.open(1), Some(2));
//! assert_eq!(pool.current(0), Some(0));
//! let greedy = victim::create("greedy", 1).unwrap();
//! assert_eq!(greedy.name(), "greedy");
//! ```

pub mod victim;
mod zone;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub use victim::{Victim, VictimCtx};
pub use zone::{ZoneInfo, ZoneUse};

/// Free zones, fewest resets first (wear-aware allocation), and one open zone per class.
#[derive(Clone, Debug)]
pub struct ZonePool {
    free: BinaryHeap<Reverse<(u64, u32)>>,
    open: Vec<Option<u32>>,
}

impl ZonePool {
    /// A pool of `classes` open-zone slots over the free zones `(zone, resets so far)`.
    pub fn new(classes: usize, free: impl IntoIterator<Item = (u32, u64)>) -> ZonePool {
        ZonePool { free: free.into_iter().map(|(z, resets)| Reverse((resets, z))).collect(), open: vec![None; classes] }
    }

    pub fn classes(&self) -> usize {
        self.open.len()
    }

    pub fn free_zones(&self) -> usize {
        self.free.len()
    }

    /// The open zone of `class`, if any.
    #[inline]
    pub fn current(&self, class: usize) -> Option<u32> {
        self.open[class]
    }

    /// Opens the least-worn free zone for `class` (`None` when no zone is free).
    pub fn open(&mut self, class: usize) -> Option<u32> {
        let Reverse((_, z)) = self.free.pop()?;
        self.open[class] = Some(z);
        Some(z)
    }

    /// The open zone of `class` is full: the class has none until [`ZonePool::open`].
    pub fn close(&mut self, class: usize) {
        self.open[class] = None;
    }

    /// A reset zone comes back with its new reset count.
    pub fn release(&mut self, zone: u32, resets: u64) {
        self.free.push(Reverse((resets, zone)));
    }

    /// The open zones, by class.
    pub fn open_zones(&self) -> &[Option<u32>] {
        &self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_least_worn_zones_and_takes_them_back() {
        let mut pool = ZonePool::new(1, [(5, 2), (6, 0), (7, 1)]);
        assert_eq!(pool.open(0), Some(6));
        pool.close(0);
        assert_eq!(pool.current(0), None);
        pool.release(6, 5);
        assert_eq!((pool.open(0), pool.open(0), pool.open(0), pool.open(0)), (Some(7), Some(5), Some(6), None));
    }
}
