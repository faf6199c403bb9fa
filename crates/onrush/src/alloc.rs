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

use std::alloc::{GlobalAlloc, Layout, System};

/// What `malloc` aligns every block to (glibc and musl on 64-bit targets: 16 bytes). A
/// layout aligned to more than this needs `posix_memalign`, or this module's padding.
const MALLOC_ALIGN: usize = 16;
/// The largest alignment padded; larger ones (pages) waste too much to pad.
const MAX_PADDED_ALIGN: usize = 256;
/// The largest padded block (size + alignment): glibc's per-thread cache holds chunks up to
/// 1,032 bytes, which is what makes the padded path cheap.
const MAX_PADDED_SIZE: usize = 1024;

/// [`System`], with small over-aligned blocks padded (see the module's doc).
pub struct Allocator;

/// Whether blocks of `layout` are padded.
fn padded(layout: Layout) -> bool {
    layout.align() > MALLOC_ALIGN
        && layout.align() <= MAX_PADDED_ALIGN
        && layout.size() <= MAX_PADDED_SIZE - layout.align()
}

/// The `malloc`-aligned block that holds a padded block of `layout`.
fn outer(layout: Layout) -> Layout {
    // Cannot fail: the size is at most MAX_PADDED_SIZE and MALLOC_ALIGN is a power of two.
    Layout::from_size_align(layout.size() + layout.align(), MALLOC_ALIGN).expect("small layout")
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
        // SAFETY: `outer` is a valid, non-zero layout.
        let raw = unsafe { System.alloc(outer(layout)) };
        if raw.is_null() {
            return raw;
        }
        // The first multiple of `align` strictly above `raw`. `raw` is 16-aligned and `align`
        // is a larger power of two, so the gap is 16 to `align` bytes: room for the raw
        // pointer just below the block, and the block ends within the `size + align` bytes.
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
        // SAFETY: `raw` came from `System.alloc(outer(layout))`.
        unsafe { System.dealloc(raw, outer(layout)) };
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
