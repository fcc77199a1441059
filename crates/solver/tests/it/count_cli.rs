//! `--perft`, `--divide` and `--moves` on the command line: output formats, exit codes and
//! messages.

use crate::common;
use common::run;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../fixtures/perft/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn perft_prints_the_published_table() {
    for name in ["2x2_d12", "3x3_g_d16", "2x3_empty_d100"] {
        let (code, out, err) = run(&["--perft"], &fixture(&format!("{name}.in")));
        assert_eq!((code, out.as_str()), (0, fixture(&format!("{name}.perft")).as_str()), "{name}: {err}");
    }
    // Every game over: the summary goes to stderr.
    let (_, _, err) = run(&["--perft"], &fixture("2x2_d12.in"));
    assert!(err.contains("every game over: 832 games, the longest of 12 moves"), "{err}");
}

#[test]
fn perft_json_gives_counts_as_strings() {
    let (code, out, err) = run(&["--perft", "--json"], "4294967295\n0 0\n0 0\n");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][0]["perft"], "4");
    assert_eq!(v["rows"][0]["boards"], "4");
    assert!(v["games"].is_string() && v["state_space"].is_string(), "{v}");
    assert_eq!(v["longest"], v["rows"].as_array().unwrap().len());
}

#[test]
fn divide_lists_each_first_move_and_sums_to_the_total() {
    let input = "3\n0 1 0\n2 0 3\n0 6 0\n";
    let (code, out, err) = run(&["--divide"], input);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split(' ').collect()).collect();
    assert!(lines.iter().any(|l| l[0] == "b2:b1+a2"), "{out}");
    let total: u128 = lines.iter().map(|l| l[1].parse::<u128>().unwrap()).sum();
    let answer = lines.iter().fold(0u64, |a, l| (a + l[2].parse::<u64>().unwrap()) % (1 << 30));
    let (_, perft, _) = run(&["--perft"], input);
    assert_eq!(total.to_string(), perft.lines().last().unwrap().split(' ').nth(1).unwrap());
    let (_, plain, _) = run(&[], input);
    assert_eq!(answer.to_string(), plain.trim());
    assert!(err.contains(&format!("total: {total} sequences of 3 moves, answer {answer}")), "{err}");
    // Descending into a move: the child's division sums to that move's line.
    let (code, below, err) = run(&["--divide", "--moves", "b2:b1+a2"], input);
    assert_eq!(code, 0, "{err}");
    let sum: u128 = below.lines().map(|l| l.split(' ').nth(1).unwrap().parse::<u128>().unwrap()).sum();
    let line = lines.iter().find(|l| l[0] == "b2:b1+a2").unwrap();
    assert_eq!(sum.to_string(), line[1]);
}

#[test]
fn bad_moves_are_refused_with_the_token() {
    for (moves, says) in [("b2,z9", "move 2 `z9`"), ("a1:b1", "not a legal move"), ("x", "not a cell")] {
        let (code, out, err) = run(&["--perft", "--moves", moves], "3\n0 0\n0 0\n");
        assert_eq!((code, out.as_str()), (2, ""), "{moves}");
        assert!(err.contains(says), "{moves}: {err}");
    }
    let (code, out, err) = run(&["--perft", "--moves", "a1,b1"], "1\n0 0\n0 0\n");
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("more than the depth"), "{err}");
    let (code, _, err) = run(&["--divide"], "0\n0 0\n0 0\n");
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(&["--perft", "--divide"], "2\n0 0\n0 0\n");
    assert_eq!(code, 2, "{err}");
}

#[test]
fn moves_also_descend_for_the_answer() {
    // Two moves down from the empty 2x2 at depth 5 is the answer of their board at depth 3.
    let (_, here, _) = run(&["--moves", "a1,b2"], "5\n0 0\n0 0\n");
    let (_, there, _) = run(&[], "3\n1 0\n0 1\n");
    assert_eq!(here, there);
}
