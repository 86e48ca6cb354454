//! Memory helpers for the large tables engines hold: huge-page backing and software prefetch.

/// A vector of `n` copies of `value` whose memory is backed by transparent huge pages where
/// the kernel offers them (advised before first touch). Large tables accessed at random (block
/// maps, FTL state) otherwise pay a TLB miss on almost every access.
pub fn huge_vec<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge_pages(&v);
    v.resize(n, value);
    v
}

/// Advises huge pages for a vector's allocated (not yet touched) capacity.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (v.as_ptr() as usize).div_ceil(HUGE) * HUGE;
        let end = (v.as_ptr() as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside our own allocation; madvise only changes how the
            // kernel backs it, never its contents or validity. Failure is harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Asks the CPU to bring `*t`'s cache line in (a no-op where not supported).
#[inline(always)]
pub fn prefetch_read<T>(t: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, even on an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(t as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = t;
}
