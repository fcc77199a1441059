//! Every SIMD backend against the portable one on all 7^9 = 40 353 607 boards of the 3x3 board.
//! Slow in debug builds: run with release's optimisation by `cargo xtask verify` (CI does).

use state::canon::{Canon3, Portable};

#[allow(dead_code)]
fn all_boards() -> impl Iterator<Item = u32> {
    // Count in base 7, one digit per position.
    (0..7u32.pow(9)).map(|mut n| {
        let mut s = 0;
        for p in 0..9 {
            s |= (n % 7) << (3 * p);
            n /= 7;
        }
        s
    })
}

#[allow(dead_code)]
fn check_all<B: Canon3>(name: &str, b: B) {
    let mut n = 0u64;
    for s in all_boards() {
        assert_eq!(b.canonical(s), Portable.canonical(s), "{name} on board {s:#o}");
        let t = (s % 8) as u8;
        let counts = [s, s >> 3, s >> 6, s >> 9, s >> 12, s >> 15, s >> 18, s >> 21];
        assert_eq!(b.permute(&counts, t), Portable.permute(&counts, t), "{name} permute {t}");
        for p in 0..9 {
            assert_eq!(b.pattern(s, p), Portable.pattern(s, p), "{name} pattern {p} of {s:#o}");
        }
        n += 1;
    }
    println!("{name}: all {n} boards agree with portable");
}

#[test]
#[ignore = "40 M boards: run optimised via `cargo xtask verify`"]
fn every_backend_on_every_board() {
    #[cfg(target_arch = "x86_64")]
    match state::canon::Avx2::new() {
        Some(b) => {
            check_all("avx2 with bit gather", b.with_gather(true));
            check_all("avx2 without", b.with_gather(false));
        }
        None => println!("avx2: skipped, not available on this CPU"),
    }
    #[cfg(not(target_arch = "x86_64"))]
    println!("no SIMD backend on this architecture");
}
