//! The driver's parallel loops. Each hands its work to the thread pool as a `&dyn` closure, so
//! rayon's generic code is compiled once for the whole driver, not once for every call site
//! of every copy of the engine (a copy a rules type and counting). A task is a chunk, a shard
//! or a partition, so the dynamic call costs nothing next to it.

use std::sync::Mutex;

use rayon::prelude::*;

/// Calls `f(i)` once for every `i` in `0..n`, on the thread pool.
pub(super) fn each_index(n: usize, f: &(dyn Fn(usize) + Sync)) {
    (0..n).into_par_iter().for_each(f);
}

/// Calls `f(thread)` once on every thread of the current pool, with the thread's index.
pub(super) fn on_every_thread(f: &(dyn Fn(usize) + Sync)) {
    rayon::broadcast(|ctx| f(ctx.index()));
}

/// Runs `f` on a thread of the current pool, which then takes part in the parallel loops it
/// starts (each wakes one thread fewer than a loop started from outside the pool).
pub(super) fn within<T: Send>(f: &mut (dyn FnMut() -> T + Send)) -> T {
    rayon::scope(|_| f())
}

/// Calls `f(index, item)` on every item: on the thread pool when `parallel` and there is more
/// than one item, else on the calling thread, in order.
pub(super) fn for_each_mut<T: Send>(parallel: bool, items: &mut [T], f: &(dyn Fn(usize, &mut T) + Sync)) {
    if !parallel || items.len() <= 1 {
        items.iter_mut().enumerate().for_each(|(i, t)| f(i, t));
    } else {
        map_mut(items, f);
    }
}

/// `f(index, item)` of every item, on the thread pool, in the items' order.
pub(super) fn map_mut<T: Send, U: Send>(items: &mut [T], f: &(dyn Fn(usize, &mut T) -> U + Sync)) -> Vec<U> {
    // Each lock is taken once, by the one task of its index.
    let cells: Vec<Mutex<(&mut T, Option<U>)>> = items.iter_mut().map(|t| Mutex::new((t, None))).collect();
    each_index(cells.len(), &|i| {
        let cell = &mut *cells[i].lock().unwrap_or_else(|e| e.into_inner());
        cell.1 = Some(f(i, cell.0));
    });
    cells
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).1.expect("every index ran"))
        .collect()
}

/// `f` of every item, on the thread pool, in the items' order.
pub(super) fn map<T: Send, U: Send>(items: Vec<T>, f: &(dyn Fn(T) -> U + Sync)) -> Vec<U> {
    let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
    map_mut(&mut items, &|_, t| f(t.take().expect("each index runs once")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_order() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            let mut items: Vec<u64> = (0..1000).collect();
            for_each_mut(true, &mut items, &|i, t| *t += i as u64);
            assert!(items.iter().enumerate().all(|(i, &t)| t == 2 * i as u64));
            let squares = map((0..1000u64).collect(), &|x| x * x);
            assert!(squares.iter().enumerate().all(|(i, &s)| s == (i * i) as u64));
            let seen = Mutex::new(vec![0u32; 3]);
            on_every_thread(&|me| seen.lock().unwrap()[me] += 1);
            assert_eq!(*seen.lock().unwrap(), vec![1, 1, 1]);
        });
    }
}
