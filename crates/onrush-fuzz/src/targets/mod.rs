//! The targets, one file per parser.

mod decompress;
mod extract;
mod feeder;
mod hpack;
mod http1;
mod http2;
mod jmx;
mod mock;
mod plan;
mod results;
mod template;

use crate::Target;

pub(crate) const ALL: &[Target] = &[
    Target {
        name: "plan",
        run: plan::run,
        dict: plan::DICT,
        max_len: 4096,
        ci_execs: 30_000,
    },
    Target {
        name: "template",
        run: template::run,
        dict: template::DICT,
        max_len: 1024,
        ci_execs: 30_000,
    },
    Target {
        name: "http1",
        run: http1::run,
        dict: http1::DICT,
        max_len: 8192,
        ci_execs: 200_000,
    },
    Target {
        name: "http2",
        run: http2::run,
        dict: http2::DICT,
        max_len: 8192,
        ci_execs: 100_000,
    },
    Target {
        name: "hpack",
        run: hpack::run,
        dict: hpack::DICT,
        max_len: 4096,
        ci_execs: 200_000,
    },
    Target {
        name: "decompress",
        run: decompress::run,
        dict: decompress::DICT,
        max_len: 16_384,
        ci_execs: 20_000,
    },
    Target {
        name: "extract_body",
        run: extract::run_body,
        dict: extract::BODY_DICT,
        max_len: 4096,
        ci_execs: 10_000,
    },
    Target {
        name: "extract_expr",
        run: extract::run_expr,
        dict: extract::EXPR_DICT,
        max_len: 1024,
        ci_execs: 15_000,
    },
    Target {
        name: "feeder",
        run: feeder::run,
        dict: feeder::DICT,
        max_len: 4096,
        ci_execs: 200_000,
    },
    Target {
        name: "results_intervals",
        run: results::run_intervals,
        dict: results::INTERVALS_DICT,
        max_len: 8192,
        ci_execs: 50_000,
    },
    Target {
        name: "results_summary",
        run: results::run_summary,
        dict: results::SUMMARY_DICT,
        max_len: 32_768,
        ci_execs: 50_000,
    },
    Target {
        name: "results_hist",
        run: results::run_hist,
        dict: results::HIST_DICT,
        max_len: 2048,
        ci_execs: 200_000,
    },
    Target {
        name: "jmx",
        run: jmx::run,
        dict: jmx::DICT,
        max_len: 8192,
        ci_execs: 50_000,
    },
];
