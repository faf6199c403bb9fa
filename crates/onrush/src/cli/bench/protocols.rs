//! The cases of `onrush bench` for the protocols besides HTTP: TCP echo, WebSocket echo, gRPC
//! unary over h2c, Thrift binary framed — each against the same built-in server process (its one
//! port tells the protocols apart), measured like the HTTP cases, and compared with the
//! `keepalive` case (HTTP/1.1) of the same run (`bench` runs `keepalive` whenever one of these
//! is selected). `h2c_streams` is HTTP/2 without TLS, the reference for gRPC's cost; ghz, when
//! it is installed, is gRPC's outside reference.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use super::cases::{note_failures, Bench, CaseResult, OVERRUN};
use super::process::{measure, on_path, tail, Failure};

/// The protocol cases (their unit is one call or round trip).
pub const PROTOCOL_CASES: &[&str] = &[
    "h2c_streams",
    "tcp_echo",
    "websocket_echo",
    "grpc_unary",
    "thrift_framed",
];

const GREETER_PROTO: &str = include_str!("../../../../../examples/protos/greeter.proto");
const CALCULATOR_IDL: &str = include_str!("../../../../../examples/idl/calculator.thrift");
const SHARED_IDL: &str = include_str!("../../../../../examples/idl/shared.thrift");

impl Bench<'_> {
    pub(super) fn protocol_case(&self, name: &'static str) -> Result<CaseResult, Failure> {
        let host = format!("127.0.0.1:{}", self.port);
        let closed = |vus: u64| json!({ "vus": vus, "duration": format!("{}s", self.seconds) });
        match name {
            "h2c_streams" => self.calls(
                name,
                "request",
                json!({ "http": { "version": "h2", "connections": "shared", "max_streams": 10 } }),
                closed(50),
                vec![json!({ "get": "/" })],
                "HTTP/2 without TLS (h2c), 50 VUs on 5 connections x 10 streams, GET /",
                &[],
            ),
            "tcp_echo" => self.calls(
                name,
                "call",
                json!({}),
                closed(50),
                vec![json!({
                    "tcp": host,
                    "send_hex": "00 00 00 05 68 65 6c 6c 6f",
                    "length_prefix": 4,
                })],
                "50 connections, a 5-byte message with a 4-byte length prefix, echoed",
                &[],
            ),
            "websocket_echo" => self.calls(
                name,
                "round trip",
                json!({}),
                closed(50),
                vec![
                    json!({ "once": [ {
                        "ws": "connect", "name": "connect",
                        "url": format!("ws://{host}/ws/echo"),
                    } ] }),
                    json!({
                        "ws": "send", "text": "hello", "await": { "count": 1, "timeout": "5s" },
                    }),
                ],
                "50 sockets, each opened once by its VU and held (as `keepalive` holds its \
                 connections), one text echo (5 bytes) per iteration",
                &["connect"],
            ),
            "grpc_unary" => {
                let proto = self.write_file("greeter.proto", GREETER_PROTO)?;
                let mut result = self.calls(
                    name,
                    "call",
                    json!({
                        "grpc": { "protos": [proto], "import_paths": [self.dir] },
                        "http": { "connections": "shared", "max_streams": 10 },
                    }),
                    closed(50),
                    vec![json!({
                        "grpc": host,
                        "call": "helloworld.Greeter/SayHello",
                        "message": { "name": "onrush" },
                    })],
                    "h2c, 50 VUs on 5 connections x 10 streams (as ghz --connections 5 -c 50), \
                     HelloRequest of 6 bytes",
                    &[],
                )?;
                self.ghz_reference(&mut result, &proto)?;
                Ok(result)
            }
            "thrift_framed" => {
                self.write_file("shared.thrift", SHARED_IDL)?;
                let idl = self.write_file("calculator.thrift", CALCULATOR_IDL)?;
                self.calls(
                    name,
                    "call",
                    json!({ "thrift": { "idl": [idl] } }),
                    closed(50),
                    vec![json!({
                        "thrift": host,
                        "call": "Calculator.calculate",
                        "protocol": "binary",
                        "transport": "framed",
                        "args": { "logid": 1, "w": { "num1": 6, "num2": 7, "op": "MULTIPLY" } },
                    })],
                    "50 connections, binary protocol, framed transport: calculate(i32, Work { \
                     i32, i32, enum }) -> i32",
                    &[],
                )
            }
            _ => Err(Failure::Runtime(format!("unknown case {name}"))),
        }
    }

    fn write_file(&self, name: &str, text: &str) -> Result<PathBuf, Failure> {
        let path = self.dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    /// Runs the case's plan; one unit is a request of a step not named in `overhead`.
    #[allow(clippy::too_many_arguments)]
    fn calls(
        &self,
        name: &'static str,
        unit: &'static str,
        top: Value,
        load: Value,
        steps: Vec<Value>,
        note: &str,
        overhead: &[&str],
    ) -> Result<CaseResult, Failure> {
        let run = self.onrush_plan(name, top, load, steps, None)?;
        let requests = run.u64("/totals/requests");
        let extra: u64 = run.summary["steps"]
            .as_array()
            .map(|steps| {
                steps
                    .iter()
                    .filter(|s| overhead.iter().any(|n| s["name"] == *n))
                    .filter_map(|s| s["requests"].as_u64())
                    .sum()
            })
            .unwrap_or(0);
        let units = requests.saturating_sub(extra);
        if units == 0 {
            return Err(Failure::Runtime(format!(
                "{name}: onrush completed no {unit}"
            )));
        }
        let mut note = note.to_string();
        note_failures(name, &run, requests, &mut note)?;
        Ok(CaseResult {
            name,
            unit,
            cpu_us_per_unit: Some(run.cpu_s * 1e6 / units as f64),
            rate_per_s: Some(units as f64 / run.duration_s()),
            peak_rss_mib: Some(run.peak_rss_mib),
            note: Some(note),
            ..Default::default()
        })
    }

    /// ghz (the gRPC load tool) on the same call, pinned and measured the same way: 50
    /// concurrent calls on 5 connections. Without ghz installed, the note says so.
    fn ghz_reference(&self, result: &mut CaseResult, proto: &Path) -> Result<(), Failure> {
        let note = result.note.get_or_insert_with(String::new);
        let Some(ghz) = find_ghz() else {
            note.push_str(
                "; ghz not found (go install github.com/bojand/ghz/cmd/ghz@latest): no outside \
                 reference",
            );
            return Ok(());
        };
        let runtime = |m: String| Failure::Runtime(m);
        let out_path = self.dir.join("ghz.json");
        let out = File::create(&out_path)
            .map_err(|e| runtime(format!("cannot create {}: {e}", out_path.display())))?;
        let mut cmd = self.pinning.command(Some(self.pinning.tool), &ghz);
        cmd.arg("--insecure")
            .arg("--proto")
            .arg(proto)
            .args(["--call", "helloworld.Greeter/SayHello"])
            .args(["-d", r#"{"name":"onrush"}"#])
            .args(["-c", "50", "--connections", "5", "--cpus", "1"])
            .arg(format!("-z{}s", self.seconds))
            .args(["--format", "json"])
            .arg(format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null());
        let m = measure(
            &mut cmd,
            "ghz",
            Duration::from_secs(self.seconds) + OVERRUN,
            None,
        )?;
        let report: Value = std::fs::read_to_string(&out_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| runtime(format!("ghz wrote no JSON report: {}", tail(&out_path))))?;
        let ok = report
            .pointer("/statusCodeDistribution/OK")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if m.code != 0 || ok == 0 {
            return Err(runtime(format!(
                "ghz exited with code {} after {ok} OK calls: {}",
                m.code,
                tail(&out_path)
            )));
        }
        let us = m.cpu_s * 1e6 / ok as f64;
        result.ghz_cpu_us_per_call = Some(us);
        result.ratio_vs_ghz = result.cpu_us_per_unit.map(|ours| ours / us);
        note.push_str(&format!(
            "; ghz -c50 --connections 5: {us:.2} µs/call, onrush/ghz {:.2}",
            result.ratio_vs_ghz.unwrap_or(0.0)
        ));
        Ok(())
    }
}

/// ghz on PATH, or where `go install` puts it.
fn find_ghz() -> Option<PathBuf> {
    on_path("ghz").or_else(|| {
        let home = std::env::var_os("GOPATH")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join("go")))?;
        let p = home.join("bin/ghz");
        p.is_file().then_some(p)
    })
}
