//! The one reader of `intervals.jsonl`: line by line (memory holds one line, whatever the
//! length of the run), the header and its format version checked first, lines checked to be in
//! second order, unknown kinds skipped. Errors name the file and the line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{json_msg, ReadError};
use crate::lines::{Header, Line};
use crate::version::{absent_version, RESULTS_FORMAT_VERSION};
use crate::INTERVALS_FILE;

/// Lines of a text file, blank lines skipped, numbered from 1.
pub(crate) struct LineSource<R> {
    path: PathBuf,
    input: R,
    buf: String,
    line_no: usize,
}

impl<R: BufRead> LineSource<R> {
    pub(crate) fn new(path: PathBuf, input: R) -> Self {
        LineSource {
            path,
            input,
            buf: String::new(),
            line_no: 0,
        }
    }

    /// Moves to the next non-blank line ([`text`](Self::text)); false at the end of the file.
    pub(crate) fn advance(&mut self) -> Result<bool, ReadError> {
        loop {
            // Bytes first, then UTF-8 (not `read_line`): a line that is not UTF-8 must be an
            // error at its line, and a last line cut inside a multi-byte character (a writer
            // killed mid-write) must be skipped as cut like any other, not fail the whole file
            // as an I/O error without a line (found by fuzzing, see crates/onrush-fuzz).
            let mut bytes = std::mem::take(&mut self.buf).into_bytes();
            bytes.clear();
            let n = self
                .input
                .read_until(b'\n', &mut bytes)
                .map_err(|e| ReadError::io(&self.path, e))?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            self.buf = match String::from_utf8(bytes) {
                Ok(text) => text,
                // Made text so that it fails to parse (a cut line is never valid JSON) and
                // the caller skips it as cut.
                Err(e) if !e.as_bytes().ends_with(b"\n") => {
                    String::from_utf8_lossy(e.as_bytes()).into_owned()
                }
                Err(e) => {
                    return Err(self.error(format!(
                        "not UTF-8 text (invalid byte at column {})",
                        e.utf8_error().valid_up_to() + 1
                    )))
                }
            };
            if !self.buf.trim().is_empty() {
                return Ok(true);
            }
        }
    }

    /// The current line, without its line break.
    pub(crate) fn text(&self) -> &str {
        self.buf.trim_end_matches(['\n', '\r'])
    }

    /// Whether the current line ends with a line break. Every writer of these files ends each
    /// line with one, so only the last line of a file whose writer was killed mid-write (or
    /// that is being written) can lack it.
    pub(crate) fn terminated(&self) -> bool {
        self.buf.ends_with('\n')
    }

    /// Number of the current line (1-based).
    pub(crate) fn line_no(&self) -> usize {
        self.line_no
    }

    pub(crate) fn error(&self, msg: impl Into<String>) -> ReadError {
        ReadError::parse(&self.path, self.line_no.max(1), msg)
    }
}

/// What is read of the first line before anything else: a file of another format version
/// may differ anywhere else.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default = "absent_version")]
    onrush_results: u32,
}

/// Streaming reader of an `intervals.jsonl`: [`open`](Self::open) reads and checks the header,
/// then each [`next_line`](Self::next_line) (or the iterator) yields one `step`, `group` or
/// `scenario` line.
///
/// ```no_run
/// use onrush_results::{IntervalsReader, Line};
/// let mut lines = IntervalsReader::open_dir("results/shop".as_ref())?;
/// println!("plan {}", lines.header().plan);
/// while let Some(line) = lines.next_line()? {
///     if let Line::Step(step) = line {
///         println!("{} {}/{}: {} requests", step.t, step.scenario, step.step, step.requests);
///     }
/// }
/// # Ok::<(), onrush_results::ReadError>(())
/// ```
pub struct IntervalsReader<R = BufReader<File>> {
    src: LineSource<R>,
    header: Header,
    last_t: Option<u64>,
    cut_line: Option<usize>,
}

impl IntervalsReader {
    /// Opens `path` (an `intervals.jsonl`) and reads its header.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|e| ReadError::io(path, e))?;
        IntervalsReader::new(path, BufReader::with_capacity(64 * 1024, file))
    }

    /// Opens `dir/intervals.jsonl` and reads its header.
    pub fn open_dir(dir: &Path) -> Result<Self, ReadError> {
        IntervalsReader::open(&dir.join(INTERVALS_FILE))
    }
}

impl<R: BufRead> IntervalsReader<R> {
    /// Reads the header from `input`; `path` names the file in errors.
    pub fn new(path: impl Into<PathBuf>, input: R) -> Result<Self, ReadError> {
        let mut src = LineSource::new(path.into(), input);
        let header = read_header(&mut src)?;
        Ok(IntervalsReader {
            src,
            header,
            last_t: None,
            cut_line: None,
        })
    }

    /// The header line.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file, as given.
    pub fn path(&self) -> &Path {
        &self.src.path
    }

    /// Number of the line last read (1-based).
    pub fn line_number(&self) -> usize {
        self.src.line_no
    }

    /// An error at the line last read, for what the caller finds wrong in it (e.g. a
    /// histogram that does not decode: `error(format!("latency: {e}"))`).
    pub fn error(&self, msg: impl Into<String>) -> ReadError {
        self.src.error(msg)
    }

    /// Number of the last line when it was cut short and skipped (see
    /// [`next_line`](Self::next_line)); known once the end of the file is reached.
    pub fn cut_line(&self) -> Option<usize> {
        self.cut_line
    }

    /// The next `step`, `group` or `scenario` line; `None` at the end of the file. Lines of
    /// kinds this version does not know are skipped. A last line without its line break that
    /// does not parse is skipped too ([`cut_line`](Self::cut_line) says so): the writer was
    /// killed in the middle of it, and what came before is complete.
    pub fn next_line(&mut self) -> Result<Option<Line>, ReadError> {
        loop {
            if !self.src.advance()? {
                return Ok(None);
            }
            let line: Line = match serde_json::from_str(self.src.text()) {
                Ok(line) => line,
                Err(_) if !self.src.terminated() => {
                    self.cut_line = Some(self.src.line_no());
                    return Ok(None);
                }
                Err(e) => return Err(self.src.error(json_msg(&e))),
            };
            let t = match &line {
                Line::Header(_) => return Err(self.src.error("a second header line")),
                Line::Other(_) => continue,
                l => l.t().expect("step, group and scenario lines have a second"),
            };
            if let Some(cur) = self.last_t.filter(|&cur| t < cur) {
                return Err(self.src.error(format!(
                    "second {t} after second {cur}: lines must be in second order"
                )));
            }
            self.last_t = Some(t);
            return Ok(Some(line));
        }
    }
}

impl<R: BufRead> Iterator for IntervalsReader<R> {
    type Item = Result<Line, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}

fn read_header<R: BufRead>(src: &mut LineSource<R>) -> Result<Header, ReadError> {
    if !src.advance()? {
        return Err(src.error("empty file: not an onrush intervals file (no header line)"));
    }
    let text = src.text();
    let probe: Probe = serde_json::from_str(text).map_err(|e| {
        src.error(format!(
            "not an onrush intervals file (the first line must be the header): {}",
            json_msg(&e)
        ))
    })?;
    if probe.kind.as_deref() != Some("header") {
        return Err(src.error("not an onrush intervals file: the first line must be the header"));
    }
    if probe.onrush_results != RESULTS_FORMAT_VERSION {
        return Err(ReadError::Version {
            path: src.path.clone(),
            line: Some(src.line_no),
            found: probe.onrush_results,
            supported: RESULTS_FORMAT_VERSION,
        });
    }
    match serde_json::from_str(text).map_err(|e| src.error(json_msg(&e)))? {
        Line::Header(h) => Ok(h),
        _ => unreachable!("the probe saw a header"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::lines::{CheckLine, LayoutCheck, LayoutScenario, ScenarioLine, StepLine};
    use crate::{new_hist, HistDecoder, HistEncoder};

    fn header() -> Header {
        Header::new(
            "shop",
            1_767_225_600_000,
            3.0,
            vec![LayoutScenario {
                scenario: "browse".into(),
                steps: vec!["home".into(), "checkout".into()],
                groups: vec!["checkout".into()],
                checks: vec![LayoutCheck {
                    step: "home".into(),
                    name: "status is 200".into(),
                }],
            }],
            Some(vec!["a".into(), "b".into()]),
        )
    }

    fn hist_text(values: &[u64]) -> String {
        let mut h = new_hist();
        values.iter().for_each(|&v| h.record(v).unwrap());
        HistEncoder::new().encode(&h)
    }

    /// One line of every kind, every field set.
    fn every_kind() -> Vec<Line> {
        let step = StepLine {
            t: 0,
            scenario: "browse".into(),
            step: "home".into(),
            requests: 3,
            failures: 1,
            failures_by_class: BTreeMap::from([("http_5xx".to_string(), 1)]),
            status_codes: BTreeMap::from([("200".to_string(), 2), ("503".to_string(), 1)]),
            bytes_in: 300,
            bytes_out: 30,
            latency: Some(hist_text(&[900, 2_150, 40_000])),
            service: Some(hist_text(&[800])),
            connect: Some(hist_text(&[140])),
            ttfb: Some(hist_text(&[700])),
            handshakes: 3,
            handshakes_full: 1,
            handshakes_resumed: 2,
            handshake: Some(hist_text(&[3_000])),
            other_counters: Vec::new(),
        };
        let group = StepLine {
            step: "checkout".into(),
            t: 1,
            ..step.clone()
        };
        let scenario = ScenarioLine {
            t: 1,
            scenario: "browse".into(),
            iterations: 5,
            dropped_iterations: 1,
            connections_opened: 2,
            active_vus: 4,
            schedule_lag: Some(hist_text(&[12])),
            checks: vec![CheckLine {
                step: "home".into(),
                name: "status is 200".into(),
                passes: 2,
                fails: 1,
            }],
            other_counters: Vec::new(),
        };
        vec![
            Line::Header(header()),
            Line::Step(step),
            Line::Scenario(scenario),
            Line::Group(group),
        ]
    }

    fn file(lines: &[Line]) -> String {
        lines.iter().map(|l| l.to_json() + "\n").collect()
    }

    fn read_all(text: &str) -> Result<(Header, Vec<Line>), ReadError> {
        let reader = IntervalsReader::new("dir/intervals.jsonl", text.as_bytes())?;
        let header = reader.header().clone();
        Ok((header, reader.collect::<Result<_, _>>()?))
    }

    #[test]
    fn every_line_kind_round_trips() {
        let lines = every_kind();
        let text = file(&lines);
        let (header, body) = read_all(&text).unwrap();
        assert_eq!(Line::Header(header), lines[0]);
        assert_eq!(body, lines[1..]);
        // Written back byte for byte.
        assert_eq!(file(&[&lines[..1], &body[..]].concat()), text);
        // Field names and order as documented in docs/results.md.
        assert!(text.starts_with(r#"{"kind":"header","onrush_results":1,"onrush_version":"#));
        assert!(text.contains(r#"{"kind":"step","t":0,"scenario":"browse","step":"home","requests":3,"failures":1,"failures_by_class":{"http_5xx":1},"status_codes":{"200":2,"503":1},"bytes_in":300,"bytes_out":30,"latency":"HISTFAAA"#));
        assert!(text.contains(r#"{"kind":"scenario","t":1,"scenario":"browse","iterations":5,"dropped_iterations":1,"connections_opened":2,"active_vus":4,"schedule_lag":"HISTF"#));
        assert!(text.contains(
            r#""checks":[{"step":"home","name":"status is 200","passes":2,"fails":1}]}"#
        ));
        let Line::Step(step) = &body[0] else {
            panic!("{body:?}")
        };
        let h = HistDecoder::new()
            .decode_hist(step.latency.as_deref().unwrap())
            .unwrap();
        assert_eq!((h.len(), h.max()), (3, h.highest_equivalent(40_000)));
    }

    #[test]
    fn unknown_kinds_are_skipped_and_unknown_counters_kept() {
        let lines = every_kind();
        let text = format!(
            "{}\n\n{{\"kind\":\"future\",\"t\":0}}\n{{\"t\":0,\"kind\":\"scenario\",\"scenario\":\"s\",\"handshakes\":7,\"new_counter\":2,\"note\":\"x\"}}\n",
            lines[0].to_json()
        );
        let (_, body) = read_all(&text).unwrap();
        let Line::Scenario(s) = &body[0] else {
            panic!("{body:?}")
        };
        let counters: Vec<(&str, u64)> = s.counters().collect();
        assert_eq!(
            counters,
            [
                ("iterations", 0),
                ("dropped_iterations", 0),
                ("connections_opened", 0),
                ("active_vus", 0),
                ("new_counter", 2),
                ("handshakes", 7)
            ]
        );
        assert_eq!(body.len(), 1);
    }

    #[test]
    fn a_last_line_cut_short_is_skipped_and_said() {
        // What a run killed in the middle of a write leaves: the last line without its end.
        let lines = every_kind();
        let text = file(&lines);
        let cut = &text[..text.len() - 40];
        let mut reader = IntervalsReader::new("dir/intervals.jsonl", cut.as_bytes()).unwrap();
        let body: Vec<Line> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(body, lines[1..3]);
        assert_eq!(reader.cut_line(), Some(4));
        // A complete file has none.
        let mut reader = IntervalsReader::new("dir/intervals.jsonl", text.as_bytes()).unwrap();
        assert_eq!(reader.by_ref().count(), 3);
        assert_eq!(reader.cut_line(), None);
        // A complete last line that lost only its line break is read.
        let (_, body) = read_all(text.trim_end()).unwrap();
        assert_eq!(body, lines[1..]);
    }

    #[test]
    fn a_last_line_cut_inside_a_character_is_skipped_and_a_non_utf8_line_is_an_error_at_it() {
        // A run killed while writing a step named "café": its last line ends inside the "é".
        let mut lines = every_kind();
        if let Line::Step(s) = &mut lines[1] {
            s.step = "caf\u{e9}".into();
        }
        let text = file(&lines[..2]);
        let at = text.rfind('\u{e9}').unwrap() + 1;
        let cut = &text.as_bytes()[..at];
        let mut reader = IntervalsReader::new("dir/intervals.jsonl", cut).unwrap();
        assert_eq!(reader.next_line().unwrap(), None);
        assert_eq!(reader.cut_line(), Some(2));
        // A complete line that is not UTF-8: an error at its line.
        let mut bad = text.as_bytes().to_vec();
        bad[at - 1] = 0xff;
        let mut reader = IntervalsReader::new("dir/intervals.jsonl", &bad[..]).unwrap();
        let e = reader.next_line().unwrap_err();
        assert_eq!(e.line(), Some(2), "{e}");
        assert!(e.to_string().contains(":2: not UTF-8 text"), "{e}");
    }

    #[test]
    fn a_line_that_is_cut_or_garbage_is_an_error_naming_file_and_line() {
        // Cut in the middle of the file (a line break follows): not a killed writer's last
        // line, so an error.
        let text = file(&every_kind());
        let cut = format!("{}\n", &text[..text.len() - 40]);
        let e = read_all(&cut).unwrap_err();
        assert_eq!(e.line(), Some(4));
        assert!(
            e.to_string()
                .starts_with("dir/intervals.jsonl:4: EOF while parsing a string (column"),
            "{e}"
        );
        let garbage = format!("{}\n{}\n%%% garbage\n", every_kind()[0].to_json(), "");
        let e = read_all(&garbage).unwrap_err().to_string();
        assert!(
            e.starts_with("dir/intervals.jsonl:3: expected value"),
            "{e}"
        );
        let no_step = format!(
            "{}\n{{\"kind\":\"step\",\"t\":0,\"scenario\":\"s\"}}\n",
            every_kind()[0].to_json()
        );
        let e = read_all(&no_step).unwrap_err().to_string();
        assert!(e.contains(":2: step line without \"step\""), "{e}");
        for (text, want) in [
            ("", "dir/intervals.jsonl:1: empty file"),
            ("{\"kind\":\"step\"}\n", ":1: not an onrush intervals file"),
            (
                "\u{1}\n",
                ":1: not an onrush intervals file (the first line must be the header)",
            ),
        ] {
            let e = read_all(text).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        let h = every_kind()[0].to_json();
        let e = read_all(&format!("{h}\n{h}\n")).unwrap_err().to_string();
        assert!(e.contains(":2: a second header line"), "{e}");
        let lines = every_kind();
        let backwards = file(&[lines[0].clone(), lines[2].clone(), lines[1].clone()]);
        let e = read_all(&backwards).unwrap_err().to_string();
        assert!(
            e.contains(":3: second 0 after second 1: lines must be in second order"),
            "{e}"
        );
    }

    #[test]
    fn another_format_version_is_refused_with_what_to_do() {
        let h = every_kind()[0].to_json();
        let newer = h.replacen("\"onrush_results\":1", "\"onrush_results\":2", 1);
        let e = read_all(&newer).unwrap_err();
        assert!(matches!(
            e,
            ReadError::Version {
                found: 2,
                supported: 1,
                line: Some(1),
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "dir/intervals.jsonl:1: results format 2 is newer than this onrush reads (1): the file \
             was written by a newer onrush; upgrade onrush to read it, or re-run the test with this one"
        );
        // Checked before the rest of the header, which a newer version may have changed.
        let e =
            read_all(r#"{"kind":"header","onrush_results":9,"layout":"new shape"}"#).unwrap_err();
        assert!(e.to_string().contains("results format 9 is newer"), "{e}");
        let older = h.replacen("\"onrush_results\":1", "\"onrush_results\":0", 1);
        let e = read_all(&older).unwrap_err().to_string();
        assert!(
            e.contains(":1: results format 0 is older than this onrush reads (1)")
                && e.contains("re-run the test"),
            "{e}"
        );
        // Absent: version 1 (a file written before the field existed).
        let absent = h.replacen("\"onrush_results\":1,", "", 1);
        assert_eq!(read_all(&absent).unwrap().0.onrush_results, 1);
    }
}
