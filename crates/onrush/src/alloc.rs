//! The process's allocator: the system's (glibc's `malloc`), except for small over-aligned
//! blocks, which it pads instead of asking `posix_memalign`.
//!
//! Why: tokio aligns every socket registration (`ScheduledIo`, 256 B) and every task cell to
//! 128 bytes, so a new connection asks for one over-aligned block and frees it at the close.
//! glibc (2.36, Debian 12) serves `posix_memalign` without its per-thread cache: each call
//! takes the arena's slow path and splits a chunk (745 instructions per connection, callgrind,
//! `connections: per_request`), and each free then overflows the cache into `_int_free`
//! (~530 more). A plain `malloc` of the size plus the alignment, rounded up inside, is served
//! from that cache and freed back to it (docs/benchmarks.md, "New connections": ~1,000
//! instructions less per connection). The price is at most `align` bytes per such block:
//! 128 B per socket registration.
//!
//! Only blocks with an alignment of 32 to [`MAX_PADDED_ALIGN`] bytes and a padded size within
//! [`MAX_PADDED_SIZE`] take this path; everything else goes to [`System`] unchanged. Whether a
//! block was padded is decided from its `Layout` alone, which `dealloc` and `realloc` are given
//! too, so the two paths never mix.
//!
//! Freed padded blocks are kept per thread, [`CACHE_DEPTH`] per 64-byte size class, and handed
//! out again before `malloc` is asked. glibc's own cache holds 7 blocks per size: 50 VUs that
//! connect together ask for 50 registrations before any is freed, and free 50 together, so
//! most of them took `malloc`'s general path both ways (~230 instructions to allocate and ~150
//! to free per connection, callgrind). A thread's kept blocks go back to `malloc` when it ends.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;

/// What `malloc` aligns every block to (glibc and musl on 64-bit targets: 16 bytes). A
/// layout aligned to more than this needs `posix_memalign`, or this module's padding.
const MALLOC_ALIGN: usize = 16;
/// The largest alignment padded; larger ones (pages) waste too much to pad.
const MAX_PADDED_ALIGN: usize = 256;
/// The largest padded block (size + alignment): glibc's per-thread cache holds chunks up to
/// 1,032 bytes, which is what makes the padded path cheap.
const MAX_PADDED_SIZE: usize = 1024;

/// Padded blocks are kept by the size of their outer block, rounded up to this.
const CLASS_BYTES: usize = 64;
const CLASSES: usize = MAX_PADDED_SIZE / CLASS_BYTES;
/// Freed blocks kept per size class and thread: enough for the 50 to a few hundred connections
/// a worker opens in a burst, at most 64 KiB per class (1 KiB blocks).
const CACHE_DEPTH: usize = 64;

/// [`System`], with small over-aligned blocks padded (see the module's doc).
pub struct Allocator;

/// A thread's freed padded blocks: outer blocks, each of its class's full size.
struct Cache {
    stacks: UnsafeCell<[Stack; CLASSES]>,
}

#[derive(Clone, Copy)]
struct Stack {
    len: usize,
    blocks: [*mut u8; CACHE_DEPTH],
}

impl Cache {
    const fn new() -> Cache {
        Cache {
            stacks: UnsafeCell::new(
                [Stack {
                    len: 0,
                    blocks: [std::ptr::null_mut(); CACHE_DEPTH],
                }; CLASSES],
            ),
        }
    }
}

impl Drop for Cache {
    /// The thread ends: its kept blocks go back to `malloc`.
    fn drop(&mut self) {
        for (class, stack) in self.stacks.get_mut().iter_mut().enumerate() {
            for &raw in &stack.blocks[..stack.len] {
                // SAFETY: every kept block came from `System.alloc(class_layout(class))`.
                unsafe { System.dealloc(raw, class_layout(class)) };
            }
            #[cfg(test)]
            tests::FLUSHED.fetch_add(stack.len, std::sync::atomic::Ordering::Relaxed);
            stack.len = 0;
        }
    }
}

thread_local! {
    // `const`: no lazy initialiser that could allocate. The destructor is registered with
    // glibc's `__cxa_thread_atexit_impl`, whose own bookkeeping uses glibc's `calloc`, not
    // this allocator. Once it has run (the thread is ending), `try_with` fails and blocks go
    // straight to and from `malloc`.
    static CACHE: Cache = const { Cache::new() };
}

/// The size class of a padded block of `layout`.
fn class(layout: Layout) -> usize {
    (layout.size() + layout.align()).div_ceil(CLASS_BYTES) - 1
}

/// The outer block every padded block of `class` lives in.
fn class_layout(class: usize) -> Layout {
    // Cannot fail: at most MAX_PADDED_SIZE bytes, and MALLOC_ALIGN is a power of two.
    Layout::from_size_align((class + 1) * CLASS_BYTES, MALLOC_ALIGN).expect("small layout")
}

/// A kept outer block of `class`, if this thread has one.
fn take_kept(class: usize) -> Option<*mut u8> {
    CACHE
        .try_with(|cache| {
            // SAFETY: only this thread reaches its cache, and nothing here re-enters it (no
            // allocation between the borrow and its end).
            let stack = unsafe { &mut (*cache.stacks.get())[class] };
            stack.len = stack.len.checked_sub(1)?;
            Some(stack.blocks[stack.len])
        })
        .ok()
        .flatten()
}

/// Keeps the outer block `raw` of `class` for this thread's next one; `false` when the class
/// is full (or the thread is ending): the caller frees it.
fn keep(class: usize, raw: *mut u8) -> bool {
    CACHE
        .try_with(|cache| {
            // SAFETY: as in `take_kept`.
            let stack = unsafe { &mut (*cache.stacks.get())[class] };
            if stack.len == CACHE_DEPTH {
                return false;
            }
            stack.blocks[stack.len] = raw;
            stack.len += 1;
            true
        })
        .unwrap_or(false)
}

/// Whether blocks of `layout` are padded.
fn padded(layout: Layout) -> bool {
    layout.align() > MALLOC_ALIGN
        && layout.align() <= MAX_PADDED_ALIGN
        && layout.size() <= MAX_PADDED_SIZE - layout.align()
}

// SAFETY: every block handed out is valid for `layout.size()` bytes at `layout.align()`
// (below), and each is released by the path that made it, chosen by `padded(layout)` on
// both sides.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !padded(layout) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.alloc(layout) };
        }
        let class = class(layout);
        let raw = match take_kept(class) {
            Some(raw) => raw,
            // SAFETY: a valid, non-zero layout.
            None => unsafe { System.alloc(class_layout(class)) },
        };
        if raw.is_null() {
            return raw;
        }
        // The first multiple of `align` strictly above `raw`. `raw` is 16-aligned and `align`
        // is a larger power of two, so the gap is 16 to `align` bytes: room for the raw
        // pointer just below the block, and the block ends within the `size + align` bytes
        // (which the class's outer size rounds up).
        let gap = layout.align() - (raw as usize & (layout.align() - 1));
        // SAFETY: `gap <= align`, inside the outer block.
        let block = unsafe { raw.add(gap) };
        // SAFETY: `block - 8` is within the gap (>= 16 bytes), 8-aligned (both are 16-aligned).
        unsafe { block.cast::<*mut u8>().sub(1).write(raw) };
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !padded(layout) {
            // SAFETY: made by `System.alloc` with this layout (same predicate in `alloc`).
            return unsafe { System.dealloc(ptr, layout) };
        }
        // SAFETY: `alloc` wrote the outer block's address just below the block.
        let raw = unsafe { ptr.cast::<*mut u8>().sub(1).read() };
        let class = class(layout);
        if !keep(class, raw) {
            // SAFETY: `raw` came from `System.alloc(class_layout(class))`.
            unsafe { System.dealloc(raw, class_layout(class)) };
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !padded(layout) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.alloc_zeroed(layout) };
        }
        // SAFETY: as `alloc`; then the block's own bytes are zeroed.
        let block = unsafe { self.alloc(layout) };
        if !block.is_null() {
            // SAFETY: `block` is valid for `layout.size()` bytes.
            unsafe { block.write_bytes(0, layout.size()) };
        }
        block
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to `align`, fits `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !padded(layout) && !padded(new_layout) {
            // SAFETY: both made (and to be freed) by `System` with these layouts.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // Either side padded: a new block, the bytes copied, the old block freed by its path.
        // SAFETY: `new_layout` is valid (the caller's contract).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for the smaller size and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: `ptr` was allocated by `self` with `layout`.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks given back to `malloc` by ending threads' caches.
    pub(super) static FLUSHED: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);

    fn kept(class: usize) -> usize {
        // SAFETY: the cache is this thread's, and nothing else borrows it during this read.
        CACHE.with(|c| unsafe { (*c.stacks.get())[class].len })
    }

    #[test]
    fn a_freed_padded_block_is_handed_out_again_on_its_thread() {
        let a = Allocator;
        let registration = Layout::from_size_align(256, 128).unwrap();
        // A size of the same class (384 outer bytes) reuses it too.
        let same_class = Layout::from_size_align(250, 128).unwrap();
        assert_eq!(class(registration), class(same_class));
        // SAFETY: valid layouts; each block is freed once with its layout.
        unsafe {
            let p = a.alloc(registration);
            let raw = p.cast::<*mut u8>().sub(1).read();
            let before = kept(class(registration));
            a.dealloc(p, registration);
            assert_eq!(kept(class(registration)), before + 1);
            let q = a.alloc(same_class);
            assert_eq!(q.cast::<*mut u8>().sub(1).read(), raw, "the kept block");
            assert_eq!(q as usize % 128, 0);
            q.write_bytes(0x5a, 250);
            a.dealloc(q, same_class);
        }
    }

    #[test]
    fn a_thread_keeps_at_most_its_depth_and_gives_them_back_when_it_ends() {
        let layout = Layout::from_size_align(600, 64).unwrap();
        let flushed_before = FLUSHED.load(std::sync::atomic::Ordering::Relaxed);
        let kept_at_end = std::thread::spawn(move || {
            let a = Allocator;
            // SAFETY: valid layouts; each block is freed once.
            let blocks: Vec<*mut u8> = (0..CACHE_DEPTH + 40)
                .map(|_| unsafe { a.alloc(layout) })
                .collect();
            for p in blocks {
                assert!(!p.is_null());
                // SAFETY: allocated above with this layout, freed once.
                unsafe { a.dealloc(p, layout) };
            }
            kept(class(layout))
        })
        .join()
        .unwrap();
        assert_eq!(
            kept_at_end, CACHE_DEPTH,
            "the rest went back to malloc at once"
        );
        let flushed = FLUSHED.load(std::sync::atomic::Ordering::Relaxed) - flushed_before;
        assert!(
            flushed >= CACHE_DEPTH,
            "{flushed} blocks given back at the thread's end"
        );
    }

    #[test]
    fn every_class_fits_its_largest_block() {
        for align in [32, 64, 128, 256] {
            for size in 1..=MAX_PADDED_SIZE - align {
                let layout = Layout::from_size_align(size, align).unwrap();
                assert!(padded(layout));
                let c = class(layout);
                assert!(c < CLASSES, "{layout:?}");
                assert!(size + align <= class_layout(c).size(), "{layout:?}");
            }
        }
    }

    /// Allocates `layout` with `alloc` (or `alloc_zeroed`), checks alignment, fills it.
    fn roundtrip(layout: Layout, zeroed: bool) {
        let a = Allocator;
        // SAFETY: non-zero layouts only (the callers' sizes are >= 1).
        let p = unsafe {
            if zeroed {
                a.alloc_zeroed(layout)
            } else {
                a.alloc(layout)
            }
        };
        assert!(!p.is_null(), "{layout:?}");
        assert_eq!(p as usize % layout.align(), 0, "{layout:?} misaligned");
        // SAFETY: `p` is valid for `layout.size()` bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p, layout.size()) };
        if zeroed {
            assert!(bytes.iter().all(|&b| b == 0), "{layout:?} not zeroed");
        }
        bytes.fill(0xa5);
        // SAFETY: allocated above with this layout.
        unsafe { a.dealloc(p, layout) };
    }

    #[test]
    fn every_alignment_and_size_around_the_limits_is_aligned_and_usable() {
        for align in [1, 8, 16, 32, 64, 128, 256, 512, 4096] {
            for size in [
                1, 7, 16, 100, 255, 256, 257, 640, 768, 896, 992, 1000, 1024, 5000,
            ] {
                let layout = Layout::from_size_align(size, align).unwrap();
                roundtrip(layout, false);
                roundtrip(layout, true);
            }
        }
    }

    #[test]
    fn tokios_blocks_are_padded_and_large_or_page_aligned_ones_are_not() {
        // tokio's socket registration and small task cells: 128-aligned, a few hundred bytes.
        assert!(padded(Layout::from_size_align(256, 128).unwrap()));
        assert!(padded(Layout::from_size_align(896, 128).unwrap()));
        assert!(!padded(Layout::from_size_align(897, 128).unwrap()));
        assert!(
            !padded(Layout::from_size_align(64, 16).unwrap()),
            "malloc's own"
        );
        assert!(
            !padded(Layout::from_size_align(64, 4096).unwrap()),
            "a page"
        );
    }

    #[test]
    fn a_padded_block_keeps_its_outer_block_just_below() {
        let layout = Layout::from_size_align(256, 128).unwrap();
        let a = Allocator;
        // SAFETY: a valid layout; the pointer below the block is this module's own.
        unsafe {
            let p = a.alloc(layout);
            let raw = p.cast::<*mut u8>().sub(1).read();
            let gap = p as usize - raw as usize;
            assert!((16..=128).contains(&gap), "gap {gap}");
            a.dealloc(p, layout);
        }
    }

    #[test]
    fn realloc_keeps_the_bytes_across_both_paths() {
        let a = Allocator;
        // padded -> padded, padded -> not (too large), not -> padded, not -> not.
        for (align, from, to) in [
            (128, 100, 600),
            (128, 600, 4000),
            (128, 4000, 200),
            (8, 100, 5000),
            (64, 300, 20),
        ] {
            let layout = Layout::from_size_align(from, align).unwrap();
            // SAFETY: valid layouts; each block is freed once with the layout it has.
            unsafe {
                let p = a.alloc(layout);
                for i in 0..from {
                    p.add(i).write(i as u8);
                }
                let q = a.realloc(p, layout, to);
                assert!(!q.is_null());
                assert_eq!(q as usize % align, 0);
                for i in 0..from.min(to) {
                    assert_eq!(q.add(i).read(), i as u8, "byte {i} of {from} -> {to}");
                }
                a.dealloc(q, Layout::from_size_align(to, align).unwrap());
            }
        }
    }
}
