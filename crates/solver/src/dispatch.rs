//! Runs the search kernels compiled for the rules' instruction set.
//!
//! Each kernel of [`crate::search`] is `#[inline(always)]` and generic over the rules; here it
//! is instantiated twice: as is (portable) and inside a `#[target_feature]` function, so that
//! the SIMD helpers of an AVX2 backend inline into it. The choice is made once per task (a
//! chunk or a shard), never per board.

use frontier::{CountSet, Frontier};
use state::{Level, Rules};

use crate::search::{self, Chunk};

macro_rules! kernel {
    ($name:ident, $avx2:ident, ($r:ident: $rty:ty $(, $arg:ident: $ty:ty)*)) => {
        /// # Safety
        /// The CPU must support [`Level::Avx2`].
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        unsafe fn $avx2<R: Rules>($r: $rty $(, $arg: $ty)*) {
            search::$name($r $(, $arg)*)
        }

        pub(crate) fn $name<R: Rules>($r: $rty $(, $arg: $ty)*) {
            match $r.level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Rules::level` never reports a level the CPU lacks (backends and
                // `Grid` check `Level::is_available` when they are made).
                Level::Avx2 => unsafe { $avx2($r $(, $arg)*) },
                _ => search::$name($r $(, $arg)*),
            }
        }
    };
}

kernel!(expand, expand_avx2, (rules: &R, cur: &Frontier<R::Key, 8>, c: &mut Chunk<R::Key>, shard_bits: u32, count_boards: bool));
kernel!(insert, insert_avx2, (rules: &R, cur: &Frontier<R::Key, 8>, chunks: &[Chunk<R::Key>], s: usize, set: &mut CountSet<R::Key, 8>));
kernel!(last, last_avx2, (rules: &R, cur: &Frontier<R::Key, 8>, c: &mut Chunk<R::Key>));
