//! `onrush-fuzz TARGET [EXECS] [SEED]`: mutates the target's corpus EXECS times in-process (no
//! coverage feedback; for that see bench/fuzz.sh) and prints the rate.
//! `onrush-fuzz TARGET --replay FILE...`: runs the target on the files (a crash to reproduce).
//! `onrush-fuzz --list`: the targets. `onrush-fuzz --dict TARGET`: its tokens as an AFL
//! dictionary (bench/fuzz.sh passes it to AFL++).

use std::time::Instant;

use onrush_fuzz::runner::{fuzz, replay, run_one};
use onrush_fuzz::{target, TARGETS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: onrush-fuzz TARGET [EXECS] [SEED] | TARGET --replay FILE... | --list | --dict TARGET";
    match args.first().map(String::as_str) {
        None => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
        Some("--list") => {
            for t in TARGETS {
                println!("{}", t.name);
            }
        }
        Some("--dict") => {
            let Some(t) = args.get(1).and_then(|n| target(n)) else {
                eprintln!("{usage}");
                std::process::exit(2);
            };
            for token in t.dict {
                let escaped: String = token.iter().map(|b| format!("\\x{b:02x}")).collect();
                println!("\"{escaped}\"");
            }
        }
        Some(name) => {
            let Some(t) = target(name) else {
                eprintln!("no target {name:?}; `onrush-fuzz --list` lists them");
                std::process::exit(2);
            };
            if args.get(1).map(String::as_str) == Some("--replay") {
                for file in &args[2..] {
                    let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
                    run_one(t, &bytes, file);
                    println!("{file}: ok");
                }
                return;
            }
            let number = |i: usize, default: u64| {
                args.get(i).map_or(default, |s| {
                    s.replace('_', "")
                        .parse()
                        .unwrap_or_else(|_| panic!("{usage}"))
                })
            };
            let execs = number(1, 1_000_000) as usize;
            let seed = number(2, 1);
            let start = Instant::now();
            let files = replay(t);
            fuzz(t, execs, seed);
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{}: {files} corpus files, {execs} mutated inputs in {secs:.1} s ({:.0}/s), no failure",
                t.name,
                execs as f64 / secs
            );
        }
    }
}
