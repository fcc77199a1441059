//! Reading a problem: the depth on the first line, then the board, one row per line.

use std::fmt;

use state::{Board, Shape};

/// A problem to solve: a board and the number of moves to play.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// Number of moves (fewer when the board fills first).
    pub depth: u32,
    /// The starting board.
    pub board: Board,
}

impl Problem {
    /// `depth` moves from `board`.
    pub fn new(board: Board, depth: u32) -> Problem {
        Problem { depth, board }
    }

    /// The problem after the comma-separated moves of `moves` (as [`crate::moves`] names
    /// them, e.g. `b2,a1:a2+b1`): the board they reach, at the depth less their number (the
    /// command line's `--moves`).
    ///
    /// ```
    /// let problem = solver::parse("3\n0 0\n0 0\n")?.after_moves("a1")?;
    /// assert_eq!((problem.depth, problem.board.cells()), (2, &[1, 0, 0, 0][..]));
    /// # Ok::<(), solver::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Move`] naming the first move that cannot be played, and
    /// [`crate::Error::Options`] for more moves than the depth.
    pub fn after_moves(&self, moves: &str) -> crate::Result<Problem> {
        let (board, played) = crate::moves::descend(&self.board, moves)?;
        let depth = u32::try_from(played.len()).ok().and_then(|n| self.depth.checked_sub(n));
        let depth = depth.ok_or_else(|| {
            crate::Error::options(format!("{} moves, more than the depth {}", played.len(), self.depth))
        })?;
        Ok(Problem { depth, board })
    }
}

/// What was wrong with an input, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputError {
    /// 1-based line number (the line after the last one for a missing part).
    pub line: usize,
    /// 1-based token number on the line and the token itself, when one is to blame.
    pub token: Option<(usize, String)>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    /// `line L, token T `tok`: message`, the token shown with every character that does not
    /// print as itself escaped (`\u{feff}`, `\0`, `\u{1b}`; `\xff` for a byte that is not
    /// UTF-8), and cut after 24 characters (`TOKEN_SHOWN`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.token {
            Some((n, t)) => write!(f, "line {}, token {} `{}`: {}", self.line, n, t, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

/// Characters of a token an error shows (the rest is cut, `…` marks it).
pub const TOKEN_SHOWN: usize = 24;

/// A token as an error shows it: printable characters as themselves, others escaped, bytes
/// that are not UTF-8 as `\xNN`, at most [`TOKEN_SHOWN`] characters of the token.
fn show(token: &[u8]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for chunk in token.utf8_chunks() {
        let pieces = chunk
            .valid()
            .chars()
            .map(|c| if c == '`' { "\\`".to_string() } else { c.escape_debug().to_string() })
            .chain(chunk.invalid().iter().map(|b| format!("\\x{b:02x}")));
        for piece in pieces {
            if shown == TOKEN_SHOWN {
                out.push('…');
                return out;
            }
            out += &piece;
            shown += 1;
        }
    }
    out
}

impl std::error::Error for InputError {}

fn err(line: usize, token: Option<(usize, &str)>, message: impl Into<String>) -> InputError {
    InputError { line, token: token.map(|(n, t)| (n, show(t.as_bytes()))), message: message.into() }
}

/// Parses a problem from raw bytes: [`parse`] once they are known to be UTF-8 text (a leading
/// UTF-8 byte order mark is skipped); else an error naming the line and the token where the
/// first byte that is not UTF-8 is (a UTF-16 file, say).
pub fn parse_bytes(bytes: &[u8]) -> Result<Problem, InputError> {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => {
            let at = e.valid_up_to();
            let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
            let line_end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| at + i);
            // The token holding the bad byte: from the white space before it to the one after.
            let blank = |b: &u8| b.is_ascii_whitespace();
            let start =
                bytes[line_start..at].iter().rposition(blank).map_or(line_start, |i| line_start + i + 1);
            let end = bytes[at..line_end].iter().position(blank).map_or(line_end, |i| at + i);
            let number = 1 + bytes[line_start..start]
                .split(|b| b.is_ascii_whitespace())
                .filter(|t| !t.is_empty())
                .count();
            Err(InputError {
                line,
                token: Some((number, show(&bytes[start..end]))),
                message:
                    "not text: the input is ASCII digits and white space (UTF-8; a UTF-16 file, say, is not)"
                        .into(),
            })
        }
    }
}

/// Parses a problem. Accepts CRLF line ends, tabs and repeated spaces between cells, blank lines
/// before the depth and after the board. The depth and the cells are plain decimal integers:
/// ASCII digits, no sign (leading zeros are harmless).
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
                format!("this row has {}, the first row has {cols}", cells_text(tokens.len())),
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

/// `1 cell`, `2 cells`.
fn cells_text(n: usize) -> String {
    format!("{n} cell{}", if n == 1 { "" } else { "s" })
}

/// Why a token is not a plain decimal integer.
enum NotInteger {
    /// `-` then digits.
    Negative,
    /// Digits, too many for the type.
    TooLarge,
    /// Anything else (a sign `+`, a point, a letter...).
    Malformed,
}

/// The one rule for every integer of the input: one or more ASCII digits, nothing else.
fn integer<T: std::str::FromStr>(tok: &str) -> Result<T, NotInteger> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(tok) {
        return Err(if tok.strip_prefix('-').is_some_and(digits) {
            NotInteger::Negative
        } else {
            NotInteger::Malformed
        });
    }
    tok.parse().map_err(|_| NotInteger::TooLarge)
}

fn parse_depth(tok: &str) -> Result<u32, String> {
    integer(tok).map_err(|e| match e {
        NotInteger::Negative => "the depth must not be negative".into(),
        NotInteger::TooLarge => format!("the depth does not fit in 32 bits (at most {})", u32::MAX),
        NotInteger::Malformed => "the depth must be a non-negative integer (digits only)".into(),
    })
}

fn parse_cell(tok: &str) -> Result<u8, String> {
    match integer::<u64>(tok) {
        Ok(v) if v <= 6 => Ok(v as u8),
        Ok(_) | Err(NotInteger::TooLarge | NotInteger::Negative) => {
            Err("a cell must be from 0 (empty) to 6".into())
        }
        Err(NotInteger::Malformed) => {
            Err("a cell must be an integer from 0 (empty) to 6 (digits only)".into())
        }
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
        fails("3\n0 -1\n", 2, Some("-1"), "0 (empty) to 6");
        fails("3\n0 0 0\n0 0\n", 3, None, "has 2 cells");
        fails("3\n0 0\n0\n", 3, None, "has 1 cell, the first row has 2");
        // One rule for every integer: digits only.
        fails("+3\n0 0\n", 1, Some("+3"), "digits only");
        fails("3\n+1 0\n", 2, Some("+1"), "digits only");
        fails("3\n0 -0\n", 2, Some("-0"), "0 (empty) to 6");
        fails("3\n0 0\n\n0 0\n", 4, None, "blank line 3");
        let big = format!("1\n{}", "0 0 0 0 0 0 0 0 0\n".repeat(8));
        fails(&big, 9, None, "more than 64 cells");
    }

    #[test]
    fn leading_zeros_are_harmless_everywhere() {
        let p = parse("007\n01 0\n0 000006\n").unwrap();
        assert_eq!((p.depth, p.board.cells()), (7, &[1, 0, 0, 6][..]));
    }

    #[test]
    fn bytes_that_are_not_text_are_named_escaped() {
        // A UTF-8 byte order mark is skipped.
        assert_eq!(parse_bytes("\u{feff}3\n0 0\n".as_bytes()).unwrap().depth, 3);
        let e = parse_bytes(b"3\n0 0\n0 \xff1 0\n").unwrap_err();
        assert_eq!((e.line, e.token.clone()), (3, Some((2, "\\xff1".to_string()))), "{e}");
        // UTF-16: the first byte already.
        let utf16: Vec<u8> = "3\n0\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let e = parse_bytes(&[&[0xff, 0xfe][..], &utf16].concat()).unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        assert!(e.to_string().contains("UTF-16") && e.to_string().contains("\\xff\\xfe3\\0"), "{e}");
        // Characters that do not print as themselves are escaped; a long token is cut.
        let e = parse("3\n0 \u{1b}[31m\0\n").unwrap_err();
        assert!(e.to_string().contains("`\\u{1b}[31m\\0`"), "{e}");
        let e = parse(&format!("3\n0 {}\n", "9".repeat(1 << 20))).unwrap_err();
        assert!(e.to_string().len() < 200 && e.to_string().contains('…'), "{e}");
        let e = parse("\u{feff}3\n0\n").unwrap_err();
        assert!(e.to_string().contains("`\\u{feff}3`"), "{e}");
    }

    #[test]
    fn largest_depth_is_accepted() {
        assert_eq!(parse("4294967295\n1\n").unwrap().depth, u32::MAX);
    }
}
