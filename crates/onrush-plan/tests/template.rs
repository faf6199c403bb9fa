//! Template rendering on the hot path: correct output, no allocation when the buffer has room.
use crate::common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::{ok, scenario};
use onrush_plan::{RenderContext, Template, Vars};
use onrush_proto_http::{Body, RequestStep};

/// Counts allocations made by the current thread.
struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

fn body_template() -> Template {
    let p = ok(&scenario(
        "{ vus: 1, iterations: 1 }",
        r#"[{ post: "/users/${vu}/orders?n=${iteration}", body: '{"user": ${vu}, "iteration": ${iteration}, "note": "x"}' }]"#,
    ));
    let Some(r) = RequestStep::of(&p.scenarios[0].steps[0]) else {
        panic!()
    };
    let Body::Inline(b) = &r.body else { panic!() };
    b.clone()
}

#[test]
fn render_appends_and_reuses_the_buffer_without_allocating() {
    let t = body_template();
    assert!(!t.is_constant());
    assert!(t.uses_vu() && t.uses_iteration());
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let (cap, ptr) = (buf.capacity(), buf.as_ptr());
    buf.extend_from_slice(b"prefix:");
    let vars = Vars::default();
    let before = allocs();
    for vu in [1u64, 99, u64::MAX] {
        for iteration in [0u64, 7, 123_456_789] {
            buf.truncate(7);
            t.render(&RenderContext::new(vu, iteration, &vars), &mut buf)
                .unwrap();
        }
    }
    assert_eq!(allocs(), before, "render allocated");
    assert_eq!(buf.capacity(), cap);
    assert_eq!(buf.as_ptr(), ptr);
    assert_eq!(
        std::str::from_utf8(&buf).unwrap(),
        format!(
            "prefix:{{\"user\": {}, \"iteration\": 123456789, \"note\": \"x\"}}",
            u64::MAX
        )
    );
}

#[test]
fn constant_templates() {
    let t = Template::constant("/static");
    assert!(t.is_constant());
    assert_eq!(t.constant_bytes(), Some(&b"/static"[..]));
    let mut buf = Vec::with_capacity(16);
    let before = allocs();
    t.render(&RenderContext::default(), &mut buf).unwrap();
    assert_eq!(allocs(), before);
    assert_eq!(buf, b"/static");
    assert_eq!(body_template().constant_bytes(), None);
}

#[test]
fn source_and_display() {
    let t = body_template();
    assert_eq!(
        t.source(),
        r#"{"user": ${vu}, "iteration": ${iteration}, "note": "x"}"#
    );
    assert_eq!(
        t.to_string(),
        r#"{"user": ${vu}, "iteration": ${iteration}, "note": "x"}"#
    );
    assert!(
        t.max_len_hint()
            >= t.render_to_vec(&RenderContext::new(u64::MAX, u64::MAX, &Vars::default()))
                .unwrap()
                .len()
    );
}
