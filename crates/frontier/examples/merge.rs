//! Fills a sharded frontier with repeated keys and shows the merged counts.

use frontier::Frontier;

fn main() {
    let mut f = Frontier::<u64, [u32; 4]>::new(4);
    let mut x = 7u64;
    for i in 0..100_000u32 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let key = x >> 52; // 4096 distinct keys
        let shard = f.shard_of(&key);
        f.shard_mut(shard).insert(key, &[1, i & 1, 0, 0]);
    }
    println!("{} distinct keys in {} shards", f.len(), f.shards().len());
    let total: u32 = f.shards().iter().flat_map(|s| s.iter()).map(|(_, c)| c[0]).sum();
    println!("total count {total} (one per insert)");
}
