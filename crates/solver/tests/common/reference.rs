//! The plain reference solver: whole boards in a `HashMap`, no symmetry, no tables, no packing,
//! the rules written out directly from the statement. Shared by the property tests and the
//! `reference` example (which `cargo xtask bench` times as the plain oracle); each uses some.
#![allow(dead_code)]

use std::collections::HashMap;

/// The rules written out directly from the statement.
pub fn moves(cells: &[u8], rows: usize, cols: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..cells.len() {
        if cells[i] != 0 {
            continue;
        }
        let (r, c) = (i / cols, i % cols);
        // The orthogonal neighbours holding dice: up, down, left, right.
        let nbrs = [
            (r > 0, i.wrapping_sub(cols)),
            (r + 1 < rows, i + cols),
            (c > 0, i.wrapping_sub(1)),
            (c + 1 < cols, i + 1),
        ];
        let (mut occupied, mut n) = ([0; 4], 0);
        for (on_board, j) in nbrs {
            if on_board && cells[j] != 0 {
                occupied[n] = j;
                n += 1;
            }
        }
        let mut captured_any = false;
        for mask in 0u32..(1 << n) {
            let subset = || (0..n).filter(move |k| mask >> k & 1 == 1).map(|k| occupied[k]);
            let sum: u32 = subset().map(|j| cells[j] as u32).sum();
            if mask.count_ones() >= 2 && sum <= 6 {
                captured_any = true;
                let mut next = cells.to_vec();
                for j in subset() {
                    next[j] = 0;
                }
                next[i] = sum as u8;
                out.push(next);
            }
        }
        if !captured_any {
            let mut next = cells.to_vec();
            next[i] = 1;
            out.push(next);
        }
    }
    out
}

pub fn hash(cells: &[u8]) -> u64 {
    cells.iter().fold(0u64, |h, &v| (h * 10 + v as u64) % (1 << 30))
}

/// Sum of final hashes mod 2^30, and the number of distinct boards at each depth.
pub fn reference(cells: &[u8], rows: usize, cols: usize, depth: u32) -> (u32, Vec<usize>) {
    let (answers, distinct) = answers_and_boards(cells, rows, cols, depth);
    (*answers.last().expect("depth 0 at least"), distinct)
}

/// The answer at every depth from 0 to `depth` (each the sum of `reference` at that depth),
/// from one pass.
pub fn answers(cells: &[u8], rows: usize, cols: usize, depth: u32) -> Vec<u32> {
    answers_and_boards(cells, rows, cols, depth).0
}

/// The answer and the number of distinct boards at every depth from 0 to `depth`.
pub fn answers_and_boards(cells: &[u8], rows: usize, cols: usize, depth: u32) -> (Vec<u32>, Vec<usize>) {
    let mut frontier: HashMap<Vec<u8>, u64> = HashMap::new();
    frontier.insert(cells.to_vec(), 1);
    // The hashes of paths ended on a full board so far.
    let mut ended = 0u64;
    let (mut out, mut distinct) = (Vec::new(), vec![1]);
    for d in 0..=depth {
        let open: u64 = frontier.iter().map(|(b, &n)| n * hash(b) % (1 << 30)).sum();
        out.push(((ended + open) % (1 << 30)) as u32);
        if d == depth {
            break;
        }
        let mut next: HashMap<Vec<u8>, u64> = HashMap::new();
        for (board, n) in frontier {
            if board.iter().all(|&v| v != 0) {
                ended = (ended + n * hash(&board)) % (1 << 30);
                continue;
            }
            for m in moves(&board, rows, cols) {
                let e = next.entry(m).or_insert(0);
                *e = (*e + n) % (1 << 30);
            }
        }
        frontier = next;
        distinct.push(frontier.len());
    }
    (out, distinct)
}

/// One `depth perft ended boards` row of an exact count.
pub type PerftRow = (u32, u128, u128, u64);

/// Exact counts from `cells`, depth by depth from 1 up to `depth` or the last depth at which
/// a game goes on (checked arithmetic: a count that would not fit panics), and the distinct
/// boards reached at any depth from 0.
pub fn perft(cells: &[u8], rows: usize, cols: usize, depth: u32) -> (Vec<PerftRow>, usize) {
    let mut frontier: HashMap<Vec<u8>, u128> = HashMap::from([(cells.to_vec(), 1)]);
    let mut seen: std::collections::HashSet<Vec<u8>> = frontier.keys().cloned().collect();
    let full = |b: &[u8]| b.iter().all(|&v| v != 0);
    let mut table = Vec::new();
    for d in 1..=depth {
        let mut next: HashMap<Vec<u8>, u128> = HashMap::new();
        for (board, n) in frontier.iter().filter(|(b, _)| !full(b)) {
            for m in moves(board, rows, cols) {
                let e = next.entry(m).or_insert(0);
                *e = e.checked_add(*n).expect("counts fit 128 bits");
            }
        }
        if next.is_empty() {
            break;
        }
        let perft = next.values().try_fold(0u128, |a, &n| a.checked_add(n)).expect("fits");
        let ended = next.iter().filter(|(b, _)| full(b)).map(|(_, &n)| n).sum();
        table.push((d, perft, ended, next.len() as u64));
        seen.extend(next.keys().cloned());
        frontier = next;
    }
    (table, seen.len())
}
