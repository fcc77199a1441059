//! Runs the search kernels compiled for the rules' instruction set.
//!
//! Each kernel of [`crate::kernels`] is `#[inline(always)]` and generic over the rules; here it
//! is instantiated as is (portable) and inside a `#[target_feature]` function for AVX2, so that
//! the SIMD helpers of a backend inline into it. Rules that exist only with a SIMD backend
//! ([`Rules::SIMD_ONLY`]) get no portable copy. The choice is made once per task (a chunk or a
//! shard), never per board.
//!
//! An AVX-512 CPU runs the AVX2 copy (it has every instruction that copy uses), with one
//! exception: the kernels that canonicalise (`expand`, `direct`) have an AVX-512 copy for
//! 128-bit keys ([`avx512_copy`]), whose AVX-512 canonical forms inline only into code compiled
//! for AVX-512. Those keys (the 5x5 board) are where that copy pays in a whole search; for
//! narrower keys it does not, and each copy is one more instance of the kernel to build.

use frontier::CountSet;
use state::{Isa, Level, PackedKey, Rules};

use crate::home::Outbox;
use crate::kernels::{self, Chunk, Ctx};
use crate::weights::Weights;

/// True when the kernels that canonicalise have an AVX-512 copy for rules `R`: keys of 128
/// bits. A constant, so no other rules instantiate that copy.
const fn avx512_copy<R: Rules>() -> bool {
    <R::Key as PackedKey>::BITS == 128
}

/// The level to build rules `R` with, `level` being the best one the run may use: AVX-512
/// only where the kernels have an AVX-512 copy ([`avx512_copy`]), else AVX2, whose copy an
/// AVX-512 CPU runs (the rules' SIMD code must be compiled for the kernel's level to inline
/// into it).
pub(crate) fn level_for<R: Rules>(level: Level) -> Level {
    match level {
        Level::Avx512 if !avx512_copy::<R>() => Level::Avx2,
        level => level,
    }
}

macro_rules! kernel {
    ($module:ident::$name:ident as $pub_name:ident, $avx2:ident, $avx512:ident, canonicalises: $canonicalises:literal, <$($g:ident: $gb:path),*> ($r:ident: $rty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)?) => {
        /// # Safety
        /// The CPU must support [`state::Level::Avx2`].
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn $avx2<R: Rules $(, $g: $gb)*>($r: $rty $(, $arg: $ty)*) $(-> $ret)? {
            $module::$name($r $(, $arg)*)
        }

        /// # Safety
        /// The CPU must support [`state::Level::Avx512`].
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,avx512f,avx512cd,avx512bw,avx512dq,avx512vl")]
        unsafe fn $avx512<R: Rules $(, $g: $gb)*>($r: $rty $(, $arg: $ty)*) $(-> $ret)? {
            $module::$name($r $(, $arg)*)
        }

        pub(crate) fn $pub_name<R: Rules $(, $g: $gb)*>($r: $rty $(, $arg: $ty)*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            match $r.rules.isa() {
                // SAFETY: the `Avx512Token` of an `Isa::Avx512` proves the CPU has every
                // feature `$avx512` is compiled for: no safe code makes one where it does not.
                // The guard is a constant: other kernels and rules never instantiate `$avx512`.
                Isa::Avx512(_) if $canonicalises && avx512_copy::<R>() => return unsafe { $avx512($r $(, $arg)*) },
                // SAFETY: the `Avx2Token` of an `Isa::Avx2`, or the `Avx512Token` of an
                // `Isa::Avx512` (AVX-512 includes every feature of `Level::Avx2`), proves the
                // CPU has every feature `$avx2` is compiled for.
                Isa::Avx2(_) | Isa::Avx512(_) => return unsafe { $avx2($r $(, $arg)*) },
                Isa::Portable => {}
            }
            if R::SIMD_ONLY {
                // A constant: for these rules the portable copy below is never compiled.
                unreachable!("rules with a SIMD backend run only on a CPU that has it");
            }
            $module::$name($r $(, $arg)*)
        }
    };
}

kernel!(kernels::expand as expand, expand_avx2, expand_avx512, canonicalises: true, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, made: &mut kernels::Made<R::Key>, bucketing: kernels::Bucketing));
kernel!(kernels::insert as insert, insert_avx2, insert_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, chunks: &[Chunk<R::Key, W::Sum>], s: usize, set: &mut CountSet<R::Key, W::Count>, outbox: Option<&Outbox<R::Key, W::Count>>));
kernel!(kernels::direct as direct, direct_avx2, direct_avx512, canonicalises: true, <W: Weights, S: kernels::Sink<R::Key, W::Count>> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, set: &mut S, batches: &mut kernels::Batches<R::Key, W::Count>) -> usize);
kernel!(kernels::last_two as last_two, last_two_avx2, last_two_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));
kernel!(kernels::last as last, last_avx2, last_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));

#[cfg(test)]
mod tests {
    use super::{avx512_copy, level_for};
    use state::{Grid, Level, U192};

    #[test]
    fn only_the_128_bit_grid_has_avx512_kernels() {
        assert!(avx512_copy::<Grid<u128>>());
        assert!(!avx512_copy::<Grid<u64>>());
        assert!(!avx512_copy::<Grid<U192>>());
        #[cfg(target_arch = "x86_64")]
        assert!(!avx512_copy::<state::Ring3<state::canon::Avx2>>());
        assert_eq!(level_for::<Grid<u128>>(Level::Avx512), Level::Avx512);
        assert_eq!(level_for::<Grid<u64>>(Level::Avx512), Level::Avx2);
        assert_eq!(level_for::<Grid<u64>>(Level::Portable), Level::Portable);
    }
}
