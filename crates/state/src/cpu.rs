//! What this x86-64 CPU says of itself, asked once a process: the two CPUID leaves that the
//! instruction sets of [`crate::Level`] and the backends' choices need, and nothing more.
//!
//! On a virtual machine every CPUID instruction traps to the hypervisor, at a cost that a
//! short search notices (figures in docs/benchmarks.md). Leaves 1 and 7 (and XCR0, which
//! does not trap) answer every question asked here; the vendor string (leaf 0) is not needed
//! (see [`Cpu::fast_bit_gather`]).

use std::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
use std::sync::OnceLock;

/// Leaf 1, ECX: POPCNT.
const POPCNT: u32 = 1 << 23;
/// Leaf 1, ECX: XSAVE (which implies that the basic leaves go up to 0xD, so leaf 7 exists).
const XSAVE: u32 = 1 << 26;
/// Leaf 1, ECX: the OS has enabled XSAVE and XGETBV (OSXSAVE).
const OSXSAVE: u32 = 1 << 27;
/// Leaf 1, ECX: AVX.
const AVX: u32 = 1 << 28;
/// Leaf 7, EBX: BMI1, AVX2 and BMI2.
const AVX2_BMI: u32 = 1 << 3 | 1 << 5 | 1 << 8;
/// Leaf 7, EBX: AVX-512 F, DQ, CD, BW and VL.
const AVX512: u32 = 1 << 16 | 1 << 17 | 1 << 28 | 1 << 30 | 1 << 31;
/// XCR0: the OS saves the SSE and AVX registers (XMM, upper YMM).
const XCR0_YMM: u64 = 0b110;
/// XCR0: the OS also saves the AVX-512 registers (opmasks, upper ZMM, ZMM16-31).
const XCR0_ZMM: u64 = 0b1110_0000 | XCR0_YMM;

/// The answers of CPUID leaves 1 and 7 and of XGETBV that this crate uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cpu {
    /// Leaf 1, ECX: feature flags.
    leaf1_ecx: u32,
    /// Leaf 1, EAX: the processor's signature (family, model, stepping).
    signature: u32,
    /// Leaf 7, sub-leaf 0, EBX: feature flags (0 when the CPU has no leaf 7).
    leaf7_ebx: u32,
    /// XCR0: the register state the OS saves (0 without OSXSAVE).
    xcr0: u64,
}

impl Cpu {
    /// This CPU, asked on the first call only.
    pub(crate) fn get() -> Cpu {
        static CPU: OnceLock<Cpu> = OnceLock::new();
        *CPU.get_or_init(Cpu::ask)
    }

    /// Asks the CPU: two CPUID instructions (one where leaf 7 cannot exist) and one XGETBV.
    fn ask() -> Cpu {
        // SAFETY: CPUID exists on every x86-64 CPU, and leaf 1 on every one; leaf 7 is read
        // only where leaf 0xD exists (XSAVE), so the CPU answers it rather than repeating its
        // highest leaf. (Recent Rust makes these intrinsics safe to call.)
        #[allow(unused_unsafe)]
        let leaf1 = unsafe { __cpuid(1) };
        let xsave = leaf1.ecx & XSAVE != 0;
        // SAFETY: as above.
        #[allow(unused_unsafe)]
        let leaf7_ebx = if xsave { unsafe { __cpuid_count(7, 0) }.ebx } else { 0 };
        let xcr0 = if leaf1.ecx & OSXSAVE != 0 { xcr0() } else { 0 };
        Cpu { leaf1_ecx: leaf1.ecx, signature: leaf1.eax, leaf7_ebx, xcr0 }
    }

    /// True when code compiled for [`crate::Level::Avx2`] (AVX2, BMI1, BMI2, POPCNT) runs
    /// here: the CPU has the instructions and the OS saves the YMM registers.
    pub(crate) fn has_avx2_level(self) -> bool {
        let leaf1 = POPCNT | OSXSAVE | AVX;
        self.leaf1_ecx & leaf1 == leaf1
            && self.leaf7_ebx & AVX2_BMI == AVX2_BMI
            && self.xcr0 & XCR0_YMM == XCR0_YMM
    }

    /// True when code compiled for [`crate::Level::Avx512`] runs here: that of
    /// [`Cpu::has_avx2_level`], AVX-512 F, CD, BW, DQ and VL, and the OS saves the ZMM and
    /// opmask registers.
    pub(crate) fn has_avx512_level(self) -> bool {
        self.has_avx2_level() && self.leaf7_ebx & AVX512 == AVX512 && self.xcr0 & XCR0_ZMM == XCR0_ZMM
    }

    /// True when BMI2's `pext` and `pdep` run fast (a few cycles) on this CPU: see
    /// [`fast_bit_gather_of`].
    pub(crate) fn fast_bit_gather(self) -> bool {
        fast_bit_gather_of(self.signature)
    }
}

/// True unless a CPU of this signature (CPUID leaf 1, EAX) runs `pext` and `pdep` in
/// microcode, up to hundreds of cycles: AMD's before Zen 3, and Hygon's (families 0x15 to
/// 0x18; BMI2 came to AMD in family 0x15, Zen 3 is 0x19). No other vendor's x86-64 CPUs use
/// those families (Intel's are 6, 0xF, 0x12 and 0x13), so the family alone tells, without the
/// vendor string (one more CPUID). A wrong answer costs speed only: both ways give the same
/// results.
pub(crate) fn fast_bit_gather_of(signature: u32) -> bool {
    !(0x15..=0x18).contains(&family(signature))
}

/// The family of a CPU signature (CPUID leaf 1, EAX): the base family, plus the extended one
/// where the base is 0xF.
fn family(signature: u32) -> u32 {
    let base = (signature >> 8) & 0xF;
    if base == 0xF {
        base + ((signature >> 20) & 0xFF)
    } else {
        base
    }
}

/// XCR0, the register state the OS saves.
fn xcr0() -> u64 {
    // SAFETY: only called when CPUID says OSXSAVE: the CPU has XSAVE (the feature the
    // intrinsic is compiled for) and the OS has enabled XGETBV; register 0 (XCR0) always
    // exists where XGETBV does.
    unsafe { _xgetbv(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_once_and_answers_the_same() {
        assert_eq!(Cpu::get(), Cpu::ask());
    }

    #[test]
    fn bit_gather_is_slow_only_on_amd_and_hygon_before_zen_3() {
        for (signature, fast, cpu) in [
            (0x0008_06F8, true, "Intel Sapphire Rapids"),
            (0x000C_06F2, true, "Intel Emerald Rapids"),
            (0x0009_06EA, true, "Intel Coffee Lake"),
            (0x0060_0F12, false, "AMD Bulldozer (family 0x15)"),
            (0x0066_0F01, false, "AMD Excavator (family 0x15)"),
            (0x0080_0F11, false, "AMD Zen (family 0x17)"),
            (0x0083_0F10, false, "AMD Zen 2 (family 0x17)"),
            (0x0090_0F02, false, "Hygon Dhyana (family 0x18)"),
            (0x00A2_0F10, true, "AMD Zen 3 (family 0x19)"),
            (0x00A6_0F12, true, "AMD Zen 4 (family 0x19)"),
            (0x00B4_0F40, true, "AMD Zen 5 (family 0x1A)"),
        ] {
            assert_eq!(fast_bit_gather_of(signature), fast, "{cpu}");
        }
    }

    #[test]
    fn the_family_rule_agrees_with_the_vendor_rule_on_this_cpu() {
        // SAFETY: leaf 0 exists on every x86-64 CPU.
        #[allow(unused_unsafe)]
        let v = unsafe { __cpuid(0) };
        let vendor = [v.ebx.to_le_bytes(), v.edx.to_le_bytes(), v.ecx.to_le_bytes()].concat();
        let cpu = Cpu::get();
        let family = family(cpu.signature);
        // The rule by vendor: slow on AMD's and Hygon's CPUs before Zen 3 (family 0x19). The two
        // need agree only where BMI2 exists (leaf 7, EBX bit 8).
        let by_vendor = (vendor != b"AuthenticAMD" && vendor != b"HygonGenuine") || family >= 0x19;
        if cpu.leaf7_ebx & 1 << 8 != 0 {
            assert_eq!(cpu.fast_bit_gather(), by_vendor);
        }
    }
}
