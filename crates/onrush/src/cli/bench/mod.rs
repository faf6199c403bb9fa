//! `onrush bench`: onrush measures its own cost on this host. A fixed suite of cases runs
//! against the built-in server (pinned to the last CPU) with onrush pinned to CPU 0; each case's
//! CPU time comes from wait4, its peak RSS from VmHWM sampling, its counts from its summary.json.
//! Where valgrind is installed, some cases also count user-space instructions per unit (a figure
//! that CPU contention does not move). Optionally wrk runs the same work for a ratio. Loopback
//! only; every child is time-bounded.

mod cases;
mod instructions;
mod process;
mod protocols;
mod wrk;

use clap::builder::PossibleValuesParser;
use clap::Args;
use serde::Serialize;

use super::exit;
use cases::{Bench, CaseResult, CASES};
use instructions::Valgrind;
use process::{Failure, Pinning, TempDir};

#[derive(Args)]
pub struct BenchArgs {
    /// Seconds each case runs (the idle-VU memory case always holds its VUs for 3 s).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    seconds: u64,
    /// Run only these cases, comma-separated [default: all].
    #[arg(long, value_delimiter = ',', value_name = "CASE,...",
          value_parser = PossibleValuesParser::new(CASES))]
    cases: Vec<String>,
    /// Also run this tool on the cases it can do, pinned the same way, and print the ratio
    /// (of CPU, and of instructions where both are counted); the CPU ratio also with both
    /// running at the same time on one CPU (three rounds more per case), which the machine's
    /// slow stretches cannot tilt.
    #[arg(long, value_name = "TOOL", value_parser = ["wrk"])]
    compare: Option<String>,
    /// Do not count instructions. By default, when valgrind is on PATH, the cases keepalive,
    /// new_connection, scenario_10_steps and empty_iterations also report user-space
    /// instructions per unit (a figure that CPU contention does not move): valgrind
    /// --tool=cachegrind on the same plan at 1,000 and 11,000 iterations, the difference in
    /// instructions over the difference in units (~10 s per case, whatever --seconds).
    #[arg(long)]
    no_instructions: bool,
    /// Print the results as a JSON document on stdout (to compare machines and versions).
    #[arg(long)]
    json: bool,
}

pub fn run(args: BenchArgs) -> i32 {
    onrush_engine::signals::install();
    match bench(&args) {
        Ok(()) => exit::OK,
        Err(Failure::Runtime(message)) => {
            eprintln!("error: {message}");
            exit::RUNTIME
        }
        Err(Failure::Interrupted) => {
            eprintln!("interrupted");
            exit::INTERRUPTED
        }
    }
}

fn bench(args: &BenchArgs) -> Result<(), Failure> {
    // A protocol case is reported against the `keepalive` case of the same run: it runs too.
    let wanted = |c: &str| args.cases.is_empty() || args.cases.iter().any(|s| s == c);
    let with_keepalive = CASES
        .iter()
        .any(|c| protocols::PROTOCOL_CASES.contains(c) && wanted(c));
    let selected: Vec<&'static str> = CASES
        .iter()
        .copied()
        .filter(|c| wanted(c) || (*c == "keepalive" && with_keepalive))
        .collect();
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find the onrush executable: {e}")))?;
    let wrk = match args.compare.as_deref() {
        Some("wrk") => {
            let found = process::on_path("wrk");
            if found.is_none() {
                eprintln!("wrk not found: apt-get install wrk (continuing without it)");
            }
            found
        }
        _ => None,
    };
    let valgrind = if args.no_instructions {
        None
    } else {
        let found = Valgrind::find();
        if found.is_none() {
            eprintln!(
                "valgrind not found: apt-get install valgrind (continuing without instruction counts)"
            );
        }
        found
    };
    let pinning = Pinning::detect();
    let dir = TempDir::create()?;
    let mut server = process::start_server(&pinning, &exe, &dir.0, false)?;
    // The HTTPS cases get their own server (HTTPS + HTTP/2 by ALPN), only when selected.
    let mut tls_server = if selected.iter().any(|c| cases::is_tls(c)) {
        Some(process::start_server(&pinning, &exe, &dir.0, true)?)
    } else {
        None
    };
    let cpus = super::serve::default_threads();
    eprintln!(
        "onrush bench: built-in server on http://{} {}, the measured tool on CPU {} ({}); {} s per case",
        server.addr,
        match pinning.target {
            Some(cpu) => format!("on CPU {cpu}"),
            None => "sharing the only CPU".to_string(),
        },
        pinning.tool,
        pinning.method(),
        args.seconds
    );
    let bench = Bench {
        exe: &exe,
        dir: &dir.0,
        pinning: &pinning,
        port: server.addr.port(),
        tls_port: tls_server.as_ref().map(|s| s.addr.port()),
        seconds: args.seconds,
        wrk: wrk.as_deref(),
        valgrind: valgrind.as_ref(),
    };
    let mut results = Vec::new();
    for name in selected {
        eprintln!("  {name} ...");
        let result = bench.run(name);
        server.check_alive()?;
        if let Some(s) = tls_server.as_mut() {
            s.check_alive()?;
        }
        results.push(result?);
    }
    drop(server);
    drop(tls_server);
    relate_to_keepalive(&mut results);

    if args.json {
        let doc = Report {
            onrush_version: env!("CARGO_PKG_VERSION"),
            host: Host {
                cpus,
                kernel: kernel(),
                tool_cpu: pinning.tool,
                target_cpu: pinning.target,
            },
            seconds: args.seconds,
            compare: args.compare.as_deref(),
            valgrind: valgrind.as_ref().map(|v| v.version.as_str()),
            cases: &results,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("JSON serialises")
        );
    } else {
        print_table(&results, args.compare.is_some(), valgrind.is_some());
        println!(
            "\nonrush {} on {} CPUs, Linux {}; {} s per case. CPU = user + system time of the \
             measured process (wait4) over its whole life / units it completed.",
            env!("CARGO_PKG_VERSION"),
            cpus,
            kernel(),
            args.seconds
        );
        if args.compare.is_some() {
            println!(
                "onrush/wrk: each alone, one after the other. same time: onrush and wrk running \
                 together on CPU {}, each's CPU per request over its own requests, median of {} \
                 rounds (the machine's slow stretches fall on both alike).",
                pinning.tool,
                wrk::SAME_TIME_ROUNDS
            );
        }
        if let Some(v) = &valgrind {
            println!(
                "instr = user-space instructions per unit ({}, cachegrind): (instructions of a \
                 long run - of a short run) / (units of the long run - of the short run).",
                v.version
            );
        }
    }
    Ok(())
}

/// Each protocol case's CPU per unit over `keepalive`'s CPU per request, in its field and its
/// note; gRPC's over `h2c_streams`' too (the goal compares them).
fn relate_to_keepalive(results: &mut [CaseResult]) {
    let cost = |name: &str, results: &[CaseResult]| {
        results
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.cpu_us_per_unit)
    };
    let keepalive = cost("keepalive", results);
    let h2c = cost("h2c_streams", results);
    for r in results.iter_mut() {
        if !protocols::PROTOCOL_CASES.contains(&r.name) {
            continue;
        }
        let (Some(ours), Some(base)) = (r.cpu_us_per_unit, keepalive) else {
            continue;
        };
        let ratio = ours / base;
        r.ratio_vs_keepalive = Some(ratio);
        let mut extra = format!("{ratio:.2}x keepalive");
        if let (Some(h2c), "grpc_unary") = (h2c, r.name) {
            extra.push_str(&format!(", {:.2}x h2c_streams", ours / h2c));
        }
        r.note = Some(match r.note.take() {
            Some(n) => format!("{extra}; {n}"),
            None => extra,
        });
    }
}

/// The `--json` document.
#[derive(Serialize)]
struct Report<'a> {
    onrush_version: &'static str,
    host: Host,
    seconds: u64,
    compare: Option<&'a str>,
    /// valgrind's version when instructions were counted, else null.
    valgrind: Option<&'a str>,
    cases: &'a [CaseResult],
}

#[derive(Serialize)]
struct Host {
    cpus: usize,
    kernel: String,
    tool_cpu: usize,
    target_cpu: Option<usize>,
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The aligned table: one line per case.
fn print_table(results: &[CaseResult], with_wrk: bool, with_instructions: bool) {
    let mut header = vec!["case", "rate/s", "own cost", "peak RSS MiB"];
    if with_wrk {
        header.extend(["wrk µs/req", "onrush/wrk", "same time"]);
    }
    if with_instructions {
        header.push("instr");
        if with_wrk {
            header.extend(["wrk instr/req", "onrush/wrk instr"]);
        }
    }
    header.push("note");
    let dash = || "—".to_string();
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let cost = match (r.cpu_us_per_unit, r.kib_per_idle_vu) {
                (Some(us), _) => format!("{us:.2} µs/{}", short_unit(r.unit)),
                (None, Some(kib)) => format!("{kib:.1} KiB/VU"),
                _ => dash(),
            };
            let mut row = vec![
                r.name.to_string(),
                r.rate_per_s
                    .map_or_else(dash, |v| cases::fmt_thousands(v.round() as u64)),
                cost,
                r.peak_rss_mib.map_or_else(dash, |v| format!("{v:.1}")),
            ];
            if with_wrk {
                row.push(
                    r.wrk_cpu_us_per_request
                        .map_or_else(dash, |v| format!("{v:.2}")),
                );
                row.push(r.ratio_vs_wrk.map_or_else(dash, |v| format!("{v:.2}")));
                row.push(
                    r.ratio_vs_wrk_same_time
                        .map_or_else(dash, |v| format!("{v:.2}")),
                );
            }
            if with_instructions {
                let count = |v: f64| cases::fmt_thousands(v.round() as u64);
                row.push(
                    r.instructions_per_unit
                        .map_or_else(dash, |v| format!("{}/{}", count(v), short_unit(r.unit))),
                );
                if with_wrk {
                    row.push(r.wrk_instructions_per_request.map_or_else(dash, count));
                    row.push(
                        r.instructions_ratio_vs_wrk
                            .map_or_else(dash, |v| format!("{v:.2}")),
                    );
                }
            }
            row.push(r.note.clone().unwrap_or_default());
            row
        })
        .collect();
    let columns = header.len();
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            if i == columns - 1 {
                out.push_str(cell);
            } else if i == 0 {
                out.push_str(&format!("{cell:<w$}  "));
            } else {
                out.push_str(&format!("{cell:>w$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.iter().map(|s| s.to_string()).collect());
    for row in rows {
        line(row);
    }
}

fn short_unit(unit: &str) -> &str {
    match unit {
        "request" => "req",
        "iteration" => "iter",
        other => other,
    }
}
