//! This process's part of the test data when several processes (the agents of a distributed
//! run) run one plan: with `parts` agents, agent `part` takes rows `part`, `part + parts`,
//! `part + 2 × parts`, … of a `unique` feeder, so that every row goes to exactly one VU across
//! all agents without any agent talking to another. One plan runs per process, so this is
//! process-wide; a process that never sets it has the whole table (part 0 of 1).

use std::sync::atomic::{AtomicU64, Ordering};

static PART: AtomicU64 = AtomicU64::new(0);
static PARTS: AtomicU64 = AtomicU64::new(1);

/// Sets this process's part (`part < parts`); call it before the run starts.
pub fn set_process_share(part: u64, parts: u64) {
    let parts = parts.max(1);
    PARTS.store(parts, Ordering::Relaxed);
    PART.store(part.min(parts - 1), Ordering::Relaxed);
}

/// `(part, parts)`.
#[inline]
pub fn process_share() -> (u64, u64) {
    (PART.load(Ordering::Relaxed), PARTS.load(Ordering::Relaxed))
}

/// How many of `n` rows (or values) are this part's.
#[inline]
pub fn rows_of_part(n: u64, part: u64, parts: u64) -> u64 {
    if n > part {
        (n - part).div_ceil(parts)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::rows_of_part;

    /// Rows `local × parts + part` for `local < rows_of_part(..)`: every row of the table once
    /// over all parts, whatever the table size and the number of parts.
    #[test]
    fn the_parts_cover_every_row_once() {
        for n in 0..40u64 {
            for parts in 1..7u64 {
                let mut seen = vec![0u32; n as usize];
                for part in 0..parts {
                    for local in 0..rows_of_part(n, part, parts) {
                        seen[(local * parts + part) as usize] += 1;
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "n={n} parts={parts}: {seen:?}"
                );
            }
        }
    }
}
