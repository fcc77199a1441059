//! Every kind of failure of the library's calls is an [`Error`] variant a caller can match,
//! with its source kept: bad options, a backend this CPU lacks, refused checkpoints, a disk
//! down to its reserve, a failed rank, bad input and moves, a cancelled run. Every test works
//! under the build's temporary directory and removes what it made.

use crate::common::{self, entries};

use std::io;

use solver::{
    parse, perft, solve, solve_distributed, Board, Cancel, CheckpointErrorKind, DiskReserve, Error,
    InProcess, Level, Options, Shape,
};

fn empty(rows: usize, cols: usize) -> Board {
    Board::empty(Shape::new(rows, cols).unwrap())
}

#[test]
fn a_bad_thread_count_is_an_options_error() {
    for n in [0, solver::MAX_THREADS + 1] {
        match solve(&empty(2, 2), 3, &Options::default().with_threads(n)) {
            Err(Error::Options { reason }) => assert!(reason.contains("threads"), "{reason}"),
            other => panic!("{n} threads: {other:?}"),
        }
    }
    // Exact counts refuse the options of other countings.
    let lanes = Options::default().with_lanes(true);
    assert!(matches!(perft(&empty(2, 2), 3, &lanes), Err(Error::Options { .. })));
    assert!(matches!(solver::divide(&empty(2, 2), 0, &Options::default()), Err(Error::Options { .. })));
}

#[test]
fn a_backend_this_cpu_lacks_is_a_backend_error() {
    let Some(missing) = [Level::Avx2, Level::Avx512].into_iter().find(|l| !l.is_available()) else {
        return; // This CPU has every backend.
    };
    match solve(&empty(2, 2), 3, &Options::default().with_backend(missing)) {
        Err(Error::Backend { level }) => assert_eq!(level, missing),
        other => panic!("{other:?}"),
    }
}

#[test]
fn refused_checkpoints_say_why() {
    let tmp = common::temp_dir("errors-checkpoint");
    let ck = tmp.path().join("ck");
    std::fs::create_dir(&ck).unwrap();
    std::fs::write(ck.join("thesis.tex"), "mine").unwrap();
    let board = empty(2, 3);
    let kind = |r: solver::Result<solver::Answer>| match r {
        Err(Error::Checkpoint(e)) => {
            assert!(e.dir().starts_with(tmp.path()), "{e}");
            e.kind()
        }
        other => panic!("{other:?}"),
    };
    let options = Options::default().with_threads(1).with_checkpoint(&ck);
    assert_eq!(kind(solve(&board, 6, &options)), CheckpointErrorKind::NotEmpty);
    assert_eq!(entries(&ck), ["thesis.tex"], "the user's file stays, alone");
    let missing = Options::default().with_resume(tmp.path().join("nothing"));
    assert_eq!(kind(solve(&board, 6, &missing)), CheckpointErrorKind::Missing);
    // A checkpoint of depth 6 of this board: another depth, another board, a corrupt manifest.
    std::fs::remove_file(ck.join("thesis.tex")).unwrap();
    let want = solve(&board, 6, &options).unwrap().answer;
    let resume = Options::default().with_resume(&ck);
    assert_eq!(kind(solve(&board, 7, &resume)), CheckpointErrorKind::OtherProblem);
    assert_eq!(kind(solve(&empty(3, 2), 6, &resume)), CheckpointErrorKind::OtherProblem);
    std::fs::write(ck.join("notes.txt"), "mine").unwrap();
    assert_eq!(kind(solve(&board, 6, &resume)), CheckpointErrorKind::Foreign);
    std::fs::remove_file(ck.join("notes.txt")).unwrap();
    let manifest = ck.join("checkpoint");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replacen("depth = 6", "depth = 5", 1)).unwrap();
    assert_eq!(kind(solve(&board, 6, &resume)), CheckpointErrorKind::Corrupt);
    std::fs::write(&manifest, &text).unwrap();
    assert_eq!(solve(&board, 6, &resume).unwrap().answer, want);
    tmp.close().unwrap();
}

#[test]
fn a_disk_down_to_its_reserve_is_an_io_error_naming_the_file() {
    let tmp = common::temp_dir("errors-disk");
    let work = tmp.path().join("work");
    // Every partition on disk, and a reserve no disk has: the first file written fails.
    let options = Options::default()
        .with_threads(1)
        .with_memory_limit(1)
        .with_work_dir(&work)
        .with_disk_reserve(DiskReserve::Bytes(u64::MAX));
    match solve(&empty(3, 3), 8, &options.clone().with_general(true)) {
        Err(e @ Error::Io { .. }) => {
            let Error::Io { action, path, source } = &e else { unreachable!() };
            assert_eq!((*action, source.kind()), ("cannot write", io::ErrorKind::StorageFull), "{e}");
            assert!(path.starts_with(&work), "{e}");
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
            let source = std::error::Error::source(&e).expect("the system's error is kept");
            assert!(source.to_string().contains("free"), "{source}");
        }
        other => panic!("{other:?}"),
    }
    assert!(entries(&work).is_empty(), "scratch left: {:?}", entries(&work));
    // A work directory that is a file cannot hold a scratch directory.
    std::fs::write(tmp.path().join("file"), "").unwrap();
    let blocked = Options::default().with_memory_limit(1).with_work_dir(tmp.path().join("file"));
    match solve(&empty(3, 3), 8, &blocked.with_general(true)) {
        Err(Error::Io { path, .. }) => assert!(path.starts_with(tmp.path()), "{path:?}"),
        other => panic!("{other:?}"),
    }
    tmp.close().unwrap();
}

#[test]
fn a_rank_that_fails_fails_every_rank() {
    let tmp = common::temp_dir("errors-rank");
    std::fs::write(tmp.path().join("thesis.tex"), "mine").unwrap();
    let options = Options::default().with_threads(1).with_checkpoint(tmp.path());
    let board = empty(2, 3);
    let got: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = InProcess::ranks(2)
            .into_iter()
            .map(|c| {
                let (board, options) = (&board, &options);
                s.spawn(move || solve_distributed(board, 5, options, &c, &mut |_| ()))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(matches!(&got[0], Err(Error::Checkpoint(e)) if e.kind() == CheckpointErrorKind::NotEmpty));
    assert!(matches!(&got[1], Err(Error::Rank { rank: 0 })), "{:?}", got[1]);
    tmp.close().unwrap();
}

#[test]
fn bad_input_and_moves_are_their_own_errors() {
    let e: Error = parse("3\n0 0\n0 9\n").unwrap_err().into();
    match &e {
        Error::Input(input) => assert_eq!(input.line, 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.to_string(), "line 3, token 2 `9`: a cell must be from 0 (empty) to 6");
    let problem = parse("2\n0 0\n0 0\n").unwrap();
    assert!(matches!(problem.after_moves("a1,z9"), Err(Error::Move(m)) if m.index == 2));
    assert!(matches!(problem.after_moves("a1,b1,a2"), Err(Error::Options { .. })));
}

#[test]
fn a_cancelled_run_is_a_cancelled_error() {
    let cancel = Cancel::new();
    cancel.cancel();
    let options = Options::default().with_cancel(cancel);
    assert!(matches!(solve(&empty(3, 3), 10, &options), Err(Error::Cancelled { depth: 1 })));
    assert!(matches!(perft(&empty(2, 3), 10, &options), Err(Error::Cancelled { depth: 1 })));
    // Depth 0 plays no move: nothing to cancel.
    assert_eq!(solve(&empty(3, 3), 0, &options).unwrap().answer, 0);
}
