//! The plain reference solver as a program (the oracle `cargo xtask bench` times): reads a
//! problem from stdin like the `solver` binary, prints the answer; with `--perft`, the exact
//! `depth perft ended boards` rows (`cargo xtask tables` checks its tables with them). Slow by
//! design.

#[path = "../tests/common/reference.rs"]
mod plain;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
    let p = solver::parse(&text)?;
    let shape = p.board.shape();
    if std::env::args().any(|a| a == "--perft") {
        let (rows, _) = plain::perft(p.board.cells(), shape.rows(), shape.cols(), p.depth);
        for (d, perft, ended, boards) in rows {
            println!("{d} {perft} {ended} {boards}");
        }
        return Ok(());
    }
    let (answer, _) = plain::reference(p.board.cells(), shape.rows(), shape.cols(), p.depth);
    println!("{answer}");
    Ok(())
}
