//! Solves a few boards through the library, with every depth's answer for one of them.

use solver::{solve, Board, Options, Shape};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let empty3 = Board::empty(Shape::SQUARE3);
    let a = solve(&empty3, 40, &Options::default())?;
    println!("empty 3x3, depth 40: {} ({} path, {} backend)", a.answer, a.path, a.backend.name());

    let board = Board::new(Shape::new(2, 4)?, vec![0, 1, 0, 0, 0, 0, 2, 0])?;
    let a = solve(&board, 10, &Options::default().with_all_depths(true))?;
    for (d, ans) in a.answers.iter().enumerate() {
        println!("2x4 depth {d}: {ans}");
    }
    Ok(())
}
