//! The agent's side of the control connection: dial the controller, prove the token and
//! check the controller's proof, receive the plan's bundle and its share of the load, start
//! when told, stream `intervals.jsonl` as it grows, and hand the results over at the end.
//! An agent that hears nothing from its controller for [`LOSS_AFTER`] stops its load by
//! itself: no orphaned generator keeps hammering a target after the test.

use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::ReadHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::client::TlsStream;

use crate::auth::{self, Role};
use crate::bundle;
use crate::link::{write_loop, Out};
use crate::wire::{self, FileMeta, Frame, Msg, SegmentMsg};
use crate::{LOSS_AFTER, RESULTS_FORMAT};

/// How an agent dials.
pub struct AgentOptions {
    /// `HOST:PORT` of the controller.
    pub connect: String,
    pub token: String,
    pub name: String,
    /// This agent's worker threads.
    pub threads: usize,
    /// Where the bundle and the results go.
    pub work_dir: PathBuf,
    /// How long to keep dialing a controller that is not listening yet.
    pub wait: Duration,
    /// The CA to check the controller against, and this agent's client certificate.
    pub tls: crate::tls::AgentTls,
}

/// What the controller says to an agent waiting for a plan.
pub enum Assigned {
    Plan(Assignment),
    /// Not needed after all (a spare of a run that ended without losing an agent), and why.
    Dismissed(String),
}

/// When and where to start, from the controller's start signal.
#[derive(Clone, Copy, Debug)]
pub struct StartAt {
    /// The instant to start at, on this machine's clock.
    pub at: Instant,
    /// The run's start in Unix ms of this machine's clock (`at` for an agent of the start).
    pub run_start_unix_ms: u64,
    /// Where in the plan's schedule the agent starts: zero, or for a spare taking over a lost
    /// agent's segment, the time the run had reached (see `onrush_engine::RunOptions`).
    pub join_at: Duration,
}

/// What the controller gave this agent to run.
pub struct Assignment {
    /// The plan, as written under the work dir.
    pub plan: PathBuf,
    pub overrides: Vec<(String, String)>,
    /// What the controller's `setup:` extracted, for every VU of this agent.
    pub seed: Vec<wire::SeedVar>,
    pub segment: SegmentMsg,
    pub run_name: String,
}

enum Event {
    Plan(Result<Assignment, String>),
    /// The start instant (Unix ms of this machine's clock) and where in the schedule (ms).
    Start(f64, f64),
    Stop,
    Lost(String),
    /// The controller needs this agent no more (a spare of a run that ended), and why.
    Dismissed(String),
}

type Stream = TlsStream<TcpStream>;

/// A connected, authenticated agent.
pub struct AgentLink {
    runtime: tokio::runtime::Runtime,
    out: mpsc::UnboundedSender<Out>,
    events: std_mpsc::Receiver<Event>,
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl AgentLink {
    /// Dials, authenticates both ways and starts answering the controller. `on_stop` is
    /// called (from another thread) when the controller says stop or is lost.
    pub fn connect(
        options: &AgentOptions,
        on_stop: Arc<dyn Fn() + Send + Sync>,
        on_steer: Arc<dyn Fn(crate::wire::SteerMsg) + Send + Sync>,
    ) -> Result<AgentLink, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("onrush-agent-link")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the agent's I/O thread: {e}"))?;
        // Before dialing: a bad certificate file is an error at once, not after the wait.
        let tls = Tls::new(&options.tls, &options.connect)?;
        let stream = runtime.block_on(dial(options, &tls))?;
        let (reader, writer) = tokio::io::split(stream);
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (ev_tx, events) = std_mpsc::channel();
        runtime.spawn(write_loop(writer, out_rx));
        runtime.spawn(read_loop(
            reader,
            out_tx.clone(),
            ev_tx,
            options.work_dir.join("bundle"),
            on_stop,
            on_steer,
        ));
        Ok(AgentLink {
            runtime,
            out: out_tx,
            events,
        })
    }

    /// Waits for the plan (the controller sends it once every agent has joined, or to a
    /// spare when it takes over a lost agent's segment). `Ok(None)`: the controller dismissed
    /// this agent (a spare the run did not need), and said why.
    pub fn assignment(&self) -> Result<Assigned, String> {
        match self.events.recv() {
            Ok(Event::Plan(a)) => a.map(Assigned::Plan),
            Ok(Event::Dismissed(why)) => Ok(Assigned::Dismissed(why)),
            Ok(Event::Lost(why)) => Err(why),
            Ok(Event::Stop) => Err("the controller stopped the run before it started".into()),
            Ok(Event::Start(..)) => Err("the controller said start before sending a plan".into()),
            Err(_) => Err("the controller closed the connection".into()),
        }
    }

    /// The plan is loaded: ready to start.
    pub fn ready(&self) {
        let _ = self.out.send(Out::Msg(Msg::Ready));
    }

    /// The plan cannot run here; the controller is told why.
    pub fn failed(&self, error: &str) {
        let _ = self.out.send(Out::Msg(Msg::Failed {
            error: error.to_string(),
        }));
        self.flush();
    }

    /// Waits for the start signal: the instant to start at, on this machine's clock.
    pub fn wait_start(&self) -> Result<StartAt, String> {
        loop {
            match self.events.recv() {
                Ok(Event::Start(at_ms, join_at_ms)) => {
                    let now = now_ms();
                    let ahead = Duration::from_secs_f64(((at_ms - now) / 1000.0).max(0.0));
                    let start = Instant::now() + ahead;
                    // Wakes when the workers do (they sleep until the same instant) and says
                    // how late that was on this machine's clock.
                    let out = self.out.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(start.saturating_duration_since(Instant::now()));
                        let late_ms = now_ms() - at_ms;
                        let _ = out.send(Out::Msg(Msg::Started { late_ms }));
                    });
                    let join_at = Duration::from_secs_f64((join_at_ms / 1000.0).max(0.0));
                    return Ok(StartAt {
                        at: start,
                        // The run's start, so that this agent's seconds are the run's.
                        run_start_unix_ms: (at_ms - join_at_ms).round().max(0.0) as u64,
                        join_at,
                    });
                }
                Ok(Event::Plan(_)) => continue,
                Ok(Event::Dismissed(why)) => return Err(why),
                Ok(Event::Lost(why)) => return Err(why),
                Ok(Event::Stop) => return Err("the controller stopped the run".into()),
                Err(_) => return Err("the controller closed the connection".into()),
            }
        }
    }

    /// An exporter that sends the new lines of `results_dir/intervals.jsonl` each second.
    pub fn streamer(&self, results_dir: &Path) -> IntervalsStreamer {
        IntervalsStreamer {
            files: vec![
                (
                    results_dir.join(onrush_results::INTERVALS_FILE),
                    0,
                    Kind::Intervals,
                ),
                (
                    results_dir.join(onrush_results::GENERATOR_FILE),
                    0,
                    Kind::Generator,
                ),
            ],
            out: self.out.clone(),
        }
    }

    /// Sends the result files of `results_dir` (those that exist of `names`) and waits until
    /// they are written out.
    pub fn send_results(self, results_dir: &Path, names: &[&str]) -> Result<(), String> {
        let mut files = Vec::new();
        for name in names {
            if let Ok(bytes) = std::fs::read(results_dir.join(name)) {
                files.push((name.to_string(), bytes));
            }
        }
        let metas = files
            .iter()
            .map(|(name, bytes)| FileMeta {
                path: name.clone(),
                len: bytes.len() as u64,
                sha256: String::new(),
            })
            .collect();
        let data = files.into_iter().map(|(_, bytes)| bytes).collect();
        self.out
            .send(Out::WithData(Msg::Results { files: metas }, data))
            .map_err(|_| "the connection to the controller is gone".to_string())?;
        if !self.flush() {
            return Err("the results could not be sent to the controller in time".into());
        }
        self.runtime.shutdown_timeout(Duration::from_secs(1));
        Ok(())
    }

    /// Waits (up to a minute) until everything queued is written.
    fn flush(&self) -> bool {
        let (done_tx, done_rx) = std_mpsc::channel();
        self.out.send(Out::Close(done_tx)).is_ok()
            && done_rx.recv_timeout(Duration::from_secs(60)).is_ok()
    }
}

/// Feeds the controller: each closed second, the bytes `intervals.jsonl` grew by (whole
/// lines only; the collector writes a second's lines in one write before the exporters run),
/// and those `generator.jsonl` grew by (the agent's own health, a second behind: the monitor
/// writes its line after the exporters ran).
pub struct IntervalsStreamer {
    /// Each file streamed: its path, the bytes already sent, and the message announcing it.
    files: Vec<(PathBuf, u64, Kind)>,
    out: mpsc::UnboundedSender<Out>,
}

#[derive(Clone, Copy)]
enum Kind {
    Intervals,
    Generator,
}

impl IntervalsStreamer {
    fn send_new(&mut self) {
        for (path, offset, kind) in &mut self.files {
            let Some(buf) = new_lines(path, offset) else {
                continue;
            };
            let msg = match kind {
                Kind::Intervals => Msg::Intervals,
                Kind::Generator => Msg::Generator,
            };
            let _ = self.out.send(Out::WithData(msg, vec![buf]));
        }
    }
}

/// The whole lines `path` holds past `offset` (which moves past them); `None` when none.
fn new_lines(path: &Path, offset: &mut u64) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(SeekFrom::Start(*offset)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let end = buf.iter().rposition(|&b| b == b'\n')?;
    buf.truncate(end + 1);
    *offset += buf.len() as u64;
    Some(buf)
}

impl onrush_export::Exporter for IntervalsStreamer {
    fn second(&mut self, _data: &onrush_export::SecondData) {
        self.send_new();
    }
    fn finish(&mut self) {
        self.send_new();
    }
}

async fn dial(options: &AgentOptions, tls: &Tls) -> Result<Stream, String> {
    let deadline = Instant::now() + options.wait;
    let tcp = loop {
        match TcpStream::connect(&options.connect).await {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(format!(
                    "cannot reach the controller at {}: {e} (tried for {:?}; is `onrush run \
                     --agents` listening there?)",
                    options.connect, options.wait
                ))
            }
        }
    };
    let mut stream = tls.over(tcp, &options.connect).await?;
    let binding = binding(stream.get_ref().1)?;
    let nonce = auth::nonce();
    // In TLS 1.3 a controller refuses this agent's certificate after the agent's side of the
    // handshake is done: the refusal arrives as an alert on the first read.
    let io = |e: wire::WireError| match &e {
        wire::WireError::Io(io) => match crate::tls::rustls_error(io) {
            Some(t) => format!(
                "the controller at {} refused this agent at the TLS handshake: {}; no load was \
                 generated",
                options.connect,
                crate::tls::agent_side(t, &options.tls, &tls.name)
            ),
            // A controller that refused this agent's certificate closes the connection; if
            // its alert was lost on the way, this is all there is to go by.
            None if matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::UnexpectedEof
            ) =>
            {
                format!(
                    "the controller at {} closed the connection right after TLS ({e}): if it \
                     runs with --tls-client-ca, it refused this agent's certificate (or its \
                     absence), and its output says why; no load was generated",
                    options.connect
                )
            }
            None => format!("the controller at {}: {e}", options.connect),
        },
        _ => format!("the controller at {}: {e}", options.connect),
    };
    wire::write_msg(
        &mut stream,
        &Msg::Hello {
            onrush: crate::VERSION.to_string(),
            results_format: RESULTS_FORMAT,
            name: options.name.clone(),
            threads: options.threads,
            nonce: nonce.clone(),
        },
    )
    .await
    .map_err(io)?;
    let (controller_nonce, proof) = match wire::read_frame(&mut stream).await.map_err(io)? {
        Frame::Msg(Msg::Challenge { nonce, proof }) => (nonce, proof),
        Frame::Msg(Msg::Refused { reason }) => {
            return Err(format!("the controller refused this agent: {reason}"))
        }
        other => {
            return Err(format!(
                "the controller sent {other:?} instead of a challenge"
            ))
        }
    };
    if !auth::verify(
        &options.token,
        Role::Controller,
        &binding,
        &nonce,
        &controller_nonce,
        &proof,
    ) {
        let _ = wire::write_msg(
            &mut stream,
            &Msg::Refused {
                reason: "the controller's proof does not match this agent's token".into(),
            },
        )
        .await;
        return Err(format!(
            "refused the controller at {}: it does not know this agent's token (another \
             token file, or not the controller you meant); no load was generated",
            options.connect
        ));
    }
    let mine = auth::proof(
        &options.token,
        Role::Agent,
        &binding,
        &nonce,
        &controller_nonce,
    );
    wire::write_msg(&mut stream, &Msg::Proof { proof: mine })
        .await
        .map_err(io)?;
    match wire::read_frame(&mut stream).await.map_err(io)? {
        Frame::Msg(Msg::Welcome) => Ok(stream),
        Frame::Msg(Msg::Refused { reason }) => {
            Err(format!("the controller refused this agent: {reason}"))
        }
        other => Err(format!(
            "the controller sent {other:?} instead of a welcome"
        )),
    }
}

/// The agent's TLS, built once from its settings: the configuration and the name it asks
/// the controller for.
pub struct Tls {
    config: Arc<rustls::ClientConfig>,
    name: rustls::pki_types::ServerName<'static>,
    settings: crate::tls::AgentTls,
}

impl Tls {
    /// The configuration of `settings` for a controller dialed at `connect` (`HOST:PORT`).
    pub fn new(settings: &crate::tls::AgentTls, connect: &str) -> Result<Tls, String> {
        Ok(Tls {
            config: crate::tls::client_config(settings)?,
            name: crate::tls::server_name(settings, connect)?,
            settings: settings.clone(),
        })
    }

    /// TLS from the agent's side over a connected socket (public for tests that speak the
    /// protocol by hand).
    pub async fn over(&self, tcp: TcpStream, controller: &str) -> Result<Stream, String> {
        let _ = tcp.set_nodelay(true);
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        connector
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| match crate::tls::rustls_error(&e) {
                Some(t) => format!(
                    "refused the controller at {controller}: {}; no load was generated",
                    crate::tls::agent_side(t, &self.settings, &self.name)
                ),
                None => format!("TLS with the controller at {controller} failed: {e}"),
            })
    }
}

/// TLS with the default settings (any controller certificate, none of its own), as the
/// tests that speak the protocol by hand use it.
pub async fn tls_over(tcp: TcpStream, controller: &str) -> Result<Stream, String> {
    Tls::new(&Default::default(), controller)?
        .over(tcp, controller)
        .await
}

/// The TLS session's exported value both proofs are bound to.
pub(crate) fn binding<D>(conn: &rustls::ConnectionCommon<D>) -> Result<Vec<u8>, String> {
    let mut out = [0u8; 32];
    conn.export_keying_material(&mut out, crate::auth::EXPORTER_LABEL, None)
        .map_err(|e| format!("TLS keying material: {e}"))?;
    Ok(out.to_vec())
}

async fn read_loop(
    mut r: ReadHalf<Stream>,
    out: mpsc::UnboundedSender<Out>,
    events: std_mpsc::Sender<Event>,
    bundle_root: PathBuf,
    on_stop: Arc<dyn Fn() + Send + Sync>,
    on_steer: Arc<dyn Fn(crate::wire::SteerMsg) + Send + Sync>,
) {
    let lost = |why: String| {
        on_stop();
        let _ = events.send(Event::Lost(why));
    };
    loop {
        let frame = match tokio::time::timeout(LOSS_AFTER, wire::read_frame(&mut r)).await {
            Err(_) => {
                return lost(format!(
                    "no word from the controller for {LOSS_AFTER:?}: stopping the load"
                ))
            }
            Ok(Err(e)) => return lost(format!("the connection to the controller ended: {e}")),
            Ok(Ok(f)) => f,
        };
        match frame {
            Frame::Msg(Msg::Ping { t0 }) => {
                let _ = out.send(Out::Msg(Msg::Pong { t0, t1: now_ms() }));
            }
            Frame::Msg(Msg::Plan {
                plan,
                files,
                overrides,
                seed,
                segment,
                run_name,
            }) => {
                let mut result = Ok(());
                let mut plan_at = None;
                for meta in &files {
                    let bytes = match wire::read_file(&mut r, meta.len).await {
                        Ok(b) => b,
                        Err(e) => return lost(format!("receiving the plan's files: {e}")),
                    };
                    if result.is_ok() {
                        match bundle::write(&bundle_root, meta, &bytes) {
                            Ok(at) if meta.path == plan => plan_at = Some(at),
                            Ok(_) => {}
                            Err(e) => result = Err(e),
                        }
                    }
                }
                let assignment = result.and_then(|()| {
                    Ok(Assignment {
                        plan: plan_at.ok_or("the bundle did not hold the plan")?,
                        overrides,
                        seed,
                        segment,
                        run_name,
                    })
                });
                let _ = events.send(Event::Plan(assignment));
            }
            Frame::Msg(Msg::Start {
                at_unix_ms,
                join_at_ms,
            }) => {
                let _ = events.send(Event::Start(at_unix_ms, join_at_ms));
            }
            Frame::Msg(Msg::Stop) => {
                on_stop();
                let _ = events.send(Event::Stop);
            }
            Frame::Msg(Msg::Steer(change)) => on_steer(change),
            Frame::Msg(Msg::Refused { reason }) => {
                let _ = events.send(Event::Dismissed(reason));
            }
            Frame::Msg(_) | Frame::Data(_) => {}
        }
    }
}
