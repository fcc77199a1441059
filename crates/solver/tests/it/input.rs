//! The input parser against arbitrary bytes and near-valid inputs: it never panics, every input
//! it accepts is a valid problem that reads back the same, and every error names a line of
//! the input and shows no raw control character.

use proptest::prelude::*;
use solver::{parse, parse_bytes, Problem};

/// The problem written back in the input format.
fn render(p: &Problem) -> String {
    let cols = p.board.shape().cols();
    let rows: Vec<String> = p
        .board
        .cells()
        .chunks(cols)
        .map(|r| r.iter().map(u8::to_string).collect::<Vec<_>>().join(" "))
        .collect();
    format!("{}\n{}\n", p.depth, rows.join("\n"))
}

/// What every outcome of the parser must satisfy, for input `bytes`.
fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    match parse_bytes(bytes) {
        Ok(p) => {
            let shape = p.board.shape();
            prop_assert!(p.board.cells().len() == shape.rows() * shape.cols());
            prop_assert!((1..=64).contains(&p.board.cells().len()));
            prop_assert!(p.board.cells().iter().all(|&c| c <= 6));
            let again = parse(&render(&p));
            prop_assert_eq!(again.as_ref(), Ok(&p));
        }
        Err(e) => {
            let lines = bytes.split(|&b| b == b'\n').count();
            prop_assert!(e.line >= 1 && e.line <= lines + 1, "line {} of {}: {}", e.line, lines, e);
            let shown = e.to_string();
            prop_assert!(!shown.chars().any(|c| c.is_control()), "raw control character in {:?}", shown);
        }
    }
    Ok(())
}

/// A valid problem's text: a depth and a board of 1 to 8 rows and columns.
fn valid() -> impl Strategy<Value = String> {
    (0u32..100, 1usize..=8, 1usize..=8).prop_flat_map(|(depth, rows, cols)| {
        proptest::collection::vec(0u8..=6, rows * cols).prop_map(move |cells| {
            let rows: Vec<String> = cells
                .chunks(cols)
                .map(|r| r.iter().map(u8::to_string).collect::<Vec<_>>().join(" "))
                .collect();
            format!("{depth}\n{}\n", rows.join("\n"))
        })
    })
}

/// Pieces that near-valid inputs are made of: separators, signs, digits out of range, a byte
/// order mark, NUL, an escape sequence, a letter with an accent, bytes that are not UTF-8.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b" ".to_vec()),
        Just(b"\t".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"+".to_vec()),
        Just(b"-".to_vec()),
        Just(b"7".to_vec()),
        Just(b"00".to_vec()),
        Just(b"99999999999".to_vec()),
        Just("\u{feff}".as_bytes().to_vec()),
        Just(b"\0".to_vec()),
        Just(b"\x1b[2J".to_vec()),
        Just("é".as_bytes().to_vec()),
        Just(vec![0xff]),
        Just(vec![0xc3]),
        (0u8..=9).prop_map(|d| vec![b'0' + d]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_digits_and_blanks(bytes in proptest::collection::vec(
        prop_oneof![Just(b' '), Just(b'\n'), Just(b'\t'), Just(b'\r'), (b'0'..=b'9')], 0..120)) {
        check(&bytes)?;
    }

    #[test]
    fn valid_inputs_are_accepted(text in valid()) {
        prop_assert!(parse_bytes(text.as_bytes()).is_ok(), "{:?}", text);
        check(text.as_bytes())?;
    }

    #[test]
    fn near_valid_inputs(
        text in valid(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, piece()), 1..4),
    ) {
        let mut bytes = text.into_bytes();
        for (at, kind, piece) in edits {
            let i = at.index(bytes.len() + 1);
            match kind {
                0 => { bytes.splice(i..i, piece); }
                1 if i < bytes.len() => { bytes.splice(i..i + 1, piece); }
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.extend(piece),
            }
        }
        check(&bytes)?;
    }
}
