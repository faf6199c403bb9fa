//! `events.jsonl`: what happened to a run while it ran, one line per event — a pause, a resume,
//! a stop or a load change asked through the live page or its API, an agent lost or joined.
//! The report draws each as a marker on its charts and lists them; `onrush merge` keeps them.
//! Written by the one who runs the load (the engine's run loop, a distributed run's
//! controller); the field names here are the file's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{json_msg, ReadError};

/// File name of a run's events, beside `intervals.jsonl`.
pub const EVENTS_FILE: &str = "events.jsonl";

/// `Event::by` of a change a distributed run's agent applied because its controller asked: the
/// controller records the change itself, so a merge of the agents' results leaves these out.
pub const BY_CONTROLLER: &str = "controller";

/// One line of `events.jsonl`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Seconds since the run's start (the `t` of `intervals.jsonl` is its whole part).
    pub t: f64,
    pub unix_ms: u64,
    /// `pause`, `resume`, `stop`, `load` (a scenario's rate or VUs changed), `agent_lost`,
    /// `agent_joined`.
    pub kind: String,
    /// The scenario a `load` event changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// A `load` event's new arrival rate, per second (open model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// A `load` event's new VU count (closed model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vus: Option<u32>,
    /// Who asked (`api`, `page`) or which agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// One sentence for the report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Event {
    /// The line as written (without the line break).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// Appends events to `DIR/events.jsonl`, one write per line (a run killed at any point leaves
/// whole lines). The file is made at the first event: a run without one has none.
pub struct EventsWriter {
    path: PathBuf,
    file: Option<File>,
}

impl EventsWriter {
    pub fn new(dir: &Path) -> EventsWriter {
        EventsWriter {
            path: dir.join(EVENTS_FILE),
            file: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        if self.file.is_none() {
            self.file = Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?,
            );
        }
        let mut line = event.to_json();
        line.push('\n');
        self.file
            .as_mut()
            .expect("opened above")
            .write_all(line.as_bytes())
    }
}

/// Adds `extra` to `dir/events.jsonl` (made if missing), the whole file then in time order.
pub fn add_events(dir: &Path, extra: &[Event]) -> io::Result<()> {
    if extra.is_empty() {
        return Ok(());
    }
    let mut all = read_events(dir).unwrap_or_default();
    all.extend_from_slice(extra);
    all.sort_by(|a, b| a.t.total_cmp(&b.t));
    let text: String = all.iter().map(|e| e.to_json() + "\n").collect();
    let path = dir.join(EVENTS_FILE);
    let scratch = dir.join(format!(".{EVENTS_FILE}.writing"));
    std::fs::write(&scratch, text)?;
    std::fs::rename(&scratch, &path)
}

/// The events of the results directory `dir`, in file order; none when it has no
/// `events.jsonl`. A last line cut short (a run killed mid-write) is left out.
pub fn read_events(dir: &Path) -> Result<Vec<Event>, ReadError> {
    let path = dir.join(EVENTS_FILE);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ReadError::Io { path, source }),
    };
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|source| ReadError::Io {
            path: path.clone(),
            source,
        })?;
    let mut events = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(e) => events.push(e),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => return Err(ReadError::parse(&path, i + 1, json_msg(&e))),
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_a_cut_last_line_is_left_out() {
        let dir = std::env::temp_dir().join(format!("onrush-events-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_events(&dir).unwrap().is_empty(), "no file, no events");
        let mut w = EventsWriter::new(&dir);
        let load = Event {
            t: 3.25,
            unix_ms: 1_700_000_003_250,
            kind: "load".into(),
            scenario: Some("browse".into()),
            rate: Some(200.0),
            by: "api".into(),
            ..Event::default()
        };
        w.write(&load).unwrap();
        assert_eq!(
            load.to_json(),
            r#"{"t":3.25,"unix_ms":1700000003250,"kind":"load","scenario":"browse","rate":200.0,"by":"api"}"#
        );
        let mut f = OpenOptions::new().append(true).open(w.path()).unwrap();
        f.write_all(b"{\"t\":4.0,\"unix").unwrap();
        assert_eq!(read_events(&dir).unwrap(), vec![load.clone()]);
        std::fs::write(w.path(), format!("nonsense\n{}\n", load.to_json())).unwrap();
        let err = read_events(&dir).unwrap_err().to_string();
        assert!(err.contains("events.jsonl:1:"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
