//! The run's latency histograms per (scenario, step), for the figures summary.json does not
//! hold: any percentile (`p75`, `p99.99`), percentiles of a step over several scenarios, and
//! `service`/`connect`/`ttfb` percentiles of a whole scenario.

use std::io::{self, BufRead};
use std::path::Path;

use onrush_metrics::hist::new_hist;
use onrush_metrics::Hist;
use onrush_plan::LatencyFamily;
use onrush_results::{HistDecoder, IntervalsReader, Line, ReadError};

/// Latency histograms (microseconds) per (scenario, step) and latency family, summed over the
/// whole run. Build it from `intervals.jsonl` ([`Histograms::read`]) or feed it yourself
/// ([`Histograms::add`]).
#[derive(Clone, Debug, Default)]
pub struct Histograms {
    steps: Vec<StepHists>,
}

#[derive(Clone, Debug)]
struct StepHists {
    scenario: String,
    step: String,
    /// A group (transaction): left out of the whole test's and the scenarios' figures.
    group: bool,
    /// Indexed by [`family_index`].
    hists: [Option<Hist>; 4],
}

fn family_index(f: LatencyFamily) -> usize {
    match f {
        LatencyFamily::Latency => 0,
        LatencyFamily::Service => 1,
        LatencyFamily::Connect => 2,
        LatencyFamily::Ttfb => 3,
    }
}

const FIELDS: [(&str, LatencyFamily); 4] = [
    ("latency", LatencyFamily::Latency),
    ("service", LatencyFamily::Service),
    ("connect", LatencyFamily::Connect),
    ("ttfb", LatencyFamily::Ttfb),
];

impl Histograms {
    /// No histograms yet.
    pub fn new() -> Histograms {
        Histograms::default()
    }

    /// Adds `h` (microsecond values) to the `family` histogram of (`scenario`, `step`), a
    /// request step.
    pub fn add(&mut self, scenario: &str, step: &str, family: LatencyFamily, h: &Hist) {
        self.add_kind(scenario, step, false, family, h)
    }

    /// Adds `h` to the `family` histogram of the group (`scenario`, `group`): used for the
    /// group's own thresholds only, never in the whole test's or a scenario's figures.
    pub fn add_group(&mut self, scenario: &str, group: &str, family: LatencyFamily, h: &Hist) {
        self.add_kind(scenario, group, true, family, h)
    }

    fn add_kind(
        &mut self,
        scenario: &str,
        step: &str,
        group: bool,
        family: LatencyFamily,
        h: &Hist,
    ) {
        let i = match self
            .steps
            .iter()
            .position(|s| s.scenario == scenario && s.step == step)
        {
            Some(i) => i,
            None => {
                self.steps.push(StepHists {
                    scenario: scenario.to_string(),
                    step: step.to_string(),
                    group,
                    hists: [None, None, None, None],
                });
                self.steps.len() - 1
            }
        };
        let slot = &mut self.steps[i].hists[family_index(family)];
        let acc = slot.get_or_insert_with(new_hist);
        if !acc.is_auto_resize() {
            acc.auto(true);
        }
        acc.add(h)
            .expect("an auto-resizing histogram accepts every value");
    }

    /// Reads the `intervals.jsonl` of a results directory (the file itself, not the directory).
    /// Errors (`InvalidData` for a bad file) name the file and line.
    pub fn read(path: &Path) -> io::Result<Histograms> {
        let to_io = |e: ReadError| match e {
            ReadError::Io { source, .. } => source,
            e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
        };
        let lines = IntervalsReader::open(path).map_err(to_io)?;
        Histograms::from_lines(lines).map_err(to_io)
    }

    /// Sums the histograms of every `step` and `group` line of an `intervals.jsonl` text
    /// (header first). Errors are `LINE: what`.
    pub fn from_intervals(text: &str) -> Result<Histograms, String> {
        IntervalsReader::new("intervals.jsonl", text.as_bytes())
            .and_then(Histograms::from_lines)
            .map_err(|e| format!("{}: {}", e.line().unwrap_or(1), e.message()))
    }

    /// Sums the histograms of every `step` and `group` line the reader yields.
    pub fn from_lines<R: BufRead>(mut lines: IntervalsReader<R>) -> Result<Histograms, ReadError> {
        let mut out = Histograms::new();
        let mut decoder = HistDecoder::new();
        while let Some(line) = lines.next_line()? {
            let (l, group) = match &line {
                Line::Step(l) => (l, false),
                Line::Group(l) => (l, true),
                _ => continue,
            };
            for (field, family) in FIELDS {
                let text = match family {
                    LatencyFamily::Latency => &l.latency,
                    LatencyFamily::Service => &l.service,
                    LatencyFamily::Connect => &l.connect,
                    LatencyFamily::Ttfb => &l.ttfb,
                };
                if let Some(text) = text {
                    let h = decoder
                        .decode_hist(text)
                        .map_err(|e| lines.error(format!("{field}: {e}")))?;
                    out.add_kind(&l.scenario, &l.step, group, family, &h);
                }
            }
        }
        Ok(out)
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The sum of the `family` histograms of the (scenario, step) pairs `keep` accepts (groups
    /// only with `groups`); `None` when none of them has one.
    pub(crate) fn merged(
        &self,
        family: LatencyFamily,
        groups: bool,
        keep: impl Fn(&str, &str) -> bool,
    ) -> Option<Hist> {
        let mut acc: Option<Hist> = None;
        for s in self
            .steps
            .iter()
            .filter(|s| (groups || !s.group) && keep(&s.scenario, &s.step))
        {
            if let Some(h) = &s.hists[family_index(family)] {
                let a = acc.get_or_insert_with(new_hist);
                a.add(h)
                    .expect("an auto-resizing histogram accepts every value");
            }
        }
        acc.filter(|h| !h.is_empty())
    }
}

/// The `p`th percentile (0 < p < 100) of a histogram of microseconds, in ms: the highest
/// equivalent value, as in summary.json.
pub(crate) fn percentile_ms(h: &Hist, p: f64) -> f64 {
    h.value_at_quantile(p / 100.0) as f64 / 1000.0
}
