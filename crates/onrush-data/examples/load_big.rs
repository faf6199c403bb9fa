//! Load benchmark: generates a big CSV in /tmp, times `load` (wall time, peak RSS from
//! /proc/self/status VmHWM) and the cost of a pick + row split, then deletes the file.
//!
//! ```text
//! cargo run --release -p onrush-data --example load_big -- [SIZE_MB] [DIR]
//! taskset -c 0 target/release/examples/load_big 1024 /tmp
//! ```

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use onrush_data::{Exhausted, Feeder, Format, Mode, SplitMix64};

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Deletes the file even if the benchmark panics.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size_mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let path = dir.join(format!("onrush-data-bench-{}.csv", std::process::id()));
    let _cleanup = Cleanup(path.clone());

    // Generate: ~60-byte rows, every 10th with quoted fields (a delimiter and doubled quotes).
    let target = size_mb * 1024 * 1024;
    let t0 = Instant::now();
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    w.write_all(b"id,user,email,password,note\n").unwrap();
    let (mut written, mut rows) = (0u64, 0u64);
    let mut line = Vec::with_capacity(128);
    while written < target {
        line.clear();
        let i = rows;
        if i % 10 == 0 {
            writeln!(
                line,
                "{i},user{i},user{i}@example.com,\"pw,{i}\",\"said \"\"hi\"\" to {i}\""
            )
        } else {
            writeln!(line, "{i},user{i},user{i}@example.com,pw{i:08x},note")
        }
        .unwrap();
        w.write_all(&line).unwrap();
        written += line.len() as u64;
        rows += 1;
    }
    w.flush().unwrap();
    drop(w);
    let file_size = std::fs::metadata(&path).unwrap().len();
    println!(
        "generated {} ({:.0} MiB, {rows} rows) in {:.2?}",
        path.display(),
        mib(file_size),
        t0.elapsed()
    );

    let hwm_before = status_kb("VmHWM:");
    let t0 = Instant::now();
    let table = onrush_data::load(&path, Format::csv()).unwrap();
    let load = t0.elapsed();
    let hwm_after = status_kb("VmHWM:");
    let rss = status_kb("VmRSS:");
    assert_eq!(table.len() as u64, rows);
    // The same load in its two phases, to see where the time goes.
    let t0 = Instant::now();
    let bytes = std::fs::read(&path).unwrap();
    let read = t0.elapsed();
    let t0 = Instant::now();
    let again = onrush_data::Table::from_bytes(&path, bytes, Format::csv()).unwrap();
    let parse = t0.elapsed();
    assert_eq!(again.len(), table.len());
    drop(again);
    println!(
        "load phases (second load): read {read:.2?}, UTF-8 check + quote-aware index {parse:.2?}"
    );
    println!(
        "load: {load:.2?} ({:.0} MiB/s); memory_bytes {:.1} MiB (file {:.1} MiB + index {:.1} MiB); \
         VmHWM {:.0} MiB (before load {:.0} MiB), VmRSS {:.0} MiB",
        mib(file_size) / load.as_secs_f64(),
        mib(table.memory_bytes() as u64),
        mib(file_size),
        mib(table.memory_bytes() as u64 - file_size),
        hwm_after as f64 / 1024.0,
        hwm_before as f64 / 1024.0,
        rss as f64 / 1024.0,
    );
    drop(_cleanup);

    // Pick + row split (all fields), one thread.
    let table = Arc::new(table);
    let picks = 10_000_000u64;
    for (name, mode) in [
        ("circular", Mode::Circular),
        ("random", Mode::Random),
        (
            "unique+recycle",
            Mode::Unique {
                on_exhausted: Exhausted::Recycle,
            },
        ),
        ("per_vu", Mode::PerVu),
    ] {
        let feeder = Feeder::new(Arc::clone(&table), mode);
        let mut rng = SplitMix64::new(1);
        let mut scratch = Vec::with_capacity(64);
        let mut total = 0usize;
        // Pick only.
        let t0 = Instant::now();
        for i in 0..picks {
            total += feeder.pick(i % 1000 + 1, &mut || rng.next_u64()).unwrap();
        }
        let pick_ns = t0.elapsed().as_nanos() as f64 / picks as f64;
        // Pick + split.
        let t0 = Instant::now();
        for i in 0..picks {
            let r = feeder.pick(i % 1000 + 1, &mut || rng.next_u64()).unwrap();
            feeder.table().row(r, &mut scratch, &mut |c, v| {
                total += c + v.len();
            });
        }
        let both_ns = t0.elapsed().as_nanos() as f64 / picks as f64;
        black_box(total);
        println!("{name:>15}: pick {pick_ns:.1} ns, pick + row split (5 fields) {both_ns:.1} ns");
    }
}
