//! The control connection's framing: each frame is a 4-byte big-endian length, one kind byte
//! and the payload. Kind 0 is a JSON [`Msg`]; kind 1 is raw bytes that belong to the message
//! before it (the files of a plan bundle, a stretch of `intervals.jsonl`, the results at the
//! end), so that bulk data is never escaped into JSON.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame either side accepts: a peer that announces more is refused, not
/// believed (a 4 GB length would otherwise be allocated).
pub const MAX_FRAME: usize = 4 << 20;
/// Files are sent in chunks of this size.
pub const CHUNK: usize = 1 << 20;

const KIND_MSG: u8 = 0;
const KIND_DATA: u8 = 1;

/// A file of a bundle or of the results, announced before its bytes.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// Bundle: the controller's absolute path; results: the file name.
    pub path: String,
    pub len: u64,
    /// SHA-256 of the content, hex.
    pub sha256: String,
}

/// Where an agent's share of the load is: see `onrush_engine::Segment`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentMsg {
    /// This agent among the run's agents (join order), and how many there are: which rows of
    /// a `unique` feeder and which `global_counter` values are its.
    pub agent: usize,
    pub agents: usize,
    pub first_worker: usize,
    pub total_workers: usize,
    pub workers: usize,
}

/// As `summary.json` records it.
impl From<SegmentMsg> for onrush_results::AgentSegment {
    fn from(s: SegmentMsg) -> Self {
        onrush_results::AgentSegment {
            agent: s.agent as u64,
            agents: s.agents as u64,
            first_worker: s.first_worker as u64,
            total_workers: s.total_workers as u64,
            workers: s.workers as u64,
        }
    }
}

/// As the controller sends it again (to a spare taking over a lost agent's segment).
impl From<onrush_results::AgentSegment> for SegmentMsg {
    fn from(s: onrush_results::AgentSegment) -> Self {
        SegmentMsg {
            agent: s.agent as usize,
            agents: s.agents as usize,
            first_worker: s.first_worker as usize,
            total_workers: s.total_workers as usize,
            workers: s.workers as usize,
        }
    }
}

/// A variable the controller's `setup:` extracted: one value, or several (an extractor with
/// `occurrence: all`, which a `foreach` walks). Bytes, as extracted: not necessarily UTF-8.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SeedVar {
    pub name: String,
    pub values: Vec<Vec<u8>>,
    /// Several values even if there is only one (or none).
    pub many: bool,
}

/// [`Msg::Steer`]'s change.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct SteerMsg {
    pub action: String,
    #[serde(default)]
    pub scenario: Option<String>,
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub vus: Option<u32>,
}

/// Everything said on a control connection.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Msg {
    /// Agent → controller, first: who it is and what it speaks.
    Hello {
        onrush: String,
        results_format: u32,
        name: String,
        threads: usize,
        nonce: String,
    },
    /// Controller → agent: its nonce and its proof that it knows the token.
    Challenge { nonce: String, proof: String },
    /// Agent → controller: its proof that it knows the token.
    Proof { proof: String },
    /// Controller → agent: accepted.
    Welcome,
    /// Either side: the connection is refused, and why (the other side prints it).
    Refused { reason: String },
    /// Controller → agent: a clock probe (`t0` on the controller's clock, Unix ms).
    Ping { t0: f64 },
    /// Agent → controller: the probe back with the agent's clock when it answered.
    Pong { t0: f64, t1: f64 },
    /// Controller → agent: the plan and its files (their bytes follow as data frames, file
    /// by file in this order), the `-D` values resolved on the controller, and the agent's
    /// share of the load.
    Plan {
        plan: String,
        files: Vec<FileMeta>,
        overrides: Vec<(String, String)>,
        /// What the plan's `setup:` (run once, on the controller) extracted: a variable of
        /// every VU of the agent from its start, as on one machine.
        #[serde(default)]
        seed: Vec<SeedVar>,
        segment: SegmentMsg,
        run_name: String,
    },
    /// Agent → controller: the plan is loaded and prepared.
    Ready,
    /// Agent → controller: the plan could not be loaded or run here.
    Failed { error: String },
    /// Controller → agent: start the load at this instant of the agent's own clock (Unix ms),
    /// `join_at_ms` into the plan's schedule (a spare taking over a lost agent's segment
    /// joins the run where it is; 0 for every agent of the start).
    Start {
        at_unix_ms: f64,
        #[serde(default)]
        join_at_ms: f64,
    },
    /// Agent → controller: its start instant passed; how late it woke for it, in ms of its
    /// own clock (the start skew is measured, not assumed).
    Started { late_ms: f64 },
    /// Agent → controller: the next bytes of its `intervals.jsonl` follow in one data frame.
    Intervals,
    /// Agent → controller: the next bytes of its `generator.jsonl` (its own CPU, memory,
    /// schedule lag per second) follow in one data frame.
    Generator,
    /// Both ways, every second: still here.
    Heartbeat,
    /// Controller → agent: stop the load now and send the results.
    Stop,
    /// Controller → agent: a change asked through the controller's live page, for the agent
    /// to apply to its share as one machine applies it to its run (`pause`, `resume`, or
    /// `load` with a scenario's new `rate` — the whole run's: each agent's workers take their
    /// own arrivals of it — or `vus`, of which each agent runs its own VUs).
    Steer(SteerMsg),
    /// Agent → controller: the run is over; its result files follow.
    Results { files: Vec<FileMeta> },
}

/// A frame read.
#[derive(Debug)]
pub enum Frame {
    Msg(Msg),
    Data(Vec<u8>),
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(
        "the peer sent a frame of {0} bytes, more than the {MAX_FRAME} allowed: is it onrush?"
    )]
    TooLarge(usize),
    #[error("the peer sent a frame of unknown kind {0}: is it onrush, of this version?")]
    Kind(u8),
    #[error("the peer sent a message that is not onrush's: {0}")]
    Json(#[from] serde_json::Error),
}

pub async fn write_msg<W: AsyncWrite + Unpin>(w: &mut W, msg: &Msg) -> Result<(), WireError> {
    let body = serde_json::to_vec(msg)?;
    write_frame(w, KIND_MSG, &body).await
}

pub async fn write_data<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8]) -> Result<(), WireError> {
    for chunk in data.chunks(CHUNK) {
        write_frame(w, KIND_DATA, chunk).await?;
    }
    Ok(())
}

async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    kind: u8,
    body: &[u8],
) -> Result<(), WireError> {
    if body.len() > MAX_FRAME {
        return Err(WireError::TooLarge(body.len()));
    }
    let mut head = [0u8; 5];
    head[..4].copy_from_slice(&(body.len() as u32).to_be_bytes());
    head[4] = kind;
    w.write_all(&head).await?;
    w.write_all(body).await?;
    w.flush().await?;
    Ok(())
}

pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Frame, WireError> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head).await?;
    let len = u32::from_be_bytes(head[..4].try_into().expect("4 bytes")) as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    match head[4] {
        KIND_MSG => Ok(Frame::Msg(serde_json::from_slice(&body)?)),
        KIND_DATA => Ok(Frame::Data(body)),
        k => Err(WireError::Kind(k)),
    }
}

/// Reads `len` bytes sent as data frames (a file announced by a [`FileMeta`]).
pub async fn read_file<R: AsyncRead + Unpin>(r: &mut R, len: u64) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::with_capacity(len.min(MAX_FRAME as u64) as usize);
    while (out.len() as u64) < len {
        match read_frame(r).await? {
            Frame::Data(d) => out.extend_from_slice(&d),
            // A heartbeat is never written inside a message's data, but one that came would
            // say nothing about the file: skipping it costs nothing.
            Frame::Msg(Msg::Heartbeat) => {}
            Frame::Msg(m) => {
                return Err(WireError::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("expected file bytes, got a {m:?} message"),
                )))
            }
        }
    }
    if out.len() as u64 != len {
        return Err(WireError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a file of {len} bytes came with {} bytes", out.len()),
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_and_data_round_trip_and_oversized_frames_are_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let msg = Msg::Hello {
            onrush: "0.1.0".into(),
            results_format: 2,
            name: "a1".into(),
            threads: 2,
            nonce: "ab".into(),
        };
        let writer = tokio::spawn(async move {
            write_msg(&mut a, &msg).await.unwrap();
            write_data(&mut a, &vec![7u8; CHUNK + 5]).await.unwrap();
            a.write_all(&(u32::MAX).to_be_bytes()).await.unwrap();
            a.write_all(&[0]).await.unwrap();
        });
        assert!(matches!(
            read_frame(&mut b).await.unwrap(),
            Frame::Msg(Msg::Hello { threads: 2, .. })
        ));
        let file = read_file(&mut b, CHUNK as u64 + 5).await.unwrap();
        assert_eq!(file.len(), CHUNK + 5);
        assert!(file.iter().all(|&x| x == 7));
        assert!(matches!(
            read_frame(&mut b).await,
            Err(WireError::TooLarge(_))
        ));
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn setup_values_travel_as_bytes_and_an_older_plan_message_has_none() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let seed = vec![
            SeedVar {
                name: "token".into(),
                values: vec![vec![0xff, 0, b'x']],
                many: false,
            },
            SeedVar {
                name: "ids".into(),
                values: vec![b"1".to_vec(), b"2".to_vec()],
                many: true,
            },
        ];
        let plan = Msg::Plan {
            plan: "plan.yaml".into(),
            files: Vec::new(),
            overrides: Vec::new(),
            seed: seed.clone(),
            segment: SegmentMsg {
                agent: 0,
                agents: 1,
                first_worker: 0,
                total_workers: 1,
                workers: 1,
            },
            run_name: "r".into(),
        };
        write_msg(&mut a, &plan).await.unwrap();
        match read_frame(&mut b).await.unwrap() {
            Frame::Msg(Msg::Plan { seed: got, .. }) => assert_eq!(got, seed),
            other => panic!("{other:?}"),
        }
        // A controller from before `seed` existed: the plan parses, with no values.
        let old = r#"{"type":"plan","plan":"p","files":[],"overrides":[],
            "segment":{"agent":0,"agents":1,"first_worker":0,"total_workers":1,"workers":1},
            "run_name":"r"}"#;
        match serde_json::from_str::<Msg>(old).unwrap() {
            Msg::Plan { seed, .. } => assert!(seed.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_file_skips_heartbeats_and_refuses_other_messages() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_data(&mut a, b"abc").await.unwrap();
        write_msg(&mut a, &Msg::Heartbeat).await.unwrap();
        write_data(&mut a, b"de").await.unwrap();
        assert_eq!(read_file(&mut b, 5).await.unwrap(), b"abcde");
        write_data(&mut a, b"abc").await.unwrap();
        write_msg(&mut a, &Msg::Stop).await.unwrap();
        let e = read_file(&mut b, 5).await.unwrap_err().to_string();
        assert!(e.contains("expected file bytes"), "{e}");
    }
}
