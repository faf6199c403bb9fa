//! The plan loader: bytes as a plan file. Every error path must end in a `PlanError` with a
//! position (a file given as a string, without `-D` overrides, has no error without one).

use std::path::Path;

use onrush_plan::{load_str_with_options, LoadOptions, Plan, PlanError};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = load(&text);
}

/// Loads `text` as `fuzz.yaml` with an empty environment, a base folder that does not exist
/// (no file is read) and the built-in protocols' grammars (their errors must say where too),
/// checking that an error says where.
pub(crate) fn load(text: &str) -> Result<Plan, PlanError> {
    let result = load_str_with_options(
        "fuzz.yaml",
        text,
        Path::new("/nonexistent-onrush-fuzz"),
        &LoadOptions {
            profiles: &[],
            overrides: &[],
            env: &|_| None,
            grammars: onrush_protocols::grammars(),
        },
    );
    if let Err(e) = &result {
        assert!(
            e.line().is_some() && e.column().is_some(),
            "a plan error without a position: {e}"
        );
        assert!(e.to_string().starts_with("fuzz.yaml:"), "{e}");
    }
    result
}

pub const DICT: &[&[u8]] = &[
    b"target: ",
    b"scenarios:",
    b"steps:",
    b"load:",
    b"vus: ",
    b"iterations: ",
    b"duration: ",
    b"rate: ",
    b"/s",
    b"ramp_up: ",
    b"get: ",
    b"post: ",
    b"body: ",
    b"headers:",
    b"think: ",
    b"name: ",
    b"vars:",
    b"http:",
    b"timeout: ",
    b"extract:",
    b"check:",
    b"status: ",
    b"jsonpath: ",
    b"regex: ",
    b"css: ",
    b"xpath: ",
    b"loop:",
    b"if:",
    b"once:",
    b"group:",
    b"feeder:",
    b"csv: ",
    b"thresholds:",
    b"p99",
    b"< 100ms",
    b"${vu}",
    b"${iteration}",
    b"${",
    b"}",
    b"- ",
    b"&a ",
    b"*a",
    b"<<: ",
    b"!!str ",
    b"|\n",
    b">\n",
    b"---\n",
    b"...\n",
    b"? ",
    b"{ ",
    b"[",
    b"]",
    b"\"",
    b"'",
    b"#",
    b"  ",
    b"\n  ",
    b"\n    - ",
    b"1.5s",
    b"10ms",
    b"99999999999999h",
    b"-1",
    b"0",
    b"1e309",
    b"http://",
    b"https://",
    b"tcp://",
    b"ws://",
    b"secrets:",
    b"tls:",
    b"ca_file: ",
    b"body_limit: ",
    b"512MiB",
    b"${uuid()}",
    b"${counter(n)}",
    b"${random_int(1,9)}",
    b"${base64(x)}",
    b"feeders:",
    b"foreach:",
    b"default: ",
    b"group: ",
    b"graceful_stop: ",
    b"max_vus: ",
];
