//! Runs the search kernels compiled for the rules' instruction set.
//!
//! Each kernel of [`crate::kernels`] is `#[inline(always)]` and generic over the rules; here it
//! is instantiated as is (portable) and inside a `#[target_feature]` function for AVX2, so that
//! the SIMD helpers of a backend inline into it. An AVX-512 CPU runs the AVX2 copy: it has
//! every instruction that copy uses, and a copy of its own is no faster in a whole search
//! (the canonical form is not where the time goes). Rules that exist only with a SIMD backend
//! ([`Rules::SIMD_ONLY`]) get no portable copy. The choice is made once per task (a chunk or a
//! shard), never per board.

use frontier::CountSet;
use state::{Isa, Rules};

use crate::home::Outbox;
use crate::kernels::{self, Chunk, Ctx};
use crate::weights::Weights;

macro_rules! kernel {
    ($module:ident::$name:ident as $pub_name:ident, $avx2:ident, <$($g:ident: $gb:path),*> ($r:ident: $rty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)?) => {
        /// # Safety
        /// The CPU must support [`state::Level::Avx2`].
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn $avx2<R: Rules $(, $g: $gb)*>($r: $rty $(, $arg: $ty)*) $(-> $ret)? {
            $module::$name($r $(, $arg)*)
        }

        pub(crate) fn $pub_name<R: Rules $(, $g: $gb)*>($r: $rty $(, $arg: $ty)*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if let Isa::Avx2(_) | Isa::Avx512(_) = $r.rules.isa() {
                // SAFETY: the `Avx2Token` of an `Isa::Avx2`, or the `Avx512Token` of an
                // `Isa::Avx512` (AVX-512 includes every feature of `Level::Avx2`), proves the
                // CPU has every feature `$avx2` is compiled for: no safe code makes one where
                // it does not.
                return unsafe { $avx2($r $(, $arg)*) };
            }
            if R::SIMD_ONLY {
                // A constant: for these rules the portable copy below is never compiled.
                unreachable!("rules with a SIMD backend run only on a CPU that has it");
            }
            $module::$name($r $(, $arg)*)
        }
    };
}

kernel!(kernels::expand as expand, expand_avx2, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, made: &mut kernels::Made<R::Key>, bucketing: kernels::Bucketing));
kernel!(kernels::insert as insert, insert_avx2, <W: Weights> (x: Ctx<'_, R, W>, chunks: &[Chunk<R::Key, W::Sum>], s: usize, set: &mut CountSet<R::Key, W::Count>, outbox: Option<&Outbox<R::Key, W::Count>>));
kernel!(kernels::direct as direct, direct_avx2, <W: Weights, S: kernels::Sink<R::Key, W::Count>> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>, set: &mut S, batches: &mut kernels::Batches<R::Key, W::Count>) -> usize);
kernel!(kernels::last_two as last_two, last_two_avx2, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));
kernel!(kernels::last as last, last_avx2, <W: Weights> (x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>));
