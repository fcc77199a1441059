//! Reading a problem: the depth on the first line, then the board, one row per line.

use std::fmt;

use state::{Board, Shape};

/// A problem to solve: a board and the number of moves to play.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Number of moves (fewer when the board fills first).
    pub depth: u32,
    /// The starting board.
    pub board: Board,
}

/// What was wrong with an input, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// 1-based line number (the line after the last one for a missing part).
    pub line: usize,
    /// 1-based token number on the line and the token itself, when one is to blame.
    pub token: Option<(usize, String)>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.token {
            Some((n, t)) => write!(f, "line {}, token {} `{}`: {}", self.line, n, t, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for InputError {}

fn err(line: usize, token: Option<(usize, &str)>, message: impl Into<String>) -> InputError {
    InputError { line, token: token.map(|(n, t)| (n, t.to_string())), message: message.into() }
}

/// Parses a problem. Accepts CRLF line ends, tabs and repeated spaces between cells, blank lines
/// before the depth and after the board.
pub fn parse(text: &str) -> Result<Problem, InputError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    let (depth_line, line) = loop {
        match lines.next() {
            None => return Err(err(1, None, "empty input: expected the depth on the first line")),
            Some((_, l)) if l.trim().is_empty() => continue,
            Some(found) => break found,
        }
    };
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if tokens.len() > 1 {
        return Err(err(depth_line, Some((2, tokens[1])), "expected only the depth on this line"));
    }
    let depth = parse_depth(tokens[0]).map_err(|m| err(depth_line, Some((1, tokens[0])), m))?;

    let mut cells = Vec::new();
    let (mut rows, mut cols) = (0usize, 0usize);
    let mut blank_after: Option<usize> = None;
    let mut last_line = depth_line;
    for (n, line) in lines {
        last_line = n;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.is_empty() {
            blank_after.get_or_insert(n);
            continue;
        }
        if let Some(b) = blank_after {
            return Err(err(
                n,
                None,
                format!("board row after the blank line {b}: rows must be consecutive"),
            ));
        }
        if rows > 0 && tokens.len() != cols {
            return Err(err(
                n,
                None,
                format!("this row has {} cells, the first row has {}", tokens.len(), cols),
            ));
        }
        cols = tokens.len();
        rows += 1;
        for (t, tok) in tokens.iter().enumerate() {
            let v = parse_cell(tok).map_err(|m| err(n, Some((t + 1, tok)), m))?;
            cells.push(v);
        }
        if cells.len() > tables::geometry::MAX_CELLS {
            return Err(err(
                n,
                None,
                format!("the board has more than {} cells", tables::geometry::MAX_CELLS),
            ));
        }
    }
    if rows == 0 {
        return Err(err(last_line + 1, None, "missing board: expected its rows after the depth"));
    }
    let shape = Shape::new(rows, cols).map_err(|e| err(depth_line + 1, None, e.to_string()))?;
    let board = Board::new(shape, cells).map_err(|e| err(depth_line + 1, None, e.to_string()))?;
    Ok(Problem { depth, board })
}

fn parse_depth(tok: &str) -> Result<u32, String> {
    let digits = tok.strip_prefix('+').unwrap_or(tok);
    if let Some(rest) = tok.strip_prefix('-') {
        if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err("the depth must not be negative".into());
        }
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the depth must be a non-negative integer".into());
    }
    digits.parse::<u32>().map_err(|_| format!("the depth does not fit in 32 bits (at most {})", u32::MAX))
}

fn parse_cell(tok: &str) -> Result<u8, String> {
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a cell must be an integer from 0 (empty) to 6".into());
    }
    match tok.parse::<u32>() {
        Ok(v) if v <= 6 => Ok(v as u8),
        _ => Err("a cell must be from 0 (empty) to 6".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_harmless_variations() {
        let p = parse("20\r\n0\t6  0\r\n2 2 2\r\n1 6 1\r\n\r\n\n").unwrap();
        assert_eq!(p.depth, 20);
        assert_eq!(p.board.shape(), Shape::new(3, 3).unwrap());
        assert_eq!(p.board.cells(), &[0, 6, 0, 2, 2, 2, 1, 6, 1]);
        let p = parse("0\n1 2 3 4 5\n").unwrap();
        assert_eq!(p.board.shape(), Shape::new(1, 5).unwrap());
    }

    fn fails(text: &str, line: usize, token: Option<&str>, needle: &str) {
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, line, "{e}");
        assert_eq!(e.token.as_ref().map(|t| t.1.as_str()), token, "{e}");
        assert!(e.message.contains(needle), "{e}");
    }

    #[test]
    fn rejects_bad_input_naming_line_and_token() {
        fails("", 1, None, "empty input");
        fails("\n\n", 1, None, "empty input");
        fails("5\n", 2, None, "missing board");
        fails("x\n0 0\n", 1, Some("x"), "non-negative integer");
        fails("2.5\n0 0\n", 1, Some("2.5"), "non-negative integer");
        fails("-3\n0 0\n", 1, Some("-3"), "negative");
        fails("4294967296\n0\n", 1, Some("4294967296"), "32 bits");
        fails("3 4\n0\n", 1, Some("4"), "only the depth");
        fails("3\n0 0\n0 7\n", 3, Some("7"), "0 (empty) to 6");
        fails("3\n0 0\n0 a\n", 3, Some("a"), "integer");
        fails("3\n0 -1\n", 2, Some("-1"), "integer");
        fails("3\n0 0 0\n0 0\n", 3, None, "has 2 cells");
        fails("3\n0 0\n\n0 0\n", 4, None, "blank line 3");
        let big = format!("1\n{}", "0 0 0 0 0 0 0 0 0\n".repeat(8));
        fails(&big, 9, None, "more than 64 cells");
    }

    #[test]
    fn largest_depth_is_accepted() {
        assert_eq!(parse("4294967295\n1\n").unwrap().depth, u32::MAX);
    }
}
