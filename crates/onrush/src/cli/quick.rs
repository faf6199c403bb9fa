//! `onrush quick URL`: an ad-hoc test without a plan file. The flags are turned into a plan
//! (so a quick test is validated, run and reported exactly like a plan file).

use clap::Args;
use serde_json::{json, Value};

use super::run::{run_plan, Output};
use super::{exit, CommonRunArgs};

#[derive(Args)]
pub struct QuickArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/
    url: String,
    /// Connections (VUs). With -r: the cap on concurrent VUs.
    #[arg(short = 'c', long, default_value_t = 50)]
    connections: u32,
    /// Test duration, e.g. 10s, 1m [default: 10s unless -n is given].
    #[arg(short = 'd', long, conflicts_with = "requests")]
    duration: Option<String>,
    /// Total number of requests instead of a duration.
    #[arg(short = 'n', long)]
    requests: Option<u64>,
    /// Open model: arrivals per second (e.g. 500). Without it, a closed loop on -c connections.
    #[arg(short = 'r', long)]
    rate: Option<f64>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    method: String,
    /// Request header 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Request body.
    #[arg(long)]
    body: Option<String>,
    /// Request timeout.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// HTTPS: accept any server certificate (a test system's self-signed one); like curl -k.
    #[arg(short = 'k', long, conflicts_with = "ca_file")]
    insecure: bool,
    /// HTTPS: trust the CAs in this PEM file (besides none other), like curl --cacert.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<std::path::PathBuf>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    common: CommonRunArgs,
}

pub fn run(args: QuickArgs) -> i32 {
    let text = match plan_text(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let plan = match onrush_plan::load_str("quick", &text, std::path::Path::new("."), &[]) {
        Ok(p) => p,
        Err(e) => {
            // The plan was generated from the flags: name the flag, not the generated text.
            eprintln!("error: {}: {}", flag_of(e.field()), e.message());
            if let Some(hint) = e.hint() {
                eprintln!("  hint: {hint}");
            }
            return exit::USAGE;
        }
    };
    let output = if args.json {
        Output::Json
    } else {
        Output::Table
    };
    run_plan(&plan, &args.common, output)
}

/// The plan (as JSON, which is YAML) equivalent to the flags.
fn plan_text(args: &QuickArgs) -> Result<String, String> {
    let (origin, path) = split_url(&args.url)?;
    let method = args.method.to_ascii_lowercase();
    let mut step = serde_json::Map::new();
    const KEYED: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];
    if KEYED.contains(&method.as_str()) {
        step.insert(method, Value::String(literal(&path)));
    } else {
        // Any other token (PURGE, PROPFIND, ...): sent exactly as typed.
        step.insert("method".into(), Value::String(args.method.clone()));
        step.insert("path".into(), Value::String(literal(&path)));
    }
    if !args.headers.is_empty() {
        let mut headers = serde_json::Map::new();
        for h in &args.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("-H {h:?}: expected 'Name: value'"))?;
            headers.insert(
                name.trim().to_string(),
                Value::String(literal(value.trim())),
            );
        }
        step.insert("headers".into(), Value::Object(headers));
    }
    if let Some(body) = &args.body {
        step.insert("body".into(), Value::String(literal(body)));
    }
    // `vus: 0` in a plan is an error; so is its flag (it used to run one VU silently).
    if args.connections == 0 {
        return Err(
            "-c/--connections 0: at least one connection (VU) is needed; write e.g. -c 1".into(),
        );
    }
    let c = args.connections;
    let load = match (args.rate, args.requests) {
        (Some(rate), Some(n)) => {
            json!({ "rate": rate, "duration": format!("{}ms", (n as f64 / rate * 1000.0).ceil() as u64), "max_vus": c })
        }
        (Some(rate), None) => {
            json!({ "rate": rate, "duration": args.duration.as_deref().unwrap_or("10s"), "max_vus": c })
        }
        (None, Some(n)) => json!({ "vus": c.min(n.max(1) as u32), "shared_iterations": n }),
        (None, None) => json!({ "vus": c, "duration": args.duration.as_deref().unwrap_or("10s") }),
    };
    let mut http = json!({ "timeout": args.timeout });
    if args.insecure {
        http["tls"] = json!({ "insecure": true });
    } else if let Some(ca) = &args.ca_file {
        http["tls"] = json!({ "ca_file": ca.to_string_lossy() });
    }
    let plan = json!({
        "target": origin,
        "http": http,
        "scenarios": [{ "name": "quick", "load": load, "steps": [Value::Object(step)] }],
    });
    Ok(serde_json::to_string_pretty(&plan).expect("JSON serialises"))
}

/// The command-line flag a field of the generated plan comes from.
fn flag_of(field: &str) -> &'static str {
    let last = field.rsplit('.').next().unwrap_or(field);
    match last {
        "duration" => "-d/--duration",
        "rate" => "-r/--rate",
        "vus" | "max_vus" => "-c/--connections",
        "shared_iterations" => "-n/--requests",
        "timeout" => "--timeout",
        "body" => "--body",
        "ca_file" => "--ca-file",
        "insecure" => "-k/--insecure",
        "target" => "URL",
        _ if field.contains("headers") => "-H/--header",
        _ if field.contains("steps") => "URL or -m/--method",
        _ => "the flags",
    }
}

/// Command-line values are taken literally: `${` is escaped so it is not read as a template.
fn literal(s: &str) -> String {
    s.replace("${", "$${")
}

/// "http://host:port/path?q" → ("http://host:port", "/path?q").
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest_at = url.find("://").ok_or_else(|| {
        format!("{url:?} is not an absolute URL; write e.g. http://127.0.0.1:8080/")
    })? + 3;
    match url[rest_at..].find('/') {
        Some(i) => Ok((
            url[..rest_at + i].to_string(),
            url[rest_at + i..].to_string(),
        )),
        None => Ok((url.to_string(), "/".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn splits_origin_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/a/b?c=1").unwrap(),
            ("http://127.0.0.1:8080".into(), "/a/b?c=1".into())
        );
        assert_eq!(
            split_url("http://localhost").unwrap(),
            ("http://localhost".into(), "/".into())
        );
        assert!(split_url("localhost:8080").is_err());
    }
}
