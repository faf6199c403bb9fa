//! `onrush-redis` end to end against Debian's real `redis-server` (installed by
//! tests/install-redis.sh): counts checked on the server (`INFO commandstats`), errors by
//! class, AUTH, RESP3, a shared pool, a plan mistake at file:line:col, and a 2-agent
//! distributed run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_onrush-redis");

/// A redis-server of this test's own on a free loopback port, killed by its PID on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(extra: &[&str]) -> Redis {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (tests/install-redis.sh installs it)");
        let redis = Redis { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One command's raw reply, read up to `min` bytes (INFO and friends), with `auth` first.
    fn query(&self, auth: Option<&str>, command: &[&str]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = Vec::new();
        let mut encode = |args: &[&str]| {
            out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
            }
        };
        if let Some(password) = auth {
            encode(&["AUTH", password]);
        }
        encode(command);
        encode(&["QUIT"]);
        s.write_all(&out).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    }

    /// `calls=` of each command in `INFO commandstats`.
    fn calls(&self, auth: Option<&str>, command: &str) -> u64 {
        let info = self.query(auth, &["INFO", "commandstats"]);
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onrush-redis-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("onrush-redis runs")
}

/// Writes `yaml` as `dir/name.yaml`, runs it with `extra` flags into `dir/name/`; returns the
/// output and the results directory.
fn run_plan(dir: &Path, name: &str, yaml: &str, extra: &[&str]) -> (Output, PathBuf) {
    let plan = dir.join(format!("{name}.yaml"));
    std::fs::write(&plan, yaml).unwrap();
    let out = dir.join(name);
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    (run(&args), out)
}

/// onrush's own binary, beside this one when the workspace was built into the same target
/// directory (onrush's CI does): it must read results written by a build with more protocols.
fn plain_onrush() -> Option<PathBuf> {
    let dir = std::env::current_exe()
        .ok()?
        .parent()?
        .parent()?
        .to_path_buf();
    let bin = dir.join("onrush");
    bin.is_file().then_some(bin)
}

fn summary(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap()
}

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/redis.yaml").to_string()
}

#[test]
fn the_example_plan_runs_and_the_server_counts_every_command() {
    let redis = Redis::start(&[]);
    let out = temp("example");
    let o = run(&[
        "run",
        &example(),
        "-D",
        &format!("redis={}", redis.addr()),
        "-D",
        "vus=4",
        "-D",
        "iterations=50",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    // 4 VUs of 50 iterations each, 4 steps an iteration.
    assert_eq!(s["totals"]["requests"], 4 * 50 * 4);
    assert_eq!(s["totals"]["failures"], 0, "{s:#}");
    // What the server saw, command by command: 200 iterations each.
    for command in ["set", "get", "incr", "lpush", "ltrim", "llen"] {
        assert_eq!(redis.calls(None, command), 200, "{command}");
    }
    // Every check passed: GET read back exactly what SET wrote for that VU and iteration.
    let checks = s["checks"].as_array().expect("checks");
    assert!(
        checks.iter().all(|c| c["fails"] == 0 && c["passes"] == 200),
        "{checks:#?}"
    );
    // 4 VUs, a connection each.
    assert_eq!(s["scenarios"][0]["connections_opened"], 4, "{s:#}");
    // The plain `onrush report` reads these results, classes it does not know included.
    assert!(out.join("report.html").is_file());
}

#[test]
fn error_replies_are_counted_by_their_own_classes_and_the_run_goes_on() {
    let redis = Redis::start(&[]);
    let dir = temp("errors");
    let yaml = format!(
        "scenarios:\n  - name: s\n    load: {{ vus: 2, iterations: 10 }}\n    steps:\n      - {{ redis: {a}, command: [SET, \"s:${{vu}}\", x] }}\n      - {{ redis: {a}, command: [LPUSH, \"s:${{vu}}\", y] }}\n      - {{ redis: {a}, command: [NOSUCHCOMMAND] }}\n      - {{ redis: {a}, command: [GET, \"s:${{vu}}\"], check: [ {{ jsonpath: \"$\", equals: x }} ] }}\n",
        a = redis.addr()
    );
    let (o, out) = run_plan(&dir, "errors", &yaml, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    let classes = &s["totals"]["failures_by_class"];
    assert_eq!(classes["redis_wrongtype"], 20, "{s:#}");
    assert_eq!(classes["redis_error"], 20, "{s:#}");
    assert_eq!(s["totals"]["failures"], 40);
    // The connection stays usable after an error reply: the GET after it succeeded, 20 times,
    // on the VUs' two connections.
    assert_eq!(redis.calls(None, "get"), 20);
    assert_eq!(s["scenarios"][0]["connections_opened"], 2, "{s:#}");
    // The first message of each class is kept for the user, and the summary prints the hint.
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(text.contains("WRONGTYPE Operation against a key"), "{text}");
    // Each class's group and hint are recorded beside the counts.
    let wrongtype = &s["failure_classes"]["redis_wrongtype"];
    assert_eq!(wrongtype["group"], "Redis", "{s:#}");
    assert!(
        wrongtype["hint"].as_str().unwrap().contains("(WRONGTYPE)"),
        "{s:#}"
    );
    // onrush's own binary, which knows no Redis, merges and reports these results with their
    // classes (registered by name as it reads them), their groups and hints (as recorded).
    match plain_onrush() {
        Some(onrush) => {
            let merged = dir.join("merged");
            let o = Command::new(&onrush)
                .args(["merge", out.to_str().unwrap(), "--out", merged.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let m = summary(&merged);
            assert_eq!(m["totals"]["failures_by_class"], s["totals"]["failures_by_class"]);
            assert_eq!(m["failure_classes"], s["failure_classes"]);
            let html = dir.join("plain.html");
            let o = Command::new(&onrush)
                .args(["report", out.to_str().unwrap(), "--out", html.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let html = std::fs::read_to_string(html).unwrap();
            assert!(html.contains("redis_wrongtype"));
            assert!(html.contains(r#"<tr class="group"><td>Redis</td><td class="num">40</td>"#));
            assert!(html.contains("the key holds a value of another type"));
        }
        None => eprintln!("onrush's own binary is not beside this one: build the workspace into the same target directory to check that it reads these results"),
    }
}

#[test]
fn auth_resp3_and_a_database() {
    let redis = Redis::start(&["--requirepass", "s3cret"]);
    let dir = temp("auth");
    let yaml = format!(
        "vars: {{ password: s3cret }}\nscenarios:\n  - name: s\n    load: {{ vus: 8, iterations: 40 }}\n    steps:\n      - redis: {a}\n        auth: {{ password: \"${{password}}\" }}\n        resp: 3\n        database: 3\n        command: [HSET, \"h:${{vu}}\", f, \"${{vu}}\"]\n      - redis: {a}\n        auth: {{ password: \"${{password}}\" }}\n        resp: 3\n        database: 3\n        command: [HGETALL, \"h:${{vu}}\"]\n        check: [ {{ jsonpath: \"$.f\", equals: \"${{vu}}\" }} ]\n",
        a = redis.addr()
    );
    let (o, out) = run_plan(&dir, "ok", &yaml, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["totals"]["failures"], 0, "{s:#}");
    // 8 VUs of 40 iterations each; RESP3's map reply is a JSON object (`$.f` above).
    assert_eq!(redis.calls(Some("s3cret"), "hgetall"), 320);
    // Both steps share each VU's connection (same server, same settings): one HELLO (with
    // AUTH in it) per connection, 8 in all.
    assert_eq!(s["scenarios"][0]["connections_opened"], 8, "{s:#}");
    assert_eq!(redis.calls(Some("s3cret"), "hello"), 8);
    // The keys went to database 3.
    let keys = redis.query(Some("s3cret"), &["INFO", "keyspace"]);
    assert!(keys.contains("db3:keys=8"), "{keys}");

    // A wrong password fails every request as redis_auth, and the run says none succeeded.
    let (o, out) = run_plan(&dir, "bad", &yaml, &["-D", "password=wrong"]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&out);
    assert_eq!(s["totals"]["failures_by_class"]["redis_auth"], 640, "{s:#}");
}

#[test]
fn a_shared_pool_serves_vus_that_think_with_fewer_connections() {
    let redis = Redis::start(&[]);
    let dir = temp("pool");
    let plan = |scope: &str| {
        format!(
            "scenarios:\n  - name: s\n    load: {{ vus: 8, iterations: 20, ramp_up: 1s }}\n    steps:\n      - {{ redis: {a}, connections: {scope}, command: [INCR, \"n:${{vu}}\"] }}\n      - {{ think: 20ms }}\n",
            a = redis.addr()
        )
    };
    let (o, out) = run_plan(&dir, "shared", &plan("shared"), &["-t", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["totals"]["failures"], 0, "{s:#}");
    assert_eq!(redis.calls(None, "incr"), 160);
    // A request holds a connection for well under a millisecond and a VU thinks 20 ms: a few
    // pooled connections serve all eight VUs.
    let shared = s["scenarios"][0]["connections_opened"].as_u64().unwrap();
    assert!((1..=4).contains(&shared), "{shared} connections for 8 VUs");
    let (o, out) = run_plan(&dir, "per_vu", &plan("per_vu"), &["-t", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary(&out)["scenarios"][0]["connections_opened"], 8);
}

#[test]
fn tls_with_the_scenarios_ca_and_handshakes_counted() {
    let dir = temp("tls");
    // A CA and a server certificate for 127.0.0.1 and localhost, made with openssl.
    let sh = format!(
        "cd {d} && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null \
         && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null \
         && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > ext.cnf \
         && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf 2>/dev/null",
        d = dir.display()
    );
    assert!(
        Command::new("sh")
            .args(["-c", &sh])
            .status()
            .unwrap()
            .success(),
        "openssl"
    );
    let file = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args([
            "--tls-cert-file",
            &file("server.pem"),
            "--tls-key-file",
            &file("server.key"),
        ])
        .args([
            "--tls-ca-cert-file",
            &file("ca.pem"),
            "--tls-auth-clients",
            "no",
        ])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let yaml = format!(
        "scenarios:\n  - name: s\n    load: {{ vus: 3, iterations: 10 }}\n    http: {{ tls: {{ ca_file: {ca} }} }}\n    steps:\n      - {{ redis: \"tls://localhost:{port}\", command: [SET, \"t:${{vu}}\", secure] }}\n      - {{ redis: \"tls://localhost:{port}\", command: [GET, \"t:${{vu}}\"], check: [ {{ jsonpath: \"$\", equals: secure }} ] }}\n",
        ca = file("ca.pem")
    );
    let (o, out) = run_plan(&dir, "ok", &yaml, &[]);
    let plain = run_plan(&dir, "plain", &yaml.replace("tls://", ""), &[]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["totals"]["requests"], 60, "{s:#}");
    assert_eq!(s["totals"]["failures"], 0, "{s:#}");
    // One TLS connection per VU, its handshake counted as HTTPS's are.
    assert_eq!(s["scenarios"][0]["connections_opened"], 3, "{s:#}");
    assert_eq!(s["totals"]["handshakes"]["full"], 3, "{s:#}");
    // Plain RESP to the TLS port: the server resets the connection; counted, never a hang.
    let s = summary(&plain.1);
    assert_eq!(s["totals"]["failures_by_class"]["reset"], 60, "{s:#}");
}

#[test]
fn a_misspelled_key_is_an_error_at_its_line_with_the_fix() {
    let out = temp("validate");
    let plan = out.join("bad.yaml");
    std::fs::write(
        &plan,
        "scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - redis: 127.0.0.1:6379\n        comand: [GET, k]\n",
    )
    .unwrap();
    let o = run(&["validate", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.yaml:6:9: scenarios[0].steps[0].comand: unknown key `comand`"),
        "{err}"
    );
    assert!(err.contains("did you mean `command`?"), "{err}");
    let o = run(&["validate", &example()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The schema knows the step.
    let o = run(&["schema"]);
    let schema: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(schema["definitions"]["redis"]["properties"]["pipeline"].is_object());
}

#[test]
fn two_agents_split_a_redis_plan_exactly() {
    let redis = Redis::start(&[]);
    let out = temp("distributed");
    let mut controller = Command::new(BIN)
        .args(["run", &example(), "-D", &format!("redis={}", redis.addr())])
        .args([
            "-D",
            "vus=4",
            "-D",
            "iterations=60",
            "--agents",
            "2",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--out", out.join("run").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(controller.stderr.take().unwrap()).lines();
    let port: u16 = loop {
        let line = lines
            .next()
            .expect("the controller says where it listens")
            .unwrap();
        if let Some(rest) = line.split(" on 127.0.0.1:").nth(1) {
            break rest
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap();
        }
    };
    // The controller's stderr keeps flowing (a full pipe would stall it).
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let token = out.join("run/agent-token");
    let agents: Vec<Child> = ["a1", "a2"]
        .iter()
        .map(|name| {
            Command::new(BIN)
                .args(["agent", "--connect", &format!("127.0.0.1:{port}")])
                .args(["--token-file", token.to_str().unwrap(), "--name", name])
                .args(["-t", "1", "--wait", "20", "-q"])
                .args(["--work-dir", out.join(name).to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut a in agents {
        assert!(a.wait().unwrap().success(), "an agent failed");
    }
    let status = controller.wait().unwrap();
    let stderr = rest.join().unwrap().join("\n");
    assert!(status.success(), "{stderr}");
    let s = summary(&out.join("run"));
    // 4 VUs of 60 iterations, split over the two agents, 4 steps an iteration.
    assert_eq!(s["totals"]["requests"], 4 * 60 * 4, "{s:#}");
    assert_eq!(s["totals"]["failures"], 0, "{s:#}");
    assert_eq!(redis.calls(None, "set"), 240);
    assert_eq!(redis.calls(None, "lpush"), 240);
    // Each agent ran its share.
    let agents: Value =
        serde_json::from_slice(&std::fs::read(out.join("run/agents.json")).unwrap()).unwrap();
    let shares: Vec<u64> = agents["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            let own = summary(&out.join("run/agents").join(a["name"].as_str().unwrap()));
            own["totals"]["requests"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(shares.iter().sum::<u64>(), 960, "{agents:#}");
    assert!(shares.iter().all(|&n| n > 0), "{agents:#}");
}
