//! Board shapes and the plain (unpacked) board.

use std::fmt;

use tables::geometry::MAX_CELLS;

/// The size of a rectangular board: at least 1x1, at most 64 cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    rows: u8,
    cols: u8,
}

/// Why a shape was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// A side of zero cells.
    Empty,
    /// More than 64 cells.
    TooLarge {
        /// The number of cells asked for.
        cells: usize,
    },
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::Empty => write!(f, "a board needs at least one row and one column"),
            ShapeError::TooLarge { cells } => {
                write!(f, "a board of {cells} cells is larger than the supported {MAX_CELLS}")
            }
        }
    }
}

impl std::error::Error for ShapeError {}

impl Shape {
    /// The contest's board.
    pub const SQUARE3: Shape = Shape { rows: 3, cols: 3 };

    /// A `rows x cols` board.
    pub fn new(rows: usize, cols: usize) -> Result<Shape, ShapeError> {
        if rows == 0 || cols == 0 {
            return Err(ShapeError::Empty);
        }
        if rows * cols > MAX_CELLS {
            return Err(ShapeError::TooLarge { cells: rows * cols });
        }
        Ok(Shape { rows: rows as u8, cols: cols as u8 })
    }

    /// Number of rows.
    pub fn rows(self) -> usize {
        self.rows as usize
    }

    /// Number of columns.
    pub fn cols(self) -> usize {
        self.cols as usize
    }

    /// Number of cells.
    pub fn cells(self) -> usize {
        self.rows() * self.cols()
    }

    /// Number of symmetries: 8 on square boards, 4 on the others.
    pub fn symmetries(self) -> usize {
        if self.rows == self.cols {
            8
        } else {
            4
        }
    }

    /// The narrowest packed key that holds this shape (3 bits a cell).
    pub fn width(self) -> Width {
        match 3 * self.cells() {
            0..=32 => Width::U32,
            33..=64 => Width::U64,
            65..=128 => Width::U128,
            _ => Width::U192,
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// The integer type a shape's boards are packed into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// Up to 10 cells (the 3x3 board).
    U32,
    /// Up to 21 cells (4x4, 3x7...).
    U64,
    /// Up to 42 cells (5x5, 6x6...).
    U128,
    /// Up to 64 cells (7x7, 8x8).
    U192,
}

/// A board as a user writes it: its shape and one value per cell, row by row
/// (`0` = empty, `1..=6` = a die).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Board {
    shape: Shape,
    cells: Vec<u8>,
}

/// Why a board was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoardError {
    /// The number of cells does not match the shape.
    WrongLength {
        /// Cells the shape has.
        expected: usize,
        /// Cells given.
        got: usize,
    },
    /// A cell holds something other than `0..=6`.
    BadCell {
        /// Row-major index of the cell.
        cell: usize,
        /// Its value.
        value: u8,
    },
}

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoardError::WrongLength { expected, got } => {
                write!(f, "expected {expected} cells, got {got}")
            }
            BoardError::BadCell { cell, value } => {
                write!(f, "cell {cell} holds {value}, outside 0..=6")
            }
        }
    }
}

impl std::error::Error for BoardError {}

impl Board {
    /// A board of `shape` with `cells` given row by row.
    pub fn new(shape: Shape, cells: Vec<u8>) -> Result<Board, BoardError> {
        if cells.len() != shape.cells() {
            return Err(BoardError::WrongLength { expected: shape.cells(), got: cells.len() });
        }
        if let Some((cell, &value)) = cells.iter().enumerate().find(|(_, &v)| v > 6) {
            return Err(BoardError::BadCell { cell, value });
        }
        Ok(Board { shape, cells })
    }

    /// The empty board of `shape`.
    pub fn empty(shape: Shape) -> Board {
        Board { shape, cells: vec![0; shape.cells()] }
    }

    /// Its shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Its cells, row by row.
    pub fn cells(&self) -> &[u8] {
        &self.cells
    }

    /// True when no cell is empty (the game is over).
    pub fn is_full(&self) -> bool {
        self.cells.iter().all(|&v| v != 0)
    }

    /// The cells read row by row as one base-10 number, modulo 2^30.
    pub fn hash(&self) -> u32 {
        hash_cells(&self.cells)
    }
}

/// The contest's hash of a row-major list of cells: `h = h * 10 + cell`, modulo 2^30.
pub fn hash_cells(cells: &[u8]) -> u32 {
    cells.iter().fold(0u32, |h, &v| (h.wrapping_mul(10).wrapping_add(v as u32)) & HASH_MASK)
}

/// The answer keeps 30 bits.
pub const HASH_MASK: u32 = (1 << 30) - 1;
