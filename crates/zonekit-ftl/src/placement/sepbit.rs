//! SepBIT (Wang et al., "Separating Data via Block Invalidation Time Inference for Write
//! Amplification Reduction in Log-Structured Storage", FAST'22): infer a block's invalidation
//! time from its previous lifetime. Follows the authors' simulator (fallfish/sepbit,
//! `trace_replay/src/main/java/gcsimulator/placement/SepBIT.java`) where the paper leaves
//! details open; with the unbounded log and `cb-sepbit` our WAF equals the simulator's (see
//! docs/results/seed-000.md). Times are logical: user block writes.
//!
//! - ℓ is the mean lifespan of class-1 zones, recomputed after every 16 reclaimed ones from
//!   those 16 (a batch, not a sliding window), +∞ until then. A lifespan runs from the zone's
//!   creation to its reclaim, and the simulator creates a zone when the previous one of its
//!   class is sealed (the first ones at the start), not at its first write.
//! - A user write goes to class 1 when the block's previous lifetime (user writes since its
//!   last one) is below min(ℓ, F), else (and for new blocks) to class 2. F is the length of the
//!   simulator's FIFO of recent user writes: it grows by one a write and is trimmed to
//!   min(V, ℓ), by at most two a write, so after ℓ rises the bound follows one write at a time.
//!   V is the simulator's count of valid blocks: the blocks written before this write plus the
//!   invalid blocks of open zones (it counts a zone's garbage when the zone is sealed).
//! - GC writes: from class 1 to class 3; the others by age (user writes since the block's last
//!   one, not counting it): the paper's 6-class variant (the simulator with six open segments)
//!   [0, 4ℓ) → 4, [4ℓ, 16ℓ) → 5, ≥ 16ℓ → 6; the thesis' 7-class variant [0, 4ℓ) → 4,
//!   [4ℓ, 8ℓ) → 5, [8ℓ, 16ℓ) → 6, ≥ 16ℓ → 7 (the simulator with seven would use 64ℓ for the
//!   last step instead).
//!
//! Classes are 1-based here, 0-based in code.

use std::collections::HashMap;

use zonekit_base::policy::{PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement, Reclaimed};

pub const SEPBIT: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "sepbit",
    summary: "SepBIT (FAST'22), the thesis' 7-class variant",
    role: Role::Baseline,
    params: &[],
    make: |_, _| Ok(Box::new(SepBit::new(Variant::SevenClass))),
};
pub const SEPBIT6: PolicyInfo<MakePlacement> =
    PolicyInfo { name: "sepbit6", summary: "SepBIT as the paper has it (6 classes)", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(SepBit::new(Variant::SixClass))) };

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    SevenClass,
    SixClass,
}

/// Reclaimed class-1 zones per update of ℓ.
const BATCH: u32 = 16;

pub struct SepBit {
    variant: Variant,
    /// ℓ, +∞ before the first batch.
    ell: f64,
    /// ℓ as the integer bounds the per-write tests use (see [`Bounds`]).
    bounds: Bounds,
    batch_lifespan_sum: u64,
    batch_len: u32,
    /// Length of the FIFO of recent user writes (the simulator keeps the writes themselves; only
    /// the length matters, because a block is in it exactly when its last write is among the
    /// newest `fifo_len`).
    fifo_len: u64,
    /// Blocks written so far.
    distinct_blocks: u64,
    /// Per class: zones of it that have filled (the open one's number), and the invalid blocks
    /// in its open zone. A block's policy word names the zone of its current copy (see
    /// [`ZoneTag`]), so a rewrite knows whether it invalidates a block of an open zone.
    zones_filled: Vec<u32>,
    open_invalid: Vec<u64>,
    /// The sum of `open_invalid`.
    open_invalid_total: u64,
    /// Class-1 zones by the engine's opening time: when the simulator created them (user
    /// writes before the one that sealed the previous class-1 zone, plus one).
    class1_created: HashMap<u64, u64>,
    /// When the next class-1 zone was created, until its first write opens it.
    class1_next_created: Option<u64>,
    /// Logical time of the latest user write (class-1 zones fill only in user writes).
    last_user_write: u64,
}

/// The policy word: the class of the block's current copy (low 3 bits) and that class's zone
/// number when it was written (29 bits, compared modulo 2^29: only "is it the open one" is
/// asked, and a class fills 2^29 zones long after a block's zone was sealed).
struct ZoneTag;

impl ZoneTag {
    const CLASS_BITS: u32 = 3;
    const ZONE_MASK: u32 = u32::MAX >> Self::CLASS_BITS;

    fn word(class: usize, zone: u32) -> u32 {
        (zone & Self::ZONE_MASK) << Self::CLASS_BITS | class as u32
    }

    fn class(word: u32) -> usize {
        (word & ((1 << Self::CLASS_BITS) - 1)) as usize
    }

    fn zone(word: u32) -> u32 {
        word >> Self::CLASS_BITS
    }
}

const _: () = assert!(7 <= 1 << ZoneTag::CLASS_BITS, "the classes fit the tag");

/// ℓ in integers. Lifetimes, ages and the FIFO's length are integers below 2^53, so comparing
/// them with these is exactly comparing them with ℓ in floating point, as the simulator does,
/// without a conversion on every write (the comparisons sat on the path of every user write).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Bounds {
    /// x < ℓ ⟺ x < `below` (⌈ℓ⌉; `u64::MAX` for +∞).
    below: u64,
    /// x > ℓ ⟺ x > `above` (⌊ℓ⌋; `u64::MAX` for +∞).
    above: u64,
    /// The GC age classes' bounds: age < k·ℓ ⟺ age < ⌈k·ℓ⌉, k = 4, 8, 16 (seven classes) or
    /// 4, 16 (six; the third bound is never reached).
    gc: [u64; 3],
}

impl Bounds {
    fn of(ell: f64, variant: Variant) -> Bounds {
        let ceil = |x: f64| if x.is_finite() { x.ceil() as u64 } else { u64::MAX };
        let floor = |x: f64| if x.is_finite() { x.floor() as u64 } else { u64::MAX };
        let gc = match variant {
            Variant::SevenClass => [ceil(4.0 * ell), ceil(8.0 * ell), ceil(16.0 * ell)],
            Variant::SixClass => [ceil(4.0 * ell), ceil(16.0 * ell), u64::MAX],
        };
        Bounds { below: ceil(ell), above: floor(ell), gc }
    }
}

impl SepBit {
    pub fn new(variant: Variant) -> SepBit {
        let classes = match variant {
            Variant::SevenClass => 7,
            Variant::SixClass => 6,
        };
        SepBit {
            variant,
            ell: f64::INFINITY,
            bounds: Bounds::of(f64::INFINITY, variant),
            batch_lifespan_sum: 0,
            batch_len: 0,
            fifo_len: 0,
            distinct_blocks: 0,
            zones_filled: vec![0; classes],
            open_invalid: vec![0; classes],
            open_invalid_total: 0,
            class1_created: HashMap::new(),
            class1_next_created: Some(0),
            last_user_write: 0,
        }
    }

    /// The word of a block written to `class` now.
    fn tag(&self, class: usize) -> u32 {
        ZoneTag::word(class, self.zones_filled[class])
    }

    /// The class of a GC write: by the class it leaves, then by age.
    fn gc_class(&self, b: &BlockCtx) -> usize {
        if b.from_class == 0 {
            return 2;
        }
        // User writes since the block's, not counting its own (`now` counts the writes before
        // the next user write).
        let age = b.now - b.last_user_write.unwrap_or(0) - 1;
        // Before the first ℓ every bound is infinite: class 4. Counted, not branched on (see
        // `user_write`).
        let older = self.bounds.gc.iter().filter(|&&bound| age >= bound).count();
        3 + older
    }
}

impl Placement for SepBit {
    fn name(&self) -> String {
        match self.variant {
            Variant::SevenClass => SEPBIT.name.into(),
            Variant::SixClass => SEPBIT6.name.into(),
        }
    }
    fn classes(&self) -> usize {
        self.zones_filled.len()
    }
    /// Classes 1 and 2 (short and long previous lifetime); the rest take GC writes.
    fn user_classes(&self) -> usize {
        2
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        // Written without branches on the block's own history: which way a write goes is data,
        // and a mispredicted branch cost more than computing both sides.
        let rewrite = b.last_user_write.is_some();
        let old = ZoneTag::class(*word);
        let in_open_zone = rewrite & (ZoneTag::zone(*word) == self.zones_filled[old] & ZoneTag::ZONE_MASK);
        self.open_invalid[old] += in_open_zone as u64;
        self.open_invalid_total += in_open_zone as u64;
        // Below min(ℓ, F).
        let lifetime = b.now - b.last_user_write.unwrap_or(0);
        let short = rewrite & (lifetime < self.bounds.below) & (lifetime < self.fifo_len);
        let class = !short as usize;
        // The simulator's valid count: it has not counted this write yet, and counts the old
        // copy (if any) as garbage only once its zone is sealed.
        let valid = self.distinct_blocks - rewrite as u64 + self.open_invalid_total;
        self.fifo_len += 1;
        // Above min(V, ℓ).
        if self.fifo_len > valid || self.fifo_len > self.bounds.above {
            self.fifo_len -= 1;
            if self.fifo_len > self.bounds.above {
                self.fifo_len -= 1;
            }
        }
        self.distinct_blocks += !rewrite as u64;
        *word = self.tag(class);
        // This write opens a class-1 zone. The rare condition is tested first: the class is data.
        if self.class1_next_created.is_some() && class == 0 {
            let created = self.class1_next_created.take().expect("tested");
            self.class1_created.insert(b.now, created);
        }
        self.last_user_write = b.now;
        class
    }
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let class = self.gc_class(b);
        *word = self.tag(class);
        class
    }
    fn on_zone_full(&mut self, class: usize) {
        self.zones_filled[class] = self.zones_filled[class].wrapping_add(1);
        self.open_invalid_total -= std::mem::take(&mut self.open_invalid[class]);
        if class == 0 {
            self.class1_next_created = Some(self.last_user_write + 1);
        }
    }
    fn on_reclaim(&mut self, z: &Reclaimed) {
        if z.class == 0 {
            let created = self.class1_created.remove(&z.opened_at).unwrap_or(z.opened_at);
            self.batch_lifespan_sum += z.now - created;
            self.batch_len += 1;
            if self.batch_len == BATCH {
                self.ell = self.batch_lifespan_sum as f64 / BATCH as f64;
                self.bounds = Bounds::of(self.ell, self.variant);
                self.batch_lifespan_sum = 0;
                self.batch_len = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(p: &mut SepBit, now: u64, last: Option<u64>) -> usize {
        let b = BlockCtx { id: 0, now, now_us: now, last_user_write: last, next_write: zonekit_base::NEVER, from_class: 0 };
        p.user_write(&b, &mut 0)
    }

    fn reclaim(p: &mut SepBit, now: u64, lifespan: u64) {
        p.on_reclaim(&Reclaimed { class: 0, opened_at: now - lifespan, full_at: now, now, garbage_proportion: 1.0 });
    }

    #[test]
    fn ell_is_the_mean_of_each_batch_of_sixteen() {
        let mut p = SepBit::new(Variant::SixClass);
        for i in 0..15 {
            reclaim(&mut p, 10_000 + i, 100);
        }
        assert_eq!(p.ell, f64::INFINITY, "no ℓ before sixteen reclaims");
        reclaim(&mut p, 20_000, 260);
        assert_eq!(p.ell, (15.0 * 100.0 + 260.0) / 16.0);
        for i in 0..15 {
            reclaim(&mut p, 30_000 + i, 1_000);
        }
        assert_eq!(p.ell, 110.0, "ℓ holds until the next batch is complete");
        reclaim(&mut p, 40_000, 1_000);
        assert_eq!(p.ell, 1_000.0, "the next batch replaces it whole");
    }

    #[test]
    fn the_fifo_bounds_short_lifetimes_and_follows_a_rising_ell() {
        let mut p = SepBit::new(Variant::SixClass);
        // New blocks: before ℓ the FIFO holds as many writes as there were blocks before.
        for now in 0..20 {
            assert_eq!(user(&mut p, now, None), 1);
        }
        assert_eq!(p.fifo_len, 19);
        assert_eq!(user(&mut p, 20, Some(1)), 1, "lifetime 19 is not below the FIFO's 19");
        assert_eq!(user(&mut p, 21, Some(3)), 0);
        // ℓ = 4: the FIFO shrinks by one a write down to ℓ.
        for i in 0..16 {
            reclaim(&mut p, 100 + i, 4);
        }
        for now in 22..60 {
            user(&mut p, now, Some(now - 1));
        }
        assert_eq!(p.fifo_len, 4);
        assert_eq!(user(&mut p, 60, Some(56)), 1, "lifetime 4 is not below ℓ = 4");
        // ℓ = 100: the FIFO grows back one write at a time, and bounds the test meanwhile.
        for i in 0..16 {
            reclaim(&mut p, 1_000 + i, 100);
        }
        assert_eq!(user(&mut p, 61, Some(51)), 1, "lifetime 10 is below ℓ but not below the FIFO's 4");
        for now in 62..70 {
            user(&mut p, now, Some(now - 1));
        }
        assert_eq!(p.fifo_len, 13);
        assert_eq!(user(&mut p, 70, Some(60)), 0);
    }

    fn user_word(p: &mut SepBit, now: u64, last: Option<u64>, word: &mut u32) -> usize {
        let b = BlockCtx { id: 0, now, now_us: now, last_user_write: last, next_write: zonekit_base::NEVER, from_class: 0 };
        p.user_write(&b, word)
    }

    #[test]
    fn overwritten_blocks_of_open_zones_count_as_valid_until_the_zone_is_sealed() {
        let mut p = SepBit::new(Variant::SixClass);
        let (mut a, mut b) = (0, 0);
        user_word(&mut p, 0, None, &mut a);
        user_word(&mut p, 1, None, &mut b);
        assert_eq!(user_word(&mut p, 2, Some(0), &mut a), 1, "lifetime 2, FIFO 1");
        assert_eq!(user_word(&mut p, 3, Some(1), &mut b), 1, "lifetime 2, FIFO 2");
        // Two blocks, but the overwritten copies in class 2's open zone count: the FIFO holds 3.
        assert_eq!(p.fifo_len, 3);
        assert_eq!(user_word(&mut p, 4, Some(2), &mut a), 0, "lifetime 2 < FIFO 3");
        assert_eq!(p.open_invalid, [0, 3, 0, 0, 0, 0]);
        // Once class 2's zone is sealed the simulator counts its garbage as such, and b's copy
        // there is not counted when b is overwritten; a's copy in class 1's open zone is.
        p.on_zone_full(1);
        assert_eq!(p.open_invalid, [0; 6]);
        user_word(&mut p, 5, Some(3), &mut b);
        user_word(&mut p, 6, Some(4), &mut a);
        assert_eq!(p.open_invalid, [1, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn lifespans_count_from_when_the_simulator_creates_the_zone() {
        let mut p = SepBit::new(Variant::SixClass);
        for now in 0..5 {
            user(&mut p, now, None);
        }
        // The first class-1 write opens the first zone, which the simulator created at 0.
        assert_eq!(user(&mut p, 5, Some(4)), 0);
        p.on_reclaim(&Reclaimed { class: 0, opened_at: 5, full_at: 50, now: 100, garbage_proportion: 1.0 });
        assert_eq!(p.batch_lifespan_sum, 100);
        // The next one exists from the write that sealed its predecessor on.
        user(&mut p, 50, None);
        p.on_zone_full(0);
        assert_eq!(user(&mut p, 60, Some(58)), 0);
        p.on_reclaim(&Reclaimed { class: 0, opened_at: 60, full_at: 150, now: 200, garbage_proportion: 1.0 });
        assert_eq!(p.batch_lifespan_sum, 100 + 149);
        assert!(p.class1_created.is_empty());
    }

    #[test]
    fn the_integer_bounds_decide_as_floating_point_comparisons_with_ell_do() {
        for ell in [0.0, 1.0, 4.0, 97.5, 97.0625, 110.0, 1e9 + 0.5, f64::INFINITY] {
            for variant in [Variant::SixClass, Variant::SevenClass] {
                let b = Bounds::of(ell, variant);
                let middle = if variant == Variant::SixClass { 16.0 } else { 8.0 };
                let around = |c: f64| if c.is_finite() { (c as u64).saturating_sub(3)..(c as u64).saturating_add(3) } else { u64::MAX - 3..u64::MAX };
                for x in around(ell).chain(around(4.0 * ell)).chain(around(middle * ell)).chain(around(16.0 * ell)).chain(0..3) {
                    let f = x as f64;
                    assert_eq!(x < b.below, f < ell, "x {x} < ℓ {ell}");
                    assert_eq!(x > b.above, f > ell, "x {x} > ℓ {ell}");
                    // Six classes have two age bounds; the third is never reached.
                    let last = variant == Variant::SixClass || f < 16.0 * ell;
                    assert_eq!([x < b.gc[0], x < b.gc[1], x < b.gc[2]], [f < 4.0 * ell, f < middle * ell, last], "age {x}, ℓ {ell}");
                }
            }
        }
    }

    #[test]
    fn gc_classes_by_age_in_multiples_of_four_ell() {
        let mut p = SepBit::new(Variant::SixClass);
        let gc = |p: &mut SepBit, from_class: usize, age: u64| {
            // `age` user writes since the block's own.
            let b = BlockCtx { id: 0, now: 10_000, now_us: 0, last_user_write: Some(10_000 - age - 1), next_write: zonekit_base::NEVER, from_class };
            p.gc_write(&b, &mut 0)
        };
        assert_eq!(gc(&mut p, 1, 9_000), 3, "before ℓ, every age is young");
        for i in 0..16 {
            reclaim(&mut p, 100 + i, 10);
        }
        assert_eq!(gc(&mut p, 0, 9_000), 2, "out of class 1, whatever the age");
        assert_eq!([gc(&mut p, 1, 39), gc(&mut p, 1, 40), gc(&mut p, 1, 159), gc(&mut p, 1, 160)], [3, 4, 4, 5]);
    }
}
