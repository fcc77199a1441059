//! The instruction sets a backend's hot loops are compiled for, detected at run time.

/// The instruction set a backend's hot loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// Baseline instructions only: runs everywhere.
    Portable,
    /// x86-64 with AVX2, BMI1, BMI2 and POPCNT.
    Avx2,
}

impl Level {
    /// The best level this CPU supports (detected at run time).
    pub fn detect() -> Level {
        if Level::Avx2.is_available() {
            Level::Avx2
        } else {
            Level::Portable
        }
    }

    /// True when this CPU can run code compiled for `self`.
    pub fn is_available(self) -> bool {
        match self {
            Level::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                // `cpufeatures` asks the CPU only what these features need (3 CPUID leaves, each
                // a trap to the hypervisor on a virtual machine), where std's detection asks every
                // leaf it knows: a measurable share of a small search's process start-up.
                cpufeatures::new!(avx2_level, "avx2", "bmi1", "bmi2", "popcnt");
                avx2_level::get()
            }
            #[cfg(not(target_arch = "x86_64"))]
            Level::Avx2 => false,
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
        }
    }

    /// Parses a name given by [`Level::name`].
    pub fn from_name(name: &str) -> Option<Level> {
        match name {
            "portable" => Some(Level::Portable),
            "avx2" => Some(Level::Avx2),
            _ => None,
        }
    }
}
