//! Distributed runs end to end: a controller (`onrush run --agents N`) and its agents
//! (`onrush agent`), each a real process, against a Python server that counts what it
//! received (the witness onrush did not write).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::netns::{namespace, Namespace};
use crate::common::{onrush, scenario, summary, temp_dir, u64_at, write_plan, RogueServer};

/// Own CA and mutual TLS on the control connection.
#[path = "distributed_tls.rs"]
mod tls;

/// A unique directory per test thread (the suite's tests share one process).
fn dir(name: &str) -> std::path::PathBuf {
    temp_dir(&format!("dist-{name}-{:?}", std::thread::current().id()).replace(['(', ')'], ""))
}

/// A controller started on a free port; its stderr is read until it says where it listens.
pub(crate) struct ControllerProc {
    child: Child,
    pub(crate) port: u16,
    stderr: std::sync::mpsc::Receiver<String>,
}

pub(crate) fn start_controller(
    plan: &Path,
    out: &Path,
    agents: usize,
    extra: &[&str],
) -> ControllerProc {
    start_controller_on("127.0.0.1", plan, out, agents, extra)
}

/// [`start_controller`] listening on `host` (any port).
fn start_controller_on(
    host: &str,
    plan: &Path,
    out: &Path,
    agents: usize,
    extra: &[&str],
) -> ControllerProc {
    let mut child = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--agents",
            &agents.to_string(),
        ])
        .args([
            "--listen",
            &format!("{host}:0"),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the controller starts");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let port = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the controller says where it listens");
        if let Some(rest) = line.split(&format!(" on {host}:")).nth(1) {
            break rest
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap();
        }
    };
    ControllerProc {
        child,
        port,
        stderr: rx,
    }
}

impl ControllerProc {
    /// The next line of stderr that starts with `prefix` (within 20 s), without it.
    pub(crate) fn line_after(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let line = self
                .stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("the controller says {prefix:?}"));
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_string();
            }
        }
    }

    /// Waits for the exit; returns its code, stdout and stderr.
    pub(crate) fn finish(mut self) -> (i32, String, String) {
        let mut stdout = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        let status = self.child.wait().unwrap();
        // Every line, to the end of the stream (the reader thread ends at EOF): lines still on
        // their way when the process exited are not lost.
        let stderr: Vec<String> = self.stderr.iter().collect();
        (status.code().unwrap_or(-1), stdout, stderr.join("\n"))
    }
}

pub(crate) fn start_agent(
    port: u16,
    token: &Path,
    name: &str,
    threads: usize,
    work: &Path,
) -> Child {
    start_agent_with(port, token, name, threads, work, &[])
}

/// [`start_agent`] with more flags (e.g. `--tls-ca`).
fn start_agent_with(
    port: u16,
    token: &Path,
    name: &str,
    threads: usize,
    work: &Path,
    extra: &[String],
) -> Child {
    agent_command(
        Command::new(env!("CARGO_BIN_EXE_onrush")),
        "127.0.0.1",
        port,
        token,
        name,
        threads,
        work,
        extra,
    )
}

/// `onrush agent` as `command` (the binary, or `ip netns exec NS` the binary) dialing
/// `host:port`.
#[allow(clippy::too_many_arguments)]
fn agent_command(
    mut command: Command,
    host: &str,
    port: u16,
    token: &Path,
    name: &str,
    threads: usize,
    work: &Path,
    extra: &[String],
) -> Child {
    command
        .args(["agent", "--connect", &format!("{host}:{port}")])
        .args(["--token-file", token.to_str().unwrap(), "--name", name])
        .args(["-t", &threads.to_string(), "--wait", "20", "-q"])
        .args(["--work-dir", work.join(name).to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("an agent starts")
}

fn agents_file(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("agents.json")).unwrap()).unwrap()
}

#[test]
fn three_agents_split_the_load_exactly_and_the_merge_is_onrush_merge() {
    three_agents_exactly(&[]);
}

/// The same with each agent a machine of its own: a network namespace with its own address,
/// reaching the controller and the target (the witness) across its veth (issue 13's proof).
#[test]
fn three_agents_on_three_network_namespaces_split_the_load_exactly() {
    // K of 10.231.K.0/24: 1..=90 by process, so that two suites at once rarely meet (the
    // --launch ssh test takes 100..=249).
    let base = 1 + (std::process::id() % 30) * 3;
    let machines: Result<Vec<Namespace>, String> =
        (0..3).map(|i| namespace("dist", base + i)).collect();
    match machines {
        Ok(machines) => three_agents_exactly(&machines),
        // As the port-wall and ssh tests: a machine that cannot make namespaces skips, saying so.
        Err(why) => eprintln!("SKIPPED: three agents on namespaces: cannot make one: {why}"),
    }
}

/// Three agents (1, 2 and 1 workers) run a plan of every load kind: totals exact, the server
/// agrees, the merge is `onrush merge`'s. `machines`: where each agent runs (none: here, on
/// loopback).
fn three_agents_exactly(machines: &[Namespace]) {
    // On namespaces, the target and the controller listen on this side of the first pair:
    // every agent reaches them through its own veth and this namespace's routing.
    let here = machines
        .first()
        .map_or("127.0.0.1".to_string(), Namespace::here);
    let server = RogueServer::start_on(&here);
    let d = dir(if machines.is_empty() {
        "exact"
    } else {
        "exact-ns"
    });
    let out = d.join("results");
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("ids.csv"), "id\na\nb\nc\n").unwrap();
    let users: String = (1..=10).map(|i| format!("u{i}\n")).collect();
    std::fs::write(data.join("users.csv"), format!("user\n{users}")).unwrap();
    let plan = write_plan(
        &d,
        &format!(
            r#"
target: {}
thresholds: ["failure_rate < 1%", "shared: requests == 101", "open: requests == 121"]
scenarios:
  - name: closed
    load: {{ vus: 7, iterations: 13 }}
    feeders: [{{ file: data/ids.csv }}]
    steps:
      - get: /once/c-${{id}}
  - name: shared
    load: {{ vus: 5, shared_iterations: 101 }}
    steps:
      - get: /once/s
  - name: open
    load: {{ start_rate: 20/s, stages: [{{ rate: 60/s, over: 3s }}], max_vus: 20 }}
    steps:
      - get: /once/o
  - name: unique
    load: {{ vus: 4, iterations: 5 }}
    feeders: [{{ file: data/users.csv, mode: unique }}]
    steps:
      - get: /once/u-${{user}}-${{global_counter()}}
"#,
            server.url("")
        ),
    );
    let junit = d.join("junit.xml");
    let controller = start_controller_on(
        if machines.is_empty() {
            "127.0.0.1"
        } else {
            "0.0.0.0"
        },
        &plan,
        &out,
        3,
        &["-q", "--junit", junit.to_str().unwrap()],
    );
    let token = out.join("agent-token");
    let work = d.join("agents");
    // Uneven agents: 4 workers in all.
    let agents: Vec<Child> = [("a1", 1), ("a2", 2), ("a3", 1)]
        .iter()
        .enumerate()
        .map(|(i, (n, t))| match machines.get(i) {
            None => start_agent(controller.port, &token, n, *t, &work),
            Some(ns) => {
                let command = ns.command(env!("CARGO_BIN_EXE_onrush"));
                agent_command(
                    command,
                    &ns.here(),
                    controller.port,
                    &token,
                    n,
                    *t,
                    &work,
                    &[],
                )
            }
        })
        .collect();
    let (code, stdout, stderr) = controller.finish();
    for mut a in agents {
        assert!(a.wait().unwrap().success(), "an agent failed");
    }
    // One threshold is wrong on purpose (the open ramp makes 120 arrivals): exit 1, and the
    // JUnit file says which of the three failed, from the merged results.
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase").count(), 3, "{xml}");
    assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
    assert!(xml.contains("open: requests == 121"), "{xml}");
    let s = summary(&out);
    // The start skew is measured on the agents: each says how late it woke for the start.
    let skew = s["distributed"]["start_skew_ms"]
        .as_f64()
        .expect("start_skew_ms");
    assert!(skew < 10.0, "start skew {skew} ms");
    // The plan's totals, exactly: 7 × 13, 101 shared, and the open ramp's 120 arrivals.
    assert_eq!(u64_at(scenario(&s, "closed"), "/requests"), 91);
    assert_eq!(u64_at(scenario(&s, "shared"), "/requests"), 101);
    assert_eq!(u64_at(scenario(&s, "open"), "/requests"), 120);
    // A unique feeder of 10 rows hands each row to one VU across all agents: 10 requests, not
    // 10 per agent.
    assert_eq!(u64_at(scenario(&s, "unique"), "/requests"), 10);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    // The server's own count agrees.
    assert_eq!(server.received(), 91 + 101 + 120 + 10);
    // Each agent ran a part, and the parts add up.
    let list = agents_file(&out);
    let list = list["agents"].as_array().unwrap();
    assert_eq!(list.len(), 3);
    let mut sum = 0;
    for a in list {
        assert!(a["results_received"].as_bool().unwrap(), "{a:#}");
        if !machines.is_empty() {
            // Each dialed from its own machine (agents are listed in join order, so by name).
            let name = a["name"].as_str().unwrap();
            let k = ["a1", "a2", "a3"].iter().position(|n| *n == name).unwrap();
            let from = a["address"].as_str().unwrap();
            assert!(
                from.starts_with(&format!("{}:", machines[k].there())),
                "agent {name} dialed from {from}"
            );
        }
        assert!(a["clock_rtt_ms"].as_f64().unwrap() < 50.0, "{a:#}");
        assert!(a["start_late_ms"].as_f64().unwrap().abs() < 10.0, "{a:#}");
        let own = summary(&out.join("agents").join(a["name"].as_str().unwrap()));
        let n = u64_at(&own, "/totals/requests");
        assert!(n > 0, "agent {} ran nothing", a["name"]);
        sum += n;
    }
    assert_eq!(sum, 322);
    // The merged percentiles are those of `onrush merge` over the agents' own results.
    let merged = d.join("merged");
    let dirs: Vec<String> = list
        .iter()
        .map(|a| {
            out.join("agents")
                .join(a["name"].as_str().unwrap())
                .display()
                .to_string()
        })
        .collect();
    let status = onrush()
        .arg("merge")
        .args(&dirs)
        .args(["--out", merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success());
    let m = summary(&merged);
    assert_eq!(s["totals"]["latency_ms"], m["totals"]["latency_ms"]);
    assert_eq!(s["scenarios"], m["scenarios"]);
    assert!(out.join("report.html").is_file());
    // summary.json says who ran the load and with which clocks.
    let recorded = s["distributed"]["agents"].as_array().unwrap();
    assert_eq!(recorded.len(), 3);
    assert!(recorded.iter().all(|a| a["clock_offset_ms"].is_number()));
    assert_eq!(s["distributed"]["partial"], false);
}

#[test]
fn a_wrong_token_is_refused_on_both_sides() {
    let d = dir("token");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /\n",
    );
    // A flag a distributed run does not honour is refused, not ignored: the threads are
    // each agent's.
    let refused = onrush()
        .args(["run", plan.to_str().unwrap(), "--agents", "1", "-t", "2"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("-t/--threads"));
    let controller = start_controller(&plan, &out, 1, &["--agents-wait", "4"]);
    let wrong = d.join("wrong-token");
    std::fs::write(&wrong, "0123456789abcdef0123456789abcdef\n").unwrap();
    let agent = start_agent(controller.port, &wrong, "intruder", 1, &d.join("w"));
    let agent_out = agent.wait_with_output().unwrap();
    let agent_err = String::from_utf8_lossy(&agent_out.stderr);
    assert!(!agent_out.status.success());
    assert!(
        agent_err.contains("does not know this agent's token"),
        "{agent_err}"
    );
    assert!(agent_err.contains("no load was generated"), "{agent_err}");
    let (code, _, stderr) = controller.finish();
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("0 of 1 agents joined"), "{stderr}");
    assert!(!d.join("w").join("intruder").join("results").exists());
}

#[test]
fn an_agent_refuses_a_plan_that_targets_outside_its_allow_list() {
    let d = dir("allow");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /\n",
    );
    let controller = start_controller(&plan, &out, 1, &["-q"]);
    let agent = Command::new(env!("CARGO_BIN_EXE_onrush"))
        .args([
            "agent",
            "--connect",
            &format!("127.0.0.1:{}", controller.port),
        ])
        .args(["--token-file", out.join("agent-token").to_str().unwrap()])
        .args([
            "--name",
            "farm1",
            "-t",
            "1",
            "--allow-targets",
            "10.0.0.0/8,::1",
        ])
        .args(["--work-dir", d.join("w").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(agent.status.code(), Some(2));
    let (code, _, stderr) = controller.finish();
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("agent farm1: refused: the plan targets 127.0.0.1:9, outside this agent's --allow-targets 10.0.0.0/8,::1/128"),
        "{stderr}"
    );
    assert!(!d.join("w").join("results").join("intervals.jsonl").exists());
}

#[test]
fn a_lost_agent_is_reported_and_the_run_goes_on_and_a_lost_controller_stops_its_agents() {
    let server = RogueServer::start();
    let d = dir("loss");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\nscenarios:\n  - name: open\n    load: {{ rate: 40/s, duration: 8s, max_vus: 10 }}\n    steps:\n      - get: /once/x\n",
            server.url("")
        ),
    );
    let controller = start_controller(&plan, &out, 2, &["-q"]);
    let token = out.join("agent-token");
    let work = d.join("agents");
    let mut victim = start_agent(controller.port, &token, "victim", 1, &work);
    let mut survivor = start_agent(controller.port, &token, "survivor", 1, &work);
    // Wait until the load runs, then kill one agent outright.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.received() < 20 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    victim.kill().unwrap();
    let _ = victim.wait();
    let (code, stdout, stderr) = controller.finish();
    assert!(survivor.wait().unwrap().success());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("partial run: agent lost: victim"),
        "{stdout}"
    );
    let list = agents_file(&out);
    let victim_report = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "victim")
        .unwrap();
    let lost_at = victim_report["lost_at_s"].as_f64().expect("lost_at_s");
    assert_eq!(summary(&out)["distributed"]["partial"], true);
    assert!(lost_at < 8.0, "{victim_report:#}");
    // The survivor's whole share and the victim's seconds up to its loss are in the merge.
    let s = summary(&out);
    let total = u64_at(&s, "/totals/requests");
    assert!((160..320).contains(&total), "{total}");
    // The report shows each agent's rate and health, and the loss.
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains(r#"<section id="agents""#),
        "no Agents section"
    );
    assert!(report.contains("Partial run: 1 lost"));
    assert!(report.contains(r#"<td>victim</td>"#) && report.contains(r#"<td>survivor</td>"#));
    assert!(
        report.contains(&format!("at {lost_at:.1} s:")),
        "the loss time"
    );
    for name in ["victim", "survivor"] {
        assert!(
            report.contains(&format!(r#""agent:{name}":["#)),
            "the per-second series of {name} is in the chart data"
        );
    }

    // Now the other way round: the controller dies, and its agents stop by themselves.
    let d2 = dir("loss2");
    let out2 = d2.join("results");
    let plan2 = write_plan(
        &d2,
        &format!(
            "target: {}\nscenarios:\n  - name: open\n    load: {{ rate: 20/s, duration: 60s, max_vus: 10 }}\n    steps:\n      - get: /once/y\n",
            server.url("")
        ),
    );
    let mut controller = start_controller(&plan2, &out2, 1, &["-q"]);
    let mut agent = start_agent(controller.port, &out2.join("agent-token"), "orphan", 1, &d2);
    let before = server.received();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.received() < before + 10 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    controller.child.kill().unwrap();
    let _ = controller.child.wait();
    let killed = Instant::now();
    let stopped = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break (status, killed.elapsed());
        }
        assert!(
            killed.elapsed() < Duration::from_secs(15),
            "the agent kept generating load for 15 s after its controller died"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // 3 s of silence, then the graceful stop of in-flight requests (none hang here).
    assert!(stopped.1 < Duration::from_secs(6), "{:?}", stopped.1);
    let after = server.received();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        server.received(),
        after,
        "load went on after the agent stopped"
    );
}

#[test]
fn on_agent_loss_replace_hands_the_lost_segment_to_a_spare_from_where_the_run_is() {
    let server = RogueServer::start();
    let d = dir("replace");
    let out = d.join("results");
    // 40 arrivals/s for 10 s over 2 agents (one worker each): 400 in all, 200 per segment.
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\ndistributed: {{ on_agent_loss: replace }}\nscenarios:\n  - name: open\n    load: {{ rate: 40/s, duration: 10s, max_vus: 10 }}\n    steps:\n      - get: /once/r\n",
            server.url("")
        ),
    );
    let controller = start_controller(&plan, &out, 2, &[]);
    let token = out.join("agent-token");
    let work = d.join("agents");
    let mut victim = start_agent(controller.port, &token, "victim", 1, &work);
    let mut survivor = start_agent(controller.port, &token, "survivor", 1, &work);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.received() < 20 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A third agent joins the running run: with `replace` it waits as a spare.
    let mut spare = start_agent(controller.port, &token, "spare", 1, &work);
    // Spares are taken in the order they joined: this one joins after `spare`.
    std::thread::sleep(Duration::from_millis(400));
    // One more that the run will not need: dismissed at the end, exit 0.
    let mut idle = start_agent(controller.port, &token, "idle", 1, &work);
    std::thread::sleep(Duration::from_millis(700));
    victim.kill().unwrap();
    let killed = Instant::now();
    let _ = victim.wait();
    // The loss is reported within 3 s of the kill (and the spare named in the same line).
    let lost_line = loop {
        let line = controller
            .stderr
            .recv_timeout(Duration::from_secs(10).saturating_sub(killed.elapsed()))
            .expect("the controller reports the lost agent");
        if line.contains("agent victim lost at") {
            break line;
        }
    };
    let reported_after = killed.elapsed();
    assert!(
        reported_after < Duration::from_secs(3),
        "reported {reported_after:?} after the kill"
    );
    assert!(
        lost_line.contains("spare agent spare") && lost_line.contains("takes over its segment"),
        "{lost_line}"
    );
    let (code, stdout, stderr) = controller.finish();
    assert!(survivor.wait().unwrap().success());
    assert!(spare.wait().unwrap().success(), "the spare failed");
    assert!(
        idle.wait().unwrap().success(),
        "the unneeded spare was not dismissed cleanly"
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let list = agents_file(&out);
    let list = list["agents"].as_array().unwrap();
    let find = |name: &str| {
        list.iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no agent {name} in {list:#?}"))
    };
    let (lost, replacement) = (find("victim"), find("spare"));
    assert_eq!(lost["replaced_by"], "spare", "{lost:#}");
    assert_eq!(replacement["replaces"], "victim", "{replacement:#}");
    assert_eq!(replacement["segment"], lost["segment"]);
    assert!(
        list.iter().all(|a| a["name"] != "idle"),
        "the unneeded spare ran"
    );
    let lost_at = lost["lost_at_s"].as_f64().unwrap();
    let joined_at = replacement["joined_at_s"].as_f64().unwrap();
    assert!(
        lost_at < joined_at && joined_at < lost_at + 3.0,
        "{lost_at} {joined_at}"
    );
    // The spare ran exactly the lost segment's arrivals from where it joined: arrival i of
    // the schedule (at i/40 s) belongs to worker i mod 2.
    let worker = u64_at(lost, "/segment/first_worker");
    let expected = (0..400u64)
        .filter(|i| i % 2 == worker && *i as f64 / 40.0 >= joined_at)
        .count() as u64;
    let own = summary(&out.join("agents").join("spare"));
    let open = scenario(&own, "open");
    assert_eq!(
        u64_at(open, "/iterations") + u64_at(open, "/dropped_iterations"),
        expected,
        "{open:#}"
    );
    // Its seconds are the run's (numbered from the run's start, not its own), so the merge
    // puts them where they happened.
    let lines = std::fs::read_to_string(out.join("agents/spare/intervals.jsonl")).unwrap();
    let first_t = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["t"].as_u64())
        .min()
        .unwrap();
    assert_eq!(first_t, joined_at.floor() as u64, "joined at {joined_at} s");
    let merged = summary(&out);
    let total = u64_at(&merged, "/totals/requests");
    // Without the spare the lost segment's rest (~100-120 requests) would be missing; what is
    // missing now is its seconds between its last snapshot and the spare's start.
    assert!(total >= 300, "{total} requests merged");
    assert_eq!(merged["distributed"]["on_agent_loss"], "replace");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains(r#""agent:spare":["#));
}

#[test]
fn kube_render_writes_objects_that_parse_as_yaml_and_refuses_files_outside_the_plan() {
    let d = dir("kube");
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::write(d.join("data").join("users.csv"), "user\na\nb\n").unwrap();
    let plan = write_plan(
        &d,
        "target: http://shop.internal\nscenarios:\n  - name: s\n    load: { vus: 10, duration: 1m }\n    feeders: [{ file: data/users.csv, mode: unique }]\n    steps:\n      - get: /u/${user}\n",
    );
    let out = d.join("run.yaml");
    let status = onrush()
        .args(["kube", "render", plan.to_str().unwrap(), "--agents", "4"])
        .args([
            "--image",
            "registry.example/onrush:1",
            "--namespace",
            "load",
        ])
        .args(["-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert_eq!(yaml.lines().filter(|l| *l == "---").count(), 5);
    // Read back by a YAML parser onrush did not write, where one is installed (PyYAML).
    let check = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, json\ntry:\n    import yaml\nexcept ImportError:\n    print('SKIP'); sys.exit(0)\n\
             docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]\n\
             print(json.dumps([[d['kind'], d['metadata']['name']] for d in docs]))\n\
             job = docs[4]['spec']\n\
             assert job['completionMode'] == 'Indexed' and job['completions'] == 4, job\n\
             cm = docs[1]['data']\n\
             assert 'user\\na\\nb\\n' in cm.values(), cm\n",
        )
        .arg(&out)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    if !printed.contains("SKIP") {
        assert!(
            printed.contains("[\"Job\", \"onrush-plan-") && printed.contains("-agents\"]"),
            "{printed}"
        );
    }
    // A file outside the plan's folder cannot be mounted from the ConfigMap: refused, named.
    std::fs::write(d.join("outside.csv"), "id\n1\n").unwrap();
    let outside = write_plan(
        &d.join("data"),
        "target: http://x\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    feeders: [{ file: ../outside.csv }]\n    steps:\n      - get: /\n",
    );
    let refused = onrush()
        .args([
            "kube",
            "render",
            outside.to_str().unwrap(),
            "--agents",
            "1",
            "--image",
            "i",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("outside the plan's folder"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn an_agent_of_another_version_is_refused_with_both_versions_named() {
    use onrush_distributed::wire::{self, Frame, Msg};
    let d = dir("version");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /\n",
    );
    let controller = start_controller(&plan, &out, 1, &["--agents-wait", "3"]);
    let addr = format!("127.0.0.1:{}", controller.port);
    // An agent of another release, speaking the protocol by hand.
    let reply = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let mut tls = onrush_distributed::agent::tls_over(tcp, &addr)
                .await
                .unwrap();
            let hello = Msg::Hello {
                onrush: "0.0.9".into(),
                results_format: onrush_distributed::RESULTS_FORMAT,
                name: "old".into(),
                threads: 1,
                nonce: "00".into(),
            };
            wire::write_msg(&mut tls, &hello).await.unwrap();
            wire::read_frame(&mut tls).await.unwrap()
        });
    let Frame::Msg(Msg::Refused { reason }) = reply else {
        panic!("expected a refusal, got {reply:?}");
    };
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        reason.contains(&format!(
            "the agent is onrush 0.0.9 and the controller onrush {ours}"
        )),
        "{reason}"
    );
    let (code, _, stderr) = controller.finish();
    assert_eq!(code, 3);
    assert!(stderr.contains("the agent is onrush 0.0.9"), "{stderr}");
}

#[test]
fn on_agent_loss_abort_stops_every_agent_and_keeps_their_results() {
    let server = RogueServer::start();
    let d = dir("abort");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\ndistributed: {{ on_agent_loss: abort }}\nscenarios:\n  - name: open\n    load: {{ rate: 40/s, duration: 30s, max_vus: 10 }}\n    steps:\n      - get: /once/a\n",
            server.url("")
        ),
    );
    let controller = start_controller(&plan, &out, 2, &["-q"]);
    let token = out.join("agent-token");
    let work = d.join("agents");
    let mut victim = start_agent(controller.port, &token, "victim", 1, &work);
    let mut survivor = start_agent(controller.port, &token, "survivor", 1, &work);
    let deadline = Instant::now() + Duration::from_secs(20);
    // Two seconds of load: each agent has streamed at least one whole second.
    while server.received() < 90 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    victim.kill().unwrap();
    let _ = victim.wait();
    let killed = Instant::now();
    let (code, stdout, stderr) = controller.finish();
    // Found lost (at once: its connection ended), then every agent stopped: far before 30 s.
    assert!(
        killed.elapsed() < Duration::from_secs(12),
        "{:?}",
        killed.elapsed()
    );
    // The survivor was stopped by its controller, and handed its results over.
    survivor.wait().unwrap();
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    let list = agents_file(&out);
    let kept = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "survivor")
        .unwrap()
        .clone();
    assert_eq!(kept["results_received"], true, "{kept:#}");
    assert!(
        stderr.contains("on_agent_loss: abort stops every agent"),
        "{stderr}"
    );
    let s = summary(&out);
    assert_eq!(s["distributed"]["partial"], true);
    assert_eq!(s["distributed"]["on_agent_loss"], "abort");
    // The survivor's results were handed over and merged.
    let total = u64_at(&s, "/totals/requests");
    assert!((40..600).contains(&total), "{total}");
    let after = server.received();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(server.received(), after, "load went on after the abort");
}

/// An InfluxDB write endpoint reduced to what the test reads: it answers every POST with 204
/// and keeps the bodies (line protocol), for the exporter's points to be added up.
struct WriteReceiver {
    port: u16,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl WriteReceiver {
    fn start() -> WriteReceiver {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    loop {
                        let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            match conn.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buf.len() < head_end + 4 + len {
                            match conn.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body = &buf[head_end + 4..head_end + 4 + len];
                        kept.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(body).into_owned());
                        buf.drain(..head_end + 4 + len);
                        let _ =
                            conn.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
                    }
                });
            }
        });
        WriteReceiver { port, bodies }
    }

    /// The sum of an integer field over every point of a measurement.
    fn sum(&self, measurement: &str, field: &str) -> u64 {
        let bodies = self.bodies.lock().unwrap();
        bodies
            .iter()
            .flat_map(|b| b.lines())
            .filter(|l| l.split([',', ' ']).next() == Some(measurement))
            .filter_map(|l| {
                l.split([' ', ','])
                    .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
                    .and_then(|v| v.trim_end_matches('i').parse::<u64>().ok())
            })
            .sum()
    }
}

fn scrape(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    conn.read_to_string(&mut body).ok()?;
    Some(body)
}

#[test]
fn exporters_and_abort_on_fail_see_the_merged_run_live() {
    let server = RogueServer::start();
    let d = dir("live");
    // Exporters: every request of both agents reaches InfluxDB once, second by second, and
    // Prometheus is scraped while the run goes.
    let out = d.join("exported");
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\nscenarios:\n  - name: s\n    load: {{ vus: 4, shared_iterations: 301 }}\n    steps:\n      - get: /e\n      - think: 30ms\n",
            server.url("")
        ),
    );
    let influx = WriteReceiver::start();
    let prom_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let controller = start_controller(
        &plan,
        &out,
        2,
        &[
            "--influx",
            &format!("http://127.0.0.1:{}/write?db=onrush", influx.port),
            "--metrics-addr",
            &format!("127.0.0.1:{prom_port}"),
        ],
    );
    let token = out.join("agent-token");
    let work = d.join("agents");
    let a = start_agent(controller.port, &token, "a", 1, &work);
    let b = start_agent(controller.port, &token, "b", 1, &work);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut scraped = None;
    while scraped.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        scraped = scrape(prom_port).filter(|body| {
            body.lines()
                .filter(|l| l.starts_with("onrush_requests_total{"))
                .any(|l| !l.ends_with(" 0"))
        });
    }
    let (code, stdout, stderr) = controller.finish();
    for agent in [a, b] {
        agent.wait_with_output().unwrap();
    }
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        scraped.is_some(),
        "Prometheus never showed a request while the run went: {stderr}"
    );
    assert_eq!(server.received(), 301);
    assert_eq!(u64_at(&summary(&out), "/totals/requests"), 301);
    assert_eq!(
        influx.sum("onrush_totals", "count"),
        301,
        "the seconds sent to InfluxDB add up to every request of both agents"
    );

    // abort_on_fail on the merged run: the threshold is lost once both agents together sent
    // 60 requests, long before the planned 30 s, and every agent stops.
    let out = d.join("aborted");
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\nthresholds:\n  - {{ threshold: \"requests < 60\", abort_on_fail: true, grace: 1s }}\nscenarios:\n  - name: open\n    load: {{ rate: 40/s, duration: 30s, max_vus: 10 }}\n    steps: [ {{ get: /o }} ]\n",
            server.url("")
        ),
    );
    let started = Instant::now();
    let controller = start_controller(&plan, &out, 2, &[]);
    let token = out.join("agent-token");
    let a = start_agent(controller.port, &token, "a", 1, &work);
    let b = start_agent(controller.port, &token, "b", 1, &work);
    let (code, stdout, stderr) = controller.finish();
    for agent in [a, b] {
        agent.wait_with_output().unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}\n{stderr}",
        started.elapsed()
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stderr.contains("threshold lost: requests < 60"), "{stderr}");
    let s = summary(&out);
    assert_eq!(s["aborted_by"]["threshold"], "requests < 60", "{s:#}");
    assert_eq!(s["thresholds"][0]["passed"], false, "{s:#}");
    // Both agents ran and were stopped: the merged run holds the requests of both.
    let list = agents_file(&out);
    for agent in list["agents"].as_array().unwrap() {
        assert_eq!(agent["results_received"], true, "{agent:#}");
    }
    let total = u64_at(&s, "/totals/requests");
    assert!((60..400).contains(&total), "{total}");
}

#[test]
fn setup_and_teardown_run_once_on_the_controller_and_setup_values_reach_every_agent() {
    let server = crate::exec::RecordServer::start();
    let d = dir("phases");
    let out = d.join("results");
    let plan = write_plan(
        &d,
        &format!(
            r#"
target: http://127.0.0.1:{}
setup:
  steps:
    - {{ name: login, post: /login, extract: {{ token: {{ jsonpath: "$.token" }} }} }}
teardown:
  steps:
    - {{ name: logout, delete: /session, headers: {{ Authorization: "Bearer ${{token}}" }} }}
scenarios:
  - name: load
    load: {{ vus: 3, iterations: 4 }}
    steps:
      - {{ name: item, get: /item, headers: {{ Authorization: "Bearer ${{token}}" }} }}
"#,
            server.port
        ),
    );
    let controller = start_controller(&plan, &out, 2, &["-q"]);
    let token = out.join("agent-token");
    let work = d.join("agents");
    let agents: Vec<Child> = ["p1", "p2"]
        .iter()
        .map(|n| start_agent(controller.port, &token, n, 1, &work))
        .collect();
    let (code, stdout, stderr) = controller.finish();
    for mut a in agents {
        assert!(a.wait().unwrap().success(), "an agent failed");
    }
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    // One login for the whole run (not one per agent), 12 load requests split between the
    // agents, every one of them with setup's token, and one logout with it after the load.
    let counts = server.counts();
    let n = |key: &str| counts.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
    assert_eq!(n("path /login"), 1, "{counts:?}");
    assert_eq!(n("path /item"), 12, "{counts:?}");
    assert_eq!(n("path /session"), 1, "{counts:?}");
    assert_eq!(n("auth Bearer tok-1"), 13, "{counts:?}");
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 12, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    for agent in ["p1", "p2"] {
        let own = summary(&out.join("agents").join(agent));
        assert!(u64_at(&own, "/totals/requests") > 0, "{agent} ran nothing");
    }
    // Setup's and teardown's results are apart from the load's, as on one machine.
    for phase in ["setup", "teardown"] {
        let p = summary(&out.join(phase));
        assert_eq!(u64_at(&p, "/totals/requests"), 1, "{phase}: {p:#}");
    }
}

/// The end of a run is written once for both kinds of run (onrush_engine::write_results): the
/// same plan on one machine and on two agents records its thresholds in the same typed shape
/// (onrush-results' ThresholdOutcome, the `thresholds` list typed as read back), with the
/// same verdicts, even for a figure only the histograms hold (`p75`, read back from the merged
/// `intervals.jsonl` on the controller as from the run's own on one machine).
#[test]
fn one_machine_and_a_distributed_run_record_their_thresholds_in_the_same_shape() {
    let server = RogueServer::start();
    let d = dir("same-shape");
    let plan = write_plan(
        &d,
        &format!(
            "target: {}\nthresholds: [\"p75 < 10s\", \"failure_rate < 1%\", \"requests == 40\", \"p99 < 1us\"]\nscenarios:\n  - name: closed\n    load: {{ vus: 4, iterations: 10 }}\n    steps: [ {{ get: /once/same }} ]\n",
            server.url("")
        ),
    );
    // On one machine: exit 1, for `p99 < 1us`.
    let single = d.join("single");
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "-q", "--out"])
        .arg(&single)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        crate::common::text(&output)
    );

    let distributed = d.join("distributed");
    let controller = start_controller(&plan, &distributed, 2, &["-q"]);
    let token = distributed.join("agent-token");
    let work = d.join("agents");
    let a = start_agent(controller.port, &token, "a", 1, &work);
    let b = start_agent(controller.port, &token, "b", 1, &work);
    let (code, stdout, stderr) = controller.finish();
    for agent in [a, b] {
        agent.wait_with_output().unwrap();
    }
    assert_eq!(code, 1, "{stdout}\n{stderr}");

    let read =
        |dir: &Path| onrush_results::read_summary(&dir.join(onrush_results::SUMMARY_FILE)).unwrap();
    let (single, distributed) = (read(&single), read(&distributed));
    let outcomes = |s: &onrush_results::Summary| {
        // Typed as read: the list has exactly ThresholdOutcome's shape, nothing kept untyped.
        assert!(
            !s.extra.other.contains_key("thresholds"),
            "{:?}",
            s.extra.other
        );
        s.extra
            .thresholds
            .clone()
            .expect("the thresholds are recorded")
    };
    let (one, many) = (outcomes(&single), outcomes(&distributed));
    let verdicts = |list: &[onrush_results::ThresholdOutcome]| {
        list.iter()
            .map(|t| (t.threshold.clone(), t.scope.clone(), t.passed))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&one), verdicts(&many));
    assert_eq!(
        one.iter().map(|t| t.passed).collect::<Vec<_>>(),
        [true, true, true, false],
        "{one:#?}"
    );
    // Both measured p75 (a figure summary.json lacks) from the histograms.
    for list in [&one, &many] {
        assert!(list[0].measured.is_some(), "{list:#?}");
    }
    // The distributed run's own section is typed too; the single run has none.
    assert_eq!(
        distributed.extra.distributed.as_ref().unwrap().agents.len(),
        2
    );
    assert!(single.extra.distributed.is_none());
    assert_eq!(single.extra.aborted_by, None);
    assert_eq!(distributed.extra.aborted_by, None);
}
