//! Canonicalises a 3x3 board with every backend this CPU has, and a 4x5 board with the general
//! rules.

use state::canon::{Canon3, Portable};
use state::{Grid, Level, Ring3, Rules, Shape};

fn main() {
    let cells = [0, 6, 0, 2, 2, 2, 1, 6, 1];
    let ring = Ring3::new(Portable);
    let s = ring.pack(&cells);
    let (c, t) = Portable.canonical(s);
    println!("3x3 {cells:?} -> canonical {:?} (symmetry {t}), portable", ring.unpack(c));
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = state::canon::Avx2::new() {
        let (c2, t2) = b.canonical(s);
        println!("3x3 avx2 agrees: {}", (c2, t2) == (c, t));
    }
    let mut n = 0;
    ring.successors(s, |_| n += 1);
    println!("3x3 board has {n} moves; best level here: {}", Level::detect().name());

    let shape = Shape::new(4, 5).expect("20 cells");
    let grid = Grid::<u64>::new(shape, Level::detect());
    let cells: Vec<u8> = (0..20).map(|i| [0, 1, 0, 3, 0][i % 5]).collect();
    let (c, t) = grid.canonical(grid.pack(&cells));
    println!("{shape} canonical form {:?} (symmetry {t} of {})", grid.unpack(c), shape.symmetries());
}
