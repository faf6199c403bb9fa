//! A run's memory does not grow with its length: a counting global allocator measures the heap
//! a streaming collector holds after N seconds and after 10 N seconds of the same load. Its own
//! binary: it replaces the allocator.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;
use std::path::PathBuf;

use onrush_metrics::{Collector, Layout, RequestRecord, RunInfo, WorkerMetrics};

struct Counting;

// Per thread, so that the test harness's own threads do not blur the figure. Const-initialised:
// reading them does not allocate.
thread_local! {
    /// Heap bytes allocated minus freed by this thread.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        LIVE.with(|l| l.set(l.get() + layout.size() as isize));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        LIVE.with(|l| l.set(l.get() - layout.size() as isize));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        LIVE.with(|l| l.set(l.get() + new_size as isize - layout.size() as isize));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Two workers, two scenarios, a steady load with a spread of latencies and a few failures.
struct Load {
    layout: Layout,
    workers: Vec<WorkerMetrics>,
    second: u64,
    rng: u64,
}

impl Load {
    fn new() -> Load {
        let layout = Layout::new([("browse", ["home", "search"]), ("buy", ["cart", "pay"])]);
        Load {
            workers: (0..2).map(|_| WorkerMetrics::new(&layout)).collect(),
            layout,
            second: 0,
            rng: 0x2545_f491_4f6c_dd1d,
        }
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Records one more second on every worker and hands it to `c`, closing it.
    fn second(&mut self, c: &mut Collector) {
        let t = self.second;
        for w in 0..self.workers.len() {
            for k in 0..200u64 {
                let lat = 200 + self.next() % 50_000;
                let failed = k % 50 == 0;
                let rec = RequestRecord {
                    latency_us: lat,
                    service_us: lat,
                    connect_us: (k % 20 == 0).then_some(100 + k),
                    ttfb_us: Some(lat / 2),
                    bytes_in: 1_000,
                    bytes_out: 100,
                    status: if failed { 503 } else { 200 },
                    failure: failed.then_some(onrush_metrics::FailureClass::Http5xx),
                    handshake: None,
                };
                let (si, st) = ((k % 2) as usize, (k / 2 % 2) as usize);
                self.workers[w].record_request(si, st, &rec);
            }
            c.add(t, self.workers[w].take_snapshot());
        }
        c.close_second(t);
        self.second += 1;
    }
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "onrush-memory-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Heap held after `n` seconds and after `10 n`, by one collector fed the same load.
fn held_after(c: &mut Collector, load: &mut Load, n: u64) -> (isize, isize) {
    while load.second < n {
        load.second(c);
    }
    let at_n = live();
    while load.second < 10 * n {
        load.second(c);
    }
    (at_n, live())
}

#[test]
fn a_streaming_collector_holds_the_same_memory_after_ten_times_the_seconds() {
    const N: u64 = 300;
    let dir = out_dir("streaming");
    let mut load = Load::new();
    let base = live();
    let mut c = Collector::streaming(load.layout.clone(), RunInfo::new("mem", 0), &dir).unwrap();
    let (at_n, at_10n) = held_after(&mut c, &mut load, N);
    let growth = at_10n - at_n;
    eprintln!(
        "streaming collector: {} bytes held after {N} s, {} after {} s",
        at_n - base,
        at_10n - base,
        10 * N
    );
    // Histograms resize to the latencies seen and buffers to the largest second; after N
    // seconds of the same load nothing should be left to grow. The old collector kept every
    // second's lines (~4 KiB a second here) and 16 bytes a second of counters.
    assert!(
        growth <= 4 * 1024,
        "the collector grew by {growth} bytes from {N} to {} seconds (it holds {} bytes after {N})",
        10 * N,
        at_n - base
    );
    // And the file has every second.
    c.set_duration(std::time::Duration::from_secs(10 * N));
    c.write_intervals(&dir).unwrap();
    let seconds = onrush_metrics::rebuild_summary(&dir).unwrap().run.seconds;
    assert_eq!(seconds, 10 * N);
    drop(c);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_measure_sees_an_in_memory_collector_grow() {
    // The control: a collector keeping its lines in memory grows with the seconds, and this
    // measure shows it (so the bound above is not met by a measure that sees nothing).
    const N: u64 = 100;
    let mut load = Load::new();
    let mut c = Collector::new(load.layout.clone(), RunInfo::new("mem", 0));
    let (at_n, at_10n) = held_after(&mut c, &mut load, N);
    let per_second = (at_10n - at_n) / (9 * N as isize);
    eprintln!(
        "in-memory collector: {at_n} bytes after {N} s, {at_10n} after {} s",
        10 * N
    );
    assert!(per_second > 1024, "in memory: {per_second} bytes a second");
}
