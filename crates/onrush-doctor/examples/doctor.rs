//! Runs the doctor on this host, the way `onrush doctor` does.
//!
//! ```text
//! cargo run -p onrush-doctor --example doctor                  # host only
//! cargo run -p onrush-doctor --example doctor -- --json
//! cargo run -p onrush-doctor --example doctor -- --plan 10000 2000 127.0.0.1:8080
//!     # peak connections, new connections/s, targets...; also --sources N, --reset
//! ```

use onrush_doctor::{diagnose, print_text, Host, PlanNeeds};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let needs = args.iter().position(|a| a == "--plan").map(|i| {
        let usage = "--plan PEAK_CONNECTIONS NEW_PER_S [TARGET...] [--sources N] [--reset]";
        PlanNeeds {
            peak_connections: args.get(i + 1).expect(usage).parse().expect(usage),
            new_connections_per_s: args.get(i + 2).expect(usage).parse().expect(usage),
            targets: args[i + 3..]
                .iter()
                .take_while(|a| !a.starts_with("--"))
                .map(|a| a.parse().expect(usage))
                .collect(),
            source_addresses: args
                .iter()
                .position(|a| a == "--sources")
                .map_or(0, |j| args[j + 1].parse().expect(usage)),
            close_reset: args.iter().any(|a| a == "--reset"),
            ..Default::default()
        }
    });
    let report = diagnose(&Host::live(), needs.as_ref());
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_text(&report, &mut std::io::stdout().lock());
    }
}
