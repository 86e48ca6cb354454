//! Memory helpers for the large tables engines hold: huge-page backing, software prefetch, and
//! the machine's memory size, against which a size is refused before its tables are allocated.

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

/// The machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`), or `None` where it
/// cannot be read (not Linux, no `/proc`).
///
/// Size checks compare what a request's tables would take with it, so that an emulated device
/// of billions of zones is refused with a message rather than aborted by the allocator. It is
/// an upper bound, not a promise: other processes, a `ulimit -v` or a cgroup may leave less.
pub fn total_memory_bytes() -> Option<u64> {
    mem_total_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// The machine's memory in bytes if `needed_bytes` is more than it, else `None` (also where
/// the memory cannot be read): the test every size check makes before allocating.
pub fn beyond_memory(needed_bytes: u64) -> Option<u64> {
    total_memory_bytes().filter(|&total| needed_bytes > total)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes (the file gives kB).
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_bytes() {
        let text = "MemTotal:       24563420 kB\nMemFree:         1000000 kB\n";
        assert_eq!(mem_total_bytes(text), Some(24_563_420 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: 18446744073709551615 kB\n"), None);
        #[cfg(target_os = "linux")]
        assert!(total_memory_bytes().is_some_and(|b| b > 1 << 20));
    }
}
