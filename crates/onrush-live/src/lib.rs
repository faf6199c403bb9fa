//! onrush-live: a run watched and steered while it runs, in a browser or through a small HTTP
//! API ([docs/live.md](../../docs/live.md)).
//!
//! [`LiveServer::start`] binds an address and serves, from a thread of its own, the live page
//! (the report of the results directory so far, onrush-report's very page, kept current by
//! its script), the run's status and the charts' new seconds as JSON, and the controls —
//! pause, resume, stop, a scenario's rate or VUs — which it passes to the engine's
//! [`Steering`]. [`LiveServer::exporter`] is what the collector feeds: every closed second,
//! the same [`SecondData`] the results files and the other exporters get, so every view
//! agrees. Nothing here runs on a worker thread.
//!
//! ```no_run
//! # fn demo(steering: std::sync::Arc<onrush_engine::Steering>) -> std::io::Result<()> {
//! use onrush_live::{LiveOptions, LiveServer};
//! let live = LiveServer::start(LiveOptions {
//!     addr: "127.0.0.1:0".parse().unwrap(),
//!     dir: "results/shop".into(),
//!     plan: "shop.yaml".into(),
//!     planned: None,
//!     steering,
//!     token: None,
//! })?;
//! println!("live page: {}", live.url());
//! // RunOptions { exporters: vec![Box::new(live.exporter())], steering: ..., .. }
//! # Ok(()) }
//! ```

mod routes;
mod server;
mod state;

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use onrush_engine::{RunState, Steering};
use onrush_export::Exporter;
use onrush_metrics::{Layout, SecondData};
use onrush_results::INTERVALS_FILE;

pub use server::MAX_CONNECTIONS;
pub use state::WINDOW;

use server::Response;
use state::LiveState;

/// What [`LiveServer::start`] needs.
pub struct LiveOptions {
    /// Where to listen (`--web ADDR`); port 0: any free port.
    pub addr: SocketAddr,
    /// The run's results directory (its `intervals.jsonl` is read for the page and charts).
    pub dir: PathBuf,
    /// The plan's name, for the status.
    pub plan: String,
    /// The run's planned length, when it has one.
    pub planned: Option<Duration>,
    pub steering: Arc<Steering>,
    /// The token that lets a caller steer when `addr` is not a loopback address. `None` on
    /// such an address: one is made up (see [`LiveServer::token`]).
    pub token: Option<String>,
}

/// What the server threads and the exporter share.
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub plan: String,
    pub planned: Option<Duration>,
    pub steering: Arc<Steering>,
    /// Required to steer (`None`: a loopback address, no token needed).
    pub token: Option<String>,
    pub state: Locked<LiveState>,
    /// The final report, once written: then the page is it.
    report: Mutex<Option<PathBuf>>,
    closing: AtomicBool,
}

/// A mutex that survives a panicking holder (the state is counters; a half-made update of one
/// second is better than a dead page).
pub(crate) struct Locked<T>(Mutex<T>);

impl<T> Locked<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Shared {
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    pub fn run_state(&self) -> RunState {
        if self.report.lock().is_ok_and(|r| r.is_some()) {
            RunState::Finished
        } else {
            self.steering.state()
        }
    }

    pub fn report_html_exists(&self) -> bool {
        self.report.lock().is_ok_and(|r| r.is_some())
    }

    /// The final report's page, once the run has written it.
    pub fn report_html(&self) -> Option<Response> {
        let path = self.report.lock().ok()?.clone()?;
        Some(match std::fs::read_to_string(&path) {
            Ok(html) => Response::html(html),
            Err(e) => Response::error(500, &format!("{}: {e}", path.display())),
        })
    }
}

/// The live page's server (see the crate's documentation). Dropping it stops serving.
pub struct LiveServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveServer {
    /// Binds `options.addr` and serves from a new thread.
    pub fn start(options: LiveOptions) -> std::io::Result<LiveServer> {
        let listener = TcpListener::bind(options.addr)?;
        let addr = listener.local_addr()?;
        let token = match (addr.ip().is_loopback(), options.token) {
            (_, Some(t)) => Some(t),
            (true, None) => None,
            (false, None) => Some(make_token()),
        };
        let shared = Arc::new(Shared {
            dir: options.dir,
            plan: options.plan,
            planned: options.planned,
            steering: options.steering,
            token,
            state: Locked(Mutex::new(LiveState::default())),
            report: Mutex::new(None),
            closing: AtomicBool::new(false),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("onrush-live".into())
                .spawn(move || server::serve(listener, shared))?
        };
        Ok(LiveServer {
            shared,
            addr,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token a caller needs to steer (`None`: on a loopback address, none is needed).
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_deref()
    }

    /// The page's URL, with the token (in the fragment, which the browser does not send: the
    /// page's script reads it and sends it with its controls) when one is needed.
    pub fn url(&self) -> String {
        let host = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
            IpAddr::V6(ip) if ip.is_unspecified() => "[::1]".to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        match self.token() {
            Some(t) => format!("http://{host}:{}/#token={t}", self.addr.port()),
            None => format!("http://{host}:{}/", self.addr.port()),
        }
    }

    /// The exporter the collector feeds (`RunOptions::exporters`).
    pub fn exporter(&self) -> LiveExporter {
        LiveExporter {
            shared: self.shared.clone(),
            intervals: self.shared.dir.join(INTERVALS_FILE),
            written: None,
            batch_start: None,
        }
    }

    /// The run has ended and written `report`: the page becomes it, the controls go.
    pub fn finished(&self, report: Option<PathBuf>) {
        self.shared.steering.set_state(RunState::Finished);
        if let Ok(mut r) = self.shared.report.lock() {
            *r = report;
        }
    }

    /// Keeps serving the final state for `linger` (`--web-linger`), or until Ctrl-C.
    pub fn linger(&self, linger: Duration, interrupted: impl Fn() -> bool) {
        let until = std::time::Instant::now() + linger;
        while std::time::Instant::now() < until && !interrupted() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Relaxed);
        // Wake the blocking accept with a connection of our own.
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let _ = TcpStream::connect_timeout(
            &SocketAddr::new(ip, self.addr.port()),
            Duration::from_secs(1),
        );
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Fed by the collector: every closed second into the live state.
pub struct LiveExporter {
    shared: Arc<Shared>,
    intervals: PathBuf,
    /// Bytes of `intervals.jsonl` when the previous second was handed over: where this
    /// second's lines begin (the collector writes a second's lines before the exporters hear
    /// of it).
    written: Option<u64>,
    /// Where the seconds written with the latest growth of the file begin.
    batch_start: Option<u64>,
}

impl Exporter for LiveExporter {
    fn begin(&mut self, layout: &Layout) {
        self.shared.state.lock().begin(layout);
        self.written = std::fs::metadata(&self.intervals).ok().map(|m| m.len());
        self.batch_start = self.written;
    }

    fn second(&mut self, data: &SecondData) {
        // Several seconds closed at once were written at once: each is read from where the
        // first of them begins (a chunk skips the seconds before the one asked).
        let now = std::fs::metadata(&self.intervals).ok().map(|m| m.len());
        if now != self.written {
            self.batch_start = self.written;
            self.written = now;
        }
        let events = onrush_results::read_events(&self.shared.dir).ok();
        let mut state = self.shared.state.lock();
        state.add(data, self.batch_start);
        if let Some(events) = events {
            state.events = events;
        }
    }

    fn finish(&mut self) {}
}

/// 128 bits from the kernel's random source, in hex.
fn make_token() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
