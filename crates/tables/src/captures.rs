//! The capture rule, independent of the board's shape.
//!
//! A cell's neighbourhood is written as a *pattern*: the values of its (up to four) orthogonal
//! neighbours, 3 bits each, neighbour `k` in bits `3k..3k+3`, `0` for an empty or absent
//! neighbour. [`PLACEMENTS`] lists, for every pattern, the moves that fill the cell.

/// Number of distinct neighbourhood patterns (4 neighbours of 3 bits each).
pub const NUM_PATTERNS: usize = 1 << 12;

/// The largest number of moves one empty cell can have (6 pairs + 4 triples + 1 quadruple).
pub const MAX_PLACEMENTS: usize = 11;

/// One way to fill an empty cell: the neighbours it captures and the die it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Bit `k` set: neighbour `k` is captured (emptied). Zero for a plain placement.
    pub captured: u8,
    /// The die placed: the captured sum, or 1 when nothing is captured.
    pub die: u8,
}

/// All moves of an empty cell with a given pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placements {
    /// How many entries of `list` are used (always at least 1).
    pub len: u8,
    /// The moves, in increasing order of their `captured` mask.
    pub list: [Placement; MAX_PLACEMENTS],
}

impl Placements {
    /// The used part of the list.
    pub fn as_slice(&self) -> &[Placement] {
        &self.list[..self.len as usize]
    }
}

/// The value of neighbour `k` in `pattern`.
pub const fn neighbour(pattern: usize, k: usize) -> u8 {
    ((pattern >> (3 * k)) & 7) as u8
}

/// Every move of an empty cell whose neighbours form `pattern`.
///
/// A subset of at least two occupied neighbours whose dice sum to 6 or less is a capture;
/// each such subset is its own move. When there is none, the move places a 1.
pub const fn placements(pattern: usize) -> Placements {
    let mut out = Placements { len: 0, list: [Placement { captured: 0, die: 0 }; MAX_PLACEMENTS] };
    let mut mask = 0;
    while mask < 16 {
        let (mut size, mut sum, mut ok) = (0, 0u32, true);
        let mut k = 0;
        while k < 4 {
            if mask >> k & 1 == 1 {
                let v = neighbour(pattern, k);
                ok = ok && v != 0;
                size += 1;
                sum += v as u32;
            }
            k += 1;
        }
        if ok && size >= 2 && sum <= 6 {
            out.list[out.len as usize] = Placement { captured: mask as u8, die: sum as u8 };
            out.len += 1;
        }
        mask += 1;
    }
    if out.len == 0 {
        out.list[0] = Placement { captured: 0, die: 1 };
        out.len = 1;
    }
    out
}

const fn build_placements() -> [Placements; NUM_PATTERNS] {
    let mut t = [placements(0); NUM_PATTERNS];
    let mut x = 0;
    while x < NUM_PATTERNS {
        t[x] = placements(x);
        assert!(t[x].len >= 1 && t[x].len as usize <= MAX_PLACEMENTS);
        x += 1;
    }
    t
}

/// The moves of an empty cell, indexed by its neighbourhood pattern. The tables built from the
/// moves read them here, so that the const evaluator (slow) lists each pattern's moves once.
pub static PLACEMENTS: [Placements; NUM_PATTERNS] = build_placements();

const fn build_move_count() -> [u8; NUM_PATTERNS] {
    let mut t = [0u8; NUM_PATTERNS];
    let mut x = 0;
    while x < NUM_PATTERNS {
        t[x] = PLACEMENTS[x].len;
        x += 1;
    }
    t
}

/// The number of moves of each pattern (`PLACEMENTS[x].len`, in a compact table for hot loops).
pub static MOVE_COUNT: [u8; NUM_PATTERNS] = build_move_count();

/// Sums over all the moves of one pattern: what the last depth needs to add up the hashes of
/// every successor without generating them (hashes are linear in the cell values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatternSums {
    /// Number of moves.
    pub moves: u32,
    /// Sum of the dice placed.
    pub dice: u32,
    /// For each neighbour `k`: its value times the number of moves that capture it.
    pub captured: [u32; 4],
}

const fn build_pattern_sums() -> [PatternSums; NUM_PATTERNS] {
    let mut t = [PatternSums { moves: 0, dice: 0, captured: [0; 4] }; NUM_PATTERNS];
    let mut x = 0;
    while x < NUM_PATTERNS {
        let p = &PLACEMENTS[x];
        let mut i = 0;
        while i < p.len as usize {
            let m = p.list[i];
            t[x].moves += 1;
            t[x].dice += m.die as u32;
            let mut k = 0;
            while k < 4 {
                if m.captured >> k & 1 == 1 {
                    t[x].captured[k] += neighbour(x, k) as u32;
                }
                k += 1;
            }
            i += 1;
        }
        x += 1;
    }
    t
}

/// Per-pattern sums over the moves, indexed like [`PLACEMENTS`].
pub static PATTERN_SUMS: [PatternSums; NUM_PATTERNS] = build_pattern_sums();

/// Slow twin of [`placements`]: enumerates subsets by recursion over the neighbours.
pub fn placements_slow(pattern: usize) -> Vec<Placement> {
    fn walk(pattern: usize, k: usize, chosen: Vec<usize>, out: &mut Vec<Placement>) {
        if k == 4 {
            let dice: Vec<u8> = chosen.iter().map(|&k| neighbour(pattern, k)).collect();
            let sum: u32 = dice.iter().map(|&v| v as u32).sum();
            if dice.len() >= 2 && dice.iter().all(|&v| v > 0) && sum <= 6 {
                let captured = chosen.iter().fold(0u8, |m, &k| m | 1 << k);
                out.push(Placement { captured, die: sum as u8 });
            }
            return;
        }
        walk(pattern, k + 1, chosen.clone(), out);
        let mut with = chosen;
        with.push(k);
        walk(pattern, k + 1, with, out);
    }
    let mut out = Vec::new();
    walk(pattern, 0, Vec::new(), &mut out);
    out.sort_by_key(|p| p.captured);
    if out.is_empty() {
        out.push(Placement { captured: 0, die: 1 });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_match_slow_twin_on_every_pattern() {
        for x in 0..NUM_PATTERNS {
            assert_eq!(PLACEMENTS[x].as_slice(), placements_slow(x).as_slice(), "pattern {x:#o}");
        }
    }

    #[test]
    fn pattern_sums_match_placements() {
        for x in 0..NUM_PATTERNS {
            let list = placements_slow(x);
            let s = PATTERN_SUMS[x];
            assert_eq!(s.moves as usize, list.len());
            assert_eq!(MOVE_COUNT[x] as usize, list.len());
            assert_eq!(s.dice, list.iter().map(|p| p.die as u32).sum::<u32>());
            for k in 0..4 {
                let c: u32 =
                    list.iter().filter(|p| p.captured >> k & 1 == 1).map(|_| neighbour(x, k) as u32).sum();
                assert_eq!(s.captured[k], c);
            }
        }
    }

    #[test]
    fn known_cases() {
        // Two neighbours 1 and 2: one capture, die 3.
        assert_eq!(placements_slow(0o21), vec![Placement { captured: 0b11, die: 3 }]);
        // Four neighbours of 1: 6 pairs, 4 triples, 1 quadruple.
        assert_eq!(PLACEMENTS[0o1111].len, 11);
        // 6 and 1 sum to 7: no capture, a 1 is placed.
        assert_eq!(PLACEMENTS[0o16].as_slice(), &[Placement { captured: 0, die: 1 }]);
    }
}
