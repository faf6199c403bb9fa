//! The in-memory size of what every VU holds: each protocol's session and the future of its
//! `execute`. A VU's task embeds its session (every protocol's, as an `Option`) and the future
//! of the request it waits on, which is as large as the *largest* protocol's future (the
//! dispatch is an enum, [`crate::Either`]): one protocol keeping a big buffer inside its future
//! makes every VU of every protocol pay for it. The onrush suite's `memory` test reads these.

use std::mem::size_of;

use onrush_plan::RenderContext;
use onrush_protocol::{Protocol, RequestStart, Session};

use crate::{AnyStep, Sessions};

/// The size of what `f` returns, without calling it: the future of an `async fn` is a type the
/// caller cannot name, but a function pointer with concrete ('static) lifetimes names it.
fn returned<A, B, C, D, R>(_: fn(A, B, C, D) -> R) -> usize {
    size_of::<R>()
}

/// `(name, size of the session, size of its execute future)` for each protocol, and for
/// `Sessions`, what the engine holds.
macro_rules! sizes {
    ($($name:literal => $p:ty),* $(,)?) => {
        vec![$((
            $name,
            size_of::<<$p as Protocol>::Session>(),
            returned::<
                &'static mut <$p as Protocol>::Session,
                &'static <$p as Protocol>::Step,
                &'static RenderContext<'static>,
                RequestStart,
                _,
            >(<<$p as Protocol>::Session as Session>::execute),
        )),*]
    };
}

/// Sizes in bytes of each protocol's session and `execute` future; the last row, `all`, is
/// the engine's view ([`Sessions`] and its dispatching future).
pub fn session_sizes() -> Vec<(&'static str, usize, usize)> {
    let mut all = sizes!(
        "http" => onrush_proto_http::Http,
        "tcp" => onrush_proto_tcp::Tcp,
        "udp" => onrush_proto_udp::Udp,
        "ws" => onrush_proto_ws::Ws,
        "thrift" => onrush_proto_thrift::Thrift,
        "grpc" => onrush_proto_grpc::Grpc,
        "exec" => onrush_proto_exec::Exec,
    );
    all.push((
        "all",
        size_of::<Sessions>(),
        returned::<
            &'static mut Sessions,
            &'static AnyStep,
            &'static RenderContext<'static>,
            RequestStart,
            _,
        >(<Sessions as Session>::execute),
    ));
    all
}
