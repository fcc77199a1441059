//! The instruction sets a backend's hot loops are compiled for, detected at run time.
//!
//! A [`Level`] names an instruction set (what a user asks for, what a report shows); an
//! [`Isa`] is one this CPU has, with the proof: a zero-sized token ([`Avx2Token`],
//! [`Avx512Token`]) that only a check of the CPU makes. Code compiled for an instruction set (`#[target_feature]`) runs
//! only where such a token is at hand, so no safe code, in this crate or another, can reach it
//! on a CPU that lacks the instructions.

/// The instruction set a backend's hot loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Baseline instructions only: runs everywhere.
    Portable,
    /// x86-64 with AVX2, BMI1, BMI2 and POPCNT.
    Avx2,
    /// x86-64 with every feature of [`Level::Avx2`] and AVX-512 F, CD, BW, DQ and VL (the
    /// AVX-512 of x86-64-v4).
    Avx512,
}

impl Level {
    /// The best level this CPU supports (detected at run time).
    pub fn detect() -> Level {
        Isa::detect().level()
    }

    /// True when this CPU can run code compiled for `self`.
    pub fn is_available(self) -> bool {
        match self {
            Level::Portable => true,
            // One snapshot of the CPU for both levels (and the backends' other questions):
            // each CPUID traps to the hypervisor on a virtual machine, a measurable share of a
            // small search's process start-up.
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => crate::cpu::Cpu::get().has_avx2_level(),
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => crate::cpu::Cpu::get().has_avx512_level(),
            #[cfg(not(target_arch = "x86_64"))]
            Level::Avx2 | Level::Avx512 => false,
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// Parses a name given by [`Level::name`].
    pub fn from_name(name: &str) -> Option<Level> {
        match name {
            "portable" => Some(Level::Portable),
            "avx2" => Some(Level::Avx2),
            "avx512" => Some(Level::Avx512),
            _ => None,
        }
    }
}

/// Proof that this CPU has every feature of [`Level::Avx2`] (AVX2, BMI1, BMI2 and POPCNT):
/// zero-sized, with a private field, so that it is made only by [`Avx2Token::new`] (which
/// asks the CPU) or [`Avx2Token::new_unchecked`] (whose caller vouches for it). Code holding
/// one may call functions compiled for those features.
///
/// ```
/// use state::{Avx2Token, Level};
///
/// assert_eq!(Avx2Token::new().is_some(), Level::Avx2.is_available());
/// ```
///
/// Safe code cannot make one otherwise:
///
/// ```compile_fail,E0423
/// let token = state::Avx2Token(());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Avx2Token(());

/// A token's two ways to be made: asking the CPU for `$level`, or the caller's word.
macro_rules! token_constructors {
    ($token:ident, $level:ident) => {
        impl $token {
            #[doc = concat!("The token, when this CPU has every feature of [`Level::", stringify!($level), "`].")]
            #[inline]
            pub fn new() -> Option<$token> {
                Level::$level.is_available().then_some($token(()))
            }

            /// The token without asking the CPU.
            ///
            /// # Safety
            #[doc = concat!("The CPU must have every feature of [`Level::", stringify!($level), "`].")]
            #[inline(always)]
            pub unsafe fn new_unchecked() -> $token {
                $token(())
            }
        }
    };
}

token_constructors!(Avx2Token, Avx2);

/// Proof that this CPU has every feature of [`Level::Avx512`] (those of [`Level::Avx2`] among
/// them): zero-sized, made only by [`Avx512Token::new`] (which asks the CPU) or
/// [`Avx512Token::new_unchecked`] (whose caller vouches for it).
///
/// ```
/// use state::{Avx512Token, Level};
///
/// assert_eq!(Avx512Token::new().is_some(), Level::Avx512.is_available());
/// // AVX-512 code may call AVX2 code: the one proof gives the other.
/// assert!(Avx512Token::new().is_none_or(|t| t.avx2() == state::Avx2Token::new().unwrap()));
/// ```
///
/// Safe code cannot make one otherwise:
///
/// ```compile_fail,E0423
/// let token = state::Avx512Token(());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Avx512Token(());

token_constructors!(Avx512Token, Avx512);

impl Avx512Token {
    /// The proof of [`Level::Avx2`], whose features [`Level::Avx512`] includes.
    #[inline(always)]
    pub fn avx2(self) -> Avx2Token {
        Avx2Token(())
    }
}

/// An instruction set this CPU has: a [`Level`] with the proof that the CPU supports it, what
/// the search's hot loops are dispatched on (see [`crate::Rules::isa`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// [`Level::Portable`]: runs everywhere.
    Portable,
    /// [`Level::Avx2`], proven by the token.
    Avx2(Avx2Token),
    /// [`Level::Avx512`], proven by the token.
    Avx512(Avx512Token),
}

impl Isa {
    /// `level` with its proof, when this CPU supports it.
    pub fn new(level: Level) -> Option<Isa> {
        match level {
            Level::Portable => Some(Isa::Portable),
            Level::Avx2 => Avx2Token::new().map(Isa::Avx2),
            Level::Avx512 => Avx512Token::new().map(Isa::Avx512),
        }
    }

    /// The best instruction set this CPU supports (detected at run time).
    pub fn detect() -> Isa {
        Isa::new(Level::Avx512).or_else(|| Isa::new(Level::Avx2)).unwrap_or(Isa::Portable)
    }

    /// The proof of [`Level::Avx2`] where this instruction set includes it.
    #[inline(always)]
    pub fn avx2(self) -> Option<Avx2Token> {
        match self {
            Isa::Portable => None,
            Isa::Avx2(t) => Some(t),
            Isa::Avx512(t) => Some(t.avx2()),
        }
    }

    /// The level this is a proof of.
    #[inline]
    pub fn level(self) -> Level {
        match self {
            Isa::Portable => Level::Portable,
            Isa::Avx2(_) => Level::Avx2,
            Isa::Avx512(_) => Level::Avx512,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What std's detection says of the features of [`Level::Avx2`].
    fn std_detects_avx2() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("bmi1")
                && std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("popcnt")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// What std's detection says of the features of [`Level::Avx512`].
    fn std_detects_avx512() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std_detects_avx2()
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512cd")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    #[test]
    fn tokens_exist_exactly_where_std_detects_the_features() {
        let (avx2, avx512) = (std_detects_avx2(), std_detects_avx512());
        assert_eq!(Level::Avx512.is_available(), avx512);
        assert_eq!(Avx512Token::new().is_some(), avx512);
        assert_eq!(Isa::new(Level::Avx512).is_some(), avx512);
        assert_eq!(Level::Avx2.is_available(), avx2);
        assert_eq!(Avx2Token::new().is_some(), avx2);
        assert_eq!(Isa::new(Level::Avx2).is_some(), avx2);
        assert_eq!(Isa::new(Level::Portable), Some(Isa::Portable));
        assert_eq!(Isa::detect().level(), Level::detect());
        let best = if avx512 {
            Level::Avx512
        } else if avx2 {
            Level::Avx2
        } else {
            Level::Portable
        };
        assert_eq!(Level::detect(), best);
        assert_eq!(Isa::detect().avx2().is_some(), avx2);
        for level in [Level::Portable, Level::Avx2, Level::Avx512] {
            assert_eq!(Isa::new(level).map(Isa::level), level.is_available().then_some(level));
            assert_eq!(Level::from_name(level.name()), Some(level));
        }
    }

    #[test]
    fn rules_report_the_level_they_asked_for_only_where_the_cpu_has_it() {
        use crate::canon::{Canon3, Portable};
        use crate::{Grid, Ring3, Rules, Shape};
        let avx2 = Isa::new(Level::Avx2);
        let shape = Shape::new(4, 4).unwrap();
        assert_eq!(Grid::<u64>::new(shape, Level::Portable).isa(), Isa::Portable);
        assert_eq!(Grid::<u64>::new(shape, Level::Avx2).isa(), avx2.unwrap_or(Isa::Portable));
        let avx512 = Isa::new(Level::Avx512);
        assert_eq!(
            Grid::<u128>::new(Shape::new(5, 5).unwrap(), Level::Avx512).isa(),
            avx512.unwrap_or(Isa::Portable)
        );
        assert_eq!(
            Grid::<u32>::new(Shape::SQUARE3, Level::Avx2).level(),
            avx2.map_or(Level::Portable, Isa::level)
        );
        assert_eq!(Ring3::new(Portable).isa(), Isa::Portable);
        assert_eq!(Portable.isa(), Isa::Portable);
        #[cfg(target_arch = "x86_64")]
        {
            let ring = crate::canon::Avx2::new().map(Ring3::new);
            assert_eq!(ring.map(|r| r.isa()), avx2);
            let backend = crate::canon::Avx2::new().map(|b| b.with_gather(false));
            assert_eq!(backend.map(Canon3::isa), avx2);
            assert_eq!(backend.map(|b| Isa::Avx2(b.token())), avx2);
        }
    }

    #[test]
    fn tokens_take_no_room() {
        assert_eq!(std::mem::size_of::<Avx2Token>(), 0);
        assert_eq!(std::mem::size_of::<Avx512Token>(), 0);
    }
}
