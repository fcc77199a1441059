//! Runs the search kernels compiled for the rules' instruction set.
//!
//! Each kernel of [`crate::kernels`] is `#[inline(always)]` and generic over the rules; here it
//! is instantiated as is (portable) and inside a `#[target_feature]` function for AVX2, so that
//! the SIMD helpers of a backend inline into it; the kernels that canonicalise, for rules whose
//! keys have AVX-512 code ([`state::PackedKey::SIMD_CANONICAL`]), also inside one for AVX-512
//! (elsewhere an AVX-512 search runs the AVX2 code, which has every instruction it uses). The choice is made once per task (a
//! chunk or a shard), never per board.

use frontier::CountSet;
use state::{Isa, Rules};

use crate::home::Outbox;
use crate::kernels::{self, Chunk, Ctx};
use crate::weights::Weights;

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
            match $r.rules.isa() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the `Avx2Token` proves the CPU has every feature `$avx2` is compiled
                // for (those of `Level::Avx2`): no safe code makes one where it does not.
                Isa::Avx2(_) => unsafe { $avx2($r $(, $arg)*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: the `Avx512Token` proves the CPU has every feature `$avx512` is
                // compiled for (those of `Level::Avx512`). Only for kernels that canonicalise
                // keys with AVX-512 code: the guard is a constant, so no other kernel or rules
                // instantiate `$avx512`.
                Isa::Avx512(_) if $canonicalises && <R::Key as state::PackedKey>::SIMD_CANONICAL => unsafe {
                    $avx512($r $(, $arg)*)
                },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above: AVX-512 includes every feature of `Level::Avx2`.
                Isa::Avx512(_) => unsafe { $avx2($r $(, $arg)*) },
                _ => $module::$name($r $(, $arg)*),
            }
        }
    };
}

kernel!(kernels::expand as expand, expand_avx2, expand_avx512, canonicalises: true, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, made: &mut kernels::Made<R::Key>, bucketing: kernels::Bucketing));
kernel!(kernels::insert as insert, insert_avx2, insert_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, chunks: &[Chunk<R::Key, W::Sum>], s: usize, set: &mut CountSet<R::Key, W::Count>, outbox: Option<&Outbox<R::Key, W::Count>>));
kernel!(kernels::direct as direct, direct_avx2, direct_avx512, canonicalises: true, <W: Weights, S: kernels::Sink<R::Key, W::Count>> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, set: &mut S, batches: &mut kernels::Batches<R::Key, W::Count>) -> usize);
kernel!(kernels::last_two as last_two, last_two_avx2, last_two_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));
kernel!(kernels::last as last, last_avx2, last_avx512, canonicalises: false, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));
