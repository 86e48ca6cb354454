//! YCSB's request chooser for the C++ YCSB-C driver (`plugin/ycsb_c.cc`): the driver draws
//! record numbers from the same scrambled zipfian the synthetic workloads use
//! ([`zonekit_trace::synth::ycsb::ScrambledZipfian`]), so a captured stream and a generated one
//! differ by the stack under them, not by the key chooser.

use zonekit_base::Rng;
use zonekit_trace::synth::ycsb::ScrambledZipfian;

/// One reader thread's chooser (not shared between threads).
pub struct ZkYcsbZipfian {
    zipfian: ScrambledZipfian,
    rng: Rng,
}

/// A chooser over records `0..records` (null if `records` is 0), seeded with `seed`.
#[no_mangle]
pub extern "C" fn zk_ycsb_zipfian_new(records: u64, seed: u64) -> *mut ZkYcsbZipfian {
    if records == 0 {
        return std::ptr::null_mut();
    }
    Box::into_raw(Box::new(ZkYcsbZipfian { zipfian: ScrambledZipfian::new(0, records - 1), rng: Rng::new(seed) }))
}

/// The next record number.
#[no_mangle]
pub unsafe extern "C" fn zk_ycsb_zipfian_next(z: *mut ZkYcsbZipfian) -> u64 {
    // SAFETY: a live pointer from zk_ycsb_zipfian_new, used by one thread.
    let z = unsafe { &mut *z };
    z.zipfian.next(&mut z.rng)
}

#[no_mangle]
pub unsafe extern "C" fn zk_ycsb_zipfian_free(z: *mut ZkYcsbZipfian) {
    if !z.is_null() {
        // SAFETY: from zk_ycsb_zipfian_new, freed once.
        drop(unsafe { Box::from_raw(z) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_what_the_synthetic_workloads_draw() {
        let z = zk_ycsb_zipfian_new(1000, 7);
        let (mut direct, mut rng) = (ScrambledZipfian::new(0, 999), Rng::new(7));
        for _ in 0..1000 {
            // SAFETY: z is live until freed below.
            let got = unsafe { zk_ycsb_zipfian_next(z) };
            assert_eq!(got, direct.next(&mut rng));
            assert!(got < 1000);
        }
        // SAFETY: freed once.
        unsafe { zk_ycsb_zipfian_free(z) };
        assert!(zk_ycsb_zipfian_new(0, 1).is_null());
    }
}
