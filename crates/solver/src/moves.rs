//! Moves with names: what `--divide` lists and `--moves` reads.
//!
//! A cell is named by its column letter and its row number, as on a chess board but counted
//! from the top: `a1` is the first cell of the first input line, `b1` the one to its right,
//! `a2` the one below it. Past 26 columns, letters go on as `aa`, `ab`, and so on. A move
//! is the cell it fills; a capture adds `:` and the cells it takes, joined by `+`, in reading
//! order (`b2:a2+c2`). The die a move places is implied: 1, or the sum of the dice taken.

use std::fmt;

use state::{Board, Shape};

/// One move: the cell filled and the cells captured (none, or two to four neighbours whose
/// dice sum to 6 or less).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Move {
    /// The cell filled, row-major.
    pub cell: usize,
    /// The cells captured, row-major, in increasing order; empty for a plain placement.
    pub captured: Vec<usize>,
    /// The die placed: 1, or the sum of the captured dice.
    pub die: u8,
}

impl Move {
    /// The move's name on `shape` (module docs).
    pub fn name(&self, shape: Shape) -> String {
        let mut name = cell_name(self.cell, shape);
        for (i, &c) in self.captured.iter().enumerate() {
            name.push(if i == 0 { ':' } else { '+' });
            name.push_str(&cell_name(c, shape));
        }
        name
    }
}

/// Every legal move from `board`, by cell in reading order, then by the number of cells
/// captured and the cells (none on a full board).
pub fn legal_moves(board: &Board) -> Vec<Move> {
    let (shape, cells) = (board.shape(), board.cells());
    let mut out = Vec::new();
    for cell in (0..cells.len()).filter(|&i| cells[i] == 0) {
        let dice: Vec<usize> = neighbours(cell, shape).into_iter().filter(|&j| cells[j] != 0).collect();
        let before = out.len();
        for subset in 0u32..1 << dice.len() {
            let captured: Vec<usize> =
                (0..dice.len()).filter(|k| subset >> k & 1 != 0).map(|k| dice[k]).collect();
            let sum: u32 = captured.iter().map(|&j| u32::from(cells[j])).sum();
            if captured.len() >= 2 && sum <= 6 {
                out.push(Move { cell, captured, die: sum as u8 });
            }
        }
        if out.len() == before {
            out.push(Move { cell, captured: Vec::new(), die: 1 });
        }
    }
    out.sort_by(|a, b| (a.cell, a.captured.len(), &a.captured).cmp(&(b.cell, b.captured.len(), &b.captured)));
    out
}

/// The board after `m` (a legal move from `board`).
pub fn play(board: &Board, m: &Move) -> Board {
    let mut cells = board.cells().to_vec();
    for &c in &m.captured {
        cells[c] = 0;
    }
    cells[m.cell] = m.die;
    Board::new(board.shape(), cells).expect("a move keeps the shape and places a die of 1 to 6")
}

/// Why a move sequence was refused ([`descend`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MoveError {
    /// The move's place in the sequence, from 1.
    pub index: usize,
    /// The move as written.
    pub token: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for MoveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "move {} `{}`: {}", self.index, self.token, self.reason)
    }
}

impl std::error::Error for MoveError {}

/// Plays the comma-separated moves of `text` from `board`: the board they reach and the
/// moves read. Each must be legal where it is played.
///
/// # Errors
/// The first move that is not a cell name, not legal there, or played on a full board.
pub fn descend(board: &Board, text: &str) -> Result<(Board, Vec<Move>), MoveError> {
    let mut board = board.clone();
    let mut played = Vec::new();
    for (i, token) in text.split(',').map(str::trim).enumerate() {
        let error = |reason: String| MoveError { index: i + 1, token: token.to_string(), reason };
        let m = read_move(&board, token).map_err(error)?;
        board = play(&board, &m);
        played.push(m);
    }
    Ok((board, played))
}

/// The legal move from `board` that `token` names.
fn read_move(board: &Board, token: &str) -> Result<Move, String> {
    let shape = board.shape();
    if board.is_full() {
        return Err("the board is full: the game is over".to_string());
    }
    let (cell, taken) = token.split_once(':').unwrap_or((token, ""));
    let cell = read_cell(cell, shape)?;
    let mut captured = Vec::new();
    for c in taken.split('+').filter(|c| !taken.is_empty() || !c.is_empty()) {
        captured.push(read_cell(c, shape)?);
    }
    captured.sort_unstable();
    let moves = legal_moves(board);
    if let Some(m) = moves.iter().find(|m| m.cell == cell && m.captured == captured) {
        return Ok(m.clone());
    }
    let here: Vec<String> = moves.iter().filter(|m| m.cell == cell).map(|m| m.name(shape)).collect();
    Err(if here.is_empty() {
        format!("{} is not empty", cell_name(cell, shape))
    } else {
        format!("not a legal move here; the moves on {} are {}", cell_name(cell, shape), here.join(", "))
    })
}

/// The name of `cell` on `shape`.
pub fn cell_name(cell: usize, shape: Shape) -> String {
    let (row, col) = (cell / shape.cols(), cell % shape.cols());
    let mut letters = Vec::new();
    let mut c = col + 1;
    while c > 0 {
        letters.push(b'a' + ((c - 1) % 26) as u8);
        c = (c - 1) / 26;
    }
    letters.reverse();
    format!("{}{}", String::from_utf8(letters).expect("ASCII letters"), row + 1)
}

/// The cell `name` names on `shape`.
fn read_cell(name: &str, shape: Shape) -> Result<usize, String> {
    let split = name.find(|c: char| !c.is_ascii_lowercase()).unwrap_or(name.len());
    let (letters, digits) = name.split_at(split);
    let col =
        letters.bytes().try_fold(0usize, |c, b| c.checked_mul(26)?.checked_add(usize::from(b - b'a') + 1));
    let row = digits.parse::<usize>().ok().filter(|_| digits.bytes().all(|b| b.is_ascii_digit()));
    match (col, row) {
        (Some(col), Some(row))
            if !letters.is_empty() && col <= shape.cols() && (1..=shape.rows()).contains(&row) =>
        {
            Ok((row - 1) * shape.cols() + col - 1)
        }
        _ if letters.is_empty() || row.is_none() => {
            Err(format!("`{name}` is not a cell (a column letter and a row number, such as b2)"))
        }
        _ => Err(format!("{name} is off the {}x{} board", shape.rows(), shape.cols())),
    }
}

/// The cells orthogonally next to `cell`.
fn neighbours(cell: usize, shape: Shape) -> Vec<usize> {
    let (rows, cols) = (shape.rows(), shape.cols());
    let (r, c) = (cell / cols, cell % cols);
    let mut out = Vec::with_capacity(4);
    if r > 0 {
        out.push(cell - cols);
    }
    if c > 0 {
        out.push(cell - 1);
    }
    if c + 1 < cols {
        out.push(cell + 1);
    }
    if r + 1 < rows {
        out.push(cell + cols);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(rows: usize, cols: usize, cells: &[u8]) -> Board {
        Board::new(Shape::new(rows, cols).unwrap(), cells.to_vec()).unwrap()
    }

    #[test]
    fn cells_are_named_by_column_letter_and_row_from_the_top() {
        let shape = Shape::new(3, 3).unwrap();
        assert_eq!(cell_name(0, shape), "a1");
        assert_eq!(cell_name(1, shape), "b1");
        assert_eq!(cell_name(5, shape), "c2");
        let wide = Shape::new(1, 30).unwrap();
        assert_eq!(cell_name(25, wide), "z1");
        assert_eq!(cell_name(26, wide), "aa1");
        for cell in 0..30 {
            assert_eq!(read_cell(&cell_name(cell, wide), wide), Ok(cell));
        }
    }

    #[test]
    fn captures_are_listed_and_read_back() {
        // b2 sees 1 above, 2 left, 3 right, 6 below: subsets {1,2}, {1,3}, {2,3}, {1,2,3}.
        let b = board(3, 3, &[0, 1, 0, 2, 0, 3, 0, 6, 0]);
        let names: Vec<String> =
            legal_moves(&b).iter().filter(|m| m.cell == 4).map(|m| m.name(b.shape())).collect();
        assert_eq!(names, ["b2:b1+a2", "b2:b1+c2", "b2:a2+c2", "b2:b1+a2+c2"]);
        let (after, played) = descend(&b, "b2:c2+b1").unwrap();
        assert_eq!(played[0].die, 4);
        assert_eq!(after.cells(), &[0, 0, 0, 2, 4, 0, 0, 6, 0]);
    }

    #[test]
    fn bad_moves_name_their_token_and_reason() {
        let b = board(2, 2, &[1, 0, 2, 0]);
        let e = descend(&b, "b1,b9").unwrap_err();
        assert_eq!((e.index, e.token.as_str()), (2, "b9"));
        assert!(e.reason.contains("off the 2x2 board"), "{e}");
        // b2 sees the 2 at a2 and, after b1, the die at b1: b2 alone must capture.
        let e = descend(&b, "b1:a1+b2").unwrap_err();
        assert!(e.reason.contains("not a legal move"), "{e}");
        let e = descend(&b, "a1").unwrap_err();
        assert!(e.reason.contains("not empty"), "{e}");
        let e = descend(&b, "1b").unwrap_err();
        assert!(e.reason.contains("not a cell"), "{e}");
        let full = board(1, 2, &[1, 1]);
        assert!(descend(&full, "a1").unwrap_err().reason.contains("full"));
    }
}
