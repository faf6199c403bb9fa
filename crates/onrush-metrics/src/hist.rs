//! HDR histogram helpers: construction, recording, V2-deflate base64 encoding, statistics.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The histogram type used everywhere: `u64` counts of microsecond values.
pub type Hist = Histogram<u64>;

/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Values are clamped to this (one hour in µs) before recording, which bounds an
/// auto-resized histogram at the size of a `1..=3_600_000_000` one (184 KiB).
pub const MAX_VALUE_US: u64 = 3_600_000_000;

/// A new empty auto-resizing histogram (starts at 2,048 counters = 16 KiB, covering
/// 0..2,047 µs exactly; each doubling of the largest value seen adds 1,024 counters = 8 KiB).
pub fn new_hist() -> Hist {
    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is valid")
}

/// Records `value_us`, clamped to [`MAX_VALUE_US`]. Uses `record` (which grows an auto-resizing
/// histogram) rather than `saturating_record`, which on an auto-resizing histogram clamps to the
/// *current* top instead of growing. After clamping, `record` cannot fail here.
#[inline]
pub(crate) fn record(h: &mut Hist, value_us: u64) {
    let _ = h.record(value_us.min(MAX_VALUE_US));
}

/// Adds `src` into `dst` (auto-resizing `dst` as needed).
pub(crate) fn add_into(dst: &mut Hist, src: &Hist) {
    if !dst.is_auto_resize() {
        dst.auto(true);
    }
    dst.add(src)
        .expect("auto-resizing histogram accepts any value");
}

/// Adds an optional histogram into an optional accumulator, moving it when the accumulator is
/// empty.
pub(crate) fn merge_opt(dst: &mut Option<Hist>, src: Option<Hist>) {
    match (dst.as_mut(), src) {
        (_, None) => {}
        (None, Some(mut s)) => {
            s.auto(true);
            *dst = Some(s);
        }
        (Some(d), Some(s)) => add_into(d, &s),
    }
}

/// Reusable encoder of histograms to base64 of the standard HdrHistogram V2 compressed
/// ("V2 deflate") encoding, the format `HistogramLogReader` and friends read.
pub(crate) struct Encoder {
    ser: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl Encoder {
    pub(crate) fn new() -> Self {
        Encoder {
            ser: V2DeflateSerializer::new(),
            buf: Vec::new(),
        }
    }

    pub(crate) fn encode(&mut self, h: &Hist) -> String {
        self.buf.clear();
        self.ser
            .serialize(h, &mut self.buf)
            .expect("serializing into a Vec cannot fail");
        B64.encode(&self.buf)
    }
}

/// Decodes base64 of a V2 or V2-deflate encoded histogram into an auto-resizing histogram.
pub fn decode_hist(text: &str) -> Result<Hist, String> {
    let bytes = B64
        .decode(text.trim())
        .map_err(|e| format!("invalid base64: {e}"))?;
    let mut h: Hist = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("invalid HdrHistogram V2 encoding: {e:?}"))?;
    h.auto(true);
    Ok(h)
}

/// Statistics of a microsecond histogram, in milliseconds with microsecond precision.
/// All zero when `count` is 0. Percentiles and max are HdrHistogram's "highest equivalent
/// value" (within 0.1% of the recorded value), min its "lowest equivalent value".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MsStats {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// µs → ms, exact to the microsecond.
#[inline]
pub(crate) fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Rounds to 3 decimals (a microsecond when the unit is ms).
#[inline]
pub(crate) fn round3(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

impl MsStats {
    /// Statistics of a histogram of microsecond values.
    pub fn from_hist(h: &Hist) -> MsStats {
        if h.is_empty() {
            return MsStats::default();
        }
        let q = |q: f64| us_to_ms(h.value_at_quantile(q));
        MsStats {
            count: h.len(),
            min: us_to_ms(h.min()),
            mean: round3(h.mean() / 1000.0),
            stdev: round3(h.stdev() / 1000.0),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: us_to_ms(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut h = new_hist();
        for v in [0, 1, 5, 999, 12_345, 2_000_000, u64::MAX] {
            record(&mut h, v);
        }
        assert_eq!(h.max(), h.highest_equivalent(MAX_VALUE_US));
        let text = Encoder::new().encode(&h);
        let back = decode_hist(&text).unwrap();
        assert_eq!(back, h);
        assert!(decode_hist("not base64!").is_err());
        assert!(decode_hist("AAAA").is_err());
    }

    #[test]
    fn saturating_record_does_not_grow_auto_resizing_histograms() {
        // Why `record` clamps itself instead of using `saturating_record`.
        let mut h = new_hist();
        h.saturating_record(1_000_000);
        assert!(h.max() < 1_000_000);
        let mut h = new_hist();
        record(&mut h, 1_000_000);
        assert!(h.equivalent(h.max(), 1_000_000));
    }

    #[test]
    fn stats_in_ms() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            record(&mut h, v);
        }
        let s = MsStats::from_hist(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 0.001);
        assert_eq!(s.p50, 0.5);
        assert_eq!(s.max, 1.0);
        assert!((s.mean - 0.5005).abs() <= 0.0005); // 500.5 µs rounded to the µs
        assert_eq!(MsStats::from_hist(&new_hist()), MsStats::default());
    }
}
