//! Software prefetch: the only code that names the intrinsic.

/// Asks the CPU to bring the cache line holding `*p` into all cache levels. A hint: never
/// faults, does nothing on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline, and a prefetch of any address (even invalid)
    // never faults; nothing is read from Rust's point of view.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
