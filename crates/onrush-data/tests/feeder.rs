//! Pick modes, across real threads.

use std::sync::{Arc, Barrier};
use std::thread;

use onrush_data::{Exhausted, Feeder, Format, Mode, SplitMix64, Table};

fn table(rows: usize) -> Arc<Table> {
    let mut s = String::from("id,name\n");
    for i in 0..rows {
        s.push_str(&format!("{i},\"user {i}\"\n"));
    }
    Arc::new(Table::from_bytes("gen.csv", s, Format::csv()).unwrap())
}

const THREADS: u64 = 4;
const VUS: u64 = 50;

/// 50 VUs spread over 4 threads (VU k on thread k % 4), round-robin within a thread, each VU
/// picking `per_vu_picks` times (or until `None`). Returns every pick, checked against the
/// row's own `id` field.
fn run_vus(feeder: &Arc<Feeder>, per_vu_picks: usize) -> (Vec<usize>, usize) {
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let feeder = Arc::clone(feeder);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let vus: Vec<u64> = (1..=VUS).filter(|v| v % THREADS == t).collect();
                let mut rngs: Vec<SplitMix64> = vus.iter().map(|&v| SplitMix64::new(v)).collect();
                let mut scratch = Vec::new();
                let (mut picks, mut nones) = (Vec::new(), 0);
                barrier.wait();
                for _ in 0..per_vu_picks {
                    for (i, &vu) in vus.iter().enumerate() {
                        let rng = &mut rngs[i];
                        match feeder.pick(vu, &mut || rng.next_u64()) {
                            Some(r) => {
                                let mut id = None;
                                feeder.table().row(r, &mut scratch, &mut |c, v| {
                                    if c == 0 {
                                        id = std::str::from_utf8(v).unwrap().parse().ok();
                                    }
                                });
                                assert_eq!(id, Some(r));
                                picks.push(r);
                            }
                            None => nones += 1,
                        }
                    }
                }
                (picks, nones)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut nones = 0;
    for h in handles {
        let (p, n) = h.join().unwrap();
        all.extend(p);
        nones += n;
    }
    (all, nones)
}

fn counts(picks: &[usize], rows: usize) -> Vec<usize> {
    let mut c = vec![0; rows];
    for &p in picks {
        c[p] += 1;
    }
    c
}

#[test]
fn unique_stop_uses_each_row_once_then_none() {
    let rows = 1000;
    let feeder = Arc::new(Feeder::new(
        table(rows),
        Mode::Unique {
            on_exhausted: Exhausted::Stop,
        },
    ));
    // 50 VUs × 30 picks = 1500 attempts for 1000 rows.
    let (picks, nones) = run_vus(&feeder, 30);
    assert_eq!(picks.len(), rows);
    assert_eq!(nones, 500);
    assert!(counts(&picks, rows).iter().all(|&c| c == 1));
    assert_eq!(feeder.pick(1, &mut || 0), None);
    assert_eq!(feeder.pick(7, &mut || 0), None);
}

#[test]
fn unique_recycle_wraps_to_the_first_row() {
    let rows = 1000;
    let feeder = Arc::new(Feeder::new(
        table(rows),
        Mode::Unique {
            on_exhausted: Exhausted::Recycle,
        },
    ));
    // 50 VUs × 40 picks = 2000 = two full rounds.
    let (picks, nones) = run_vus(&feeder, 40);
    assert_eq!(nones, 0);
    assert!(counts(&picks, rows).iter().all(|&c| c == 2));
    // The next round starts again at row 0.
    assert_eq!(feeder.pick(1, &mut || 0), Some(0));
    assert_eq!(feeder.pick(1, &mut || 0), Some(1));
}

#[test]
fn unique_single_thread_is_in_order() {
    let f = Feeder::new(
        table(3),
        Mode::Unique {
            on_exhausted: Exhausted::Recycle,
        },
    );
    let got: Vec<_> = (0..7).map(|_| f.pick(1, &mut || 0).unwrap()).collect();
    assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
}

#[test]
fn circular_every_row_same_number_of_times_across_threads() {
    let rows = 100;
    let feeder = Arc::new(Feeder::new(table(rows), Mode::Circular));
    // 50 VUs × 6 picks = 300 = 3 full rounds.
    let (picks, nones) = run_vus(&feeder, 6);
    assert_eq!(nones, 0);
    assert!(
        counts(&picks, rows).iter().all(|&c| c == 3),
        "{:?}",
        counts(&picks, rows)
    );
    // Then the shared cursor continues in order from row 0.
    let next: Vec<_> = (0..rows + 2)
        .map(|v| feeder.pick(v as u64, &mut || 0).unwrap())
        .collect();
    let expected: Vec<_> = (0..rows).chain([0, 1]).collect();
    assert_eq!(next, expected);
}

#[test]
fn circular_order_is_shared_by_all_vus() {
    let f = Feeder::new(table(4), Mode::Circular);
    let got: Vec<_> = (1..=10u64)
        .map(|vu| f.pick(vu, &mut || 0).unwrap())
        .collect();
    assert_eq!(got, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
}

#[test]
fn per_vu_gets_row_k_minus_1_and_wraps() {
    let f = Feeder::new(table(5), Mode::PerVu);
    for vu in 1..=12u64 {
        for _ in 0..3 {
            assert_eq!(f.pick(vu, &mut || 0), Some(((vu - 1) % 5) as usize));
        }
    }
    assert_eq!(f.pick(0, &mut || 0), Some(0));
}

#[test]
fn per_vu_across_threads() {
    let rows = 30;
    let feeder = Arc::new(Feeder::new(table(rows), Mode::PerVu));
    let (picks, _) = run_vus(&feeder, 2);
    // VUs 1..=50 over 30 rows: rows 0..20 by two VUs each, rows 20..30 by one, twice each.
    let c = counts(&picks, rows);
    assert!(c[..20].iter().all(|&n| n == 4), "{c:?}");
    assert!(c[20..].iter().all(|&n| n == 2), "{c:?}");
}

#[test]
fn random_covers_all_rows_roughly_uniformly() {
    let rows = 1000;
    let feeder = Arc::new(Feeder::new(table(rows), Mode::Random));
    // 50 VUs × 400 picks = 20_000 picks, 20 per row on average.
    let (picks, nones) = run_vus(&feeder, 400);
    assert_eq!(nones, 0);
    let c = counts(&picks, rows);
    assert!(c.iter().all(|&n| n > 0), "some row never picked");
    assert!(c.iter().all(|&n| n < 60), "max {}", c.iter().max().unwrap());
    // Random mode does not move the shared cursor: a constant source gives a constant row.
    let f = Feeder::new(table(rows), Mode::Random);
    assert_eq!(f.pick(1, &mut || 0), Some(0));
    assert_eq!(f.pick(1, &mut || u64::MAX), Some(rows - 1));
    assert_eq!(f.pick(1, &mut || 1 << 63), Some(rows / 2));
}

#[test]
fn random_small_tables_are_unbiased() {
    // 3 rows: 30_000 picks, each row ≈ 10_000 (±5 %).
    let f = Feeder::new(table(3), Mode::Random);
    let mut r = SplitMix64::new(42);
    let mut c = [0usize; 3];
    for _ in 0..30_000 {
        c[f.pick(1, &mut || r.next_u64()).unwrap()] += 1;
    }
    assert!(c.iter().all(|&n| (9_500..10_500).contains(&n)), "{c:?}");
}

#[test]
fn one_table_shared_by_feeders_is_not_copied() {
    let t = table(10);
    let a = Feeder::new(Arc::clone(&t), Mode::Circular);
    let b = Feeder::new(Arc::clone(&t), Mode::PerVu);
    assert!(std::ptr::eq(a.table(), b.table()));
    assert!(std::ptr::eq(a.table(), &*t));
    assert_eq!(Arc::strong_count(&t), 3);
}
