//! Criterion micro-benchmarks, one group per stage: canonicalisation per backend, move
//! generation, frontier insertion (with and without prefetch), and whole searches.

use criterion::measurement::WallTime;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use frontier::{CountSet, Frontier};
use solver::{solve, Board, Level, Options, Shape};
use state::canon::{Canon3, Portable};
use state::{Grid, Ring3, Rules};

/// Pseudo-random 3x3 boards in the ring packing.
fn boards3(n: usize) -> Vec<u32> {
    let ring = Ring3::new(Portable);
    let mut x = 0x2545F4914F6CDD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let cells: Vec<u8> = (0..9).map(|i| ((x >> (5 * i)) % 7) as u8).collect();
            ring.pack(&cells)
        })
        .collect()
}

fn canonicalisation(c: &mut Criterion) {
    let boards = boards3(1 << 16);
    let mut g = c.benchmark_group("canonical3");
    g.throughput(Throughput::Elements(boards.len() as u64));
    #[inline(always)]
    fn run<B: Canon3>(b: B, boards: &[u32]) -> u32 {
        boards.iter().fold(0, |a, &s| a ^ b.canonical(s).0)
    }
    /// A batch at once ([`Canon3::canonical_many`]), as the solver's `direct` does, into
    /// buffers of a batch's size.
    #[inline(always)]
    fn many<B: Canon3>(b: B, boards: &[u32], out: &mut (Vec<u32>, Vec<u8>)) -> u32 {
        let mut x = 0;
        for batch in boards.chunks(1024) {
            b.canonical_many(batch, &mut out.0, &mut out.1);
            x ^= out.0[..batch.len()].iter().zip(&out.1).fold(0, |a, (&k, &t)| a ^ k ^ t as u32);
        }
        x
    }
    let mut out = (vec![0u32; 1024], vec![0u8; 1024]);
    g.bench_function("portable", |bench| bench.iter(|| run(Portable, black_box(&boards))));
    g.bench_function("portable-many", |bench| bench.iter(|| many(Portable, black_box(&boards), &mut out)));
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = state::canon::Avx2::new() {
        // Compiled for the backend's instructions, as the solver's kernels are, so that its
        // intrinsics inline.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn run_avx2(b: state::canon::Avx2, boards: &[u32]) -> u32 {
            run(b, boards)
        }
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn many_avx2(b: state::canon::Avx2, boards: &[u32], out: &mut (Vec<u32>, Vec<u8>)) -> u32 {
            many(b, boards, out)
        }
        for (name, gather) in [("avx2", true), ("avx2-no-gather", false)] {
            // `avx2-no-gather`: the ring reversed by table lookups, not BMI2's bit scatter and
            // gather.
            let b = b.with_gather(gather);
            // SAFETY: `Avx2::new` returned a backend: the CPU has these features.
            g.bench_function(name, |bench| bench.iter(|| unsafe { run_avx2(b, black_box(&boards)) }));
        }
        g.bench_function("avx2-many", |bench| {
            // SAFETY: `Avx2::new` returned a backend: the CPU has these features.
            bench.iter(|| unsafe { many_avx2(b, black_box(&boards), &mut out) })
        });
    }
    g.finish();

    wide_canonicalisation::<u64>(c, "canonical4x4", Shape::new(4, 4).unwrap());
    wide_canonicalisation::<u128>(c, "canonical5x5", Shape::new(5, 5).unwrap());
    wide_canonicalisation::<u128>(c, "canonical4x6", Shape::new(4, 6).unwrap());
}

/// A grid's canonicalisation under each level this CPU has, over pseudo-random boards of
/// `shape`, each level's loop compiled for its instructions as the solver's kernels are.
fn wide_canonicalisation<K: state::PackedKey>(c: &mut Criterion, name: &str, shape: Shape) {
    let portable = Grid::<K>::new(shape, Level::Portable);
    let mut x = 0x9E3779B97F4A7C15u64;
    let keys: Vec<K> = (0..1 << 16)
        .map(|_| {
            let cells: Vec<u8> = (0..shape.cells())
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 7) as u8
                })
                .collect();
            portable.pack(&cells)
        })
        .collect();
    #[inline(always)]
    fn run<K: state::PackedKey>(grid: &Grid<K>, keys: &[K]) -> u32 {
        // A plain loop: an iterator's `fold` may be left out of line, compiled without the
        // caller's instructions, and the SIMD helpers with it.
        let mut a = 0;
        for &s in keys {
            let (k, t) = grid.canonical(s);
            a ^= t as u32 ^ k.byte(0) as u32;
        }
        a
    }
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("portable", |bench| bench.iter(|| run(&portable, black_box(&keys))));
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn run_avx2<K: state::PackedKey>(grid: &Grid<K>, keys: &[K]) -> u32 {
            run(grid, keys)
        }
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,avx512f,avx512cd,avx512bw,avx512dq,avx512vl")]
        unsafe fn run_avx512<K: state::PackedKey>(grid: &Grid<K>, keys: &[K]) -> u32 {
            run(grid, keys)
        }
        let avx2 = Grid::<K>::new(shape, Level::Avx2);
        if avx2.level() == Level::Avx2 {
            g.bench_function("avx2", |bench| {
                // SAFETY: the grid took AVX2: the CPU has these features.
                bench.iter(|| unsafe { run_avx2(&avx2, black_box(&keys)) })
            });
        }
        let avx512 = Grid::<K>::new(shape, Level::Avx512);
        if avx512.level() == Level::Avx512 {
            g.bench_function("avx512", |bench| {
                // SAFETY: the grid took AVX-512: the CPU has these features.
                bench.iter(|| unsafe { run_avx512(&avx512, black_box(&keys)) })
            });
        }
    }
    g.finish();
}

fn move_generation(c: &mut Criterion) {
    let ring = Ring3::new(Portable);
    let boards: Vec<u32> = boards3(1 << 16).into_iter().filter(|&s| !ring.is_full(s)).collect();
    let mut g = c.benchmark_group("moves3");
    g.throughput(Throughput::Elements(boards.len() as u64));
    g.bench_function("successors", |bench| {
        bench.iter(|| {
            let mut acc = 0u32;
            for &s in &boards {
                ring.successors(s, |t| acc = acc.wrapping_add(t));
            }
            acc
        })
    });
    // Branch-free generation into a buffer (what the search runs), neighbourhood patterns by
    // shifts (portable) or one `pext` each (AVX2 backend with bit gather).
    #[inline(always)]
    fn into<B: Canon3>(ring: Ring3<B>, boards: &[u32]) -> u32 {
        let mut out = [0u32; 64];
        boards.iter().fold(0u32, |a, &s| {
            let n = ring.successors_into(s, &mut out);
            out[..n].iter().fold(a, |a, &t| a.wrapping_add(t))
        })
    }
    g.bench_function("successors_into/portable", |bench| bench.iter(|| into(ring, black_box(&boards))));
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = state::canon::Avx2::new() {
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn into_avx2(ring: Ring3<state::canon::Avx2>, boards: &[u32]) -> u32 {
            into(ring, boards)
        }
        for (name, gather) in [("successors_into/gather", true), ("successors_into/shifts", false)] {
            let r = Ring3::new(b.with_gather(gather));
            // SAFETY: `Avx2::new` returned a backend: the CPU has these features.
            g.bench_function(name, |bench| bench.iter(|| unsafe { into_avx2(r, black_box(&boards)) }));
        }
    }
    // Sixteen positions at a time (what `direct` runs): every empty cell listed, then every
    // listed cell's moves, no branch on a board (AVX2 with bit gather), or one position at a
    // time (any other backend).
    #[inline(always)]
    fn many<B: Canon3>(ring: Ring3<B>, boards: &[u32]) -> u32 {
        let (mut out, mut from) = ([0u32; 16 * 48], [0u32; 16 * 48]);
        let tags = [0u32; 16];
        boards.chunks(16).fold(0u32, |a, keys| {
            let n = ring.successors_of_many(keys, &tags[..keys.len()], &mut out, &mut from);
            out[..n].iter().fold(a, |a, &t| a.wrapping_add(t))
        })
    }
    g.bench_function("successors_of_many/portable", |bench| bench.iter(|| many(ring, black_box(&boards))));
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = state::canon::Avx2::new() {
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
        unsafe fn many_avx2(ring: Ring3<state::canon::Avx2>, boards: &[u32]) -> u32 {
            many(ring, boards)
        }
        let r = Ring3::new(b.with_gather(true));
        g.bench_function("successors_of_many/gather", |bench| {
            // SAFETY: `Avx2::new` returned a backend: the CPU has these features.
            bench.iter(|| unsafe { many_avx2(r, black_box(&boards)) })
        });
    }
    g.bench_function("successor_hashes", |bench| {
        bench.iter(|| boards.iter().fold(0u32, |a, &s| a.wrapping_add(ring.successor_hashes(s)[0])))
    });
    g.finish();

    // The general grid's successors and successor sums: 8 lanes (any start) against one total
    // (orbit masses), on 4x4 (u64) and 5x5 (u128) boards about half full.
    fn grid_moves<K: state::PackedKey>(c: &mut Criterion, name: &str, rows: usize, cols: usize) {
        let grid = Grid::<K>::new(Shape::new(rows, cols).unwrap(), Level::Portable);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let boards: Vec<K> = (0..1 << 14)
            .map(|_| {
                let cells: Vec<u8> = (0..rows * cols)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x.is_multiple_of(2) {
                            0
                        } else {
                            (x >> 8) as u8 % 6 + 1
                        }
                    })
                    .collect();
                state::pack(&cells)
            })
            .filter(|&s| !grid.is_full(s))
            .collect();
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(boards.len() as u64));
        g.bench_function("successors", |bench| {
            bench.iter(|| {
                let mut n = 0u32;
                for &s in &boards {
                    grid.successors(black_box(s), |_| n += 1);
                }
                n
            })
        });
        g.bench_function("successor_hashes (8 lanes)", |bench| {
            bench.iter(|| {
                boards.iter().fold(0u32, |a, &s| a.wrapping_add(grid.successor_hashes(black_box(s))[0]))
            })
        });
        g.bench_function("successor_hash_total", |bench| {
            bench.iter(|| {
                boards.iter().fold(0u64, |a, &s| a.wrapping_add(grid.successor_hash_total(black_box(s))))
            })
        });
        g.finish();
    }
    grid_moves::<u64>(c, "moves4x4", 4, 4);
    grid_moves::<u128>(c, "moves5x5", 5, 5);
}

fn frontier_insert(c: &mut Criterion) {
    // 1 M inserts of 300 k distinct keys, the shape of a deep 3x3 depth.
    let keys: Vec<u32> = (0..1u32 << 20).map(|i| i.wrapping_mul(2654435761) % 300_007).collect();
    let mut g = c.benchmark_group("frontier_insert");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("plain", |bench| {
        bench.iter_batched(
            || CountSet::<u32, [u32; 8]>::new(0),
            |mut set| {
                for &k in &keys {
                    set.insert(k, &[1; 8]);
                }
                set
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("prefetch", |bench| {
        bench.iter_batched(
            || {
                let mut s = CountSet::<u32, [u32; 8]>::new(0);
                s.clear_for(300_007);
                s
            },
            |mut set| {
                for (i, &k) in keys.iter().enumerate() {
                    if let Some(a) = keys.get(i + 8) {
                        set.prefetch(a);
                    }
                    set.insert(k, &[1; 8]);
                }
                set
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("sharded-256", |bench| {
        bench.iter_batched(
            || {
                let mut f = Frontier::<u32, [u32; 8]>::new(8);
                f.reset(8, 300_007 / 256 + 64);
                let mut parts: Vec<Vec<u32>> = vec![Vec::new(); 256];
                for &k in &keys {
                    parts[f.shard_of(&k)].push(k);
                }
                (f, parts)
            },
            |(mut f, parts)| {
                for (s, part) in parts.iter().enumerate() {
                    let set = f.shard_mut(s);
                    for &k in part {
                        set.insert(k, &[1; 8]);
                    }
                }
                f
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn frontier_layouts(c: &mut Criterion) {
    // 1 M inserts of 150 k distinct `u32` keys (a 3x3 peak depth), in batches of 192 whose
    // slots are prefetched first, as the search inserts: one count a key beside it (inline,
    // 16-byte slots), packed with it (8-byte words), two lanes (12 bytes, dense) and four
    // (dense).
    let keys: Vec<u32> = (0..1u32 << 20).map(|i| i.wrapping_mul(2654435761) % 150_001).collect();
    let mut g = c.benchmark_group("frontier_layouts");
    g.throughput(Throughput::Elements(keys.len() as u64));
    // The set made (and its pages faulted in) outside the timing.
    fn fill<C: frontier::Tally>(
        g: &mut criterion::BenchmarkGroup<'_, WallTime>,
        name: &str,
        keys: &[u32],
        one: C,
    ) {
        let empty = || {
            let mut set = CountSet::<u32, C>::new(0);
            set.clear_for(150_001);
            set
        };
        g.bench_function(name, |bench| {
            bench.iter_batched(
                empty,
                |mut set| {
                    for batch in keys.chunks(192) {
                        batch.iter().for_each(|k| set.prefetch(k));
                        set.insert_prefetched(batch, frontier::key_hash, |&k| k, |_| one);
                    }
                    set
                },
                BatchSize::LargeInput,
            )
        });
    }
    fill(&mut g, "inline-u64", &keys, 1u64);
    fill(&mut g, "packed-count34", &keys, frontier::Count34::new(1));
    fill(&mut g, "dense-2-lanes", &keys, [1u32; 2]);
    fill(&mut g, "dense-4-lanes", &keys, [1u32; 4]);
    g.finish();
}

fn whole_search(c: &mut Criterion) {
    let mut g = c.benchmark_group("search");
    g.sample_size(10);
    let empty3 = Board::empty(Shape::SQUARE3);
    for threads in [1, 2] {
        let o = Options::default().with_threads(threads);
        g.bench_function(format!("empty3x3-d40-t{threads}"), |b| b.iter(|| solve(&empty3, 40, &o).unwrap()));
    }
    let empty4 = Board::empty(Shape::new(4, 4).unwrap());
    let o = Options::default().with_threads(1);
    g.bench_function("empty4x4-d12-t1", |b| b.iter(|| solve(&empty4, 12, &o).unwrap()));
    g.finish();
}

criterion_group!(benches, canonicalisation, move_generation, frontier_insert, frontier_layouts, whole_search);
criterion_main!(benches);
