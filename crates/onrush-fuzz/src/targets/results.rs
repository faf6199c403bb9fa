//! The results readers: `intervals.jsonl` (every line read, every histogram decoded),
//! `summary.json`, and the histogram strings they carry.

use std::path::Path;

use onrush_results::{HistDecoder, HistEncoder, IntervalsReader, Line, Sparse, Summary};

pub fn run_intervals(data: &[u8]) {
    let Ok(mut reader) = IntervalsReader::new("intervals.jsonl", data) else {
        return;
    };
    let mut decoder = HistDecoder::new();
    let mut sparse = Sparse::default();
    loop {
        match reader.next_line() {
            Ok(Some(Line::Step(s))) => {
                let hists = [&s.latency, &s.service, &s.connect, &s.ttfb, &s.handshake];
                for h in hists.into_iter().flatten() {
                    let _ = decoder.decode(h, &mut sparse);
                }
            }
            Ok(Some(Line::Scenario(s))) => {
                if let Some(h) = &s.schedule_lag {
                    let _ = decoder.decode(h, &mut sparse);
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                assert!(
                    e.line().is_some(),
                    "an error without a line: {}",
                    e.message()
                );
                break;
            }
        }
    }
}

pub fn run_summary(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(summary) = Summary::from_json(Path::new("summary.json"), &text) {
        // What was read can be written and read back.
        let again = serde_json::to_string(&summary).unwrap();
        Summary::from_json(Path::new("summary.json"), &again).expect("a summary re-reads");
    }
}

pub fn run_hist(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut decoder = HistDecoder::new();
    let mut sparse = Sparse::default();
    let _ = decoder.decode(&text, &mut sparse);
    if let Ok(h) = decoder.decode_hist(&text) {
        // Round trip: what decodes encodes to a histogram with the same counts.
        let encoded = HistEncoder::new().encode(&h);
        let back = decoder
            .decode_hist(&encoded)
            .expect("an encoded histogram decodes");
        assert_eq!(back.len(), h.len());
        assert!(back
            .iter_recorded()
            .map(|v| v.count_at_value())
            .eq(h.iter_recorded().map(|v| v.count_at_value())));
    }
}

pub const INTERVALS_DICT: &[&[u8]] = &[
    b"{\"kind\":\"header\"",
    b"{\"kind\":\"step\"",
    b"{\"kind\":\"scenario\"",
    b"{\"kind\":\"group\"",
    b"\"onrush_results\":",
    b"\"latency\":\"",
    b"\"t\":",
    b"\"requests\":",
    b"\n",
    b"null",
    b"1e400",
    b"-1",
    b"18446744073709551616",
    b"\"HISTFAAAA",
    b"\"unfinished\":true",
];

pub const SUMMARY_DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"onrush_results\":",
    b"\"steps\":",
    b"\"scenarios\":",
    b"null",
    b"1e400",
    b"-1",
    b"18446744073709551616",
    b"\"p99\":",
    b"\"requests\":",
    b"\\ud800",
];

pub const HIST_DICT: &[&[u8]] = &[
    b"HISTFAAAA",
    b"HISTEwAAA",
    b"=",
    b"+",
    b"/",
    b"AAAA",
    b"////",
];
