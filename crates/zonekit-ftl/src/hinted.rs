//! The block FTL's placement policies on a random-write SSD ([`zonekit_ssd`]): what host-managed
//! placement becomes when the device keeps its own GC.
//!
//! The host writes every block in place (LBA = the block's dense id) and collects nothing.
//! Each user write is classed by the placement policy, exactly as on ZNS; on an FDP SSD the
//! class picks the placement handle the write carries, on a conventional SSD the class is
//! dropped (the device takes no hint). The device's GC is told by its own notices what a ZNS
//! FTL's GC tells the policy: a handle's unit filled ([`Placement::on_zone_full`]), a unit was
//! reclaimed with this lifespan and garbage ([`Placement::on_reclaim`]); units of a shared GC
//! write point belong to no class and are not reported. GC writes never reach the policy: the
//! device moves data by handle, not by class.
//!
//! **Folding classes onto handles.** A policy writes user data to
//! [`Placement::user_classes`] classes, numbered hot to cold. With at least as many handles,
//! class c uses handle c. With fewer, classes are folded into contiguous runs, c → ⌊c × H / U⌋
//! (U classes, H handles), so neighbouring temperatures share a handle and the hottest class
//! is never folded with the coldest; a handle's notices are reported as its lowest class's.

use zonekit_ssd::{Notice, Pid, Ssd};

use crate::placement::{BlockCtx, Placement, Reclaimed};
use crate::FtlError;

// The fold is the SSD crate's, so that the file system's lifetimes on a zoned SSD fold the
// same way.
pub use zonekit_ssd::fold_classes;

/// Per block: the logical time of its last user write and the policy's word.
#[derive(Copy, Clone, Default)]
struct BlockState {
    last_write: u32,
    policy: u32,
}

/// Counters of a hinted run (the device counts the rest).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HintedStats {
    pub user_blocks: u64,
    pub user_blocks_by_class: Vec<u64>,
    pub user_blocks_by_handle: Vec<u64>,
    /// Garbage proportion of the units device GC reclaimed, in 1 % bins (index = ⌊GP × 100⌋),
    /// shared GC units included.
    #[serde(skip)]
    pub reclaimed_gp: Vec<u64>,
}

/// A placement policy writing through an SSD's placement handles (see the module doc).
pub struct HintedFtl {
    ssd: Ssd,
    placement: Box<dyn Placement>,
    /// Class → handle (empty: no hint).
    fold: Vec<u16>,
    /// Handle → the lowest class written through it.
    handle_class: Vec<usize>,
    blocks: Vec<BlockState>,
    now: u64,
    stats: HintedStats,
}

/// A block's last write before any: the policy's `None`.
const NEW: u32 = u32::MAX;

impl HintedFtl {
    /// `ssd` must be fresh; `expected_blocks` sizes the per-block table (it grows if exceeded).
    pub fn new(mut ssd: Ssd, placement: Box<dyn Placement>, expected_blocks: usize) -> Result<HintedFtl, FtlError> {
        let user_classes = placement.user_classes().max(1);
        let handles = ssd.config().handles.len();
        let fold = fold_classes(user_classes, handles);
        // Each handle's lowest class (coldest first, so the hottest writes last); a handle no
        // class uses, or the one write point of a device without handles, reports as class 0.
        let mut handle_class = vec![0; handles.max(1)];
        for (c, &h) in fold.iter().enumerate().rev() {
            handle_class[h as usize] = c;
        }
        ssd.keep_notices();
        Ok(HintedFtl {
            ssd,
            placement,
            stats: HintedStats { user_blocks: 0, user_blocks_by_class: vec![0; user_classes], user_blocks_by_handle: vec![0; handles.max(1)], reclaimed_gp: vec![0; 101] },
            fold,
            handle_class,
            blocks: Vec::with_capacity(expected_blocks),
            now: 0,
        })
    }

    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    pub fn stats(&self) -> &HintedStats {
        &self.stats
    }

    pub fn placement(&self) -> &dyn Placement {
        self.placement.as_ref()
    }

    /// The handle each class is written through.
    pub fn fold(&self) -> &[u16] {
        &self.fold
    }

    /// Bytes of host state per block (this engine's and the policy's).
    pub fn bytes_per_block(&self) -> f64 {
        std::mem::size_of::<BlockState>() as f64 + self.placement.bytes_per_block() as f64
    }

    #[inline]
    pub fn prefetch_id(&self, id: u32) {
        if let Some(b) = self.blocks.get(id as usize) {
            zonekit_base::mem::prefetch_read(b);
        }
        self.ssd.prefetch(id as u64);
    }

    #[inline]
    pub fn prefetch_pointed(&self, id: u32) {
        self.ssd.prefetch_pointed(id as u64);
    }

    /// A user write of the block with dense id `id` (ids in order of first write), at trace
    /// time `now_us`, next written at logical time `next_write` ([`zonekit_base::NEVER`] if unknown).
    #[inline]
    pub fn write_dense(&mut self, id: u32, now_us: u64, next_write: u64) -> Result<(), FtlError> {
        if self.now >= u32::MAX as u64 {
            return Err(FtlError::Config("the FTL replays at most 2^32 - 1 user block writes".into()));
        }
        let known = self.blocks.len();
        let state = match (id as usize).cmp(&known) {
            std::cmp::Ordering::Less => self.blocks[id as usize],
            std::cmp::Ordering::Equal => {
                self.blocks.push(BlockState { last_write: NEW, policy: 0 });
                self.blocks[known]
            }
            std::cmp::Ordering::Greater => {
                return Err(FtlError::Config(format!("block id {id} skips ahead of the {known} blocks written so far (ids must come in order of first write)")))
            }
        };
        if id as u64 >= self.ssd.config().logical_blocks {
            return Err(FtlError::Config(format!("block {id} lies beyond the device's {} logical blocks", self.ssd.config().logical_blocks)));
        }
        let last = (state.last_write != NEW).then_some(state.last_write as u64);
        let ctx = BlockCtx { id, now: self.now, now_us, last_user_write: last, next_write, from_class: 0 };
        let mut word = state.policy;
        let class = self.placement.user_write(&ctx, &mut word).min(self.stats.user_blocks_by_class.len() - 1);
        let pid = self.fold.get(class).map(|&handle| Pid { group: 0, handle });
        self.ssd.write_meta(id as u64, pid).map_err(|e| FtlError::Config(format!("the SSD: {e}")))?;
        self.blocks[id as usize] = BlockState { last_write: self.now as u32, policy: word };
        self.stats.user_blocks += 1;
        self.stats.user_blocks_by_class[class] += 1;
        self.stats.user_blocks_by_handle[pid.map_or(0, |p| p.handle as usize)] += 1;
        self.now += 1;
        self.hear_device();
        Ok(())
    }

    /// Tells the policy what the device did (see the module doc).
    #[inline]
    fn hear_device(&mut self) {
        let (placement, handle_class, gp_bins) = (&mut self.placement, &self.handle_class, &mut self.stats.reclaimed_gp);
        self.ssd.take_notices(|n| match n {
            Notice::UnitFull { handle } => placement.on_zone_full(handle_class[handle as usize]),
            Notice::Reclaimed { handle, opened_at, full_at, now, garbage_proportion } => {
                gp_bins[((garbage_proportion * 100.0) as usize).min(100)] += 1;
                if let Some(h) = handle {
                    placement.on_reclaim(&Reclaimed { class: handle_class[h as usize], opened_at, full_at, now, garbage_proportion })
                }
            }
        });
    }
}
