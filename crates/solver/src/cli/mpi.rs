//! `solver --mpi`: one rank of an MPI job.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use super::{failure, finish, options, out, progress_target, read_input, Args, Failed, Progress, Stdout};
use solver::{parse_bytes, DepthStats};

/// One rank of an MPI job. Rank 0 reads and checks the problem and sends its text to every
/// rank (or its failure: then every rank ends with rank 0's exit code); every rank solves
/// with its own options; rank 0 prints. An error on any rank, or a panic, is printed with the
/// rank's number and ends every rank of the job (`MPI_Abort`): the others would wait for it
/// for ever. Nothing goes to stdout unless every rank finished, but the `--all-depths` lines
/// of the depths done (each printed as its depth ends, over every rank).
pub fn main(args: &Args) -> ExitCode {
    let (_universe, ranks) = match solver::mpi::start() {
        Ok(started) => started,
        Err(e) => return Failed::Run(1, format!("--mpi: {e}")).exit(),
    };
    let rank = solver::Cluster::rank(&ranks);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        let _ = writeln!(io::stderr(), "rank {rank}: panicked; ending every rank");
        solver::mpi::abort(101)
    }));
    let mut stdout = (rank == 0).then(Stdout::open);
    let mut message = match &stdout {
        Some(stdout) => rank_zero_message(args, stdout),
        None => vec![0u8],
    };
    ranks.broadcast(&mut message);
    if message[0] != 0 {
        return ExitCode::from(message[0]);
    }
    let fail = |e: (u8, String)| -> ! { fail(rank, e) };
    let problem = parse_bytes(&message[1..]).map_err(|e| (2, e.to_string()));
    let problem = problem.and_then(|p| super::count::descended(args, p)).unwrap_or_else(|e| fail(e));
    let options = options(args);
    let started = Instant::now();
    let mut progress =
        Progress::new(problem.depth, started, if rank == 0 { progress_target(args) } else { None });
    let mut stdout = match stdout.take() {
        Some(Ok(stdout)) => Some(stdout),
        _ => None,
    };
    let count = super::count::Count::of(args);
    if count != super::count::Count::Answer {
        let out = stdout.as_mut().map(|s| &mut s.0);
        return counted(count, args, &problem, &options, &ranks, &mut progress, out);
    }
    let answer = {
        let stream = args.all_depths && !args.json;
        let mut out = stdout.as_mut().map(|s| &mut s.0);
        let mut observe = |s: &DepthStats| {
            progress.depth_done(s);
            if let (true, Some(answer), Some(out)) = (stream, s.answer, out.as_deref_mut()) {
                if let Err(e) = progress.suspend(|| out::depth_line(out, s.depth, answer)) {
                    let _ = out::write_failed(&e);
                    solver::mpi::abort(1)
                }
            }
        };
        solver::solve_streamed(&problem.board, problem.depth, &options, &ranks, &mut observe)
            .unwrap_or_else(|e| fail(failure(e)))
    };
    progress.finish();
    let Some(mut stdout) = stdout else { return ExitCode::SUCCESS };
    let mut answer = answer;
    if let (Some(ck), Some(dir)) = (&mut answer.checkpoint, args.checkpoint.as_ref().or(args.resume.as_ref()))
    {
        // Rank 0's part is in a directory of its own; the checkpoint is the one given.
        ck.dir.clone_from(dir);
    }
    match finish(args, &problem, &answer, &options, started.elapsed().as_secs_f64(), &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failed) => failed.exit(),
    }
}

/// Prints rank `rank`'s error and ends every rank of the job with its exit code.
fn fail(rank: usize, (code, msg): (u8, String)) -> ! {
    let _ = writeln!(io::stderr(), "rank {rank}: error: {msg}");
    solver::mpi::abort(i32::from(code))
}

/// `--perft` or `--divide` as this rank (see [`super::count::run`]): a row that cannot be
/// written, or an error, ends every rank.
fn counted(
    count: super::count::Count,
    args: &Args,
    problem: &solver::Problem,
    options: &solver::Options,
    ranks: &solver::mpi::Mpi,
    progress: &mut Progress,
    out: Option<&mut std::fs::File>,
) -> ExitCode {
    let stop: fn(&io::Error) -> ! = |e| {
        let _ = out::write_failed(e);
        solver::mpi::abort(1)
    };
    match super::count::run(count, args, problem, options, ranks, progress, out, Some(stop)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed::Run(code, msg)) => fail(solver::Cluster::rank(ranks), (code, msg)),
        Err(failed) => failed.exit(),
    }
}

/// What rank 0 sends every rank: its status (0, or the exit code of its failure, said on
/// stderr) and then the problem's text, read and checked.
fn rank_zero_message(args: &Args, stdout: &io::Result<Stdout>) -> Vec<u8> {
    let read = match stdout {
        Err(e) => Err((1, format!("cannot write to stdout: {e}"))),
        Ok(_) => read_input(args.file.as_ref()).and_then(|(bytes, source)| {
            parse_bytes(&bytes).map(|_| bytes).map_err(|e| (2, format!("{source}: {e}")))
        }),
    };
    match read {
        Ok(bytes) => [&[0u8][..], &bytes].concat(),
        Err((code, msg)) => {
            let _ = writeln!(io::stderr(), "error: {msg}");
            vec![code]
        }
    }
}
