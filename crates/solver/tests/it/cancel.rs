//! Cancelling a run ([`solver::Cancel`]) from its observer: the run stops before the next
//! depth, returns [`Error::Cancelled`], removes its scratch files, and its checkpoint resumes
//! to the answer of a run never stopped. Every test works under the build's temporary
//! directory and removes what it made.

use crate::common::{self, entries, saved_depth};

use solver::{perft, solve, solve_observed, Board, Cancel, Error, Options, Shape};

/// A 4x4 run to depth 10, every partition on disk, cancelled by its observer once depth
/// `stop_after` is done: it plays no later depth, leaves no scratch, and its checkpoint
/// resumes to the right answer.
fn cancel_and_resume(threads: usize, stop_after: u32) {
    let board = Board::empty(Shape::new(4, 4).unwrap());
    let depth = 10;
    let want = solve(&board, depth, &Options::default().with_threads(threads)).unwrap().answer;
    let tmp = common::temp_dir("cancel");
    let (work, ck) = (tmp.path().join("work"), tmp.path().join("ck"));
    let cancel = Cancel::new();
    let options = Options::default()
        .with_threads(threads)
        .with_memory_limit(1)
        .with_work_dir(&work)
        .with_checkpoint(&ck)
        .with_cancel(cancel.clone());
    let mut seen = Vec::new();
    let got = solve_observed(&board, depth, &options, &mut |s| {
        seen.push(s.depth);
        if s.depth == stop_after {
            cancel.cancel();
        }
    });
    match got {
        Err(Error::Cancelled { depth }) => assert_eq!(depth, stop_after + 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(seen, (0..=stop_after).collect::<Vec<_>>(), "depths played after the cancel");
    assert!(entries(&work).is_empty(), "scratch left: {:?}", entries(&work));
    assert_eq!(saved_depth(&ck), stop_after);
    assert!(
        entries(&ck).iter().all(|e| e == "checkpoint" || *e == format!("depth-{stop_after}")),
        "{:?}",
        entries(&ck)
    );
    // Resumed (cancel not asked), on disk again: the answer of a run never stopped.
    let resume =
        Options::default().with_threads(threads).with_memory_limit(1).with_work_dir(&work).with_resume(&ck);
    assert_eq!(solve(&board, depth, &resume).unwrap().answer, want);
    assert!(entries(&work).is_empty(), "scratch left: {:?}", entries(&work));
    tmp.close().unwrap();
}

#[test]
fn a_4x4_run_cancelled_by_its_observer_stops_and_resumes() {
    cancel_and_resume(1, 3);
    cancel_and_resume(2, 6);
}

#[test]
fn a_cancelled_count_stops_too() {
    let cancel = Cancel::new();
    let options = Options::default().with_threads(1).with_cancel(cancel.clone());
    let board = Board::empty(Shape::new(3, 4).unwrap());
    let mut seen = 0;
    let got = solver::perft_distributed(&board, 12, &options, &solver::Solo, &mut |s| {
        seen = s.depth;
        if s.depth == 4 {
            cancel.cancel();
        }
    });
    assert!(matches!(got, Err(Error::Cancelled { depth: 5 })), "{got:?}");
    assert_eq!(seen, 4);
    // A token never cancelled changes nothing.
    let quiet = Options::default().with_threads(1).with_cancel(Cancel::new());
    assert_eq!(perft(&board, 6, &quiet).unwrap().rows, perft(&board, 6, &Options::default()).unwrap().rows);
}
