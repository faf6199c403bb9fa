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
    /// HTTPS, mutual TLS: the client certificate chain (PEM), with --key; like curl --cert.
    #[arg(long, value_name = "FILE", requires = "key", conflicts_with = "p12")]
    cert: Option<std::path::PathBuf>,
    /// HTTPS, mutual TLS: the private key (PEM) of --cert; like curl --key.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<std::path::PathBuf>,
    /// HTTPS, mutual TLS: a PKCS#12 file (.p12/.pfx) with the client certificate and key.
    #[arg(long, value_name = "FILE")]
    p12: Option<std::path::PathBuf>,
    /// The environment variable holding the password of --p12 [default: no password]. Read
    /// from the environment, never given on the command line (where `ps` and shell history
    /// would show it).
    #[arg(long, value_name = "VAR", requires = "p12")]
    p12_password_env: Option<String>,
    /// A threshold, as in a plan's `thresholds:` (repeatable), e.g. --threshold 'p99 < 500ms'
    /// --threshold 'failure_rate < 1%'. A failed one exits 1; --junit writes them for CI.
    #[arg(long = "threshold", value_name = "EXPR")]
    thresholds: Vec<String>,
    /// Speak HTTP/3 (QUIC, UDP) to an https:// URL: the plan's `http: { version: h3 }`.
    #[arg(long)]
    http3: bool,
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
    let plan = match crate::linked::load_plan_str("quick", &text, std::path::Path::new("."), &[]) {
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
    // A JUnit file of no threshold is an empty suite, which CI reads as passing.
    if args.common.junit.is_some() && args.thresholds.is_empty() {
        return Err(
            "--junit without --threshold: the JUnit file holds the thresholds' \
             verdicts, and an empty suite would read as passing; add --threshold EXPR, e.g. \
             --threshold 'p99 < 500ms' --threshold 'failure_rate < 1%'"
                .into(),
        );
    }
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
    let mut tls = serde_json::Map::new();
    let mut secrets = serde_json::Map::new();
    if args.insecure {
        tls.insert("insecure".into(), Value::Bool(true));
    } else if let Some(ca) = &args.ca_file {
        tls.insert("ca_file".into(), path_value(ca));
    }
    if let (Some(cert), Some(key)) = (&args.cert, &args.key) {
        tls.insert("client_cert".into(), path_value(cert));
        tls.insert("client_key".into(), path_value(key));
    }
    if let Some(p12) = &args.p12 {
        tls.insert("client_p12".into(), path_value(p12));
        if let Some(var) = &args.p12_password_env {
            // Checked here so that a missing variable is an error naming the flag.
            if std::env::var_os(var).is_none() {
                return Err(format!(
                    "--p12-password-env {var}: the environment variable {var} is not set; \
                     export it with the password of {} first",
                    p12.display()
                ));
            }
            // A plan secret read from the environment, never a literal in the plan: secrets
            // are masked in every file and message onrush writes.
            secrets.insert(P12_SECRET.into(), json!({ "env": var }));
            tls.insert(
                "client_p12_password".into(),
                Value::String(format!("${{{P12_SECRET}}}")),
            );
        }
    }
    // A client certificate for a plain-HTTP URL is a mistake worth saying (the URL lost its
    // `s`); -k and --ca-file are harmless there and stay accepted, as curl does.
    if (args.cert.is_some() || args.p12.is_some()) && !args.url.starts_with("https://") {
        return Err(format!(
            "{} is not an https:// URL: --cert/--key and --p12 give a client certificate for \
             HTTPS; write https://...",
            args.url
        ));
    }
    if !tls.is_empty() {
        http["tls"] = Value::Object(tls);
    }
    if args.http3 {
        if !args.url.starts_with("https://") {
            return Err(format!(
                "{} is not an https:// URL: --http3 speaks HTTP/3 over QUIC, which always \
                 carries TLS; write https://... (the server's HTTP/3 port)",
                args.url
            ));
        }
        http["version"] = Value::String("h3".into());
    }
    let mut plan = json!({
        "target": origin,
        "http": http,
        "scenarios": [{ "name": "quick", "load": load, "steps": [Value::Object(step)] }],
    });
    if !secrets.is_empty() {
        plan["secrets"] = Value::Object(secrets);
    }
    if !args.thresholds.is_empty() {
        plan["thresholds"] = json!(args.thresholds);
    }
    Ok(serde_json::to_string_pretty(&plan).expect("JSON serialises"))
}

/// The plan secret holding the password of --p12 (from --p12-password-env).
const P12_SECRET: &str = "quick_p12_password";

/// A file path given on the command line, literally (a `${` in it is not a template).
fn path_value(p: &std::path::Path) -> Value {
    Value::String(literal(&p.to_string_lossy()))
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
        "client_cert" => "--cert",
        "client_key" => "--key",
        "client_p12" => "--p12",
        "client_p12_password" => "--p12-password-env",
        "version" => "--http3",
        _ if field.contains(P12_SECRET) => "--p12-password-env",
        "target" => "URL",
        _ if field.starts_with("thresholds") => "--threshold",
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
    let rest_at = url
        .find("://")
        .ok_or_else(|| match onrush_plan::scheme_typo(url) {
            Some(fixed) => {
                format!("{url:?} is not an absolute URL: its scheme lacks `://`; write {fixed}")
            }
            None => format!("{url:?} is not an absolute URL; write e.g. http://127.0.0.1:8080/"),
        })?
        + 3;
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
