//! Prints the moves of an empty cell for a few neighbourhoods, and the shape tables of a board.

use tables::captures::{neighbour, PLACEMENTS};
use tables::geometry::Geometry;

fn main() {
    for pattern in [0o0, 0o21, 0o1111, 0o33, 0o1212] {
        let nbrs: Vec<u8> = (0..4).map(|k| neighbour(pattern, k)).collect();
        println!("neighbours {nbrs:?}:");
        for m in PLACEMENTS[pattern].as_slice() {
            println!("  capture mask {:04b}, die {}", m.captured, m.die);
        }
    }
    let g = Geometry::new(2, 3);
    println!("2x3 board: {} symmetries, hash weights {:?}", g.symmetries, &g.weight[..6]);
}
