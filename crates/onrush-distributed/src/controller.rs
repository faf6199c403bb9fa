//! The controller's side: listen, admit exactly the agents asked for (token proofs both ways,
//! same version), measure their clocks, hand each the bundle and its segment, start them at
//! one instant, gather their streamed seconds and heartbeats, notice a lost agent, and keep
//! each agent's results under `agents/<name>/` for the merge.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::ReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;

use crate::auth::{self, Role};
use crate::bundle::Bundle;
use crate::link::{write_loop, Out};
use crate::live_status::LiveStatus;
use crate::wire::{self, FileMeta, Frame, Msg, SegmentMsg};
use crate::{LOSS_AFTER, RESULTS_FORMAT, VERSION};
use onrush_metrics::LiveMerge;
// One agent as the controller knows it is onrush-results' record of it: the very type
// `summary.json` "distributed" and `agents.json` are written from and read back as.
pub use onrush_results::{AgentHealth, AgentReport};

type Stream = TlsStream<TcpStream>;

/// How the controller listens and whom it waits for.
pub struct ControllerOptions {
    pub listen: SocketAddr,
    pub token: String,
    pub agents: usize,
    /// How long to wait for all agents to join.
    pub wait: Duration,
    pub quiet: bool,
    /// Stop every agent when one is lost (`on_agent_loss: abort`), instead of going on.
    pub abort_on_loss: bool,
    /// Keep the agents that join beyond `agents` as spares, and hand a lost agent's segment
    /// to one of them (`on_agent_loss: replace`), instead of refusing them.
    pub spares: bool,
    /// Its own certificate, and the CA agents' certificates must be signed by (mutual TLS).
    pub tls: crate::tls::ControllerTls,
}

/// An admitted agent: its connection already has its reader and writer (heartbeats start at
/// once, so an agent that waits for the others is not taken for lost).
struct Joined {
    report: AgentReport,
    id: u64,
    out: mpsc::UnboundedSender<Out>,
}

/// An admitted agent's connection: it is heard from, and written to, from the moment it
/// joins.
struct Admitted {
    report: AgentReport,
    stream: Stream,
}

/// A listening controller.
pub struct Controller {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    joined: mpsc::UnboundedReceiver<Joined>,
    events: std_mpsc::Receiver<(u64, Event)>,
    options: ControllerOptions,
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl Controller {
    /// Listens on `options.listen` and starts admitting agents.
    pub fn bind(options: ControllerOptions) -> Result<Controller, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("onrush-controller")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the controller's I/O thread: {e}"))?;
        let listener = runtime
            .block_on(TcpListener::bind(options.listen))
            .map_err(|e| format!("--listen {}: cannot listen: {e}", options.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--listen {}: {e}", options.listen))?;
        let acceptor = tokio_rustls::TlsAcceptor::from(crate::tls::server_config(&options.tls)?);
        let tls = Arc::new(options.tls.clone());
        let (tx, joined) = mpsc::unbounded_channel();
        let (ev_tx, events) = std_mpsc::channel();
        let token = Arc::new(options.token.clone());
        runtime.spawn(async move {
            let mut next_id = 0u64;
            loop {
                let Ok((tcp, peer)) = listener.accept().await else {
                    continue;
                };
                next_id += 1;
                let id = next_id;
                let (acceptor, token, tx, ev_tx, tls) = (
                    acceptor.clone(),
                    token.clone(),
                    tx.clone(),
                    ev_tx.clone(),
                    tls.clone(),
                );
                tokio::spawn(async move {
                    let _ = tcp.set_nodelay(true);
                    match admit(acceptor, tcp, peer, &token, &tls).await {
                        Ok(a) => {
                            let (r, w) = tokio::io::split(a.stream);
                            let (out, out_rx) = mpsc::unbounded_channel();
                            tokio::spawn(write_loop(w, out_rx));
                            tokio::spawn(read_loop(r, id, ev_tx));
                            let _ = tx.send(Joined {
                                report: a.report,
                                id,
                                out,
                            });
                        }
                        // Even under -q: a refusal is why an agent is missing, not progress.
                        Err(e) => eprintln!("agent from {peer} refused: {e}"),
                    }
                });
            }
        });
        Ok(Controller {
            runtime,
            addr,
            joined,
            events,
            options,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits for the agents, sends them the plan, starts them together and gathers their
    /// results under `out_dir/agents/<name>/`, calling `hooks` on the way (see [`Hooks`]).
    pub fn run(
        mut self,
        bundle: &Bundle,
        overrides: &[(String, String)],
        seed: &[wire::SeedVar],
        run_name: &str,
        out_dir: &Path,
        mut hooks: Hooks<'_>,
    ) -> Result<Vec<AgentReport>, String> {
        let n = self.options.agents;
        let quiet = self.options.quiet;
        let deadline = Instant::now() + self.options.wait;
        let mut agents: Vec<Joined> = Vec::new();
        while agents.len() < n {
            if (hooks.interrupted)() {
                return Err("interrupted while waiting for agents".into());
            }
            if let Some(failure) = (hooks.launch_failed)() {
                return Err(format!(
                    "{} of {n} agents joined; launching failed:\n{failure}",
                    agents.len()
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let names: Vec<String> = agents
                    .iter()
                    .map(|a| format!("{} ({})", a.report.name, a.report.address))
                    .collect();
                return Err(format!(
                    "{} of {n} agents joined in {:?}: {}; still missing {}. Start them with \
                     `onrush agent --connect {} --token-file FILE`, or give more time with \
                     --agents-wait",
                    agents.len(),
                    self.options.wait,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    },
                    n - agents.len(),
                    self.addr
                ));
            }
            let next = self.runtime.block_on(async {
                tokio::time::timeout(left.min(Duration::from_millis(200)), self.joined.recv()).await
            });
            if let Ok(Some(mut j)) = next {
                name_apart(&mut j.report.name, |name| {
                    agents.iter().any(|a| a.report.name == name)
                });
                if !quiet {
                    eprintln!(
                        "agent {} joined from {} ({} threads, clock offset {:+.1} ms ± {:.1}) [{}/{n}]",
                        j.report.name,
                        j.report.address,
                        j.report.threads,
                        j.report.clock_offset_ms,
                        j.report.clock_rtt_ms / 2.0,
                        agents.len() + 1
                    );
                }
                agents.push(j);
            }
        }
        // Agents that come now are refused: the run has its agents. With spares, they wait in
        // `self.joined` until one is needed (heartbeats keep them), and are refused at the end.
        if !self.options.spares {
            let mut late = std::mem::replace(&mut self.joined, mpsc::unbounded_channel().1);
            self.runtime.spawn(async move {
                while let Some(j) = late.recv().await {
                    let _ = j.out.send(Out::Msg(Msg::Refused {
                        reason: "the run has all the agents it asked for".into(),
                    }));
                }
            });
        }

        // Segments: the workers of all agents, numbered in join order.
        let total: usize = agents.iter().map(|a| a.report.threads as usize).sum();
        let mut first = 0;
        let count = agents.len();
        for (i, a) in agents.iter_mut().enumerate() {
            let workers = a.report.threads as usize;
            let segment = SegmentMsg {
                agent: i,
                agents: count,
                first_worker: first,
                total_workers: total,
                workers,
            };
            a.report.segment = Some(segment.into());
            first += workers;
        }
        let agents_dir = out_dir.join("agents");
        let index: BTreeMap<u64, usize> =
            agents.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
        let raw_events = std::mem::replace(&mut self.events, std_mpsc::channel().1);
        let mut events = EventsOf {
            raw: raw_events,
            index,
        };
        let mut links = Vec::new();
        let mut reports = Vec::new();
        let send_plan = |out: &mpsc::UnboundedSender<Out>, segment: SegmentMsg| {
            let plan = Msg::Plan {
                plan: bundle.plan_path().to_string(),
                files: bundle.files.iter().map(|(m, _)| m.clone()).collect(),
                overrides: overrides.to_vec(),
                seed: seed.to_vec(),
                segment,
                run_name: run_name.to_string(),
            };
            let data = bundle.files.iter().map(|(_, b)| b.clone()).collect();
            let _ = out.send(Out::WithData(plan, data));
        };
        for a in agents {
            send_plan(&a.out, a.report.segment.expect("set above").into());
            links.push(a.out);
            reports.push(a.report);
        }

        // Every agent loads the plan, then says ready.
        let mut ready = vec![false; reports.len()];
        let ready_by = Instant::now() + Duration::from_secs(120);
        while !ready.iter().all(|r| *r) {
            let left = ready_by.saturating_duration_since(Instant::now());
            match events.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok((i, Event::Ready)) => ready[i] = true,
                Ok((i, Event::Failed(e))) => {
                    stop_all(&links);
                    return Err(format!("agent {}: {e}", reports[i].name));
                }
                Ok((i, Event::Lost(e))) => {
                    stop_all(&links);
                    return Err(format!(
                        "agent {} was lost before the start: {e}",
                        reports[i].name
                    ));
                }
                Ok(_) => {}
                Err(_) => {
                    stop_all(&links);
                    let slow: Vec<&str> = reports
                        .iter()
                        .zip(&ready)
                        .filter(|(_, r)| !**r)
                        .map(|(a, _)| a.name.as_str())
                        .collect();
                    return Err(format!("agents not ready after 120 s: {}", slow.join(", ")));
                }
            }
        }

        // One instant for all: far enough ahead for the slowest link.
        let worst_rtt = reports.iter().map(|a| a.clock_rtt_ms).fold(0.0, f64::max);
        let start_ms = now_ms() + 500.0 + 4.0 * worst_rtt;
        for (a, link) in reports.iter().zip(&links) {
            let _ = link.send(Out::Msg(Msg::Start {
                at_unix_ms: start_ms + a.clock_offset_ms,
                join_at_ms: 0.0,
            }));
        }
        let start =
            Instant::now() + Duration::from_secs_f64(((start_ms - now_ms()) / 1000.0).max(0.0));
        if !quiet {
            eprintln!(
                "{} agents start together in {:.0} ms",
                reports.len(),
                start_ms - now_ms()
            );
        }

        let mut files: Vec<Option<(Vec<FileMeta>, usize)>> = vec![None; reports.len()];
        let mut done = vec![false; reports.len()];
        let mut status = LiveStatus::new(reports.len(), quiet);
        let mut stop_sent = false;
        let mut live = LiveMerge::new(reports.len());
        if let Some(dir) = hooks.live_dir.take() {
            live.stream_to(dir);
        }
        // Spares given a lost agent's segment, until they say ready (then they are started).
        let mut spares_loading: Vec<usize> = Vec::new();
        for a in &reports {
            let dir = agents_dir.join(&a.name);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            // A fresh stream file for this run.
            let _ = std::fs::remove_file(dir.join(onrush_results::INTERVALS_FILE));
        }
        while !done.iter().all(|d| *d) {
            if (hooks.interrupted)() && !stop_sent {
                stop_sent = true;
                if !quiet {
                    eprintln!("interrupted: stopping every agent; waiting for their results");
                }
                stop_all(&links);
            }
            match events.recv_timeout(Duration::from_millis(100)) {
                Ok((i, Event::Intervals(bytes))) => {
                    reports[i].streamed_bytes += bytes.len() as u64;
                    let path = agents_dir
                        .join(&reports[i].name)
                        .join(onrush_results::INTERVALS_FILE);
                    if let Err(e) = append(&path, &bytes) {
                        eprintln!("warning: {}: {e}", path.display());
                    }
                    status.lines(i, &bytes);
                    if let Err(e) = live.push(i, &bytes) {
                        eprintln!("warning: agent {}'s stream: {e}", reports[i].name);
                    }
                }
                Ok((i, Event::Generator(bytes))) => {
                    reports[i].streamed_bytes += bytes.len() as u64;
                    status.generator(i, &bytes);
                }
                Ok((i, Event::Results(list))) => {
                    files[i] = Some((list, 0));
                    if files[i].as_ref().is_some_and(|(l, _)| l.is_empty()) {
                        reports[i].results_received = true;
                        done[i] = true;
                    }
                }
                Ok((i, Event::Data(bytes))) => {
                    if let Some((list, k)) = files[i].as_mut() {
                        if let Some(meta) = list.get(*k) {
                            let path = agents_dir
                                .join(&reports[i].name)
                                .join(Path::new(&meta.path).file_name().unwrap_or_default());
                            if let Err(e) = std::fs::write(&path, &bytes) {
                                eprintln!("warning: {}: {e}", path.display());
                            }
                            *k += 1;
                            if *k == list.len() {
                                reports[i].results_received = true;
                                done[i] = true;
                            }
                        }
                    }
                }
                Ok((i, Event::Lost(why))) => {
                    if !done[i] {
                        done[i] = true;
                        let at = start.elapsed().as_secs_f64();
                        reports[i].lost_at_s = Some(at);
                        reports[i].lost_reason = Some(why.clone());
                        if self.options.abort_on_loss {
                            eprintln!(
                                "agent {} lost at {at:.1} s: {why}; on_agent_loss: abort stops \
                                 every agent (their results so far are kept)",
                                reports[i].name
                            );
                            if !stop_sent {
                                stop_sent = true;
                                stop_all(&links);
                            }
                        } else if self.options.spares && !stop_sent {
                            match self.take_spare(&reports) {
                                Some(mut spare) => {
                                    let k = reports.len();
                                    eprintln!(
                                        "agent {} lost at {at:.1} s: {why}; spare agent {} ({}) \
                                         takes over its segment",
                                        reports[i].name, spare.report.name, spare.report.address
                                    );
                                    spare.report.segment = reports[i].segment;
                                    spare.report.replaces = Some(reports[i].name.clone());
                                    reports[i].replaced_by = Some(spare.report.name.clone());
                                    let dir = agents_dir.join(&spare.report.name);
                                    std::fs::create_dir_all(&dir)
                                        .map_err(|e| format!("{}: {e}", dir.display()))?;
                                    let _ = std::fs::remove_file(
                                        dir.join(onrush_results::INTERVALS_FILE),
                                    );
                                    events.index.insert(spare.id, k);
                                    send_plan(
                                        &spare.out,
                                        spare.report.segment.expect("copied").into(),
                                    );
                                    links.push(spare.out);
                                    reports.push(spare.report);
                                    files.push(None);
                                    done.push(false);
                                    status.add_agent();
                                    live.add_input();
                                    spares_loading.push(k);
                                }
                                None => eprintln!(
                                    "agent {} lost at {at:.1} s: {why}; no spare agent to take \
                                     over (on_agent_loss: replace): the run goes on with the \
                                     others (its results up to its last second are kept)",
                                    reports[i].name
                                ),
                            }
                        } else {
                            eprintln!(
                                "agent {} lost at {at:.1} s: {why}; the run goes on with the \
                                 others (its results up to its last second are kept)",
                                reports[i].name
                            );
                        }
                    }
                }
                Ok((i, Event::Started(late_ms))) => {
                    reports[i].start_late_ms = Some(late_ms);
                    if !quiet && reports.iter().all(|a| a.start_late_ms.is_some()) {
                        if let Some(skew) = start_skew_ms(&reports) {
                            eprintln!("agents started within {skew:.1} ms of each other");
                        }
                    }
                }
                Ok((i, Event::Ready)) if spares_loading.contains(&i) => {
                    spares_loading.retain(|k| *k != i);
                    // Started a little ahead, where the run will be by then.
                    let at_ms = now_ms() + 200.0 + 4.0 * reports[i].clock_rtt_ms;
                    let join_at_ms = (at_ms - start_ms).max(0.0);
                    reports[i].joined_at_s = Some(join_at_ms / 1000.0);
                    let _ = links[i].send(Out::Msg(Msg::Start {
                        at_unix_ms: at_ms + reports[i].clock_offset_ms,
                        join_at_ms,
                    }));
                    if !quiet {
                        eprintln!(
                            "spare agent {} starts at {:.1} s of the run",
                            reports[i].name,
                            join_at_ms / 1000.0
                        );
                    }
                }
                Ok((i, Event::Failed(e))) if spares_loading.contains(&i) => {
                    spares_loading.retain(|k| *k != i);
                    done[i] = true;
                    reports[i].lost_reason = Some(format!("could not take over: {e}"));
                    eprintln!(
                        "spare agent {} could not take over: {e}; the run goes on without it",
                        reports[i].name
                    );
                }
                Ok((_, Event::Ready | Event::Failed(_))) => {}
                Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
            }
            for (i, d) in done.iter().enumerate() {
                if *d {
                    live.end(i);
                }
            }
            if live.close_ready() > 0 {
                if let Some(collector) = live.collector_mut() {
                    if let Some(why) = (hooks.seconds)(collector, start.elapsed()) {
                        if !stop_sent {
                            stop_sent = true;
                            eprintln!(
                                "{why}; stopping every agent (their results so far are kept)"
                            );
                            stop_all(&links);
                        }
                    }
                }
            }
            status.tick(&reports, &done);
            for change in (hooks.agents)(&reports, &done, start.elapsed()) {
                for (link, _) in links.iter().zip(&done).filter(|(_, d)| !**d) {
                    let _ = link.send(Out::Msg(Msg::Steer(change.clone())));
                }
            }
        }
        drop(links);
        // Spares never needed are told so (they exit instead of waiting for a plan).
        while let Ok(j) = self.joined.try_recv() {
            let _ = j.out.send(Out::Msg(Msg::Refused {
                reason: "the run is over without needing this spare agent".into(),
            }));
        }
        // A moment for those refusals to be written before the runtime goes.
        self.runtime.block_on(async {
            tokio::time::sleep(Duration::from_millis(100)).await;
        });
        self.runtime.shutdown_timeout(Duration::from_secs(1));
        Ok(reports)
    }

    /// The next spare agent still connected, named apart from the agents of the run.
    fn take_spare(&mut self, reports: &[AgentReport]) -> Option<Joined> {
        while let Ok(mut j) = self.joined.try_recv() {
            if j.out.is_closed() {
                continue;
            }
            name_apart(&mut j.report.name, |name| {
                reports.iter().any(|a| a.name == name)
            });
            return Some(j);
        }
        None
    }
}

/// `name`, or `name-2`, `name-3`, ... when it is `taken` (two agents of one host name): each
/// agent's results go to a directory of its name.
fn name_apart(name: &mut String, taken: impl Fn(&str) -> bool) {
    if taken(name) {
        let mut k = 2;
        while taken(&format!("{name}-{k}")) {
            k += 1;
        }
        *name = format!("{name}-{k}");
    }
}

/// [`Hooks::agents`]: the agents, whether each is done, the time since the start.
/// What it returns are changes to send every agent still running (the live page's).
pub type AgentsHook<'a> =
    dyn FnMut(&[AgentReport], &[bool], Duration) -> Vec<crate::wire::SteerMsg> + 'a;

/// What the caller of [`Controller::run`] does while the run goes.
pub struct Hooks<'a> {
    /// Polled: once it says so, every agent is told to stop (and still sends its results).
    pub interrupted: &'a dyn Fn() -> bool,
    /// Polled while agents join: what it says (a host whose ssh failed) ends the wait at once
    /// instead of after `--agents-wait`.
    pub launch_failed: &'a mut dyn FnMut() -> Option<String>,
    /// Called each time merged seconds close, with the collector of the whole run so far (its
    /// [`closed_seconds`](onrush_metrics::Collector::closed_seconds) are the new ones: for
    /// exporters) and the time since the start. What it returns is a reason to stop every
    /// agent (an `abort_on_fail` threshold lost), said on stderr.
    pub seconds: &'a mut dyn FnMut(&mut onrush_metrics::Collector, Duration) -> Option<String>,
    /// Called about every 100 ms while the run goes with the agents (and whether each is
    /// done: finished or lost) and the time since the start: for a live page.
    pub agents: &'a mut AgentsHook<'a>,
    /// Where the merged seconds are written as they close (`LiveMerge::stream_to`); `None`:
    /// kept in memory only.
    pub live_dir: Option<std::path::PathBuf>,
}

/// The most two agents' starts can be apart, in ms: each woke `start_late_ms` after the
/// instant it was given on its own clock, and that instant is known on the controller's clock
/// to within half its probe's round trip. `None` until every agent has said.
pub fn start_skew_ms(reports: &[AgentReport]) -> Option<f64> {
    let mut earliest = f64::INFINITY;
    let mut latest = f64::NEG_INFINITY;
    // Spares started later, on purpose: not part of the common start.
    for a in reports.iter().filter(|a| a.replaces.is_none()) {
        let late = a.start_late_ms?;
        earliest = earliest.min(late - a.clock_rtt_ms / 2.0);
        latest = latest.max(late + a.clock_rtt_ms / 2.0);
    }
    (latest >= earliest).then_some(latest - earliest)
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(bytes)
}

fn stop_all(links: &[mpsc::UnboundedSender<Out>]) {
    for l in links {
        let _ = l.send(Out::Msg(Msg::Stop));
    }
}

/// TLS, then the agent's hello (version checks), the token proofs both ways, and the clock
/// probes.
async fn admit(
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    token: &str,
    tls: &crate::tls::ControllerTls,
) -> Result<Admitted, String> {
    let step = Duration::from_secs(10);
    let accepted = tokio::time::timeout(step, acceptor.accept(tcp).into_fallible())
        .await
        .map_err(|_| "no TLS handshake in 10 s".to_string())?;
    let mut stream = match accepted {
        Ok(s) => s,
        Err((e, tcp)) => {
            linger(tcp).await;
            return Err(match crate::tls::rustls_error(&e) {
                Some(t) => format!(
                    "at the TLS handshake: {}",
                    crate::tls::controller_side(t, tls)
                ),
                None => format!("TLS: {e}"),
            });
        }
    };
    let binding = crate::agent::binding(stream.get_ref().1)?;
    let (name, threads, agent_nonce) = match read(&mut stream).await? {
        Frame::Msg(Msg::Hello {
            onrush,
            results_format,
            name,
            threads,
            nonce,
        }) => {
            let refuse = if onrush != VERSION {
                Some(format!(
                    "the agent is onrush {onrush} and the controller onrush {VERSION}: run the \
                     same version on both"
                ))
            } else if results_format != RESULTS_FORMAT {
                Some(format!(
                    "the agent writes results format {results_format}, the controller {RESULTS_FORMAT}"
                ))
            } else if threads == 0 || threads > 4096 {
                Some(format!("the agent announced {threads} threads"))
            } else {
                None
            };
            if let Some(reason) = refuse {
                let _ = wire::write_msg(
                    &mut stream,
                    &Msg::Refused {
                        reason: reason.clone(),
                    },
                )
                .await;
                return Err(reason);
            }
            (name, threads, nonce)
        }
        other => return Err(format!("expected a hello, got {other:?}")),
    };
    let nonce = auth::nonce();
    let proof = auth::proof(token, Role::Controller, &binding, &agent_nonce, &nonce);
    wire::write_msg(
        &mut stream,
        &Msg::Challenge {
            nonce: nonce.clone(),
            proof,
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    match read(&mut stream).await? {
        Frame::Msg(Msg::Proof { proof })
            if auth::verify(token, Role::Agent, &binding, &agent_nonce, &nonce, &proof) => {}
        Frame::Msg(Msg::Proof { .. }) => {
            let reason =
                "wrong token: the agent's proof does not match this run's token".to_string();
            let _ = wire::write_msg(
                &mut stream,
                &Msg::Refused {
                    reason: reason.clone(),
                },
            )
            .await;
            return Err(format!("{name}: {reason}"));
        }
        Frame::Msg(Msg::Refused { reason }) => return Err(format!("{name}: {reason}")),
        other => return Err(format!("expected a proof, got {other:?}")),
    }
    wire::write_msg(&mut stream, &Msg::Welcome)
        .await
        .map_err(|e| e.to_string())?;
    // Clock probes: the offset from the one with the shortest round trip (NTP's rule).
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..8 {
        let t0 = now_ms();
        wire::write_msg(&mut stream, &Msg::Ping { t0 })
            .await
            .map_err(|e| e.to_string())?;
        let t1 = loop {
            match read(&mut stream).await? {
                // JSON may not give a float back to the last bit: matched within 1 µs.
                Frame::Msg(Msg::Pong { t0: echo, t1 }) if (echo - t0).abs() < 1e-3 => break t1,
                _ => continue,
            }
        };
        let t2 = now_ms();
        let rtt = t2 - t0;
        let offset = t1 - (t0 + t2) / 2.0;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset) = best.expect("probed");
    Ok(Admitted {
        report: AgentReport {
            name,
            address: peer.to_string(),
            threads: threads as u64,
            segment: None,
            clock_offset_ms: offset,
            clock_rtt_ms: rtt,
            lost_at_s: None,
            lost_reason: None,
            start_late_ms: None,
            results_received: false,
            streamed_bytes: 0,
            generator: None,
            replaces: None,
            joined_at_s: None,
            replaced_by: None,
        },
        stream,
    })
}

/// After a refused handshake: the alert saying why is on its way, but closing now, with the
/// agent's hello unread (in TLS 1.3 a client sends it before the server has checked the
/// client's certificate), makes the kernel send a reset that can destroy the alert before the
/// agent reads it; the agent would see only "broken pipe". So: half-close, and read what the
/// agent still sends until it closes (at most 2 s).
async fn linger(mut tcp: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tcp.shutdown().await;
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(n) = tcp.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

enum Event {
    Ready,
    Failed(String),
    Started(f64),
    Intervals(Vec<u8>),
    Generator(Vec<u8>),
    Results(Vec<FileMeta>),
    Data(Vec<u8>),
    Lost(String),
}

async fn read_loop(mut r: ReadHalf<Stream>, i: u64, events: std_mpsc::Sender<(u64, Event)>) {
    // The data frame that follows an Intervals or Generator message is its bytes.
    let mut expect: Option<fn(Vec<u8>) -> Event> = None;
    // A results file's bytes may come in several data frames: gathered here, one event each.
    let mut results: Option<(Vec<u64>, usize, Vec<u8>)> = None;
    loop {
        let frame = match tokio::time::timeout(LOSS_AFTER, wire::read_frame(&mut r)).await {
            Err(_) => {
                let _ = events.send((i, Event::Lost(format!("no word for {LOSS_AFTER:?}"))));
                return;
            }
            Ok(Err(e)) => {
                let _ = events.send((i, Event::Lost(format!("connection ended: {e}"))));
                return;
            }
            Ok(Ok(f)) => f,
        };
        let event = match frame {
            Frame::Msg(Msg::Ready) => Event::Ready,
            Frame::Msg(Msg::Failed { error }) => Event::Failed(error),
            Frame::Msg(Msg::Started { late_ms }) => Event::Started(late_ms),
            Frame::Msg(Msg::Intervals) => {
                expect = Some(Event::Intervals);
                continue;
            }
            Frame::Msg(Msg::Generator) => {
                expect = Some(Event::Generator);
                continue;
            }
            Frame::Msg(Msg::Results { files }) => {
                let lens: Vec<u64> = files.iter().map(|f| f.len).collect();
                let first_empty = lens.first() == Some(&0);
                results = Some((lens, 0, Vec::new()));
                let _ = events.send((i, Event::Results(files)));
                if first_empty {
                    flush_empty_files(&mut results, i, &events);
                }
                continue;
            }
            Frame::Msg(_) => continue,
            Frame::Data(d) if expect.is_some() => expect.take().expect("checked")(d),
            Frame::Data(d) => {
                let Some((lens, k, buf)) = results.as_mut() else {
                    continue;
                };
                buf.extend_from_slice(&d);
                if lens.get(*k).is_some_and(|&l| buf.len() as u64 >= l) {
                    let file = std::mem::take(buf);
                    *k += 1;
                    let _ = events.send((i, Event::Data(file)));
                    flush_empty_files(&mut results, i, &events);
                }
                continue;
            }
        };
        if events.send((i, event)).is_err() {
            return;
        }
    }
}

/// Empty files send no data frame: each is delivered as soon as its turn comes.
fn flush_empty_files(
    results: &mut Option<(Vec<u64>, usize, Vec<u8>)>,
    i: u64,
    events: &std_mpsc::Sender<(u64, Event)>,
) {
    if let Some((lens, k, _)) = results.as_mut() {
        while lens.get(*k) == Some(&0) {
            *k += 1;
            let _ = events.send((i, Event::Data(Vec::new())));
        }
    }
}

/// The events of the agents of the run, by their index in it (those of connections that are
/// not in the run are dropped).
struct EventsOf {
    raw: std_mpsc::Receiver<(u64, Event)>,
    index: BTreeMap<u64, usize>,
}

impl EventsOf {
    fn recv_timeout(&self, d: Duration) -> Result<(usize, Event), std_mpsc::RecvTimeoutError> {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let (id, e) = self.raw.recv_timeout(left)?;
            if let Some(&i) = self.index.get(&id) {
                return Ok((i, e));
            }
        }
    }
}

/// Writes `reports` as `agents.json` in `dir`.
pub fn write_agents_file(dir: &Path, reports: &[AgentReport]) -> std::io::Result<PathBuf> {
    let path = dir.join("agents.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "agents": reports }))
        .expect("agent reports serialise");
    std::fs::write(&path, text + "\n")?;
    Ok(path)
}

/// A frame, within 10 s.
async fn read(s: &mut Stream) -> Result<Frame, String> {
    tokio::time::timeout(Duration::from_secs(10), wire::read_frame(s))
        .await
        .map_err(|_| "no answer in 10 s".to_string())?
        .map_err(|e| e.to_string())
}
